//! Each agent's own loop guard on its own sessions (issue 42, item 3): the
//! real agent (tests/agent_pins.tsv, installed under target/agents) is run
//! offline against the project's scripted model until its guard acts, and
//! `scan --profile AGENT` on the file it wrote has a detection of the same
//! kind at the same call for every warning, block or permission ask the
//! session records. Outside CI a missing agent prints "skipped".

#[path = "common/real_agent.rs"]
mod real_agent;

use real_agent::agent_model::Script;
use real_agent::{require, run, Agent, Run};
use serde_json::{json, Value};

fn loopscope(args: &[&str], file: &std::path::Path) -> Vec<Value> {
    real_agent::loopscope_json(args, file)
}

/// The agent's own detections in a converted session: (level, the index
/// of the call they are about). OpenClaw's are notes after the result of
/// the call they concern (its warning rides on that result; a blocked
/// call's result is its denial).
fn agent_detections(events: &[Value], agent: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if e["kind"] != "agent_loop_detection" || e["agent"] != agent {
            continue;
        }
        let level = e["level"].as_str().unwrap_or_default().to_string();
        let Some(result) = events[..i].iter().rev().find(|x| x["type"] == "tool_result") else {
            continue;
        };
        let call = events
            .iter()
            .position(|x| x["type"] == "tool_call" && x["id"] == result["id"])
            .expect("the result's call");
        out.push((level, call));
    }
    out
}

/// The file's events with the meta line left out, so indices are scan's.
fn converted(run: &Run, file: &std::path::Path) -> Vec<Value> {
    let all = loopscope(&["convert"], file);
    assert!(!all.is_empty(), "{}", run.said());
    all.into_iter().filter(|e| e["type"] != "meta").collect()
}

#[test]
fn openclaw_own_guard_lines_up_with_profile_openclaw() {
    let Some(program) = require(Agent::Openclaw) else {
        return;
    };
    // OpenClaw runs its rolling detection only when it is switched on.
    let settings = json!({"tools": {"loopDetection": {"enabled": true}}});
    let r = run(Agent::Openclaw, &program, Script::ToolLoop(24), Some(settings));
    let files = r.sessions();
    assert_eq!(files.len(), 1, "{files:?}\n{}", r.said());
    let events = converted(&r, &files[0]);
    let own = agent_detections(&events, "openclaw");
    let levels: Vec<&str> = own.iter().map(|(l, _)| l.as_str()).collect();
    assert!(
        levels.contains(&"warning") && levels.contains(&"block"),
        "OpenClaw warned and blocked: {own:?}\n{}",
        r.said()
    );
    let found = loopscope(&["scan", "--json", "--profile", "openclaw"], &files[0]);
    for (level, call) in &own {
        let kind = if level == "warning" { "-warning" } else { "-block" };
        assert!(
            found
                .iter()
                .any(|d| d["event"] == *call && d["detector"].as_str().is_some_and(|id| id.ends_with(kind))),
            "OpenClaw's {level} at the call at event {call} is a detection of its kind: {found:?}\n{own:?}"
        );
    }
    // And nothing OpenClaw did not do: every detection is one it recorded.
    for d in &found {
        let at = d["event"].as_u64().unwrap() as usize;
        assert!(
            own.iter().any(|(_, call)| *call == at),
            "{d} has no counterpart in the session: {own:?}"
        );
    }
}

/// opencode (and Kilo, its fork) ask the doom_loop permission when one
/// response holds three identical calls; with `"doom_loop": "deny"` the
/// ask is answered at once and the session keeps the denial (interactive
/// "ask" waits for a person: `run` has none). Its message's error lists the
/// doom_loop rules; loopscope reads it as the agent's own detection, before
/// the response's parts (the message row comes first). `--profile opencode`
/// must ask at the call where opencode did: the last call of that response
/// (the denial ends the step).
fn doom_loop_lines_up(agent: Agent) {
    let Some(program) = require(agent) else { return };
    let settings = json!({"permission": {"doom_loop": "deny"}});
    let r = run(agent, &program, Script::ParallelLoop(3), Some(settings));
    let files = r.sessions();
    assert_eq!(files.len(), 1, "{files:?}\n{}", r.said());
    let events = converted(&r, &files[0]);
    let denial = events
        .iter()
        .position(|e| e["kind"] == "agent_loop_detection" && e["agent"] == "opencode")
        .unwrap_or_else(|| panic!("the denial is read: {events:?}\n{}", r.said()));
    let request = denial
        + events[denial..]
            .iter()
            .position(|e| e["type"] == "request")
            .expect("the denied response");
    let end = events[request + 1..]
        .iter()
        .position(|e| e["type"] == "request" || e["type"] == "prompt")
        .map_or(events.len(), |i| request + 1 + i);
    let calls: Vec<usize> = (request..end).filter(|&i| events[i]["type"] == "tool_call").collect();
    assert_eq!(calls.len(), 3, "{:?}\n{}", &events[request..end], r.said());
    let found = loopscope(&["scan", "--json", "--profile", "opencode"], &files[0]);
    let asks: Vec<u64> = found
        .iter()
        .filter(|d| d["detector"] == "opencode-doom-loop")
        .map(|d| d["event"].as_u64().unwrap())
        .collect();
    assert_eq!(asks, [calls[2] as u64], "{found:?}\n{}", r.said());
}

#[test]
fn opencode_doom_loop_lines_up_with_profile_opencode() {
    doom_loop_lines_up(Agent::Opencode);
}

#[test]
fn kilo_doom_loop_lines_up_with_profile_opencode() {
    doom_loop_lines_up(Agent::Kilo);
}

/// The OpenHands SDK stops a conversation as STUCK when its detector sees
/// the same action get the same observation four times: the stop is the
/// `execution_status` of the conversation's `base_state.json` (read after
/// its events as the agent's own detection). `--profile openhands` stops at
/// the check the SDK ran, before the LLM call that would have come next —
/// right after the last event — and nowhere else. (The SDK's nudge after
/// three identical *failing* calls needs a tool that raises; its standard
/// tools answer a failure with an error observation, so that path is
/// checked on a conversation in the SDK's shape, tests/peers_openhands.rs.)
#[test]
fn openhands_stuck_stop_lines_up_with_profile_openhands() {
    let Some(program) = require(Agent::Openhands) else {
        return;
    };
    let r = run(Agent::Openhands, &program, Script::ToolLoop(10), None);
    let folders = r.sessions();
    assert_eq!(folders.len(), 1, "{folders:?}\n{}", r.said());
    let events = converted(&r, &folders[0]);
    let stuck: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["kind"] == "agent_loop_detection" && e["agent"] == "openhands")
        .map(|(i, e)| {
            assert_eq!(e["level"], "stuck", "{e}");
            i
        })
        .collect();
    assert_eq!(
        stuck,
        [events.len() - 1],
        "one stop, the last event: {events:?}\n{}",
        r.said()
    );
    // The SDK ran four calls: the fifth LLM call was never made.
    let calls = events.iter().filter(|e| e["type"] == "tool_call").count();
    assert_eq!(calls, 4, "{}", r.said());
    let found = loopscope(&["scan", "--json", "--profile", "openhands"], &folders[0]);
    let ours: Vec<(String, u64)> = found
        .iter()
        .map(|d| {
            (
                d["detector"].as_str().unwrap().to_string(),
                d["event"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ours,
        [("openhands-sdk-stuck".to_string(), events.len() as u64)],
        "{}",
        r.said()
    );
}
