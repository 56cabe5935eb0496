//! Claude Code session transcripts (`~/.claude/projects/<proj>/<session>.jsonl`,
//! sub-agents in `<session>/subagents/agent-<id>.jsonl`), the `stream-json`
//! output of `claude -p`, and qwen-code's look-alike records (Gemini parts).
//! Transcripts hold whole blocks: one thinking block, one text block, one
//! tool call per line.

use serde_json::Value;

use super::anthropic::{self, Anthropic};
use super::gemini::Gemini;
use super::sse::{Handler, JsonLinesDecoder};
use super::{str_of, Format, Out};
use crate::event::Ts;

pub fn decoder() -> JsonLinesDecoder<ClaudeCode> {
    JsonLinesDecoder::new(ClaudeCode::default(), Format::ClaudeCode)
}

/// qwen-code's session records: the same shape, Gemini parts inside.
pub fn qwen_decoder() -> JsonLinesDecoder<ClaudeCode> {
    JsonLinesDecoder::new(ClaudeCode::default(), Format::QwenCode)
}

#[derive(Default)]
pub struct ClaudeCode {
    /// The API request the last assistant block belonged to.
    request: Option<String>,
    /// Whether this file is a sub-agent's own transcript (its first message is a sidechain).
    subagent_file: Option<bool>,
    sidechain_noted: bool,
    /// `stream-json` with partial messages: the stream events carry the text.
    stream: Anthropic,
    streaming: bool,
    parts: Gemini,
    /// The last message id and the output tokens counted for it.
    usage: Option<(String, u64)>,
}

/// What Claude Code answered a parallel call it cancelled when a call
/// beside it failed.
const SIBLING_ERRORED: &str = "Sibling tool call errored";

/// A tool result's text (a string, or its text blocks).
fn result_text(r: &Value) -> String {
    match r.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| str_of(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Records of Claude Code's own bookkeeping, and qwen-code's: known, and
/// nothing of the stream.
const BOOKKEEPING: [&str; 11] = [
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "mode",
    "permission-mode",
    "last-prompt",
    "attachment",
    "custom-title",
    "tag",
    "agent-name",
    "pr-link",
];

/// Text of a user message that is the person typing, not a tool result.
fn user_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| str_of(b, "type") == Some("text"))
                .filter_map(|b| str_of(b, "text"))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

impl ClaudeCode {
    fn assistant(&mut self, v: &Value, m: &Value, out: &mut Out<'_>) {
        if v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
            let text = user_text(m.get("content").unwrap_or(&Value::Null)).unwrap_or_default();
            out.note(format!("API error: {text}"));
            return;
        }
        let request = str_of(v, "requestId").or(str_of(m, "id")).map(str::to_string);
        if request.is_none() || request != self.request {
            out.request(request.as_deref());
            self.request = request;
        }
        for block in m.get("content").and_then(Value::as_array).into_iter().flatten() {
            anthropic::finished_block(block, out);
        }
        for part in m.get("parts").and_then(Value::as_array).into_iter().flatten() {
            self.parts.part(part, out);
        }
        // One API message is split over several lines, each repeating the
        // message's usage so far: count what each line adds.
        let tokens = m
            .get("usage")
            .and_then(|u| u.get("output_tokens").or(u.get("candidatesTokenCount")))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let id = str_of(m, "id").map(str::to_string);
        let before = match (&self.usage, &id) {
            (Some((seen, n)), Some(id)) if seen == id => *n,
            _ => 0,
        };
        out.usage(tokens.saturating_sub(before));
        if let Some(id) = id {
            self.usage = Some((id, tokens.max(before)));
        }
    }

    fn user(&mut self, v: &Value, m: &Value, out: &mut Out<'_>) {
        let content = m.get("content").unwrap_or(&Value::Null);
        let results: Vec<&Value> = content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| str_of(b, "type") == Some("tool_result"))
            .collect();
        for r in &results {
            let id = str_of(r, "tool_use_id");
            let error = r.get("is_error").and_then(Value::as_bool) == Some(true);
            // Claude Code ran parallel calls until one failed, and answered
            // the rest without running them (≤ 2.1.x).
            if error && result_text(r).contains(SIBLING_ERRORED) {
                out.cancelled(id, "not run: a tool call beside it failed, so Claude Code cancelled it");
                continue;
            }
            out.tool_result(id, !error, r.get("content").cloned());
        }
        // qwen-code: Gemini parts.
        if let Some(parts) = m.get("parts").and_then(Value::as_array) {
            let text: Vec<&str> = parts.iter().filter_map(|p| str_of(p, "text")).collect();
            for p in parts.iter().filter(|p| p.get("functionResponse").is_some()) {
                self.parts.part(p, out);
            }
            if !text.is_empty() && str_of(v, "type") == Some("user") {
                out.prompt(&text.join("\n"));
                self.request = None;
            }
            return;
        }
        if !results.is_empty() {
            return;
        }
        let Some(text) = user_text(content) else { return };
        let meta = v.get("isMeta").and_then(Value::as_bool) == Some(true);
        if v.get("isCompactSummary").and_then(Value::as_bool) == Some(true) {
            out.note("context compacted (summary of the conversation so far)");
        } else if meta
            || text.starts_with("<command-")
            || text.starts_with("<local-command")
            // Claude Code's own word that a background task ended: not the
            // person's, and no new task (detectors are not reset by it).
            || text.starts_with("<task-notification>")
        {
            out.note(text.trim().to_string());
        } else if text.starts_with("[Request interrupted") {
            out.note(text);
        } else {
            out.prompt(&text);
            self.request = None;
        }
    }
}

impl Handler for ClaudeCode {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        out.ts = str_of(&v, "timestamp").and_then(Ts::from_rfc3339);
        let kind = str_of(&v, "type").unwrap_or_default();
        match kind {
            "summary" => out.note(format!("summary: {}", str_of(&v, "summary").unwrap_or_default())),
            "user" | "assistant" | "tool_result" => {
                let side = v.get("isSidechain").and_then(Value::as_bool) == Some(true);
                let own = *self.subagent_file.get_or_insert(side);
                if side && !own {
                    if !self.sidechain_noted {
                        self.sidechain_noted = true;
                        out.note("sub-agent (sidechain) messages are a stream of their own: skipped here; open the sub-agent file");
                    }
                    return;
                }
                let m = v.get("message").cloned().unwrap_or(Value::Null);
                match kind {
                    "assistant" if self.streaming => {}
                    "assistant" => self.assistant(&v, &m, out),
                    _ => self.user(&v, &m, out),
                }
            }
            "system" => match str_of(&v, "subtype") {
                Some("compact_boundary") => out.note("context compacted"),
                Some("api_error") => out.note(format!("API error: {}", str_of(&v, "content").unwrap_or_default())),
                _ => {}
            },
            "stream_event" => {
                let Some(e) = v.get("event") else { return };
                // Partial messages (`--include-partial-messages`) carry the
                // text; then the whole assistant lines repeat it. Other
                // stream events (qwen-code's `goal_state`) do not.
                if str_of(e, "type").is_some_and(|t| t.starts_with("message_") || t.starts_with("content_block_")) {
                    self.streaming = true;
                    self.stream.payload(None, e.clone(), out);
                }
            }
            "result" if v.get("is_error").and_then(Value::as_bool) == Some(true) => {
                let why = str_of(&v, "result")
                    .or_else(|| v.get("error").and_then(|e| str_of(e, "message")))
                    .or(str_of(&v, "subtype"))
                    .unwrap_or_default();
                out.note(format!("run ended with an error: {why}"));
            }
            "result" => {}
            t if BOOKKEEPING.contains(&t) => {}
            other => out.unknown(other),
        }
    }
}
