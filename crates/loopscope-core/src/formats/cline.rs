//! Cline / Roo Code / Kilo Code task folders
//! (`globalStorage/<ext>/tasks/<taskId>/`): `ui_messages.json` (what the
//! panel showed, partial messages updated in place) or, without it,
//! `api_conversation_history.json` (the Anthropic-style messages). Both are
//! rewritten whole on every save: each version emits only what is new.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::anthropic;
use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;

/// The file of what Cline's panel showed.
pub(crate) const UI_MESSAGES: &str = "ui_messages.json";
/// The file of the messages sent to the model.
pub(crate) const API_HISTORY: &str = "api_conversation_history.json";

/// The file to read in a task folder.
pub fn task_file(path: &Path) -> Option<PathBuf> {
    if !path.is_dir() {
        return None;
    }
    [UI_MESSAGES, API_HISTORY]
        .iter()
        .map(|f| path.join(f))
        .find(|p| p.is_file())
}

/// An importer of `ui_messages.json`.
pub(crate) fn ui_decoder() -> WholeDecoder<UiMessages> {
    WholeDecoder::new(UiMessages::default(), parse_json, Format::Cline)
}

/// An importer of `api_conversation_history.json`.
pub(crate) fn api_decoder() -> WholeDecoder<ApiHistory> {
    WholeDecoder::new(ApiHistory::default(), parse_json, Format::Cline)
}

/// `ui_messages.json`: `ClineMessage`s keyed by `ts`. A call is shown
/// once (a tool, a command, an MCP tool); its result is what Cline sent
/// back, in the text of the next request (`api_req_started`'s `request`),
/// as in the API history: the command's output chunks and an MCP server's
/// response on the panel are what the person watched, not the result.
#[derive(Debug, Default)]
pub(crate) struct UiMessages {
    /// Chars of text already emitted, by message `ts`; -1 for one-shot messages.
    emitted: HashMap<i64, usize>,
    first: bool,
    /// The calls shown since the last request, in order (their ids).
    open: Vec<String>,
}

/// Tools whose answer the panel shows as text (a question, the plan, the
/// completion), never as a call: their results in a request answer no
/// call of the panel's.
const NOT_CALLS_IN_THE_PANEL: [&str; 6] = [
    "attempt_completion",
    "ask_followup_question",
    "plan_mode_respond",
    "load_mcp_documentation",
    "new_task",
    "condense",
];

/// What Cline adds after the results in a request's text, each after a
/// blank line: where a result's body ends (the environment holds the time
/// of day, which would make every result differ).
const AFTER_RESULTS: [&str; 5] = [
    "\n\n<environment_details>",
    "\n\n# Todo List",
    "\n\n# task_progress",
    "\n\n# TODO LIST",
    "\n\n# TASK",
];

/// The `[NAME…] Result: BODY` blocks of a request's text, each starting a
/// line, with its body up to the next block or Cline's own context.
fn request_results(request: &str) -> Vec<(&str, &str)> {
    let mut starts = Vec::new();
    let mut at = 0;
    for line in request.split_inclusive('\n') {
        if line.starts_with('[') {
            if let UserBlock::Result { .. } = user_block(line) {
                starts.push(at);
            }
        }
        at += line.len();
    }
    let mut out = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(request.len());
        let block = &request[start..end];
        let block = AFTER_RESULTS
            .iter()
            .filter_map(|m| block.find(m))
            .min()
            .map_or(block, |cut| &block[..cut]);
        if let UserBlock::Result { name, body } = user_block(block) {
            out.push((name, body.trim_end()));
        }
    }
    out
}

/// Cline marks a command that asks for approval with this after its text.
const APPROVAL_MARK: &str = "REQ_APP";

impl UiMessages {
    /// Emits the part of a growing text message not emitted yet.
    fn grow(&mut self, ts: i64, text: &str, out: &mut Out<'_>, emit: fn(&mut Out<'_>, &str)) {
        let done = self.emitted.entry(ts).or_insert(0);
        let chars = text.chars().count();
        if chars > *done {
            let new: String = text.chars().skip(*done).collect();
            emit(out, &new);
            *done = chars;
        }
    }

    /// Emits a one-shot message (a tool call, a request) once, when final.
    fn once(&mut self, ts: i64, partial: bool) -> bool {
        !partial && self.emitted.insert(ts, usize::MAX).is_none()
    }

    fn message(&mut self, m: &Value, out: &mut Out<'_>) {
        let ts = m.get("ts").and_then(Value::as_i64).unwrap_or_default();
        out.ts = Ts::from_unix_millis(ts);
        let partial = m.get("partial").and_then(Value::as_bool) == Some(true);
        let text = str_of(m, "text").unwrap_or_default();
        let json_text = || serde_json::from_str::<Value>(text).unwrap_or(Value::String(text.to_string()));
        let id = ts.to_string();
        let kind = (
            str_of(m, "type").unwrap_or_default(),
            str_of(m, "say").or(str_of(m, "ask")).unwrap_or_default(),
        );
        if !self.first {
            self.first = true;
            // The first message is the task the user gave.
            if kind.1 == "text" || kind.1 == "task" {
                self.emitted.insert(ts, usize::MAX);
                out.prompt(text);
                return;
            }
        }
        match kind {
            (_, "user_feedback") if self.once(ts, partial) => out.prompt(text),
            (_, "reasoning") => self.grow(ts, str_of(m, "reasoning").unwrap_or(text), out, |o, t| o.reasoning(t)),
            ("say", "text") | (_, "completion_result") => self.grow(ts, text, out, |o, t| o.content(t)),
            ("ask", "followup") if self.once(ts, partial) => {
                let q = json_text();
                out.content(str_of(&q, "question").unwrap_or(text));
            }
            (_, "api_req_started") if self.once(ts, false) => {
                let info = json_text();
                for (name, body) in request_results(str_of(&info, "request").unwrap_or_default()) {
                    if NOT_CALLS_IN_THE_PANEL.contains(&name) {
                        continue;
                    }
                    let call = (!self.open.is_empty()).then(|| self.open.remove(0));
                    out.tool_result(
                        call.as_deref(),
                        !result_failed(body),
                        Some(Value::String(body.to_string())),
                    );
                }
                self.open.clear();
                out.request(Some(&id));
                if let Some(why) = str_of(&info, "cancelReason").or(str_of(&info, "streamingFailedMessage")) {
                    out.note(format!("request ended early: {why}"));
                }
            }
            (_, "tool") if self.once(ts, partial) => {
                let args = json_text();
                let name = str_of(&args, "tool").unwrap_or("tool").to_string();
                out.tool_call(Some(&id), &name, Args::Json(args));
                self.open.push(id);
            }
            (_, "command") if self.once(ts, partial) => {
                let command = text.strip_suffix(APPROVAL_MARK).unwrap_or(text);
                out.tool_call(Some(&id), "execute_command", Args::Json(json!({ "command": command })));
                self.open.push(id);
            }
            (_, "use_mcp_server") if self.once(ts, partial) => {
                out.tool_call(Some(&id), "use_mcp_server", Args::Json(json_text()));
                self.open.push(id);
            }
            (_, "diff_error") if self.once(ts, partial) => out.note(format!("diff error: {text}")),
            (_, "error") if self.once(ts, partial) => out.note(format!("error: {text}")),
            (_, "api_req_failed") if self.once(ts, partial) => out.note(format!("request failed: {text}")),
            (_, "mistake_limit_reached") if self.once(ts, partial) => {
                out.note(format!("mistake limit reached: {text}"))
            }
            _ => {}
        }
    }
}

impl DocHandler for UiMessages {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        for (i, m) in doc.as_array().into_iter().flatten().enumerate() {
            out.line = i as u64 + 1;
            self.message(m, out);
        }
    }
}

/// `api_conversation_history.json`: `{role, content}` messages, appended.
/// Cline answers a tool call with a user text block
/// `[NAME for 'WHAT'] Result: …` (one per call, in order; newer versions
/// send `tool_result` blocks), and adds its own blocks beside it: the
/// environment, to-do reminders, a resumed task. Only the user's words are
/// prompts; each result says itself whether the call failed.
#[derive(Debug, Default)]
pub(crate) struct ApiHistory {
    done: usize,
    /// Calls of the last assistant message without a result yet: (id, name).
    open: Vec<(Option<String>, String)>,
}

/// What one user text block of Cline's is.
#[derive(Debug, PartialEq, Eq)]
enum UserBlock<'a> {
    /// `[NAME…] Result: BODY`.
    Result { name: &'a str, body: &'a str },
    /// What the person typed (the task, feedback, a new message).
    Said(String),
    /// Cline's own context (environment details, reminders): not an event.
    Context,
    /// Anything else Cline tells the model (a resumed task, a correction).
    Note(&'a str),
}

/// The text between `<tag>` and `</tag>`, if the text has it.
fn tagged<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..]
        .find(&format!("</{tag}>"))
        .map_or(text.len(), |e| start + e);
    Some(text[start..end].trim())
}

fn user_block(text: &str) -> UserBlock<'_> {
    let t = text.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(end) = rest.find("] Result:") {
            let head = &rest[..end];
            let name = head.split(" for ").next().unwrap_or(head);
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return UserBlock::Result {
                    name,
                    body: rest[end + "] Result:".len()..].trim_start(),
                };
            }
        }
    }
    if t.starts_with("<environment_details>")
        || t.starts_with("# task_progress")
        || t.starts_with("# TODO LIST")
        || t.starts_with("Files attached by the user")
    {
        return UserBlock::Context;
    }
    for tag in ["task", "feedback", "user_message", "answer"] {
        if let Some(said) = tagged(t, tag) {
            return UserBlock::Said(said.to_string());
        }
    }
    UserBlock::Note(t)
}

/// Whether a result's body says the call failed: Cline's own wording for
/// an error, a denial, a command's non-zero exit. A saved file whose new
/// diagnostics are listed ("New problems detected after saving the file")
/// was saved: that is success.
fn result_failed(body: &str) -> bool {
    const FAILED: [&str; 8] = [
        "The tool execution failed",
        "Command failed with exit code",
        "The user denied this operation",
        "[ERROR]",
        "Missing value for required parameter",
        "Error executing",
        "Tool execution failed",
        // An MCP tool's error: Cline puts `Error:` before what the server said.
        "Error:",
    ];
    let first = body.trim_start();
    FAILED.iter().any(|f| first.starts_with(f))
}

impl ApiHistory {
    /// A result for the open call named `name` (the first open one otherwise).
    fn result(&mut self, name: &str, ok: bool, output: Value, out: &mut Out<'_>) {
        let at = self
            .open
            .iter()
            .position(|(_, n)| n == name)
            .or((!self.open.is_empty()).then_some(0));
        let id = at.and_then(|i| self.open.remove(i).0);
        out.tool_result(id.as_deref(), ok, Some(output));
    }

    fn user(&mut self, blocks: &[Value], out: &mut Out<'_>) {
        for b in blocks {
            match str_of(b, "type") {
                Some("tool_result") => {
                    let ok = b.get("is_error").and_then(Value::as_bool) != Some(true);
                    let id = str_of(b, "tool_use_id");
                    self.open.retain(|(open, _)| open.as_deref() != id);
                    out.tool_result(id, ok, b.get("content").cloned());
                }
                Some("text") => match user_block(str_of(b, "text").unwrap_or_default()) {
                    UserBlock::Result { name, body } => {
                        let ok = !result_failed(body);
                        self.result(name, ok, Value::String(body.to_string()), out);
                    }
                    UserBlock::Said(text) => out.prompt(&text),
                    UserBlock::Context => {}
                    UserBlock::Note(text) if self.done == 1 => out.prompt(text),
                    UserBlock::Note(text) => out.note(text.to_string()),
                },
                Some("image") => out.note("an image"),
                _ => {}
            }
        }
    }
}

impl DocHandler for ApiHistory {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        for m in doc.as_array().into_iter().flatten().skip(self.done) {
            self.done += 1;
            out.line = self.done as u64;
            out.ts = m.get("ts").and_then(Value::as_i64).and_then(Ts::from_unix_millis);
            let blocks: Vec<Value> = match m.get("content") {
                Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
                Some(Value::Array(b)) => b.clone(),
                _ => Vec::new(),
            };
            match str_of(m, "role") {
                Some("assistant") => {
                    out.request(None);
                    out.reasoning(str_of(m, "reasoning_content").unwrap_or_default());
                    self.open.clear();
                    for b in &blocks {
                        if str_of(b, "type") == Some("tool_use") {
                            self.open.push((
                                str_of(b, "id").map(str::to_string),
                                str_of(b, "name").unwrap_or("unknown").to_string(),
                            ));
                        }
                        if !anthropic::finished_block(b, out) && str_of(b, "type") == Some("reasoning") {
                            out.reasoning(str_of(b, "summary").or(str_of(b, "text")).unwrap_or_default());
                        }
                    }
                }
                Some("user") => self.user(&blocks, out),
                Some(other) => out.unknown(&format!("role {other}")),
                None => out.unknown("(no role)"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_blocks_are_told_apart() {
        assert_eq!(
            user_block("[execute_command for 'grep \"a]\" x'] Result:\nCommand failed with exit code 1.\nOutput:"),
            UserBlock::Result {
                name: "execute_command",
                body: "Command failed with exit code 1.\nOutput:"
            }
        );
        assert_eq!(
            user_block("[attempt_completion] Result: Done"),
            UserBlock::Result {
                name: "attempt_completion",
                body: "Done"
            }
        );
        assert_eq!(user_block("<task>\nFix it\n</task>"), UserBlock::Said("Fix it".into()));
        assert_eq!(
            user_block("The user has provided feedback on the results.\n<feedback>\nmore tests\n</feedback>"),
            UserBlock::Said("more tests".into())
        );
        assert_eq!(
            user_block("<environment_details>\n# Files\n</environment_details>"),
            UserBlock::Context
        );
        assert_eq!(
            user_block("[TASK RESUMPTION] This task was interrupted"),
            UserBlock::Note("[TASK RESUMPTION] This task was interrupted")
        );
    }

    #[test]
    fn a_request_holds_the_results_up_to_clines_own_context() {
        let request = "[execute_command for 'ls'] Result:\n\nCommand executed.\nOutput:\na\n\nb\n\n\n\n# Todo List (Optional)\nx\n\n<environment_details>\n# Current Time\n9:16\n</environment_details>";
        assert_eq!(
            request_results(request),
            vec![("execute_command", "Command executed.\nOutput:\na\n\nb")]
        );
        let two = "[read_file for 'a'] Result:\n\n1\n[use_mcp_server for 'x'] Result:\n\nError:\nError: not connected";
        let got = request_results(two);
        assert_eq!(
            got,
            vec![("read_file", "1"), ("use_mcp_server", "Error:\nError: not connected")]
        );
        assert!(result_failed(got[1].1));
        assert!(request_results("<task>\n[x] is no result\n</task>").is_empty());
    }

    #[test]
    fn a_saved_file_with_problems_listed_is_no_failure() {
        assert!(!result_failed(
            "The content was successfully saved to a.ts.\n\nNew problems detected after saving the file:\na.ts\n- [ts Error] Line 3: x"
        ));
        assert!(!result_failed(
            "Command executed successfully (exit code 0).\nOutput:\nerror: none"
        ));
        assert!(result_failed("Command failed with exit code 1.\nOutput:"));
        assert!(result_failed(
            "The tool execution failed with the following error:\n<error>x</error>"
        ));
        assert!(result_failed("The user denied this operation."));
    }
}
