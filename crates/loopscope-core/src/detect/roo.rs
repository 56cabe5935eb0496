//! Profile `roo-code` (compat.md): Roo Code's `ToolRepetitionDetector` and
//! its consecutive-mistake limit, as RooCodeInc/Roo-Code@cb836567 runs
//! them. Neither latches: Roo blocks the call (or asks the user) and goes
//! on, re-armed at once.

use super::keys::{self, KeyStyle};
use super::params::{Default, Kind, ParamSpec, Profile};
use super::{quote, Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, Rearmed, Rule, Status};
use crate::event::{Channel, EventKind};
use serde_json::Value;

/// What Roo shows the user when it blocks a repeated call.
fn roo_stuck_message(tool: &str) -> String {
    format!(
        "Roo appears to be stuck in a loop, attempting the same action ({tool}) repeatedly. This might indicate a problem with its current strategy."
    )
}

pub(crate) static TOOL_REPEAT: DetectorInfo = DetectorInfo {
    id: "roo-tool-repeat",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "the call after `limit` consecutive identical calls (name + stable JSON of the arguments; empty arguments all alike) is blocked, then the count starts over",
    profiles: &[Profile::RooCode],
    params: &[ParamSpec::new(
        "limit",
        Kind::Count { min: 0 },
        Default::Count(3),
        "consecutive repeats allowed before the next identical call is blocked (0: off)",
    )],
    group: None,
    build: |p| {
        Rearmed::boxed(ToolRepeat {
            limit: p.count("limit"),
            prev: None,
            count: 0,
            calls: Vec::new(),
        })
    },
};

pub(crate) static MISTAKE_LIMIT: DetectorInfo = DetectorInfo {
    id: "roo-mistake-limit",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "at a request, `limit` consecutive mistakes (failed tool results; from the second request in a row without a tool call, one per request) stop the task and ask the user",
    profiles: &[Profile::RooCode],
    params: &[ParamSpec::new(
        "limit",
        Kind::Count { min: 0 },
        Default::Count(3),
        "consecutive mistakes allowed (0: off)",
    )],
    group: None,
    build: |p| {
        Rearmed::boxed(MistakeLimit {
            limit: p.count("limit"),
            mistakes: 0,
            no_tool: 0,
            in_request: false,
            request_used_tool: false,
            events: Vec::new(),
        })
    },
};

/// Whether JavaScript's `Object.keys(v)` is non-empty (Roo includes
/// `nativeArgs` only then).
fn has_keys(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => !s.is_empty(),
        _ => false,
    }
}

/// Roo's key: the tool name and, when they have keys, its arguments as
/// stable JSON.
pub(crate) fn roo_key(name: &str, args: &Value) -> String {
    let args = if has_keys(args) {
        keys::json(args, KeyStyle::Stable)
    } else {
        String::new()
    };
    format!("{name}\u{0}{args}")
}

#[derive(Clone)]
struct ToolRepeat {
    limit: usize,
    prev: Option<String>,
    count: usize,
    /// The events of the current run of identical calls.
    calls: Vec<usize>,
}

impl Rule for ToolRepeat {
    const ID: &'static str = "roo-tool-repeat";
    const KINDS: Kinds = Kinds::TOOL_CALL;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let EventKind::ToolCall { name, args, .. } = &obs.event.kind else {
            return None;
        };
        let key = roo_key(name, args);
        if self.prev.as_deref() == Some(key.as_str()) {
            self.count += 1;
        } else {
            self.count = 0;
            self.prev = Some(key);
            self.calls.clear();
        }
        self.calls.push(obs.index);
        if self.limit == 0 || self.count < self.limit {
            return None;
        }
        let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
        d.repeats = Some(self.count + 1);
        d.threshold = Some(self.limit + 1);
        d.events = std::mem::take(&mut self.calls);
        d.evidence = Evidence::Calls;
        d.repeated = Some(format!("{name} {}", keys::json(args, KeyStyle::Stable)));
        d.reason = format!(
            "\"{}\": call {} of {name} {} in a row is blocked (limit {})",
            roo_stuck_message(name),
            self.count + 1,
            quote(&keys::json(args, KeyStyle::Stable), 60),
            self.limit
        );
        self.count = 0;
        self.prev = None;
        Some(d)
    }

    fn reset(&mut self) {
        self.prev = None;
        self.count = 0;
        self.calls.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        let run = if self.prev.is_some() { self.count + 1 } else { 0 };
        Status::Watching {
            current: run,
            threshold: self.limit + 1,
            detail: format!("{run} identical calls in a row; call {} is blocked", self.limit + 1),
        }
    }
}

#[derive(Clone)]
struct MistakeLimit {
    limit: usize,
    mistakes: usize,
    no_tool: usize,
    in_request: bool,
    request_used_tool: bool,
    /// The failed results and tool-less requests counted.
    events: Vec<usize>,
}

impl Rule for MistakeLimit {
    const ID: &'static str = "roo-mistake-limit";
    const KINDS: Kinds = Kinds::TOOL_TURNS;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::ToolCall { .. } => self.request_used_tool = true,
            EventKind::ToolResult { ok, .. } => {
                if *ok {
                    self.mistakes = 0;
                    self.events.clear();
                } else {
                    self.mistakes += 1;
                    self.events.push(obs.index);
                }
            }
            EventKind::Request { .. } => {
                if self.in_request {
                    if self.request_used_tool {
                        self.no_tool = 0;
                    } else {
                        self.no_tool += 1;
                        if self.no_tool >= 2 {
                            self.mistakes += 1;
                            self.events.push(obs.index);
                        }
                    }
                }
                self.in_request = true;
                self.request_used_tool = false;
                if self.limit > 0 && self.mistakes >= self.limit {
                    let mut d = Detection::new(Self::ID, obs.index, Channel::Tools, None);
                    d.repeats = Some(self.mistakes);
                    d.threshold = Some(self.limit);
                    d.events = std::mem::take(&mut self.events);
                    d.evidence = Evidence::Calls;
                    d.reason = format!(
                        "\"Roo is having trouble...\" — {} consecutive mistakes (failed tool results, requests without a tool) reach the limit of {}; the user is asked for guidance",
                        self.mistakes, self.limit
                    );
                    self.mistakes = 0;
                    return Some(d);
                }
            }
            _ => {}
        }
        None
    }

    fn reset(&mut self) {
        self.mistakes = 0;
        self.no_tool = 0;
        self.in_request = false;
        self.request_used_tool = false;
        self.events.clear();
    }

    fn progress(&self, _: &Buffers) -> Status {
        Status::Watching {
            current: self.mistakes,
            threshold: self.limit,
            detail: format!("{} of {} consecutive mistakes", self.mistakes, self.limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roo_keys_ignore_key_order_and_treat_empty_args_alike() {
        assert_eq!(
            roo_key("t", &json!({"b": 1, "a": 2})),
            roo_key("t", &json!({"a": 2.0, "b": 1}))
        );
        assert_eq!(roo_key("t", &json!({})), roo_key("t", &json!(null)));
        assert_eq!(roo_key("t", &json!([])), roo_key("t", &json!(false)));
        assert_ne!(roo_key("t", &json!({})), roo_key("u", &json!({})));
        assert_ne!(
            roo_key("t", &json!({"a": {"y": 1, "x": 2}})),
            roo_key("t", &json!({"a": {"x": 1, "y": 2}}))
        );
    }
}
