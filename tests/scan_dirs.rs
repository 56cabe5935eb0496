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
    // Files named, not found through --agent: their agent is their format,
    // said once.
    assert!(text.contains("files per format: native 1 of 2 looped"), "{text}");
    assert!(!text.contains("files per agent"), "{text}");
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

/// Copies a fixture folder (depth-first) to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Issue 43, item 10: a symbolic link to nothing named like a session —
/// a session file in a scanned folder, an OpenHands event file, an
/// opencode storage tree's message or part — is skipped silently, as a
/// walk skips it (it was a warning like any unreadable file, and a
/// conversation or a tree with one was reported as damaged).
#[test]
fn dangling_links_named_like_sessions_are_skipped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    copy("sample-logs/identical-tool-calls.jsonl", &root.join("calls.jsonl"));
    copy_tree(&agents.join("openhands/conversations"), &root.join("conversations"));
    copy_tree(&agents.join("opencode/storage"), &root.join("storage"));
    let run = || common::loopscope_at_root().arg("scan").arg(root).output().unwrap();
    let clean = run();
    let link = |at: std::path::PathBuf| std::os::unix::fs::symlink(root.join("nowhere.json"), at).unwrap();
    link(root.join("rollout-2026-11-28T10-00-00-dangling.jsonl"));
    let conversation = std::fs::read_dir(root.join("conversations"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    link(conversation.join("events/event-99999-dangling.json"));
    let messages = std::fs::read_dir(root.join("storage/message"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    link(messages.join("msg_9999.json"));
    let parts = std::fs::read_dir(root.join("storage/part"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    link(parts.join("prt_9999.json"));
    let dangling = run();
    let err = String::from_utf8_lossy(&dangling.stderr);
    assert!(
        !err.contains("no such file") && !err.contains("dangling") && !err.contains("_9999"),
        "{err}"
    );
    assert_eq!(dangling.status.code(), clean.status.code(), "{err}");
    assert_eq!(dangling.stdout, clean.stdout, "the same detections");
    assert_eq!(dangling.stderr, clean.stderr, "the same warnings");
}
