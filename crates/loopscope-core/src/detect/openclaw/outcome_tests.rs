//! outcome.rs's tests: digests and outcomes against OpenClaw's own.
use super::super::stable::*;
use super::*;
use serde_json::json;

#[test]
fn args_key_order_does_not_matter_and_names_are_normalised() {
    assert_eq!(
        call_digest("read", &json!({"a": 1, "b": [1.0, "x"]})),
        call_digest("read", &json!({"b": [1, "x"], "a": 1}))
    );
    assert_ne!(
        call_digest("read", &json!({"a": 1})),
        call_digest("grep", &json!({"a": 1}))
    );
    assert_eq!(tool_name(" Bash "), "exec");
    assert_eq!(tool_name(""), "tool");
    assert_eq!(tool_name("Web_Fetch"), "web_fetch");
}

#[test]
fn unknown_tools_are_named_as_openclaw_reads_them() {
    assert_eq!(unknown_tool("Unknown tool: Web_Fetch").as_deref(), Some("web_fetch"));
    assert_eq!(unknown_tool("unknown tool \"x.y\" requested").as_deref(), Some("x.y"));
    assert_eq!(unknown_tool("Tool 'grep' not found").as_deref(), Some("grep"));
    assert_eq!(
        unknown_tool("the tool  fetch is not available").as_deref(),
        Some("fetch")
    );
    assert_eq!(unknown_tool("unknown toolbox"), None);
    assert_eq!(unknown_tool("Tool grep failed"), None);
    assert_eq!(unknown_tool("未知 unknown tool：x"), None);
    assert_eq!(unknown_tool(""), None);
}

#[test]
fn exec_failures_share_an_identity_across_durations() {
    let run = |cmd: &str, out: &str| {
        outcome(
            "exec",
            &json!({"command": cmd}),
            true,
            Some(
                &json!({"content": [{"type": "text", "text": out}], "details": {"status": "completed", "exitCode": 1, "aggregated": out}}),
            ),
        )
    };
    let a = run("npm test", "FAIL\nDone in 1.00s at 12:00:01 pid 42");
    let b = run("npm test -- x", "FAIL\nDone in 2.53s at 12:00:09 pid 7");
    assert_ne!(a.result, b.result);
    assert!(a.failure_identity.is_some());
    assert_eq!(a.failure_identity, b.failure_identity);
    let ok = run("npm test", "(Command exited with code 1)");
    assert_eq!(ok.failure_identity, None);
}

#[test]
fn outcomes_follow_the_spec_mapping() {
    let read = json!({"path": "a"});
    assert!(!outcome("read", &read, true, None).recorded());
    let e = outcome("read", &read, false, None);
    assert_eq!(e.result, outcome("read", &read, false, Some(&json!("Error"))).result);
    assert!(e.no_progress);
    // A text result and the same text as OpenClaw's result object agree.
    assert_eq!(
        outcome("read", &read, true, Some(&json!(" hi \n"))).result,
        outcome(
            "read",
            &read,
            true,
            Some(&json!({"content": [{"type": "text", "text": "hi"}]}))
        )
        .result
    );
    // An error and a result with the same text differ.
    assert_ne!(
        outcome("read", &read, true, Some(&json!("x"))).result,
        outcome("read", &read, false, Some(&json!("x"))).result
    );
    let veto = json!({"details": {"status": "blocked", "deniedReason": "tool-loop"}});
    assert!(outcome("read", &read, true, Some(&veto)).veto);
    let w = outcome("write", &read, true, Some(&json!({"details": {"changed": false}})));
    assert!(w.no_progress);
    // Sending: ids and the text are not hashed.
    let send = json!({"action": "send"});
    assert_eq!(
        outcome(
            "message",
            &send,
            true,
            Some(&json!({"content": [{"type": "text", "text": "m1"}], "details": {"ok": true, "messageId": "1"}}))
        )
        .result,
        outcome(
            "message",
            &send,
            true,
            Some(&json!({"content": [{"type": "text", "text": "m2"}], "details": {"ok": true, "messageId": "2"}}))
        )
        .result
    );
    // CJK and emoji are text like any other.
    assert_ne!(
        outcome("read", &read, true, Some(&json!("思考 👩‍💻"))).result,
        outcome("read", &read, true, Some(&json!("思考 👩"))).result
    );
}

#[test]
fn untrusted_markers_lose_their_ids_when_consistent() {
    let wrap = |id: &str, end: &str, body: &str| {
        format!("<<<EXTERNAL_UNTRUSTED_CONTENT id=\"{id}\">>>{body}<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\"{end}\">>>")
    };
    let a = wrap("0123456789abcdef", "0123456789abcdef", "page");
    let b = wrap("fedcba9876543210", "fedcba9876543210", "page");
    assert_eq!(zero_markers(&a), zero_markers(&b));
    assert_eq!(zero_markers(&a), wrap(ZERO_ID, ZERO_ID, "page"));
    // Ids that differ, or a stray quote inside, keep the text as it is.
    let c = wrap("0123456789abcdef", "fedcba9876543210", "page");
    assert_eq!(zero_markers(&c), c);
    let d = "<<<EXTERNAL_UNTRUSTED_CONTENT id=\\\"0123456789abcdef\\\">>>say \"x\"<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\\\"0123456789abcdef\\\">>>".to_string();
    assert_eq!(zero_markers(&d), d);
    assert_eq!(zero_markers("plain"), "plain");
}
