//! `llm-judge`: gemini-cli's third layer (commit 5411f113), which asks a
//! model from turn 30 of a prompt on whether the conversation is stuck and
//! adapts how often it asks. Detectors do no I/O: this one replays the
//! verdicts recorded in the stream (`loop_check` events) at the turns where
//! they were recorded, whatever its own schedule would have asked — a
//! recorded check moves the schedule to it — and says when a verdict falls
//! on a turn its schedule would not have checked. `loopscope judge` (and
//! `--judge live`) asks a real endpoint and inserts the verdicts, with the
//! same [`Schedule`]; a first verdict that no double check followed (none
//! was configured) says so (`"double_check": false`), and replays as
//! deciding alone, as it did live.

use super::params::{Default, Kind, ParamSpec, Profile};
use super::{Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Status};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "llm-judge",
    family: Family::ContentStream,
    channel: Channel::Turns,
    rule: "from turn `after_turns` of a prompt, every `interval` turns (starting at `initial_interval`, then interval_min + (interval_max - interval_min) x (1 - confidence), rounded), a model judges the last `history` entries; confidence >= `threshold` (> when `strict`), confirmed by the double-check model when `double_check`, is a loop",
    // In extended it runs only when named (it costs calls to a model).
    profiles: &[Profile::Seed, Profile::GeminiCli, Profile::Extended],
    params: &[
        ParamSpec::new("after_turns", Kind::Count { min: 1 }, Default::Count(30), "the turn of the prompt the first check runs at"),
        ParamSpec::new("history", Kind::Count { min: 1 }, Default::Count(20), "conversation entries sent to the judge"),
        ParamSpec::new("threshold", Kind::Fraction, Default::Milli(900), "confidence that makes a loop"),
        ParamSpec::new("strict", Kind::Flag, Default::Flag(true), "a loop needs confidence above the threshold, not at it")
            .gemini(Default::Flag(false)),
        ParamSpec::new("interval_min", Kind::Count { min: 1 }, Default::Count(5), "turns between checks after a confident no"),
        ParamSpec::new("interval_max", Kind::Count { min: 1 }, Default::Count(15), "turns between checks after a no with confidence 0"),
        ParamSpec::new("initial_interval", Kind::Count { min: 1 }, Default::Count(3), "turns between checks before any verdict")
            .gemini(Default::Count(10)),
        ParamSpec::new("double_check", Kind::Flag, Default::Flag(false), "a second model confirms a loop")
            .gemini(Default::Flag(true)),
        ParamSpec::new(
            "shared_latch",
            Kind::Flag,
            Default::Flag(false),
            "stop together with tool-repeat and chunk-chant (one gemini-cli service)",
        )
        .gemini(Default::Flag(true)),
    ],
    group: None,
    build: |p| {
        PromptScoped::boxed(Judge {
            schedule: Schedule::new(&JudgeParams::from(p)),
            shared_latch: p.flag("shared_latch"),
            pending: None,
            due: None,
            last: Vec::new(),
        })
    },
};

/// The judge's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JudgeParams {
    /// Turns before the first check.
    pub after_turns: usize,
    /// History entries sent to the judge.
    pub history: usize,
    /// The confidence a loop verdict needs.
    pub threshold: f64,
    /// Whether the confidence must be strictly above the threshold.
    pub strict: bool,
    /// The shortest interval between checks, in turns.
    pub interval_min: usize,
    /// The longest interval between checks, in turns.
    pub interval_max: usize,
    /// The interval before the first verdict adapts it.
    pub initial_interval: usize,
    /// Whether a second model confirms a loop verdict.
    pub double_check: bool,
}

impl From<&super::Params> for JudgeParams {
    fn from(p: &super::Params) -> JudgeParams {
        JudgeParams {
            after_turns: p.count("after_turns"),
            history: p.count("history"),
            threshold: p.fraction("threshold"),
            strict: p.flag("strict"),
            interval_min: p.count("interval_min"),
            interval_max: p.count("interval_max"),
            initial_interval: p.count("initial_interval"),
            double_check: p.flag("double_check"),
        }
    }
}

/// What a verdict decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// A loop.
    Loop,
    /// Ask the double-check model next.
    DoubleCheck,
    /// Not a loop; the next check comes after the (maybe new) interval.
    NotLoop,
}

/// When the judge asks, and what its answers do to the schedule: turns
/// counted per prompt, the first check at `after_turns`, later ones when
/// `turns - last_check >= interval`.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// The parameters it runs with.
    pub params: JudgeParams,
    /// Turns counted in this prompt.
    pub turns: usize,
    /// The turn of the last check.
    pub last_check: usize,
    /// Turns until the next check.
    pub interval: usize,
}

impl Schedule {
    /// A schedule at the start of a prompt.
    pub fn new(params: &JudgeParams) -> Schedule {
        Schedule {
            params: *params,
            turns: 0,
            last_check: 0,
            interval: params.initial_interval,
        }
    }

    /// A new prompt.
    pub fn reset(&mut self) {
        *self = Schedule::new(&self.params);
    }

    /// A turn starts (a `request`); true when the judge is asked at it.
    pub fn turn(&mut self) -> bool {
        self.turns += 1;
        let due = self.turns >= self.params.after_turns && self.turns - self.last_check >= self.interval;
        if due {
            self.last_check = self.turns;
        }
        due
    }

    /// The turn the next check runs at.
    pub fn next_check(&self) -> usize {
        self.params.after_turns.max(self.last_check + self.interval)
    }

    fn is_loop(&self, c: f64) -> bool {
        if self.params.strict {
            c > self.params.threshold
        } else {
            c >= self.params.threshold
        }
    }

    /// `interval = round(min + (max - min) x (1 - c))`, JavaScript rounding.
    fn adapt(&mut self, c: f64) {
        let (lo, hi) = (self.params.interval_min as f64, self.params.interval_max as f64);
        self.interval = (lo + (hi - lo) * (1.0 - c) + 0.5).floor().max(0.0) as usize;
    }

    /// A verdict of `stage` (1 the first model, 2 the double check); `None`
    /// is no usable answer, which changes nothing.
    pub fn verdict(&mut self, stage: u8, confidence: Option<f64>) -> Outcome {
        let Some(c) = confidence else {
            return Outcome::NotLoop;
        };
        if !self.is_loop(c) {
            self.adapt(c);
            return Outcome::NotLoop;
        }
        if stage == 1 && self.params.double_check {
            Outcome::DoubleCheck
        } else {
            Outcome::Loop
        }
    }
}

/// A check recorded at a turn, while its verdicts come in.
#[derive(Clone, Debug)]
struct Pending {
    turn: usize,
    /// The stage the next verdict of this check is (2 after a first
    /// verdict that asks for the double check).
    stage: u8,
    confidences: Vec<Option<f64>>,
    /// The replaying schedule would have asked at this turn.
    asked: bool,
}

#[derive(Clone)]
struct Judge {
    schedule: Schedule,
    shared_latch: bool,
    pending: Option<Pending>,
    /// The turn the replaying schedule last asked at, for marking verdicts
    /// recorded at other turns.
    due: Option<usize>,
    /// The last checks: (turn, confidences).
    last: Vec<(usize, Vec<Option<f64>>)>,
}

/// The field a recorded first verdict carries when no double check
/// followed it because none was configured: it decided alone.
pub const ALONE_FIELD: &str = "double_check";

fn show(c: &Option<f64>) -> String {
    c.map_or("no answer".to_string(), |c| format!("{c:.2}"))
}

impl Judge {
    fn close(&mut self) {
        if let Some(p) = self.pending.take() {
            self.last.push((p.turn, p.confidences));
            if self.last.len() > 5 {
                self.last.remove(0);
            }
        }
    }
}

impl Rule for Judge {
    const ID: &'static str = "llm-judge";
    const KINDS: Kinds = Kinds::REQUEST.and(Kinds::LOOP_CHECK);

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                // A check left without its verdict counts as no answer.
                self.close();
                if self.schedule.turn() {
                    self.due = Some(self.schedule.turns);
                }
                None
            }
            EventKind::LoopCheck {
                confidence,
                analysis,
                detector,
                stage,
                ..
            } => {
                if detector.as_deref().is_some_and(|d| d != INFO.id) {
                    return None;
                }
                let turn = self.schedule.turns;
                let awaiting_second = self.pending.as_ref().is_some_and(|p| p.turn == turn && p.stage == 2);
                let stage_now = stage.unwrap_or(if awaiting_second { 2 } else { 1 });
                if stage_now == 2 {
                    // A double check belongs to the first verdict of its
                    // turn that asked for it (under these parameters).
                    if !awaiting_second {
                        return None;
                    }
                } else {
                    // A recorded check, applied where it was recorded: the
                    // schedule goes on from it.
                    self.close();
                    self.schedule.last_check = turn;
                    self.pending = Some(Pending {
                        turn,
                        stage: 1,
                        confidences: Vec::new(),
                        asked: self.due == Some(turn),
                    });
                }
                let pending = self.pending.as_mut()?;
                pending.confidences.push(*confidence);
                let alone = obs.event.extra.get(ALONE_FIELD).and_then(|v| v.as_bool()) == Some(false);
                let outcome = match self.schedule.verdict(stage_now, *confidence) {
                    // Recorded without a double check: it decided alone, as it did live.
                    Outcome::DoubleCheck if alone => Outcome::Loop,
                    o => o,
                };
                match outcome {
                    Outcome::DoubleCheck => {
                        pending.stage = 2;
                        None
                    }
                    Outcome::NotLoop => {
                        self.close();
                        None
                    }
                    Outcome::Loop => {
                        let (turn, asked) = (pending.turn, pending.asked);
                        let shown: Vec<String> = pending.confidences.iter().map(show).collect();
                        let mut d = Detection::new(INFO.id, obs.index, Channel::Turns, None);
                        d.repeats = Some(turn);
                        d.threshold = Some(self.schedule.params.after_turns);
                        d.evidence = Evidence::Count;
                        d.repeated = analysis.clone();
                        let cmp = if self.schedule.params.strict { ">" } else { ">=" };
                        let unasked = if asked {
                            ""
                        } else {
                            " (recorded at a turn this schedule would not have checked)"
                        };
                        d.reason = format!(
                            "the LLM judge called it a loop at turn {turn} (confidence {} {cmp} {}){unasked}{}",
                            shown.join(", then "),
                            self.schedule.params.threshold,
                            analysis
                                .as_deref()
                                .map_or(String::new(), |a| format!(": {}", super::quote(a, 160)))
                        );
                        self.close();
                        Some(d)
                    }
                }
            }
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.schedule.reset();
        self.pending = None;
        self.due = None;
        self.last.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let last: Vec<String> = self
            .last
            .iter()
            .map(|(t, cs)| format!("turn {t}: {}", cs.iter().map(show).collect::<Vec<_>>().join(" → ")))
            .collect();
        let detail = format!(
            "turn {}; next check at turn {}{}",
            self.schedule.turns,
            self.schedule.next_check(),
            if last.is_empty() {
                String::new()
            } else {
                format!("; {}", last.join("; "))
            }
        );
        if self.schedule.turns < self.schedule.params.after_turns {
            return Status::Idle { detail };
        }
        Status::Watching {
            current: self.schedule.turns,
            threshold: self.schedule.next_check(),
            detail,
        }
    }

    fn shares_latch(&self) -> bool {
        self.shared_latch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemini() -> JudgeParams {
        JudgeParams {
            after_turns: 30,
            history: 20,
            threshold: 0.9,
            strict: false,
            interval_min: 5,
            interval_max: 15,
            initial_interval: 10,
            double_check: true,
        }
    }

    #[test]
    fn the_schedule_starts_at_30_and_adapts_to_the_confidence() {
        let mut s = Schedule::new(&gemini());
        let due: Vec<usize> = (1..=60).filter(|_| s.turn()).collect();
        assert_eq!(due, vec![30, 40, 50, 60], "every 10 turns before any verdict");
        let mut s = Schedule::new(&gemini());
        for _ in 0..30 {
            s.turn();
        }
        assert_eq!(s.verdict(1, Some(0.5)), Outcome::NotLoop);
        assert_eq!(s.interval, 10, "round(5 + 10 x 0.5)");
        assert_eq!(s.verdict(1, Some(0.85)), Outcome::NotLoop);
        assert_eq!(s.interval, 7, "round(6.5) rounds up as JavaScript does");
        assert_eq!(s.verdict(1, None), Outcome::NotLoop);
        assert_eq!(s.interval, 7, "no answer changes nothing");
        assert_eq!(s.verdict(1, Some(0.9)), Outcome::DoubleCheck);
        assert_eq!(s.verdict(2, Some(0.95)), Outcome::Loop);
        let mut seed = Schedule::new(&JudgeParams {
            strict: true,
            double_check: false,
            initial_interval: 3,
            ..gemini()
        });
        assert_eq!(seed.verdict(1, Some(0.9)), Outcome::NotLoop, "strictly above");
        assert_eq!(seed.verdict(1, Some(0.91)), Outcome::Loop, "one model decides");
    }
}
