//! What-if, headless: `scan --profile a,b` compares profiles on each file,
//! `scan --rechunk N` re-cuts the text first, and `tune` tries a parameter
//! at many values (issue 12).

mod common;

use common::loopscope_at_root as loopscope;
use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = loopscope().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn scan_compares_profiles_in_one_table_per_file() {
    let (code, out, err) = run(&[
        "scan",
        "--profile",
        "seed,gemini-cli,extended",
        "sample-logs/identical-tool-calls.jsonl",
        "sample-logs/miss-paraphrase-loop-en.jsonl",
    ]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("sample-logs/identical-tool-calls.jsonl: 51 events"),
        "{out}"
    );
    assert!(
        lines[1].contains("first detection") && lines[1].contains("streamed after it"),
        "{out}"
    );
    let row = |profile: &str, from: usize| {
        lines[from..]
            .iter()
            .find(|l| l.trim_start().starts_with(profile))
            .unwrap()
            .to_string()
    };
    let gemini: Vec<String> = row("gemini-cli", 0)
        .split("  ")
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(gemini[1..4], ["tool-repeat (1 in all)", "42", "event 6"], "{out}");
    assert!(row("extended", 0).contains("tool-loop"), "{out}");
    let second = lines
        .iter()
        .position(|l| l.starts_with("sample-logs/miss-paraphrase"))
        .unwrap();
    assert!(row("seed", second).contains("no detection"), "{out}");
    assert!(row("extended", second).contains("paraphrase-loop"), "{out}");
}

#[test]
fn scan_compare_json_is_one_record_per_profile_per_file() {
    let (_, out, _) = run(&[
        "scan",
        "--json",
        "--profile",
        "seed,extended",
        "sample-logs/fp-code-block.jsonl",
    ]);
    let recs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["type"], "profile");
    assert_eq!(recs[0]["profile"], "seed");
    assert_eq!(recs[0]["first"]["detector"], "block-cycle");
    assert_eq!(recs[0]["first"]["event"], 220);
    assert_eq!(recs[0]["first"]["line"], 221);
    assert_eq!(recs[0]["first"]["evidence_from"], "char 2823");
    // 288 events; what streamed after event 220 is the answer's rest.
    let after = &recs[0]["after_first"];
    assert!(after["chars"].as_u64().unwrap() > 500, "{after}");
    assert_eq!(after["tokens_estimated"], true);
    assert_eq!(recs[1]["profile"], "extended");
    assert_eq!(
        recs[1]["first"],
        Value::Null,
        "extended leaves this false positive alone"
    );
}

#[test]
fn compare_applies_sets_and_detectors_where_they_run() {
    let (code, out, err) = run(&[
        "scan",
        "--profile",
        "seed,gemini-cli",
        "--set",
        "block-cycle.min_matches=30",
        "--set",
        "list-cycle.min_matches=30",
        "sample-logs/fp-code-block.jsonl",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("seed        no detection"), "{out}");
    let (code, _, err) = run(&[
        "scan",
        "--profile",
        "gemini-cli,extended",
        "--set",
        "block-cycle.min_matches=30",
        "sample-logs/fp-code-block.jsonl",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("runs in none of the profiles compared"), "{err}");
    let (code, _, err) = run(&["view", "--profile", "seed,seed,x", "a.jsonl"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn rechunking_shows_a_verdict_that_depends_on_delta_boundaries() {
    let file = "sample-logs/chanting-content-en.jsonl";
    let (code, out, _) = run(&["scan", "--profile", "gemini-cli", file]);
    assert_eq!(code, 1);
    assert!(out.contains("event 66 line 67  chunk-chant"), "{out}");
    // One char per delta: gemini-cli's content check sees no chunk repeat.
    let (code, out, _) = run(&["scan", "--profile", "gemini-cli", "--rechunk", "1", file]);
    assert_eq!(code, 0, "{out}");
    // Longer deltas: it fires later, named by the recorded event.
    let (_, out, _) = run(&["scan", "--profile", "gemini-cli", "--rechunk", "500", "--json", file]);
    let d: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(d["detector"], "chunk-chant");
    assert!(
        d["event"].as_u64().unwrap() > 66 && d["event"].as_u64().unwrap() < 85,
        "{d}"
    );
    let (code, _, err) = run(&["scan", "--rechunk", "0", file]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn tune_prints_recall_and_false_positives_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let expect = dir.path().join("loops.txt");
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::write(
        &expect,
        format!("# real loops\n{root}/sample-logs/chanting-content-en.jsonl\n"),
    )
    .unwrap();
    let (code, out, err) = run(&[
        "tune",
        "--profile",
        "gemini-cli",
        "--vary",
        "chunk-chant.threshold=5..15:5",
        "--expect",
        expect.to_str().unwrap(),
        "sample-logs/chanting-content-en.jsonl",
        "sample-logs/fp-haha-zh.jsonl",
        "sample-logs/long-clean-session.jsonl",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("chunk-chant.threshold=5"), "{out}");
    assert!(lines[0].contains("recall 1/1  false positives 1/2"), "{out}");
    assert!(lines[2].starts_with("chunk-chant.threshold=15"), "{out}");
    assert!(
        lines[2].contains("recall 0/1"),
        "a threshold too high misses the loop: {out}"
    );
    // JSON: one record per value.
    let (_, out, _) = run(&[
        "tune",
        "--json",
        "--profile",
        "gemini-cli",
        "--vary",
        "chunk-chant.threshold=9,10",
        "sample-logs/chanting-content-en.jsonl",
    ]);
    let recs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1]["value"], "10");
    assert_eq!(recs[1]["files"][0]["first_event"], 66);
    let (code, _, err) = run(&["tune", "--vary", "nope.x=1", "sample-logs/demo.jsonl"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
}
