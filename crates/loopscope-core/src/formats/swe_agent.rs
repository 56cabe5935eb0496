//! SWE-agent trajectories, the datasets' unit of work:
//! - mini-swe-agent (`<output>/<instance>/<instance>.traj.json`,
//!   `last_mini_run.traj.json`; SWE-agent/mini-swe-agent@a83fcae8
//!   `agents/default.py` `serialize`, `trajectory_format` "mini-swe-agent-1.1"):
//!   OpenAI-style messages with `extra{actions, response, returncode, …}`;
//! - SWE-agent (`.traj`; SWE-agent/SWE-agent@05ff843f `sweagent/types.py`):
//!   `trajectory[{thought, action, observation, …}]` plus the `history`.
//!   0.x's history is plain chat (the action is in the text); 1.x calls
//!   tools: its history's assistant messages carry `tool_calls` and the
//!   observations come back as `role: tool` with `tool_call_ids`, and each
//!   trajectory step holds a snapshot of the whole chat (`query`, or
//!   `messages` in pre-releases), which is not read: the history is the
//!   chat once. A step whose model output was not a valid action
//!   (a requery) is in the trajectory, not in the history.
//!
//! SWE-agent records no exit codes or times: whether an observation is an
//! error is judged from its text (an error message, a failed test), which
//! is said once as a warning.

use serde_json::Value;

use super::whole::{parse_json, DocHandler, WholeDecoder};
use super::{str_of, text_of, Args, Format, Out};
use crate::event::Ts;

pub fn mini_decoder() -> WholeDecoder<Mini> {
    WholeDecoder::new(Mini::default(), parse_json, Format::SweAgent)
}

pub fn swe_decoder() -> WholeDecoder<Swe> {
    WholeDecoder::new(Swe::default(), parse_json, Format::SweAgent)
}

/// A mini-swe-agent trajectory's top-level fields.
pub fn is_mini(v: &Value) -> bool {
    str_of(v, "trajectory_format").is_some_and(|f| f.starts_with("mini-swe-agent"))
        || (v.get("messages").is_some() && v.get("info").is_some() && v.get("trajectory").is_none())
}

/// A mini-swe-agent trajectory that names its format (detection by the
/// first line; without the name, `classify` tells it from the document).
pub fn is_named_mini(v: &Value) -> bool {
    is_mini(v) && str_of(v, "trajectory_format").is_some()
}

/// A SWE-agent trajectory's top-level fields.
pub fn is_swe(v: &Value) -> bool {
    v.get("trajectory").is_some()
        && (v.get("history").is_some() || v.get("info").is_some())
        && v.get("instance_id").is_none()
}

/// `<returncode>N</returncode>` in an observation.
fn returncode_in(text: &str) -> Option<i64> {
    let start = text.find("<returncode>")? + "<returncode>".len();
    let end = text[start..].find("</returncode>")? + start;
    text[start..end].trim().parse().ok()
}

/// Messages emitted (a trajectory is saved again after every step).
#[derive(Default)]
pub struct Mini {
    done: usize,
    prompted: bool,
    /// The last command submitted the run: what comes back is the
    /// submission, not a user's prompt.
    submitting: bool,
}

/// The line mini's submit command echoes (older versions: the second).
const SUBMIT_MARKS: [&str; 2] = ["COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT"];

impl Mini {
    fn message(&mut self, m: &Value, out: &mut Out<'_>) {
        let extra = m.get("extra").unwrap_or(&Value::Null);
        if let Some(t) = extra.get("timestamp").and_then(Value::as_f64) {
            out.ts = Ts::from_unix_millis((t * 1000.0) as i64);
        }
        let content = text_of(m.get("content"));
        match str_of(m, "role").unwrap_or_default() {
            "user" if !self.prompted => {
                self.prompted = true;
                out.prompt(&content);
            }
            "user" => match (str_of(extra, "interrupt_type"), returncode_in(&content)) {
                (Some(kind), _) => {
                    // A reply with no valid action: the model's words are
                    // only in the error message's copy of the response.
                    if let Some(reply) = extra.pointer("/response/choices/0/message").filter(|r| r.is_object()) {
                        let response = &extra["response"];
                        out.request_by(str_of(response, "id"), str_of(response, "model"));
                        out.reasoning(str_of(reply, "reasoning_content").unwrap_or_default());
                        out.content(&text_of(reply.get("content")));
                        out.usage(
                            response
                                .pointer("/usage/completion_tokens")
                                .and_then(Value::as_u64)
                                .unwrap_or(0),
                        );
                    } else if let Some(text) = str_of(extra, "model_response") {
                        out.request(None);
                        out.content(text);
                    }
                    out.note(format!("{kind}: {}", content.lines().next().unwrap_or_default()));
                }
                (None, Some(code)) => out.tool_result(None, code == 0, Some(Value::String(content))),
                (None, None) if std::mem::take(&mut self.submitting) => {
                    out.note(format!("submitted: {}", content.lines().next().unwrap_or_default()))
                }
                (None, None) => out.prompt(&content),
            },
            "assistant" => {
                let response = extra.get("response").unwrap_or(&Value::Null);
                out.request_by(str_of(response, "id"), str_of(response, "model"));
                out.reasoning(str_of(m, "reasoning_content").unwrap_or_default());
                out.content(&content);
                let calls = m.get("tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty());
                match calls {
                    Some(calls) => {
                        for c in calls {
                            let f = c.get("function").unwrap_or(c);
                            let args = Args::of(f.get("arguments"));
                            out.tool_call(str_of(c, "id"), str_of(f, "name").unwrap_or("bash"), args);
                        }
                    }
                    // Text-based actions (the fenced block the model wrote):
                    // parsed by mini into `extra.actions`, or, in a bare
                    // message list, read from the fence.
                    None => match extra.get("actions").and_then(Value::as_array) {
                        Some(actions) => {
                            for a in actions {
                                let cmd = str_of(a, "command").unwrap_or_default();
                                out.tool_call(
                                    str_of(a, "tool_call_id"),
                                    "bash",
                                    Args::Json(serde_json::json!({ "command": cmd })),
                                );
                            }
                        }
                        None => {
                            if let Some(cmd) = fenced_action(&content) {
                                self.submitting = SUBMIT_MARKS.iter().any(|m| cmd.contains(m));
                                out.tool_call(None, "bash", Args::Json(serde_json::json!({ "command": cmd })));
                            }
                        }
                    },
                }
                let tokens = response
                    .pointer("/usage/completion_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                out.usage(tokens);
            }
            "tool" => {
                let code = extra
                    .get("returncode")
                    .and_then(Value::as_i64)
                    .or_else(|| returncode_in(&content));
                let exception = str_of(extra, "exception_info").unwrap_or_default();
                // The submit command ends the run inside the environment; mini
                // still answers its call, as not executed.
                if exception == NOT_EXECUTED {
                    out.cancelled(
                        str_of(m, "tool_call_id"),
                        "not run: mini-swe-agent ended the run (submitted)",
                    );
                    return;
                }
                let ok = code.is_none_or(|c| c == 0) && exception.is_empty();
                out.tool_result(str_of(m, "tool_call_id"), ok, Some(Value::String(content)));
            }
            "exit" => out.note(format!("exit: {}", str_of(extra, "exit_status").unwrap_or(&content))),
            _ => {}
        }
    }
}

/// What mini answers the call of a command it did not run.
const NOT_EXECUTED: &str = "action was not executed";
/// The fence mini's text-based mode asks the model to put its command in.
const MINI_FENCE: &str = "```mswea_bash_command";

/// The command of a text-based reply: the one `mswea_bash_command` fence,
/// or the one ```bash fence of older versions.
fn fenced_action(content: &str) -> Option<String> {
    let fence = |open: &str| -> Vec<String> {
        let mut found = Vec::new();
        let mut rest = content;
        while let Some(at) = rest.find(open) {
            let after = &rest[at + open.len()..];
            let Some(body) = after.strip_prefix('\n') else {
                rest = after;
                continue;
            };
            let end = body.find("\n```").unwrap_or(body.len());
            found.push(body[..end].trim_end().to_string());
            rest = &body[end..];
        }
        found
    };
    let mini = fence(MINI_FENCE);
    let chosen = if mini.is_empty() { fence("```bash") } else { mini };
    (chosen.len() == 1).then(|| chosen.into_iter().next().unwrap_or_default())
}

/// A bare message list mini wrote (its test data, early versions): its
/// system prompt asks for mini's fence.
pub fn is_mini_list(first: &Value) -> bool {
    str_of(first, "role") == Some("system") && text_of(first.get("content")).contains(MINI_FENCE)
}

impl DocHandler for Mini {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let messages = doc
            .get("messages")
            .or(Some(&doc))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, m) in messages.iter().enumerate().skip(self.done) {
            out.line = i as u64 + 1;
            self.message(m, out);
        }
        self.done = self.done.max(messages.len());
    }
}

/// Whether an observation reads as a failure (SWE-agent keeps no exit
/// code): a shell's or Python's own words for one, or a SWE-agent tool's
/// error line. A listing that merely contains "not found" (a decompiler's
/// "Function main not found! Instead, here is …", a docstring) is none.
fn looks_failed(observation: &str) -> bool {
    const SIGNS: [&str; 6] = [
        "command not found",
        "No such file",
        "Traceback (most recent call last)",
        "FAILED",
        "Usage: ",
        "Wrong flag!",
    ];
    observation
        .lines()
        .any(|l| l.starts_with("Error") || l.starts_with("error:") || SIGNS.iter().any(|s| l.contains(s)))
}

/// The task: the history's first user message that is not a demonstration.
fn task_of(doc: &Value) -> Option<&Value> {
    doc.get("history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(
            doc.pointer("/trajectory/0/query")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        )
        .find(|m| str_of(m, "role") == Some("user") && m.get("is_demo").and_then(Value::as_bool) != Some(true))
}

/// A history that calls tools (1.x with function calling).
fn calls_tools(history: &[Value]) -> bool {
    history.iter().any(|m| {
        str_of(m, "role") == Some("tool")
            || m.get("tool_calls")
                .is_some_and(|c| c.as_array().is_some_and(|c| !c.is_empty()))
    })
}

#[derive(Default)]
pub struct Swe {
    /// Trajectory steps, or history messages, emitted (a trajectory is
    /// saved again after every step).
    done: usize,
    prompted: bool,
    warned: bool,
    /// `info.exit_status` said.
    exited: bool,
}

impl Swe {
    /// A judged result, with the warning that it was judged said once.
    fn judged_result(&mut self, id: Option<&str>, observation: &str, out: &mut Out<'_>) {
        let ok = !looks_failed(observation);
        if !ok && !self.warned {
            self.warned = true;
            out.warn("SWE-agent keeps no exit codes: failed steps are judged from their output's text");
        }
        out.tool_result(id, ok, Some(Value::String(observation.to_string())));
    }

    /// 0.x (and 1.x without function calling): one step a call.
    fn steps(&mut self, steps: &[Value], out: &mut Out<'_>) {
        for (i, s) in steps.iter().enumerate().skip(self.done) {
            out.line = i as u64 + 1;
            out.request(None);
            out.content(str_of(s, "thought").unwrap_or_default());
            let action = str_of(s, "action").unwrap_or_default();
            let name = action.split_whitespace().next().unwrap_or("bash");
            out.tool_call(None, name, Args::Json(serde_json::json!({ "command": action })));
            self.judged_result(None, str_of(s, "observation").unwrap_or_default(), out);
        }
        self.done = self.done.max(steps.len());
    }

    /// 1.x with function calling: the history's calls and observations.
    fn history(&mut self, history: &[Value], out: &mut Out<'_>) {
        for (i, m) in history.iter().enumerate().skip(self.done) {
            out.line = i as u64 + 1;
            let demo = m.get("is_demo").and_then(Value::as_bool) == Some(true);
            match str_of(m, "role").unwrap_or_default() {
                _ if demo => {}
                "system" => {}
                // The task was emitted first; later user messages are
                // observations of a tool-less step or SWE-agent's own words.
                "user" => {
                    let text = text_of(m.get("content"));
                    if !text.is_empty() {
                        out.note(text);
                    }
                }
                "assistant" => {
                    out.request(None);
                    out.reasoning(str_of(m, "reasoning_content").unwrap_or_default());
                    out.content(&text_of(m.get("content")));
                    for c in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                        let f = c.get("function").unwrap_or(c);
                        out.tool_call(
                            str_of(c, "id"),
                            str_of(f, "name").unwrap_or("bash"),
                            Args::of(f.get("arguments")),
                        );
                    }
                }
                "tool" => {
                    let id = m
                        .pointer("/tool_call_ids/0")
                        .and_then(Value::as_str)
                        .or(str_of(m, "tool_call_id"));
                    self.judged_result(id, &text_of(m.get("content")), out);
                }
                other => out.unknown(&format!("history role {other}")),
            }
        }
        self.done = self.done.max(history.len());
    }
}

impl DocHandler for Swe {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let history = doc
            .get("history")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if !self.prompted {
            if let Some(m) = task_of(&doc) {
                out.prompt(&text_of(m.get("content")));
            }
            self.prompted = true;
        }
        if calls_tools(history) {
            // The task (emitted above) and what comes before it are not
            // read again from the history.
            let task_at = history.iter().position(|m| {
                str_of(m, "role") == Some("user") && m.get("is_demo").and_then(Value::as_bool) != Some(true)
            });
            self.done = self.done.max(task_at.map_or(0, |i| i + 1));
            self.history(history, out);
        } else {
            let steps = doc
                .get("trajectory")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            self.steps(steps, out);
        }
        if let Some(status) = doc.pointer("/info/exit_status").and_then(Value::as_str) {
            if !self.exited && status != "submitted" && !status.is_empty() {
                self.exited = true;
                out.note(format!("exit: {status}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    #[test]
    fn mini_tool_calls_and_return_codes() {
        let doc = serde_json::json!({"trajectory_format": "mini-swe-agent-1.1", "info": {}, "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "fix"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}], "extra": {"response": {"id": "r", "usage": {"completion_tokens": 3}}}},
            {"role": "tool", "tool_call_id": "c1", "content": "x", "extra": {"returncode": 2, "timestamp": 1757841139.9}},
            {"role": "user", "content": "bad", "extra": {"interrupt_type": "FormatError"}},
            {"role": "exit", "content": "Submitted", "extra": {"exit_status": "Submitted"}}]});
        let d = Decoded::from_bytes(doc.to_string().as_bytes(), &mut mini_decoder());
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(kinds, ["prompt", "request", "tool_call", "tool_result", "note", "note"]);
        assert_eq!(d.events[3].to_json()["ok"], false);
        assert!(d.events[3].ts.is_some());
    }

    #[test]
    fn swe_agent_steps_with_judged_failures() {
        let doc = serde_json::json!({"history": [{"role": "system", "content": "s"}, {"role": "user", "content": "issue"}], "info": {},
            "trajectory": [{"thought": "t", "action": "open x.rs", "observation": "Error: File x.rs not found"},
                           {"thought": "u", "action": "submit", "observation": "diff"}]});
        let d = Decoded::from_bytes(doc.to_string().as_bytes(), &mut swe_decoder());
        let results: Vec<bool> = d
            .events
            .iter()
            .filter(|e| e.type_name() == "tool_result")
            .map(|e| e.to_json()["ok"].as_bool().unwrap())
            .collect();
        assert_eq!(results, [false, true]);
        assert_eq!(d.events[0].to_json()["text"], "issue");
        assert_eq!(d.problems.len(), 1);
    }
}
