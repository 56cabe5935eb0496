//! claude-trace logs (`<cwd>/.claude-trace/log-YYYY-MM-DD-HH-MM-SS.jsonl`;
//! badlogic/lemmy@9d46530e `apps/claude-trace/src/{types,interceptor}.ts`):
//! every request Claude Code sent to the Anthropic API with its response,
//! one pair per line. Streamed responses are kept verbatim (`body_raw`) and
//! go through the Anthropic stream importer, so they give the real deltas.
//!
//! Each request repeats the conversation so far: only its new user
//! messages (the prompt, tool results) are read from it. Claude Code's
//! helper calls (titles, topic checks: no tools, a small model or budget)
//! share the file and are left out.

use serde_json::Value;

use super::anthropic::{self, Anthropic};
use super::sse::{deliver, Framer, Handler, JsonLinesDecoder};
use super::{str_of, Format, Item, Out};
use crate::event::Ts;

pub fn decoder() -> JsonLinesDecoder<ClaudeTrace> {
    JsonLinesDecoder::new(ClaudeTrace::default(), Format::ClaudeTrace)
}

/// Whether a JSON line is a claude-trace pair.
pub fn is_pair(v: &Value) -> bool {
    v.get("request")
        .is_some_and(|r| r.get("url").is_some() || r.get("body").is_some())
        && (v.get("response").is_some() || v.get("logged_at").is_some())
}

#[derive(Default)]
pub struct ClaudeTrace {
    /// The first message of the main conversation.
    first: Option<Value>,
    /// Messages of the main conversation already read.
    seen: usize,
    /// The last main request got a response that was emitted.
    answered: bool,
    helpers_noted: bool,
}

fn seconds_ts(v: Option<&Value>) -> Option<Ts> {
    let s = v?.as_f64()?;
    Ts::from_unix_millis((s * 1000.0) as i64)
}

/// A helper call: no tools, and a small model or a tiny budget.
fn is_helper(body: &Value, main_known: bool) -> bool {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if tools {
        return false;
    }
    let small = str_of(body, "model").is_some_and(|m| m.contains("haiku"))
        || body.get("max_tokens").and_then(Value::as_u64).is_some_and(|n| n <= 512);
    main_known || small
}

impl ClaudeTrace {
    /// The messages of a request that were not read before.
    fn new_messages(&mut self, messages: &[Value], out: &mut Out<'_>) {
        let first = messages.first().cloned();
        if self.first.is_some() && first != self.first {
            out.note("a new conversation starts");
            self.seen = 0;
            self.answered = false;
        } else if messages.len() < self.seen {
            out.condensation("the conversation was compacted");
            self.seen = messages.len().saturating_sub(1);
        }
        self.first = first;
        for (i, m) in messages.iter().enumerate().skip(self.seen) {
            match str_of(m, "role") {
                // The response to the previous request, already read from it.
                Some("assistant") if i == self.seen && self.answered => {}
                Some("assistant") => {
                    out.request(None);
                    for b in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                        anthropic::finished_block(b, out);
                    }
                }
                Some("user") => user(m, out),
                _ => {}
            }
        }
        self.seen = messages.len();
    }

    fn response(&mut self, r: &Value, out: &mut Out<'_>) {
        out.ts = seconds_ts(r.get("timestamp")).or(out.ts.clone());
        let status = r.get("status_code").and_then(Value::as_u64).unwrap_or(200);
        if let Some(raw) = str_of(r, "body_raw") {
            let mut handler = Anthropic::default();
            let mut items = Vec::new();
            let mut framer = Framer::default();
            framer.feed(raw.as_bytes(), &mut |p| deliver(&mut handler, p, &mut items));
            framer.finish(&mut |p| deliver(&mut handler, p, &mut items));
            for item in items {
                out.item(match item {
                    Item::Event(mut e, _) => {
                        e.ts = e.ts.or(out.ts.clone());
                        Item::Event(e, out.line)
                    }
                    Item::Problem(mut p) => {
                        p.reason = format!("in the streamed response: {}", p.reason);
                        p.line = out.line;
                        Item::Problem(p)
                    }
                    Item::Unknown(mut u) => {
                        u.line = out.line;
                        Item::Unknown(u)
                    }
                });
            }
            self.answered = status < 400;
            return;
        }
        let body = r.get("body").unwrap_or(&Value::Null);
        if status >= 400 || str_of(body, "type") == Some("error") {
            let e = body.get("error").unwrap_or(body);
            out.request(None);
            out.api_error(&format!(
                "{status} {}: {}",
                str_of(e, "type").unwrap_or("error"),
                str_of(e, "message").unwrap_or_default()
            ));
            self.answered = false;
            return;
        }
        out.request(str_of(body, "id"));
        for b in body.get("content").and_then(Value::as_array).into_iter().flatten() {
            anthropic::finished_block(b, out);
        }
        out.usage(
            body.pointer("/usage/output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        );
        self.answered = true;
    }
}

/// A user message: tool results, and what the person typed.
fn user(m: &Value, out: &mut Out<'_>) {
    match m.get("content") {
        Some(Value::String(s)) => out.prompt(s),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for b in blocks {
                match str_of(b, "type") {
                    Some("tool_result") => {
                        let ok = b.get("is_error").and_then(Value::as_bool) != Some(true);
                        out.tool_result(str_of(b, "tool_use_id"), ok, b.get("content").cloned());
                    }
                    Some("text") => {
                        let t = str_of(b, "text").unwrap_or_default();
                        // Claude Code's reminders to the model are not the person typing.
                        if !t.trim_start().starts_with("<system-reminder>") {
                            texts.push(t);
                        }
                    }
                    _ => {}
                }
            }
            if !texts.is_empty() {
                out.prompt(&texts.join("\n"));
            }
        }
        _ => {}
    }
}

impl Handler for ClaudeTrace {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        let req = v.get("request").unwrap_or(&Value::Null);
        out.ts = seconds_ts(req.get("timestamp"));
        let body = req.get("body").unwrap_or(&Value::Null);
        if is_helper(body, self.first.is_some()) {
            if !self.helpers_noted {
                self.helpers_noted = true;
                out.note("helper requests of the client (no tools: titles, topic checks) are left out");
            }
            return;
        }
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        self.new_messages(messages, out);
        match v.get("response") {
            Some(r) if r.is_object() => self.response(r, out),
            _ => {
                self.answered = false;
                out.request(None);
                out.note(format!(
                    "no response was recorded for this request ({})",
                    str_of(&v, "note").unwrap_or("orphaned")
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    #[test]
    fn sse_bodies_give_deltas_and_requests_give_only_new_user_messages() {
        let sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"lo\"}}\n\n";
        let tools = serde_json::json!([{"name": "Bash"}]);
        let u = serde_json::json!({"role": "user", "content": [{"type": "text", "text": "go"}]});
        let a = serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "Hello"}]});
        let r = serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": true, "content": "no"}]});
        let lines = [
            serde_json::json!({"request": {"timestamp": 1.0, "url": "u", "body": {"model": "claude-haiku", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}}, "response": {"status_code": 200, "body": {}}, "logged_at": "x"}),
            serde_json::json!({"request": {"timestamp": 2.0, "url": "u", "body": {"tools": tools, "messages": [u]}}, "response": {"timestamp": 3.0, "status_code": 200, "body_raw": sse}, "logged_at": "x"}),
            serde_json::json!({"request": {"timestamp": 4.0, "url": "u", "body": {"tools": tools, "messages": [u, a, r]}}, "response": {"status_code": 529, "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}, "logged_at": "x"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let d = Decoded::from_bytes(text.as_bytes(), &mut decoder());
        let got: Vec<String> = d
            .events
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e.type_name(),
                    e.to_json().get("text").and_then(Value::as_str).unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "note helper requests of the client (no tools: titles, topic checks) are left out",
                "prompt go",
                "request ",
                "content Hel",
                "content lo",
                "tool_result ",
                "request ",
                "note API error: 529 overloaded_error: Overloaded"
            ]
        );
    }
}
