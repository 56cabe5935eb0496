//! `tool-loop` (profile `extended`): tool calls that repeat *without
//! progress*. A step is a call and its result; two steps are the same when
//! the action (name and canonical arguments) and the result (ok and output)
//! both match. A loop is either
//!
//! - a step seen `repeats` times in a stretch where nothing new happened:
//!   every step since the first of those occurrences has been seen at least
//!   twice in that stretch (identical calls with identical results, cycles
//!   of up to `window` steps such as A B A B A, the same failing call),
//!   the agent's own plan and thoughts aside (a cycle re-planned in other
//!   words each time, `update_plan` then the same `git status` and `git
//!   push` with the same answers, is still the same cycle); or
//! - a step seen `rereads` times with the same result while the steps
//!   between them, new or not, changed nothing (A B A C A D A: a plan file
//!   re-read before every step; the recurrence is the loop, not the new
//!   calls around it).
//!
//! Polling whose output changes, batches over different files, and a
//! failing test re-run after *different* edits (each edit a change: that is
//! debugging) do not fire.

use std::collections::HashMap;

use call::Call;
use step_key::{step_key, StepKey};

use serde_json::Value;

use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Status};
use crate::event::{Channel, EventKind};

mod call;
mod changes;
mod step_key;

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "tool-loop",
    family: Family::Continuous,
    channel: Channel::Tools,
    rule: "a tool step (call and result: same name, canonical arguments, ok and output) occurs `repeats` times \
           within the last `window` steps, and every step since its first occurrence there occurs at least twice \
           (nothing new happened in between; the agent's own plan or thought tools, `update_plan`, `TodoWrite`, \
           `think`, count as nothing new); or it occurs `rereads` times there and no step in between changed \
           anything (an edit, a write, a shell command that writes; a plan is no change)",
    profiles: &[Profile::Extended],
    params: &[
        ParamSpec::new(
            "repeats",
            Kind::Count { min: 2 },
            Default::Count(3),
            "occurrences of the same step that make a loop",
        ),
        ParamSpec::new(
            "rereads",
            Kind::Count { min: 2 },
            Default::Count(4),
            "occurrences of the same step, with other steps between that change nothing, that make a loop",
        ),
        ParamSpec::new(
            "window",
            Kind::Count { min: 2 },
            Default::Count(30),
            "recent steps looked at (a cycle of up to window/3 steps is found)",
        ),
    ],
    group: None,
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    PromptScoped::boxed(ToolLoop {
        repeats: p.count("repeats"),
        rereads: p.count("rereads"),
        window: p.count("window"),
        steps: Vec::new(),
        pending: Vec::new(),
        best: (0, 0),
    })
}

/// A finished step.
#[derive(Clone, Debug)]
struct Step {
    /// Action and result, as one comparable key.
    key: StepKey,
    call: Call,
    /// Events of the call and of its result.
    call_event: usize,
    result_event: Option<usize>,
    ok: bool,
    /// It may have changed what another step would see (an edit or write
    /// that succeeded): judged when first asked (most steps never are).
    change: Option<bool>,
    /// It only keeps the agent's plan or thoughts (`update_plan`,
    /// `TodoWrite`, `think`): new wording there is nothing new done.
    bookkeeping: bool,
}

/// A call waiting for its result.
#[derive(Clone, Debug)]
struct Pending {
    /// The call's id, hashed (XXH3-128): it is only ever compared.
    id: Option<u128>,
    call: Call,
    event: usize,
}

fn id_hash(id: &str) -> u128 {
    twox_hash::XxHash3_128::oneshot(id.as_bytes())
}

#[derive(Clone, Debug)]
pub(crate) struct ToolLoop {
    repeats: usize,
    rereads: usize,
    window: usize,
    steps: Vec<Step>,
    pending: Vec<Pending>,
    /// The most occurrences of one step in a stretch without progress so
    /// far, and the occurrences that rule needs.
    best: (usize, usize),
}

impl ToolLoop {
    fn finish(
        &mut self,
        call: Pending,
        result: Option<(usize, bool, Option<&Value>)>,
        obs: &Observation<'_>,
    ) -> Option<Detection> {
        let (result_event, ok, output) = match result {
            Some((e, ok, out)) => (Some(e), ok, out),
            None => (None, true, None),
        };
        self.steps.push(Step {
            key: step_key(call.call.key(), ok, output),
            change: None,
            bookkeeping: call.call.bookkeeping(),
            call: call.call,
            call_event: call.event,
            result_event,
            ok,
        });
        if self.steps.len() > 2 * self.window {
            let drop = self.steps.len() - self.window;
            self.steps.drain(..drop);
        }
        self.check(obs)
    }

    /// Whether the newest step closes a loop.
    fn check(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let recent = &self.steps[self.steps.len().saturating_sub(self.window)..];
        let last = recent.last()?;
        // Most steps are new: nothing to gather.
        if !recent[..recent.len() - 1].iter().any(|s| s.key == last.key) {
            return None;
        }
        let at: Vec<usize> = (0..recent.len()).filter(|&i| recent[i].key == last.key).collect();
        if at.len() < 2 {
            return None;
        }
        // The longest stretch ending now, from an occurrence of this step,
        // in which every step occurs at least twice (a plan or thought
        // written in between, said once or not, is no new step: the
        // wording of a plan changes nothing the other steps see).
        for (k, &from) in at.iter().enumerate() {
            let stretch = &recent[from..];
            let mut counts: HashMap<StepKey, usize> = HashMap::new();
            for s in stretch.iter().filter(|s| !s.bookkeeping || s.key == last.key) {
                *counts.entry(s.key).or_default() += 1;
            }
            if counts.values().all(|&n| n >= 2) {
                let occurrences = at.len() - k;
                self.best = closer(self.best, (occurrences, self.repeats));
                if occurrences >= self.repeats {
                    return Some(self.cycle(obs, from, occurrences, counts.len()));
                }
                break;
            }
        }
        if at.len() < self.rereads {
            self.best = closer(self.best, (at.len(), self.rereads));
            return None;
        }
        // The occurrences of this step since the last other step that changed something.
        let (first, key) = (self.steps.len().saturating_sub(self.window), last.key);
        let mut again = Vec::new();
        for i in (first..self.steps.len()).rev() {
            let s = &mut self.steps[i];
            if s.key == key {
                again.push(i - first);
            } else if *s.change.get_or_insert_with(|| s.ok && s.call.changes()) {
                break;
            }
        }
        again.reverse();
        self.best = closer(self.best, (again.len(), self.rereads));
        (again.len() >= self.rereads).then(|| self.reread(obs, &again))
    }

    /// The detection of a stretch where every step repeats.
    fn cycle(&self, obs: &Observation<'_>, from: usize, occurrences: usize, distinct: usize) -> Detection {
        let recent = &self.steps[self.steps.len().saturating_sub(self.window)..];
        let stretch = &recent[from..];
        let mut d = Detection::new(INFO.id, obs.index, Channel::Tools, None);
        d.repeats = Some(occurrences);
        d.threshold = Some(self.repeats);
        d.period = Some(distinct);
        d.onset = Some(stretch[0].call_event);
        d.evidence = Evidence::Calls;
        d.events = stretch
            .iter()
            .flat_map(|s| std::iter::once(s.call_event).chain(s.result_event))
            .collect();
        let last = stretch.last().expect("a stretch has the step");
        d.repeated = Some(last.call.show());
        let outcome = outcome(last);
        // Plans and thoughts written in between (not the repeated step itself).
        let plans = stretch.iter().filter(|s| s.bookkeeping && s.key != last.key).count();
        let aside = match plans {
            0 => String::new(),
            1 => " (1 plan or thought rewritten between, nothing done)".to_string(),
            n => format!(" ({n} plans or thoughts rewritten between, nothing done)"),
        };
        d.reason = if distinct == 1 {
            format!(
                "{} ran {occurrences} times with {outcome} each time (needs {}), nothing else in between{aside}, from \
                 event {}",
                last.call.show(),
                self.repeats,
                stretch[0].call_event
            )
        } else {
            let mut names: Vec<String> = Vec::new();
            for s in stretch.iter().filter(|s| !s.bookkeeping || s.key == last.key) {
                let n = s.call.show();
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            format!(
                "{distinct} steps ({}) keep repeating with the same results: {} ran {occurrences} times (needs {}), \
                 nothing new in between{aside}, from event {}",
                names.join(", "),
                last.call.show(),
                self.repeats,
                stretch[0].call_event
            )
        };
        d
    }

    /// The detection of a step re-run between steps that changed nothing
    /// (`at`: its indexes among the recent steps, oldest first).
    fn reread(&self, obs: &Observation<'_>, at: &[usize]) -> Detection {
        let recent = &self.steps[self.steps.len().saturating_sub(self.window)..];
        let (first, last) = (&recent[at[0]], &recent[at[at.len() - 1]]);
        let between = at[at.len() - 1] - at[0] + 1 - at.len();
        let mut d = Detection::new(INFO.id, obs.index, Channel::Tools, None);
        d.repeats = Some(at.len());
        d.threshold = Some(self.rereads);
        // Steps from one occurrence to the next, on average (rounded).
        d.period = Some((at[at.len() - 1] - at[0] + (at.len() - 1) / 2) / (at.len() - 1));
        d.onset = Some(first.call_event);
        d.evidence = Evidence::Calls;
        d.events = at
            .iter()
            .flat_map(|&i| std::iter::once(recent[i].call_event).chain(recent[i].result_event))
            .collect();
        d.repeated = Some(last.call.show());
        d.reason = format!(
            "{} ran {} times with {} each time (needs {}), and the {between} other steps between changed nothing, \
             from event {}",
            last.call.show(),
            at.len(),
            outcome(last),
            self.rereads,
            first.call_event
        );
        d
    }
}

/// Of two (occurrences, needed) pairs, the one nearer its threshold.
fn closer(a: (usize, usize), b: (usize, usize)) -> (usize, usize) {
    if a.1 == 0 || b.0 * a.1 > a.0 * b.1 {
        b
    } else {
        a
    }
}

fn outcome(s: &Step) -> &'static str {
    match (s.result_event, s.ok) {
        (None, _) => "no result recorded",
        (Some(_), true) => "the same result",
        (Some(_), false) => "the same error",
    }
}

impl Rule for ToolLoop {
    const ID: &'static str = "tool-loop";
    const KINDS: Kinds = Kinds::TOOL_TURNS;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::ToolCall { name, args, id } => {
                // A call still waiting when the next comes got no result.
                let mut fired = None;
                if let Some(open) = self.pending.iter().position(|p| p.id.is_none()) {
                    let call = self.pending.remove(open);
                    fired = self.finish(call, None, obs);
                }
                self.pending.push(Pending {
                    id: id.as_deref().map(id_hash),
                    call: Call::of(obs, name, args),
                    event: obs.index,
                });
                if self.pending.len() > 64 {
                    self.pending.remove(0);
                }
                fired
            }
            // A new model request: calls still waiting got no result (API
            // streams record calls only), so they are steps as they stand.
            EventKind::Request { .. } => {
                let mut fired = None;
                for call in std::mem::take(&mut self.pending) {
                    if fired.is_none() {
                        fired = self.finish(call, None, obs);
                    }
                }
                fired
            }
            EventKind::ToolResult { id, ok, .. } => {
                let output = obs.event.compared_output();
                let at = match id {
                    Some(id) => {
                        let id = id_hash(id);
                        self.pending.iter().position(|p| p.id == Some(id))
                    }
                    None => self.pending.len().checked_sub(1),
                }
                .or_else(|| self.pending.len().checked_sub(1))?;
                let call = self.pending.remove(at);
                self.finish(call, Some((obs.index, *ok, output)), obs)
            }
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.steps.clear();
        self.pending.clear();
        self.best = (0, 0);
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let (current, threshold) = if self.best.1 == 0 { (0, self.repeats) } else { self.best };
        Status::Watching {
            current,
            threshold,
            detail: if current < 2 {
                "no step repeated without progress".to_string()
            } else {
                format!("a step repeated {current} of {threshold} times with nothing new in between")
            },
        }
    }
}
