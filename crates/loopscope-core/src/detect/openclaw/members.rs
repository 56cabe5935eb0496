//! The profile's members: one detector id per OpenClaw rule and level (a
//! warning and a block apart, as OpenClaw tells them apart), the service
//! entry that holds the group's shared settings, and the post-compaction
//! guard.

use super::super::params::{Default, Kind, ParamSpec, Profile};
use super::super::{DetectorInfo, Family};
use super::history::Rule;
use super::{OpenClaw, GROUP};
use crate::event::Channel;

const fn member(id: &'static str, rule: &'static str, params: &'static [ParamSpec]) -> DetectorInfo {
    DetectorInfo {
        id,
        family: Family::Compat,
        channel: Channel::Tools,
        rule,
        profiles: &[Profile::Openclaw],
        params,
        group: Some(&GROUP),
        build: |_| Box::new(OpenClaw::new(&[])),
    }
}

pub(crate) static SERVICE: DetectorInfo = member(
    "openclaw",
    "the guard itself: its switch (tools.loopDetection.enabled), its history and thresholds (constants in 2026.9.6)",
    &[
        ParamSpec::new(
            "enabled",
            Kind::Choice(&["true", "false", "unset"]),
            Default::Word("true"),
            "tools.loopDetection.enabled: true runs every rule; unset (OpenClaw's default) only the post-compaction guard; false neither",
        ),
        ParamSpec::new(
            "history_size",
            Kind::Count { min: 1 },
            Default::Count(30),
            "records the session keeps (TOOL_CALL_HISTORY_SIZE), of every run",
        ),
        ParamSpec::new(
            "warning_threshold",
            Kind::Count { min: 1 },
            Default::Count(10),
            "the count that warns (generic, poll, ping-pong, churn)",
        ),
        ParamSpec::new(
            "critical_threshold",
            Kind::Count { min: 1 },
            Default::Count(20),
            "the count that blocks (generic, poll, ping-pong)",
        ),
        ParamSpec::new(
            "global_circuit_breaker_threshold",
            Kind::Count { min: 1 },
            Default::Count(30),
            "identical no-progress outcomes that block any tool",
        ),
        ParamSpec::new(
            "unknown_tool_threshold",
            Kind::Count { min: 1 },
            Default::Count(10),
            "errors naming the same unknown tool in a row that block",
        ),
        ParamSpec::new(
            "min_variant_calls",
            Kind::Count { min: 1 },
            Default::Count(3),
            "argument churn: calls each argument variant needs (MIN_STABLE_CALLS_PER_VARIANT)",
        ),
        ParamSpec::new(
            "warning_bucket",
            Kind::Count { min: 1 },
            Default::Count(10),
            "a key warns again only when floor(count / warning_bucket) grows (LOOP_WARNING_BUCKET_SIZE)",
        ),
        ParamSpec::new(
            "post_compaction_window",
            Kind::Count { min: 1 },
            Default::Count(3),
            "calls the post-compaction guard watches after a compaction (all identical with one result: abort)",
        ),
    ],
);
pub(crate) static GENERIC_WARNING: DetectorInfo = member(
    "openclaw-generic-repeat-warning",
    "generic_repeat, warning: 10 earlier calls of this run with the same tool and arguments (stable JSON), whatever they returned; again at 20, 30",
    &[],
);
pub(crate) static GENERIC_BLOCK: DetectorInfo = member(
    "openclaw-generic-repeat-block",
    "generic_repeat, critical: 20 identical earlier outcomes of the same call (other calls between do not reset it; an exec failure counts across commands by its failure identity): the call is blocked",
    &[],
);
pub(crate) static POLL_WARNING: DetectorInfo = member(
    "openclaw-known-poll-warning",
    "known_poll_no_progress, warning: a poll (process poll/log, command_status) with 10 identical earlier outcomes",
    &[],
);
pub(crate) static POLL_BLOCK: DetectorInfo = member(
    "openclaw-known-poll-block",
    "known_poll_no_progress, critical: a poll with 20 identical earlier outcomes is blocked",
    &[],
);
pub(crate) static PING_PONG_WARNING: DetectorInfo = member(
    "openclaw-ping-pong-warning",
    "ping_pong, warning: the 10th call of an A/B alternation (by arguments, any tools)",
    &[],
);
pub(crate) static PING_PONG_BLOCK: DetectorInfo = member(
    "openclaw-ping-pong-block",
    "ping_pong, critical: the 20th call of an A/B alternation with one stable result per side is blocked",
    &[],
);
pub(crate) static CHURN_WARNING: DetectorInfo = member(
    "openclaw-argument-churn-warning",
    "argument_churn, warning: 10 no-progress results (errors, unchanged writes) of one tool over 2+ argument variants of 3+ calls each, one shared result",
    &[],
);
pub(crate) static UNKNOWN_BLOCK: DetectorInfo = member(
    "openclaw-unknown-tool-block",
    "unknown_tool_repeat, critical: 10 results in a row of this tool whose error names the same unknown tool: the next call is blocked",
    &[],
);
pub(crate) static GLOBAL_BLOCK: DetectorInfo = member(
    "openclaw-global-breaker-block",
    "global_circuit_breaker, critical: 30 identical no-progress outcomes of one call, any tool (polls too)",
    &[],
);
pub(crate) static COMPACTION_ABORT: DetectorInfo = member(
    "openclaw-compaction-abort",
    "compaction_loop_persisted (the post-compaction guard, on unless enabled=false): after a compaction note, the 3 next results are one call with one result: the run is aborted",
    &[],
);

/// The members in registry order (the order their states are reported).
pub(super) const IDS: [&str; 11] = [
    "openclaw",
    "openclaw-generic-repeat-warning",
    "openclaw-generic-repeat-block",
    "openclaw-known-poll-warning",
    "openclaw-known-poll-block",
    "openclaw-ping-pong-warning",
    "openclaw-ping-pong-block",
    "openclaw-argument-churn-warning",
    "openclaw-unknown-tool-block",
    "openclaw-global-breaker-block",
    "openclaw-compaction-abort",
];

/// The detector id of a verdict.
pub(super) fn id_of(rule: Rule, critical: bool) -> &'static str {
    match (rule, critical) {
        (Rule::GenericRepeat, false) => IDS[1],
        (Rule::GenericRepeat, true) => IDS[2],
        (Rule::KnownPoll, false) => IDS[3],
        (Rule::KnownPoll, true) => IDS[4],
        (Rule::PingPong, false) => IDS[5],
        (Rule::PingPong, true) => IDS[6],
        (Rule::ArgumentChurn, _) => IDS[7],
        (Rule::UnknownTool, _) => IDS[8],
        (Rule::GlobalBreaker, _) => IDS[9],
    }
}
