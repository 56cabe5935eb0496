//! Agent guards (the agent-loop document): turn limits, repeated actions
//! and error streaks, counted across the whole prompt.

use std::collections::VecDeque;

use super::keys::KeyStyle;
use super::params::{Default, Kind, ParamSpec, Profile};
use super::periodic::tail_matches;
use super::{
    quote, Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Status,
};
use crate::event::{Channel, EventKind};

pub(crate) static MAX_TURNS: DetectorInfo = DetectorInfo {
    id: "max-turns",
    family: Family::AgentGuard,
    channel: Channel::Turns,
    rule: "more than `max_turns` requests since the last prompt",
    // A turn budget, not a loop: extended runs it only when `--detectors` names it.
    profiles: &[Profile::Seed, Profile::Extended],
    params: &[ParamSpec::new(
        "max_turns",
        Kind::Count { min: 1 },
        Default::Count(100),
        "requests allowed per prompt",
    )],
    group: None,
    build: |p| {
        PromptScoped::boxed(MaxTurns {
            max_turns: p.count("max_turns"),
            requests: Vec::new(),
        })
    },
};

pub(crate) static ACTION_WINDOW: DetectorInfo = DetectorInfo {
    id: "action-window",
    family: Family::AgentGuard,
    channel: Channel::Tools,
    rule: "one action (tool name + canonical arguments) occurs >= `threshold` times among the last `window` actions",
    profiles: &[Profile::Seed],
    params: &[
        ParamSpec::new(
            "window",
            Kind::Count { min: 1 },
            Default::Count(10),
            "recent actions examined",
        ),
        ParamSpec::new(
            "threshold",
            Kind::Count { min: 2 },
            Default::Count(3),
            "occurrences of one action that make a loop",
        ),
    ],
    group: None,
    build: |p| {
        PromptScoped::boxed(ActionWindow {
            window: p.count("window"),
            threshold: p.count("threshold"),
            recent: VecDeque::new(),
        })
    },
};

pub(crate) static ACTION_CYCLE: DetectorInfo = DetectorInfo {
    id: "action-cycle",
    family: Family::AgentGuard,
    channel: Channel::Tools,
    rule: "the last `k` actions equal the `k` before them, in order",
    profiles: &[Profile::Seed],
    params: &[ParamSpec::new(
        "k",
        Kind::Count { min: 1 },
        Default::Count(3),
        "length of the repeated sequence",
    )],
    group: None,
    build: |p| {
        PromptScoped::boxed(ActionCycle {
            k: p.count("k"),
            recent: VecDeque::new(),
        })
    },
};

pub(crate) static ERROR_STREAK: DetectorInfo = DetectorInfo {
    id: "error-streak",
    family: Family::AgentGuard,
    channel: Channel::Tools,
    rule: "`max_consecutive` tool results in a row have ok: false (with `same_step`, the profile extended's \
           default: each of the same call as the first, name and canonical arguments, or with the same output as \
           the first: the same failing step)",
    profiles: &[Profile::Seed, Profile::Extended],
    params: &[
        ParamSpec::new(
            "max_consecutive",
            Kind::Count { min: 1 },
            Default::Count(5),
            "failed results in a row that make a loop",
        ),
        ParamSpec::new(
            "same_step",
            Kind::Flag,
            Default::Flag(false),
            "only failures of the first failing call, or with its output, count: another failure starts a new streak",
        )
        .extended(Default::Flag(true)),
    ],
    group: None,
    build: |p| {
        PromptScoped::boxed(ErrorStreak {
            max_consecutive: p.count("max_consecutive"),
            same_step: p.flag("same_step"),
            streak: Vec::new(),
            calls: VecDeque::new(),
            step: None,
        })
    },
};

pub(crate) static ERROR_TOTAL: DetectorInfo = DetectorInfo {
    id: "error-total",
    family: Family::AgentGuard,
    channel: Channel::Tools,
    rule: "more than `max_total` tool results since the last prompt have ok: false",
    // An error budget, not a loop: extended runs it only when `--detectors` names it.
    profiles: &[Profile::Seed, Profile::Extended],
    params: &[ParamSpec::new(
        "max_total",
        Kind::Count { min: 0 },
        Default::Count(10),
        "failed results allowed per prompt",
    )],
    group: None,
    build: |p| {
        PromptScoped::boxed(ErrorTotal {
            max_total: p.count("max_total"),
            failures: Vec::new(),
        })
    },
};

/// A tool call as the guards see it: its canonical key and where it was.
#[derive(Clone, Debug)]
struct Action {
    key: std::sync::Arc<str>,
    event: usize,
}

fn action(obs: &Observation<'_>) -> Option<Action> {
    match &obs.event.kind {
        EventKind::ToolCall { .. } => Some(Action {
            key: obs.shared_call_key(KeyStyle::Canonical)?.clone(),
            event: obs.index,
        }),
        _ => None,
    }
}

fn failed_result(obs: &Observation<'_>) -> Option<bool> {
    match obs.event.kind {
        EventKind::ToolResult { ok, .. } => Some(!ok),
        _ => None,
    }
}

fn watching(current: usize, threshold: usize, detail: String) -> Status {
    Status::Watching {
        current,
        threshold,
        detail,
    }
}

#[derive(Clone, Debug)]
struct MaxTurns {
    max_turns: usize,
    requests: Vec<usize>,
}

impl Rule for MaxTurns {
    const ID: &'static str = "max-turns";
    const KINDS: Kinds = Kinds::REQUEST;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        if !matches!(obs.event.kind, EventKind::Request { .. }) {
            return None;
        }
        self.requests.push(obs.index);
        let n = self.requests.len();
        if n <= self.max_turns {
            return None;
        }
        let mut d = Detection::new(Self::ID, obs.index, Channel::Turns, None);
        d.repeats = Some(n);
        d.threshold = Some(self.max_turns);
        d.events = self.requests.clone();
        d.reason = format!(
            "{n} requests since the prompt, more than max_turns {}: a turn budget, not a repetition (long work spends it too)",
            self.max_turns
        );
        Some(d)
    }

    fn reset(&mut self) {
        self.requests.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let n = self.requests.len();
        watching(n, self.max_turns, format!("{n} of {} requests", self.max_turns))
    }
}

#[derive(Clone, Debug)]
struct ActionWindow {
    window: usize,
    threshold: usize,
    recent: VecDeque<Action>,
}

impl ActionWindow {
    fn occurrences<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a Action> + 'a {
        self.recent.iter().filter(move |a| &*a.key == key)
    }
}

impl Rule for ActionWindow {
    const ID: &'static str = "action-window";
    const KINDS: Kinds = Kinds::TOOL_CALL;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let act = action(obs)?;
        self.recent.push_back(act.clone());
        if self.recent.len() > self.window {
            self.recent.pop_front();
        }
        let events: Vec<usize> = self.occurrences(&act.key).map(|a| a.event).collect();
        if events.len() < self.threshold {
            return None;
        }
        let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
        d.repeats = Some(events.len());
        d.threshold = Some(self.threshold);
        d.repeated = Some(act.key.to_string());
        d.reason = format!(
            "{} occurs {} times in the last {} actions (threshold {}), events {:?}",
            quote(&act.key, 80),
            events.len(),
            self.recent.len(),
            self.threshold,
            events
        );
        d.events = events;
        d.evidence = Evidence::Calls;
        Some(d)
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let best = self
            .recent
            .iter()
            .map(|a| (self.occurrences(&a.key).count(), a))
            .max_by_key(|(n, a)| (*n, a.event));
        match best {
            Some((n, a)) => watching(
                n,
                self.threshold,
                format!(
                    "{} occurs {n} of {} times in the last {} actions",
                    quote(&a.key, 40),
                    self.threshold,
                    self.recent.len()
                ),
            ),
            None => watching(0, self.threshold, "no action yet".to_string()),
        }
    }
}

#[derive(Clone, Debug)]
struct ActionCycle {
    k: usize,
    recent: VecDeque<Action>,
}

impl ActionCycle {
    fn matches(&self) -> usize {
        let keys: Vec<&str> = self.recent.iter().map(|a| &*a.key).collect();
        tail_matches(&keys, self.k)
    }
}

impl Rule for ActionCycle {
    const ID: &'static str = "action-cycle";
    const KINDS: Kinds = Kinds::TOOL_CALL;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let act = action(obs)?;
        self.recent.push_back(act);
        if self.recent.len() > 2 * self.k {
            self.recent.pop_front();
        }
        if self.matches() < self.k {
            return None;
        }
        let keys: Vec<String> = self.recent.iter().skip(self.k).map(|a| quote(&a.key, 40)).collect();
        let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
        d.period = Some(self.k);
        d.matches = Some(self.k);
        d.threshold = Some(self.k);
        d.events = self.recent.iter().map(|a| a.event).collect();
        d.evidence = Evidence::Calls;
        d.repeated = Some(
            self.recent
                .iter()
                .skip(self.k)
                .map(|a| a.key.clone())
                .collect::<Vec<_>>()
                .join(" -> "),
        );
        d.reason = format!(
            "the last {} actions repeat the {} before them: {}",
            self.k,
            self.k,
            keys.join(" -> ")
        );
        Some(d)
    }

    fn reset(&mut self) {
        self.recent.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let m = self.matches();
        watching(
            m,
            self.k,
            format!("{m} of the last {} actions equal the one {} before", self.k, self.k),
        )
    }
}

/// The guards that count a budget (turns, failures) rather than a
/// repetition: their count is a use of the budget, not copies of anything.
pub const BUDGETS: [&str; 2] = [MAX_TURNS.id, ERROR_TOTAL.id];

#[derive(Clone, Debug)]
struct ErrorStreak {
    max_consecutive: usize,
    /// Only failures of one call make a streak (a loop, not bad luck).
    same_step: bool,
    streak: Vec<usize>,
    /// With `same_step`: calls waiting for their result (id, key), and the
    /// key of the call the streak is about.
    calls: VecDeque<(Option<String>, Option<std::sync::Arc<str>>)>,
    /// The streak's first failure: its call's key and its output.
    step: Option<(Option<std::sync::Arc<str>>, Option<serde_json::Value>)>,
}

impl ErrorStreak {
    /// The key of the call a result answers (by id, else the oldest waiting).
    fn answered(&mut self, obs: &Observation<'_>) -> Option<std::sync::Arc<str>> {
        let id = match &obs.event.kind {
            EventKind::ToolResult { id, .. } => id.clone(),
            _ => None,
        };
        let at = id
            .as_ref()
            .and_then(|id| self.calls.iter().position(|(c, _)| c.as_ref() == Some(id)))
            .or(if self.calls.is_empty() { None } else { Some(0) })?;
        self.calls.remove(at).and_then(|(_, key)| key)
    }
}

impl Rule for ErrorStreak {
    const ID: &'static str = "error-streak";
    const KINDS: Kinds = Kinds::TOOL_CALL.and(Kinds::TOOL_RESULT);

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        if let EventKind::ToolCall { id, .. } = &obs.event.kind {
            if self.same_step {
                self.calls
                    .push_back((id.clone(), obs.shared_call_key(KeyStyle::Canonical).cloned()));
                if self.calls.len() > 64 {
                    self.calls.pop_front();
                }
            }
            return None;
        }
        let failed = failed_result(obs)?;
        if self.same_step {
            let key = self.answered(obs);
            if !failed {
                self.streak.clear();
                self.step = None;
                return None;
            }
            // The same call failing again, or another call failing the same
            // way (`createdb`, `psql -c 'CREATE DATABASE'`, … each "could not
            // connect to server"): the same failing step. Anything else
            // starts a new streak, about it.
            let output = obs.event.compared_output().cloned();
            let same = match &self.step {
                Some((k, o)) => (key.is_some() && *k == key) || (output.is_some() && *o == output),
                None => false,
            };
            if !same {
                self.streak.clear();
                self.step = Some((key, output));
            }
        } else if !failed {
            self.streak.clear();
            return None;
        }
        self.streak.push(obs.index);
        if self.streak.len() < self.max_consecutive {
            return None;
        }
        let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
        d.repeats = Some(self.streak.len());
        d.threshold = Some(self.max_consecutive);
        d.events = self.streak.clone();
        d.evidence = Evidence::Calls;
        d.reason = if self.same_step {
            format!(
                "{} tool results in a row failed, each the same call or the same error (max_consecutive {}), events {}..{}",
                self.streak.len(),
                self.max_consecutive,
                self.streak[0],
                obs.index
            )
        } else {
            format!(
                "{} tool results in a row failed (max_consecutive {}), events {}..{}, whichever calls they answered",
                self.streak.len(),
                self.max_consecutive,
                self.streak[0],
                obs.index
            )
        };
        Some(d)
    }

    fn reset(&mut self) {
        self.streak.clear();
        self.calls.clear();
        self.step = None;
    }

    fn progress(&self, _: &Buffers) -> Status {
        let n = self.streak.len();
        watching(
            n,
            self.max_consecutive,
            format!("{n} of {} failed results in a row", self.max_consecutive),
        )
    }
}

#[derive(Clone, Debug)]
struct ErrorTotal {
    max_total: usize,
    failures: Vec<usize>,
}

impl Rule for ErrorTotal {
    const ID: &'static str = "error-total";
    const KINDS: Kinds = Kinds::TOOL_RESULT;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        if !failed_result(obs)? {
            return None;
        }
        self.failures.push(obs.index);
        let n = self.failures.len();
        if n <= self.max_total {
            return None;
        }
        let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
        d.repeats = Some(n);
        d.threshold = Some(self.max_total);
        d.events = self.failures.clone();
        d.evidence = Evidence::Calls;
        d.reason = format!(
            "{n} tool results failed since the prompt, more than max_total {}: an error budget, whatever failed \
             (debugging that fixes one failure after another spends it too)",
            self.max_total
        );
        Some(d)
    }

    fn reset(&mut self) {
        self.failures.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let n = self.failures.len();
        watching(
            n,
            self.max_total,
            format!("{n} failed results, {} allowed", self.max_total),
        )
    }
}

#[cfg(test)]
mod tests;
