//! Cline task files. `api_conversation_history.json`: the Anthropic-style
//! messages sent to the model. `ui_messages.json`: what the panel showed,
//! each call once, and each request Cline sent (`api_req_started`) with the
//! text of the user message it sent, which holds the results of the calls
//! before it. Either way Cline answers a call with a text block
//! `[NAME for 'WHAT'] Result: BODY` (or a `tool_result` block).

use super::{str_at, Bound, Truth};
use serde_json::Value;

/// Cline's own words at the start of a result that failed: a tool error, a
/// command's non-zero exit, a denial, a missing parameter, an MCP tool's
/// error (`Error:` before its output).
const FAILURE_WORDS: [&str; 8] = [
    "The tool execution failed",
    "Command failed with exit code",
    "The user denied this operation",
    "[ERROR]",
    "Missing value for required parameter",
    "Error executing",
    "Tool execution failed",
    "Error:",
];

/// Tools whose answer the panel shows as text, not as a call: their
/// results answer no call of ui_messages.json.
const NOT_CALLS_IN_THE_PANEL: [&str; 6] = [
    "attempt_completion",
    "ask_followup_question",
    "plan_mode_respond",
    "load_mcp_documentation",
    "new_task",
    "condense",
];

/// `[NAME…] Result: BODY` → (NAME, BODY). A NAME is a tool's name.
fn result_block(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('[')?;
    let end = rest.find("] Result:")?;
    let name = rest[..end].split(" for ").next()?;
    let tool_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    tool_name.then(|| (name, rest[end + "] Result:".len()..].trim_start()))
}

fn failed(body: &str) -> bool {
    FAILURE_WORDS.iter().any(|w| body.trim_start().starts_with(w))
}

/// Whether a user text block holds the person's words: Cline wraps them in
/// `<task>`, `<feedback>` or `<user_message>`.
fn said(text: &str) -> bool {
    ["<task>", "<feedback>", "<user_message>"]
        .iter()
        .any(|t| text.contains(t))
}

pub fn count_api_history(doc: &Value) -> Result<Truth, String> {
    let messages = doc.as_array().ok_or("not a message list")?;
    let (mut prompts, mut calls, mut results, mut failures) = (0, 0, 0, 0);
    for m in messages {
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Value::Array(b)) => b.clone(),
            _ => Vec::new(),
        };
        for b in &blocks {
            match (str_at(m, "role"), str_at(b, "type")) {
                (Some("assistant"), Some("tool_use")) => calls += 1,
                (Some("user"), Some("tool_result")) => {
                    results += 1;
                    failures += usize::from(b.get("is_error").and_then(Value::as_bool) == Some(true));
                }
                (Some("user"), Some("text")) => {
                    let text = str_at(b, "text").unwrap_or_default();
                    match result_block(text) {
                        Some((_, body)) => {
                            results += 1;
                            failures += usize::from(failed(body));
                        }
                        None => prompts += usize::from(said(text)),
                    }
                }
                _ => {}
            }
        }
    }
    Ok(Truth::exact(prompts, calls, results, failures))
}

pub fn count_ui_messages(doc: &Value) -> Result<Truth, String> {
    let messages = doc.as_array().ok_or("not a message list")?;
    let (mut prompts, mut calls, mut results, mut failures) = (0, 0, 0, 0);
    for (i, m) in messages.iter().enumerate() {
        if m.get("partial").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let kind = str_at(m, "say").or(str_at(m, "ask")).unwrap_or_default();
        match kind {
            // The task opens the file (a `task` message, or `text` in older versions).
            "task" | "text" if i == 0 => prompts += 1,
            "user_feedback" => prompts += 1,
            // A call is shown once: a tool, a command, an MCP tool (whose
            // `mcp_server_request_started` only says it began).
            "tool" | "command" | "use_mcp_server" => calls += 1,
            "api_req_started" => {
                let info: Value = serde_json::from_str(str_at(m, "text").unwrap_or("{}")).unwrap_or_default();
                let request = str_at(&info, "request").unwrap_or_default();
                // Each result block starts a line of the request's text.
                let mut at = 0;
                for line in request.split_inclusive('\n') {
                    let here = &request[at..];
                    at += line.len();
                    match result_block(here) {
                        Some((name, body)) if line.starts_with('[') && !NOT_CALLS_IN_THE_PANEL.contains(&name) => {
                            results += 1;
                            failures += usize::from(failed(body));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Truth::exact(prompts, calls, results, failures))
}

/// By the file's name, as Cline names them in a task folder.
pub fn count(name: &str, text: &str) -> Result<Truth, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut truth = if name.ends_with("api_conversation_history.json") {
        count_api_history(&doc)?
    } else {
        count_ui_messages(&doc)?
    };
    truth.cancelled = Bound::exact(0);
    Ok(truth)
}
