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
