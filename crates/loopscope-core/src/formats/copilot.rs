//! GitHub Copilot CLI session events
//! (`~/.copilot/session-state/<sessionId>/events.jsonl`; schema of
//! github/copilot-sdk@cc0438d6 `nodejs/src/generated/session-events.ts`).
//! Only persisted events are on disk: deltas and `assistant.usage` are
//! ephemeral, so text comes in whole messages. Each `assistant.turn_start`
//! is one LLM call.
//!
//! Sub-agents write into the same file, their events marked with an
//! `agentId`: each is a stream of its own (`events.jsonl#<agentId>`), left
//! out of the main stream with a note.

use serde_json::Value;

use super::sse::{Handler, JsonLinesDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;

/// The main stream (`part` None) or one sub-agent's.
pub(crate) fn decoder(part: Option<&str>) -> JsonLinesDecoder<Copilot> {
    JsonLinesDecoder::new(
        Copilot {
            part: part.map(str::to_string),
            ..Copilot::default()
        },
        Format::CopilotCli,
    )
}

/// A Copilot session folder (`session-state/<id>/`) is read through its events file.
pub fn session_file(path: &std::path::Path) -> Option<std::path::PathBuf> {
    let f = path.join("events.jsonl");
    (path.is_dir() && f.is_file()).then_some(f)
}

/// Whether a JSON line is a Copilot session event.
pub(crate) fn is_event(v: &Value) -> bool {
    let t = str_of(v, "type").unwrap_or_default();
    let known = [
        "session.",
        "user.",
        "assistant.",
        "tool.",
        "subagent.",
        "abort",
        "hook.",
        "skill.",
    ];
    known.iter().any(|p| t.starts_with(p))
        && v.get("data").is_some_and(Value::is_object)
        && v.get("id").is_some()
        && v.get("timestamp").is_some()
}

/// The sub-agent an event belongs to, if any.
pub(crate) fn sub_agent_of(v: &Value) -> Option<&str> {
    str_of(v, "agentId").filter(|a| !a.is_empty())
}

/// The importer's state: which stream it reads, the turn it is in.
#[derive(Default)]
pub(crate) struct Copilot {
    part: Option<String>,
    sub_noted: bool,
    /// Inside an `assistant.turn_start` … `turn_end` pair.
    in_turn: bool,
    /// `assistant.reasoning` came in this turn (the message repeats it).
    reasoned: bool,
    /// Tool calls emitted from the assistant's messages.
    calls: std::collections::HashSet<String>,
}

impl Handler for Copilot {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        if v.get("ephemeral").and_then(Value::as_bool) == Some(true) {
            return;
        }
        out.ts = str_of(&v, "timestamp").and_then(Ts::from_rfc3339);
        let agent = sub_agent_of(&v);
        if agent != self.part.as_deref() {
            if agent.is_some() && self.part.is_none() && !self.sub_noted {
                self.sub_noted = true;
                out.note("sub-agent events are streams of their own (FILE#AGENT_ID): left out here");
            }
            return;
        }
        let d = v.get("data").unwrap_or(&Value::Null);
        match str_of(&v, "type").unwrap_or_default() {
            "user.message" => out.prompt(str_of(d, "content").unwrap_or_default()),
            "assistant.turn_start" => {
                self.in_turn = true;
                self.reasoned = false;
                out.request_by(str_of(d, "turnId"), str_of(d, "model"));
            }
            "assistant.turn_end" => self.in_turn = false,
            "assistant.reasoning" => {
                self.reasoned = true;
                out.reasoning(str_of(d, "content").unwrap_or_default());
            }
            "assistant.message" => {
                if !self.in_turn {
                    out.request_by(str_of(d, "messageId"), str_of(d, "model"));
                }
                if !self.reasoned {
                    out.reasoning(str_of(d, "reasoningText").unwrap_or_default());
                }
                out.content(str_of(d, "content").unwrap_or_default());
                for r in d.get("toolRequests").and_then(Value::as_array).into_iter().flatten() {
                    let args = Args::of(r.get("arguments"));
                    self.calls
                        .insert(str_of(r, "toolCallId").unwrap_or_default().to_string());
                    out.tool_call(str_of(r, "toolCallId"), str_of(r, "name").unwrap_or("unknown"), args);
                }
                out.usage(d.get("outputTokens").and_then(Value::as_u64).unwrap_or(0));
            }
            // A sub-agent's calls are only seen starting (its messages are not persisted).
            "tool.execution_start" if !self.calls.contains(str_of(d, "toolCallId").unwrap_or_default()) => {
                let id = str_of(d, "toolCallId").unwrap_or_default();
                self.calls.insert(id.to_string());
                let args = Args::of(d.get("arguments"));
                out.tool_call(Some(id), str_of(d, "toolName").unwrap_or("unknown"), args);
            }
            "tool.execution_complete" => {
                let ok = d.get("success").and_then(Value::as_bool).unwrap_or(true);
                let output = if ok {
                    d.pointer("/result/content").cloned()
                } else {
                    d.pointer("/error/message").or(d.get("error")).cloned()
                };
                out.tool_result(str_of(d, "toolCallId"), ok, output);
            }
            "session.error" => {
                let code = d
                    .get("statusCode")
                    .and_then(Value::as_u64)
                    .map_or(String::new(), |c| format!("{c} "));
                out.api_error(&format!("{code}{}", str_of(d, "message").unwrap_or_default()));
            }
            "abort" => out.note(format!(
                "aborted ({})",
                str_of(d, "reason").unwrap_or("no reason given")
            )),
            "session.compaction_complete" | "session.truncation" => out.condensation("context compacted"),
            "subagent.started" => out.note(format!(
                "sub-agent {} started (its events are a stream of their own)",
                str_of(d, "agentName").unwrap_or("?")
            )),
            "subagent.failed" => out.note(format!(
                "sub-agent {} failed: {}",
                str_of(d, "agentName").unwrap_or("?"),
                str_of(d, "error").unwrap_or_default()
            )),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    const LINES: &str = r#"{"type":"user.message","data":{"content":"fix it"},"id":"1","timestamp":"2026-01-01T00:00:00Z","parentId":null}
{"type":"assistant.turn_start","data":{"turnId":"0","model":"m"},"id":"2","timestamp":"2026-01-01T00:00:01Z","parentId":"1"}
{"type":"assistant.message","data":{"messageId":"x","content":"","reasoningText":"think","outputTokens":5,"toolRequests":[{"toolCallId":"c1","name":"task","arguments":{"prompt":"look"}}]},"id":"3","timestamp":"2026-01-01T00:00:02Z","parentId":"2"}
{"type":"tool.execution_complete","data":{"toolCallId":"s1","success":false,"parentToolCallId":"c1","error":{"message":"no"}},"id":"4","timestamp":"2026-01-01T00:00:03Z","parentId":"3","agentId":"explore-1"}
{"type":"tool.execution_complete","data":{"toolCallId":"c1","success":false,"error":{"message":"bad path","code":"failure"}},"id":"5","timestamp":"2026-01-01T00:00:04Z","parentId":"4"}
"#;

    #[test]
    fn main_stream_and_sub_agent_stream() {
        let d = Decoded::from_bytes(LINES.as_bytes(), &mut decoder(None));
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(
            kinds,
            ["prompt", "request", "reasoning", "tool_call", "note", "tool_result"]
        );
        assert_eq!(d.events[5].to_json()["output"], "bad path");
        let sub = Decoded::from_bytes(LINES.as_bytes(), &mut decoder(Some("explore-1")));
        assert_eq!(sub.events.len(), 1);
        assert_eq!(sub.events[0].to_json()["ok"], false);
    }
}
