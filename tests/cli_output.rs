//! Issue 44's command-line items, on the real binary: errors in one
//! clear line, `--help` with examples and a word about `?`, the man
//! page's SYNOPSIS with values, `scan`'s columns lined up across files,
//! and the screenshot that follows the finding.

mod common;

/// `screenshot --at end` drew short-repeat, idle, as the selected detector.
#[test]
fn a_screenshot_at_the_end_shows_the_detector_that_fired() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("end.txt");
    let status = common::loopscope_at_root()
        .args([
            "screenshot",
            "sample-logs/formats/claude-code-session.jsonl",
            "--at",
            "end",
        ])
        .args(["--size", "80x24", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let selected = text.lines().find(|l| l.contains("│▸ ")).expect("a selected detector");
    assert!(
        selected.contains("▸ error-streak") && selected.contains("FIRED"),
        "{text}"
    );
}

/// Issue 44, item 11: `view sample-logs/README.md` printed one ~500-char
/// line with "(282 chars cut)" inside, the list of every format tried;
/// `scan --agent all` on a machine with no agent printed a line per agent
/// and a summary with "(1264 chars cut)". One clear line each.
#[test]
fn errors_are_one_clear_line() {
    let out = common::loopscope_at_root()
        .args(["view", "sample-logs/README.md"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("chars cut"), "{err}");
    assert!(
        err.starts_with("loopscope: sample-logs/README.md: not a format loopscope reads"),
        "{err}"
    );
    assert!(err.trim_end().chars().count() < 160, "{err}");
    let home = tempfile::tempdir().unwrap();
    let out = common::loopscope_at_root()
        .args(["scan", "--agent", "all"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("chars cut"), "{err}");
    assert!(err.starts_with("loopscope: no agent sessions on this machine"), "{err}");
}

/// Issue 44, item 13: `--help` had no example and no word about `?`, the
/// man page's SYNOPSIS listed flags without their values.
#[test]
fn help_has_examples_and_the_synopsis_has_values() {
    for args in [vec!["--help"], vec!["view", "--help"], vec!["tail", "--help"]] {
        let out = common::loopscope_at_root().args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:"), "{args:?}: {text}");
        assert!(text.contains("? lists every key"), "{args:?}: {text}");
    }
    let out = common::loopscope_at_root().arg("man").output().unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    let synopsis: String = page
        .split(".SH SYNOPSIS")
        .nth(1)
        .unwrap()
        .split(".SH ")
        .next()
        .unwrap()
        .to_string();
    assert!(
        synopsis.contains("[\\fB\\-\\-start\\-at\\fR \\fIEVENT\\fR]"),
        "{synopsis}"
    );
    assert!(synopsis.contains("[\\fB\\-\\-paused\\fR]"), "{synopsis}");
    assert!(synopsis.contains("\\fBloopscope\\fR \\fICOMMAND\\fR"), "{synopsis}");
}

/// Issue 44, item 13: `scan`'s text lines were aligned file by file, so
/// the columns of several files did not line up. The detector and
/// position columns start at the same place for every file of a run.
#[test]
fn scan_text_columns_line_up_across_files() {
    let out = common::loopscope_at_root()
        .args([
            "scan",
            "sample-logs/demo.jsonl",
            "sample-logs/chanting-content-en.jsonl",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let at = |l: &str, word: &str| l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
    assert_eq!(at(lines[0], "block-cycle"), at(lines[1], "chunk-chant"), "{text}");
    assert_eq!(at(lines[0], "reasoning@"), at(lines[1], "content@"), "{text}");
}

/// A scan or report that read nothing is the command failing (exit 2, one
/// line, no report written): an empty folder, a glob that matches nothing,
/// a folder of files none of which is a session, a missing file (which
/// `report` called a warning). A CI job must not pass having checked nothing.
#[test]
fn reading_nothing_is_an_error_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("empty")).unwrap();
    std::fs::create_dir(d.join("other")).unwrap();
    std::fs::write(d.join("other/prog"), b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0").unwrap();
    std::fs::write(d.join("other/blank"), b"").unwrap();
    let cases: [(&[&str], &str); 6] = [
        (&["scan", "empty"], "loopscope: empty: no files to scan"),
        (
            &["scan", "other/*.nothing"],
            "loopscope: other/*.nothing: no file matches",
        ),
        (
            &["scan", "other"],
            "loopscope: nothing read: 2 files found, none of them an agent session",
        ),
        (
            &["report", "empty", "-o", "r.html"],
            "loopscope: empty: no files to scan",
        ),
        (
            &["report", "other", "-o", "r.html"],
            "loopscope: nothing read: 2 files found",
        ),
        (
            &["report", "nope.jsonl", "-o", "r.html"],
            "loopscope: nope.jsonl: no such file or directory",
        ),
    ];
    for (args, says) in cases {
        let out = common::loopscope_at_root().current_dir(d).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(says), "{args:?}: {err}");
        assert!(!err.contains("warning"), "{args:?}: {err}");
        assert!(!d.join("r.html").exists(), "{args:?} wrote a report of nothing");
    }
    // --since does not excuse an empty folder…
    let out = common::loopscope_at_root()
        .current_dir(d)
        .args(["scan", "empty", "--since", "1d"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // …but a session older than it is "nothing new": a clean scan, and an
    // empty report.
    std::fs::create_dir(d.join("old")).unwrap();
    let old = d.join("old/s.jsonl");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs/formats/claude-code-session.jsonl"),
        &old,
    )
    .unwrap();
    let week_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7 * 86400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(week_ago)
        .unwrap();
    for args in [
        &["scan", "old", "--since", "1d"][..],
        &["report", "old", "--since", "1d", "-o", "r.html"][..],
    ] {
        let out = common::loopscope_at_root().current_dir(d).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("old: no file changed in that time"), "{args:?}: {err}");
    }
    assert!(std::fs::read_to_string(d.join("r.html"))
        .unwrap()
        .contains("0 sessions"));
    // One session beside the others is read, and the rest are counted.
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs/formats/claude-code-session.jsonl"),
        d.join("other/s.jsonl"),
    )
    .unwrap();
    let out = common::loopscope_at_root()
        .current_dir(d)
        .args(["scan", "other"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A whole JSON document (legacy gemini-cli, pretty-printed) has no lines
/// an editor could go to: detections name their event and no line, an
/// unknown kind is counted without one, and a bad record is named as the
/// record it is (it said "line 3" for the third message, on line 1).
#[test]
fn whole_documents_name_records_not_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut messages = vec![serde_json::json!({"id": "m0", "type": "user", "content": "List files"})];
    for i in 0..8 {
        messages.push(
            serde_json::json!({"id": format!("g{i}"), "type": "gemini", "content": "",
            "toolCalls": [{"id": format!("t{i}"), "name": "run_shell_command", "args": {"command": "ls"},
                "status": "success"}]}),
        );
    }
    messages.insert(3, serde_json::json!({"id": "x", "type": "model", "content": "?"}));
    let doc = serde_json::json!({"sessionId": "s", "projectHash": "p", "startTime": "2026-01-01T00:00:00.000Z",
        "lastUpdated": "2026-01-01T00:00:05.000Z", "messages": messages});
    let path = dir.path().join("session.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let out = common::loopscope_at_root().arg("scan").arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(text.lines().count() >= 2, "{text}");
    for l in text.lines() {
        assert!(l.contains(" event ") && !l.contains(" line "), "{l}");
    }
    assert!(err.contains("1 record of an unknown kind `model` skipped;"), "{err}");
    assert!(!err.contains("line"), "{err}");
    // A message array with a message without a role.
    let path = dir.path().join("messages.json");
    std::fs::write(
        &path,
        "[\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"content\": \"x\"},\n  {\"role\": \"assistant\", \"content\": \"ok\"}\n]\n",
    )
    .unwrap();
    let out = common::loopscope_at_root().arg("scan").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(": record 2: a message without a role; skipped\n"), "{err}");
    assert!(!err.contains("line"), "{err}");
}

/// `loopscope scna x` read as two files to view ("the viewer opens one
/// stream at a time"); a word near a subcommand that is no file says so.
#[test]
fn a_mistyped_subcommand_gets_the_nearest_one() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            &["scna", "x.jsonl"][..],
            "loopscope: no command or file scna (did you mean `loopscope scan`?)\n",
        ),
        (
            &["reprot"][..],
            "loopscope: no command or file reprot (did you mean `loopscope report`?)\n",
        ),
        (
            &["nope.jsonl"][..],
            "loopscope: nope.jsonl: no such file or directory\n",
        ),
    ] {
        let out = common::loopscope_at_root()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(String::from_utf8_lossy(&out.stderr), says);
    }
    // A file of that name is a file.
    std::fs::write(dir.path().join("scna"), "{\"type\":\"prompt\",\"text\":\"hi\"}\n").unwrap();
    let out = common::loopscope_at_root()
        .current_dir(dir.path())
        .args(["scna", "x.jsonl"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("the viewer opens one stream at a time"));
}

/// clap's usage errors were four lines (`error: …`, a blank, "For more
/// information, try '--help'"); every other error is `loopscope: …` in
/// one line. They are one line too, with clap's tip and the command's help.
#[test]
fn usage_errors_are_one_line_like_the_others() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["view", "--speed", "100", "x.jsonl"],
            "loopscope: invalid value '100' for '--speed <SPEED>': speed must be between 0.25 and 64 (see `loopscope view --help`)",
        ),
        (
            &["scan", "--sinc", "7d"],
            "loopscope: unexpected argument '--sinc' found; tip: a similar argument exists: '--since' (see `loopscope scan --help`)",
        ),
        (
            &["tail"],
            "loopscope: the following required arguments were not provided: <FILE> (see `loopscope tail --help`)",
        ),
        (&["--bogus"], "loopscope: unexpected argument '--bogus' found; tip: "),
    ];
    for (args, says) in cases {
        let out = common::loopscope_at_root().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(says), "{args:?}: {err}");
    }
}
