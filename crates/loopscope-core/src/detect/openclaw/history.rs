//! OpenClaw's per-session tool history and `detectToolCallLoop`
//! (openclaw@2026.9.6 `dist/tool-loop-detection-6ndMMrbS.mjs`): the streaks
//! it counts over the current run's records and the first rule that matches.

use std::sync::Arc;

use super::outcome::Digest;

/// What OpenClaw records of an outcome beyond its digest (`outcomeKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutcomeKind {
    /// No outcome kind.
    Plain,
    /// `tool-loop-veto`: the guard blocked this call.
    Veto,
    /// `terminal-exec-failure`.
    TerminalFailure,
}

/// One entry of `state.toolCallHistory`.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub tool: Arc<str>,
    /// `argsHash` (the tool is part of it).
    pub args: Digest,
    pub call_id: Option<Arc<str>>,
    pub run: u64,
    pub result: Option<Digest>,
    /// `None`: no outcome kind was set (the call's outcome is not in yet).
    pub kind: Option<OutcomeKind>,
    pub failure_identity: Option<Digest>,
    pub no_progress: bool,
    pub unknown_tool: Option<Arc<str>>,
    /// The log event it stands for (its call, or the result that pushed it).
    pub event: usize,
}

impl Record {
    /// A call as `recordToolCall` writes it.
    pub fn call(tool: Arc<str>, args: Digest, call_id: Option<Arc<str>>, run: u64, event: usize) -> Record {
        Record {
            tool,
            args,
            call_id,
            run,
            result: None,
            kind: None,
            failure_identity: None,
            no_progress: false,
            unknown_tool: None,
            event,
        }
    }

    /// A call the guard vetoed (`recordLoopVeto`).
    pub fn veto(mut self) -> Record {
        self.kind = Some(OutcomeKind::Veto);
        self
    }

    fn is_veto(&self) -> bool {
        self.kind == Some(OutcomeKind::Veto)
    }
}

/// `state.toolCallHistory`: the session's last `size` records, in one
/// slice. Records that fall out are dropped in bulk (at most `size` more are
/// kept), so reading the window never copies or collects it.
#[derive(Clone, Debug)]
pub(crate) struct History {
    records: Vec<Record>,
    size: usize,
}

impl History {
    pub fn new(size: usize) -> History {
        History {
            records: Vec::new(),
            size,
        }
    }

    /// `recordToolCall` and friends: push, then the oldest falls out.
    pub fn push(&mut self, r: Record) {
        // Runs only grow, so each run's records are one stretch (`of_run`).
        debug_assert!(self.records.last().is_none_or(|l| l.run <= r.run));
        if self.records.len() >= 2 * self.size.max(16) {
            let gone = self.records.len() - self.size;
            self.records.drain(..gone);
        }
        self.records.push(r);
    }

    /// The records in the window, oldest first.
    pub fn live(&self) -> &[Record] {
        &self.records[self.records.len().saturating_sub(self.size)..]
    }

    pub fn live_mut(&mut self) -> &mut [Record] {
        let from = self.records.len().saturating_sub(self.size);
        &mut self.records[from..]
    }

    /// `selectHistoryForScope`: the window's records of `run` (the newest
    /// ones: records are pushed in run order).
    pub fn of_run(&self, run: u64) -> &[Record] {
        let live = self.live();
        let n = live.iter().rev().take_while(|r| r.run == run).count();
        &live[live.len() - n..]
    }
}

/// What a check sees: this run's records, then the calls of the current
/// batch admitted before this one (as vetoes), without a copy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View<'a> {
    recorded: &'a [Record],
    batch: &'a [Record],
}

impl<'a> View<'a> {
    pub fn new(recorded: &'a [Record], batch: &'a [Record]) -> View<'a> {
        View { recorded, batch }
    }

    /// Oldest first (`.rev()` walks back from the newest).
    pub fn iter(self) -> std::iter::Chain<std::slice::Iter<'a, Record>, std::slice::Iter<'a, Record>> {
        self.recorded.iter().chain(self.batch)
    }

    pub fn last(self) -> Option<&'a Record> {
        self.batch.last().or(self.recorded.last())
    }
}

/// Whether a record is of this tool: tools are shared names (the detector
/// keeps one per name), so the same name is mostly the same pointer.
pub(crate) fn same_tool(r: &Record, tool: &Arc<str>) -> bool {
    Arc::ptr_eq(&r.tool, tool) || *r.tool == **tool
}

/// OpenClaw's detectors, in the order of its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Rule {
    UnknownTool,
    GlobalBreaker,
    KnownPoll,
    PingPong,
    GenericRepeat,
    ArgumentChurn,
}

impl Rule {
    /// OpenClaw's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::UnknownTool => "unknown_tool_repeat",
            Rule::GlobalBreaker => "global_circuit_breaker",
            Rule::KnownPoll => "known_poll_no_progress",
            Rule::PingPong => "ping_pong",
            Rule::GenericRepeat => "generic_repeat",
            Rule::ArgumentChurn => "argument_churn",
        }
    }
}

/// The thresholds (fixed constants in 2026.9.6; settable here).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub warning: usize,
    pub critical: usize,
    pub global: usize,
    pub unknown_tool: usize,
    pub churn_variant: usize,
}

/// Where the caller keeps a warning's bucket (`warningKey`), as values:
/// OpenClaw's keys are strings of these parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum WarningKey {
    Generic(Digest),
    Poll(Digest, Option<Digest>),
    PingPong(Digest, Digest),
    Churn(Arc<str>),
}

/// What `detectToolCallLoop` returns when stuck.
#[derive(Clone, Debug)]
pub(crate) struct Verdict {
    pub rule: Rule,
    pub critical: bool,
    pub count: usize,
    pub threshold: usize,
    pub key: WarningKey,
    /// The other side of a ping-pong.
    pub paired_tool: Option<Arc<str>>,
    /// Argument churn's number of variants.
    pub variants: usize,
    /// The unknown tool's name.
    pub unknown: Option<Arc<str>>,
}

/// The counts of one check, for the viewer's live state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub recent: usize,
    pub no_progress: usize,
    pub ping_pong: usize,
    pub churn: usize,
    pub unknown: usize,
    pub poll: bool,
}

/// `getUnknownToolRepeatStreak`.
fn unknown_streak(h: View<'_>, tool: &Arc<str>) -> (usize, Option<Arc<str>>) {
    let mut streak = 0;
    let mut name: Option<&Arc<str>> = None;
    for r in h.iter().rev() {
        let Some(u) = r.unknown_tool.as_ref().filter(|_| same_tool(r, tool)) else {
            break;
        };
        match name {
            None => {
                name = Some(u);
                streak = 1;
            }
            Some(n) if n == u => streak += 1,
            Some(_) => break,
        }
    }
    (streak, name.cloned())
}

/// `countNoProgressStreak`: (count, the latest outcome's digest).
fn count_no_progress(h: View<'_>, tool: &Arc<str>, args: Digest, terminal_only: bool) -> (usize, Option<Digest>) {
    let mut streak = 0;
    let mut latest: Option<&Record> = None;
    let mut crossed = false;
    let mut pending = 0;
    for r in h.iter().rev() {
        // Other arguments or another tool: skipped (the cheap test first).
        if !terminal_only && r.args != args {
            continue;
        }
        if !same_tool(r, tool) {
            if terminal_only {
                break;
            }
            continue;
        }
        if r.is_veto() {
            pending += 1;
            continue;
        }
        if r.result.is_none() {
            continue;
        }
        if terminal_only && r.kind != Some(OutcomeKind::TerminalFailure) {
            break;
        }
        let Some(first) = latest else {
            latest = Some(r);
            crossed = r.args != args;
            streak = pending + 1;
            pending = 0;
            continue;
        };
        if terminal_only {
            if crossed && r.args == args {
                break;
            }
            if r.args != args {
                crossed = true;
            }
        }
        let same_failure =
            terminal_only && r.failure_identity.is_some() && r.failure_identity == first.failure_identity;
        if r.result != first.result && !same_failure {
            break;
        }
        streak += pending + 1;
        pending = 0;
    }
    match latest {
        Some(r) => (streak, r.result),
        None if terminal_only => (0, None),
        None => (pending, None),
    }
}

/// One walk back over this call's records (same tool and arguments): how
/// many there are (`recentCount`) and `countNoProgressStreak` over them
/// (not terminal-only): (recent, streak, the latest outcome's digest).
fn same_call(h: View<'_>, tool: &Arc<str>, args: Digest) -> (usize, usize, Option<Digest>) {
    let (mut recent, mut streak, mut pending) = (0, 0, 0);
    let mut latest: Option<Digest> = None;
    let mut counting = true;
    for r in h.iter().rev() {
        if r.args != args || !same_tool(r, tool) {
            continue;
        }
        recent += 1;
        if !counting {
            continue;
        }
        if r.is_veto() {
            pending += 1;
            continue;
        }
        let Some(result) = r.result else { continue };
        match latest {
            None => {
                latest = Some(result);
                streak = pending + 1;
                pending = 0;
            }
            // Another outcome ends the streak (the count goes on).
            Some(first) if first != result => counting = false,
            Some(_) => {
                streak += pending + 1;
                pending = 0;
            }
        }
    }
    match latest {
        Some(_) => (recent, streak, latest),
        None => (recent, pending, None),
    }
}

/// `getNoProgressStreak`, given the identical-call streak `repeated`: for
/// `exec`, the longer of it and the terminal-failure streak.
fn no_progress(
    h: View<'_>,
    tool: &Arc<str>,
    args: Digest,
    repeated: (usize, Option<Digest>),
) -> (usize, Option<Digest>) {
    if **tool != *"exec" {
        return repeated;
    }
    let terminal = count_no_progress(h, tool, args, true);
    if terminal.0 > repeated.0 {
        terminal
    } else {
        repeated
    }
}

/// `getArgumentChurnNoProgressStreak`: (count, variants), zero unless it holds.
fn churn(h: View<'_>, tool: &Arc<str>, args: Digest, min_calls: usize) -> (usize, usize) {
    // (args, result, count), at most one per argument variant.
    let mut groups: Vec<(Digest, Option<Digest>, usize)> = Vec::new();
    for r in h.iter().rev() {
        if !same_tool(r, tool) {
            break;
        }
        if r.result.is_none() {
            continue;
        }
        if !r.no_progress {
            break;
        }
        match groups.iter_mut().find(|g| g.0 == r.args) {
            Some(g) if g.1 != r.result => break,
            Some(g) => g.2 += 1,
            None => groups.push((r.args, r.result, 1)),
        }
    }
    let count: usize = groups.iter().map(|g| g.2).sum();
    let stable: Vec<&(Digest, Option<Digest>, usize)> = groups.iter().filter(|g| g.2 >= min_calls).collect();
    let shared = stable.iter().all(|g| g.1 == stable[0].1) && !stable.is_empty();
    let only_stable = stable.iter().map(|g| g.2).sum::<usize>() == count;
    let current = groups.iter().find(|g| g.0 == args).map_or(0, |g| g.2);
    if stable.len() > 1 && only_stable && shared && current >= min_calls {
        (count, stable.len())
    } else {
        (0, 0)
    }
}

/// `isKnownPollToolCall`.
pub(crate) fn known_poll(tool: &str, action: Option<&str>) -> bool {
    tool == "command_status" || (tool == "process" && matches!(action, Some("poll" | "log")))
}

/// `getPingPongStreak`: (count, the last record's args and tool, no-progress evidence).
fn ping_pong(h: View<'_>, current: Digest) -> Option<(usize, Digest, Arc<str>, bool)> {
    let last = h.last()?;
    let other = h.iter().rev().skip(1).find(|r| r.args != last.args)?.args;
    if current != other {
        return None;
    }
    let mut tail = 0;
    for r in h.iter().rev() {
        let expected = if tail % 2 == 0 { last.args } else { other };
        if r.args != expected {
            break;
        }
        tail += 1;
    }
    if tail < 2 {
        return None;
    }
    let (mut a, mut b) = (None, None);
    let mut evidence = true;
    for r in h.iter().rev().take(tail) {
        let Some(result) = r.result else {
            evidence = false;
            break;
        };
        let side = if r.args == last.args { &mut a } else { &mut b };
        match side {
            None => *side = Some(result),
            Some(first) if *first != result => {
                evidence = false;
                break;
            }
            Some(_) => {}
        }
    }
    let evidence = evidence && a.is_some() && b.is_some();
    Some((tail + 1, last.args, last.tool.clone(), evidence))
}

/// `detectToolCallLoop` over the current run's records `h` for a call of
/// `tool` (normalised) whose arguments hash to `args`; also the counts.
pub(crate) fn check(
    h: View<'_>,
    tool: &Arc<str>,
    args: Digest,
    action: Option<&str>,
    l: &Limits,
) -> (Option<Verdict>, Counts) {
    let (unknown, unknown_name) = unknown_streak(h, tool);
    let (recent, repeated, repeated_latest) = same_call(h, tool, args);
    let (progress, latest) = no_progress(h, tool, args, (repeated, repeated_latest));
    let (churn_count, variants) = churn(h, tool, args, l.churn_variant);
    let poll = known_poll(tool, action);
    let pong = ping_pong(h, args);
    let pong_count = pong.as_ref().map_or(0, |p| p.0);
    let counts = Counts {
        recent,
        no_progress: progress,
        ping_pong: pong_count,
        churn: churn_count,
        unknown,
        poll,
    };
    let verdict = |rule, critical, count, threshold, key| Verdict {
        rule,
        critical,
        count,
        threshold,
        key,
        paired_tool: None,
        variants: 0,
        unknown: None,
    };
    let poll_key = WarningKey::Poll(args, latest);
    let v = if unknown >= l.unknown_tool {
        Some(Verdict {
            unknown: unknown_name,
            ..verdict(
                Rule::UnknownTool,
                true,
                unknown,
                l.unknown_tool,
                WarningKey::Generic(args),
            )
        })
    } else if progress >= l.global {
        Some(verdict(Rule::GlobalBreaker, true, progress, l.global, poll_key))
    } else if poll && progress >= l.critical {
        Some(verdict(Rule::KnownPoll, true, progress, l.critical, poll_key))
    } else if poll && progress >= l.warning {
        Some(verdict(Rule::KnownPoll, false, progress, l.warning, poll_key))
    } else if let Some((count, paired, paired_tool, evidence)) = pong.filter(|p| p.0 >= l.warning) {
        let critical = count >= l.critical && evidence;
        let key = WarningKey::PingPong(args.min(paired), args.max(paired));
        let threshold = if critical { l.critical } else { l.warning };
        Some(Verdict {
            paired_tool: Some(paired_tool),
            ..verdict(Rule::PingPong, critical, count, threshold, key)
        })
    } else if !poll && progress >= l.critical {
        Some(verdict(Rule::GenericRepeat, true, progress, l.critical, poll_key))
    } else if churn_count >= l.warning {
        Some(Verdict {
            variants,
            ..verdict(
                Rule::ArgumentChurn,
                false,
                churn_count,
                l.warning,
                WarningKey::Churn(tool.clone()),
            )
        })
    } else if !poll && recent >= l.warning {
        Some(verdict(
            Rule::GenericRepeat,
            false,
            recent,
            l.warning,
            WarningKey::Generic(args),
        ))
    } else {
        None
    };
    (v, counts)
}

/// OpenClaw's message for a verdict (what its log and, for a block, the
/// model read), with the tool's name.
pub(crate) fn message(v: &Verdict, tool: &str) -> String {
    let n = v.count;
    match (v.rule, v.critical) {
        (Rule::UnknownTool, _) => format!(
            "CRITICAL: attempted unavailable tool {} {n} times. Stop retrying that missing tool and answer without it.",
            v.unknown.as_deref().unwrap_or(tool)
        ),
        (Rule::GlobalBreaker, _) => format!("CRITICAL: {tool} repeated identical no-progress outcomes {n} times. Session execution blocked by global circuit breaker to prevent runaway loops."),
        (Rule::KnownPoll, true) => format!("CRITICAL: Called {tool} with identical arguments and no progress {n} times. This appears to be a stuck polling loop. Session execution blocked to prevent resource waste."),
        (Rule::KnownPoll, false) => format!("WARNING: You have called {tool} {n} times with identical arguments and no progress. Stop polling and either (1) increase wait time between checks, or (2) report the task as failed if the process is stuck."),
        (Rule::PingPong, true) => format!("CRITICAL: You are alternating between repeated tool-call patterns ({n} consecutive calls) with no progress. This appears to be a stuck ping-pong loop. Session execution blocked to prevent resource waste."),
        (Rule::PingPong, false) => format!("WARNING: You are alternating between repeated tool-call patterns ({n} consecutive calls). This looks like a ping-pong loop; stop retrying and report the task as failed."),
        (Rule::GenericRepeat, true) => format!("CRITICAL: Called {tool} with identical outcomes {n} times. Session execution blocked to prevent runaway loops."),
        (Rule::GenericRepeat, false) => format!("WARNING: You have called {tool} {n} times with identical arguments. If this is not making progress, stop retrying and report the task as failed."),
        (Rule::ArgumentChurn, _) => format!("WARNING: {tool} has cycled through {} repeated argument patterns with the same stable outcome {n} times. Continued churn is treated as stalled run activity, but this tool call remains allowed.", v.variants),
    }
}
