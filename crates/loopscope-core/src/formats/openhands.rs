//! OpenHands:
//! - SDK / CLI v1 conversations (OpenHands/software-agent-sdk@611629e6):
//!   a folder `<conversation>/events/event-NNNNN-<uuid>.json`, one event
//!   per file, read in index order by [`super::folder`] as one JSON line
//!   each (the SDK's own test fixtures keep them as such JSONL);
//! - V0 trajectories (All-Hands-AI/OpenHands@04e28400
//!   `events/serialization/event.py`): one JSON array of actions and
//!   observations, written whole.
//!
//! Deltas are not persisted. Event times are local times without an
//! offset (`datetime.now().isoformat()`).

use std::collections::HashSet;

use serde_json::Value;

use super::sse::{Handler, JsonLinesDecoder};
use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{str_of, text_of, ts_of, Args, Format, Out};

pub fn events_decoder() -> JsonLinesDecoder<Events> {
    JsonLinesDecoder::new(Events::default(), Format::Openhands)
}

pub fn v0_decoder() -> WholeDecoder<V0> {
    WholeDecoder::new(V0::default(), parse_json, Format::Openhands)
}

/// Whether a JSON object is an SDK event.
pub fn is_sdk_event(v: &Value) -> bool {
    str_of(v, "kind").is_some_and(|k| k.ends_with("Event") || k.ends_with("Observation") || k == "Condensation")
        && v.get("id").is_some()
        && v.get("source").is_some()
}

/// Whether a JSON array element is a V0 trajectory item.
pub fn is_v0_item(v: &Value) -> bool {
    v.get("id").is_some() && v.get("source").is_some() && (v.get("action").is_some() || v.get("observation").is_some())
}

/// The agent's reasoning: `reasoning_content`, else its thinking blocks.
fn reasoning_of(v: &Value) -> String {
    if let Some(r) = str_of(v, "reasoning_content").filter(|r| !r.is_empty()) {
        return r.to_string();
    }
    let blocks: Vec<&str> = v
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| str_of(b, "thinking"))
        .collect();
    blocks.join("\n")
}

#[derive(Default)]
pub struct Events {
    /// LLM responses seen (one response may hold several actions).
    responses: HashSet<String>,
    /// The execution status last given, until the next action or message:
    /// a stop both streamed as an event and kept in `base_state.json` (read
    /// after the events, see [`super::folder::Conversation`]) is one stop.
    status: Option<String>,
}

impl Events {
    fn request(&mut self, id: Option<&str>, out: &mut Out<'_>) {
        match id.filter(|i| !i.is_empty()) {
            Some(id) if !self.responses.insert(id.to_string()) => {}
            id => out.request(id),
        }
    }
}

impl Handler for Events {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        out.ts = str_of(&v, "timestamp").and_then(ts_of);
        let source = str_of(&v, "source").unwrap_or_default();
        let kind = str_of(&v, "kind").unwrap_or_default();
        if kind == "ConversationStateUpdateEvent" && str_of(&v, "key") == Some("execution_status") {
            let status = str_of(&v, "value").map(str::to_string);
            if status.is_some() && status == self.status {
                return;
            }
            self.status = status;
        } else if matches!(kind, "ActionEvent" | "MessageEvent") {
            self.status = None;
        }
        match kind {
            "MessageEvent" => {
                let m = v.get("llm_message").unwrap_or(&Value::Null);
                let text = text_of(m.get("content"));
                if source == "user" {
                    out.prompt(&text);
                } else if source == "environment" {
                    // The SDK's nudge after repeated failing calls (a user-role
                    // message from the environment): the agent's own detector
                    // speaking, not a response of the model.
                    out.agent_detection("openhands", "nudge", text);
                } else {
                    self.request(str_of(&v, "llm_response_id"), out);
                    out.reasoning(&reasoning_of(m));
                    out.content(&text);
                }
            }
            "ActionEvent" => {
                self.request(str_of(&v, "llm_response_id"), out);
                out.reasoning(&reasoning_of(&v));
                out.content(&text_of(v.get("thought")));
                match v.get("tool_call") {
                    Some(c) if c.is_object() => {
                        let args = Args::of(c.get("arguments"));
                        out.tool_call(str_of(c, "id"), str_of(c, "name").unwrap_or("unknown"), args);
                    }
                    _ => out.tool_call(
                        str_of(&v, "tool_call_id"),
                        str_of(&v, "tool_name").unwrap_or("unknown"),
                        Args::Json(v.get("action").cloned().unwrap_or(Value::Null)),
                    ),
                }
            }
            "ObservationEvent" => {
                let o = v.get("observation").unwrap_or(&Value::Null);
                let ok = o.get("is_error").and_then(Value::as_bool) != Some(true);
                out.tool_result(
                    str_of(&v, "tool_call_id"),
                    ok,
                    Some(Value::String(text_of(o.get("content")))),
                );
                if !ok {
                    out.error_returned();
                }
            }
            "AgentErrorEvent" => out.tool_result(str_of(&v, "tool_call_id"), false, v.get("error").cloned()),
            "UserRejectObservation" => {
                out.tool_result(str_of(&v, "tool_call_id"), false, v.get("rejection_reason").cloned())
            }
            "Condensation" | "CondensationSummaryEvent" => out.condensation("context condensed"),
            "ConversationErrorEvent" => out.note(format!(
                "conversation error: {}",
                str_of(&v, "detail").or(str_of(&v, "code")).unwrap_or_default()
            )),
            "ConversationStateUpdateEvent" if str_of(&v, "key") == Some("execution_status") => {
                match str_of(&v, "value") {
                    Some("stuck") => out.agent_detection(
                        "openhands",
                        "stuck",
                        "OpenHands' stuck detector stopped the agent (execution_status stuck)".to_string(),
                    ),
                    Some("error") => out.note("the conversation ended with an error (execution_status error)"),
                    _ => {}
                }
            }
            "PauseEvent" => out.note("paused by the user"),
            _ => {}
        }
    }
}

/// V0: items already emitted (the file is rewritten whole).
#[derive(Default)]
pub struct V0 {
    done: usize,
    responses: HashSet<String>,
}

impl V0 {
    fn item(&mut self, v: &Value, out: &mut Out<'_>) {
        out.ts = str_of(v, "timestamp").and_then(ts_of);
        let args = v.get("args").unwrap_or(&Value::Null);
        let meta = v.get("tool_call_metadata").unwrap_or(&Value::Null);
        let response = meta.get("model_response").unwrap_or(&Value::Null);
        let message = response.pointer("/choices/0/message").unwrap_or(&Value::Null);
        let source = str_of(v, "source").unwrap_or_default();
        if let Some(action) = str_of(v, "action") {
            match action {
                "message" if source == "user" => {
                    out.prompt(str_of(args, "content").or(str_of(v, "message")).unwrap_or_default())
                }
                "message" => {
                    out.request(None);
                    out.content(str_of(args, "content").unwrap_or_default());
                }
                "system" | "recall" => {}
                "condensation" => out.condensation("context condensed"),
                "finish" => {
                    out.request(None);
                    // `final_thought` since 0.2x; the trajectories before it
                    // keep the closing words in `thought`.
                    let words = str_of(args, "final_thought").filter(|t| !t.is_empty());
                    out.content(words.or(str_of(args, "thought")).unwrap_or_default());
                }
                _ if source == "agent" => {
                    let rid = str_of(response, "id").unwrap_or_default();
                    if rid.is_empty() || self.responses.insert(rid.to_string()) {
                        out.request_by(Some(rid), str_of(response, "model"));
                        out.reasoning(str_of(message, "reasoning_content").unwrap_or_default());
                        out.content(str_of(args, "thought").unwrap_or_default());
                    }
                    let id = str_of(meta, "tool_call_id");
                    let recorded = message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .find(|c| str_of(c, "id") == id && id.is_some())
                        .and_then(|c| c.pointer("/function/arguments"));
                    let name = str_of(meta, "function_name").unwrap_or(action);
                    match recorded {
                        Some(Value::String(s)) => out.tool_call(id, name, Args::Text(s)),
                        _ => {
                            let mut a = args.clone();
                            if let Some(o) = a.as_object_mut() {
                                o.remove("thought");
                            }
                            out.tool_call(id, name, Args::Json(a));
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        let Some(observation) = str_of(v, "observation") else {
            return;
        };
        let extras = v.get("extras").unwrap_or(&Value::Null);
        match observation {
            "recall" | "null" | "agent_think" => {}
            "agent_state_changed" => {
                if let Some(state @ ("error" | "stuck")) = str_of(extras, "agent_state") {
                    out.note(format!(
                        "agent state: {state} {}",
                        str_of(extras, "reason").unwrap_or_default()
                    ));
                }
            }
            "agent_condensation" => out.condensation("context condensed"),
            _ => {
                let exit = extras.pointer("/metadata/exit_code").and_then(Value::as_i64);
                let ok = observation != "error"
                    && v.get("success").and_then(Value::as_bool) != Some(false)
                    && exit.is_none_or(|c| c == 0);
                out.tool_result(str_of(meta, "tool_call_id"), ok, v.get("content").cloned());
            }
        }
    }
}

impl DocHandler for V0 {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let items = doc.as_array().map(Vec::as_slice).unwrap_or_default();
        for (i, v) in items.iter().enumerate().skip(self.done) {
            out.line = i as u64 + 1;
            self.item(v, out);
        }
        self.done = self.done.max(items.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    #[test]
    fn sdk_events_map_and_local_times_are_kept() {
        let lines = [
            r#"{"id":"1","timestamp":"2026-09-14T09:12:09.117044","source":"user","llm_message":{"role":"user","content":[{"type":"text","text":"fix"}]},"kind":"MessageEvent"}"#,
            r#"{"id":"2","timestamp":"2026-09-14T09:12:15.644290","source":"agent","thought":[{"type":"text","text":"run it"}],"reasoning_content":"hm","tool_call":{"id":"c","name":"terminal","arguments":"{\"command\":\"ls\"}"},"llm_response_id":"r1","kind":"ActionEvent"}"#,
            r#"{"id":"3","timestamp":"2026-09-14T09:12:16","source":"environment","tool_call_id":"c","observation":{"content":[{"type":"text","text":"x"}],"is_error":true},"kind":"ObservationEvent"}"#,
            r#"{"id":"4","timestamp":"2026-09-14T09:12:17","source":"agent","tool_call_id":"d","error":"bad args","kind":"AgentErrorEvent"}"#,
            r#"{"id":"5","timestamp":"2026-09-14T09:12:18","source":"environment","key":"execution_status","value":"stuck","kind":"ConversationStateUpdateEvent"}"#,
        ]
        .join("\n");
        let d = Decoded::from_bytes(lines.as_bytes(), &mut events_decoder());
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(
            kinds,
            [
                "prompt",
                "request",
                "reasoning",
                "content",
                "tool_call",
                "tool_result",
                "tool_result",
                "note"
            ]
        );
        assert!(d.events.iter().all(|e| e.ts.is_some()));
        assert_eq!(d.events[5].to_json()["ok"], false);
    }

    /// A stop streamed as an event and also read from base_state.json is
    /// one stop; a new action between them makes a second one.
    #[test]
    fn one_stop_read_twice_is_one_note() {
        let stuck = r#"{"id":"s","source":"environment","key":"execution_status","value":"stuck","kind":"ConversationStateUpdateEvent"}"#;
        let action = r#"{"id":"2","source":"agent","tool_call":{"id":"c","name":"terminal","arguments":"{}"},"llm_response_id":"r1","kind":"ActionEvent"}"#;
        let notes = |lines: &[&str]| {
            let d = Decoded::from_bytes(lines.join("\n").as_bytes(), &mut events_decoder());
            d.events.iter().filter(|e| e.type_name() == "note").count()
        };
        assert_eq!(notes(&[action, stuck, stuck]), 1);
        assert_eq!(notes(&[action, stuck, action, stuck]), 2);
    }
}
