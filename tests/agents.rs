//! The third set of importers (shared/design/formats-3.md) on the project's
//! own fixtures (tests/fixtures/agents, written by make_fixtures.py):
//! detection of every format against every other, scan and convert on
//! each, stores holding many sessions, sub-agents as streams of their own.

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use loopscope_core::formats::detect::{self, Kind};
use loopscope_core::formats::{self, registry, Decoded, Format, FormatChoice};
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

fn meta() -> Vec<(String, Format)> {
    let text = std::fs::read_to_string(Path::new(DIR).join("META.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["fixtures"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, f)| (k.clone(), Format::from_name(f["format"].as_str().unwrap()).unwrap()))
        .collect()
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn decode(p: &Path) -> (Format, Decoded) {
    let opened = formats::open_input(p, FormatChoice::Auto).unwrap_or_else(|e| panic!("{e}"));
    let mut d = Decoded::default();
    let mut decoder = opened.decoder;
    formats::decode_all(opened.reader, &mut *decoder, |i| d.push(i)).unwrap();
    (opened.format, d)
}

fn loopscope() -> Command {
    let mut c = Command::cargo_bin("loopscope").unwrap();
    c.current_dir(DIR)
        .env_remove("LOOPSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", DIR);
    c
}

/// What `--format auto` makes of a fixture: a file by its bytes and name
/// (a Parquet dataset is told by its first bytes), a folder or store as
/// `open_input` opens it.
fn detected_kind(p: &Path) -> Option<Kind> {
    if p.is_file() {
        let bytes = std::fs::read(p).unwrap();
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        if let Ok(Some(kind)) = detect::classify(&bytes, true, name.as_deref()) {
            return Some(kind);
        }
    }
    formats::open_input(p, FormatChoice::Auto).ok()?.kind
}

/// Every fixture, old formats included, is read as its own format and as
/// no other: the matrix of expected against detected has nothing off its
/// diagonal. The matrix is the format table's (formats/registry.rs): each
/// kind's examples must be detected as that kind, and every kind but a
/// container (a compressed file, a cassette) names one.
#[test]
fn detection_matrix_over_every_format() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cases: Vec<(PathBuf, Format)> = meta().into_iter().map(|(n, f)| (path(&n), f)).collect();
    let mut wrong = Vec::new();
    for row in &registry::KINDS {
        if row.spec.examples.is_empty() && !row.spec.container {
            wrong.push(format!(
                "{:?}: its row in formats/registry.rs names no example",
                row.kind
            ));
        }
        for example in row.spec.examples {
            let p = root.join(example);
            let got = detected_kind(&p);
            if got != Some(row.kind) {
                wrong.push(format!("{example}: expected {:?}, detected {got:?}", row.kind));
            }
            // Opened, a Parquet dataset reads as its first row's trajectory.
            if row.kind != Kind::Parquet {
                cases.push((p, row.format));
            }
        }
    }
    let mut seen = std::collections::BTreeSet::from([Format::Parquet.name()]);
    for (p, want) in &cases {
        let (got, d) = decode(p);
        seen.insert(want.name());
        if got != *want {
            wrong.push(format!("{}: expected {want}, detected {got}", p.display()));
        }
        assert!(
            d.events.iter().any(formats::carries_stream),
            "{}: read nothing of the stream",
            p.display()
        );
    }
    assert!(wrong.is_empty(), "misdetected:\n{}", wrong.join("\n"));
    // Every format is in the matrix.
    for f in Format::ALL {
        assert!(seen.contains(f.name()), "no fixture of {f}");
    }
}

/// Every importer keeps to the record limit it is given (an option of
/// the read, not a setting of the process): each kind's example read with
/// a 64-byte limit says a record passed it, where the default limit reads
/// it whole. A new importer that held records without a bound fails here.
#[test]
fn every_importer_keeps_to_the_record_limit_it_is_given() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tight = loopscope_core::ReadOptions::default().with_max_record(64);
    let mut wrong = Vec::new();
    for row in &registry::KINDS {
        for example in row.spec.examples {
            let p = root.join(example);
            let problems = |read: loopscope_core::ReadOptions| -> Vec<String> {
                let Ok(mut opened) = formats::open_input(&p, read) else {
                    return vec!["not opened".to_string()];
                };
                let mut d = Decoded::default();
                formats::decode_all(opened.reader, &mut *opened.decoder, |i| d.push(i)).unwrap();
                d.problems.iter().map(|p| p.reason.clone()).collect()
            };
            let limited = problems(tight);
            if !limited.iter().any(|r| r.contains("record limit of 64 bytes")) {
                wrong.push(format!(
                    "{example} ({:?}): no record over 64 bytes said: {limited:?}",
                    row.kind
                ));
            }
            let whole = problems(FormatChoice::Auto.into());
            if whole.iter().any(|r| r.contains("record limit")) {
                wrong.push(format!("{example}: over the default limit: {whole:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_fixture_is_listed_in_meta_with_its_source_commit() {
    let text = std::fs::read_to_string(Path::new(DIR).join("META.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    for (name, m) in v["fixtures"].as_object().unwrap() {
        assert!(path(name).exists(), "{name} is listed but missing");
        let schema = m["schema"].as_str().unwrap();
        assert!(
            schema.contains('@') || schema.contains("rfcs"),
            "{name}: no source commit in {schema}"
        );
    }
    assert_eq!(meta().len(), 22);
}

/// Each format's story: the Chinese prompt, requests, the five failed
/// calls with their arguments, timestamps (but aider's and SWE-agent's).
#[test]
fn every_fixture_maps_prompt_calls_results_and_times() {
    for (name, format) in meta() {
        if name == "otel/logs.jsonl" {
            continue;
        }
        let (_, d) = decode(&path(&name));
        let json: Vec<Value> = d.events.iter().map(|e| e.to_json()).collect();
        let has = |t: &str| json.iter().any(|e| e["type"] == t);
        // `opencode run --format json` prints the assistant's parts only.
        assert!(
            name.ends_with("run.jsonl")
                || json
                    .iter()
                    .any(|e| e["type"] == "prompt" && e["text"].as_str().is_some_and(|t| t.contains("登录测试"))),
            "{name}: no prompt"
        );
        assert!(has("request"), "{name}: no request");
        let calls: Vec<&Value> = json.iter().filter(|e| e["type"] == "tool_call").collect();
        assert!(calls.len() >= 5, "{name}: {} calls", calls.len());
        assert!(
            calls.iter().any(|c| c["args"].to_string().contains("npm test")),
            "{name}: arguments lost"
        );
        let failed = json
            .iter()
            .filter(|e| e["type"] == "tool_result" && e["ok"] == false)
            .count();
        assert!(failed >= 5, "{name}: {failed} failed results");
        if !matches!(format, Format::SweAgent | Format::Aider) {
            assert!(
                d.events
                    .iter()
                    .filter(|e| e.type_name() != "note")
                    .all(|e| e.ts.is_some()),
                "{name}: times lost"
            );
        }
        // API errors are notes, said as such (SWE-agent, OpenHands, ATIF and Goose keep none).
        if !matches!(
            format,
            Format::SweAgent | Format::Openhands | Format::Atif | Format::Goose
        ) {
            assert!(
                json.iter().any(|e| e["type"] == "note"
                    && e["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("API error") || t.contains("529"))),
                "{name}: the API error is not said"
            );
        }
    }
}

#[test]
fn scan_finds_the_loop_in_every_fixture() {
    for (name, _) in meta() {
        if name == "otel/logs.jsonl" {
            continue;
        }
        let out = loopscope()
            .args(["scan", "--json", "--profile", "seed"])
            .arg(&name)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\"tool-repeat\""), "{name}: {text}");
    }
}

#[test]
fn convert_round_trips_every_fixture() {
    for (name, format) in meta() {
        let first = loopscope().arg("convert").arg(&name).output().unwrap();
        assert!(
            first.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&first.stderr)
        );
        let text = String::from_utf8(first.stdout).unwrap();
        assert!(
            text.starts_with(&format!(
                "{{\"type\":\"meta\",\"format\":\"loopscope\",\"version\":1,\"source\":\"{format}\""
            )),
            "{name}: {text}"
        );
        let dir = tempfile::tempdir().unwrap();
        let native = dir.path().join("native.jsonl");
        std::fs::write(&native, &text).unwrap();
        let again = loopscope().arg("convert").arg(&native).output().unwrap();
        let again = String::from_utf8(again.stdout).unwrap();
        assert_eq!(
            again.lines().skip(1).collect::<Vec<_>>(),
            text.lines().skip(1).collect::<Vec<_>>(),
            "{name}"
        );
    }
}

#[test]
fn each_format_can_be_named_and_a_wrong_name_is_refused() {
    for (name, format) in meta() {
        let ok = loopscope()
            .args(["scan", "--format", format.name()])
            .arg(&name)
            .output()
            .unwrap();
        assert!(
            matches!(ok.status.code(), Some(0 | 1)),
            "{name} --format {format}: {}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }
    let wrong = loopscope()
        .args(["scan", "--format", "goose", "opencode/opencode.db"])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("this is opencode's"));
}

#[test]
fn a_store_is_scanned_session_by_session_with_titles_and_child_sessions() {
    let out = loopscope()
        .args(["scan", "--summary", "opencode/opencode.db"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("opencode/opencode.db#ses_main0001 \"修登录测试\""),
        "{text}"
    );
    assert!(
        text.contains("opencode/opencode.db#ses_main0001 ▸ ses_kid00001 \"Explore auth"),
        "{text}"
    );
    let json = loopscope()
        .args(["scan", "--summary", "--json", "opencode/opencode.db"])
        .output()
        .unwrap();
    let rows: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["type"] == "summary")
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["parent"], "opencode/opencode.db#ses_main0001");
    assert_eq!(rows[0]["title"], "修登录测试");
    // One session by name; the store alone opens its newest.
    let one = loopscope()
        .args(["convert", "opencode/opencode.db#ses_kid00001"])
        .output()
        .unwrap();
    let one = String::from_utf8_lossy(&one.stdout);
    assert!(one.contains("\"grep\"") && !one.contains("npm test"), "{one}");
    let newest = loopscope().args(["convert", "opencode/opencode.db"]).output().unwrap();
    assert!(String::from_utf8_lossy(&newest.stdout).contains("npm test"));
    let missing = loopscope()
        .args(["convert", "opencode/opencode.db#ses_nope"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no session ses_nope"));
}

#[test]
fn sub_agents_are_streams_of_their_own_named_after_their_parent() {
    let out = loopscope()
        .args(["scan", "--summary", "--json", "copilot/session-state", "atif"])
        .output()
        .unwrap();
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["type"] == "summary")
        .collect();
    let files: Vec<&str> = rows.iter().map(|r| r["file"].as_str().unwrap()).collect();
    assert!(files.iter().any(|f| f.ends_with("events.jsonl#explore-1")), "{files:?}");
    assert!(
        files.iter().any(|f| f.ends_with("trajectory.json#sub-explore-1")),
        "{files:?}"
    );
    let sub = rows
        .iter()
        .find(|r| r["file"].as_str().unwrap().ends_with("#explore-1"))
        .unwrap();
    assert!(sub["parent"].as_str().unwrap().ends_with("events.jsonl"));
    assert_eq!(sub["events"], 6, "three calls and their results");
    let human = loopscope().args(["scan", "copilot/session-state"]).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("events.jsonl ▸ explore-1"));
    // The main stream leaves the sub-agent's events out, and says so.
    let main = loopscope()
        .args(["convert", "copilot/session-state/7e2a9c10-3b4d-4e5f-8a9b-0c1d2e3f4a5b"])
        .output()
        .unwrap();
    let main = String::from_utf8_lossy(&main.stdout);
    assert!(
        main.contains("streams of their own") && !main.contains("sub_0"),
        "{main}"
    );
}

#[test]
fn the_agents_session_places_are_found() {
    let out = loopscope()
        .args([
            "scan",
            "--summary",
            "--json",
            "--agent",
            "pi,opencode,kilo,copilot,openhands,goose,crush",
        ])
        .env("HOME", "/nonexistent")
        .env("PI_CODING_AGENT_DIR", path("pi-home"))
        .env("OPENCODE_DB", path("opencode/opencode.db"))
        .env("KILO_DB", path("kilo/kilo.db"))
        .env("COPILOT_HOME", path("copilot"))
        .env("GOOSE_PATH_ROOT", path("goose-root"))
        .env("XDG_DATA_HOME", path("xdg"))
        .env("LOOPSCOPE_OPENHANDS_DIR", path("openhands/conversations"))
        .env("LOOPSCOPE_PI_DIR", path("pi"))
        .env("LOOPSCOPE_GOOSE_DIR", path("goose"))
        .env("LOOPSCOPE_CRUSH_DIR", path("crush/.crush"))
        .output()
        .unwrap();
    let agents: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "summary")
        .map(|v| v["agent"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        ["copilot", "crush", "goose", "kilo", "opencode", "openhands", "pi"],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
