//! `loopscope hook` as an agent runs it: JSON on stdin, a refusal (or
//! nothing) on stdout, exit 0 whatever happens (an agent reads exit 2 as a
//! refusal); a transcript read once, then only what was appended; and
//! `hook install` / `uninstall` / `status` on a temporary HOME.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");

fn hook(args: &[&str], input: &str, cache: &Path, log: Option<&Path>) -> Output {
    let mut c = Command::new(BIN);
    c.arg("hook")
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .env_remove("LOOPSCOPE_CONFIG")
        .env_remove("LOOPSCOPE_HOOK_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(l) = log {
        c.env("LOOPSCOPE_HOOK_LOG", l);
    }
    let mut child = c.spawn().unwrap();
    // A hook may answer before reading all of its input.
    let _ = child.stdin.take().unwrap().write_all(input.as_bytes());
    child.wait_with_output().unwrap()
}

/// A Claude Code transcript line: an assistant's call or the user record of its result.
fn call_line(n: usize) -> String {
    json!({"type": "assistant", "uuid": format!("a{n}"), "parentUuid": null, "sessionId": "s", "requestId": format!("req{n}"),
        "message": {"id": format!("msg{n}"), "role": "assistant", "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "Read", "input": {"file_path": "/w/notes.txt"}}]}})
    .to_string()
}

fn result_line(n: usize) -> String {
    json!({"type": "user", "uuid": format!("u{n}"), "parentUuid": format!("a{n}"), "sessionId": "s",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{n}"), "content": "hello 🧪 试验"}]}})
    .to_string()
}

fn pre(transcript: &Path, n: usize) -> String {
    json!({"session_id": "s", "transcript_path": transcript, "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": {"file_path": "/w/notes.txt"}, "tool_use_id": format!("toolu_{n}")})
    .to_string()
}

#[test]
fn a_loop_is_refused_in_claude_codes_words_and_a_clean_call_allowed_silently() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.jsonl");
    let mut text =
        json!({"type": "user", "uuid": "p", "sessionId": "s", "message": {"role": "user", "content": "读一下 notes"}})
            .to_string()
            + "\n";
    std::fs::write(&t, &text).unwrap();
    let first = hook(&["claude-code"], &pre(&t, 1), dir.path(), None);
    assert_eq!(first.status.code(), Some(0));
    assert!(first.stdout.is_empty(), "allowing says nothing");
    for n in 1..=2 {
        text += &(call_line(n) + "\n" + &result_line(n) + "\n");
    }
    std::fs::write(&t, &text).unwrap();
    let third = hook(&["claude-code"], &pre(&t, 3), dir.path(), None);
    assert_eq!(third.status.code(), Some(0), "a refusal is exit 0 with the JSON");
    let v: Value = serde_json::from_slice(&third.stdout).unwrap();
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny");
    assert_eq!(out["hookEventName"], "PreToolUse");
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.starts_with("loopscope stopped a loop: Read {file_path: /w/notes.txt}"),
        "{reason}"
    );
    assert!(reason.contains("3 times"), "{reason}");
    assert!(reason.contains("tool-loop, loopscope's extended profile"), "{reason}");
    // The detectors as installed: --profile, --detectors.
    let seed = hook(
        &["claude-code", "--profile", "seed"],
        &pre(&t, 3),
        &dir.path().join("a"),
        None,
    );
    assert!(String::from_utf8_lossy(&seed.stdout).contains("action-window, loopscope's seed profile"));
    let five = hook(
        &["claude-code", "--profile", "seed", "--detectors", "tool-repeat"],
        &pre(&t, 3),
        &dir.path().join("b"),
        None,
    );
    assert!(
        five.stdout.is_empty(),
        "tool-repeat waits for 5: {}",
        String::from_utf8_lossy(&five.stdout)
    );
}

/// The agent can run a call's hook before the last call's result is
/// written (its transcript a little behind, or its result hook late): the
/// hook waits for the result of the identical call just before, so the
/// third identical call is refused at the third, not the fourth.
#[test]
fn a_result_written_late_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.jsonl");
    let mut text =
        json!({"type": "user", "uuid": "p", "sessionId": "s", "message": {"role": "user", "content": "read"}})
            .to_string()
            + "\n";
    text += &(call_line(1) + "\n" + &result_line(1) + "\n" + &call_line(2) + "\n");
    std::fs::write(&t, &text).unwrap();
    let input = pre(&t, 3);
    let cache = dir.path().join("cache");
    let third = {
        let cache = cache.clone();
        std::thread::spawn(move || hook(&["claude-code"], &input, &cache, None))
    };
    // The hook saves what it has read before it waits: once the session's
    // state is written, the second call's result arrives.
    let states = cache.join("loopscope/hooks");
    let saved = || {
        std::fs::read_dir(&states)
            .map(|d| d.flatten().any(|f| f.metadata().is_ok_and(|m| m.len() > 0)))
            .unwrap_or(false)
    };
    while !saved() && !third.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    text += &(result_line(2) + "\n");
    std::fs::write(&t, &text).unwrap();
    let out = third.join().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("permissionDecision") && said.contains("3 times"),
        "{said}"
    );

    // A result that never comes holds the call back only briefly: allowed.
    let t2 = dir.path().join("s2.jsonl");
    let text = call_line(1) + "\n" + &result_line(1) + "\n" + &call_line(2) + "\n";
    std::fs::write(&t2, text).unwrap();
    let out = hook(&["claude-code"], &pre(&t2, 3), &dir.path().join("c2"), None);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn nothing_that_goes_wrong_blocks_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["claude-code"], "not json"),
        (
            &["claude-code"],
            r#"{"hook_event_name":"PreToolUse","transcript_path":"/no/such/file.jsonl","tool_name":"Read","tool_input":{}}"#,
        ),
        (&["no-such-agent"], "{}"),
        (&["claude-code", "--profile", "nope"], "{}"),
        (&["claude-code", "--no-such-flag"], "{}"),
        (&["claude-code", "--set", "tool-loop.repeats=zero"], "{}"),
    ];
    for (args, input) in cases {
        let out = hook(args, input, dir.path(), None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the call is allowed"), "{args:?}: {err}");
    }
    // The commands a person runs still fail as commands do.
    let out = Command::new(BIN)
        .args(["hook", "install", "no-such-agent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_transcript_is_read_once_then_only_what_was_appended() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("s.jsonl");
    let log = dir.path().join("hook.log");
    // About 10 MB of history: other calls, each with a long result.
    let mut text = String::new();
    let long = "x".repeat(10_000);
    for n in 0..1000 {
        let c = json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "s", "requestId": format!("r{n}"),
            "message": {"id": format!("m{n}"), "role": "assistant", "content": [{"type": "tool_use", "id": format!("t{n}"), "name": "Grep", "input": {"pattern": format!("p{n}")}}]}});
        let r = json!({"type": "user", "uuid": format!("u{n}"), "sessionId": "s",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}"), "content": long}]}});
        text += &format!("{c}\n{r}\n");
    }
    std::fs::write(&t, &text).unwrap();
    let size = text.len() as u64;
    assert!(size > 10_000_000);
    hook(&["claude-code"], &pre(&t, 1), dir.path(), Some(&log));
    let appended = call_line(1) + "\n" + &result_line(1) + "\n";
    std::fs::write(&t, text + &appended).unwrap();
    hook(&["claude-code"], &pre(&t, 2), dir.path(), Some(&log));
    let reads: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["read"].as_u64().unwrap())
        .collect();
    assert_eq!(
        reads,
        [size, appended.len() as u64],
        "the second call reads what was appended"
    );
}

#[test]
fn install_keeps_the_agents_settings_and_status_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let settings = home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, r#"{"permissions":{"allow":["Bash(ls)"]}}"#).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let dry = run(&["hook", "install", "claude-code", "--dry-run"]);
    assert!(String::from_utf8_lossy(&dry.stdout).starts_with("would change"));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        r#"{"permissions":{"allow":["Bash(ls)"]}}"#
    );
    let out = run(&["hook", "install", "claude-code", "--profile", "seed"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
    let command = v["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap();
    assert!(command.ends_with("hook claude-code --profile seed"), "{command}");
    let again = run(&["hook", "install", "claude-code", "--profile", "seed"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to change"));
    run(&["hook", "install", "pi", "--project"]);
    let status = String::from_utf8_lossy(&run(&["hook", "status"]).stdout).to_string();
    assert!(status.contains("claude-code  installed (user)"), "{status}");
    assert!(status.contains("pi           installed (project)"), "{status}");
    assert!(status.contains("gemini-cli   not installed"), "{status}");
    run(&["hook", "uninstall", "claude-code"]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v, json!({"permissions": {"allow": ["Bash(ls)"]}}));
}
