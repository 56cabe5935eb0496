//! The other agents' profiles (compat.md): their own unit-test scenarios,
//! translated into native streams, and a property shared with loopscope's
//! canonical keys. The public expectations (`../shared/checks/compat`) were
//! made by running the agents' code; these pin the same rules here.

mod common;

use common::{run, setup, tool};
use loopscope_core::{Event, Profile};
use proptest::prelude::*;
use serde_json::{json, Value};

fn first(profile: Profile, detectors: &[&str], events: &[Event]) -> Option<(&'static str, usize)> {
    run(&setup(profile, detectors), events)
        .first()
        .map(|d| (d.detector, d.event))
}

fn result(ok: bool, output: &str) -> Event {
    Event::tool_result_with(ok, json!(output))
}

// ---------------------------------------------------------------- Roo Code

#[test]
fn roo_blocks_the_fourth_identical_call_and_rearms() {
    let mut ev = vec![Event::prompt("go"), Event::request()];
    for _ in 0..8 {
        ev.push(tool("read_file", r#"{"path":"a.rs"}"#));
    }
    let ds = run(&setup(Profile::RooCode, &["roo-tool-repeat"]), &ev);
    let at: Vec<usize> = ds.iter().map(|d| d.event).collect();
    assert_eq!(at, vec![5, 9], "the 4th and, re-armed, the 8th");
    assert!(ds[0]
        .reason
        .contains("Roo appears to be stuck in a loop, attempting the same action (read_file)"));
    // Three are allowed; A/B never caught; another call resets.
    assert_eq!(first(Profile::RooCode, &["roo-tool-repeat"], &ev[..5]), None);
    let ab: Vec<Event> = (0..10)
        .map(|i| tool(if i % 2 == 0 { "a" } else { "b" }, "{}"))
        .collect();
    assert_eq!(first(Profile::RooCode, &["roo-tool-repeat"], &ab), None);
}

#[test]
fn roo_keys_ignore_argument_order_and_empty_arguments_are_alike() {
    let ev = vec![
        tool("t", r#"{"b":1,"a":{"y":2,"x":1.0}}"#),
        tool("t", r#"{"a":{"x":1,"y":2},"b":1}"#),
        tool("t", r#"{"a":{"x":1,"y":2},"b":1.0}"#),
        tool("t", r#"{"b":1,"a":{"x":1,"y":2}}"#),
    ];
    assert_eq!(
        first(Profile::RooCode, &["roo-tool-repeat"], &ev),
        Some(("roo-tool-repeat", 3))
    );
    let empty = vec![tool("t", "{}"), tool("t", "null"), tool("t", "[]"), tool("t", "false")];
    assert_eq!(
        first(Profile::RooCode, &["roo-tool-repeat"], &empty),
        Some(("roo-tool-repeat", 3))
    );
}

#[test]
fn roo_mistake_limit_counts_errors_and_tool_less_requests() {
    let mut ev = vec![Event::prompt("go")];
    for _ in 0..3 {
        ev.push(Event::request());
        ev.push(tool("edit", r#"{"p":1}"#));
        ev.push(result(false, "no match"));
    }
    ev.push(Event::request());
    assert_eq!(
        first(Profile::RooCode, &["roo-mistake-limit"], &ev),
        Some(("roo-mistake-limit", 10))
    );
    // A success in between resets.
    ev.insert(5, result(true, "ok"));
    assert_eq!(first(Profile::RooCode, &["roo-mistake-limit"], &ev), None);
    // Requests without a tool: the second in a row is the first mistake.
    let idle: Vec<Event> = std::iter::once(Event::prompt("go"))
        .chain((0..5).flat_map(|_| [Event::request(), Event::content("thinking")]))
        .collect();
    assert_eq!(
        first(Profile::RooCode, &["roo-mistake-limit"], &idle),
        Some(("roo-mistake-limit", 9))
    );
}

// ---------------------------------------------------------------- Cline

#[test]
fn cline_warns_at_exactly_three_and_stops_at_five() {
    let mut ev = vec![Event::prompt("go"), Event::request()];
    for _ in 0..6 {
        ev.push(tool("read_file", r#"{"path":"a.rs","task_progress":"- [ ] step"}"#));
    }
    ev.push(Event::request());
    let ds = run(
        &setup(
            Profile::Cline,
            &["cline-loop-warning", "cline-loop", "cline-mistake-limit"],
        ),
        &ev,
    );
    let got: Vec<(&str, usize)> = ds.iter().map(|d| (d.detector, d.event)).collect();
    assert_eq!(
        got,
        vec![("cline-loop-warning", 4), ("cline-loop", 6), ("cline-mistake-limit", 8)]
    );
    assert!(ds[0]
        .reason
        .contains("Tool [read_file] has been called 3 times consecutively"));
    assert!(ds[2].reason.contains("Cline is having trouble"));
    // Only the selected ids speak; the shared state still runs.
    let only_limit = run(&setup(Profile::Cline, &["cline-mistake-limit"]), &ev);
    assert_eq!(only_limit.len(), 1);
    assert_eq!(only_limit[0].event, 8);
}

#[test]
fn cline_signatures_drop_nested_keys_not_named_at_the_top() {
    let calls = |a: &str, b: &str| {
        vec![
            Event::prompt("go"),
            tool("mcp", &format!(r#"{{"server":"db","arguments":{{"query":"{a}"}}}}"#)),
            tool("mcp", &format!(r#"{{"server":"db","arguments":{{"query":"{b}"}}}}"#)),
            tool("mcp", r#"{"server":"db","arguments":{"query":"c"}}"#),
        ]
    };
    assert_eq!(
        first(Profile::Cline, &["cline-loop-warning"], &calls("a", "b")),
        Some(("cline-loop-warning", 3))
    );
    let kept = vec![
        Event::prompt("go"),
        tool("mcp", r#"{"query":"x","arguments":{"query":"a"}}"#),
        tool("mcp", r#"{"query":"x","arguments":{"query":"b"}}"#),
        tool("mcp", r#"{"query":"x","arguments":{"query":"c"}}"#),
    ];
    assert_eq!(first(Profile::Cline, &["cline-loop-warning"], &kept), None);
}

// ---------------------------------------------------------------- OpenHands

fn shell(cmd: &str) -> Event {
    Event::tool_call("execute_bash", json!({ "command": cmd }))
}

#[test]
fn openhands_ignores_a_shell_commands_output() {
    let mut ev = vec![Event::prompt("wait for the build")];
    for i in 0..4 {
        ev.push(Event::request());
        ev.push(shell("tail -n 1 build.log"));
        ev.push(result(true, &format!("[{}%] building", 25 * (i + 1))));
    }
    let d = run(&setup(Profile::OpenhandsV0, &["openhands-stuck"]), &ev);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].event, 12, "at the 4th observation");
    assert!(
        d[0].reason.contains("Loop type: repeating_action_observation"),
        "{}",
        d[0].reason
    );
    // Another tool's output is compared: changing output is no loop.
    let mut other = vec![Event::prompt("poll")];
    for i in 0..6 {
        other.push(Event::request());
        other.push(tool("get_status", "{}"));
        other.push(result(true, &format!("{i}")));
    }
    assert_eq!(first(Profile::OpenhandsV0, &["openhands-stuck"], &other), None);
}

#[test]
fn openhands_monologue_errors_and_thoughts() {
    // Three equal agent messages (requests without a tool) and nothing observed.
    let mut ev = vec![Event::prompt("hi")];
    for _ in 0..4 {
        ev.push(Event::request());
        ev.push(Event::content("I am not sure."));
    }
    ev.push(Event::request());
    assert_eq!(
        first(Profile::OpenhandsV0, &["openhands-stuck"], &ev),
        Some(("openhands-stuck", 7))
    );
    // The same failing call three times.
    let mut err = vec![Event::prompt("fix")];
    for _ in 0..3 {
        err.push(Event::request());
        err.push(tool("edit", r#"{"a":1}"#));
        err.push(result(false, "no such file"));
    }
    assert_eq!(
        first(Profile::OpenhandsV0, &["openhands-stuck"], &err),
        Some(("openhands-stuck", 9))
    );
    // A different thought before the call makes a different action.
    let mut thoughts = vec![Event::prompt("go")];
    for i in 0..4 {
        thoughts.push(Event::request());
        thoughts.push(Event::content(&format!("attempt {i}: ")));
        thoughts.push(shell("ls"));
        thoughts.push(result(true, "a b"));
    }
    assert_eq!(first(Profile::OpenhandsV0, &["openhands-stuck"], &thoughts), None);
}

// ---------------------------------------------------------------- Roo fork

#[test]
fn the_fork_catches_cjk_stutter_at_its_first_checkpoint_only() {
    let prose: String = "我们先检查配置文件的格式是否正确。".repeat(60);
    let cut: String = prose.chars().take(960).collect();
    let zh = vec![
        Event::prompt("go"),
        Event::request(),
        Event::reasoning(&cut),
        Event::reasoning(&"然后".repeat(30)),
    ];
    let d = run(&setup(Profile::RooFork, &["roo-fork-dead-loop"]), &zh);
    assert_eq!(d.len(), 1);
    assert!(d[0].reason.contains("检测到短序列循环"), "{}", d[0].reason);
    assert_eq!(d[0].checkpoint, Some(1000));
    // The same in English is not a short sequence for the fork.
    let en = vec![
        Event::prompt("go"),
        Event::request(),
        Event::reasoning(&"a".repeat(960)),
        Event::reasoning(&"then ".repeat(30)),
    ];
    assert_eq!(first(Profile::RooFork, &["roo-fork-dead-loop"], &en), None);
}

// ---------------------------------------------------------------- shared keys

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(|n| json!(n)),
        (-3i64..3).prop_map(|n| json!(n as f64)),
        "[a-c]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..3).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-c]", json_value(), 0..3).prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    /// Roo's stable-JSON key and loopscope's canonical key agree on which
    /// calls are the same, except that Roo treats every argument value
    /// without keys (`{}`, `[]`, `null`, `""`, `0`, `false`) as one.
    #[test]
    fn roo_keys_match_canonical_keys(a in json_value(), b in json_value()) {
        let empty = |v: &Value| match v {
            Value::Object(m) => m.is_empty(),
            Value::Array(x) => x.is_empty(),
            Value::String(s) => s.is_empty(),
            _ => true,
        };
        let stream = |args: &Value| vec![
            Event::prompt("go"),
            Event::tool_call("t", a.clone()),
            Event::tool_call("t", args.clone()),
            Event::tool_call("t", args.clone()),
            Event::tool_call("t", args.clone()),
        ];
        let roo_same = first(Profile::RooCode, &["roo-tool-repeat"], &stream(&b)).is_some();
        let canonical_same = loopscope_core::detect::keys::call_key("t", &a, loopscope_core::detect::keys::KeyStyle::Canonical)
            == loopscope_core::detect::keys::call_key("t", &b, loopscope_core::detect::keys::KeyStyle::Canonical);
        let expected = canonical_same || (empty(&a) && empty(&b));
        prop_assert_eq!(roo_same, expected, "{} vs {}", a, b);
    }
}

// ---------------------------------------------------------------- the CLI

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = common::loopscope_at_root().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_new_profiles_and_their_parameters_on_the_command_line() {
    for (profile, ids) in [
        ("openhands-v0", vec!["openhands-stuck"]),
        ("roo-code", vec!["roo-tool-repeat", "roo-mistake-limit"]),
        ("cline", vec!["cline-loop-warning", "cline-loop", "cline-mistake-limit"]),
        ("roo-fork", vec!["roo-fork-dead-loop"]),
        (
            "openclaw",
            vec![
                "openclaw-generic-repeat-warning",
                "openclaw-generic-repeat-block",
                "openclaw-compaction-abort",
            ],
        ),
        ("opencode", vec!["opencode-doom-loop"]),
    ] {
        let (code, out, err) = cli(&["detectors", "--profile", profile]);
        assert_eq!(code, 0, "{err}");
        for id in ids {
            assert!(out.contains(id), "{profile}: {out}");
        }
        assert!(out.contains("@"), "the agent's version is named: {out}");
    }
    // Roo with a higher limit: the 4th read is no longer blocked.
    let file = "sample-logs/roo-fourth-read.jsonl";
    let (code, out, _) = cli(&["scan", "--profile", "roo-code", file]);
    assert_eq!(code, 1);
    assert!(
        out.contains("roo-tool-repeat") && out.contains("Roo appears to be stuck"),
        "{out}"
    );
    let (code, _, _) = cli(&[
        "scan",
        "--profile",
        "roo-code",
        "--set",
        "roo-tool-repeat.limit=5",
        file,
    ]);
    assert_eq!(code, 0);
    let (code, _, err) = cli(&["scan", "--profile", "cline", "--set", "cline-loop.nope=1", file]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
    let (code, _, err) = cli(&[
        "scan",
        "--profile",
        "openhands-v0",
        "--set",
        "openhands-stuck.headless=true",
        file,
    ]);
    assert!(matches!(code, 0 | 1), "{err}");
}

// ---------------------------------------------------------------- qwen-code

fn qwen(events: &[Event], sets: &[&str]) -> Vec<(&'static str, usize)> {
    let choices = loopscope_core::Choices {
        profile: Some(Profile::QwenCode),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let setup = loopscope_core::Setup::resolve_with(&choices, "").unwrap();
    run(&setup, events).iter().map(|d| (d.detector, d.event)).collect()
}

#[test]
fn qwen_repeats_fire_at_five_and_polling_with_changing_results_does_not() {
    let mut ev = vec![Event::prompt("go")];
    for _ in 0..5 {
        ev.push(tool("read_file", r#"{"path":"a"}"#));
    }
    assert_eq!(qwen(&ev, &[]), vec![("qwen-tool-repeat", 5)]);
    assert_eq!(qwen(&ev[..5], &[]), vec![], "four are fine");
    // task_list polled with ids and changing results: productive.
    let mut poll = vec![Event::prompt("go")];
    for i in 0..6 {
        let mut call = tool("task_list", "{}");
        if let loopscope_core::event::EventKind::ToolCall { id, .. } = &mut call.kind {
            *id = Some(format!("c{i}"));
        }
        let mut res = Event::tool_result_with(true, json!(format!("{i} of 6 done")));
        if let loopscope_core::event::EventKind::ToolResult { id, .. } = &mut res.kind {
            *id = Some(format!("c{i}"));
        }
        poll.push(call);
        poll.push(res);
    }
    assert_eq!(qwen(&poll, &[]), vec![]);
}

#[test]
fn qwen_whitespace_thoughts_and_the_heuristics_switch() {
    let ev = vec![
        Event::prompt("go"),
        Event::request(),
        Event::reasoning("\n\n"),
        Event::reasoning("\n"),
        Event::reasoning(" "),
    ];
    assert_eq!(
        qwen(&ev, &[]),
        vec![("qwen-thoughts", 4)],
        "the signature of each is '|'"
    );
    assert_eq!(qwen(&ev, &["qwen-code.heuristics=false"]), vec![]);
    // A tool call clears the thoughts.
    let mut cleared = ev.clone();
    cleared.insert(4, tool("ls", "{}"));
    assert_eq!(qwen(&cleared, &[]), vec![]);
}

#[test]
fn qwen_latches_until_the_next_prompt_and_the_turn_cap_is_adaptive() {
    let mut ev = vec![Event::prompt("go")];
    for _ in 0..7 {
        ev.push(tool("read_file", r#"{"path":"a"}"#));
    }
    assert_eq!(qwen(&ev, &[]).len(), 1, "one detection per prompt");
    ev.push(Event::prompt("again"));
    for _ in 0..5 {
        ev.push(tool("read_file", r#"{"path":"a"}"#));
    }
    assert_eq!(qwen(&ev, &[]).len(), 2);
    // Cap 10, adaptive: past 10 calls it halts once one call was seen 6 times.
    let mut cap = vec![Event::prompt("go")];
    for i in 0..12 {
        let path = if i % 2 == 0 { "a".to_string() } else { format!("b{i}") };
        cap.push(Event::tool_call("stat", json!({ "path": path })));
    }
    assert_eq!(
        qwen(&cap, &["qwen-turn-cap.cap=10", "qwen-code.heuristics=false"]),
        vec![("qwen-turn-cap", 11)]
    );
}

proptest! {
    /// qwen's repeat key and loopscope's canonical key agree (for object
    /// arguments; qwen turns falsy arguments into `{}`).
    #[test]
    fn qwen_repeat_keys_match_canonical_keys(a in json_object(), b in json_object()) {
        let mut ev = vec![Event::prompt("go"), Event::tool_call("t", a.clone())];
        for _ in 0..4 {
            ev.push(Event::tool_call("t", b.clone()));
        }
        let fired = !qwen(&ev, &["qwen-code.heuristics=false"]).is_empty();
        let same = loopscope_core::detect::keys::call_key("t", &a, loopscope_core::detect::keys::KeyStyle::Canonical)
            == loopscope_core::detect::keys::call_key("t", &b, loopscope_core::detect::keys::KeyStyle::Canonical);
        prop_assert_eq!(fired, same, "{} vs {}", a, b);
    }
}

#[test]
fn qwen_code_on_the_command_line() {
    let (code, out, _) = cli(&["detectors", "--profile", "qwen-code"]);
    assert_eq!(code, 0);
    for id in ["qwen-tool-repeat", "qwen-chant", "qwen-turn-cap", "heuristics"] {
        assert!(out.contains(id), "{out}");
    }
    let file = "sample-logs/qwen-tour.jsonl";
    let (code, out, _) = cli(&[
        "scan",
        "--profile",
        "qwen-code",
        "--set",
        "qwen-code.heuristics=false",
        file,
    ]);
    assert_eq!(code, 1);
    assert!(!out.contains("qwen-thoughts"), "the heuristic tier is off: {out}");
    assert!(
        out.contains("qwen-tool-repeat") && out.contains("A potential loop was detected"),
        "{out}"
    );
    let (code, _, err) = cli(&[
        "scan",
        "--profile",
        "qwen-code",
        "--set",
        "qwen-code.thoughts=cooked",
        file,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("raw, parsed"), "{err}");
}
