//! `loopscope hook AGENT`: the agent's own hook, at every tool call. It
//! reads the hook's JSON on stdin ([`agents`]), brings the session's state
//! up to date ([`state`]: the transcript's new lines, or what the agent's
//! plugin reports), and runs the profile over the session plus the pending
//! call — and, when the same call ran before, the result it got then: a
//! call is refused only when it would make a detector fire on the tools.
//! The refusal tells the model what repeated, how often and what to do
//! instead; to allow, the hook prints nothing, so the agent's own
//! permission rules still apply. Nothing that goes wrong inside loopscope
//! ever blocks the agent: the call is allowed and stderr says why (Claude
//! Code reads exit status 2 as a refusal: the hook always exits 0).

pub mod agents;
pub mod install;
pub mod state;

use std::io::{Read, Write};

use serde_json::Value;

use agents::{Call, HookAgent, Input, Said};
use loopscope_core::config::Setup;
use loopscope_core::detect::keys::{call_key, KeyStyle};
use loopscope_core::engine::Engine;
use loopscope_core::event::{Channel, Event, EventKind};
use state::{Locked, State};

/// The longest hook input read (a call's arguments can be a whole file).
const MAX_INPUT: u64 = 16 << 20;

/// What every refusal starts with: it marks the refused calls' results in
/// the transcript, which are loopscope's words, not the tool's output.
pub const MARK: &str = "loopscope stopped a loop";

/// How a hook runs.
pub struct Options {
    pub setup: Setup,
    /// The hook's event when the agent does not name it on stdin.
    pub event: Option<String>,
}

/// One hook call: reads `input`, prints a refusal on `out` when the call
/// must not run. Always exit status 0.
pub fn run(agent: HookAgent, opts: &Options, input: &mut dyn Read, out: &mut dyn Write) -> i32 {
    match decide(agent, opts, input) {
        Ok(Some((event, reason))) => {
            let refusal = agents::refusal(agent, &event, &reason);
            if let Err(e) = writeln!(out, "{refusal}") {
                eprintln!("loopscope hook: the refusal could not be written ({e}); the call is allowed");
            }
        }
        Ok(None) => {}
        Err(msg) => {
            log(&serde_json::json!({"error": msg}), None, &State::default());
            eprintln!(
                "loopscope hook: {}; the call is allowed",
                loopscope_core::sanitize::line(&msg)
            );
        }
    }
    0
}

/// The refusal (the hook's event name and the reason), if the call must
/// not run.
fn decide(agent: HookAgent, opts: &Options, input: &mut dyn Read) -> Result<Option<(String, String)>, String> {
    let mut text = Vec::new();
    input
        .take(MAX_INPUT)
        .read_to_end(&mut text)
        .map_err(|e| format!("reading the hook's input: {}", loopscope_core::io_reason(&e)))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| format!("the hook's input is not JSON ({e})"))?;
    let event = opts
        .event
        .clone()
        .or_else(|| v["hook_event_name"].as_str().map(str::to_string))
        .unwrap_or_default();
    let input: Input = agents::read(agent, &v, opts.event.as_deref());
    if input.said == Said::Other {
        return Ok(None);
    }
    let (mut lock, mut state) = catch_up(agent, &input)?;
    // The result of the call just before, when it is the same call, may
    // not be here yet: the agent can run the next call's hook before the
    // last one's result hook, or write its transcript behind. Without it
    // the third identical call looks like the second; wait for it, briefly.
    if let Said::Before(call) = &input.said {
        for _ in 0..RESULT_WAITS {
            if !awaits_result(&state, call) {
                break;
            }
            lock.save(&state)?;
            std::thread::sleep(std::time::Duration::from_millis(RESULT_WAIT_MS));
            (lock, state) = catch_up(agent, &input)?;
        }
    }
    let observed = input.transcript.is_none();
    let verdict = match input.said {
        Said::Prompt(text) => {
            state.push(Event::prompt(&text));
            None
        }
        // What a call got: the transcript will say it too, maybe later
        // than the next call (Claude Code writes its file a little behind).
        Said::After { call, ok, output } => {
            if !observed && call.id.is_some() {
                state.push(call_event(&call));
            }
            let mut e = Event::tool_result_with(ok, output);
            if let EventKind::ToolResult { id, .. } = &mut e.kind {
                *id = call.id;
            }
            state.push_reported(e);
            None
        }
        Said::Before(call) => {
            let verdict = judge(&state, &call, &opts.setup);
            match &verdict {
                Some(reason) => {
                    let key = call_key(&call.name, &call.args, KeyStyle::Canonical);
                    if !state.refused.iter().any(|(k, _)| *k == key) {
                        state.refused.push((key, reason.clone()));
                    }
                }
                None if observed => state.push(call_event(&call)),
                None => {}
            }
            verdict
        }
        Said::Other => None,
    };
    lock.save(&state)?;
    log(&v, verdict.as_deref(), &state);
    Ok(verdict.map(|r| (event, r)))
}

/// How often, and how long each time, a call's hook waits for the result
/// of the identical call just before it (at most about a second).
const RESULT_WAITS: u32 = 40;
const RESULT_WAIT_MS: u64 = 25;

/// The session's state, locked, with what the transcript gained.
fn catch_up(agent: HookAgent, input: &Input) -> Result<(Locked, State), String> {
    let (lock, mut state) = Locked::open(agent.name(), &input.session)?;
    if let (Some(t), Some(kind)) = (&input.transcript, agent.transcript_kind()) {
        state.read_transcript(t, kind)?;
    }
    Ok((lock, state))
}

/// Whether the call just before `call` is the same call and its result
/// has not arrived yet, in a session whose results do arrive (an agent
/// that reports no results is never waited for).
fn awaits_result(state: &State, call: &Call) -> bool {
    let has_result = |id: &str| {
        state
            .events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ToolResult { id: Some(r), .. } if r == id))
    };
    let results_arrive = state
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::ToolResult { id: Some(_), .. }));
    let last = state.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::ToolCall {
            name,
            args,
            id: Some(id),
        } if call.id.as_deref() != Some(id.as_str()) => Some((name, args, id)),
        _ => None,
    });
    let Some((name, args, id)) = last else { return false };
    let key = call_key(&call.name, &call.args, KeyStyle::Canonical);
    // A call refused before is refused again without its twin's result.
    let refused = state.refused.iter().any(|(k, _)| *k == key);
    results_arrive && !refused && !has_result(id) && call_key(name, args, KeyStyle::Canonical) == key
}

/// With `LOOPSCOPE_HOOK_LOG=FILE`, each call's input and verdict are
/// appended to FILE (one JSON line): what the hook saw, when tuning it.
fn log(input: &Value, verdict: Option<&str>, state: &State) {
    let Some(path) = std::env::var_os("LOOPSCOPE_HOOK_LOG").filter(|p| !p.is_empty()) else {
        return;
    };
    let line =
        serde_json::json!({"input": input, "refused": verdict, "events": state.events.len(), "read": state.read});
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(f, "{line}");
    }
}

fn call_event(call: &Call) -> Event {
    let mut e = Event::tool_call(&call.name, call.args.clone());
    if let EventKind::ToolCall { id, .. } = &mut e.kind {
        id.clone_from(&call.id);
    }
    e
}

/// Why `call` must not run, if it must not: refused before since the
/// last prompt, or a tools detector fires on it or on the result its twin
/// got last time.
pub fn judge(state: &State, call: &Call, setup: &Setup) -> Option<String> {
    let key = call_key(&call.name, &call.args, KeyStyle::Canonical);
    if let Some((_, reason)) = state.refused.iter().find(|(k, _)| *k == key) {
        return Some(reason.clone());
    }
    let events = history(state, call);
    let predicted = last_result_of(&events, &key);
    let mut engine = Engine::new(setup);
    for e in &events {
        let _ = engine.push(e);
    }
    let mut fired = engine.push(&call_event(call));
    if let Some(result) = predicted {
        let mut result = result;
        if let EventKind::ToolResult { id, .. } = &mut result.kind {
            id.clone_from(&call.id);
        }
        fired.extend(engine.push(&result));
    }
    fired
        .into_iter()
        .find(|d| d.channel == Channel::Tools)
        .map(|d| refusal_text(&d, setup))
}

/// The session's events as the detectors see them before the pending
/// call: without the pending call itself (a transcript can hold it
/// already) and without the calls loopscope refused (their results are
/// its own words).
fn history(state: &State, call: &Call) -> Vec<Event> {
    let refused_ids: Vec<&str> = state
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                id: Some(id), output, ..
            } if is_refusal(output.as_ref()) => Some(id.as_str()),
            _ => None,
        })
        .collect();
    state
        .events
        .iter()
        .filter(|e| match &e.kind {
            EventKind::ToolCall { id: Some(id), .. } => {
                call.id.as_deref() != Some(id.as_str()) && !refused_ids.contains(&id.as_str())
            }
            EventKind::ToolResult { id, output, .. } => {
                !is_refusal(output.as_ref()) && id.as_deref().is_none_or(|id| !refused_ids.contains(&id))
            }
            _ => true,
        })
        .cloned()
        .collect()
}

fn is_refusal(output: Option<&Value>) -> bool {
    let text = match output {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => return false,
    };
    text.contains(MARK)
}

/// The result the last call with this key got (the last one that got one).
fn last_result_of(events: &[Event], key: &str) -> Option<Event> {
    events.iter().enumerate().rev().find_map(|(at, e)| {
        let EventKind::ToolCall { name, args, id } = &e.kind else {
            return None;
        };
        if call_key(name, args, KeyStyle::Canonical) != key {
            return None;
        }
        events[at + 1..]
            .iter()
            .find(|r| match &r.kind {
                EventKind::ToolResult { id: rid, .. } => id.is_none() || rid.is_none() || rid == id,
                _ => false,
            })
            .cloned()
    })
}

/// What the model reads: what repeated, how often, which detector, and
/// what to do instead.
fn refusal_text(d: &loopscope_core::detect::Detection, setup: &Setup) -> String {
    let reason = loopscope_core::detect::readable::readable(&d.reason);
    // Event numbers mean nothing to the model.
    let reason = strip_event_numbers(&reason);
    format!(
        "{MARK}: {reason} ({detector}, loopscope's {profile} profile). The same call with the same \
         arguments gives the same result: use what you already have, change the arguments, or take \
         another approach; if you are stuck, say so instead of repeating it.",
        detector = d.detector,
        profile = setup.profile.name(),
    )
}

fn strip_event_numbers(reason: &str) -> String {
    let re = regex::Regex::new(r",? ?(from |at )?events? \[?[0-9][0-9, .]*\]?").expect("a valid pattern");
    re.replace_all(reason, "").trim().trim_end_matches(',').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::detect::Profile;
    use serde_json::json;

    fn read(n: usize) -> Call {
        Call {
            name: "read_file".into(),
            args: json!({"path": "notes.txt"}),
            id: Some(format!("c{n}")),
        }
    }

    fn ran(state: &mut State, call: &Call, output: &str) {
        state.push(call_event(call));
        let mut r = Event::tool_result_with(true, json!(output));
        if let EventKind::ToolResult { id, .. } = &mut r.kind {
            id.clone_from(&call.id);
        }
        state.push(r);
    }

    #[test]
    fn the_same_call_with_the_same_result_is_refused_at_the_detectors_threshold() {
        let setup = Setup::profile(Profile::Extended);
        let mut s = State::default();
        s.push(Event::prompt("read it"));
        ran(&mut s, &read(1), "hello");
        assert_eq!(judge(&s, &read(2), &setup), None, "twice is no loop");
        ran(&mut s, &read(2), "hello");
        let why = judge(&s, &read(3), &setup).expect("the third identical step is tool-loop's");
        assert!(why.starts_with(MARK), "{why}");
        assert!(why.contains("read_file {path: notes.txt}"), "{why}");
        assert!(why.contains("tool-loop"), "{why}");
        assert!(!why.contains("event"), "no event numbers: {why}");
        // A changed result is progress: not refused.
        let mut s2 = State::default();
        ran(&mut s2, &read(1), "one");
        ran(&mut s2, &read(2), "two");
        assert_eq!(judge(&s2, &read(3), &setup), None);
    }

    #[test]
    fn only_the_result_of_the_same_call_just_before_is_waited_for_and_only_where_results_arrive() {
        let mut s = State::default();
        // An agent that reports calls but no results is never waited for.
        s.push(call_event(&read(1)));
        s.push(call_event(&read(2)));
        assert!(!awaits_result(&s, &read(3)));
        let mut s = State::default();
        ran(&mut s, &read(1), "hello");
        s.push(call_event(&read(2)));
        assert!(awaits_result(&s, &read(3)), "the second call's result is due");
        assert!(!awaits_result(&s, &read(2)), "not for the pending call itself");
        let other = Call {
            name: "grep".into(),
            args: json!({"pattern": "x"}),
            id: Some("c9".into()),
        };
        assert!(!awaits_result(&s, &other), "another call goes ahead");
        s.refused.push((
            call_key("read_file", &json!({"path": "notes.txt"}), KeyStyle::Canonical),
            "no".into(),
        ));
        assert!(!awaits_result(&s, &read(3)), "a refused call is refused again at once");
    }

    #[test]
    fn a_refused_call_stays_refused_until_the_next_prompt_and_its_denial_is_no_result() {
        let setup = Setup::profile(Profile::Extended);
        let mut s = State::default();
        ran(&mut s, &read(1), "hello");
        ran(&mut s, &read(2), "hello");
        let why = judge(&s, &read(3), &setup).unwrap();
        s.refused.push((
            call_key("read_file", &json!({"path": "notes.txt"}), KeyStyle::Canonical),
            why.clone(),
        ));
        // The agent records the refusal as the call's failed result.
        s.push(call_event(&read(3)));
        let mut denial = Event::tool_result_with(false, json!(why.clone()));
        if let EventKind::ToolResult { id, .. } = &mut denial.kind {
            *id = Some("c3".into());
        }
        s.push(denial);
        assert_eq!(judge(&s, &read(4), &setup), Some(why));
        s.push(Event::prompt("something else"));
        assert_eq!(judge(&s, &read(5), &setup), None);
    }

    #[test]
    fn a_pending_call_already_in_the_transcript_is_not_counted_twice() {
        let mut s = State::default();
        ran(&mut s, &read(1), "hello");
        ran(&mut s, &read(2), "hello");
        ran(&mut s, &read(3), "hello");
        ran(&mut s, &read(4), "hello");
        // The fifth call is in the transcript before its hook runs.
        s.push(call_event(&read(5)));
        let seen = history(&s, &read(5));
        assert_eq!(
            seen.iter()
                .filter(|e| matches!(e.kind, EventKind::ToolCall { .. }))
                .count(),
            4
        );
    }
}
