//! OpenAI Chat Completions (and Ollama's `/api/chat`, which has its shape):
//! `messages` in the request; a `chat.completion` whole; a stream ended by
//! a chunk with a `finish_reason` and `data: [DONE]`.

use serde_json::{json, Value};

use super::{after, frame, text_parts, CallTracker, Request, Role, Shape, Terminator, ToolOutcome, Turn};
use loopscope_core::formats::str_of;

pub fn request(body: &Value) -> Request {
    let mut system = String::new();
    let mut turns = Vec::new();
    for m in body.get("messages").and_then(Value::as_array).into_iter().flatten() {
        let parts = text_parts(m.get("content"));
        let text = parts.join("\n");
        let turn = match str_of(m, "role").unwrap_or_default() {
            "system" | "developer" => {
                if system.is_empty() {
                    system = text.clone();
                }
                Turn::new(Role::System, text)
            }
            "assistant" => Turn::new(Role::Assistant, text),
            "tool" | "function" => Turn {
                role: Role::Tool,
                text: String::new(),
                results: vec![ToolOutcome::new(
                    str_of(m, "tool_call_id")
                        .or_else(|| str_of(m, "tool_name"))
                        .or_else(|| str_of(m, "name")),
                    true,
                    m.get("content").cloned().unwrap_or(Value::Null),
                )],
                ..Turn::new(Role::Tool, String::new())
            },
            _ => Turn::message(Role::User, &parts),
        };
        turns.push(turn);
    }
    Request::new(str_of(body, "model").map(str::to_string), &system, turns)
}

/// A `chat.completion` as one chunk per choice (the whole message as its
/// delta) and a usage chunk; Ollama's whole answer is already a chunk.
pub fn whole(body: &Value) -> Vec<Value> {
    if body.get("message").is_some() && body.get("done").is_some() {
        return vec![body.clone()];
    }
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    for (pos, choice) in body
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let mut delta = choice.get("message").cloned().unwrap_or(Value::Null);
        if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, call) in calls.iter_mut().enumerate() {
                if let Some(c) = call.as_object_mut() {
                    c.entry("index").or_insert(json!(i));
                }
            }
        }
        let index = choice.get("index").cloned().unwrap_or(json!(pos));
        let finish = choice.get("finish_reason").cloned().unwrap_or(json!("stop"));
        out.push(json!({"id": id, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}));
    }
    if let Some(usage) = body.get("usage").filter(|u| !u.is_null()) {
        out.push(json!({"id": id, "choices": [], "usage": usage}));
    }
    out
}

/// What a clean end needs from the chunks already sent.
#[derive(Default)]
pub struct End {
    id: Value,
    model: Value,
    created: Value,
    /// A choice was passed on: the client knows the message's role.
    started: bool,
    /// Answer text was passed on: loopscope's words start a new paragraph.
    texted: bool,
    /// A choice already got its finish_reason (Ollama: `done`).
    finished: bool,
    /// Ollama's NDJSON (whole `message` objects).
    ollama: bool,
}

impl Terminator for End {
    fn saw(&mut self, _event: Option<&str>, data: &Value) {
        if let (Some(message), Some(done)) = (data.get("message"), data.get("done")) {
            self.ollama = true;
            self.model = data.get("model").cloned().unwrap_or(Value::Null);
            self.texted |= str_of(message, "content").is_some_and(|c| !c.is_empty());
            self.finished |= done.as_bool() == Some(true);
            return;
        }
        for (field, slot) in [
            ("id", &mut self.id),
            ("model", &mut self.model),
            ("created", &mut self.created),
        ] {
            if let Some(v) = data.get(field).filter(|v| !v.is_null()) {
                *slot = v.clone();
            }
        }
        for choice in data.get("choices").and_then(Value::as_array).into_iter().flatten() {
            self.started = true;
            let content = choice.get("delta").and_then(|d| str_of(d, "content"));
            self.texted |= content.is_some_and(|c| !c.is_empty());
            self.finished |= choice.get("finish_reason").is_some_and(|f| !f.is_null());
        }
    }

    fn end(&mut self, shape: Shape, text: &str) -> Vec<u8> {
        let text = after(self.texted, text);
        if self.ollama {
            if self.finished {
                return Vec::new();
            }
            let last = json!({"model": self.model, "message": {"role": "assistant", "content": text}, "done": true, "done_reason": "stop"});
            return frame(Shape::Lines, None, &last);
        }
        let mut out = Vec::new();
        if !self.finished {
            let chunk = |delta: Value, finish: Value| {
                json!({
                    "id": self.id,
                    "object": "chat.completion.chunk",
                    "created": if self.created.is_null() { json!(0) } else { self.created.clone() },
                    "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                })
            };
            let delta = match self.started {
                true => json!({"content": text}),
                false => json!({"role": "assistant", "content": text}),
            };
            out.extend(frame(shape, None, &chunk(delta, Value::Null)));
            out.extend(frame(shape, None, &chunk(json!({}), json!("stop"))));
            self.finished = true;
        }
        if shape == Shape::Sse {
            out.extend_from_slice(b"data: [DONE]\n\n");
        }
        out
    }
}

/// Whether a tool call has begun streaming and its choice has not finished
/// (the Chat API sends a call's arguments in pieces and says it is whole
/// only with the choice's `finish_reason`). Ollama sends calls whole.
#[derive(Default)]
pub struct Calls {
    open: bool,
}

impl CallTracker for Calls {
    fn saw(&mut self, _event: Option<&str>, data: &Value) {
        for choice in data.get("choices").and_then(Value::as_array).into_iter().flatten() {
            let delta = choice.get("delta");
            let calls = delta
                .and_then(|d| d.get("tool_calls"))
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty());
            self.open |= calls || delta.and_then(|d| d.get("function_call")).is_some_and(|f| !f.is_null());
            if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
                self.open = false;
            }
        }
    }

    fn open(&self) -> bool {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_become_turns_with_tool_results() {
        let r = request(&json!({"model": "gpt-4o", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "修复测试 🎉"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}
        ]}));
        assert_eq!(r.model.as_deref(), Some("gpt-4o"));
        let roles: Vec<Role> = r.turns.iter().map(|t| t.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(r.turns[1].text, "修复测试 🎉");
        assert_eq!(r.turns[3].results[0].id.as_deref(), Some("c1"));
    }

    /// The data of each SSE event.
    fn payloads(bytes: &[u8]) -> Vec<String> {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").map(str::to_string))
            .collect()
    }

    #[test]
    fn a_clean_end_says_why_finishes_with_stop_then_says_done() {
        let mut end = End::default();
        end.saw(None, &json!({"id": "c", "model": "m", "created": 5, "choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": null}]}));
        let got = payloads(&end.end(Shape::Sse, "loopscope stopped a loop: 试验"));
        assert_eq!(got.len(), 3, "{got:?}");
        let text: Value = serde_json::from_str(&got[0]).unwrap();
        assert_eq!(
            text["choices"][0]["delta"],
            json!({"content": "\n\nloopscope stopped a loop: 试验"})
        );
        assert_eq!(text["id"], "c");
        let last: Value = serde_json::from_str(&got[1]).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!((last["created"].clone(), last["model"].clone()), (json!(5), json!("m")));
        assert_eq!(got[2], "[DONE]");
        // Once finished, only the end of the stream is left to say.
        assert_eq!(end.end(Shape::Sse, "again"), b"data: [DONE]\n\n");
    }

    #[test]
    fn a_call_is_open_from_its_first_piece_to_the_finish_and_a_held_one_leaves_no_trace() {
        let mut calls = Calls::default();
        let mut end = End::default();
        let first = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "t1", "function": {"name": "ls", "arguments": "{"}}]}, "finish_reason": null}]});
        calls.saw(None, &first);
        assert!(calls.open());
        calls.saw(None, &json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}, "finish_reason": null}]}));
        assert!(calls.open());
        calls.saw(
            None,
            &json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        );
        assert!(!calls.open());
        // None of it reached the client: the answer gets its role from the text chunk.
        let got = payloads(&end.end(Shape::Sse, "stopped"));
        let text: Value = serde_json::from_str(&got[0]).unwrap();
        assert_eq!(
            text["choices"][0]["delta"],
            json!({"role": "assistant", "content": "stopped"})
        );
        assert!(got.iter().all(|p| !p.contains("tool_calls")));
    }

    #[test]
    fn ollama_ends_with_a_done_message_holding_the_text() {
        let mut end = End::default();
        end.saw(
            None,
            &json!({"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": false}),
        );
        let line = String::from_utf8(end.end(Shape::Lines, "stopped")).unwrap();
        let last: Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(last["message"]["content"], "stopped");
        assert_eq!(
            (last["done"].clone(), last["done_reason"].clone()),
            (json!(true), json!("stop"))
        );
    }
}
