//! gemini-cli chat recordings (`~/.gemini/tmp/<project>/chats/`): the
//! append-only JSONL (≥ 0.39, with `$set` and `$rewindTo` records, and
//! messages re-appended when they change), the legacy single JSON file, and
//! `Content[]` files (checkpoints, `/bug` exports). Messages hold whole
//! blocks; a re-appended message only adds what it did not have before.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::gemini::Gemini;
use super::sse::{Handler, JsonLinesDecoder};
use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;

pub fn jsonl_decoder() -> JsonLinesDecoder<Lines> {
    JsonLinesDecoder::new(Lines::default(), Format::GeminiCli)
}

pub fn legacy_decoder() -> WholeDecoder<Legacy> {
    WholeDecoder::new(Legacy::default(), parse_json, Format::GeminiCli)
}

pub fn contents_decoder() -> WholeDecoder<Contents> {
    WholeDecoder::new(Contents::default(), parse_json, Format::GeminiCli)
}

/// What has been emitted of one message.
#[derive(Debug, Default)]
struct Seen {
    content: usize,
    thoughts: usize,
    calls: HashSet<String>,
    results: HashSet<String>,
    /// Output and thought tokens counted so far.
    tokens: u64,
}

/// Message records, by id, as far as they were emitted.
#[derive(Debug, Default)]
pub struct Messages {
    seen: HashMap<String, Seen>,
    /// Calls whose result was emitted, by call id: a `functionResponse`
    /// user record repeats what the call's own `result` said.
    answered: HashSet<String>,
}

/// What gemini-cli sends the model when its own loop detection fires
/// (`_recoverFromLoop`), as a user turn of its own.
const LOOP_FEEDBACK: &str = "System: Potential loop detected.";

/// Whether a user message's parts are all function responses: the results
/// gemini-cli sends back after its tools ran, not the person typing.
fn only_function_responses(content: Option<&Value>) -> bool {
    content
        .and_then(Value::as_array)
        .is_some_and(|parts| !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some()))
}

fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| str_of(p, "text"))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

impl Messages {
    /// `$set.messages`: the history now holds only `kept`; messages
    /// recorded before and not in it were dropped by gemini-cli.
    fn rolled_back(&mut self, kept: &[Value], out: &mut Out<'_>) {
        let ids: HashSet<&str> = kept.iter().filter_map(|m| str_of(m, "id")).collect();
        let dropped = self.seen.keys().filter(|id| !ids.contains(id.as_str())).count();
        if dropped > 0 {
            out.note(format!(
                "gemini-cli rolled its history back: {dropped} message{} recorded above {} no longer in it",
                if dropped == 1 { "" } else { "s" },
                if dropped == 1 { "is" } else { "are" }
            ));
            self.seen.retain(|id, _| ids.contains(id.as_str()));
        }
    }

    /// One MessageRecord (new, or re-appended with more in it).
    fn record(&mut self, m: &Value, out: &mut Out<'_>) {
        out.ts = str_of(m, "timestamp").and_then(Ts::from_rfc3339);
        let id = str_of(m, "id").unwrap_or_default().to_string();
        let fresh = !self.seen.contains_key(&id);
        let seen = self.seen.entry(id.clone()).or_default();
        let text = text_of(m.get("content"));
        match str_of(m, "type").unwrap_or_default() {
            // Results for the calls just made (0.5x+): each is emitted from
            // its call's own `result`; one that was not is emitted here.
            "user" if fresh && only_function_responses(m.get("content")) => {
                for part in m.get("content").and_then(Value::as_array).into_iter().flatten() {
                    let f = &part["functionResponse"];
                    let cid = str_of(f, "id").unwrap_or_default().to_string();
                    if self.answered.insert(cid.clone()) {
                        let response = f.get("response");
                        let ok = response.is_none_or(|r| r.get("error").is_none() && !shell_failed(r));
                        out.tool_result(Some(&cid), ok, response.cloned());
                    }
                }
            }
            "user" if fresh && text.starts_with(LOOP_FEEDBACK) => {
                out.agent_detection(
                    "gemini-cli",
                    "recover",
                    format!("gemini-cli's loop detection fired and told the model: {text}"),
                );
            }
            // The context gemini-cli adds at the start of a session.
            "user" if fresh && text.starts_with("<session_context>") => {}
            "user" if fresh => out.prompt(&text),
            "gemini" => {
                if fresh {
                    out.request(Some(&id));
                }
                let thoughts = m
                    .get("thoughts")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                // A thought with a subject is a paragraph of its own; 0.6x
                // records one thought per streamed chunk, without a subject
                // and trimmed: those are the stream's pieces, joined as they
                // came (the spaces at their edges are not in the file).
                for t in thoughts.iter().skip(seen.thoughts) {
                    let subject = str_of(t, "subject").filter(|s| !s.is_empty());
                    let description = str_of(t, "description").unwrap_or_default();
                    match subject {
                        Some(s) => out.reasoning(&format!("**{s}** {description}\n\n")),
                        None => out.reasoning(description),
                    }
                }
                seen.thoughts = seen.thoughts.max(thoughts.len());
                let chars = text.chars().count();
                if chars > seen.content {
                    out.content(&text.chars().skip(seen.content).collect::<String>());
                    seen.content = chars;
                }
                for call in m.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
                    let cid = str_of(call, "id").unwrap_or_default().to_string();
                    if seen.calls.insert(cid.clone()) {
                        out.tool_call(
                            Some(&cid),
                            str_of(call, "name").unwrap_or("unknown"),
                            Args::Json(call.get("args").cloned().unwrap_or(Value::Null)),
                        );
                    }
                    let status = str_of(call, "status").unwrap_or_default();
                    let done = matches!(status, "success" | "error" | "cancelled")
                        || call.get("result").is_some_and(|r| !r.is_null());
                    if done && seen.results.insert(cid.clone()) && self.answered.insert(cid.clone()) {
                        let output = call
                            .get("result")
                            .and_then(|r| r.get(0))
                            .and_then(|r| r.get("functionResponse"))
                            .and_then(|f| f.get("response"))
                            .or(call.get("resultDisplay"))
                            .cloned();
                        if status == "cancelled" {
                            out.cancelled(
                                Some(&cid),
                                &format!("{} was cancelled", str_of(call, "name").unwrap_or("a tool")),
                            );
                        } else {
                            let ok = (status == "success" || status.is_empty())
                                && !output.as_ref().is_some_and(shell_failed);
                            out.tool_result(Some(&cid), ok, output);
                        }
                    }
                }
                // `tokens` is the message's whole count; a re-appended
                // record adds only what is new.
                let tokens = m.get("tokens").map_or(0, |t| {
                    ["output", "thoughts"]
                        .iter()
                        .filter_map(|k| t.get(*k).and_then(Value::as_u64))
                        .sum::<u64>()
                });
                out.usage(tokens.saturating_sub(seen.tokens));
                seen.tokens = seen.tokens.max(tokens);
            }
            "error" if fresh => out.note(format!("error: {text}")),
            "info" | "warning" if fresh => out.note(text),
            "user" | "error" | "info" | "warning" => {}
            other => out.unknown(other),
        }
    }
}

/// The JSONL recording.
#[derive(Debug, Default)]
pub struct Lines {
    messages: Messages,
}

impl Handler for Lines {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        if let Some(id) = v.get("$rewindTo") {
            let id = id.as_str().unwrap_or_default();
            out.note(format!(
                "rewound to message {id}: what followed it was discarded in the session"
            ));
        } else if let Some(set) = v.get("$set") {
            // Metadata updates; `messages` replaces the whole history
            // (written at the start, and after a rollback: a stream cut by
            // gemini-cli's loop detection, an API error, an abort).
            if let Some(kept) = set.get("messages").and_then(Value::as_array) {
                self.messages.rolled_back(kept, out);
            }
        } else if v.get("sessionId").is_some() && v.get("type").is_none() {
            // The header line.
        } else {
            self.messages.record(&v, out);
        }
    }
}

/// The legacy single-JSON session file.
#[derive(Debug, Default)]
pub struct Legacy {
    messages: Messages,
}

impl DocHandler for Legacy {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        for m in doc.get("messages").and_then(Value::as_array).into_iter().flatten() {
            self.messages.record(m, out);
        }
    }
}

/// `Content[]`: `{role, parts}` turns (checkpoints, bug-report exports).
#[derive(Default)]
pub struct Contents {
    done: usize,
    parts: Gemini,
}

impl DocHandler for Contents {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let turns = doc.get("history").unwrap_or(&doc);
        for turn in turns.as_array().into_iter().flatten().skip(self.done) {
            self.done += 1;
            let parts = turn
                .get("parts")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            if str_of(turn, "role") == Some("user") {
                let text: Vec<&str> = parts.iter().filter_map(|p| str_of(p, "text")).collect();
                if !text.is_empty() {
                    out.prompt(&text.join("\n"));
                }
                for p in parts.iter().filter(|p| p.get("functionResponse").is_some()) {
                    self.parts.part(p, out);
                }
            } else {
                out.request(None);
                for p in parts {
                    self.parts.part(p, out);
                }
            }
        }
    }
}

/// Whether a shell command's response says it failed. gemini-cli marks the
/// call a success whenever the command ran, and says a non-zero exit (or a
/// signal) only in the text it gives the model, after the output:
/// `Output: …`, then `Error: …`, `Exit Code: N`, `Signal: …`,
/// `Background PIDs: …`, `Process Group PGID: …`, each on a line of its
/// own (inside `<untrusted_context>` since 0.6x). Only those closing lines
/// are read: the command's own output may say anything.
fn shell_failed(response: &Value) -> bool {
    let Some(text) = response.get("output").and_then(Value::as_str) else {
        return false;
    };
    for line in text.lines().rev().map(str::trim_end) {
        if let Some(code) = line.strip_prefix("Exit Code: ") {
            return code.trim().parse::<i64>().is_ok_and(|c| c != 0);
        }
        // Before 0.6x every line was there, `(none)` (or a signal `0`) when
        // it did not apply.
        if let Some(signal) = line.strip_prefix("Signal: ") {
            if !matches!(signal.trim(), "(none)" | "0" | "null") {
                return true;
            }
            continue;
        }
        let trailer = line == "</untrusted_context>"
            || line.starts_with("Process Group PGID: ")
            || line.starts_with("Background PIDs: ");
        if !trailer {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_command_fails_by_its_closing_lines_only() {
        let said = |t: &str| json!({ "output": t });
        assert!(shell_failed(&said(
            "<untrusted_context>\nOutput: FAILED tests/test_x.py\nExit Code: 1\nProcess Group PGID: 4242\n</untrusted_context>"
        )));
        assert!(shell_failed(&said("Output: (empty)\nSignal: SIGKILL")));
        // 0.1x: every line, `(none)` where it does not apply.
        let old = "Command: make\nDirectory: (root)\nStdout: x\nStderr: (empty)\nError: (none)\nExit Code: 2\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 77";
        assert!(shell_failed(&said(old)));
        assert!(!shell_failed(&said(&old.replace("Exit Code: 2", "Exit Code: 0"))));
        assert!(!shell_failed(&said(
            "<untrusted_context>\nOutput: all 12 passed\nProcess Group PGID: 4242\n</untrusted_context>"
        )));
        // The command printed it; gemini-cli did not say it.
        assert!(!shell_failed(&said(
            "Output: Exit Code: 1 means failure\nthat is all\nProcess Group PGID: 1"
        )));
        assert!(!shell_failed(&json!({ "output": 3 })));
    }
}
