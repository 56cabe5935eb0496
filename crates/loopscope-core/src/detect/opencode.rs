//! Profile `opencode` (shared/design/opencode.md): opencode's `doom_loop`
//! permission (opencode-ai@1.18.33 `SessionProcessor`; Kilo CLI carries the
//! same processor). At each tool call, the last three parts of the current
//! assistant message — step-start, reasoning, text and tool parts, in order
//! — must all be calls of this tool with this input (`JSON.stringify`, key
//! order as written); then opencode asks the user. Each model response is
//! its own message, so identical calls in separate responses never ask.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::keys::{self, KeyStyle};
use super::params::{Default, Kind, ParamSpec, Profile};
use super::{quote, Buffers, Detection, Detector, DetectorInfo, Evidence, Family, Kinds, Observation, Status};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "opencode-doom-loop",
    family: Family::Compat,
    channel: Channel::Tools,
    rule: "the last `parts` parts of one model response (step-start, reasoning, text and tool parts) are calls of this tool with this input (JSON.stringify, key order as written): opencode asks the doom_loop permission; calls in separate responses never count",
    profiles: &[Profile::Opencode],
    params: &[
        ParamSpec::new(
            "parts",
            Kind::Count { min: 1 },
            Default::Count(3),
            "DOOM_LOOP_THRESHOLD: the trailing parts that must be the same call (fixed in opencode)",
        ),
        ParamSpec::new(
            "permission",
            Kind::Choice(&["ask", "allow", "deny"]),
            Default::Word("ask"),
            "opencode.json permission.doom_loop: ask (the default) and deny report each time; allow never does",
        ),
    ],
    group: None,
    build: |p| {
        Box::new(DoomLoop {
            parts: p.count("parts"),
            permission: p.word("permission").to_string(),
            ..DoomLoop::default()
        })
    },
};

/// A part of the current assistant message, as the check reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    StepStart,
    Reasoning,
    Text,
    /// A tool part: its tool, its input as `JSON.stringify` writes it, its
    /// event. Shared with the part before when equal, so a run of one call
    /// allocates nothing but the input's text, once per call.
    Tool(Arc<str>, Arc<str>, usize),
}

#[derive(Clone, Default)]
struct DoomLoop {
    parts: usize,
    permission: String,
    /// The message's last `parts` parts (older ones never matter).
    last: VecDeque<Part>,
    /// The previous event that makes or extends a part: a run of reasoning
    /// (or content) events is one part.
    previous: Option<Prev>,
    asks: usize,
    fired: Option<(usize, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    Reasoning,
    Content,
    Other,
}

impl DoomLoop {
    fn add(&mut self, part: Part) {
        self.last.push_back(part);
        while self.last.len() > self.parts {
            self.last.pop_front();
        }
    }

    /// A new assistant message: its first part is `step-start`.
    fn message(&mut self) {
        self.last.clear();
        self.add(Part::StepStart);
    }

    fn call(&mut self, index: usize, name: &str, args: &Value) -> Option<Detection> {
        // `isRecord(input) ? input : { value: input }`
        let input = match args {
            Value::Object(_) => keys::json(args, KeyStyle::Js),
            other => {
                let mut m = Map::new();
                m.insert("value".into(), other.clone());
                keys::json(&Value::Object(m), KeyStyle::Js)
            }
        };
        // Compared before it is added: the `parts - 1` parts before it must
        // be this call, and there must be that many.
        let same = self.last.len() + 1 >= self.parts
            && self
                .last
                .iter()
                .rev()
                .take(self.parts - 1)
                .all(|p| matches!(p, Part::Tool(t, i, _) if **t == *name && **i == *input));
        let (tool, input): (Arc<str>, Arc<str>) = match self.last.back() {
            Some(Part::Tool(t, i, _)) if **t == *name && **i == *input => (t.clone(), i.clone()),
            Some(Part::Tool(t, _, _)) if **t == *name => (t.clone(), input.into()),
            _ => (name.into(), input.into()),
        };
        self.add(Part::Tool(tool, input.clone(), index));
        if !same || self.permission == "allow" {
            return None;
        }
        self.asks += 1;
        let mut d = Detection::new(INFO.id, index, Channel::Tools, None);
        d.events = self
            .last
            .iter()
            .filter_map(|p| match p {
                Part::Tool(_, _, e) => Some(*e),
                _ => None,
            })
            .collect();
        d.onset = d.events.first().copied();
        d.repeats = Some(self.parts);
        d.threshold = Some(self.parts);
        d.evidence = Evidence::Calls;
        d.repeated = Some(format!("{name}:{input}"));
        let answer = if self.permission == "deny" {
            "denied by permission.doom_loop=deny: the step ends"
        } else {
            "opencode asks the user (permission doom_loop)"
        };
        d.reason = format!(
            "the last {} parts of this response are the same call {name} {}: {answer}",
            self.parts,
            quote(&input, 80)
        );
        self.fired = Some((index, d.reason.clone()));
        Some(d)
    }
}

impl Detector for DoomLoop {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let prev = self.previous;
        self.previous = Some(Prev::Other);
        match &obs.event.kind {
            // A new user message: the next response is a new message; a
            // log that names no request gets one here.
            EventKind::Prompt { .. } => {
                self.message();
                self.asks = 0;
                self.fired = None;
            }
            EventKind::Request { .. } => self.message(),
            EventKind::Reasoning { .. } => {
                if prev != Some(Prev::Reasoning) {
                    self.add(Part::Reasoning);
                }
                self.previous = Some(Prev::Reasoning);
            }
            EventKind::Content { .. } => {
                if prev != Some(Prev::Content) {
                    self.add(Part::Text);
                }
                self.previous = Some(Prev::Content);
            }
            EventKind::ToolCall { name, args, .. } => out.extend(self.call(obs.index, name, args)),
            // Results change a part's state; they add none.
            _ => self.previous = prev,
        }
    }

    fn status(&self, _: &Buffers) -> Status {
        if let Some((event, reason)) = &self.fired {
            return Status::Fired {
                event: *event,
                reason: format!("{reason} (asks again at every further identical call)"),
            };
        }
        let call = |p: &Part| match p {
            Part::Tool(t, i, _) => Some((t.clone(), i.clone())),
            _ => None,
        };
        let run = self.last.back().and_then(call).map_or(0, |last| {
            self.last
                .iter()
                .rev()
                .take_while(|p| call(p).as_ref() == Some(&last))
                .count()
        });
        Status::Watching {
            current: run,
            threshold: self.parts,
            detail: format!("{run} of the last {} parts of this response are one call", self.parts),
        }
    }

    fn kinds(&self) -> Kinds {
        Kinds::PROMPT
            .and(Kinds::REQUEST)
            .and(Kinds::REASONING)
            .and(Kinds::CONTENT)
            .and(Kinds::TOOL_CALL)
            .and(Kinds::TOOL_RESULT)
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }
}
