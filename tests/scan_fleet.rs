//! `scan` over a machine's agents (issue 15): `--agent` with a fake HOME,
//! globs, sub-agents named after their parent, skipped files, the same
//! output whatever the parallelism, and the `--json` record schema.

mod common;

use common::fleet::{Fleet, PROJECT, SESSION};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn records(o: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn agent_all_finds_every_agents_sessions_and_names_sub_agents_after_their_parent() {
    let fleet = Fleet::new();
    let out = fleet
        .cmd()
        .args(["scan", "--agent", "all", "-j", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let home = fleet.path().display().to_string();
    let files: Vec<String> = text
        .lines()
        .map(|l| {
            l.split(" event ")
                .next()
                .unwrap()
                .trim_end_matches(':')
                .replace(&home, "~")
        })
        .map(|l| l.split(": no detections").next().unwrap().to_string())
        .collect();
    let mut order = files.clone();
    order.dedup();
    let parent = format!("~/{PROJECT}/{SESSION}.jsonl");
    assert_eq!(
        order,
        vec![
            format!("~/{PROJECT}/00000000-clean.jsonl"),
            format!("~/{PROJECT}/00000000-clean.jsonl ▸ agent-old42"),
            parent.clone(),
            format!("{parent} ▸ agent-a1b2c3"),
            "~/.codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-0199.jsonl".to_string(),
            "~/.gemini/tmp/shop/chats/session-2026-11-20T10-00-5f0c1d2e.jsonl".to_string(),
            "~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/1732000000000".to_string(),
        ],
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    // notes.jsonl is looked at and skipped; config.toml and logs.json are not sessions' names.
    assert!(err.contains("1 file skipped (not agent sessions)"), "{err}");
    // One core or two: the same bytes.
    let one = fleet
        .cmd()
        .args(["scan", "--agent", "all", "-j", "1"])
        .output()
        .unwrap();
    assert_eq!(one.stdout, out.stdout);
}

#[test]
fn one_agent_a_glob_and_the_override_variable() {
    let fleet = Fleet::new();
    let codex = fleet.cmd().args(["scan", "--agent", "codex"]).output().unwrap();
    let text = stdout(&codex);
    assert!(text.lines().all(|l| l.contains("/.codex/sessions/")), "{text}");
    assert!(text.contains("error-streak"), "{text}");
    let glob = format!("{}/.claude/**/agent-*.jsonl", fleet.path().display());
    let out = fleet.cmd().args(["scan", &glob]).output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("▸ agent-a1b2c3") && text.contains("▸ agent-old42"),
        "{text}"
    );
    assert!(!text.contains(&format!("{SESSION}.jsonl event")), "{text}");
    let none = fleet.cmd().args(["scan", "/nonexistent/**/*.jsonl"]).output().unwrap();
    assert!(String::from_utf8_lossy(&none.stderr).contains("no file matches"));
    // The override replaces the usual folder. With no session at all there
    // is nothing to scan: exit 2, saying where it looked.
    let moved = fleet
        .cmd()
        .env("LOOPSCOPE_CODEX_DIR", fleet.path().join("elsewhere"))
        .args(["scan", "--agent", "codex"])
        .output()
        .unwrap();
    assert_eq!(moved.status.code(), Some(2));
    let err = String::from_utf8_lossy(&moved.stderr);
    // One line (issue 44): a note per agent would say it twice.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("LOOPSCOPE_CODEX_DIR"), "{err}");
    assert!(err.contains("no session of codex found (looked in "), "{err}");
    assert!(err.contains("elsewhere)"), "{err}");
    let bad = fleet.cmd().args(["scan", "--agent", "vim"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let nothing = fleet.cmd().args(["scan"]).output().unwrap();
    assert_eq!(nothing.status.code(), Some(2));
}

#[test]
fn since_leaves_out_old_sessions_found_through_an_agent() {
    let fleet = Fleet::new();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    let rollout = fleet
        .path()
        .join(".codex/sessions/2026/11/20/rollout-2026-11-20T10-00-00-0199.jsonl");
    std::fs::File::options()
        .write(true)
        .open(&rollout)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let out = fleet
        .cmd()
        .args(["scan", "--agent", "codex,gemini-cli", "--since", "7d"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(!text.contains("rollout-") && text.contains("session-2026"), "{text}");
}

#[test]
fn json_records_follow_the_documented_schema_with_summary_numbers() {
    let fleet = Fleet::new();
    let out = fleet
        .cmd()
        .args(["scan", "--agent", "all", "--json", "--summary"])
        .output()
        .unwrap();
    let recs = records(&out);
    let kinds: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    // Detections first, then one summary per file, then the totals.
    let first_summary = kinds.iter().position(|k| *k == "summary").unwrap();
    assert!(kinds[..first_summary].iter().all(|k| *k == "detection"));
    assert_eq!(kinds.iter().filter(|k| **k == "summary").count(), 7);
    assert_eq!(*kinds.last().unwrap(), "totals");
    for r in &recs {
        assert_eq!(r["schema"], 1, "{r}");
    }
    for d in recs.iter().filter(|r| r["type"] == "detection") {
        for key in ["file", "detector", "event", "channel", "reason"] {
            assert!(d.get(key).is_some(), "{key} missing in {d}");
        }
    }
    let sub = recs
        .iter()
        .find(|r| r["type"] == "detection" && r["file"].as_str().unwrap().ends_with("agent-a1b2c3.jsonl"))
        .expect("a sub-agent detection");
    assert!(sub["parent"].as_str().unwrap().ends_with(&format!("{SESSION}.jsonl")));
    let clean = recs
        .iter()
        .find(|r| r["type"] == "summary" && r["file"].as_str().unwrap().ends_with("00000000-clean.jsonl"))
        .unwrap();
    assert_eq!(clean["detections"], 0);
    assert_eq!(clean["first"], serde_json::Value::Null);
    assert_eq!(clean["agent"], "claude-code");
    let looping = recs
        .iter()
        .find(|r| r["type"] == "summary" && r["file"].as_str().unwrap().ends_with(&format!("{SESSION}.jsonl")))
        .unwrap();
    assert_eq!(looping["detections"], 3);
    assert_eq!(looping["first"]["detector"], "action-window");
    assert_eq!(looping["first"]["event"], 11);
    assert!(looping["after_first"]["tool_calls"].as_u64().unwrap() > 0);
    let totals = recs.last().unwrap();
    assert_eq!(totals["files"], 7);
    assert_eq!(totals["per_agent"]["claude-code"]["files"], 4);
    assert_eq!(totals["per_agent"]["claude-code"]["looped"], 3);
    assert_eq!(totals["per_agent"]["cline"]["files"], 1);
    assert_eq!(totals["per_detector"]["tool-repeat"], 5);
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    let fleet = Fleet::new();
    let out = fleet.cmd().args(["scan", "--agent", "all"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("ETA") && !err.contains('\r'), "{err}");
}
