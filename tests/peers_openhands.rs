//! Profile `openhands` = the OpenHands SDK's stuck detector (issue 42): on
//! a conversation folder in the SDK's own shape, where the agent nudged the
//! model and then stopped as STUCK, the profile's nudge and stuck line up
//! with the agent's (a detection at the check before the next LLM call,
//! right after what the agent wrote). The real SDK's stop on a repeated
//! call is checked on the folder it writes (tests/agent_guards.rs); its
//! nudge needs a tool that raises (its standard tools answer failures with
//! error observations), so the folder here is written in its shape
//! (`openhands/sdk/event/*`, 1.58.2): `SystemPromptEvent`, the user's
//! `MessageEvent`, `ActionEvent`s with their `AgentErrorEvent`s, the
//! environment's nudge message, and the stop as the SDK keeps it: only
//! `base_state.json`'s `execution_status`.

mod common;

use std::path::Path;

use serde_json::{json, Value};

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = common::loopscope_at_root().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const NUDGE: &str = "You've called `terminal` with the same arguments 3 times in a row and gotten the same error each time: Command not found: pytest. Repeating the exact same call again will not work — review the error message and either correct the arguments or try a different approach.";

/// The events the SDK writes for a run that repeats one failing call: the
/// nudge after the 3rd error, STUCK after the 4th.
fn stuck_conversation(dir: &Path) -> std::path::PathBuf {
    let conv = dir.join("conversations").join("9a8b7c6d5e4f40312233445566778899");
    let events_dir = conv.join("events");
    std::fs::create_dir_all(&events_dir).unwrap();
    std::fs::write(
        conv.join("base_state.json"),
        json!({"id": "9a8b7c6d-5e4f-4031-2233-445566778899", "agent": {"llm": {"model": "openai/qwen3"}, "kind": "Agent"}, "execution_status": "stuck"}).to_string(),
    )
    .unwrap();
    let mut events = vec![
        json!({"id": "e-0", "timestamp": "2026-03-01T10:00:00.000001", "source": "agent", "system_prompt": {"type": "text", "text": "You are OpenHands agent."}, "tools": [], "kind": "SystemPromptEvent"}),
        json!({"id": "u-0", "timestamp": "2026-03-01T10:00:01.000001", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "修复测试 — fix the tests 🙏"}]}, "kind": "MessageEvent"}),
    ];
    let step = |k: usize| {
        vec![
            json!({"id": format!("a-{k}"), "timestamp": format!("2026-03-01T10:00:{:02}.000001", 2 + 3 * k), "source": "agent",
                   "thought": [{"type": "text", "text": "Run the tests again."}], "reasoning_content": null, "thinking_blocks": [],
                   "action": {"command": "pytest -x", "is_input": false, "kind": "TerminalAction"}, "tool_name": "terminal",
                   "tool_call_id": format!("call_{k}"),
                   "tool_call": {"id": format!("call_{k}"), "name": "terminal", "arguments": "{\"command\": \"pytest -x\"}", "origin": "completion"},
                   "llm_response_id": format!("chatcmpl-{k}"), "kind": "ActionEvent"}),
            json!({"id": format!("x-{k}"), "timestamp": format!("2026-03-01T10:00:{:02}.500001", 3 + 3 * k), "source": "agent",
                   "tool_name": "terminal", "tool_call_id": format!("call_{k}"), "error": "Command not found: pytest", "kind": "AgentErrorEvent"}),
        ]
    };
    for k in 0..3 {
        events.extend(step(k));
    }
    events.push(json!({"id": "n-0", "timestamp": "2026-03-01T10:00:12.000001", "source": "environment",
                       "llm_message": {"role": "user", "content": [{"type": "text", "text": NUDGE}]}, "kind": "MessageEvent"}));
    events.extend(step(3));
    for (i, e) in events.iter().enumerate() {
        let id = e["id"].as_str().unwrap();
        std::fs::write(events_dir.join(format!("event-{i:05}-{id}.json")), e.to_string()).unwrap();
    }
    conv
}

fn detections(profile: &str, path: &str) -> Vec<(String, u64)> {
    let (code, out, err) = cli(&["scan", "--json", "--profile", profile, path]);
    assert!(matches!(code, 0 | 1), "{err}");
    out.lines()
        .map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            (
                d["detector"].as_str().unwrap().to_string(),
                d["event"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_sdk_profile_nudges_and_stops_where_the_agent_did() {
    let dir = tempfile::tempdir().unwrap();
    let conv = stuck_conversation(dir.path());
    let path = conv.display().to_string();
    // Where the agent's own nudge and stop sit in the stream.
    let (code, out, err) = cli(&["convert", &path]);
    assert_eq!(code, 0, "{err}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] != "meta")
        .collect();
    let agent = |level: &str| {
        events
            .iter()
            .position(|e| e["kind"] == "agent_loop_detection" && e["agent"] == "openhands" && e["level"] == level)
            .unwrap_or_else(|| panic!("no {level} note in {out}")) as u64
    };
    let (nudged, stopped) = (agent("nudge"), agent("stuck"));
    // Its checks run before the LLM call after each: the nudge's check is
    // the request right after the nudge, the stop's is at the stream's end.
    assert_eq!(events[nudged as usize + 1]["type"], "request");
    assert_eq!(stopped as usize, events.len() - 1);
    assert_eq!(
        detections("openhands", &path),
        vec![
            ("openhands-sdk-nudge".to_string(), nudged + 1),
            ("openhands-sdk-stuck".to_string(), stopped + 1)
        ]
    );
    // V0 gives no nudge: on this stream it stops at the 4th failing call's
    // error, the last result (the SDK stops at the LLM call after it).
    let v0 = detections("openhands-v0", &path);
    let last_result = events.iter().rposition(|e| e["type"] == "tool_result").unwrap() as u64;
    assert_eq!(v0, vec![("openhands-stuck".to_string(), last_result)]);
}

#[test]
fn the_thresholds_are_set_on_the_command_line_and_listed() {
    let (code, out, err) = cli(&["detectors", "--profile", "openhands", "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = doc["detectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["openhands-sdk-nudge", "openhands-sdk-stuck"]);
    let params: Vec<&str> = doc["detectors"][1]["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        params,
        ["action_observation", "action_error", "monologue", "alternating_pattern"]
    );
    // action_error 2: the nudge after the 2nd error, the stop after the 3rd.
    let dir = tempfile::tempdir().unwrap();
    let conv = stuck_conversation(dir.path());
    let path = conv.display().to_string();
    let (code, out, err) = cli(&[
        "scan",
        "--json",
        "--profile",
        "openhands",
        "--set",
        "openhands-sdk-stuck.action_error=2",
        &path,
    ]);
    assert!(matches!(code, 0 | 1), "{err}");
    let found: Vec<(String, u64)> = out
        .lines()
        .map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            (
                d["detector"].as_str().unwrap().to_string(),
                d["event"].as_u64().unwrap(),
            )
        })
        .collect();
    // Steps are request, thought, call, error: requests at 1, 5, 9.
    assert_eq!(
        found,
        vec![
            ("openhands-sdk-nudge".to_string(), 9),
            ("openhands-sdk-stuck".to_string(), 14)
        ]
    );
    let (code, _, err) = cli(&[
        "scan",
        "--profile",
        "openhands",
        "--set",
        "openhands-sdk-stuck.monologue=0",
        &path,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("at least 1"), "{err}");
}
