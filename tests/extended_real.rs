//! Profile `extended` on whole realistic sessions (issue 41, item 3): the
//! files in tests/fixtures/sessions/{tuning,held-out}, each in the real
//! on-disk format of one agent, long, with the habits of ordinary work
//! (tests failing at different steps and fixed, CI and logs polled until
//! they finish, files re-read after an edit, code, tables, CJK and emoji)
//! and a few real loops inside otherwise ordinary sessions.
//!
//! Per file, as `scan --summary --json --profile extended` reads it:
//! the format EXPECT.json names is the one detected, no line is bad and no
//! record unknown; a clean session has no detection; a loop session's first
//! detection is at an event within EXPECT.json's range.
//!
//! The held-out set is checked here and nowhere else: the discipline
//! (tests/fixtures/sessions/README.md) is that it is not opened or run by
//! hand while detectors are tuned, and a change is judged on it once, at
//! the end. On failure the test prints one row per file of both sets.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

const SETS: [&str; 2] = ["tuning", "held-out"];

fn sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sessions")
}

/// What one scan said of one file.
#[derive(Default)]
struct Scanned {
    format: String,
    events: u64,
    bad_lines: u64,
    unknown: String,
    /// (event, detector) of every detection, in order of event.
    detections: Vec<(u64, String)>,
}

/// Scans every file of a set at once; the records by file name.
fn scan(set: &str, files: &[String]) -> BTreeMap<String, Scanned> {
    let dir = sessions_dir().join(set);
    let out = common::loopscope_at_root()
        .current_dir(&dir)
        .args(["scan", "--summary", "--json", "--profile", "extended"])
        .args(files)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "scan of the {set} set failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut by_file: BTreeMap<String, Scanned> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let Some(file) = v["file"].as_str() else { continue };
        let entry = by_file.entry(file.to_string()).or_default();
        match v["type"].as_str() {
            Some("detection") => entry.detections.push((
                v["event"].as_u64().unwrap(),
                v["detector"].as_str().unwrap_or("?").to_string(),
            )),
            Some("summary") => {
                entry.format = v["format"].as_str().unwrap_or("").to_string();
                entry.events = v["events"].as_u64().unwrap_or(0);
                entry.bad_lines = v["bad_lines"].as_u64().unwrap_or(0);
                let unknown = &v["unknown_records"];
                if unknown.as_object().is_some_and(|o| !o.is_empty()) {
                    entry.unknown = unknown.to_string();
                }
            }
            _ => {}
        }
    }
    for s in by_file.values_mut() {
        s.detections.sort();
    }
    by_file
}

#[test]
fn extended_is_quiet_on_real_sessions_and_catches_their_loops() {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for set in SETS {
        let dir = sessions_dir().join(set);
        let expect: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("EXPECT.json")).unwrap()).unwrap();
        let expect = expect["sessions"]
            .as_object()
            .expect("EXPECT.json has sessions")
            .clone();
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "EXPECT.json")
            .collect();
        files.sort();
        assert!(!files.is_empty(), "the {set} set has no sessions");
        for f in &files {
            assert!(expect.contains_key(f), "{set}/{f} is not in {set}/EXPECT.json");
        }
        for f in expect.keys() {
            assert!(files.contains(f), "{set}/EXPECT.json lists {f}, which is not there");
        }
        let scanned = scan(set, &files);
        for f in &files {
            let e = &expect[f];
            let s = scanned.get(f.as_str());
            let mut problems = Vec::new();
            let Some(s) = s else {
                failures.push(format!("{set}/{f}: scan said nothing of it"));
                continue;
            };
            let want_format = e["format"].as_str().unwrap();
            if s.format != want_format {
                problems.push(format!("read as {:?}, not {want_format}", s.format));
            }
            if s.bad_lines > 0 {
                problems.push(format!("{} bad lines", s.bad_lines));
            }
            if !s.unknown.is_empty() {
                problems.push(format!("unknown records {}", s.unknown));
            }
            let first = s.detections.first();
            let expectation = e["expect"].as_str().unwrap();
            let (want, verdict) = match expectation {
                "clean" => (
                    "no detection".to_string(),
                    match first {
                        None => "quiet".to_string(),
                        Some((ev, det)) => {
                            problems.push(format!("clean, but {det} fired at event {ev}"));
                            format!("FIRED {det}@{ev}")
                        }
                    },
                ),
                "loop" => {
                    let range = &e["loop"]["events"];
                    let (lo, hi) = (range[0].as_u64().unwrap(), range[1].as_u64().unwrap());
                    let verdict = match first {
                        None => {
                            problems.push(format!("a loop in events {lo}..={hi}, and nothing fired"));
                            "MISSED".to_string()
                        }
                        Some((ev, det)) if (lo..=hi).contains(ev) => format!("caught {det}@{ev}"),
                        Some((ev, det)) => {
                            problems.push(format!(
                                "a loop in events {lo}..={hi}, but the first detection is {det} at event {ev}"
                            ));
                            format!("OUTSIDE {det}@{ev}")
                        }
                    };
                    (format!("loop in {lo}..={hi}"), verdict)
                }
                other => panic!("{set}/{f}: expect is {other:?}, not clean or loop"),
            };
            rows.push(format!(
                "{:<9} {:<58} {:<11} {:>6} {:<18} {:<20} {}",
                set,
                f,
                e["agent"].as_str().unwrap_or("?"),
                s.events,
                want,
                verdict,
                if problems.is_empty() { "ok" } else { "FAIL" }
            ));
            for p in problems {
                failures.push(format!("{set}/{f}: {p}"));
            }
        }
    }
    if !failures.is_empty() {
        eprintln!(
            "{:<9} {:<58} {:<11} {:>6} {:<18} {:<20}",
            "set", "file", "agent", "events", "expected", "extended"
        );
        for r in &rows {
            eprintln!("{r}");
        }
        panic!("{} problem(s):\n{}", failures.len(), failures.join("\n"));
    }
}
