//! `tool-repeat`: the same tool call (or the same short cycle of calls)
//! over and over — gemini-cli's CONSECUTIVE_IDENTICAL_TOOL_CALLS.

use serde_json::Value;

use super::keys::KeyStyle;
use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::periodic::tail_matches;
use super::{
    quote, Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Status,
};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "tool-repeat",
    family: Family::ContentStream,
    channel: Channel::Tools,
    rule: "the last `threshold`*k tool calls are the last k calls repeated `threshold` times, \
           for some cycle length k <= `max_cycle`",
    profiles: &[Profile::Seed, Profile::GeminiCli],
    params: &[
        ParamSpec::new(
            "threshold",
            Kind::Count { min: 2 },
            Default::Count(5),
            "repeats of the call (or cycle) that make a loop",
        ),
        ParamSpec::new(
            "max_cycle",
            Kind::Count { min: 1 },
            Default::Count(1),
            "longest cycle of calls tried (1 = identical consecutive calls only)",
        )
        .gemini(Default::Count(5)),
        ParamSpec::new(
            "key",
            Kind::Choice(&["canonical", "js"]),
            Default::Word("canonical"),
            "canonical: object keys sorted; js: JSON.stringify order, name trimmed",
        )
        .gemini(Default::Word("js")),
        ParamSpec::new(
            "shared_latch",
            Kind::Flag,
            Default::Flag(false),
            "stop together with chunk-chant when either fires (one gemini-cli service)",
        )
        .gemini(Default::Flag(true)),
    ],
    group: None,
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    PromptScoped::boxed(ToolRepeat {
        threshold: p.count("threshold"),
        max_cycle: p.count("max_cycle"),
        style: KeyStyle::from_word(p.word("key")),
        shared_latch: p.flag("shared_latch"),
        calls: Vec::new(),
    })
}

#[derive(Clone, Debug)]
struct Call {
    key: std::sync::Arc<str>,
    event: usize,
    name: String,
    args: Value,
}

#[derive(Clone, Debug)]
pub(crate) struct ToolRepeat {
    threshold: usize,
    max_cycle: usize,
    style: KeyStyle,
    shared_latch: bool,
    /// Recent calls; only the last `threshold * max_cycle` matter.
    calls: Vec<Call>,
}

impl ToolRepeat {
    fn keep(&self) -> usize {
        self.threshold * self.max_cycle
    }

    fn recent(&self) -> &[Call] {
        &self.calls[self.calls.len().saturating_sub(self.keep())..]
    }

    /// For each cycle length, how many whole times the last k calls repeat at the end.
    fn repeats(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let recent = self.recent();
        let keys: Vec<&str> = recent.iter().map(|c| &*c.key).collect();
        (1..=self.max_cycle.min(keys.len())).map(move |k| (k, 1 + tail_matches(&keys, k) / k))
    }
}

impl Rule for ToolRepeat {
    const ID: &'static str = "tool-repeat";
    const KINDS: Kinds = Kinds::TOOL_CALL;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let EventKind::ToolCall { name, args, .. } = &obs.event.kind else {
            return None;
        };
        self.calls.push(Call {
            key: obs.shared_call_key(self.style).cloned().unwrap_or_else(|| "".into()),
            event: obs.index,
            name: name.clone(),
            args: args.clone(),
        });
        if self.calls.len() > 2 * self.keep() {
            let drop = self.calls.len() - self.keep();
            self.calls.drain(..drop);
        }
        let (k, _) = self
            .repeats()
            .find(|&(k, reps)| reps >= self.threshold && self.recent().len() >= self.threshold * k)?;
        let run = &self.calls[self.calls.len() - self.threshold * k..];
        let cycle = &run[run.len() - k..];
        let show = |c: &Call| format!("{} {}", c.name, quote(&c.args.to_string(), 60));
        let mut d = Detection::new(INFO.id, obs.index, Channel::Tools, None);
        d.period = Some(k);
        d.repeats = Some(self.threshold);
        d.threshold = Some(self.threshold);
        d.events = run.iter().map(|c| c.event).collect();
        d.evidence = Evidence::Calls;
        d.repeated = Some(cycle.iter().map(|c| c.key.clone()).collect::<Vec<_>>().join(" -> "));
        d.reason = if k == 1 {
            format!(
                "{} called {} times in a row with the same arguments (threshold {}), events {}..{}",
                show(&cycle[0]),
                self.threshold,
                self.threshold,
                run[0].event,
                obs.index
            )
        } else {
            let names: Vec<String> = cycle.iter().map(show).collect();
            format!(
                "a cycle of {k} calls ({}) repeated {} times in a row (threshold {}), events {}..{}",
                names.join(" -> "),
                self.threshold,
                self.threshold,
                run[0].event,
                obs.index
            )
        };
        Some(d)
    }

    fn reset(&mut self) {
        self.calls.clear();
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let best = self.repeats().max_by_key(|&(k, reps)| (reps, std::cmp::Reverse(k)));
        let (current, detail) = match best {
            None => (0, "no tool call yet".to_string()),
            Some((1, reps)) => (reps, format!("{reps} of {} identical calls in a row", self.threshold)),
            Some((k, reps)) => (
                reps,
                format!("a cycle of {k} calls: {reps} of {} repeats", self.threshold),
            ),
        };
        Status::Watching {
            current,
            threshold: self.threshold,
            detail,
        }
    }

    fn shares_latch(&self) -> bool {
        self.shared_latch
    }

    fn compact(&mut self, stopped: bool) {
        // Only the last `keep` calls can be part of a repeat; none once it fired.
        let keep = if stopped { 0 } else { self.keep() };
        let drop = self.calls.len().saturating_sub(keep);
        self.calls.drain(..drop);
        self.calls.shrink_to_fit();
    }
}
