//! Chat message lists, as datasets and rollout dumps hold them: OpenAI-style
//! `{role, content, reasoning_content, tool_calls, tool_call_id}` messages
//! (Anthropic-style content blocks too), as a JSON array or a document
//! whose `messages` (or a dataset row's `trajectory`) field is one.
//!
//! A list is one trajectory: its first user message is the prompt; later
//! user messages (an agent's observations, a harness's feedback or format
//! errors) are notes, so the detectors are not reset between the steps of
//! one task. Each assistant message is one request.

use serde_json::Value;

use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{anthropic, str_of, Args, Format, Out};
use crate::event::Ts;

/// An importer of a message list document.
pub fn decoder() -> WholeDecoder<Messages> {
    WholeDecoder::new(Messages::default(), parse_json, Format::Messages)
}

/// The message list of a document: the document itself when it is an
/// array, else its `messages` field, else a dataset row's `trajectory`
/// (SWE-rebench-openhands keeps OpenAI messages there, nebius
/// SWE-agent-trajectories `{role: system|user|ai, text}`).
pub fn list_of(doc: &Value) -> Option<&Vec<Value>> {
    doc.as_array()
        .or_else(|| doc.get("messages").and_then(Value::as_array))
        .or_else(|| doc.get("trajectory").and_then(Value::as_array))
}

/// Maps messages to events, remembering how far earlier versions of the
/// document went (a list that grows is re-read whole).
#[derive(Debug, Default)]
pub struct Messages {
    done: usize,
    prompted: bool,
}

impl DocHandler for Messages {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let Some(list) = list_of(&doc) else {
            out.problem("no message list (a JSON array of messages, or a `messages` or `trajectory` field)");
            return;
        };
        for m in list.iter().skip(self.done) {
            self.done += 1;
            out.line = self.done as u64;
            self.message(m, out);
        }
    }
}

impl Messages {
    /// One message's events.
    pub fn message(&mut self, m: &Value, out: &mut Out<'_>) {
        out.ts = time_of(m);
        match str_of(m, "role").unwrap_or_default() {
            "system" | "developer" => {}
            "assistant" | "ai" | "model" => assistant(m, out),
            "tool" | "function" | "ipython" => {
                let id = str_of(m, "tool_call_id").or_else(|| str_of(m, "name"));
                out.tool_result(id, result_ok(m), content_value(m));
            }
            "user" | "human" => self.user(m, out),
            "" => out.problem("a message without a role"),
            other => out.note(format!("{other}: {}", text_of(m))),
        }
    }

    fn user(&mut self, m: &Value, out: &mut Out<'_>) {
        let mut texts = Vec::new();
        if let Some(Value::Array(blocks)) = m.get("content") {
            for b in blocks {
                match str_of(b, "type") {
                    // Anthropic-style results ride in user messages.
                    Some("tool_result") => {
                        let ok = b.get("is_error").and_then(Value::as_bool) != Some(true);
                        out.tool_result(str_of(b, "tool_use_id"), ok, b.get("content").cloned());
                    }
                    Some("text" | "input_text") => texts.push(str_of(b, "text").unwrap_or_default().to_string()),
                    _ => {}
                }
            }
        } else {
            texts.push(text_of(m));
        }
        let text = texts.join("\n");
        if text.is_empty() {
            return;
        }
        if self.prompted {
            out.note(text);
        } else {
            self.prompted = true;
            out.prompt(&text);
        }
    }
}

/// An assistant message: a request, its reasoning, its text and its calls.
fn assistant(m: &Value, out: &mut Out<'_>) {
    out.request(str_of(m, "id"));
    for key in ["reasoning_content", "reasoning", "thinking"] {
        if let Some(text) = str_of(m, key) {
            out.reasoning(text);
        }
    }
    match content_of(m) {
        Some(Value::String(s)) => out.content(s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match str_of(b, "type") {
                    Some("reasoning") => out.reasoning(str_of(b, "text").or(str_of(b, "summary")).unwrap_or_default()),
                    Some("output_text") => out.content(str_of(b, "text").unwrap_or_default()),
                    _ => {
                        anthropic::finished_block(b, out);
                    }
                }
            }
        }
        _ => {}
    }
    for call in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let f = call.get("function").unwrap_or(call);
        let name = str_of(f, "name").unwrap_or("unknown");
        out.tool_call(str_of(call, "id"), name, args_of(f.get("arguments")));
    }
    // The legacy single call.
    if let Some(f) = m.get("function_call") {
        out.tool_call(
            None,
            str_of(f, "name").unwrap_or("unknown"),
            args_of(f.get("arguments")),
        );
    }
}

fn args_of(v: Option<&Value>) -> Args<'_> {
    match v {
        Some(Value::String(s)) => Args::Text(s),
        Some(other) => Args::Json(other.clone()),
        None => Args::Json(Value::Object(Default::default())),
    }
}

/// A message's `content`, else its `text` (rows of a table carry both
/// fields, one of them null).
fn content_of(m: &Value) -> Option<&Value> {
    let present = |k: &str| m.get(k).filter(|v| !v.is_null());
    present("content").or_else(|| present("text"))
}

/// A message's text: `content` as a string or its text parts, else `text`.
fn text_of(m: &Value) -> String {
    match content_of(m) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.as_str().or_else(|| str_of(p, "text")))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn content_value(m: &Value) -> Option<Value> {
    match m.get("content") {
        Some(Value::Array(_)) => Some(Value::String(text_of(m))),
        Some(v) if !v.is_null() => Some(v.clone()),
        _ => None,
    }
}

/// Whether a tool message reports success: an explicit error flag, or a
/// harness's return code (mini-swe-agent's `extra.returncode`).
fn result_ok(m: &Value) -> bool {
    let extra = m.get("extra").unwrap_or(&Value::Null);
    let flag = |v: &Value| v.get("is_error").and_then(Value::as_bool) == Some(true);
    if flag(m) || flag(extra) || extra.get("exception_info").is_some_and(|e| !e.is_null() && e != "") {
        return false;
    }
    extra.get("returncode").and_then(Value::as_i64).is_none_or(|c| c == 0)
}

/// A message's time: `timestamp` (or `extra.timestamp`) as an RFC 3339
/// text, Unix seconds or Unix milliseconds.
fn time_of(m: &Value) -> Option<Ts> {
    let v = m
        .get("timestamp")
        .or_else(|| m.get("extra").and_then(|e| e.get("timestamp")))?;
    match v {
        Value::String(s) => Ts::from_rfc3339(s),
        Value::Number(n) => {
            let x = n.as_f64()?;
            // Milliseconds after 2001-09-09 are above 1e12; seconds are not.
            let ms = if x > 1e12 { x } else { x * 1000.0 };
            (0.0..1e15).contains(&ms).then(|| Ts::from_unix_millis(ms as i64))?
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::event::EventKind;
    use crate::formats::Decoded;

    fn events(doc: serde_json::Value) -> Decoded {
        let bytes = doc.to_string().into_bytes();
        Decoded::from_bytes(&bytes, &mut super::decoder())
    }

    #[test]
    fn an_openai_trajectory_maps_to_one_prompt_requests_calls_and_results() {
        let d = events(json!([
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing test."},
            {"role": "assistant", "content": null, "reasoning_content": "Run the tests first.",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"cargo test\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "1 failed", "extra": {"returncode": 101}},
            {"role": "user", "content": "Please use the tool."},
            {"role": "assistant", "content": [{"type": "text", "text": "Done: 思考完成 🎉"}]}
        ]));
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(
            kinds,
            [
                "prompt",
                "request",
                "reasoning",
                "tool_call",
                "tool_result",
                "note",
                "request",
                "content"
            ]
        );
        assert!(
            matches!(&d.events[3].kind, EventKind::ToolCall { name, args, id } if name == "bash" && args["cmd"] == "cargo test" && id.as_deref() == Some("c1"))
        );
        assert!(
            matches!(&d.events[4].kind, EventKind::ToolResult { ok: false, id, .. } if id.as_deref() == Some("c1"))
        );
        assert!(matches!(&d.events[7].kind, EventKind::Content { text } if text == "Done: 思考完成 🎉"));
        assert!(d.problems.is_empty());
    }

    #[test]
    fn a_document_with_messages_and_anthropic_blocks_and_bad_messages() {
        let d = events(json!({"instance_id": "x", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Go"}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "no"}]},
            {"content": "no role"},
            42
        ]}));
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(kinds, ["prompt", "request", "reasoning", "tool_call", "tool_result"]);
        assert!(matches!(&d.events[4].kind, EventKind::ToolResult { ok: false, .. }));
        assert_eq!(d.problems.len(), 2);
        // A document has no lines: the problem names its record.
        assert_eq!(d.problems[0].line, 0);
        assert_eq!(d.problems[0].to_string(), "record 4: a message without a role; skipped");
    }

    #[test]
    fn timestamps_in_seconds_millis_and_text() {
        let d = events(json!([
            {"role": "user", "content": "a", "timestamp": 1_700_000_000},
            {"role": "assistant", "content": "b", "timestamp": 1_700_000_001_500_i64},
            {"role": "assistant", "content": "c", "extra": {"timestamp": "2024-01-01T00:00:00Z"}},
            {"role": "assistant", "content": "d", "timestamp": -5}
        ]));
        let secs: Vec<Option<f64>> = d.events.iter().map(|e| e.ts.as_ref().map(|t| t.seconds())).collect();
        assert_eq!(secs[0], Some(1_700_000_000.0));
        assert_eq!(secs[1], Some(1_700_000_001.5));
        assert_eq!(secs[3], Some(1_704_067_200.0));
        assert_eq!(secs[5], None);
    }
}
