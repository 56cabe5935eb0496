//! opencode and Kilo CLI (anomalyco/opencode `packages/opencode/src/session/
//! message-v2.ts@007a9409`): one mapping of messages and their parts, fed
//! from four places —
//! - the SQLite store (`opencode.db`, `kilo.db`; rows read by [`super::store`]),
//! - the legacy `storage/` tree of JSON files (before 1.2),
//! - `opencode export` (one JSON document),
//! - `opencode run --format json` (JSONL of parts as they finish).
//!
//! Parts are updated in place while the model streams: each version of a
//! part adds only what it did not have (text grows, a tool call starts,
//! then completes). `step-start` parts bracket each LLM call.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::grow::Grown;
use super::sse::{Handler, JsonLinesDecoder};
use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;

/// The rows of the store or the storage tree, and `run --format json` lines.
pub fn lines_decoder() -> JsonLinesDecoder<Opencode> {
    JsonLinesDecoder::new(Opencode::default(), Format::Opencode)
}

/// `opencode export`.
pub fn export_decoder() -> WholeDecoder<Export> {
    WholeDecoder::new(Export::default(), parse_json, Format::Opencode)
}

/// `run --format json` event types.
pub const RUN_TYPES: [&str; 7] = [
    "step_start",
    "text",
    "reasoning",
    "tool_use",
    "step_finish",
    "error",
    "done",
];

/// A `run --format json` event (detection).
pub fn is_run_record(v: &Value) -> bool {
    RUN_TYPES.contains(&str_of(v, "type").unwrap_or_default()) && v.get("sessionID").is_some()
}

/// An `opencode export` document (detection; mini-swe-agent's, which also
/// has `info` and `messages`, is told first by its format name).
pub fn is_export(v: &Value) -> bool {
    v.get("info").is_some() && v.get("messages").is_some()
}

/// Part types this version maps; others are skipped with a warning (once each).
const KNOWN_PARTS: [&str; 14] = [
    "text",
    "reasoning",
    "tool",
    "step-start",
    "step-finish",
    "compaction",
    "retry",
    "subtask",
    "agent",
    "file",
    "patch",
    "snapshot",
    "hook",
    "session",
];

#[derive(Debug, Default)]
struct Message {
    role: String,
    model: Option<String>,
    error_said: bool,
    /// `time.created`, ms: the time of its parts that have none.
    created: Option<i64>,
}

#[derive(Default)]
pub struct Opencode {
    messages: HashMap<String, Message>,
    grown: Grown,
    unknown: HashSet<String>,
}

/// The time of a part (its `time.start`, its tool state's), in ms.
fn part_time(p: &Value) -> Option<i64> {
    p.pointer("/time/start")
        .or_else(|| p.pointer("/state/time/start"))
        .and_then(Value::as_i64)
}

impl Opencode {
    /// A message's info (new, or updated: completed, failed).
    pub fn message(&mut self, info: &Value, out: &mut Out<'_>) {
        let id = str_of(info, "id").unwrap_or_default().to_string();
        let m = self.messages.entry(id).or_default();
        m.role = str_of(info, "role").unwrap_or(&m.role).to_string();
        if let Some(model) = str_of(info, "modelID") {
            m.model = Some(model.to_string());
        }
        if let Some(t) = info.pointer("/time/created").and_then(Value::as_i64) {
            m.created = Some(t);
        }
        if let Some(e) = info.get("error").filter(|e| e.is_object()) {
            if !std::mem::replace(&mut m.error_said, true) {
                out.ts = info
                    .pointer("/time/completed")
                    .or_else(|| info.pointer("/time/created"))
                    .and_then(Value::as_i64)
                    .and_then(Ts::from_unix_millis);
                error(e, out);
            }
        }
    }

    /// One version of a part.
    pub fn part(&mut self, p: &Value, out: &mut Out<'_>) {
        let id = str_of(p, "id").unwrap_or_default().to_string();
        let message = str_of(p, "messageID").and_then(|m| self.messages.get(m));
        let created = if out.ts.is_none() {
            message.and_then(|m| m.created)
        } else {
            None
        };
        if let Some(t) = part_time(p).or(created).and_then(Ts::from_unix_millis) {
            out.ts = Some(t);
        }
        let user = message.is_some_and(|m| m.role == "user");
        let model = message.and_then(|m| m.model.clone());
        let kind = str_of(p, "type").unwrap_or_default();
        let text = str_of(p, "text").unwrap_or_default();
        match kind {
            "text" if user => {
                let synthetic = p.get("synthetic").and_then(Value::as_bool) == Some(true)
                    || p.get("ignored").and_then(Value::as_bool) == Some(true);
                if !synthetic && self.grown.once(&id) {
                    out.prompt(text);
                }
            }
            "text" => out.content(self.grown.new_part(&id, text)),
            "reasoning" => out.reasoning(self.grown.new_part(&id, text)),
            "step-start" if self.grown.once(&id) => out.request_by(Some(&id), model.as_deref()),
            "step-finish" if self.grown.once(&id) => {
                out.usage(p.pointer("/tokens/output").and_then(Value::as_u64).unwrap_or(0));
            }
            "tool" => self.tool(&id, p, out),
            "compaction" if self.grown.once(&id) => out.condensation("context compacted"),
            "retry" if self.grown.once(&id) => {
                let e = p.get("error").unwrap_or(&Value::Null);
                error(e, out);
            }
            "subtask" if self.grown.once(&id) => out.note(format!(
                "sub-agent task ({}): {} — a child session, a stream of its own",
                str_of(p, "agent").unwrap_or("?"),
                str_of(p, "description").unwrap_or_default()
            )),
            k if !KNOWN_PARTS.contains(&k) && self.unknown.insert(k.to_string()) => {
                out.warn(format!(
                    "opencode part type {k:?} is not known to this version: skipped"
                ));
            }
            _ => {}
        }
    }

    fn tool(&mut self, id: &str, p: &Value, out: &mut Out<'_>) {
        let state = p.get("state").unwrap_or(&Value::Null);
        let status = str_of(state, "status").unwrap_or_default();
        if status == "pending" {
            return; // its input is still streaming
        }
        let call = str_of(p, "callID").unwrap_or(id);
        if self.grown.once(&format!("{id}/call")) {
            if let Some(t) = state
                .pointer("/time/start")
                .and_then(Value::as_i64)
                .and_then(Ts::from_unix_millis)
            {
                out.ts = Some(t);
            }
            let args = state.get("input").cloned().unwrap_or(Value::Null);
            out.tool_call(Some(call), str_of(p, "tool").unwrap_or("unknown"), Args::Json(args));
        }
        let (ok, output) = match status {
            "completed" => (true, state.get("output")),
            "error" => (false, state.get("error")),
            _ => return,
        };
        if self.grown.once(&format!("{id}/result")) {
            if let Some(t) = state
                .pointer("/time/end")
                .and_then(Value::as_i64)
                .and_then(Ts::from_unix_millis)
            {
                out.ts = Some(t);
            }
            out.tool_result(Some(call), ok, output.cloned());
        }
    }
}

/// What opencode's DeniedError says (a permission rule said deny).
const DENIED: &str = "The user has specified a rule which prevents you from using this specific tool call.";

/// An `error` of a message, a `run` line or a retry part (a NamedError:
/// `{name, data{message, statusCode?}}`).
fn error(e: &Value, out: &mut Out<'_>) {
    let name = str_of(e, "name").unwrap_or("error");
    let d = e.get("data").unwrap_or(e);
    let msg = str_of(d, "message").unwrap_or_default();
    let code = d
        .get("statusCode")
        .and_then(Value::as_u64)
        .map_or(String::new(), |c| format!("{c} "));
    match name {
        "MessageAbortedError" => out.note(format!(
            "request aborted{}",
            if msg.is_empty() {
                String::new()
            } else {
                format!(": {msg}")
            }
        )),
        // A permission denied by a rule lists the rules of the permission
        // asked: doom_loop's are opencode's own loop guard stopping the step.
        _ if msg.starts_with(DENIED) && msg.contains(r#""permission":"doom_loop""#) => out.agent_detection(
            "opencode",
            "deny",
            "opencode's doom_loop permission was denied: the same call three times in one response; the step ends"
                .to_string(),
        ),
        "APIError" | "ProviderAuthError" | "UnknownError" => out.api_error(&format!("{code}{msg} ({name})")),
        _ => out.note(format!("{name}: {msg}")),
    }
}

impl Handler for Opencode {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        if let Some(row) = str_of(&v, "row") {
            out.ts = v.get("time").and_then(Value::as_i64).and_then(Ts::from_unix_millis);
            let data = v.get("data").unwrap_or(&Value::Null);
            match row {
                "message" => self.message(data, out),
                "part" => self.part(data, out),
                _ => {}
            }
            return;
        }
        if str_of(&v, "loopscope").is_some() {
            return; // the header of a store's rows
        }
        // `opencode run --format json`
        out.ts = v
            .get("timestamp")
            .and_then(Value::as_i64)
            .and_then(Ts::from_unix_millis);
        match str_of(&v, "type").unwrap_or_default() {
            "error" => error(v.get("error").unwrap_or(&Value::Null), out),
            "done" => {}
            _ => {
                if let Some(p) = v.get("part") {
                    self.part(p, out);
                }
            }
        }
    }
}

/// `opencode export`: `{info, messages: [{info, parts}]}`.
#[derive(Default)]
pub struct Export {
    inner: Opencode,
}

impl DocHandler for Export {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        for (i, m) in doc
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            out.line = i as u64 + 1;
            let info = m.get("info").unwrap_or(&Value::Null);
            out.ts = info
                .pointer("/time/created")
                .and_then(Value::as_i64)
                .and_then(Ts::from_unix_millis);
            self.inner.message(info, out);
            let mid = str_of(info, "id").unwrap_or_default();
            for p in m.get("parts").and_then(Value::as_array).into_iter().flatten() {
                // Export parts carry their message id; rows of old exports may not.
                if p.get("messageID").is_none() && !mid.is_empty() {
                    let mut p = p.clone();
                    p["messageID"] = Value::String(mid.to_string());
                    self.inner.part(&p, out);
                } else {
                    self.inner.part(p, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{Decoded, Decoder};

    #[test]
    fn a_part_updated_in_place_adds_only_what_is_new() {
        let rows = [
            r#"{"row":"message","time":1,"data":{"id":"m1","role":"user"}}"#,
            r#"{"row":"part","time":1,"data":{"id":"p0","messageID":"m1","type":"text","text":"fix it"}}"#,
            r#"{"row":"message","time":2,"data":{"id":"m2","role":"assistant","modelID":"k2"}}"#,
            r#"{"row":"part","time":2,"data":{"id":"p1","messageID":"m2","type":"step-start"}}"#,
            r#"{"row":"part","time":2,"data":{"id":"p2","messageID":"m2","type":"text","text":"Let"}}"#,
            r#"{"row":"part","time":3,"data":{"id":"p2","messageID":"m2","type":"text","text":"Let me"}}"#,
            r#"{"row":"part","time":3,"data":{"id":"p3","messageID":"m2","type":"tool","callID":"c","tool":"bash","state":{"status":"pending","input":{}}}}"#,
            r#"{"row":"part","time":4,"data":{"id":"p3","messageID":"m2","type":"tool","callID":"c","tool":"bash","state":{"status":"running","input":{"command":"ls"}}}}"#,
            r#"{"row":"part","time":5,"data":{"id":"p3","messageID":"m2","type":"tool","callID":"c","tool":"bash","state":{"status":"error","input":{"command":"ls"},"error":"boom"}}}"#,
            r#"{"row":"part","time":5,"data":{"id":"p4","messageID":"m2","type":"holo-part"}}"#,
            r#"{"row":"message","time":6,"data":{"id":"m2","role":"assistant","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}}}"#,
        ]
        .join("\n");
        let d = Decoded::from_bytes(rows.as_bytes(), &mut lines_decoder());
        let got: Vec<String> = d.events.iter().map(|e| e.to_json().to_string()).collect();
        assert_eq!(d.events.len(), 7, "{got:#?}");
        assert!(got[2].contains(r#""text":"Let""#) && got[3].contains(r#""text":" me""#));
        assert!(got[1].contains(r#""model":"k2""#));
        assert!(got[5].contains(r#""ok":false"#));
        assert!(got[6].contains("API error: 529 Overloaded"));
        assert_eq!(d.problems.len(), 1, "the unknown part type is said once");
        assert!(!d.problems[0].skipped);
        let _ = lines_decoder().format();
    }
}
