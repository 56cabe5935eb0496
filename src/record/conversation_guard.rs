//! `--guard` in one conversation: its detectors, fed every event recorded,
//! and what they would say of a tool call before the agent gets it.
//!
//! A call is judged with the result it would get: the last result of the
//! same call (name and arguments) in this conversation. A loop is the same
//! call getting the same result, and the guard must stop it before the
//! call runs, not when its result comes back.
//!
//! A response the guard ended is taken back from the detectors: the agent
//! either ends its turn there or asks again (a retry, which must be judged
//! as the first ask was and ended again), and neither builds on it. The
//! detectors otherwise stay fired until the next prompt, and a retry would
//! pass unguarded.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::guard::{Found, Stop, Withheld};
use loopscope_core::detect::keys::{call_key, KeyStyle};
use loopscope_core::detect::Detection;
use loopscope_core::engine::Engine;
use loopscope_core::event::{Event, EventKind, STABLE_OUTPUT};
use loopscope_core::Setup;

/// Calls remembered without a result (a result names its call by id, or
/// comes back in the order the calls were made).
const MAX_UNANSWERED: usize = 64;
/// Distinct calls whose last result is kept; past it the oldest go.
const MAX_REMEMBERED: usize = 4096;

/// What a call got back.
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    ok: bool,
    output: Option<Value>,
    /// What detectors compare instead of `output` (see `Event::compared_output`).
    stable: Option<Value>,
}

/// One call (by its canonical key): how often the model asked for it since
/// the last prompt, and what it got back last.
#[derive(Clone, Debug, Default)]
struct CallMemory {
    asked: usize,
    last: Option<Outcome>,
    /// When it was last asked for (to forget the oldest first).
    used: u64,
}

/// One conversation's detectors under `--guard`.
pub struct ConversationGuard {
    engine: Engine,
    /// The detectors as they were when the current response began, and
    /// the events recorded since.
    response_start: Option<Engine>,
    since_response_start: usize,
    calls: HashMap<String, CallMemory>,
    /// Calls recorded whose results have not come back: (id, key).
    unanswered: VecDeque<(Option<String>, String)>,
    clock: u64,
    /// A detection on the results a request brought back: every response
    /// to that request (and to its retries) is ended at its start.
    pending: Option<Detection>,
}

fn key_of(name: &str, args: &Value) -> String {
    call_key(name, args, KeyStyle::Canonical)
}

impl ConversationGuard {
    pub fn new(setup: &Setup) -> ConversationGuard {
        ConversationGuard {
            engine: Engine::new(setup),
            response_start: None,
            since_response_start: 0,
            calls: HashMap::new(),
            unanswered: VecDeque::new(),
            clock: 0,
            pending: None,
        }
    }

    /// An event recorded: the detectors see it, and calls and results are
    /// remembered; returns what fired.
    pub fn push(&mut self, event: &Event) -> Vec<Detection> {
        self.since_response_start += 1;
        match &event.kind {
            EventKind::Prompt { .. } => {
                for memory in self.calls.values_mut() {
                    memory.asked = 0;
                }
            }
            EventKind::ToolCall { name, args, id } => {
                let key = key_of(name, args);
                self.clock += 1;
                let memory = self.calls.entry(key.clone()).or_default();
                memory.asked += 1;
                memory.used = self.clock;
                self.unanswered.push_back((id.clone(), key));
                if self.unanswered.len() > MAX_UNANSWERED {
                    self.unanswered.pop_front();
                }
                self.forget_oldest();
            }
            EventKind::ToolResult { id, ok, output } => {
                // By id; else the oldest call still waiting that has none
                // (gemini-cli's results carry ids its calls did not).
                let by_id = id
                    .as_ref()
                    .and_then(|id| self.unanswered.iter().position(|(c, _)| c.as_ref() == Some(id)));
                let at = by_id.or_else(|| self.unanswered.iter().position(|(c, _)| c.is_none()));
                if let Some((_, key)) = at.and_then(|i| self.unanswered.remove(i)) {
                    if let Some(memory) = self.calls.get_mut(&key) {
                        memory.last = Some(Outcome {
                            ok: *ok,
                            output: output.clone(),
                            stable: event.extra.get(STABLE_OUTPUT).cloned(),
                        });
                    }
                }
            }
            _ => {}
        }
        self.engine.push(event)
    }

    fn forget_oldest(&mut self) {
        if self.calls.len() <= MAX_REMEMBERED {
            return;
        }
        let mut used: Vec<u64> = self.calls.values().map(|m| m.used).collect();
        used.sort_unstable();
        let cut = used[self.calls.len() - MAX_REMEMBERED / 2];
        self.calls.retain(|_, m| m.used >= cut);
    }

    /// A response begins: what the detectors are now is what a response
    /// the guard ends goes back to.
    pub fn response_begins(&mut self) {
        self.response_start = Some(self.engine.clone());
        self.since_response_start = 0;
    }

    /// The guard ended the response: the detectors go back to where it
    /// began, past its events (they stay in the file, with their indexes).
    pub fn take_back_response(&mut self) {
        if let Some(start) = self.response_start.take() {
            self.engine = start;
            self.engine.skip(self.since_response_start);
            self.since_response_start = 0;
        }
    }

    /// What the detectors would say if the agent got `held` (the payloads
    /// of a complete call, decoded) and each call in it the result it got
    /// last time; `None` when nothing fires.
    pub fn judge(&self, held: &[Event]) -> Option<Stop> {
        let mut engine = self.engine.clone();
        let mut last_call = None;
        for event in held {
            if let EventKind::ToolCall { name, args, .. } = &event.kind {
                last_call = Some((name, args));
            }
            if let Some(d) = engine.push(event).into_iter().next() {
                // A detection on text before any call: the text was the loop.
                let withheld = last_call.map(|(n, a)| self.withheld(n, a));
                let found = if withheld.is_some() { Found::Call } else { Found::Stream };
                return Some(Stop::new(d, found, withheld));
            }
        }
        for event in held {
            let EventKind::ToolCall { name, args, id } = &event.kind else {
                continue;
            };
            let Some(last) = self.calls.get(&key_of(name, args)).and_then(|m| m.last.as_ref()) else {
                continue;
            };
            let mut result = Event::new(EventKind::ToolResult {
                id: id.clone(),
                ok: last.ok,
                output: last.output.clone(),
            });
            if let Some(stable) = &last.stable {
                result.extra.insert(STABLE_OUTPUT.into(), stable.clone());
            }
            if let Some(d) = engine.push(&result).into_iter().next() {
                let found = Found::Result { ok: last.ok };
                return Some(Stop::new(d, found, Some(self.withheld(name, args))));
            }
        }
        None
    }

    fn withheld(&self, name: &str, args: &Value) -> Withheld {
        let asked = self.calls.get(&key_of(name, args)).map_or(0, |m| m.asked);
        Withheld {
            name: name.to_string(),
            args: args.clone(),
            asked: asked + 1,
        }
    }

    /// A detection on the results a request brought back, which ends the
    /// responses to it; `None` once a request brings something new.
    pub fn pending(&self) -> Option<&Detection> {
        self.pending.as_ref()
    }

    pub fn set_pending(&mut self, d: Option<Detection>) {
        self.pending = d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup(profile: &str) -> Setup {
        match profile {
            "seed" => Setup::profile(loopscope_core::Profile::Seed),
            _ => Setup::profile(loopscope_core::Profile::Extended),
        }
    }

    fn call(id: &str) -> Event {
        let mut e = Event::tool_call("read_file", json!({"path": "notes.txt"}));
        if let EventKind::ToolCall { id: slot, .. } = &mut e.kind {
            *slot = Some(id.to_string());
        }
        e
    }

    fn result(id: Option<&str>, output: &str) -> Event {
        Event::new(EventKind::ToolResult {
            id: id.map(str::to_string),
            ok: true,
            output: Some(json!(output)),
        })
    }

    /// `n` turns of the same call and the same result, as recorded.
    fn looped(guard: &mut ConversationGuard, n: usize, result_id: impl Fn(usize) -> Option<String>) {
        guard.push(&Event::new(EventKind::Prompt {
            text: Some("go".into()),
        }));
        for i in 0..n {
            guard.response_begins();
            guard.push(&Event::new(EventKind::Request { id: None }));
            assert!(guard.push(&call(&format!("c{i}"))).is_empty());
            assert!(guard.push(&result(result_id(i).as_deref(), "hello")).is_empty());
        }
    }

    #[test]
    fn a_call_is_judged_with_the_result_the_same_call_got_last() {
        // extended's tool-loop compares calls with their results: on the
        // call alone it cannot fire, on the result it would get it does.
        let mut guard = ConversationGuard::new(&setup("extended"));
        looped(&mut guard, 2, |i| Some(format!("c{i}")));
        guard.response_begins();
        let stop = guard.judge(&[call("c2")]).expect("the third identical step is a loop");
        assert_eq!(stop.detection.detector, "tool-loop");
        assert_eq!(stop.found, Found::Result { ok: true });
        let withheld = stop.withheld.as_ref().unwrap();
        assert_eq!((withheld.name.as_str(), withheld.asked), ("read_file", 3));
        assert_eq!(
            stop.message(),
            "loopscope stopped a loop: read_file {path: notes.txt} called 3 times with the same arguments and the same result (tool-loop); this call was not run."
        );
        // A different call is not.
        let other = Event::tool_call("read_file", json!({"path": "other.txt"}));
        assert!(guard.judge(&[other]).is_none());
    }

    #[test]
    fn results_go_to_their_call_by_id_or_to_the_oldest_call_without_one() {
        // gemini-cli: calls without ids, results with ids of its own.
        let mut guard = ConversationGuard::new(&setup("extended"));
        guard.push(&Event::new(EventKind::Prompt {
            text: Some("go".into()),
        }));
        for i in 0..2 {
            guard.push(&Event::tool_call("read_file", json!({"path": "notes.txt"})));
            guard.push(&result(Some(&format!("read_file_{i}")), "hello"));
        }
        assert!(guard
            .judge(&[Event::tool_call("read_file", json!({"path": "notes.txt"}))])
            .is_some());
        // A result naming a call this conversation never made is another's.
        let mut guard = ConversationGuard::new(&setup("extended"));
        guard.push(&Event::new(EventKind::Prompt {
            text: Some("go".into()),
        }));
        for i in 0..3 {
            guard.push(&call(&format!("c{i}")));
            guard.push(&result(Some(&format!("other{i}")), "hello"));
        }
        assert!(guard.judge(&[call("c3")]).is_none(), "no result is known for the call");
    }

    #[test]
    fn seed_fires_on_the_call_itself() {
        let mut guard = ConversationGuard::new(&setup("seed"));
        looped(&mut guard, 2, |i| Some(format!("c{i}")));
        let stop = guard
            .judge(&[call("c2")])
            .expect("action-window: 3 of the last 3 actions");
        assert_eq!(stop.found, Found::Call);
        assert!(
            stop.message().contains("called 3 times with the same arguments ("),
            "{}",
            stop.message()
        );
    }

    #[test]
    fn a_response_taken_back_is_judged_again_the_same_way() {
        // A text loop fires on the stream and the guard ends the response;
        // the agent asks again: the retry must fire as the first ask did.
        let mut guard = ConversationGuard::new(&setup("extended"));
        guard.push(&Event::new(EventKind::Prompt {
            text: Some("go".into()),
        }));
        let unit = "Let me check the configuration file again before I answer this. ";
        let stream = |guard: &mut ConversationGuard| -> Option<usize> {
            guard.response_begins();
            guard.push(&Event::new(EventKind::Request { id: None }));
            (0..20).find(|_| {
                !guard
                    .push(&Event::new(EventKind::Reasoning { text: unit.into() }))
                    .is_empty()
            })
        };
        let first = stream(&mut guard).expect("the first ask loops");
        let position = guard.engine.position();
        guard.take_back_response();
        assert_eq!(guard.engine.position(), position, "later events keep their indexes");
        for _ in 0..5 {
            assert_eq!(
                stream(&mut guard),
                Some(first),
                "a retry is ended again, at the same place"
            );
            guard.take_back_response();
        }
        // Without taking it back, the detectors stay fired and a retry passes.
        stream(&mut guard);
        assert_eq!(stream(&mut guard), None);
    }

    #[test]
    fn a_withheld_call_leaves_the_detectors_armed() {
        let mut guard = ConversationGuard::new(&setup("extended"));
        looped(&mut guard, 2, |i| Some(format!("c{i}")));
        for _ in 0..3 {
            guard.response_begins();
            guard.push(&Event::new(EventKind::Request { id: None }));
            assert!(guard.judge(&[call("c2")]).is_some());
            guard.take_back_response();
        }
    }
}
