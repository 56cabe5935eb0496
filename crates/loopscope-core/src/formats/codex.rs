//! OpenAI Codex CLI: rollout files (`~/.codex/sessions/…/rollout-*.jsonl`,
//! possibly `.jsonl.zst`), legacy rollouts, and `codex exec --json` output.
//! Rollouts keep completed items only (no deltas).

use serde_json::{json, Value};

use super::sse::{Handler, JsonLinesDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;

pub fn decoder() -> JsonLinesDecoder<Codex> {
    JsonLinesDecoder::new(Codex::default(), Format::Codex)
}

#[derive(Debug, Default)]
pub struct Codex {
    /// A rollout with `payload` lines: the user `message` items repeat the
    /// prompt with context wrappers, so a prompt comes from one of the
    /// sources below, the first the file uses.
    modern: bool,
    /// Where this file's prompts come from: `event_msg/user_message`
    /// (≤ 0.16x), or, since it went away, `item_completed` `UserMessage`
    /// and the user `message` item whose provenance is the user (0.17x).
    prompts: Option<PromptSource>,
    /// A model request starts with the next item the model wrote: set by
    /// `turn_context` (its turn id) and by `token_usage_record`, which
    /// ends each model response (0.17x writes one `turn_context` a turn).
    request_due: Option<Option<String>>,
    /// Exit codes of finished commands by call id (`item_completed`
    /// `CommandExecution` comes just before the call's output), at most
    /// [`EXITS_KEPT`].
    exits: Vec<(String, i64)>,
}

/// Commands' exit codes held for their outputs to come.
const EXITS_KEPT: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PromptSource {
    UserMessageEvent,
    CompletedItem,
    ProvenanceUser,
}

/// Whether a user `message` item is the person's (0.17x marks each
/// content item's provenance: `user`, or `harness` for injected context).
fn from_the_user(p: &Value) -> bool {
    p.pointer("/internal_chat_message_metadata_passthrough/content_item_metadata")
        .and_then(Value::as_array)
        .is_some_and(|items| {
            !items.is_empty()
                && items
                    .iter()
                    .all(|i| i.pointer("/provenance/type").and_then(Value::as_str) == Some("user"))
        })
}

/// The lines of an exec output's header that change on every call
/// whatever the command did (`Chunk ID: 5fab01`, `Wall time: 0.0012
/// seconds`): not part of what the result is.
fn volatile_header_line(line: &str) -> bool {
    line.starts_with("Chunk ID: ") || line.starts_with("Wall time: ")
}

/// An exec output (0.17x): the exit code its header states and the output
/// less the header's volatile lines; `None` for any other output.
fn exec_output(text: &str) -> Option<(Option<i64>, String)> {
    let header_end = text.find("\nOutput:\n").map(|i| i + 1).unwrap_or(text.len());
    let header = &text[..header_end];
    if !header.lines().any(volatile_header_line) {
        return None;
    }
    let code = header
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse().ok());
    let mut stable = String::with_capacity(text.len());
    for line in header.split_inclusive('\n').filter(|l| !volatile_header_line(l)) {
        stable.push_str(line);
    }
    stable.push_str(&text[header_end..]);
    Some((code, stable))
}

/// What a hook that refused a call leaves as its output.
const HOOK_BLOCKED: &str = "Command blocked by ";

/// How 0.4x words a call that failed before or around its command, in
/// plain text where a finished command leaves JSON with an exit code: the
/// sandbox refused it (`failed in sandbox Seatbelt with execution error: …,
/// exit code: 1, …`), it could not start (`execution error: No such file or
/// directory`), or the person said no.
const FAILED_IN_WORDS: [&str; 5] = [
    HOOK_BLOCKED,
    "failed in sandbox ",
    "execution error: ",
    "patch rejected by user",
    "exec command rejected by user",
];

fn texts(items: Option<&Value>, kinds: &[&str]) -> String {
    items
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| str_of(p, "type").is_some_and(|t| kinds.contains(&t)))
        .filter_map(|p| str_of(p, "text"))
        .collect::<Vec<_>>()
        .join("")
}

/// A function-call output: whether it succeeded, and what detectors
/// compare it by when that is not the whole output. 0.4x writes a JSON
/// string `{"output":…,"metadata":{"exit_code":…,"duration_seconds":…}}`
/// (the duration changes on every call); 0.17x a header of its own before
/// the output (see `exec_output`).
pub fn call_output(output: &Value) -> (Option<i64>, Option<Value>) {
    let Some(text) = output.as_str() else {
        return (None, None);
    };
    if let Some((code, stable)) = exec_output(text) {
        return (code, Some(Value::String(stable)));
    }
    let parsed = serde_json::from_str::<Value>(text).ok();
    let Some(meta) = parsed.as_ref().and_then(|p| p.get("metadata")) else {
        return (None, None);
    };
    let code = meta.get("exit_code").and_then(Value::as_i64);
    let stable = parsed
        .as_ref()
        .and_then(|p| p.get("output"))
        .map(|o| serde_json::json!({ "output": o, "exit_code": code }));
    (code, stable)
}

impl Codex {
    /// A prompt from `source`, if that is where this file's prompts come from.
    fn prompt(&mut self, source: PromptSource, text: &str, out: &mut Out<'_>) {
        if *self.prompts.get_or_insert(source) == source {
            out.prompt(text);
        }
    }

    /// The model wrote an item: a new model request if one is due.
    fn model_item(&mut self, out: &mut Out<'_>) {
        if let Some(id) = self.request_due.take() {
            out.request(id.as_deref());
        }
    }

    fn item(&mut self, p: &Value, out: &mut Out<'_>) {
        let call_id = str_of(p, "call_id").or(str_of(p, "id"));
        let kind = str_of(p, "type").unwrap_or_default();
        if matches!(
            kind,
            "reasoning"
                | "function_call"
                | "custom_tool_call"
                | "local_shell_call"
                | "web_search_call"
                | "tool_search_call"
                | "image_generation_call"
        ) || (kind == "message" && str_of(p, "role") == Some("assistant"))
        {
            self.model_item(out);
        }
        match kind {
            "message" => match str_of(p, "role") {
                Some("assistant") => out.content(&texts(p.get("content"), &["output_text", "text"])),
                Some("user") if !self.modern => {
                    let text = texts(p.get("content"), &["input_text", "text"]);
                    // Context the CLI adds is not the user typing.
                    if !text.trim_start().starts_with('<') && !text.is_empty() {
                        out.prompt(&text);
                    }
                }
                Some("user") if from_the_user(p) => {
                    let text = texts(p.get("content"), &["input_text", "text"]);
                    self.prompt(PromptSource::ProvenanceUser, &text, out);
                }
                Some("user" | "developer" | "system") => {}
                Some(other) => out.unknown(&format!("message role {other}")),
                None => {}
            },
            "reasoning" => {
                let raw = texts(p.get("content"), &["reasoning_text", "text"]);
                if raw.is_empty() {
                    let summary: Vec<String> = p
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|s| str_of(s, "text").map(str::to_string))
                        .collect();
                    out.reasoning(&summary.join("\n\n"));
                } else {
                    out.reasoning(&raw);
                }
            }
            "function_call" => {
                let args = str_of(p, "arguments").unwrap_or_default().to_string();
                out.tool_call(call_id, str_of(p, "name").unwrap_or("unknown"), Args::Text(&args));
            }
            "custom_tool_call" => out.tool_call(
                call_id,
                str_of(p, "name").unwrap_or("unknown"),
                Args::Json(json!({ "input": p.get("input").cloned().unwrap_or(Value::Null) })),
            ),
            "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
                let Some(output) = p.get("output") else {
                    out.tool_result(call_id, true, None);
                    return;
                };
                let (stated, stable) = call_output(output);
                // The command's own record is the surest exit code; a hook's
                // refusal leaves none, only its words.
                let recorded = call_id.and_then(|id| {
                    let at = self.exits.iter().position(|(c, _)| c == id)?;
                    Some(self.exits.remove(at).1)
                });
                let said_failed = output
                    .as_str()
                    .is_some_and(|t| FAILED_IN_WORDS.iter().any(|w| t.starts_with(w)));
                let ok = !said_failed && recorded.or(stated).is_none_or(|c| c == 0);
                match stable {
                    Some(stable) => out.tool_result_varying(call_id, ok, output.clone(), stable),
                    None => out.tool_result(call_id, ok, Some(output.clone())),
                }
            }
            "local_shell_call" => out.tool_call(
                call_id,
                "local_shell",
                Args::Json(p.get("action").cloned().unwrap_or(Value::Null)),
            ),
            "web_search_call" => out.tool_call(
                call_id,
                "web_search",
                Args::Json(p.get("action").cloned().unwrap_or(Value::Null)),
            ),
            "tool_search_call" => out.tool_call(
                call_id,
                "tool_search",
                Args::Json(p.get("arguments").cloned().unwrap_or(Value::Null)),
            ),
            "image_generation_call" => out.tool_call(call_id, "image_generation", Args::Json(json!({}))),
            // Known, and nothing of the stream: snapshots the CLI keeps.
            // A legacy rollout's first line (`{id, timestamp, instructions}`).
            "" => {}
            "ghost_snapshot" | "compaction" | "compaction_summary" | "other" => {}
            other => out.unknown(&format!("response_item/{other}")),
        }
    }

    /// `event_msg` `item_completed` (0.17x): the prompt, and each
    /// command's exit code for its output to come.
    fn completed(&mut self, item: &Value, out: &mut Out<'_>) {
        match str_of(item, "type").unwrap_or_default() {
            "UserMessage" => {
                let text = texts(item.get("content"), &["text", "input_text"]);
                self.prompt(PromptSource::CompletedItem, &text, out);
            }
            "CommandExecution" => {
                let code = item
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .or(match str_of(item, "status") {
                        Some("failed") => Some(1),
                        Some("completed") => Some(0),
                        _ => None,
                    });
                if let (Some(id), Some(code)) = (str_of(item, "id"), code) {
                    if self.exits.len() >= EXITS_KEPT {
                        self.exits.remove(0);
                    }
                    self.exits.push((id.to_string(), code));
                }
            }
            // The same items as the `response_item`s beside them.
            "Reasoning" | "AgentMessage" | "FileChange" | "McpToolCall" | "WebSearch" | "ImageGeneration"
            | "ImageView" | "ContextCompaction" | "Plan" | "TodoList" => {}
            other => out.unknown(&format!("item_completed/{other}")),
        }
    }

    /// `codex exec --json` lines.
    fn exec(&mut self, kind: &str, v: &Value, out: &mut Out<'_>) {
        match kind {
            "turn.started" => out.request(None),
            "item.completed" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                let id = str_of(item, "id");
                match str_of(item, "type").unwrap_or_default() {
                    "reasoning" => out.reasoning(str_of(item, "text").unwrap_or_default()),
                    "agent_message" => out.content(str_of(item, "text").unwrap_or_default()),
                    "command_execution" => {
                        out.tool_call(id, "shell", Args::Json(json!({ "command": item.get("command") })));
                        let ok = item.get("exit_code").and_then(Value::as_i64).is_none_or(|c| c == 0)
                            && str_of(item, "status") != Some("failed");
                        out.tool_result(id, ok, item.get("aggregated_output").cloned());
                    }
                    "file_change" => {
                        out.tool_call(id, "apply_patch", Args::Json(json!({ "changes": item.get("changes") })));
                        out.tool_result(id, str_of(item, "status") != Some("failed"), None);
                    }
                    "mcp_tool_call" => {
                        let name = format!(
                            "{}.{}",
                            str_of(item, "server").unwrap_or("mcp"),
                            str_of(item, "tool").unwrap_or("tool")
                        );
                        out.tool_call(
                            id,
                            &name,
                            Args::Json(item.get("arguments").cloned().unwrap_or(Value::Null)),
                        );
                        let ok = str_of(item, "status") != Some("failed");
                        out.tool_result(id, ok, item.get("result").or(item.get("error")).cloned());
                    }
                    "web_search" => out.tool_call(id, "web_search", Args::Json(json!({ "query": item.get("query") }))),
                    "error" => out.note(format!("error: {}", str_of(item, "message").unwrap_or_default())),
                    _ => {}
                }
            }
            "turn.failed" | "error" => {
                let msg = v
                    .get("error")
                    .and_then(|e| str_of(e, "message"))
                    .or(str_of(v, "message"));
                out.note(format!("{kind}: {}", msg.unwrap_or("no message")));
            }
            _ => {}
        }
    }
}

impl Handler for Codex {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        let kind = str_of(&v, "type").unwrap_or_default().to_string();
        if kind.starts_with("thread.")
            || kind.starts_with("turn.")
            || kind.starts_with("item.")
            || (kind == "error" && v.get("payload").is_none())
        {
            self.exec(&kind, &v, out);
            return;
        }
        out.ts = str_of(&v, "timestamp").and_then(Ts::from_rfc3339);
        let Some(p) = v.get("payload") else {
            // A legacy rollout: bare items after an `{id, timestamp, instructions}` line.
            if v.get("record_type").is_none() {
                self.item(&v, out);
            }
            return;
        };
        self.modern = true;
        match kind.as_str() {
            "turn_context" => self.request_due = Some(str_of(p, "turn_id").map(str::to_string)),
            // The end of one model response (0.17x): the next item the model
            // writes belongs to a new request.
            "token_usage_record" => {
                if self.request_due.is_none() {
                    self.request_due = Some(None);
                }
            }
            "response_item" => self.item(p, out),
            "event_msg" => match str_of(p, "type").unwrap_or_default() {
                "user_message" => {
                    let text = str_of(p, "message").unwrap_or_default().to_string();
                    self.prompt(PromptSource::UserMessageEvent, &text, out);
                }
                "item_completed" => self.completed(p.get("item").unwrap_or(&Value::Null), out),
                "error" => out.note(format!("error: {}", str_of(p, "message").unwrap_or_default())),
                "turn_aborted" => out.note(format!("turn aborted: {}", str_of(p, "reason").unwrap_or("no reason"))),
                "task_complete" => {
                    if let Some(e) = p.get("error").filter(|e| !e.is_null()) {
                        let msg = str_of(e, "message").map_or_else(|| e.to_string(), str::to_string);
                        out.note(format!("turn failed: {msg}"));
                    }
                }
                "context_compacted" => out.note("context compacted"),
                "token_count" => out.usage(
                    p.pointer("/info/last_token_usage/output_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                ),
                // Known, and the stream is in the response items beside them.
                "agent_message"
                | "agent_reasoning"
                | "agent_reasoning_raw_content"
                | "agent_reasoning_section_break"
                | "task_started"
                | "thread_settings_applied"
                | "item_started"
                | "exec_command_begin"
                | "exec_command_end"
                | "exec_command_output_delta"
                | "patch_apply_begin"
                | "patch_apply_end"
                | "mcp_tool_call_begin"
                | "mcp_tool_call_end"
                | "web_search_begin"
                | "web_search_end"
                | "view_image_tool_call"
                | "plan_update"
                | "turn_diff"
                | "background_event"
                | "stream_error"
                | "shutdown_complete"
                | "entered_review_mode"
                | "exited_review_mode"
                | "get_history_entry_response"
                | "list_custom_prompts_response"
                | "mcp_list_tools_response"
                | "session_configured"
                | "warning"
                | "conversation_path"
                | "undo_started"
                | "undo_completed"
                | "thread_name_updated"
                | "deprecation_notice"
                | "user_message_delta"
                | "raw_response_item" => {}
                other => out.unknown(&format!("event_msg/{other}")),
            },
            "compacted" => out.note("context compacted"),
            "session_meta" | "world_state" => {}
            other => out.unknown(other),
        }
    }
}
