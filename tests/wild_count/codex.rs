//! Codex rollouts: `{timestamp, type, payload}` lines; the model's items
//! are `response_item`s, the CLI's events `event_msg`s.

use std::collections::HashMap;

use super::{json_lines, str_at, Truth};
use serde_json::Value;

/// Codex's own words for a call that did not succeed, where the output is
/// text rather than an exec result (its `success: false` is not kept in
/// the rollout): a sandbox denial, a rejection, a failed execution, a
/// hook's refusal, a timeout, a call it could not make.
const FAILURE_WORDS: [&str; 8] = [
    "failed in sandbox",
    "patch rejected",
    "exec command rejected",
    "execution error:",
    "Command blocked by ",
    "command timed out",
    "unsupported call",
    "failed to parse function arguments",
];

/// An output's exit code, where it states one: 0.4x's JSON
/// (`metadata.exit_code`) or 0.17x's header ("Process exited with code N").
fn stated_exit(output: &str) -> Option<i64> {
    if let Ok(v) = serde_json::from_str::<Value>(output) {
        return v.pointer("/metadata/exit_code").and_then(Value::as_i64);
    }
    let header = output.split("\nOutput:\n").next().unwrap_or_default();
    header
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse().ok())
}

pub fn count(text: &str) -> Result<Truth, String> {
    let lines = json_lines(text)?;
    let payloads: Vec<(&str, &Value)> = lines
        .iter()
        .filter_map(|v| Some((str_at(v, "type")?, v.get("payload")?)))
        .collect();
    let event = |t: &'static str| {
        payloads
            .iter()
            .filter(move |(k, p)| *k == "event_msg" && str_at(p, "type") == Some(t))
    };
    let item = |t: &'static str| {
        payloads
            .iter()
            .filter(move |(k, p)| *k == "response_item" && str_at(p, "type") == Some(t))
    };
    // The prompt has one home per Codex version: the user_message event
    // (≤ 0.16x), else the user message whose every content item's
    // provenance is the user (0.17x; the UserMessage item repeats it).
    let prompts = match event("user_message").count() {
        0 => item("message")
            .filter(|(_, p)| str_at(p, "role") == Some("user"))
            .filter(|(_, p)| {
                let meta = p.pointer("/internal_chat_message_metadata_passthrough/content_item_metadata");
                meta.and_then(Value::as_array).is_some_and(|m| {
                    !m.is_empty()
                        && m.iter()
                            .all(|i| i.pointer("/provenance/type") == Some(&Value::from("user")))
                })
            })
            .count(),
        n => n,
    };
    let calls = ["function_call", "custom_tool_call", "local_shell_call"]
        .iter()
        .map(|t| item(t).count())
        .sum();
    // 0.17x records each command's exit code in its CommandExecution item.
    let exits: HashMap<&str, i64> = event("item_completed")
        .filter_map(|(_, p)| {
            let i = p.get("item")?;
            (str_at(i, "type") == Some("CommandExecution")).then_some(())?;
            Some((str_at(i, "id")?, i.get("exit_code")?.as_i64()?))
        })
        .collect();
    let (mut results, mut failed) = (0, 0);
    for (_, p) in item("function_call_output").chain(item("custom_tool_call_output")) {
        results += 1;
        let output = str_at(p, "output").unwrap_or_default();
        let code = str_at(p, "call_id")
            .and_then(|id| exits.get(id).copied())
            .or_else(|| stated_exit(output));
        let refused = FAILURE_WORDS.iter().any(|w| output.starts_with(w));
        failed += usize::from(code.is_some_and(|c| c != 0) || (code.is_none() && refused));
    }
    Ok(Truth::exact(prompts, calls, results, failed))
}
