//! One JSON schema everywhere (issue 31): every command that prints JSON
//! prints records with a `type` and the `schema` version, and a detection
//! is the same record whoever prints it (`scan`, `tail`, `watch`,
//! `--on-detect`'s LOOPSCOPE_JSON).

mod common;

use std::path::Path;

use common::Running;
use serde_json::Value;

const SAMPLE: &str = "sample-logs/identical-tool-calls.jsonl";

fn records(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn stdout(args: &[&str]) -> String {
    let o = common::loopscope_at_root().args(args).output().unwrap();
    String::from_utf8(o.stdout).unwrap()
}

fn typed(what: &str, v: &Value, ty: &str) {
    assert_eq!(v["type"], ty, "{what}: {v}");
    assert_eq!(v["schema"], 1, "{what}: {v}");
}

#[test]
fn every_json_record_has_a_type_and_the_schema_and_detections_are_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let log = Path::new(env!("CARGO_MANIFEST_DIR")).join(SAMPLE);
    let copy = dir.path().join("run.jsonl");
    std::fs::copy(&log, &copy).unwrap();
    let file = copy.to_str().unwrap();

    let scanned = records(&stdout(&["scan", "--json", file]));
    assert_eq!(scanned.len(), 3);
    for v in &scanned {
        typed("scan", v, "detection");
    }

    // tail --no-tui --json --from-start: what the file holds, then it follows.
    let hook = dir.path().join("hook.jsonl");
    let mut tail = common::loopscope_at_root();
    tail.args(["tail", "--no-tui", "--json", "--from-start", "--on-detect"])
        .arg(format!("printf '%s\\n' \"$LOOPSCOPE_JSON\" >> {}", hook.display()))
        .arg(file);
    // The hooks run on their own threads: tail is stopped only once they
    // have written (stopping it first could stop a hook not yet started).
    let running = Running::start(tail);
    let tail: Vec<Value> = (0..3).map(|_| next_record(&running)).collect();
    assert_eq!(tail, scanned, "tail prints scan's records");
    let mut hooked = Vec::new();
    for _ in 0..600 {
        hooked = records(&std::fs::read_to_string(&hook).unwrap_or_default());
        if hooked.len() == 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    running.stop();
    hooked.sort_by_key(|v| v["event"].as_u64());
    assert_eq!(hooked, scanned, "LOOPSCOPE_JSON is scan's record");

    let mut cmd = common::loopscope_at_root();
    cmd.args(["watch", "--no-tui", "--json", "--from-start"])
        .arg(dir.path());
    let mut watched = collect(cmd, 3);
    watched.sort_by_key(|v| v["event"].as_u64());
    assert_eq!(watched, scanned, "watch prints scan's records");

    for v in records(&stdout(&["scan", "--json", "--summary", file])) {
        assert!(
            ["detection", "summary", "totals"].contains(&v["type"].as_str().unwrap()),
            "{v}"
        );
        assert_eq!(v["schema"], 1, "{v}");
    }
    for v in records(&stdout(&[
        "tune",
        "--json",
        "--vary",
        "tool-repeat.threshold=3..4",
        file,
    ])) {
        typed("tune", &v, "trial");
    }
    let detectors: Value = serde_json::from_str(&stdout(&["detectors", "--json"])).unwrap();
    typed("detectors", &detectors, "detectors");
    assert!(detectors["detectors"].is_array());
}

/// The first `n` JSON records a command prints, then it is interrupted.
fn next_record(run: &Running) -> Value {
    serde_json::from_str(&run.out.recv_timeout(std::time::Duration::from_secs(30)).unwrap()).unwrap()
}

fn collect(cmd: std::process::Command, n: usize) -> Vec<Value> {
    let run = Running::start(cmd);
    let out = (0..n).map(|_| next_record(&run)).collect();
    run.stop();
    out
}
