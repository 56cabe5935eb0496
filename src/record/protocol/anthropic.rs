//! Anthropic Messages: `system` and `messages` (tool results ride in user
//! messages as `tool_result` blocks); a whole `message`; a stream ended by
//! closing its open blocks, `message_delta` with a stop reason and `message_stop`.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::{after, frame, text_of, text_parts, CallTracker, Request, Role, Shape, Terminator, ToolOutcome, Turn};
use loopscope_core::formats::str_of;

pub fn request(body: &Value) -> Request {
    let system = text_of(body.get("system"));
    let mut turns = vec![Turn::new(Role::System, system.clone())];
    for m in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let content = m.get("content");
        let role = match str_of(m, "role") {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let mut turn = Turn::message(role, &text_parts(content));
        if role == Role::User {
            for b in content.and_then(Value::as_array).into_iter().flatten() {
                if str_of(b, "type") == Some("tool_result") {
                    turn.results.push(ToolOutcome::new(
                        str_of(b, "tool_use_id"),
                        b.get("is_error").and_then(Value::as_bool) != Some(true),
                        b.get("content").cloned().unwrap_or(Value::Null),
                    ));
                }
            }
        }
        turns.push(turn);
    }
    Request::new(str_of(body, "model").map(str::to_string), &system, turns)
}

/// A whole `message` as the events that would have streamed it: each
/// block started whole and stopped.
pub fn whole(body: &Value) -> Vec<Value> {
    if str_of(body, "type") == Some("error") {
        return vec![body.clone()];
    }
    let mut start = body.clone();
    if let Some(m) = start.as_object_mut() {
        m.insert("content".into(), json!([]));
    }
    let mut out = vec![json!({"type": "message_start", "message": start})];
    for (i, block) in body
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        out.push(json!({"type": "content_block_start", "index": i, "content_block": block}));
        out.push(json!({"type": "content_block_stop", "index": i}));
    }
    out.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")},
        "usage": body.get("usage"),
    }));
    out.push(json!({"type": "message_stop"}));
    out
}

/// Blocks the client has, those still open, and whether the message was
/// already ended.
#[derive(Default)]
pub struct End {
    open: BTreeSet<u64>,
    /// The index the next block gets (blocks are numbered as they start).
    next_index: u64,
    /// A text block was passed on: loopscope's words start a new paragraph.
    texted: bool,
    output_tokens: u64,
    delta_sent: bool,
    stop_sent: bool,
}

impl Terminator for End {
    fn saw(&mut self, event: Option<&str>, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        let tokens = |v: Option<&Value>| v.and_then(|u| u.get("output_tokens")).and_then(Value::as_u64);
        match str_of(data, "type").or(event).unwrap_or_default() {
            "message_start" => {
                if let Some(n) = tokens(data.get("message").and_then(|m| m.get("usage"))) {
                    self.output_tokens = n;
                }
            }
            "content_block_start" => {
                self.open.insert(index);
                self.next_index = self.next_index.max(index + 1);
                let block = data.get("content_block");
                self.texted |= block.and_then(|b| str_of(b, "type")) == Some("text");
            }
            "content_block_stop" => {
                self.open.remove(&index);
            }
            "message_delta" => {
                self.delta_sent = true;
                if let Some(n) = tokens(data.get("usage")) {
                    self.output_tokens = n;
                }
            }
            "message_stop" => self.stop_sent = true,
            _ => {}
        }
    }

    fn end(&mut self, shape: Shape, text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for index in std::mem::take(&mut self.open) {
            let stop = json!({"type": "content_block_stop", "index": index});
            out.extend(frame(shape, Some("content_block_stop"), &stop));
        }
        if !self.delta_sent {
            // A text block of its own after the blocks the client has: the
            // SDKs number blocks by their start, so it takes the next index.
            let index = self.next_index;
            let start =
                json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}});
            let delta = json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": after(self.texted, text)}});
            let stop = json!({"type": "content_block_stop", "index": index});
            out.extend(frame(shape, Some("content_block_start"), &start));
            out.extend(frame(shape, Some("content_block_delta"), &delta));
            out.extend(frame(shape, Some("content_block_stop"), &stop));
            let delta = json!({
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                "usage": {"output_tokens": self.output_tokens},
            });
            out.extend(frame(shape, Some("message_delta"), &delta));
        }
        if !self.stop_sent {
            out.extend(frame(shape, Some("message_stop"), &json!({"type": "message_stop"})));
        }
        out
    }
}

/// The tool-use blocks started and not yet stopped.
#[derive(Default)]
pub struct Calls {
    open: BTreeSet<u64>,
}

impl CallTracker for Calls {
    fn saw(&mut self, event: Option<&str>, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match str_of(data, "type").or(event).unwrap_or_default() {
            "content_block_start" => {
                let kind = data.get("content_block").and_then(|b| str_of(b, "type"));
                if matches!(kind, Some("tool_use" | "server_tool_use" | "mcp_tool_use")) {
                    self.open.insert(index);
                }
            }
            "content_block_stop" => {
                self.open.remove(&index);
            }
            "message_start" | "message_stop" => self.open.clear(),
            _ => {}
        }
    }

    fn open(&self) -> bool {
        !self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_ride_in_user_messages() {
        let r = request(
            &json!({"model": "claude", "system": [{"type": "text", "text": "sys"}], "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "no such file"},
                    {"type": "text", "text": "<system-reminder>…</system-reminder>"}
                ]}
            ]}),
        );
        assert_eq!(r.turns[0], Turn::new(Role::System, "sys".into()));
        assert_eq!(r.turns[3].results.len(), 1);
        assert!(!r.turns[3].results[0].ok);
    }

    /// The payloads of SSE bytes, with their event names.
    fn events(bytes: &[u8]) -> Vec<(String, Value)> {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let event = e.lines().find_map(|l| l.strip_prefix("event: ")).unwrap().to_string();
                let data = e.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
                (event, serde_json::from_str(data).unwrap())
            })
            .collect()
    }

    #[test]
    fn a_clean_end_closes_open_blocks_and_says_why_in_a_text_block_of_its_own() {
        let mut end = End::default();
        end.saw(
            Some("message_start"),
            &json!({"type": "message_start", "message": {"usage": {"output_tokens": 1}}}),
        );
        end.saw(
            None,
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
        );
        end.saw(None, &json!({"type": "content_block_stop", "index": 0}));
        end.saw(
            None,
            &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text"}}),
        );
        let got = events(&end.end(Shape::Sse, "loopscope stopped a loop: 试验 🧪"));
        let kinds: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(got[0].1["index"], 1);
        assert_eq!(got[1].1["index"], 2);
        assert_eq!(got[1].1["content_block"]["type"], "text");
        // After the answer's own text, loopscope's words are a paragraph of their own.
        assert_eq!(got[2].1["delta"]["text"], "\n\nloopscope stopped a loop: 试验 🧪");
        assert_eq!(got[4].1["delta"]["stop_reason"], "end_turn");
        assert_eq!(got[4].1["usage"]["output_tokens"], 1);
    }

    #[test]
    fn a_held_back_tool_use_block_leaves_no_trace_and_its_index_goes_to_the_text() {
        // The client got a thinking block; the tool_use block after it was held back.
        let mut end = End::default();
        let mut calls = Calls::default();
        let passed = [
            json!({"type": "message_start", "message": {"usage": {"output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
            json!({"type": "content_block_stop", "index": 0}),
        ];
        for p in &passed {
            end.saw(None, p);
            calls.saw(None, p);
        }
        assert!(!calls.open());
        calls.saw(
            None,
            &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "name": "Read"}}),
        );
        assert!(calls.open(), "a tool_use block streams its input");
        calls.saw(
            None,
            &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta"}}),
        );
        assert!(calls.open());
        calls.saw(None, &json!({"type": "content_block_stop", "index": 1}));
        assert!(!calls.open(), "the call is complete");
        let got = events(&end.end(Shape::Sse, "stopped"));
        assert_eq!(got[0].0, "content_block_start");
        assert_eq!(got[0].1["index"], 1);
        assert_eq!(got[1].1["delta"]["text"], "stopped");
        assert!(got.iter().all(|(_, v)| v["content_block"]["type"] != "tool_use"));
    }

    #[test]
    fn a_message_already_ended_gets_nothing_more() {
        let mut end = End::default();
        end.saw(
            None,
            &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        );
        end.saw(None, &json!({"type": "message_stop"}));
        assert!(end.end(Shape::Sse, "stopped").is_empty());
    }
}
