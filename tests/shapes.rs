//! The importers on one fixture per shape the real agents write
//! (tests/fixtures/shapes): the shapes seen in the public sessions of
//! ../shared/wild and in the lab's reports on each agent, written for this
//! project with invented content. EXPECT.json beside them says, per
//! fixture, what reading it must give: its format, the prompts' texts,
//! every call (name and exact arguments) and every result's ok in order,
//! the notes by kind, no bad lines, the unknown records. Each fixture is
//! checked through the library (`open_input` and a decode, as every
//! command reads) and through `loopscope scan --summary --json`.
//!
//! Every mismatch of every fixture is listed before the test fails, so one
//! run shows all that an importer change broke.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use loopscope_core::formats::{self, Decoded, FormatChoice};
use loopscope_core::EventKind;
use serde_json::{json, Value};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/shapes");
const EXPECT: &str = "EXPECT.json";

/// EXPECT.json's fixtures: path (relative to DIR) and what reading it gives.
fn expectations() -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(Path::new(DIR).join(EXPECT)).expect("EXPECT.json");
    let doc: Value = serde_json::from_str(&text).expect("EXPECT.json is JSON");
    let fixtures = doc["fixtures"].as_object().expect("EXPECT.json has fixtures");
    fixtures.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Every file under `dir`, relative to DIR.
fn files_under(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path.strip_prefix(DIR).unwrap().to_string_lossy().into_owned());
        }
    }
}

fn decode(path: &Path) -> Result<(String, Decoded), String> {
    let opened = formats::open_input(path, FormatChoice::Auto)?;
    let mut d = Decoded::default();
    let mut decoder = opened.decoder;
    formats::decode_all(opened.reader, &mut *decoder, |i| d.push(i)).map_err(|e| e.to_string())?;
    Ok((opened.format.name().to_string(), d))
}

/// The native lines of one event type.
fn of<'a>(lines: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    lines.iter().filter(move |l| l["type"] == kind)
}

/// What a decode read, in EXPECT.json's terms.
fn reading(format: &str, d: &Decoded) -> Value {
    let lines: Vec<Value> = d.events.iter().map(|e| e.to_json()).collect();
    let of = |kind: &'static str| of(&lines, kind);
    let mut notes: BTreeMap<String, u64> = BTreeMap::new();
    for n in of("note") {
        if let Some(kind) = n["kind"].as_str() {
            *notes.entry(kind.to_string()).or_default() += 1;
        }
    }
    let joined = |kind: &'static str| of(kind).filter_map(|l| l["text"].as_str()).collect::<String>();
    let unknown: serde_json::Map<String, Value> =
        d.unknown.iter().map(|(k, t)| (k.to_string(), json!(t.count))).collect();
    json!({
        "format": format,
        "prompts": of("prompt").map(|l| l["text"].clone()).collect::<Vec<_>>(),
        "calls": of("tool_call").map(|l| json!({"name": l["name"], "args": l["args"]})).collect::<Vec<_>>(),
        "results": of("tool_result").map(|l| l["ok"].clone()).collect::<Vec<_>>(),
        "result_ids": of("tool_result").map(|l| l["id"].clone()).collect::<Vec<_>>(),
        "notes": notes,
        "bad_lines": d.problems.iter().filter(|p| p.skipped).count(),
        "warnings": d.problems.iter().filter(|p| !p.skipped).count(),
        "unknown_records": unknown,
        "requests": of("request").count(),
        "reasoning": joined("reasoning"),
        "content": joined("content"),
        "stable_outputs": of("tool_result").filter_map(|l| l.get("stable_output").cloned()).collect::<Vec<_>>(),
    })
}

/// The mismatches of one fixture's reading against its expectation; the
/// optional keys are compared only where EXPECT.json gives them.
fn mismatches(name: &str, want: &Value, got: &Value) -> Vec<String> {
    const ALWAYS: [&str; 7] = [
        "format",
        "prompts",
        "calls",
        "results",
        "notes",
        "bad_lines",
        "unknown_records",
    ];
    const OPTIONAL: [&str; 6] = [
        "result_ids",
        "requests",
        "reasoning",
        "content",
        "stable_outputs",
        "warnings",
    ];
    let mut out = Vec::new();
    for key in ALWAYS.iter().chain(OPTIONAL.iter()) {
        let expected = match want.get(*key) {
            Some(v) => v.clone(),
            None if ALWAYS.contains(key) => {
                out.push(format!("{name}: EXPECT.json gives no `{key}`"));
                continue;
            }
            // A fixture that says nothing of warnings expects none.
            None if *key == "warnings" => json!(0),
            None => continue,
        };
        if got[*key] != expected {
            out.push(format!(
                "{name}: {key}\n    expected {expected}\n    read     {}",
                got[*key]
            ));
        }
    }
    out
}

#[test]
fn every_fixture_is_listed_and_every_listed_fixture_exists() {
    let listed: Vec<String> = expectations().into_iter().map(|(k, _)| k).collect();
    let mut present = Vec::new();
    files_under(Path::new(DIR), &mut present);
    present.retain(|f| f != EXPECT);
    let missing: Vec<&String> = listed.iter().filter(|f| !present.contains(f)).collect();
    let unlisted: Vec<&String> = present.iter().filter(|f| !listed.contains(f)).collect();
    assert!(missing.is_empty(), "listed in EXPECT.json, not in {DIR}: {missing:?}");
    assert!(unlisted.is_empty(), "in {DIR}, not listed in EXPECT.json: {unlisted:?}");
    // Each agent of the wild files and the lab's reports has its shapes here.
    for agent in [
        "aider",
        "claude-code",
        "cline",
        "codex",
        "gemini-cli",
        "mini-swe-agent",
        "openhands",
        "qwen-code",
        "swe-agent",
    ] {
        assert!(
            listed.iter().any(|f| f.starts_with(&format!("{agent}/"))),
            "no fixture of {agent}"
        );
    }
}

#[test]
fn every_fixture_reads_as_expected() {
    let mut wrong = Vec::new();
    for (name, want) in expectations() {
        match decode(&Path::new(DIR).join(&name)) {
            Ok((format, d)) => {
                // A fixture that reads as nothing would pass an expectation of nothing.
                assert!(!d.events.is_empty(), "{name}: no events");
                wrong.extend(mismatches(&name, &want, &reading(&format, &d)));
            }
            Err(e) => wrong.push(format!("{name}: not read: {e}")),
        }
    }
    assert!(wrong.is_empty(), "{} mismatches:\n{}", wrong.len(), wrong.join("\n"));
}

fn scan_summary(path: &Path) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args(["scan", "--summary", "--json"])
        .arg(path)
        .env_remove("LOOPSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    // 0: nothing fired, 1: a detector fired; 2 would be an error.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}: {:?}\n{stderr}",
        path.display(),
        out.status
    );
    let summary = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("{}: no summary in {stdout}", path.display()));
    (summary, stderr)
}

#[test]
fn scan_summarizes_every_fixture_and_says_each_unknown_kind_once() {
    let mut wrong = Vec::new();
    for (name, want) in expectations() {
        let path: PathBuf = Path::new(DIR).join(&name);
        let (summary, stderr) = scan_summary(&path);
        for key in ["format", "bad_lines", "unknown_records"] {
            if summary[key] != want[key] {
                wrong.push(format!(
                    "{name}: summary {key} {} (expected {})",
                    summary[key], want[key]
                ));
            }
        }
        let kinds = want["unknown_records"].as_object().unwrap();
        for kind in kinds.keys() {
            let said = stderr
                .lines()
                .filter(|l| l.contains(&format!("unknown kind `{kind}`")))
                .count();
            if said != 1 {
                wrong.push(format!("{name}: the unknown kind {kind} said {said} times:\n{stderr}"));
            }
        }
        if kinds.is_empty() && stderr.contains("unknown kind") {
            wrong.push(format!(
                "{name}: an unknown kind said of a fixture with none:\n{stderr}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{} mismatches:\n{}", wrong.len(), wrong.join("\n"));
}

/// The event kinds EXPECT.json speaks of are the library's: a renamed
/// kind would make every expectation of it vacuous.
#[test]
fn the_kinds_compared_are_the_event_model_s() {
    let kinds = [
        EventKind::Prompt { text: None },
        EventKind::ToolCall {
            name: String::new(),
            args: Value::Null,
            id: None,
        },
        EventKind::ToolResult {
            id: None,
            ok: true,
            output: None,
        },
        EventKind::Note { text: String::new() },
        EventKind::Request { id: None },
        EventKind::Reasoning { text: String::new() },
        EventKind::Content { text: String::new() },
    ];
    let names: Vec<String> = kinds
        .into_iter()
        .map(|k| loopscope_core::Event::new(k).type_name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "prompt",
            "tool_call",
            "tool_result",
            "note",
            "request",
            "reasoning",
            "content"
        ]
    );
}
