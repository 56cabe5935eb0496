//! `loopscope report` (issue 15): one self-contained HTML file for
//! reviewers, checked as text and in a real browser (headless Chromium,
//! which `.ci/run` installs from Debian's packages).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::fleet::{Fleet, SESSION};

/// A reasoning loop whose text tries markup and terminal escapes.
fn hostile_loop(dir: &Path) -> PathBuf {
    let mut log = String::from("{\"type\":\"prompt\",\"text\":\"fix it\"}\n{\"type\":\"request\"}\n");
    let sentence = "I will open <script>alert(1)</script> the \u{1b}[31m config again. ";
    for i in 0..200 {
        let e = serde_json::json!({"type": "reasoning", "text": sentence, "ts": i as f64 * 0.1});
        log.push_str(&e.to_string());
        log.push('\n');
    }
    let path = dir.join("hostile.jsonl");
    std::fs::write(&path, log).unwrap();
    path
}

#[test]
fn the_report_holds_every_session_each_detection_and_nothing_from_outside() {
    let fleet = Fleet::new();
    let out = fleet.path().join("report.html");
    let hostile = hostile_loop(fleet.path());
    let run = fleet
        .cmd()
        .args(["report", "--agent", "all", "--profile", "seed,extended", "-o"])
        .arg(&out)
        .arg(&hostile)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("wrote") && err.contains("8 sessions"), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    // Self-contained: no script, style, image or font is fetched.
    for outside in ["src=\"http", "href=\"http", "@import", "url(", "<link", "<img"] {
        assert!(!html.contains(outside), "the report refers outside: {outside}");
    }
    // The summary table has a row per session, the comparison one per profile per session.
    let summary = html
        .split("<table id=\"summary\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(summary.matches("<tr>").count(), 1 + 8);
    assert!(summary.contains(&format!("{SESSION}.jsonl ▸ agent-a1b2c3")));
    let comparison = html
        .split("<table id=\"comparison\"")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(comparison.matches("<tr>").count(), 1 + 16);
    // A section per detection, each with its reason, parameters and a picture.
    let sections = html.matches("<section class=\"detection\"").count();
    assert!(sections >= 10, "{sections} sections");
    assert_eq!(html.matches("<figure><svg").count(), sections);
    assert!(html.contains("<dt>parameters</dt>"));
    // The evidence is highlighted as the viewer does.
    assert!(html.contains("<span class=\"copy-first\">") && html.contains("<span class=\"copy-a\">"));
    // Text from the log never becomes markup or a raw escape.
    assert!(!html.contains("<script>alert"), "log text became markup");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains('\u{1b}'));
    assert_eq!(html.matches("<script>").count(), 1, "only the sorting script");
    // Headlines read tool arguments as text, not as escaped JSON.
    let reasons: Vec<&str> = html
        .split("<p class=\"reason\">")
        .skip(1)
        .map(|p| p.split("</p>").next().unwrap())
        .collect();
    assert!(reasons.iter().all(|r| !r.contains("\\&quot;")), "{reasons:#?}");
    assert!(reasons.iter().any(|r| r.contains("Bash {command: ")), "{reasons:#?}");
}

#[test]
fn the_report_is_never_written_over_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = hostile_loop(dir.path());
    let before = std::fs::read(&input).unwrap();
    let run = common::loopscope_at_root()
        .arg("report")
        .arg(&input)
        .arg("-o")
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let missing = common::loopscope_at_root()
        .args(["report", "/nonexistent/x.jsonl", "-o"])
        .arg(dir.path().join("r.html"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

/// Chromium's name on this machine, if it is installed.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| {
            Command::new(name)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

fn headless(browser: &str) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--virtual-time-budget=2000",
    ]);
    cmd
}

#[test]
fn a_real_browser_shows_the_report_sorts_it_and_takes_its_picture() {
    let Some(browser) = chromium() else {
        // CI installs Chromium; elsewhere the test says why it did nothing.
        assert!(std::env::var_os("CI").is_none(), "CI must have Chromium (see .ci/run)");
        eprintln!("skipped: no chromium here (apt-get install chromium)");
        return;
    };
    let fleet = Fleet::new();
    let out = fleet.path().join("report.html");
    let run = fleet
        .cmd()
        .args(["report", "--agent", "all", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    let url = format!("file://{}", out.display());
    // The page after its script ran, sorted by events, most first (column 2, descending).
    let dom = headless(browser)
        .arg("--dump-dom")
        .arg(format!("{url}#sort=2-"))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("loopscope report") && dom.contains("7 sessions"), "{dom}");
    assert!(dom.contains("aria-sort=\"descending\""), "the table was not sorted");
    let body = dom
        .split("<table id=\"summary\"")
        .nth(1)
        .unwrap()
        .split("</tbody>")
        .next()
        .unwrap();
    let events: Vec<u64> = body
        .split("<tr>")
        .skip(2)
        .map(|row| {
            let cell = row.split("data-v=\"").nth(1).unwrap();
            cell.split('"').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(events.len(), 7);
    assert!(events.windows(2).all(|w| w[0] >= w[1]), "{events:?}");
    // And a picture of it.
    let png = fleet.path().join("report.png");
    let shot = headless(browser)
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,2000")
        .arg(&url)
        .output()
        .unwrap();
    assert!(shot.status.success(), "{}", String::from_utf8_lossy(&shot.stderr));
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{} bytes",
        bytes.len()
    );
}

#[test]
fn huge_calls_make_a_report_of_bounded_size() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(300_000);
    let mut log = String::from("{\"type\":\"prompt\",\"text\":\"go\"}\n");
    for i in 0..6 {
        let call = serde_json::json!({"type": "tool_call", "id": format!("c{i}"), "name": "write_file", "args": {"content": big}});
        log.push_str(&call.to_string());
        log.push('\n');
    }
    let input = dir.path().join("big.jsonl");
    std::fs::write(&input, log).unwrap();
    let out = dir.path().join("r.html");
    let run = common::loopscope_at_root()
        .args(["report", "-o"])
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<pre class=\"calls\">"), "the calls are listed");
    // 1.8 MB of arguments in the log; the report shows each call's first 400 chars.
    assert!(html.len() < 600_000, "{} bytes", html.len());
}

/// A missing file is one line and exit 2, and no report of nothing is written.
#[test]
fn a_missing_file_is_one_line_and_no_report() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let out = common::loopscope_at_root()
        .arg("report")
        .arg(dir.path().join("missing.jsonl"))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("missing.jsonl: no such file or directory"), "{err}");
    assert!(!html.exists());
}

/// Issue 44, item 13: a report of false positives was headlined "4 looped"
/// (a detector fired; whether it looped is the reviewer's call), and with
/// `--profile a,b` its header counted the first profile only.
#[test]
fn the_headline_says_fired_for_each_profile() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let root = env!("CARGO_MANIFEST_DIR");
    let run = common::loopscope_at_root()
        .args(["report", "--profile", "seed,gemini-cli", "-o"])
        .arg(&out)
        .arg(format!("{root}/sample-logs/fp-code-block.jsonl"))
        .arg(format!("{root}/sample-logs/identical-tool-calls.jsonl"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!err.contains("looped"), "{err}");
    // seed fires on both, gemini-cli on the tool calls only.
    assert!(err.contains("seed: 2 fired, 5 detections"), "{err}");
    assert!(err.contains("gemini-cli: 1 fired, 1 detection"), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    let head = html.split("</p>").next().unwrap();
    assert!(!head.contains("looped"), "{head}");
    assert!(
        head.contains("seed: 2 fired") && head.contains("gemini-cli: 1 fired"),
        "{head}"
    );
}
