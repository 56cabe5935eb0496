//! Claude Code transcripts: one JSON record a line. A sub-agent's own file
//! is all sidechain; in a main file the sidechain records belong to the
//! sub-agents' files and are not counted here.

use super::{json_lines, str_at, text_of, Bound, Truth};
use serde_json::Value;

/// What Claude Code (≤ 2.1.x) answered a parallel call it did not run
/// because a call beside it failed.
const SIBLING_ERRORED: &str = "Sibling tool call errored";

pub fn count(text: &str) -> Result<Truth, String> {
    let (mut prompts, mut calls, mut results, mut failed, mut cancelled) = (0, 0, 0, 0, 0);
    let mut subagent_file = None;
    for v in json_lines(text)? {
        let kind = str_at(&v, "type").unwrap_or_default();
        if kind != "user" && kind != "assistant" {
            continue;
        }
        let side = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
        // The first message says whose file this is.
        let subagents_own = *subagent_file.get_or_insert(side);
        if side && !subagents_own {
            continue;
        }
        let content = v.pointer("/message/content").unwrap_or(&Value::Null);
        let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
        let of_type = |t: &'static str| blocks.iter().filter(move |b| str_at(b, "type") == Some(t));
        if kind == "assistant" {
            // A synthetic API error record is Claude Code's, not the model's.
            if v.get("isApiErrorMessage").and_then(Value::as_bool) != Some(true) {
                calls += of_type("tool_use").count();
            }
            continue;
        }
        let tool_results: Vec<&Value> = of_type("tool_result").collect();
        for r in &tool_results {
            let error = r.get("is_error").and_then(Value::as_bool) == Some(true);
            if error && text_of(r.get("content")).contains(SIBLING_ERRORED) {
                cancelled += 1;
            } else {
                results += 1;
                failed += usize::from(error);
            }
        }
        // A prompt: the person's words, as a string or text blocks, in a
        // record that answers no call and is not Claude Code's own
        // (meta records, slash commands and their output, interrupts, its
        // notice that a background task ended).
        let said = match content {
            Value::String(s) => Some(s.clone()),
            _ if of_type("text").next().is_some() => Some(text_of(Some(content))),
            _ => None,
        };
        let own = v.get("isMeta").and_then(Value::as_bool) == Some(true)
            || v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
        if let Some(said) = said.filter(|_| tool_results.is_empty() && !own) {
            let bookkeeping = [
                "<command-",
                "<local-command",
                "[Request interrupted",
                "<task-notification>",
            ];
            prompts += usize::from(!bookkeeping.iter().any(|b| said.starts_with(b)));
        }
    }
    let mut truth = Truth::exact(prompts, calls, results, failed);
    truth.cancelled = Bound::exact(cancelled);
    Ok(truth)
}
