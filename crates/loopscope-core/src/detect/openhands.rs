//! Profile `openhands-v0` (compat.md; `openhands` is the SDK's V1, openhands_sdk.rs): OpenHands V0's `StuckDetector`
//! (All-Hands-AI/OpenHands@156d0686), run where its controller runs it — at
//! each observation, request, prompt and condensation — over the history a
//! native stream maps to. Values compare as Python values; a shell
//! command's observation is compared by command and exit code only.

use std::collections::VecDeque;

use serde_json::Value;

use super::params::{Default, Kind, ParamSpec, Profile};
use super::{quote, Buffers, Detection, DetectorInfo, Evidence, Family, Observation, PromptScoped, Rule, Status};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "openhands-stuck",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "after an observation: the last 4 actions and observations repeat; or the last 3 actions repeat with 3 errors; or 3 equal agent messages with no observation between; or an A/B pattern over the last 6; or 10 condensations with two in a row",
    profiles: &[Profile::OpenhandsV0],
    params: &[ParamSpec::new(
        "headless",
        Kind::Flag,
        Default::Flag(false),
        "headless mode: the whole history, not just the events since the last user message",
    )],
    group: None,
    build: |p| {
        PromptScoped::boxed(Stuck {
            headless: p.flag("headless"),
            history: History::default(),
            pending: Vec::new(),
            request: None,
        })
    },
};

/// Shell tools whose string `command` makes a `CmdRunAction`.
const SHELL_TOOLS: &[&str] = &[
    "execute_bash",
    "bash",
    "run_shell_command",
    "shell",
    "execute_command",
    "run_terminal_cmd",
    "terminal",
    "exec_command",
];

#[derive(Clone, Debug)]
enum Action {
    Cmd {
        command: String,
        is_input: bool,
        thought: String,
    },
    Mcp {
        name: String,
        args: Value,
        thought: String,
    },
    Message {
        content: String,
    },
}

#[derive(Clone, Debug)]
enum Obs {
    CmdOutput { command: String, exit_code: i32 },
    Error { content: String },
    Mcp { content: String, name: String, args: Value },
    Condensation { content: String },
}

/// What `is_stuck` looks at of the history since the task began — the
/// last six actions and observations, the last three agent messages, the
/// last ten condensations, and counts — kept as each item arrives, so a
/// check costs the same at the 10th item and the 100,000th (the original
/// filters the whole history at every check) and memory stays bounded.
#[derive(Clone, Debug, Default)]
struct History {
    /// Actions and observations since the task began.
    len: usize,
    /// The last six actions with their events, newest first.
    actions: VecDeque<(Action, usize)>,
    /// The last six observations with their events, newest first.
    observations: VecDeque<(Obs, usize)>,
    /// Observations since the task began.
    observed: usize,
    /// The last three agent messages: the message, its event, and how many
    /// observations came before it.
    messages: VecDeque<(Action, usize, usize)>,
    /// The last ten condensations: their place among the items, and event.
    condensations: VecDeque<(usize, usize)>,
    /// The latest shell or tool action, quoted, for the reason.
    last_tool: Option<String>,
}

/// Pushes onto the front of a deque holding at most `max` (newest first).
fn keep<T>(d: &mut VecDeque<T>, item: T, max: usize) {
    d.push_front(item);
    d.truncate(max);
}

impl History {
    fn action(&mut self, action: Action, event: usize) {
        match &action {
            Action::Cmd { command, .. } => self.last_tool = Some(quote(command, 60)),
            Action::Mcp { name, args, .. } => self.last_tool = Some(format!("{name} {}", quote(&args.to_string(), 60))),
            Action::Message { .. } => {
                let m = (action.clone(), event, self.observed);
                self.messages.push_back(m);
                if self.messages.len() > 3 {
                    self.messages.pop_front();
                }
            }
        }
        keep(&mut self.actions, (action, event), 6);
        self.len += 1;
    }

    fn observation(&mut self, o: Obs, event: usize) {
        if matches!(o, Obs::Condensation { .. }) {
            self.condensations.push_back((self.len, event));
            if self.condensations.len() > 10 {
                self.condensations.pop_front();
            }
        }
        keep(&mut self.observations, (o, event), 6);
        self.observed += 1;
        self.len += 1;
    }
}

/// A call waiting for its result: its id, and its shell command if it is one.
#[derive(Clone, Debug)]
struct Pending {
    id: Option<String>,
    shell: Option<String>,
    name: String,
    args: Value,
}

/// The request being streamed: its content, before and after its first call.
#[derive(Clone, Debug, Default)]
struct Request {
    content: String,
    thought: Option<String>,
    calls: usize,
}

#[derive(Clone)]
struct Stuck {
    /// Kept for the listing: the history since the last user message and
    /// the whole history are the same here, since a prompt starts a new task.
    #[allow(dead_code)]
    headless: bool,
    history: History,
    pending: Vec<Pending>,
    request: Option<Request>,
}

/// Python `==` on JSON values: numbers and booleans by value (`True == 1`),
/// objects regardless of key order, arrays in order.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => matches!((num(a), num(b)), (Some(x), Some(y)) if x == y),
    }
}

fn action_eq(a: &Action, b: &Action) -> bool {
    match (a, b) {
        (
            Action::Cmd {
                command: c1,
                is_input: i1,
                thought: t1,
            },
            Action::Cmd {
                command: c2,
                is_input: i2,
                thought: t2,
            },
        ) => c1 == c2 && i1 == i2 && t1 == t2,
        (
            Action::Mcp {
                name: n1,
                args: a1,
                thought: t1,
            },
            Action::Mcp {
                name: n2,
                args: a2,
                thought: t2,
            },
        ) => n1 == n2 && t1 == t2 && py_eq(a1, a2),
        (Action::Message { content: c1 }, Action::Message { content: c2 }) => c1 == c2,
        _ => false,
    }
}

fn obs_eq(a: &Obs, b: &Obs) -> bool {
    match (a, b) {
        // `_eq_no_pid`: the command and exit code; the output is ignored.
        (
            Obs::CmdOutput {
                command: c1,
                exit_code: e1,
            },
            Obs::CmdOutput {
                command: c2,
                exit_code: e2,
            },
        ) => c1 == c2 && e1 == e2,
        (Obs::Error { content: c1 }, Obs::Error { content: c2 }) => c1 == c2,
        (Obs::Condensation { content: c1 }, Obs::Condensation { content: c2 }) => c1 == c2,
        (
            Obs::Mcp {
                content: c1,
                name: n1,
                args: a1,
            },
            Obs::Mcp {
                content: c2,
                name: n2,
                args: a2,
            },
        ) => c1 == c2 && n1 == n2 && py_eq(a1, a2),
        _ => false,
    }
}

/// An observation's text: a string output as is, JSON with sorted keys otherwise.
fn content_of(output: Option<&Value>) -> String {
    match output {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => super::keys::json(v, super::keys::KeyStyle::Canonical),
    }
}

impl Stuck {
    /// Closes the request being streamed: one without a tool call becomes
    /// the agent's message.
    fn close_request(&mut self, index: usize) {
        if let Some(r) = self.request.take() {
            if r.calls == 0 {
                self.history.action(Action::Message { content: r.content }, index);
            }
        }
    }

    /// `is_stuck`: the loop type and the events involved, if any.
    fn is_stuck(&self) -> Option<(&'static str, Vec<usize>)> {
        let h = &self.history;
        if h.len < 3 {
            return None;
        }
        let last = |n: usize| {
            let a: Vec<(&Action, usize)> = h.actions.iter().take(n).map(|(a, e)| (a, *e)).collect();
            let o: Vec<(&Obs, usize)> = h.observations.iter().take(n).map(|(o, e)| (o, *e)).collect();
            (a, o)
        };
        let events = |a: &[(&Action, usize)], o: &[(&Obs, usize)]| {
            let mut v: Vec<usize> = a.iter().map(|x| x.1).chain(o.iter().map(|x| x.1)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (actions, obs) = last(4);
        // 1. The same action and observation four times.
        if actions.len() == 4
            && obs.len() == 4
            && actions.iter().all(|a| action_eq(actions[0].0, a.0))
            && obs.iter().all(|o| obs_eq(obs[0].0, o.0))
        {
            return Some(("repeating_action_observation", events(&actions, &obs)));
        }
        // 2. The same action three times, each answered by an error.
        if actions.len() >= 3
            && obs.len() >= 3
            && actions[..3].iter().all(|a| action_eq(actions[0].0, a.0))
            && obs[..3].iter().all(|o| matches!(o.0, Obs::Error { .. }))
        {
            return Some(("repeating_action_error", events(&actions[..3], &obs[..3])));
        }
        // 3. A monologue: three equal agent messages, no observation between.
        if h.messages.len() == 3 {
            let m = &h.messages;
            if m.iter().all(|x| action_eq(&m[0].0, &x.0)) && m[0].2 == m[2].2 {
                return Some(("monologue", m.iter().map(|x| x.1).collect()));
            }
        }
        // 4. An A/B pattern over the last six actions and observations.
        if h.len >= 6 {
            let (a6, o6) = last(6);
            if a6.len() == 6 && o6.len() == 6 {
                let ab_a = action_eq(a6[0].0, a6[2].0)
                    && action_eq(a6[0].0, a6[4].0)
                    && action_eq(a6[1].0, a6[3].0)
                    && action_eq(a6[1].0, a6[5].0);
                let ab_o = obs_eq(o6[0].0, o6[2].0)
                    && obs_eq(o6[0].0, o6[4].0)
                    && obs_eq(o6[1].0, o6[3].0)
                    && obs_eq(o6[1].0, o6[5].0);
                if ab_a && ab_o {
                    return Some(("repeating_action_observation_pattern", events(&a6, &o6)));
                }
            }
        }
        // 5. Condensations with nothing else between two of the last ten
        // (two of them next to each other among the items).
        if h.len >= 10 && h.condensations.len() == 10 {
            let c = &h.condensations;
            if c.iter().zip(c.iter().skip(1)).any(|(x, y)| y.0 == x.0 + 1) {
                return Some(("context_window_error", c.iter().map(|x| x.1).collect()));
            }
        }
        None
    }

    fn check(&self, index: usize) -> Option<Detection> {
        let (loop_type, events) = self.is_stuck()?;
        let mut d = Detection::new(INFO.id, index, Channel::Tools, None);
        let what = match loop_type {
            "repeating_action_observation" => "the same action got the same observation 4 times".to_string(),
            "repeating_action_error" => "the same action failed 3 times in a row".to_string(),
            "monologue" => "the agent said the same thing 3 times with nothing observed between".to_string(),
            "repeating_action_observation_pattern" => {
                "two actions and their observations alternated 3 times".to_string()
            }
            _ => "the context was condensed again and again with nothing between".to_string(),
        };
        let last_action = self.history.last_tool.clone();
        d.repeats = Some(events.len());
        d.events = events;
        d.evidence = Evidence::Calls;
        d.repeated = last_action.clone();
        d.reason = format!(
            "\"⚠️ Agent detected in a loop! Loop type: {loop_type}\" — {what}{}",
            last_action.map_or(String::new(), |a| format!(" (last action: {a})"))
        );
        Some(d)
    }
}

impl Rule for Stuck {
    const ID: &'static str = "openhands-stuck";

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let index = obs.index;
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.close_request(index);
                self.request = Some(Request::default());
                self.check(index)
            }
            EventKind::Content { text } => {
                if let Some(r) = self.request.as_mut() {
                    if r.calls == 0 {
                        r.content.push_str(text);
                    }
                }
                None
            }
            EventKind::ToolCall { name, args, id } => {
                let thought = match self.request.as_mut() {
                    Some(r) => {
                        r.calls += 1;
                        if r.calls == 1 {
                            r.thought.get_or_insert_with(|| r.content.clone()).clone()
                        } else {
                            String::new()
                        }
                    }
                    None => String::new(),
                };
                let args = if args.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    args.clone()
                };
                let command = args.get("command").and_then(Value::as_str).map(str::to_string);
                let shell = command.filter(|_| SHELL_TOOLS.contains(&name.as_str()));
                let action = match &shell {
                    Some(command) => Action::Cmd {
                        command: command.clone(),
                        is_input: args.get("is_input").and_then(Value::as_str) == Some("true"),
                        thought,
                    },
                    None => Action::Mcp {
                        name: name.clone(),
                        args: args.clone(),
                        thought,
                    },
                };
                self.history.action(action, index);
                self.pending.push(Pending {
                    id: id.clone(),
                    shell,
                    name: name.clone(),
                    args,
                });
                None
            }
            EventKind::ToolResult { id, ok, .. } => {
                let at = self
                    .pending
                    .iter()
                    .position(|p| id.is_some() && p.id == *id)
                    .or(if self.pending.is_empty() { None } else { Some(0) });
                let call = at.map(|i| self.pending.remove(i));
                // Another agent's session can hold a volatile header (Codex);
                // OpenHands' own observations have none.
                let content = content_of(obs.event.compared_output());
                let o = match call {
                    Some(Pending {
                        shell: Some(command), ..
                    }) => Obs::CmdOutput {
                        command,
                        exit_code: if *ok { 0 } else { 1 },
                    },
                    _ if !ok => Obs::Error { content },
                    Some(Pending { name, args, .. }) => Obs::Mcp { content, name, args },
                    None => Obs::Mcp {
                        content,
                        name: String::new(),
                        args: Value::Null,
                    },
                };
                self.history.observation(o, index);
                self.check(index)
            }
            EventKind::Note { text } if obs.event.extra.get("kind").and_then(Value::as_str) == Some("condensation") => {
                self.history
                    .observation(Obs::Condensation { content: text.clone() }, index);
                self.check(index)
            }
            _ => None,
        }
    }

    fn reset(&mut self) {
        // A new task: the user's message starts the history that counts.
        self.history = History::default();
        self.pending.clear();
        self.request = None;
    }

    fn progress(&self, _: &Buffers) -> Status {
        let n = self.history.len;
        Status::Watching {
            current: n.min(4),
            threshold: 4,
            detail: format!("{n} actions and observations since the user's message"),
        }
    }
}

#[cfg(test)]
#[path = "openhands_tests.rs"]
mod tests;
