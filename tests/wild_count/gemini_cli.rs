//! gemini-cli chat recordings: the legacy single JSON (`{sessionId, …,
//! messages}`) or the 0.6x JSONL, in which a message is appended again in
//! full whenever it changes (counted once, by id) and `$set` / `$rewindTo`
//! records update the session.

use std::collections::HashSet;

use super::{json_lines, str_at, text_of, Bound, Truth};
use serde_json::Value;

/// What gemini-cli tells the model when its own loop detection fires: a
/// user turn it wrote itself.
const LOOP_FEEDBACK: &str = "System: Potential loop detected.";

pub fn count(text: &str) -> Result<Truth, String> {
    let messages: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(doc) => doc
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .ok_or("no messages")?,
        // JSONL: the message records (they have a type; `$set`, `$rewindTo` and the header do not).
        Err(_) => json_lines(text)?
            .into_iter()
            .filter(|v| v.get("type").is_some())
            .collect(),
    };
    let (mut seen, mut call_ids, mut done) = (HashSet::new(), HashSet::new(), HashSet::new());
    let (mut prompts, mut calls, mut results, mut failed, mut cancelled) = (0, 0, 0, 0, 0);
    for m in &messages {
        let first = seen.insert(str_at(m, "id").unwrap_or_default().to_string());
        match str_at(m, "type") {
            Some("user") if first => {
                let content = m.get("content");
                // A record of function responses only returns results, and the
                // session's opening context and loop feedback are gemini-cli's words.
                let responses_only = content
                    .and_then(Value::as_array)
                    .is_some_and(|p| !p.is_empty() && p.iter().all(|p| p.get("functionResponse").is_some()));
                let text = text_of(content);
                let own = text.starts_with("<session_context>") || text.starts_with(LOOP_FEEDBACK);
                prompts += usize::from(!responses_only && !own);
            }
            Some("gemini") => {
                for call in m.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
                    let id = str_at(call, "id").unwrap_or_default().to_string();
                    calls += usize::from(call_ids.insert(id.clone()));
                    let status = str_at(call, "status");
                    let finished = matches!(status, Some("success" | "error" | "cancelled"));
                    if finished && done.insert(id) {
                        match status {
                            Some("cancelled") => cancelled += 1,
                            _ => {
                                results += 1;
                                failed += usize::from(status == Some("error") || exited_non_zero(call));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut truth = Truth::exact(prompts, calls, results, failed);
    truth.cancelled = Bound::exact(cancelled);
    Ok(truth)
}

/// A shell command gemini-cli ran to its end is a `success` whatever its
/// exit code; the code is a line of the response's text, `Exit Code: N`.
fn exited_non_zero(call: &Value) -> bool {
    let output = call
        .pointer("/result/0/functionResponse/response/output")
        .and_then(Value::as_str)
        .unwrap_or_default();
    output
        .lines()
        .filter_map(|l| l.strip_prefix("Exit Code: "))
        .any(|c| c.trim().parse::<i64>().is_ok_and(|c| c != 0))
}
