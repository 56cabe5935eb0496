//! Datasets of trajectories (issue 26): a JSONL file of one trajectory per
//! line and Parquet files (a nested `messages` column, a column of JSON
//! text), each row a stream of its own whose detections are those of the
//! same trajectory written as a file. Fixtures: tests/fixtures/rows
//! (make_fixtures.py).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rows");

fn fixture(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn loopscope() -> Command {
    Command::cargo_bin("loopscope").unwrap()
}

/// `scan --json` records, by `file`, without the fields that name the file.
fn scan_json(args: &[&str]) -> (std::collections::BTreeMap<String, Vec<Value>>, String, Option<i32>) {
    let out = loopscope().arg("scan").arg("--json").args(args).output().unwrap();
    let mut by_file = std::collections::BTreeMap::<String, Vec<Value>>::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let mut rec: Value = serde_json::from_str(line).unwrap();
        let file = rec["file"].as_str().unwrap().to_string();
        let m = rec.as_object_mut().unwrap();
        m.remove("file");
        by_file.entry(file).or_default().push(rec);
    }
    (by_file, String::from_utf8(out.stderr).unwrap(), out.status.code())
}

/// Every row of the JSONL dataset, by its id, as a document.
fn rows() -> Vec<(String, Value)> {
    std::fs::read_to_string(fixture("dataset.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| (v["instance_id"].as_str().unwrap().to_string(), v))
        .collect()
}

#[test]
fn every_row_gives_the_detections_of_its_trajectory_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let (by_row, stderr, code) = scan_json(&["--id-field", "instance_id", fixture("dataset.jsonl").to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    // The broken line is reported by its line number; the rest are scanned.
    assert!(stderr.contains("dataset.jsonl: line 4: not valid JSON"), "{stderr}");
    let mut looped = 0;
    for (id, row) in rows() {
        let alone = dir.path().join(format!("{id}.json"));
        std::fs::write(&alone, row.to_string()).unwrap();
        let (want, _, _) = scan_json(&[alone.to_str().unwrap()]);
        let want = want.into_values().next().unwrap_or_default();
        let got = by_row
            .get(&format!("{}#{id}", fixture("dataset.jsonl").display()))
            .cloned()
            .unwrap_or_default();
        assert_eq!(got, want, "{id}");
        looped += usize::from(!want.is_empty());
    }
    // The three looping rows, in their three shapes (messages, a trajectory of messages).
    assert_eq!(looped, 3);
}

#[test]
fn rows_are_named_by_line_without_an_id_field_and_summed_up_as_files() {
    let out = loopscope()
        .args(["scan", "--summary", "--json"])
        .arg(fixture("dataset.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let summaries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "summary")
        .collect();
    let names: Vec<&str> = summaries.iter().map(|s| s["file"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 7, "{names:?}");
    assert!(
        names[0].ends_with("dataset.jsonl#1") && names[3].ends_with("dataset.jsonl#5"),
        "{names:?}"
    );
    let totals: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "totals")
        .unwrap();
    assert_eq!(totals["files"], 7);
}

#[test]
fn parquet_rows_nested_or_as_json_text_equal_the_jsonl_rows() {
    let jsonl = scan_json(&["--id-field", "instance_id", fixture("dataset.jsonl").to_str().unwrap()]).0;
    let by_id = |m: &std::collections::BTreeMap<String, Vec<Value>>| -> std::collections::BTreeMap<String, Vec<Value>> {
        m.iter()
            .map(|(k, v)| (k.rsplit('#').next().unwrap().to_string(), v.clone()))
            .collect()
    };
    let want = by_id(&jsonl);
    for (file, column) in [("dataset.parquet", None), ("text.parquet", Some("t"))] {
        let path = fixture(file);
        let mut args = vec!["--id-field", "instance_id", path.to_str().unwrap()];
        if let Some(c) = column {
            args.extend(["--column", c]);
        }
        let (got, stderr, code) = scan_json(&args);
        assert_eq!(code, Some(1), "{file}: {stderr}");
        let got = by_id(&got);
        assert_eq!(got.len(), 2, "{file}: the two looping rows");
        for (id, records) in got {
            assert_eq!(Some(&records), want.get(&id), "{file}#{id}");
        }
    }
}

#[test]
fn one_row_is_opened_by_its_line_number_or_id() {
    let convert = |name: String| {
        let out = loopscope().arg("convert").arg(&name).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let by_line = convert(format!("{}#5", fixture("dataset.jsonl").display()));
    let by_id = convert(format!("{}#nebius-1", fixture("dataset.jsonl").display()));
    assert_eq!(by_line, by_id);
    assert!(by_line.contains("We're solving this issue."));
    let parquet = convert(format!("{}#cjk-1", fixture("dataset.parquet").display()));
    assert!(parquet.contains("修复这个测试。") && parquet.contains("🤔"));
    let second = convert(format!("{}#2", fixture("text.parquet").display()));
    assert!(second.contains("Add a test for case 1."));
    let missing = loopscope()
        .arg("convert")
        .arg(format!("{}#99", fixture("dataset.parquet").display()))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no row 99"));
}

#[test]
fn broken_datasets_are_one_clear_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("dataset.parquet")).unwrap();
    let cut = dir.path().join("cut.parquet");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let out = loopscope().arg("scan").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("not a readable Parquet file") && err.lines().count() == 1,
        "{err}"
    );
    let out = loopscope()
        .args(["scan", "--column", "nope"])
        .arg(fixture("dataset.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("no row holds a trajectory"));
    let out = loopscope()
        .args(["scan", "--column", "nope"])
        .arg(fixture("dataset.parquet"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("no column \"nope\""));
    // Parquet needs its file: piped in, it says so.
    let out = loopscope().args(["scan", "-"]).write_stdin(whole).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_report_has_a_session_per_row() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = loopscope()
        .args(["report", "--id-field", "instance_id", "-o"])
        .arg(&html)
        .arg(fixture("dataset.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("7 sessions, 3 fired"), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("dataset.jsonl#rebench-1") && page.contains("dataset.jsonl#cjk-1"));
}

/// Four bytes of dataset.parquet that made the parquet crate panic (an
/// assertion on a definition level in its record reader: `scan` exited 101
/// and a folder holding the file lost its other sessions); `row` is the
/// first row that cannot be read.
const PANICKING: [(usize, [u8; 4], u64); 2] = [(894, [0x5f, 0xfa, 0xd0, 0x38], 1), (1773, [0x0d, 0xa7, 0x63, 0x64], 4)];

fn damaged(dir: &Path, (at, bytes, _): (usize, [u8; 4], u64)) -> PathBuf {
    let mut data = std::fs::read(fixture("dataset.parquet")).unwrap();
    data[at..at + 4].copy_from_slice(&bytes);
    let p = dir.join(format!("damaged-{at}.parquet"));
    std::fs::write(&p, data).unwrap();
    p
}

/// Issue 43, item 1: a Parquet file that makes the parquet crate panic is
/// a bad input like any other — one line, exit 2 — and the rest of a folder
/// is still scanned; one damaged past its first rows keeps those rows.
#[test]
fn a_parquet_file_that_panics_the_parquet_crate_is_a_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let first = damaged(dir.path(), PANICKING[0]);
    let out = loopscope().arg("scan").arg(&first).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a readable Parquet file (row 1:") && err.lines().count() == 1,
        "{err}"
    );
    assert!(!err.contains("panicked") && !err.contains("RUST_BACKTRACE"), "{err}");
    // In a folder with a session that loops: that session is still scanned.
    let folder = dir.path().join("folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::rename(&first, folder.join("damaged.parquet")).unwrap();
    let session = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs/identical-tool-calls.jsonl");
    std::fs::copy(&session, folder.join("session.jsonl")).unwrap();
    let out = loopscope().arg("scan").arg(&folder).output().unwrap();
    let (text, err) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(text.contains("session.jsonl") && text.contains("tool-repeat"), "{text}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Damaged at row 4: rows 1 to 3 are scanned, row 4 is said, nothing after.
    let later = damaged(dir.path(), PANICKING[1]);
    let (by_file, err, code) = scan_json(&[later.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        by_file
            .keys()
            .all(|f| f.ends_with("#1") || f.ends_with("#2") || f.ends_with("#3")),
        "{by_file:?}"
    );
    assert!(!by_file.is_empty());
    assert!(
        err.contains("line 4: not readable") && err.contains("the rest of the file is skipped"),
        "{err}"
    );
    // view and convert open one row: an error, not a crash.
    let first = damaged(dir.path(), PANICKING[0]);
    let out = loopscope()
        .arg("convert")
        .arg(format!("{}#1", first.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("row 1 is not readable"));
}
