//! `scan DIR` (issue 15, first part): directories are scanned recursively
//! and in parallel, output in a deterministic order, files that are not
//! agent sessions skipped with a count, `--since` by modification time.

mod common;

use std::path::Path;

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(from), to).unwrap();
}

#[test]
fn a_directory_is_scanned_recursively_in_order_with_non_sessions_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy("sample-logs/demo.jsonl", &root.join("b/demo.jsonl"));
    copy(
        "sample-logs/identical-tool-calls.jsonl",
        &root.join("a/deep/calls.jsonl"),
    );
    copy("sample-logs/long-clean-session.jsonl", &root.join("c.jsonl"));
    std::fs::write(root.join("notes.txt"), "nothing to see\n").unwrap();
    std::fs::write(root.join("a/config.json"), "{\"theme\": \"dark\"}\n").unwrap();
    // An empty file is no session yet (one just created, a stray output).
    std::fs::write(root.join("a/empty.jsonl"), "").unwrap();
    let run = || common::loopscope_at_root().arg("scan").arg(root).output().unwrap();
    let first = run();
    assert_eq!(first.status.code(), Some(1));
    let text = String::from_utf8(first.stdout.clone()).unwrap();
    let files: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            Path::new(f.trim_end_matches(':'))
                .strip_prefix(root)
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let mut deduped = names.clone();
    deduped.dedup();
    assert_eq!(deduped, vec!["a/deep/calls.jsonl", "b/demo.jsonl", "c.jsonl"], "{text}");
    let err = String::from_utf8(first.stderr).unwrap();
    assert!(err.contains("3 files skipped (not agent sessions)"), "{err}");
    // The same order every run, however the threads finish.
    for _ in 0..3 {
        assert_eq!(run().stdout, first.stdout);
    }
    // --since: an old file is left out.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    let f = std::fs::File::options()
        .write(true)
        .open(root.join("b/demo.jsonl"))
        .unwrap();
    f.set_modified(old).unwrap();
    let recent = common::loopscope_at_root()
        .args(["scan", "--since", "7d"])
        .arg(root)
        .output()
        .unwrap();
    let text = String::from_utf8(recent.stdout).unwrap();
    assert!(!text.contains("demo.jsonl") && text.contains("calls.jsonl"), "{text}");
    let later = common::loopscope_at_root()
        .args(["scan", "--newer-than", "2099-01-01"])
        .arg(root)
        .output()
        .unwrap();
    assert_eq!(later.status.code(), Some(0));
    assert!(later.stdout.is_empty());
    assert!(String::from_utf8_lossy(&later.stderr).contains("no file changed in that time"));
    // A named file that is not a session is still an error.
    let named = common::loopscope_at_root()
        .arg("scan")
        .arg(root.join("notes.txt"))
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(2));
}

#[test]
fn a_summary_after_the_files_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    copy("sample-logs/demo.jsonl", &dir.path().join("demo.jsonl"));
    copy("sample-logs/long-clean-session.jsonl", &dir.path().join("clean.jsonl"));
    let out = common::loopscope_at_root()
        .args(["scan", "--summary"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("summary of 2 files"), "{text}");
    assert!(text.contains("block-cycle (278, char 2093)"), "{text}");
    assert!(text.contains("detections per detector: block-cycle 1"), "{text}");
    let out = common::loopscope_at_root()
        .args(["scan", "--summary", "--json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let recs: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summaries: Vec<&serde_json::Value> = recs.iter().filter(|r| r["type"] == "summary").collect();
    assert_eq!(summaries.len(), 2);
    assert_eq!(recs.last().unwrap()["type"], "totals");
    assert_eq!(recs.last().unwrap()["files"], 2);
    // Detection records keep their fields (no type added without --summary).
    assert!(recs.iter().any(|r| r["detector"] == "block-cycle" && r["event"] == 278));
}
