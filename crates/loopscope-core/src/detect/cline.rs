//! Profile `cline` (compat.md): Cline's loop detection and mistake limit
//! (cline/cline@f3a3f30db5). The soft warning, the hard stop and the
//! mistake limit share one state — the hard stop sets the mistake count,
//! the mistake limit re-arms the loop checks — so they are one group: one
//! object answering for three detector ids.

use super::keys;
use super::params::{Default, Kind, ParamSpec, Profile};
use super::{
    quote, Buffers, Detection, Detector, DetectorInfo, DetectorState, Evidence, Family, Group, Kinds, Observation,
    Status,
};
use crate::detect::Configured;
use crate::event::{Channel, EventKind};
use serde_json::Value;

pub(crate) static GROUP: Group = Group {
    name: "cline",
    build: build_group,
};

pub(crate) static LOOP_WARNING: DetectorInfo = DetectorInfo {
    id: "cline-loop-warning",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "exactly `at` consecutive identical calls (same name, arguments serialized with their top-level keys only): Cline warns the model",
    profiles: &[Profile::Cline],
    params: &[ParamSpec::new(
        "at",
        Kind::Count { min: 1 },
        Default::Count(3),
        "the consecutive identical call that gets the warning",
    )],
    group: Some(&GROUP),
    build: |_| unreachable_member(),
};

pub(crate) static LOOP: DetectorInfo = DetectorInfo {
    id: "cline-loop",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "exactly `at` consecutive identical calls: Cline stops (the mistake count jumps to its limit)",
    profiles: &[Profile::Cline],
    params: &[ParamSpec::new(
        "at",
        Kind::Count { min: 1 },
        Default::Count(5),
        "the consecutive identical call that stops the task",
    )],
    group: Some(&GROUP),
    build: |_| unreachable_member(),
};

pub(crate) static MISTAKE_LIMIT: DetectorInfo = DetectorInfo {
    id: "cline-mistake-limit",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "at a request, after a hard loop stop or `max` consecutive mistakes (failed results, requests without a tool call): \"Cline is having trouble\"",
    profiles: &[Profile::Cline],
    params: &[ParamSpec::new(
        "max",
        Kind::Count { min: 1 },
        Default::Count(3),
        "maxConsecutiveMistakes",
    )],
    group: Some(&GROUP),
    build: |_| unreachable_member(),
};

/// A group member is built by its group; this is never called for it.
fn unreachable_member() -> Box<dyn Detector> {
    Box::new(Cline::new(&[]))
}

fn build_group(members: &[&Configured]) -> Box<dyn Detector> {
    Box::new(Cline::new(members))
}

/// Cline's signature of a call's arguments: `JSON.stringify(args, K)` with
/// K the sorted top-level keys except `task_progress`.
pub(crate) fn cline_sig(args: &Value) -> String {
    match args {
        Value::Null => "{}".to_string(),
        Value::Object(m) => {
            let mut k: Vec<&str> = m.keys().map(String::as_str).filter(|k| *k != "task_progress").collect();
            k.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            keys::json_with_replacer(args, &k)
        }
        other => keys::json_with_replacer(other, &[]),
    }
}

/// Cline's state. A member that is not selected (`--detectors`) keeps its
/// default and its part of the state, but never reports.
#[derive(Clone)]
struct Cline {
    warn_at: usize,
    stop_at: usize,
    max_mistakes: usize,
    /// Which of warning, stop and mistake limit are selected.
    speaks: [bool; 3],
    last_name: String,
    last_sig: String,
    count: usize,
    run: Vec<usize>,
    mistakes: usize,
    escalated: bool,
    in_request: bool,
    request_used_tool: bool,
    /// The last firing of each member (warning, stop, mistake limit).
    fired: [Option<(usize, String)>; 3],
}

impl Cline {
    fn new(members: &[&Configured]) -> Cline {
        let member = |id: &str| members.iter().find(|c| c.info.id == id);
        let param = |id: &str, name: &str, default: usize| member(id).map_or(default, |c| c.params.count(name));
        Cline {
            warn_at: param("cline-loop-warning", "at", 3),
            stop_at: param("cline-loop", "at", 5),
            max_mistakes: param("cline-mistake-limit", "max", 3),
            speaks: [
                member("cline-loop-warning").is_some(),
                member("cline-loop").is_some(),
                member("cline-mistake-limit").is_some(),
            ],
            last_name: String::new(),
            last_sig: String::new(),
            count: 0,
            run: Vec::new(),
            mistakes: 0,
            escalated: false,
            in_request: false,
            request_used_tool: false,
            fired: [None, None, None],
        }
    }

    /// A new task (`prompt`): everything but the parameters starts over.
    fn reset(&mut self) {
        let (warn_at, stop_at, max_mistakes, speaks) = (self.warn_at, self.stop_at, self.max_mistakes, self.speaks);
        *self = Cline {
            warn_at,
            stop_at,
            max_mistakes,
            speaks,
            ..Cline::new(&[])
        };
    }

    fn call(&mut self, index: usize, name: &str, args: &Value, out: &mut Vec<Detection>) {
        let sig = cline_sig(args);
        if name == self.last_name && sig == self.last_sig {
            self.count += 1;
        } else {
            self.count = 1;
            self.run.clear();
        }
        self.run.push(index);
        let what = format!("{name} {}", quote(&sig, 60));
        if self.count == self.warn_at {
            let mut d = self.detection("cline-loop-warning", index);
            d.reason = format!(
                "\"Tool [{name}] has been called {} times consecutively with identical arguments. This is not making progress.\" — {what}",
                self.count
            );
            self.fired[0] = Some((index, d.reason.clone()));
            out.push(d);
        }
        if self.count == self.stop_at {
            self.mistakes = self.max_mistakes;
            self.escalated = true;
            let mut d = self.detection("cline-loop", index);
            d.reason = format!(
                "{} consecutive identical calls: Cline stops the loop (the mistake count is set to its limit) — {what}",
                self.count
            );
            self.fired[1] = Some((index, d.reason.clone()));
            out.push(d);
        }
        self.last_name = name.to_string();
        self.last_sig = sig;
    }

    fn detection(&self, id: &'static str, index: usize) -> Detection {
        let mut d = Detection::new(id, index, Channel::Tools, None);
        d.repeats = Some(self.count);
        d.threshold = Some(if id == "cline-loop" { self.stop_at } else { self.warn_at });
        d.events = self.run.clone();
        d.evidence = Evidence::Calls;
        d.repeated = Some(format!("{}:{}", self.last_name, self.last_sig));
        d
    }

    fn request(&mut self, index: usize, out: &mut Vec<Detection>) {
        if self.in_request && !self.request_used_tool {
            self.mistakes += 1;
        }
        self.in_request = true;
        self.request_used_tool = false;
        let max = self.max_mistakes;
        if self.escalated || self.mistakes >= max {
            let mut d = Detection::new("cline-mistake-limit", index, Channel::Tools, None);
            d.repeats = Some(self.mistakes);
            d.threshold = Some(max);
            d.reason = if self.escalated {
                "\"Cline is having trouble. Would you like to continue the task?\" — after a stopped loop of identical calls".to_string()
            } else {
                format!(
                    "\"Cline is having trouble. Would you like to continue the task?\" — {} consecutive mistakes (failed results, requests without a tool), limit {max}",
                    self.mistakes
                )
            };
            self.fired[2] = Some((index, d.reason.clone()));
            out.push(d);
            self.mistakes = 0;
            self.count = 0;
            self.last_name.clear();
            self.last_sig.clear();
            self.escalated = false;
        }
    }
}

impl Detector for Cline {
    fn id(&self) -> &'static str {
        "cline-loop"
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let mut found = Vec::new();
        match &obs.event.kind {
            EventKind::Prompt { .. } => self.reset(),
            EventKind::ToolCall { name, args, .. } => {
                self.request_used_tool = true;
                self.call(obs.index, name, args, &mut found);
            }
            EventKind::ToolResult { ok, .. } => {
                if !ok {
                    self.mistakes += 1;
                } else if !self.escalated {
                    self.mistakes = 0;
                }
            }
            EventKind::Request { .. } => self.request(obs.index, &mut found),
            _ => {}
        }
        // Only the selected members speak; the state runs for all.
        out.extend(found.into_iter().filter(|d| match d.detector {
            "cline-loop-warning" => self.speaks[0],
            "cline-loop" => self.speaks[1],
            _ => self.speaks[2],
        }));
    }

    fn status(&self, _: &Buffers) -> Status {
        Status::Idle { detail: String::new() }
    }

    fn kinds(&self) -> Kinds {
        Kinds::PROMPT.and(Kinds::TOOL_TURNS)
    }

    fn states(&self, _: &Buffers) -> Vec<DetectorState> {
        let fired = |k: usize| {
            self.fired[k].as_ref().map(|(event, reason)| Status::Fired {
                event: *event,
                reason: format!("{reason} (re-armed)"),
            })
        };
        let watching = |at: usize| Status::Watching {
            current: self.count,
            threshold: at,
            detail: format!("{} identical calls in a row (fires at exactly {at})", self.count),
        };
        let mut out = Vec::new();
        if self.speaks[0] {
            out.push(DetectorState {
                id: "cline-loop-warning",
                status: fired(0).unwrap_or_else(|| watching(self.warn_at)),
            });
        }
        if self.speaks[1] {
            out.push(DetectorState {
                id: "cline-loop",
                status: fired(1).unwrap_or_else(|| watching(self.stop_at)),
            });
        }
        if self.speaks[2] {
            let max = self.max_mistakes;
            out.push(DetectorState {
                id: "cline-mistake-limit",
                status: fired(2).unwrap_or(Status::Watching {
                    current: self.mistakes,
                    threshold: max,
                    detail: format!("{} of {max} consecutive mistakes", self.mistakes),
                }),
            });
        }
        out
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn signatures_keep_top_level_keys_at_every_depth() {
        assert_eq!(cline_sig(&json!({"b": 1, "a": 2})), r#"{"a":2,"b":1}"#);
        assert_eq!(
            cline_sig(&json!({"server": "db", "arguments": {"query": "a"}})),
            r#"{"arguments":{},"server":"db"}"#
        );
        assert_eq!(
            cline_sig(&json!({"query": "x", "arguments": {"query": "a"}})),
            r#"{"arguments":{"query":"a"},"query":"x"}"#
        );
        assert_eq!(
            cline_sig(&json!({"path": "a", "task_progress": "1/3"})),
            r#"{"path":"a"}"#
        );
        assert_eq!(cline_sig(&json!(null)), "{}");
        assert_eq!(cline_sig(&json!({"n": 1.0})), r#"{"n":1}"#);
    }
}
