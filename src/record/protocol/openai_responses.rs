//! OpenAI Responses: `instructions` and `input` (a text, or items: messages,
//! the model's calls and reasoning, `*_output` results); a whole `response`;
//! a stream ended by finishing its open message and `response.completed`
//! (which lists the items cut short as incomplete).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::{frame, text_of, text_parts, CallTracker, Request, Role, Shape, Terminator, ToolOutcome, Turn};
use loopscope_core::formats::str_of;

pub fn request(body: &Value) -> Request {
    let mut system = text_of(body.get("instructions"));
    let mut turns = Vec::new();
    match body.get("input") {
        Some(Value::String(s)) => turns.push(Turn::message(Role::User, &[s.as_str()])),
        Some(Value::Array(items)) => {
            for item in items {
                turns.push(turn(item));
            }
        }
        _ => {}
    }
    if system.is_empty() {
        if let Some(t) = turns.iter().find(|t| t.role == Role::System) {
            system = t.text.clone();
        }
    }
    let mut r = Request::new(str_of(body, "model").map(str::to_string), &system, turns);
    r.previous_response = str_of(body, "previous_response_id").map(str::to_string);
    r
}

fn turn(item: &Value) -> Turn {
    let kind = str_of(item, "type").unwrap_or("message");
    if kind == "message" {
        let role = match str_of(item, "role") {
            Some("system" | "developer") => Role::System,
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        return Turn::message(role, &text_parts(item.get("content")));
    }
    if kind.ends_with("_output") {
        let output = item.get("output").cloned().unwrap_or(Value::Null);
        // Codex sends a command's output as text with a header of its own:
        // its exit code says whether it failed, and its chunk id and wall
        // time change on every call, so detectors compare the rest.
        let (code, stable) = loopscope_core::formats::codex_call_output(&output);
        let ok = output.get("success").and_then(Value::as_bool) != Some(false)
            && !matches!(str_of(item, "status"), Some("failed" | "incomplete"))
            && code.is_none_or(|c| c == 0);
        let id = str_of(item, "call_id").or_else(|| str_of(item, "id"));
        return Turn {
            results: vec![ToolOutcome {
                stable,
                ..ToolOutcome::new(id, ok, output)
            }],
            ..Turn::new(Role::Tool, String::new())
        };
    }
    // function_call, reasoning, custom_tool_call, local_shell_call, …: the model's own.
    Turn::new(Role::Assistant, String::new())
}

/// A whole `response` as the events that would have streamed it.
pub fn whole(body: &Value) -> Vec<Value> {
    let mut created = body.clone();
    if let Some(m) = created.as_object_mut() {
        m.insert("output".into(), json!([]));
    }
    let mut out = vec![json!({"type": "response.created", "response": created})];
    for item in body.get("output").and_then(Value::as_array).into_iter().flatten() {
        match str_of(item, "type") {
            Some("reasoning") => {
                for (i, s) in item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if i > 0 {
                        out.push(json!({"type": "response.reasoning_summary_part.added", "summary_index": i}));
                    }
                    out.push(json!({"type": "response.reasoning_summary_text.delta", "delta": str_of(s, "text")}));
                }
                for c in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    out.push(json!({"type": "response.reasoning_text.delta", "delta": str_of(c, "text")}));
                }
            }
            Some("message") => {
                for c in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    match str_of(c, "type") {
                        Some("refusal") => {
                            out.push(json!({"type": "response.refusal.delta", "delta": str_of(c, "refusal")}))
                        }
                        _ => out.push(json!({"type": "response.output_text.delta", "delta": str_of(c, "text")})),
                    }
                }
            }
            _ => out.push(json!({"type": "response.output_item.done", "item": item})),
        }
    }
    out.push(json!({"type": "response.completed", "response": body}));
    out
}

/// An output item as the stream has built it so far.
#[derive(Default)]
struct Item {
    item: Value,
    done: bool,
    /// What streamed into it: output text, or a call's arguments.
    text: String,
    /// Reasoning summary parts.
    summary: BTreeMap<u64, String>,
}

/// The response and its items as the client received them.
#[derive(Default)]
pub struct End {
    response: Value,
    items: BTreeMap<u64, Item>,
    /// Output index of each item id.
    ids: std::collections::HashMap<String, u64>,
    sequence: Option<u64>,
    completed: bool,
}

impl End {
    fn item_of(&mut self, data: &Value) -> Option<&mut Item> {
        let index = match data.get("output_index").and_then(Value::as_u64) {
            Some(i) => i,
            None => *self.ids.get(str_of(data, "item_id")?)?,
        };
        self.items.get_mut(&index)
    }

    /// An open item as it stands: a message finished with its text (and
    /// `true`: it gets its own `output_item.done`); reasoning or a call cut
    /// short, marked incomplete, only listed in `response.completed` — the
    /// SDKs want every item there, but an agent must not run half a call or
    /// send back reasoning the API cannot take back (it has no encrypted content).
    fn as_ended(entry: &Item) -> (Value, bool) {
        let mut item = entry.item.as_object().cloned().unwrap_or_default();
        let message = str_of(&entry.item, "type") == Some("message");
        match str_of(&entry.item, "type") {
            Some("message") => {
                let part = json!([{"type": "output_text", "text": entry.text, "annotations": []}]);
                item.insert("content".into(), part);
            }
            Some("reasoning") => {
                let parts: Vec<Value> = entry
                    .summary
                    .values()
                    .map(|t| json!({"type": "summary_text", "text": t}))
                    .collect();
                item.insert("summary".into(), Value::Array(parts));
            }
            _ if item.contains_key("arguments") => {
                item.insert("arguments".into(), json!(entry.text));
            }
            _ => {}
        }
        item.insert("status".into(), json!(if message { "completed" } else { "incomplete" }));
        (Value::Object(item), message)
    }

    fn next_sequence(&mut self, event: &mut Map<String, Value>) {
        if let Some(n) = self.sequence.as_mut() {
            *n += 1;
            event.insert("sequence_number".into(), json!(*n));
        }
    }
}

impl Terminator for End {
    fn saw(&mut self, event: Option<&str>, data: &Value) {
        if let Some(n) = data.get("sequence_number").and_then(Value::as_u64) {
            self.sequence = Some(n);
        }
        let index = data.get("output_index").and_then(Value::as_u64);
        let delta = str_of(data, "delta").unwrap_or_default();
        match str_of(data, "type").or(event).unwrap_or_default() {
            "response.created" | "response.in_progress" => {
                self.response = data.get("response").cloned().unwrap_or(Value::Null);
            }
            "response.output_item.added" | "response.output_item.done" => {
                let item = data.get("item").cloned().unwrap_or(Value::Null);
                let index = index.unwrap_or(self.items.len() as u64);
                if let Some(id) = str_of(&item, "id") {
                    self.ids.insert(id.to_string(), index);
                }
                let done = str_of(data, "type") == Some("response.output_item.done");
                let entry = self.items.entry(index).or_default();
                entry.item = item;
                entry.done = done;
            }
            "response.output_text.delta" | "response.function_call_arguments.delta" => {
                if let Some(item) = self.item_of(data) {
                    item.text.push_str(delta);
                }
            }
            "response.reasoning_summary_text.delta" => {
                let part = data.get("summary_index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(item) = self.item_of(data) {
                    item.summary.entry(part).or_default().push_str(delta);
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => self.completed = true,
            _ => {}
        }
    }

    fn end(&mut self, shape: Shape, text: &str) -> Vec<u8> {
        if self.completed {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut output = Vec::new();
        let indexes: Vec<u64> = self.items.keys().copied().collect();
        for index in &indexes {
            let entry = &self.items[index];
            if entry.done {
                output.push(entry.item.clone());
                continue;
            }
            let (item, announced) = End::as_ended(entry);
            if !announced {
                output.push(item);
                continue;
            }
            let mut done = Map::new();
            done.insert("type".into(), json!("response.output_item.done"));
            done.insert("output_index".into(), json!(index));
            done.insert("item".into(), item.clone());
            self.push(&mut out, shape, done);
            output.push(item);
        }
        // loopscope's words: a message item of their own, streamed as the
        // API streams one (the SDKs build each item from its events).
        let index = indexes.last().map_or(0, |i| i + 1);
        let id = "msg_loopscope";
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        let message = |status: &str, content: Value| json!({"id": id, "type": "message", "role": "assistant", "status": status, "content": content});
        let empty_part = json!({"type": "output_text", "text": "", "annotations": []});
        let at = |kind: &str| json!({"type": kind, "item_id": id, "output_index": index, "content_index": 0});
        let events = [
            json!({"type": "response.output_item.added", "output_index": index, "item": message("in_progress", json!([]))}),
            with(at("response.content_part.added"), "part", empty_part),
            with(at("response.output_text.delta"), "delta", json!(text)),
            with(at("response.output_text.done"), "text", json!(text)),
            with(at("response.content_part.done"), "part", part.clone()),
            json!({"type": "response.output_item.done", "output_index": index, "item": message("completed", json!([part]))}),
        ];
        for event in events {
            self.push(&mut out, shape, event.as_object().cloned().unwrap_or_default());
        }
        output.push(message("completed", json!([part])));
        let mut response = self.response.as_object().cloned().unwrap_or_default();
        response.insert("status".into(), json!("completed"));
        response.insert("output".into(), Value::Array(output));
        let mut completed = Map::new();
        completed.insert("type".into(), json!("response.completed"));
        completed.insert("response".into(), Value::Object(response));
        self.push(&mut out, shape, completed);
        self.completed = true;
        out
    }
}

impl End {
    /// One event, numbered after the last the client got, in `out`.
    fn push(&mut self, out: &mut Vec<u8>, shape: Shape, mut event: Map<String, Value>) {
        self.next_sequence(&mut event);
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        out.extend(frame(shape, Some(&kind), &Value::Object(event)));
    }
}

/// `event` with `key` set to `value`.
fn with(mut event: Value, key: &str, value: Value) -> Value {
    event[key] = value;
    event
}

/// The output items the client was told of and not told were done: a
/// function call among them is still streaming its arguments.
#[derive(Default)]
pub struct Calls {
    open: std::collections::BTreeSet<u64>,
}

impl CallTracker for Calls {
    fn saw(&mut self, event: Option<&str>, data: &Value) {
        let index = data.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match str_of(data, "type").or(event).unwrap_or_default() {
            "response.output_item.added" => {
                let kind = data.get("item").and_then(|i| str_of(i, "type"));
                // Messages and reasoning are what the model says; every other item is a call.
                if !matches!(kind, Some("message" | "reasoning")) {
                    self.open.insert(index);
                }
            }
            "response.output_item.done" => {
                self.open.remove(&index);
            }
            "response.created" | "response.completed" | "response.incomplete" | "response.failed" => self.open.clear(),
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
    fn input_items_become_turns() {
        let r = request(
            &json!({"model": "gpt-5", "instructions": "be a coder", "previous_response_id": "resp_0", "input": [
                {"type": "message", "role": "developer", "content": "rules"},
                {"role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
                {"type": "reasoning", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "exit 1"}
            ]}),
        );
        let roles: Vec<Role> = r.turns.iter().map(|t| t.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::Assistant, Role::Tool]
        );
        assert_eq!(r.turns[1].text, "fix it");
        assert_eq!(r.turns[4].results[0].id.as_deref(), Some("c1"));
        assert_eq!(r.previous_response.as_deref(), Some("resp_0"));
    }

    #[test]
    fn codexs_command_output_fails_by_its_exit_code_and_compares_without_its_chunk_id() {
        let output = |chunk: &str, code: u8| {
            json!({"type": "function_call_output", "call_id": "c1", "output": format!(
                "Chunk ID: {chunk}\nWall time: 0.0000 seconds\nProcess exited with code {code}\nOriginal token count: 11\nOutput:\ncat: missing.txt: No such file or directory\n"
            )})
        };
        let outcome = |item: Value| request(&json!({"input": [item]})).turns[0].results[0].clone();
        let (a, b) = (outcome(output("5fab01", 1)), outcome(output("130f5b", 1)));
        assert!(!a.ok && !b.ok, "exit code 1 failed");
        assert_ne!(a.output, b.output);
        assert_eq!(a.stable, b.stable, "the same but for the chunk id");
        assert!(a.stable.as_ref().unwrap().as_str().unwrap().contains("No such file"));
        assert!(outcome(output("5fab01", 0)).ok);
        // Another tool's output is compared whole.
        let plain = outcome(json!({"type": "function_call_output", "call_id": "c1", "output": "done"}));
        assert!(plain.ok && plain.stable.is_none());
    }

    fn events(bytes: &[u8]) -> Vec<Value> {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn a_clean_end_finishes_the_open_message_says_why_in_a_message_and_completes() {
        let mut end = End::default();
        end.saw(None, &json!({"type": "response.created", "sequence_number": 0, "response": {"id": "r1", "status": "in_progress", "output": []}}));
        end.saw(None, &json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "m1", "type": "message", "role": "assistant", "content": []}}));
        end.saw(None, &json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "m1", "output_index": 0, "delta": "半分"}));
        end.saw(None, &json!({"type": "response.output_item.added", "sequence_number": 3, "output_index": 1, "item": {"id": "r2", "type": "reasoning", "summary": []}}));
        let events = events(&end.end(Shape::Sse, "loopscope stopped a loop: 试验"));
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        assert_eq!(events[0]["item"]["content"][0]["text"], "半分");
        assert_eq!(events[1]["output_index"], 2);
        assert_eq!(events[3]["delta"], "loopscope stopped a loop: 试验");
        let numbers: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
        assert_eq!(numbers, (4..12).collect::<Vec<u64>>());
        let completed = &events[7]["response"];
        assert_eq!(
            (completed["id"].clone(), completed["status"].clone()),
            (json!("r1"), json!("completed"))
        );
        let output = completed["output"].as_array().unwrap();
        assert_eq!(output.len(), 3);
        assert_eq!(output[1]["status"], "incomplete");
        assert_eq!(output[2]["content"][0]["text"], "loopscope stopped a loop: 试验");
        assert!(end.end(Shape::Sse, "again").is_empty());
    }

    #[test]
    fn a_function_call_is_open_until_its_item_is_done_and_a_held_one_leaves_no_trace() {
        let mut calls = Calls::default();
        let mut end = End::default();
        let created = json!({"type": "response.created", "response": {"id": "r1", "output": []}});
        calls.saw(None, &created);
        end.saw(None, &created);
        let message = json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning"}});
        calls.saw(None, &message);
        end.saw(None, &message);
        assert!(!calls.open());
        calls.saw(None, &json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "call_id": "c1"}}));
        assert!(calls.open());
        calls.saw(
            None,
            &json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{}"}),
        );
        assert!(calls.open());
        calls.saw(
            None,
            &json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call"}}),
        );
        assert!(!calls.open());
        let events = events(&end.end(Shape::Sse, "stopped"));
        let output = events.last().unwrap()["response"]["output"].as_array().unwrap().clone();
        assert_eq!(output.len(), 2, "{output:?}");
        assert!(events.iter().all(|e| !e.to_string().contains("function_call")));
        assert_eq!(events[1]["output_index"], 1, "the message takes the held call's place");
    }
}
