//! Profile `openhands` (`shared/design/openhands-sdk.md`): the OpenHands
//! SDK's stuck detector (openhands-sdk 1.58.2,
//! `openhands/sdk/conversation/stuck_detector.py`) with the nudge its
//! conversation loop sends first (`LocalConversation._check_stuck_or_nudge`),
//! run where the SDK runs them: before every LLM call (a `request`), and once
//! more at the end of the stream.
//!
//! A native stream maps to the SDK's event log as the spec's §6 says: a
//! prompt is the user's message (the window starts after it), each tool call
//! an `ActionEvent` (the response's text is the first call's `thought`), a
//! result an `ObservationEvent` or, when it failed, an `AgentErrorEvent`, a
//! response without a call an agent `MessageEvent`, a `compaction` or
//! `condensation` note a `Condensation`, and each nudge an environment
//! message. The SDK reads the last 20 events at each check; they are all
//! this keeps.

use std::collections::VecDeque;

use serde_json::Value;

use std::sync::Arc;

use super::keys::KeyStyle;
use super::params::{Default, Kind, ParamSpec, Profile};
use super::{
    quote, Buffers, Configured, Detection, Detector, DetectorInfo, DetectorState, Evidence, Family, Group, Kinds,
    Observation, Status,
};
use crate::event::{Channel, EventKind};

mod args;
mod checks;
mod window;

use args::same_args;
use window::{
    action_hash, combine, event_eq, fold, same_text, Ev, Item, Recent, Ring, Slot, ACTION, ERROR, OBSERVATION,
};

/// `MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION`.
const WINDOW: usize = 20;

pub(crate) const NUDGE: &str = "openhands-sdk-nudge";
pub(crate) const STUCK: &str = "openhands-sdk-stuck";

pub(crate) static GROUP: Group = Group {
    name: "openhands-sdk",
    build: |members| Box::new(Sdk::new(members)),
};

pub(crate) static NUDGE_INFO: DetectorInfo = DetectorInfo {
    id: NUDGE,
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "before an LLM call, when exactly action_error identical calls in a row (of openhands-sdk-stuck) each ended in an error: the SDK tells the model \"You've called <tool> with the same arguments 3 times in a row and gotten the same error each time\" (once per error) and goes on",
    profiles: &[Profile::Openhands],
    params: &[],
    group: Some(&GROUP),
    build: |_| Box::new(Sdk::new(&[])),
};

pub(crate) static STUCK_INFO: DetectorInfo = DetectorInfo {
    id: STUCK,
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "before an LLM call, over the last 20 events since the user's message: the last action_observation actions equal (tool, arguments, thought) and their observations equal; or more than action_error equal actions in a row each ended in an error; or monologue agent messages in a row; or an A/B pattern over the last alternating_pattern actions and observations → the run stops as STUCK",
    profiles: &[Profile::Openhands],
    params: &[
        ParamSpec::new(
            "action_observation",
            Kind::Count { min: 1 },
            Default::Count(4),
            "StuckDetectionThresholds.action_observation: equal actions with equal observations",
        ),
        ParamSpec::new(
            "action_error",
            Kind::Count { min: 1 },
            Default::Count(3),
            "StuckDetectionThresholds.action_error: the nudge at this many failing repeats, the stop after one more",
        ),
        ParamSpec::new(
            "monologue",
            Kind::Count { min: 1 },
            Default::Count(3),
            "StuckDetectionThresholds.monologue: agent messages in a row with nothing else between",
        ),
        ParamSpec::new(
            "alternating_pattern",
            Kind::Count { min: 1 },
            Default::Count(6),
            "StuckDetectionThresholds.alternating_pattern: actions and observations alternating A/B",
        ),
    ],
    group: Some(&GROUP),
    build: |_| Box::new(Sdk::new(&[])),
};

/// The response being streamed: its text, and where its first call sits
/// (one kept for the stream: its buffer is reused).
#[derive(Clone, Debug, Default)]
struct Response {
    text: String,
    first_call: Option<u64>,
    calls: usize,
}

#[derive(Clone, Copy, Debug)]
struct Thresholds {
    action_observation: usize,
    action_error: usize,
    monologue: usize,
    alternating: usize,
}

/// A call waiting for its result. Its id's buffer is reused by later
/// calls, so a long run allocates nothing for ids.
#[derive(Clone, Debug)]
struct Pending {
    /// Whether the call had an id (`id` holds it).
    has_id: bool,
    id: String,
    tool: Arc<str>,
}

#[derive(Clone)]
struct Sdk {
    t: Thresholds,
    /// Which members speak (nudge, stuck).
    speaks: [bool; 2],
    /// The last 20 events of the log since the user's message.
    window: VecDeque<Item>,
    /// The window's actions and its observations (observations and
    /// errors), oldest first, as the checks read them.
    actions: Ring,
    observations: Ring,
    seq: u64,
    /// Equality classes handed out.
    classes: u64,
    response: Response,
    /// Whether a response is being streamed (after a request).
    in_response: bool,
    /// The texts and calls made last, shared by equal ones (a loop
    /// repeating one call and one output allocates nothing for them).
    calls: Recent<(Arc<str>, Arc<Value>)>,
    thoughts: Recent<Arc<str>>,
    outputs: Recent<Arc<str>>,
    errors: Recent<Arc<str>>,
    /// Calls waiting for a result (the first `pending_len`), in call order.
    pending: Vec<Pending>,
    pending_len: usize,
    /// The newest error already nudged about.
    nudged: Option<u64>,
    /// STUCK: nothing more until the next prompt.
    stuck: Option<(usize, String)>,
    last_nudge: Option<(usize, String)>,
}

impl Sdk {
    fn new(members: &[&Configured]) -> Sdk {
        let stuck = members.iter().find(|c| c.info.id == STUCK);
        let param = |name: &str, default: usize| stuck.map_or(default, |c| c.params.count(name));
        Sdk {
            t: Thresholds {
                action_observation: param("action_observation", 4),
                action_error: param("action_error", 3),
                monologue: param("monologue", 3),
                alternating: param("alternating_pattern", 6),
            },
            speaks: [
                members.iter().any(|c| c.info.id == NUDGE),
                members.iter().any(|c| c.info.id == STUCK),
            ],
            window: VecDeque::with_capacity(WINDOW + 1),
            actions: Ring::new(),
            observations: Ring::new(),
            seq: 0,
            classes: 0,
            response: Response::default(),
            in_response: false,
            calls: Recent::new(),
            thoughts: Recent::new(),
            outputs: Recent::new(),
            errors: Recent::new(),
            pending: Vec::new(),
            pending_len: 0,
            nudged: None,
            stuck: None,
            last_nudge: None,
        }
    }

    /// Appends `ev` (whose `Ev::field_hashes` are `fields`) to the log.
    fn push(&mut self, ev: Ev, fields: [u64; 2], event: usize) -> u64 {
        debug_assert_eq!(fields, ev.field_hashes());
        self.seq += 1;
        let hash = combine(fields);
        let class = self.class_of(&ev, hash, None);
        let slot = Slot {
            class,
            event,
            seq: self.seq,
            error: matches!(ev, Ev::Error { .. }),
        };
        if ev.is_action() {
            self.actions.push_back(slot);
        } else if ev.is_observation() {
            self.observations.push_back(slot);
        }
        self.window.push_back(Item {
            ev,
            class,
            fields,
            hash,
            event,
            seq: self.seq,
        });
        if self.window.len() > WINDOW {
            if let Some(old) = self.window.pop_front() {
                if old.ev.is_action() {
                    self.actions.pop_front();
                } else if old.ev.is_observation() {
                    self.observations.pop_front();
                }
            }
        }
        self.seq
    }

    /// An event the detector never compares (a message, a condensation).
    fn push_plain(&mut self, ev: Ev, event: usize) {
        let fields = ev.field_hashes();
        self.push(ev, fields, event);
    }

    /// The class of an equal event in the window (but the one at `skip`),
    /// else a new one.
    fn class_of(&mut self, ev: &Ev, hash: u64, skip: Option<u64>) -> u64 {
        let same = self
            .window
            .iter()
            .find(|i| Some(i.seq) != skip && i.hash == hash && event_eq(&i.ev, ev));
        match same {
            Some(i) => i.class,
            None => {
                self.classes += 1;
                self.classes
            }
        }
    }

    /// The response is complete: one without a call is the agent's message.
    fn close_response(&mut self, index: usize) {
        if std::mem::take(&mut self.in_response) && self.response.calls == 0 && !self.response.text.is_empty() {
            self.push_plain(Ev::Agent, index);
        }
    }

    /// A new response: its buffer emptied, not freed.
    fn open_response(&mut self) {
        self.response.text.clear();
        self.response.first_call = None;
        self.response.calls = 0;
        self.in_response = true;
    }

    /// A call is waiting for its result.
    fn add_pending(&mut self, id: Option<&str>, tool: Arc<str>) {
        if self.pending_len == self.pending.len() {
            self.pending.push(Pending {
                has_id: false,
                id: String::new(),
                tool: tool.clone(),
            });
        }
        let p = &mut self.pending[self.pending_len];
        p.has_id = id.is_some();
        p.id.clear();
        p.id.push_str(id.unwrap_or_default());
        p.tool = tool;
        self.pending_len += 1;
    }

    /// The tool of the call a result answers: the one of its id, else the
    /// oldest waiting ("" with none waiting).
    fn take_pending(&mut self, id: Option<&str>) -> Arc<str> {
        let waiting = &self.pending[..self.pending_len];
        // With one call waiting the answer is it, id or not: its id is not
        // read (on a long log that read is a cache miss per result).
        let at = match waiting.len() {
            0 => None,
            1 => Some(0),
            _ => Some(
                waiting
                    .iter()
                    .position(|p| p.has_id && id == Some(p.id.as_str()))
                    .unwrap_or(0),
            ),
        };
        let Some(at) = at else {
            return Arc::from("");
        };
        let tool = self.pending[at].tool.clone();
        // The rest keep their order; the taken one's buffer goes last.
        self.pending[at..self.pending_len].rotate_left(1);
        self.pending_len -= 1;
        tool
    }

    /// The newest action, for the reason.
    fn last_action(&self) -> Option<(String, String)> {
        self.window.iter().rev().find_map(|i| match &i.ev {
            Ev::Action { tool, args, .. } => {
                // The arguments as the canonical key writes them.
                let args = match &**args {
                    Value::Null => "{}".to_string(),
                    args => super::keys::json(args, KeyStyle::Canonical),
                };
                Some((tool.to_string(), quote(&args, 80)))
            }
            _ => None,
        })
    }

    /// `_check_stuck_or_nudge`, before an LLM call (or at the end).
    fn check(&mut self, index: usize, out: &mut Vec<Detection>) {
        if self.stuck.is_some() {
            return;
        }
        // The whole streak once: over fewer events it is this, capped.
        let full_streak = self.error_streak(WINDOW, None);
        let streak = full_streak.min(self.t.action_error + 1);
        let newest_error = (self.observations.len() > 0)
            .then(|| self.observations.newest(0))
            .filter(|o| o.error)
            .map(|o| o.seq);
        if streak == self.t.action_error && newest_error.is_some() && newest_error != self.nudged {
            let mut events = Vec::new();
            self.error_streak(self.t.action_error + 1, Some(&mut events));
            self.nudged = newest_error;
            events.sort_unstable();
            let (tool, args) = self.last_action().unwrap_or_default();
            let error = self.window.iter().rev().find_map(|i| match &i.ev {
                Ev::Error { error } => Some(quote(error, 80)),
                _ => None,
            });
            let mut d = Detection::new(NUDGE, index, Channel::Tools, None);
            d.repeats = Some(streak);
            d.threshold = Some(self.t.action_error);
            d.events = events;
            d.evidence = Evidence::Calls;
            d.repeated = Some(format!("{tool} {args}"));
            d.reason = format!(
                "nudge: \"You've called `{tool}` with the same arguments {streak} times in a row and gotten the same error each time: {}. Repeating the exact same call again will not work\" — {streak} identical calls {args} failed in a row (action_error {}); one more and the run stops as STUCK",
                error.unwrap_or_default().trim_matches('"'),
                self.t.action_error
            );
            self.last_nudge = Some((index, d.reason.clone()));
            self.push_plain(Ev::Environment, index);
            if self.speaks[0] {
                out.push(d);
            }
            return;
        }
        let found = self.is_stuck(full_streak);
        let Some((scenario, events, count, param, threshold)) = found else {
            return;
        };
        let what = match scenario {
            "repeating_action_observation" => format!("the same action got the same observation {count} times"),
            "repeating_action_error" => format!("the same action ended in an error {count} times in a row"),
            "monologue" => format!("{count} agent messages in a row with no action between"),
            _ => format!("two actions and their observations alternated over the last {count}"),
        };
        let last = self.last_action();
        let mut d = Detection::new(STUCK, index, Channel::Tools, None);
        d.repeats = Some(count);
        d.threshold = Some(threshold);
        d.events = events;
        d.evidence = Evidence::Calls;
        d.repeated = last.as_ref().map(|(t, a)| format!("{t} {a}"));
        d.reason = format!(
            "execution_status STUCK (\"Stuck pattern detected\", {scenario}): {what} ({param} {threshold}){}",
            last.map_or(String::new(), |(t, a)| format!("; last action: {t} {a}"))
        );
        self.stuck = Some((index, d.reason.clone()));
        if self.speaks[1] {
            out.push(d);
        }
    }
}

impl Detector for Sdk {
    fn id(&self) -> &'static str {
        STUCK
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let index = obs.index;
        match &obs.event.kind {
            EventKind::Prompt { .. } => {
                // The user's message: the window starts after it, and a new
                // message takes the conversation out of STUCK.
                self.window.clear();
                self.actions.clear();
                self.observations.clear();
                self.in_response = false;
                self.pending_len = 0;
                self.stuck = None;
            }
            EventKind::Request { .. } => {
                self.close_response(index);
                self.check(index, out);
                self.open_response();
            }
            EventKind::Content { text } => {
                if !self.in_response {
                    return;
                }
                self.response.text.push_str(text);
                // Text after the first call still belongs to its thought.
                if let Some(seq) = self.response.first_call {
                    let Some(at) = self.window.iter().rposition(|i| i.seq == seq) else {
                        return;
                    };
                    let item = &mut self.window[at];
                    if let Ev::Action { thought, .. } = &mut item.ev {
                        let mut longer = String::with_capacity(thought.len() + text.len());
                        longer.push_str(thought);
                        longer.push_str(text);
                        *thought = Arc::from(longer);
                    }
                    item.fields = item.ev.field_hashes();
                    item.hash = combine(item.fields);
                    let (ev, hash) = (item.ev.clone(), item.hash);
                    let class = self.class_of(&ev, hash, Some(seq));
                    self.window[at].class = class;
                    if let Some(slot) = self.actions.find_mut(seq) {
                        slot.class = class;
                    }
                }
            }
            EventKind::ToolCall { name, args, id } => {
                // The kept copies of the tool's name and of equal
                // arguments: a repeated call allocates nothing.
                let key_hash = action_hash(name, args);
                let (tool, args) = self.calls.share(
                    key_hash,
                    |(tool, a)| same_text(tool, name) && same_args(a, args),
                    || (Arc::from(name.as_str()), Arc::new(args.clone())),
                );
                let first = self.in_response && {
                    self.response.calls += 1;
                    self.response.calls == 1
                };
                let text = if first { self.response.text.as_str() } else { "" };
                let thought_hash = fold(ACTION, text.as_bytes());
                let thought = self
                    .thoughts
                    .share(thought_hash, |t| same_text(t, text), || Arc::from(text));
                let seq = self.push(
                    Ev::Action {
                        tool: tool.clone(),
                        args,
                        thought,
                    },
                    [key_hash, thought_hash],
                    index,
                );
                if first {
                    self.response.first_call = Some(seq);
                }
                self.add_pending(id.as_deref(), tool);
            }
            EventKind::ToolResult { id, ok, .. } => {
                let tool = self.take_pending(id.as_deref());
                let written;
                let text = match obs.event.compared_output() {
                    None | Some(Value::Null) => "",
                    Some(Value::String(s)) => s.as_str(),
                    Some(v) => {
                        written = super::keys::json(v, super::keys::KeyStyle::Canonical);
                        written.as_str()
                    }
                };
                // A failure the tool returned as output is an observation.
                let returned = obs.event.extra.get(crate::event::ERROR_RETURNED) == Some(&Value::Bool(true));
                if *ok || returned {
                    let hash = fold(OBSERVATION, text.as_bytes());
                    let output = self.outputs.share(hash, |t| same_text(t, text), || Arc::from(text));
                    let tool_hash = fold(OBSERVATION, tool.as_bytes());
                    self.push(Ev::Observation { tool, output }, [tool_hash, hash], index);
                } else {
                    let hash = fold(ERROR, text.as_bytes());
                    let error = self.errors.share(hash, |t| same_text(t, text), || Arc::from(text));
                    self.push(Ev::Error { error }, [hash, 0], index);
                }
            }
            EventKind::Note { .. } => {
                let kind = obs.event.extra.get("kind").and_then(Value::as_str);
                if matches!(kind, Some("compaction" | "condensation")) {
                    self.push_plain(Ev::Condensation, index);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, index: usize, out: &mut Vec<Detection>) {
        // The stream ends: one more check, as if the loop went on.
        self.close_response(index);
        self.check(index, out);
        self.in_response = false;
    }

    fn status(&self, _: &Buffers) -> Status {
        Status::Idle { detail: String::new() }
    }

    fn states(&self, _: &Buffers) -> Vec<DetectorState> {
        let mut v = Vec::new();
        if self.speaks[0] {
            let streak = self.error_streak(self.t.action_error + 1, None);
            v.push(DetectorState {
                id: NUDGE,
                status: match &self.last_nudge {
                    Some((event, reason)) => Status::Fired {
                        event: *event,
                        reason: reason.clone(),
                    },
                    None => Status::Watching {
                        current: streak,
                        threshold: self.t.action_error,
                        detail: format!(
                            "{streak} identical failing calls in a row (nudge at {})",
                            self.t.action_error
                        ),
                    },
                },
            });
        }
        if self.speaks[1] {
            v.push(DetectorState {
                id: STUCK,
                status: match &self.stuck {
                    Some((event, reason)) => Status::Fired {
                        event: *event,
                        reason: reason.clone(),
                    },
                    None => Status::Watching {
                        current: self.window.len(),
                        threshold: WINDOW,
                        detail: format!(
                            "{} of the last {WINDOW} events since the user's message",
                            self.window.len()
                        ),
                    },
                },
            });
        }
        v
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }

    fn kinds(&self) -> Kinds {
        Kinds::ALL
    }
}
