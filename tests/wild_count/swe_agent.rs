//! SWE-agent trajectories (0.x and 1.x `.traj`) and mini-swe-agent's
//! (a `{info, messages, trajectory_format}` document, or a bare message list).
//!
//! SWE-agent keeps no exit codes: whether an observation is a failure is
//! not in the file's structure (only in its text), so failures are not
//! counted for it. mini-swe-agent states each command's return code.

use super::{str_at, text_of, Bound, Truth};
use serde_json::Value;

fn is_demo(m: &Value) -> bool {
    m.get("is_demo").and_then(Value::as_bool) == Some(true)
}

fn role(m: &Value) -> &str {
    str_at(m, "role").unwrap_or_default()
}

/// SWE-agent: the task is the history's first user message that is not a
/// demonstration; with function calling (1.x) the calls are the history's
/// tool calls and the results its `tool` messages, else (0.x) each
/// trajectory step is a call and its observation.
fn swe(doc: &Value) -> Truth {
    let history: Vec<&Value> = doc
        .get("history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| !is_demo(m))
        .collect();
    let prompts = usize::from(history.iter().any(|m| role(m) == "user"));
    let tool_calls: usize = history
        .iter()
        .filter(|m| role(m) == "assistant")
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .map(Vec::len)
        .sum();
    let tool_messages = history.iter().filter(|m| role(m) == "tool").count();
    let (calls, results) = if tool_calls + tool_messages > 0 {
        (tool_calls, tool_messages)
    } else {
        let steps = doc.get("trajectory").and_then(Value::as_array).map_or(0, Vec::len);
        (steps, steps)
    };
    let mut truth = Truth::exact(prompts, calls, results, 0);
    truth.failed = Bound::any();
    truth
}

/// `<returncode>N</returncode>` in a mini observation.
fn returncode(text: &str) -> Option<i64> {
    let start = text.find("<returncode>")? + "<returncode>".len();
    let end = text[start..].find("</returncode>")? + start;
    text[start..end].trim().parse().ok()
}

/// The commands of a text-based reply: mini's ```mswea_bash_command
/// fences (older versions: ```bash); mini runs a reply with exactly one.
fn fenced_commands(text: &str) -> usize {
    let mini = text.matches("```mswea_bash_command\n").count();
    if mini > 0 {
        mini
    } else {
        text.matches("```bash\n").count()
    }
}

/// mini-swe-agent: the task is the first user message; a call is a tool
/// call, or the one fenced command of a reply; a result is a `tool`
/// message or a user message stating a return code. The submit command's
/// call is answered by the submission (a bare list: no return code, no
/// result) or as not executed (a cancellation).
fn mini(messages: &[Value]) -> Truth {
    let (mut calls, mut results, mut failed, mut cancelled) = (0, 0, 0, 0);
    for m in messages {
        let extra = m.get("extra").unwrap_or(&Value::Null);
        match role(m) {
            "assistant" => match m.get("tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty()) {
                Some(c) => calls += c.len(),
                None => calls += usize::from(fenced_commands(&text_of(m.get("content"))) == 1),
            },
            "tool" if str_at(extra, "exception_info") == Some("action was not executed") => cancelled += 1,
            "tool" => {
                results += 1;
                let code = extra.get("returncode").and_then(Value::as_i64);
                let exception = str_at(extra, "exception_info").is_some_and(|e| !e.is_empty());
                failed += usize::from(code.is_some_and(|c| c != 0) || exception);
            }
            "user" => {
                if let Some(code) = returncode(&text_of(m.get("content"))) {
                    results += 1;
                    failed += usize::from(code != 0);
                }
            }
            _ => {}
        }
    }
    // Only the task is the person's: later user messages are observations,
    // mini's format errors and the submission.
    let prompts = usize::from(messages.iter().any(|m| role(m) == "user"));
    let mut truth = Truth::exact(prompts, calls, results, failed);
    truth.cancelled = Bound::exact(cancelled);
    truth
}

pub fn count(text: &str) -> Result<Truth, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(match &doc {
        Value::Array(messages) => mini(messages),
        _ if doc.get("trajectory").is_some() => swe(&doc),
        _ => mini(
            doc.get("messages")
                .and_then(Value::as_array)
                .ok_or("no messages, no trajectory")?,
        ),
    })
}
