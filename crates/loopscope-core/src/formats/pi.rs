//! pi (`@mariozechner/pi-coding-agent`, badlogic/pi-mono@83378aad): session
//! files (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`, versions 1–3)
//! and the `pi --mode json` event stream, which carries the deltas.
//!
//! A session file is a tree since version 2: every entry names its parent
//! (`parentId`) and going back in the conversation starts a new branch in
//! the same file, rewriting nothing. What is read is the branch that ends
//! at the last entry; version 1 has no ids and is read in file order.

use std::collections::HashMap;

use serde_json::Value;

use super::sse::{Handler, JsonLinesDecoder};
use super::{str_of, text_of, Args, Format, Item, Out};
use crate::event::Ts;

pub fn session_decoder() -> JsonLinesDecoder<Session> {
    JsonLinesDecoder::new(Session::default(), Format::Pi)
}

pub fn stream_decoder() -> JsonLinesDecoder<Stream> {
    JsonLinesDecoder::new(Stream::default(), Format::Pi)
}

/// Event types of `pi --mode json` that never appear in a session file.
pub const STREAM_TYPES: [&str; 9] = [
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
];

/// A record's `message` is pi's (a role, no `type`): Anthropic's
/// `message_start` has a message of type "message".
fn has_pi_message(v: &Value) -> bool {
    v.get("message")
        .is_some_and(|m| m.get("role").is_some() && m.get("type").is_none())
}

/// A session file's header or message entry (detection).
pub fn is_session_record(v: &Value) -> bool {
    let t = str_of(v, "type").unwrap_or_default();
    (t == "session" && v.get("cwd").is_some())
        || (t == "message" && has_pi_message(v) && (v.get("parentId").is_some() || v.get("timestamp").is_some()))
}

/// An event of `pi --mode json` (detection).
pub fn is_stream_record(v: &Value) -> bool {
    let t = str_of(v, "type").unwrap_or_default();
    STREAM_TYPES.contains(&t) && (!t.starts_with("message_") || has_pi_message(v))
}

/// Entry types of a session file.
pub const ENTRY_TYPES: [&str; 10] = [
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "session",
];

/// One entry read but not emitted yet: its place in the tree and its events.
struct Held {
    id: String,
    parent: Option<String>,
    items: Vec<Item>,
}

/// Held entries are let go (emitted in file order, with a warning) past
/// this many bytes of lines, so a huge session cannot hold memory unbounded.
const HOLD_LIMIT: usize = 256 << 20;

/// Session files: entries are held until the branch to read is known (the
/// end of the file, or a follower catching up); then emitted as they come.
#[derive(Default)]
pub struct Session {
    held: Vec<Held>,
    held_bytes: usize,
    /// Emitting as entries arrive (live, or past the hold limit).
    eager: bool,
    /// The last entry emitted, to notice a new branch while live.
    last: Option<String>,
    version: Option<u64>,
}

/// Events of a message (`message.role` user, assistant, toolResult, …).
fn message(m: &Value, out: &mut Out<'_>, request_id: Option<&str>) {
    if out.ts.is_none() {
        out.ts = m
            .get("timestamp")
            .and_then(Value::as_i64)
            .and_then(Ts::from_unix_millis);
    }
    match str_of(m, "role").unwrap_or_default() {
        "user" => out.prompt(&text_of(m.get("content"))),
        "assistant" => {
            out.request_by(request_id, str_of(m, "model"));
            for block in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                content_block(block, out);
            }
            stop(m, out);
            out.usage(m.pointer("/usage/output").and_then(Value::as_u64).unwrap_or(0));
        }
        "toolResult" => tool_result(m, out),
        "bashExecution" => out.note(format!(
            "the user ran `{}` (exit code {})",
            str_of(m, "command").unwrap_or_default(),
            m.get("exitCode").map_or("unknown".to_string(), Value::to_string)
        )),
        "compactionSummary" => out.condensation(format!(
            "context compacted: {}",
            str_of(m, "summary").unwrap_or_default()
        )),
        "branchSummary" => out.note(format!("branch summary: {}", str_of(m, "summary").unwrap_or_default())),
        _ => {}
    }
}

/// A finished content block of an assistant message.
fn content_block(block: &Value, out: &mut Out<'_>) {
    match str_of(block, "type").unwrap_or_default() {
        "thinking" if block.get("redacted").and_then(Value::as_bool) != Some(true) => {
            out.reasoning(str_of(block, "thinking").unwrap_or_default())
        }
        "text" => out.content(str_of(block, "text").unwrap_or_default()),
        "toolCall" => out.tool_call(
            str_of(block, "id"),
            str_of(block, "name").unwrap_or("unknown"),
            Args::of(block.get("arguments")),
        ),
        _ => {}
    }
}

/// `stopReason` error or aborted: the API failed, or the user stopped it.
fn stop(m: &Value, out: &mut Out<'_>) {
    let why = str_of(m, "errorMessage").unwrap_or_default();
    match str_of(m, "stopReason") {
        // OpenClaw's tool-loop guard ended the run (a second critical loop).
        Some("error") if why.starts_with("OpenClaw stopped this run") => {
            out.agent_detection("openclaw", "stop", why.to_string())
        }
        Some("error") => out.api_error(why),
        Some("aborted") => out.note(format!(
            "request aborted{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        )),
        _ => {}
    }
}

/// What OpenClaw appends to the result of a call that reached its loop
/// warning's count; OpenClaw's words, not the tool's output (it hashes
/// the outcome before adding them).
const OPENCLAW_WARNING: &str = "[System note: Tool-loop warning";

fn tool_result(m: &Value, out: &mut Out<'_>) {
    let ok = m.get("isError").and_then(Value::as_bool) != Some(true);
    let blocks = m.get("content").and_then(Value::as_array);
    let warning = blocks
        .and_then(|b| b.last())
        .and_then(|b| str_of(b, "text"))
        .filter(|t| t.trim_start().starts_with(OPENCLAW_WARNING));
    let text = match (blocks, warning) {
        (Some(b), Some(_)) => text_of(Some(&Value::Array(b[..b.len() - 1].to_vec()))),
        _ => text_of(m.get("content")),
    };
    out.tool_result(str_of(m, "toolCallId"), ok, Some(Value::String(text)));
    let denied = m.pointer("/details/deniedReason").and_then(Value::as_str);
    if let (Some(reason), Some(Item::Event(e, _))) = (denied, out.last_mut()) {
        e.extra.insert("denied".into(), Value::String(reason.to_string()));
    }
    if let Some(w) = warning {
        out.agent_detection(
            "openclaw",
            "warning",
            format!("OpenClaw warned the model: {}", w.trim()),
        );
    }
    if denied == Some("tool-loop") {
        let i = m.pointer("/details/intervention").unwrap_or(&Value::Null);
        out.agent_detection(
            "openclaw",
            "block",
            format!(
                "OpenClaw blocked this call: {} (detector {}, count {})",
                str_of(i, "toolName").or(str_of(m, "toolName")).unwrap_or("a tool"),
                str_of(i, "detector").unwrap_or("unknown"),
                i.get("count").map_or("unknown".to_string(), Value::to_string)
            ),
        );
    }
}

/// About how much memory an item holds.
fn held_size(item: &Item) -> usize {
    use crate::event::EventKind::*;
    64 + match item {
        Item::Event(e, _) => match &e.kind {
            Reasoning { text } | Content { text } | Note { text } => text.len(),
            Prompt { text } => text.as_ref().map_or(0, String::len),
            ToolCall { args, .. } => args.as_str().map_or(256, str::len),
            ToolResult { output, .. } => output.as_ref().and_then(Value::as_str).map_or(256, str::len),
            _ => 0,
        },
        Item::Problem(p) => p.reason.len(),
        Item::Unknown(u) => u.kind.len(),
    }
}

impl Session {
    /// The events of one entry.
    fn entry(&mut self, v: &Value, out: &mut Out<'_>) {
        out.ts = str_of(v, "timestamp").and_then(Ts::from_rfc3339);
        match str_of(v, "type").unwrap_or_default() {
            "session" => self.version = Some(v.get("version").and_then(Value::as_u64).unwrap_or(1)),
            "message" => {
                let m = v.get("message").unwrap_or(&Value::Null);
                message(m, out, str_of(v, "id"));
            }
            "compaction" => out.condensation(format!(
                "context compacted ({} tokens before): {}",
                v.get("tokensBefore").and_then(Value::as_u64).unwrap_or(0),
                str_of(v, "summary").unwrap_or_default()
            )),
            "branch_summary" => out.note(format!("branch summary: {}", str_of(v, "summary").unwrap_or_default())),
            t if ENTRY_TYPES.contains(&t) => {}
            // A store's row header (OpenClaw's sessions).
            "" if v.get("loopscope").is_some() => {}
            other => out.unknown(other),
        }
    }

    /// Emits the held entries on the branch that ends at the last one.
    fn settle(&mut self, out: &mut Out<'_>) {
        let held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        let Some(last) = held.last() else { return };
        let by_id: HashMap<&str, usize> = held.iter().enumerate().map(|(i, h)| (h.id.as_str(), i)).collect();
        let mut on_branch = vec![false; held.len()];
        let mut at = Some(held.len() - 1);
        let mut steps = 0;
        while let Some(i) = at {
            if on_branch[i] || steps > held.len() {
                break; // a cycle in a broken file: what was walked is the branch
            }
            on_branch[i] = true;
            steps += 1;
            at = held[i].parent.as_deref().and_then(|p| by_id.get(p).copied());
        }
        let left = on_branch.iter().filter(|b| !**b).count();
        self.last = Some(last.id.clone());
        for (h, keep) in held.into_iter().zip(on_branch) {
            if keep {
                h.items.into_iter().for_each(|i| out.item(i));
            }
        }
        if left > 0 {
            out.note(format!(
                "{left} entries on other branches of the session tree were left out (the branch read ends at the last entry)"
            ));
        }
    }
}

impl Handler for Session {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        let id = str_of(&v, "id").filter(|_| str_of(&v, "type") != Some("session"));
        // Version 1 has no tree: every entry is on the one branch.
        if id.is_none() || self.eager {
            if let (Some(_), Some(last)) = (id, self.last.as_deref()) {
                let parent = str_of(&v, "parentId");
                if parent.is_some() && parent != Some(last) {
                    out.note(format!(
                        "the session went back to entry {} and goes on from there (a new branch)",
                        parent.unwrap_or_default()
                    ));
                }
            }
            if let Some(id) = id {
                self.last = Some(id.to_string());
            }
            return self.entry(&v, out);
        }
        let mut items = Vec::new();
        let mut o = Out::new(&mut items, out.line);
        self.entry(&v, &mut o);
        self.held_bytes += items.iter().map(held_size).sum::<usize>();
        self.held.push(Held {
            id: id.unwrap_or_default().to_string(),
            parent: str_of(&v, "parentId").map(str::to_string),
            items,
        });
        if self.held_bytes > HOLD_LIMIT {
            out.warn("the session is too large to hold until its end: entries are read in file order from here, branches included");
            self.settle(out);
            self.eager = true;
        }
    }

    fn finish(&mut self, out: &mut Out<'_>) {
        self.settle(out);
    }

    fn caught_up(&mut self, out: &mut Out<'_>) {
        self.settle(out);
        self.eager = true;
    }
}

/// `pi --mode json`: agent events, with the assistant's deltas.
#[derive(Default)]
pub struct Stream {
    /// Tool calls whose result was emitted from `tool_execution_end`.
    results: std::collections::HashSet<String>,
    /// The current assistant message reported its error already.
    said_error: bool,
    last_ts: Option<Ts>,
}

impl Handler for Stream {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        let m = v.get("message").unwrap_or(&Value::Null);
        // Events without a message (tool execution, retries) happen after the last one's time.
        if let Some(t) = m
            .get("timestamp")
            .and_then(Value::as_i64)
            .and_then(Ts::from_unix_millis)
        {
            self.last_ts = Some(t);
        }
        out.ts = self.last_ts.clone();
        let role = str_of(m, "role").unwrap_or_default();
        match str_of(&v, "type").unwrap_or_default() {
            "message_start" if role == "assistant" => {
                self.said_error = false;
                out.request_by(None, str_of(m, "model"));
            }
            "message_start" if role == "user" => out.prompt(&text_of(m.get("content"))),
            "message_update" => {
                let e = v.get("assistantMessageEvent").unwrap_or(&Value::Null);
                match str_of(e, "type").unwrap_or_default() {
                    "thinking_delta" => out.reasoning(str_of(e, "delta").unwrap_or_default()),
                    "text_delta" => out.content(str_of(e, "delta").unwrap_or_default()),
                    "toolcall_end" => content_block(e.get("toolCall").unwrap_or(&Value::Null), out),
                    "error" => {
                        self.said_error = true;
                        let msg = e.get("error").map_or(String::new(), |m| {
                            str_of(m, "errorMessage").unwrap_or_default().to_string()
                        });
                        out.api_error(&msg);
                    }
                    _ => {}
                }
            }
            "message_end" if role == "assistant" => {
                if !self.said_error {
                    stop(m, out);
                }
                out.usage(m.pointer("/usage/output").and_then(Value::as_u64).unwrap_or(0));
            }
            "message_end"
                if role == "toolResult" && !str_of(m, "toolCallId").is_some_and(|id| self.results.contains(id)) =>
            {
                tool_result(m, out)
            }
            "tool_execution_end" => {
                let id = str_of(&v, "toolCallId").unwrap_or_default();
                self.results.insert(id.to_string());
                let ok = v.get("isError").and_then(Value::as_bool) != Some(true);
                let text = text_of(v.pointer("/result/content"));
                out.tool_result(Some(id), ok, Some(Value::String(text)));
            }
            "auto_retry_start" => out.api_error(&format!(
                "{} (retry {} of {})",
                str_of(&v, "errorMessage").unwrap_or_default(),
                v.get("attempt").and_then(Value::as_u64).unwrap_or(0),
                v.get("maxAttempts").and_then(Value::as_u64).unwrap_or(0)
            )),
            "auto_compaction_end" => out.condensation("context compacted"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{Decoded, Decoder};

    fn types(d: &Decoded) -> Vec<String> {
        d.events.iter().map(|e| e.type_name().to_string()).collect()
    }

    const TREE: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"go"}]}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"abandoned"}],"stopReason":"stop"}}
{"type":"message","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:03Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","usage":{"output":7}}}
{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:04Z","message":{"role":"toolResult","toolCallId":"t1","content":[{"type":"text","text":"no"}],"isError":true}}
"#;

    #[test]
    fn the_branch_ending_at_the_last_entry_is_read() {
        let d = Decoded::from_bytes(TREE.as_bytes(), &mut session_decoder());
        assert_eq!(types(&d), ["prompt", "request", "tool_call", "tool_result", "note"]);
        assert!(!d.events.iter().any(|e| e.to_json().to_string().contains("abandoned")));
        assert_eq!(d.events[3].to_json()["ok"], false);
        assert_eq!(d.events[2].to_json()["usage"]["output_tokens"], 7);
    }

    #[test]
    fn a_follower_gets_entries_as_they_come_once_caught_up() {
        let mut dec = session_decoder();
        let mut items = Vec::new();
        let (head, tail) = TREE.split_at(TREE.find("{\"type\":\"message\",\"id\":\"c\"").unwrap());
        dec.feed(head.as_bytes(), &mut items);
        assert!(items.is_empty(), "held until the branch is known");
        dec.caught_up(&mut items);
        assert_eq!(items.len(), 3, "prompt, request, content");
        items.clear();
        dec.feed(tail.as_bytes(), &mut items);
        let d: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                Item::Event(e, _) => Some(e.type_name().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(
            d,
            ["note", "request", "tool_call", "tool_result"],
            "the new branch is said"
        );
    }
}
