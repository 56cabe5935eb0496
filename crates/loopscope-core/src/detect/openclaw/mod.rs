//! Profile `openclaw` (shared/design/openclaw.md): OpenClaw's tool-loop
//! detection (npm openclaw@2026.9.6, `tool-loop-detection.ts` and its
//! caller) and its post-compaction loop guard. One session history, one
//! warning-bucket map and one guard are shared by every rule, so they are
//! one group: one object answering for the profile's detector ids — each
//! rule's warning and block apart, as OpenClaw tells them apart.

mod history;
mod members;
mod outcome;
mod stable;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::{Buffers, Configured, Detection, Detector, DetectorState, Evidence, Group, Kinds, Observation, Status};
use crate::event::{Channel, EventKind};
use history::{Counts, History, Limits, Record, Rule, Verdict, View, WarningKey};
pub(crate) use members::*;
use outcome::Digest;

pub(crate) static GROUP: Group = Group {
    name: "openclaw",
    build: build_group,
};

fn build_group(members: &[&Configured]) -> Box<dyn Detector> {
    Box::new(OpenClaw::new(members))
}

/// The most calls kept waiting for their results (a log's calls without
/// results must not hold memory without bound).
const MAX_OPEN_CALLS: usize = 256;
/// The most tool names kept with their OpenClaw name (`tool_name`).
const MAX_TOOL_NAMES: usize = 64;
/// OpenClaw's `MAX_LOOP_WARNING_KEYS`.
const MAX_WARNING_KEYS: usize = 256;
/// The post-compaction guard keeps the last 16 calls (`BASELINE_WINDOW_SIZE`)
/// only to log repeats of them; nothing is decided by them, so they are not kept.
///
/// A call seen in the log, until its result.
#[derive(Clone, Debug)]
struct OpenCall {
    id: Option<Arc<str>>,
    tool: Arc<str>,
    args: Digest,
    /// What the outcome digest reads of the arguments: their `action`, and
    /// whether they are an object.
    action: Option<String>,
    object: bool,
    /// Blocked by the guard: its result is ignored (OpenClaw never ran it).
    blocked: bool,
    answered: bool,
    event: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    On,
    Unset,
    Off,
}

#[derive(Clone)]
struct OpenClaw {
    mode: Mode,
    limits: Limits,
    bucket: usize,
    window: usize,
    /// Which member ids are selected (`--detectors`); all run, these speak.
    speaks: [bool; 11],
    run: u64,
    history: History,
    /// Tool names as logged, with OpenClaw's name for them: one shared
    /// name per tool (no name made per call, and records of one tool
    /// compare by pointer).
    tools: Vec<(Box<str>, Arc<str>)>,
    /// The current batch (one model response's calls): admitted calls
    /// waiting to be recorded at launch.
    batch: Vec<Record>,
    /// The batch was vetoed: the blocked call's identity.
    vetoed: Option<Digest>,
    calls: VecDeque<OpenCall>,
    /// `runId:warningKey` → the last bucket warned, with the keys in the
    /// order they came (the oldest goes past `MAX_WARNING_KEYS`).
    buckets: HashMap<(u64, WarningKey), usize>,
    bucket_order: VecDeque<(u64, WarningKey)>,
    /// Post-compaction guard: attempts left and the window's (tool, args, result).
    armed: usize,
    window_calls: Vec<(Digest, Digest)>,
    counts: Counts,
    fired: [Option<(usize, String)>; 11],
}

impl OpenClaw {
    fn new(members: &[&Configured]) -> OpenClaw {
        let service = members.iter().find(|c| c.info.id == "openclaw").map(|c| &c.params);
        let count = |name: &str, default: usize| service.map_or(default, |p| p.count(name));
        let mode = match service.map_or("true", |p| p.word("enabled")) {
            "false" => Mode::Off,
            "unset" => Mode::Unset,
            _ => Mode::On,
        };
        let mut speaks = [false; 11];
        for (i, id) in IDS.iter().enumerate() {
            speaks[i] = members.iter().any(|c| c.info.id == *id);
        }
        OpenClaw {
            mode,
            limits: Limits {
                warning: count("warning_threshold", 10),
                critical: count("critical_threshold", 20),
                global: count("global_circuit_breaker_threshold", 30),
                unknown_tool: count("unknown_tool_threshold", 10),
                churn_variant: count("min_variant_calls", 3),
            },
            bucket: count("warning_bucket", 10),
            window: count("post_compaction_window", 3),
            speaks,
            run: 0,
            history: History::new(count("history_size", 30)),
            tools: Vec::new(),
            batch: Vec::new(),
            vetoed: None,
            calls: VecDeque::new(),
            buckets: HashMap::new(),
            bucket_order: VecDeque::new(),
            armed: 0,
            window_calls: Vec::new(),
            counts: Counts::default(),
            fired: std::default::Default::default(),
        }
    }

    fn push(&mut self, r: Record) {
        self.history.push(r);
    }

    /// The batch is launched: its calls are recorded in order.
    fn commit(&mut self) {
        self.vetoed = None;
        for r in self.batch.drain(..) {
            self.history.push(Record { kind: None, ..r });
        }
    }

    /// OpenClaw's name of a logged tool name, shared.
    fn tool(&mut self, name: &str) -> Arc<str> {
        if let Some((_, tool)) = self.tools.iter().find(|(n, _)| **n == *name) {
            return tool.clone();
        }
        let tool: Arc<str> = outcome::tool_name(name).into();
        if self.tools.len() >= MAX_TOOL_NAMES {
            self.tools.remove(0);
        }
        self.tools.push((name.into(), tool.clone()));
        tool
    }

    /// `shouldEmitLoopWarning`: a key warns once per bucket of counts.
    fn should_warn(&mut self, key: WarningKey, count: usize) -> bool {
        let bucket = count / self.bucket;
        let key = (self.run, key);
        match self.buckets.get_mut(&key) {
            Some(b) if bucket <= *b => false,
            Some(b) => {
                *b = bucket;
                true
            }
            None if bucket == 0 => false,
            None => {
                self.buckets.insert(key.clone(), bucket);
                self.bucket_order.push_back(key);
                while self.bucket_order.len() > MAX_WARNING_KEYS {
                    if let Some(oldest) = self.bucket_order.pop_front() {
                        self.buckets.remove(&oldest);
                    }
                }
                true
            }
        }
    }

    fn call(&mut self, index: usize, name: &str, args: &Value, id: Option<&str>, out: &mut Vec<Detection>) {
        let tool = self.tool(name);
        let digest = outcome::call_digest(&tool, args);
        let action = outcome::action(args).map(str::to_string);
        let mut open = OpenCall {
            id: id.map(Arc::from),
            tool: tool.clone(),
            args: digest,
            action,
            object: args.is_object(),
            blocked: false,
            answered: false,
            event: index,
        };
        if self.mode == Mode::On {
            self.admit(index, &mut open, out);
        }
        if self.calls.len() >= MAX_OPEN_CALLS {
            self.calls.pop_front();
        }
        self.calls.push_back(open);
    }

    /// `admitToolCallBatch` for one more call of the current batch.
    fn admit(&mut self, index: usize, call: &mut OpenCall, out: &mut Vec<Detection>) {
        let record = Record::call(call.tool.clone(), call.args, call.id.clone(), self.run, index);
        if let Some(blocked) = self.vetoed {
            // The whole batch was vetoed; calls like the blocked one leave a veto.
            call.blocked = true;
            if call.args == blocked {
                self.push(record.veto());
            }
            return;
        }
        let view = View::new(self.history.of_run(self.run), &self.batch);
        let (verdict, counts) = history::check(view, &call.tool, call.args, call.action.as_deref(), &self.limits);
        let events = verdict.as_ref().map(|v| evidence_events(view, v, call.args));
        self.counts = counts;
        let Some(v) = verdict else {
            self.batch.push(record.veto());
            return;
        };
        let events = events.unwrap_or_default();
        if v.critical {
            call.blocked = true;
            let start = self.batch.first().map_or(index, |r| r.event);
            for r in self.batch.drain(..).filter(|r| r.args == call.args) {
                self.history.push(r);
            }
            for c in self.calls.iter_mut().filter(|c| c.event >= start) {
                c.blocked = true;
            }
            self.push(record.veto());
            self.vetoed = Some(call.args);
            self.emit(index, &v, &call.tool, events, out);
        } else {
            if self.should_warn(v.key.clone(), v.count) {
                self.emit(index, &v, &call.tool, events, out);
            }
            self.batch.push(record.veto());
        }
    }

    fn emit(&mut self, index: usize, v: &Verdict, tool: &str, events: Vec<usize>, out: &mut Vec<Detection>) {
        let id = id_of(v.rule, v.critical);
        let mut d = Detection::new(id, index, Channel::Tools, None);
        d.repeats = Some(v.count);
        d.threshold = Some(v.threshold);
        d.onset = events.first().copied();
        d.events = events;
        d.evidence = Evidence::Calls;
        let pair = v.paired_tool.as_ref().map_or(String::new(), |p| format!(" ↔ {p}"));
        d.repeated = Some(format!("{tool}{pair}"));
        let what = if v.critical {
            "OpenClaw blocks the call"
        } else {
            "OpenClaw warns the model"
        };
        d.reason = format!(
            "{what} ({} {}, count {} of {}): \"{}\"",
            v.rule.name(),
            if v.critical { "critical" } else { "warning" },
            v.count,
            v.threshold,
            history::message(v, tool)
        );
        self.record_fired(id, index, &d.reason);
        out.push(d);
    }

    fn record_fired(&mut self, id: &str, index: usize, reason: &str) {
        if let Some(i) = IDS.iter().position(|x| *x == id) {
            self.fired[i] = Some((index, reason.to_string()));
        }
    }

    fn result(&mut self, index: usize, id: Option<&str>, ok: bool, output: Option<&Value>, out: &mut Vec<Detection>) {
        self.commit();
        let found = match id {
            Some(id) => self.calls.iter().rposition(|c| c.id.as_deref() == Some(id)),
            None => self.calls.iter().rposition(|c| !c.answered),
        };
        let Some(at) = found else { return };
        let call = self.calls.remove(at).expect("a found call");
        if call.blocked {
            return;
        }
        let o = outcome::outcome_of(&call.tool, call.action.as_deref(), call.object, ok, output);
        if !o.recorded() {
            return;
        }
        let result = if self.mode == Mode::On {
            self.attach(index, &call, o)
        } else {
            o.result
        };
        if let Some(result) = result.filter(|_| self.mode != Mode::Off) {
            self.observe_after_compaction(index, &call, result, out);
        }
    }

    /// `recordToolCallOutcome`: fills the newest matching call of this run
    /// without an outcome, else pushes a record of its own. Its result digest.
    fn attach(&mut self, index: usize, call: &OpenCall, o: outcome::Outcome) -> Option<Digest> {
        let run = self.run;
        let kind = if o.veto {
            Some(history::OutcomeKind::Veto)
        } else if o.failure_identity.is_some() {
            Some(history::OutcomeKind::TerminalFailure)
        } else {
            Some(history::OutcomeKind::Plain)
        };
        let fill = |r: &mut Record| {
            r.kind = kind;
            r.result = o.result;
            r.failure_identity = o.failure_identity;
            r.no_progress = o.no_progress;
            r.unknown_tool = o.unknown_tool.as_deref().map(Arc::from);
        };
        let matching = self.history.live_mut().iter_mut().rev().find(|r| {
            r.run == run
                && (call.id.is_none() || r.call_id == call.id)
                && r.tool == call.tool
                && r.args == call.args
                && r.result.is_none()
                && r.kind.is_none()
        });
        match matching {
            Some(r) => fill(r),
            None => {
                let mut r = Record::call(call.tool.clone(), call.args, call.id.clone(), run, index);
                fill(&mut r);
                self.push(r);
            }
        }
        o.result
    }

    /// The post-compaction guard's `observe` (only while armed).
    fn observe_after_compaction(&mut self, index: usize, call: &OpenCall, result: Digest, out: &mut Vec<Detection>) {
        if self.armed == 0 {
            return;
        }
        self.armed -= 1;
        self.window_calls.push((call.args, result));
        let matches = self.window_calls.iter().filter(|c| **c == (call.args, result)).count();
        if matches >= self.window {
            let id = COMPACTION_ABORT.id;
            let mut d = Detection::new(id, index, Channel::Tools, None);
            d.repeats = Some(matches);
            d.threshold = Some(self.window);
            d.evidence = Evidence::Calls;
            d.repeated = Some(call.tool.to_string());
            d.events = vec![call.event, index];
            d.reason = format!(
                "OpenClaw aborts the run (compaction_loop_persisted, {matches} of {}): \"CRITICAL: tool {} repeated {matches} times with identical arguments and identical results within {} attempts after auto-compaction. The compaction did not break the loop. Aborting to prevent runaway resource use.\"",
                self.window, call.tool, self.window
            );
            self.record_fired(id, index, &d.reason);
            out.push(d);
        }
    }
}

/// The earlier events a verdict counted: the calls with these arguments
/// (for ping-pong, the alternation's), else the tool's records.
fn evidence_events(view: View<'_>, v: &Verdict, args: Digest) -> Vec<usize> {
    let mut events: Vec<usize> = match (&v.rule, &v.key) {
        (Rule::PingPong, WarningKey::PingPong(a, b)) => view
            .iter()
            .filter(|r| r.args == *a || r.args == *b)
            .map(|r| r.event)
            .collect(),
        (Rule::ArgumentChurn | Rule::UnknownTool, _) => {
            let tool = view.iter().rev().find(|r| r.args == args).map(|r| r.tool.clone());
            view.iter()
                .filter(|r| tool.as_ref().is_some_and(|t| *t == r.tool))
                .map(|r| r.event)
                .collect()
        }
        _ => view.iter().filter(|r| r.args == args).map(|r| r.event).collect(),
    };
    events.dedup();
    let keep = events.len().saturating_sub(v.count.max(1));
    events.drain(..keep);
    events
}

impl Detector for OpenClaw {
    fn id(&self) -> &'static str {
        "openclaw"
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let mut found = Vec::new();
        match &obs.event.kind {
            EventKind::Prompt { .. } => {
                self.commit();
                self.run += 1;
                self.armed = 0;
                self.window_calls.clear();
            }
            EventKind::Request { .. } => self.commit(),
            EventKind::ToolCall { name, args, id } => self.call(obs.index, name, args, id.as_deref(), &mut found),
            EventKind::ToolResult { id, ok, output } => {
                self.result(obs.index, id.as_deref(), *ok, output.as_ref(), &mut found)
            }
            EventKind::Note { .. }
                if self.mode != Mode::Off
                    && obs.event.extra.get("kind").and_then(Value::as_str) == Some("condensation") =>
            {
                self.armed = self.window;
                self.window_calls.clear();
            }
            _ => {}
        }
        out.extend(found.into_iter().filter(|d| {
            IDS.iter()
                .position(|x| *x == d.detector)
                .is_some_and(|i| self.speaks[i])
        }));
    }

    fn status(&self, _: &Buffers) -> Status {
        Status::Idle { detail: String::new() }
    }

    fn kinds(&self) -> Kinds {
        Kinds::ALL
    }

    fn states(&self, _: &Buffers) -> Vec<DetectorState> {
        let c = &self.counts;
        let l = &self.limits;
        let watching = |current: usize, threshold: usize, what: &str| Status::Watching {
            current,
            threshold,
            detail: format!("{what}: {current} of {threshold} at the last call"),
        };
        IDS.iter()
            .enumerate()
            .filter(|(i, _)| self.speaks[*i])
            .map(|(i, id)| {
                let live = match i {
                    0 => Status::Idle {
                        detail: match self.mode {
                            Mode::On => format!("on: {} records of this run", self.history.of_run(self.run).len()),
                            Mode::Unset => {
                                "rolling detection off (OpenClaw's default); the post-compaction guard on".to_string()
                            }
                            Mode::Off => "off".to_string(),
                        },
                    },
                    1 => watching(c.recent, l.warning, "identical earlier calls"),
                    2 => watching(c.no_progress, l.critical, "identical earlier outcomes"),
                    3 => watching(
                        if c.poll { c.no_progress } else { 0 },
                        l.warning,
                        "identical poll outcomes",
                    ),
                    4 => watching(
                        if c.poll { c.no_progress } else { 0 },
                        l.critical,
                        "identical poll outcomes",
                    ),
                    5 => watching(c.ping_pong, l.warning, "alternating calls"),
                    6 => watching(c.ping_pong, l.critical, "alternating calls with stable results"),
                    7 => watching(c.churn, l.warning, "no-progress results over churned arguments"),
                    8 => watching(c.unknown, l.unknown_tool, "errors naming one unknown tool"),
                    9 => watching(c.no_progress, l.global, "identical no-progress outcomes"),
                    _ if self.armed > 0 => Status::Watching {
                        current: self.window_calls.len(),
                        threshold: self.window,
                        detail: format!(
                            "armed after a compaction: {} of {} calls seen",
                            self.window_calls.len(),
                            self.window
                        ),
                    },
                    _ => Status::Idle {
                        detail: "armed by a compaction note".to_string(),
                    },
                };
                let status = match &self.fired[i] {
                    Some((event, reason)) => Status::Fired {
                        event: *event,
                        reason: format!("{reason} (re-armed)"),
                    },
                    None => live,
                };
                DetectorState { id, status }
            })
            .collect()
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }
}

/// What would have kept an OpenClaw detection from firing (the viewer's
/// "what would change").
pub(crate) fn what_would_change(d: &Detection) -> Option<String> {
    let n = d.repeats?;
    let param = match d.detector {
        "openclaw-compaction-abort" => "openclaw.post_compaction_window",
        "openclaw-unknown-tool-block" => "openclaw.unknown_tool_threshold",
        "openclaw-global-breaker-block" => "openclaw.global_circuit_breaker_threshold",
        id if id.ends_with("-block") => "openclaw.critical_threshold",
        id if id.starts_with("openclaw-") => "openclaw.warning_threshold",
        _ => return None,
    };
    Some(format!("not fired here with {param} above {n}; OpenClaw's own default leaves rolling detection off (openclaw.enabled=unset)"))
}
