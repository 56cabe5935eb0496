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

/// `MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION`.
mod window;

use window::{event_eq, Ev, Item, Picks};

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

/// The response being streamed: its text, and where its first call sits.
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

#[derive(Clone)]
struct Sdk {
    t: Thresholds,
    /// Which members speak (nudge, stuck).
    speaks: [bool; 2],
    /// The last 20 events of the log since the user's message.
    window: VecDeque<Item>,
    seq: u64,
    /// Equality classes handed out.
    classes: u64,
    response: Option<Response>,
    /// Calls waiting for a result: id and tool name.
    pending: Vec<(Option<String>, Arc<str>)>,
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
            seq: 0,
            classes: 0,
            response: None,
            pending: Vec::new(),
            nudged: None,
            stuck: None,
            last_nudge: None,
        }
    }

    fn push(&mut self, ev: Ev, event: usize) -> u64 {
        self.seq += 1;
        let hash = ev.hash();
        let class = self.class_of(&ev, hash, None);
        self.window.push_back(Item {
            ev,
            class,
            hash,
            event,
            seq: self.seq,
        });
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        self.seq
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

    /// `text` as an Arc: the window's copy when one of its events (as
    /// `field` picks) holds the same text, so a loop repeating one call and
    /// one output allocates nothing for them.
    fn shared(window: &VecDeque<Item>, text: &str, field: impl Fn(&Ev) -> Option<&Arc<str>>) -> Arc<str> {
        window
            .iter()
            .rev()
            .filter_map(|i| field(&i.ev))
            .find(|a| ***a == *text)
            .cloned()
            .unwrap_or_else(|| Arc::from(text))
    }

    /// The response is complete: one without a call is the agent's message.
    fn close_response(&mut self, index: usize) {
        if let Some(r) = self.response.take() {
            if r.calls == 0 && !r.text.is_empty() {
                self.push(Ev::Agent, index);
            }
        }
    }

    /// Newest first, all the window's actions and all its observations
    /// (observations and errors), each list on its own (no allocation:
    /// the window holds 20). The SDK's "last n actions" are the first n of
    /// these, so one pass serves every scenario of a check.
    fn newest(&self) -> (Picks<'_>, Picks<'_>) {
        let (mut actions, mut observations) = (Picks::new(&self.window), Picks::new(&self.window));
        for item in self.window.iter().rev() {
            if item.ev.is_action() {
                actions.push(item);
            } else if item.ev.is_observation() {
                observations.push(item);
            }
        }
        (actions, observations)
    }

    /// `_action_error_streak` over lists of at most `n` (of `newest`), with
    /// the events of the streak when `events` asks for them.
    fn error_streak(picks: &(Picks<'_>, Picks<'_>), n: usize, mut events: Option<&mut Vec<usize>>) -> usize {
        let (actions, observations) = (&picks.0[..picks.0.len().min(n)], &picks.1[..picks.1.len().min(n)]);
        let Some(first) = actions.first() else {
            return 0;
        };
        let mut streak = 0;
        for (a, o) in actions.iter().zip(observations.iter()) {
            if a.class == first.class && matches!(o.ev, Ev::Error { .. }) {
                streak += 1;
                if let Some(ev) = events.as_deref_mut() {
                    ev.push(a.event);
                    ev.push(o.event);
                }
            } else {
                break;
            }
        }
        streak
    }

    /// `is_stuck`: the scenario, the events involved, the count and the
    /// threshold it reached, and the parameter that decides it.
    fn is_stuck(
        &self,
        picks: &(Picks<'_>, Picks<'_>),
    ) -> Option<(&'static str, Vec<usize>, usize, &'static str, usize)> {
        let t = self.t;
        let events = &self.window;
        if events.len() < t.action_observation.min(t.action_error).min(t.monologue) {
            return None;
        }
        let max_needed = t.action_observation.max(t.action_error + 1);
        let (actions, observations) = (&picks.0[..], &picks.1[..]);
        let involved = |a: &[&Item], o: &[&Item]| {
            let mut v: Vec<usize> = a.iter().chain(o).map(|i| i.event).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // 1. the same action with the same observation.
        let n = t.action_observation;
        if actions.len() >= n
            && observations.len() >= n
            && actions[..n].iter().all(|a| a.class == actions[0].class)
            && observations[..n].iter().all(|o| o.class == observations[0].class)
        {
            let ev = involved(&actions[..n], &observations[..n]);
            return Some(("repeating_action_observation", ev, n, "action_observation", n));
        }
        // 2. the same action failing, more than action_error times.
        let streak = Self::error_streak(picks, max_needed, None);
        if streak > t.action_error {
            let mut ev = Vec::new();
            Self::error_streak(picks, max_needed, Some(&mut ev));
            ev.sort_unstable();
            return Some(("repeating_action_error", ev, streak, "action_error", t.action_error));
        }
        // 3. a monologue: agent messages, passing over environment messages.
        let mut count = 0;
        let mut ev = Vec::new();
        for item in events.iter().rev() {
            match item.ev {
                Ev::Agent => {
                    count += 1;
                    ev.push(item.event);
                }
                Ev::Environment => {}
                _ => break,
            }
        }
        if count >= t.monologue {
            ev.reverse();
            return Some(("monologue", ev, count, "monologue", t.monologue));
        }
        // 4. an A/B pattern.
        let n = t.alternating;
        if events.len() >= n {
            let (actions, observations) = (&picks.0[..picks.0.len().min(n)], &picks.1[..picks.1.len().min(n)]);
            let ab = |x: &[&Item]| x.len() >= n && (0..n.saturating_sub(2)).all(|i| x[i].class == x[i + 2].class);
            if ab(actions) && ab(observations) {
                let ev = involved(actions, observations);
                return Some(("alternating_pattern", ev, n, "alternating_pattern", n));
            }
        }
        None
    }

    /// The newest action, for the reason.
    fn last_action(&self) -> Option<(String, String)> {
        self.window.iter().rev().find_map(|i| match &i.ev {
            Ev::Action { key, tool, .. } => {
                let args = key.get(tool.len() + 1..).unwrap_or_default();
                Some((tool.to_string(), quote(args, 80)))
            }
            _ => None,
        })
    }

    /// `_check_stuck_or_nudge`, before an LLM call (or at the end).
    fn check(&mut self, index: usize, out: &mut Vec<Detection>) {
        if self.stuck.is_some() {
            return;
        }
        let picks = self.newest();
        let streak = Self::error_streak(&picks, self.t.action_error + 1, None);
        let newest_error = self
            .window
            .iter()
            .rev()
            .find(|i| i.ev.is_observation())
            .filter(|i| matches!(i.ev, Ev::Error { .. }))
            .map(|i| i.seq);
        if streak == self.t.action_error && newest_error.is_some() && newest_error != self.nudged {
            let mut events = Vec::new();
            Self::error_streak(&picks, self.t.action_error + 1, Some(&mut events));
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
            self.push(Ev::Environment, index);
            if self.speaks[0] {
                out.push(d);
            }
            return;
        }
        let found = self.is_stuck(&picks);
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
                self.response = None;
                self.pending.clear();
                self.stuck = None;
            }
            EventKind::Request { .. } => {
                self.close_response(index);
                self.check(index, out);
                self.response = Some(Response::default());
            }
            EventKind::Content { text } => {
                let Some(r) = self.response.as_mut() else { return };
                r.text.push_str(text);
                // Text after the first call still belongs to its thought.
                if let Some(seq) = r.first_call {
                    let Some(at) = self.window.iter().rposition(|i| i.seq == seq) else {
                        return;
                    };
                    let item = &mut self.window[at];
                    if let Ev::Action { thought, .. } = &mut item.ev {
                        *thought = Arc::from(format!("{thought}{text}"));
                    }
                    item.hash = item.ev.hash();
                    let (ev, hash) = (item.ev.clone(), item.hash);
                    self.window[at].class = self.class_of(&ev, hash, Some(seq));
                }
            }
            EventKind::ToolCall { name, args, id } => {
                // Arguments in the canonical key (no arguments are `{}`).
                let key = match args {
                    Value::Null => Arc::from(format!("{name}:{{}}")),
                    _ => obs
                        .shared_call_key(KeyStyle::Canonical)
                        .cloned()
                        .unwrap_or_else(|| Arc::from(name.as_str())),
                };
                let tool = Self::shared(&self.window, name, |ev| match ev {
                    Ev::Action { tool, .. } | Ev::Observation { tool, .. } => Some(tool),
                    _ => None,
                });
                let first = self.response.as_mut().is_some_and(|r| {
                    r.calls += 1;
                    r.calls == 1
                });
                let text = match &self.response {
                    Some(r) if first => r.text.as_str(),
                    _ => "",
                };
                let thought = Self::shared(&self.window, text, |ev| match ev {
                    Ev::Action { thought, .. } => Some(thought),
                    _ => None,
                });
                let seq = self.push(
                    Ev::Action {
                        key,
                        tool: tool.clone(),
                        thought,
                    },
                    index,
                );
                if let (true, Some(r)) = (first, self.response.as_mut()) {
                    r.first_call = Some(seq);
                }
                self.pending.push((id.clone(), tool));
            }
            EventKind::ToolResult { id, ok, .. } => {
                let at = self
                    .pending
                    .iter()
                    .position(|p| id.is_some() && p.0 == *id)
                    .or(if self.pending.is_empty() { None } else { Some(0) });
                let tool = at.map_or_else(|| Arc::from(""), |i| self.pending.remove(i).1);
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
                let ev = if *ok || returned {
                    let output = Self::shared(&self.window, text, |ev| match ev {
                        Ev::Observation { output, .. } => Some(output),
                        _ => None,
                    });
                    Ev::Observation { tool, output }
                } else {
                    let error = Self::shared(&self.window, text, |ev| match ev {
                        Ev::Error { error } => Some(error),
                        _ => None,
                    });
                    Ev::Error { error }
                };
                self.push(ev, index);
            }
            EventKind::Note { .. } => {
                let kind = obs.event.extra.get("kind").and_then(Value::as_str);
                if matches!(kind, Some("compaction" | "condensation")) {
                    self.push(Ev::Condensation, index);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, index: usize, out: &mut Vec<Detection>) {
        // The stream ends: one more check, as if the loop went on.
        self.close_response(index);
        self.check(index, out);
        self.response = None;
    }

    fn status(&self, _: &Buffers) -> Status {
        Status::Idle { detail: String::new() }
    }

    fn states(&self, _: &Buffers) -> Vec<DetectorState> {
        let mut v = Vec::new();
        if self.speaks[0] {
            let streak = Self::error_streak(&self.newest(), self.t.action_error + 1, None);
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
