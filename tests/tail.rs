//! `loopscope tail --no-tui` on a file written in pieces while it runs:
//! the output, its order, and the file's life (split lines, truncation,
//! rotation, delete-and-recreate), `--on-detect`, standard input.

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{lines_of, Running};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");

/// A running `tail --no-tui --json`, its stdout and stderr read line by line.
struct Tail {
    run: Running,
}

impl Tail {
    fn start(file: &Path, extra: &[&str]) -> Tail {
        let mut cmd = Command::new(BIN);
        cmd.args(["tail", "--no-tui", "--json", "--detectors", "tool-repeat"])
            .arg(file)
            .args(extra)
            .env_remove("LOOPSCOPE_CONFIG")
            .env("XDG_CONFIG_HOME", file.parent().unwrap());
        let t = Tail {
            run: Running::start(cmd),
        };
        // What is written from now on is new content, not backlog (a
        // file not there yet is waited for, not followed).
        t.notice_any(&["following", "to appear"]);
        t
    }

    fn detection(&self) -> Value {
        let line = self
            .run
            .out
            .recv_timeout(Duration::from_secs(10))
            .expect("a detection line");
        serde_json::from_str(&line).unwrap()
    }

    fn no_detection(&self) {
        if let Ok(line) = self.run.out.recv_timeout(Duration::from_millis(400)) {
            panic!("unexpected output: {line}");
        }
    }

    fn notice(&self, text: &str) {
        self.notice_any(&[text]);
    }

    fn notice_any(&self, texts: &[&str]) {
        loop {
            let line = self
                .run
                .err
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("no notice {texts:?}"));
            if texts.iter().any(|t| line.contains(t)) {
                return;
            }
        }
    }

    /// Interrupts it like Ctrl-C does and returns the exit code.
    fn stop(self) -> i32 {
        self.run.stop()
    }
}

fn write(p: &Path, text: &str) {
    let mut f = OpenOptions::new().create(true).append(true).open(p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn line(v: Value) -> String {
    v.to_string() + "\n"
}

fn call(path: &str) -> String {
    line(json!({"type":"tool_call","name":"read_file","args":{"path":path}}))
}

fn calls(n: usize, path: &str) -> String {
    call(path).repeat(n)
}

fn dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("run.jsonl");
    (d, p)
}

#[test]
fn appended_lines_are_detected_in_order_even_when_split_across_writes() {
    let (_d, p) = dir();
    write(&p, &line(json!({"type":"prompt","text":"go"})));
    let t = Tail::start(&p, &[]);
    write(&p, &calls(4, "a.rs"));
    t.no_detection();
    // The fifth call arrives in two writes: nothing until its newline.
    let fifth = call("a.rs");
    let (head, tail) = fifth.split_at(20);
    write(&p, head);
    t.no_detection();
    write(&p, tail);
    let d = t.detection();
    assert_eq!(
        (d["detector"].as_str(), d["event"].as_u64()),
        (Some("tool-repeat"), Some(5))
    );
    assert_eq!(d["file"], p.display().to_string());
    assert_eq!(d["events"], json!([1, 2, 3, 4, 5]));
    // A new prompt re-arms it; the next loop comes out after the first.
    write(&p, &line(json!({"type":"prompt","text":"again"})));
    write(&p, &calls(5, "b.rs"));
    assert_eq!(t.detection()["event"], 11);
    assert_eq!(t.stop(), 1, "exit 1: something was detected");
}

#[test]
fn existing_content_feeds_the_detectors_silently_unless_from_start() {
    let (_d, p) = dir();
    write(&p, &line(json!({"type":"prompt","text":"go"})));
    write(&p, &calls(6, "old.rs"));
    write(&p, &line(json!({"type":"prompt","text":"next"})));
    write(&p, &calls(4, "a.rs"));
    let t = Tail::start(&p, &[]);
    t.no_detection();
    // State is right: one more call completes the four already there.
    write(&p, &call("a.rs"));
    assert_eq!(t.detection()["event"], 12);
    drop(t);
    let t = Tail::start(&p, &["--from-start"]);
    assert_eq!(t.detection()["event"], 5, "the old loop too");
    assert_eq!(t.detection()["event"], 12);
    assert_eq!(t.stop(), 1);
}

#[test]
fn nothing_detected_exits_0() {
    let (_d, p) = dir();
    write(&p, &calls(2, "a.rs"));
    let t = Tail::start(&p, &[]);
    write(&p, &call("b.rs"));
    t.no_detection();
    assert_eq!(t.stop(), 0);
}

#[test]
fn a_missing_file_is_waited_for() {
    let (_d, p) = dir();
    let t = Tail::start(&p, &[]);
    write(&p, &calls(5, "a.rs"));
    t.notice("appeared");
    assert_eq!(t.detection()["event"], 4);
}

#[test]
fn truncation_starts_over() {
    let (_d, p) = dir();
    write(&p, &calls(3, "a.rs"));
    let t = Tail::start(&p, &[]);
    std::fs::write(&p, calls(2, "a.rs")).unwrap();
    t.notice("truncated");
    // A fresh stream: the 3 calls before do not count, indices restart.
    write(&p, &calls(2, "a.rs"));
    t.no_detection();
    write(&p, &call("a.rs"));
    assert_eq!(t.detection()["event"], 4);
}

#[test]
fn rotation_by_rename_is_followed_by_name() {
    let (d, p) = dir();
    write(&p, &calls(2, "a.rs"));
    let t = Tail::start(&p, &[]);
    // A last write to the old file, then rotation, then the new file.
    write(&p, &call("a.rs"));
    std::fs::rename(&p, d.path().join("run.jsonl.1")).unwrap();
    write(&p, &calls(2, "a.rs"));
    t.notice("replaced");
    // The stream goes on across files: 3 + 2 calls make five.
    assert_eq!(t.detection()["event"], 4);
}

#[test]
fn delete_and_recreate_is_followed_and_deletion_is_said() {
    let (_d, p) = dir();
    write(&p, &calls(4, "a.rs"));
    let t = Tail::start(&p, &[]);
    std::fs::remove_file(&p).unwrap();
    t.notice("deleted; keeping what was read");
    write(&p, &call("a.rs"));
    t.notice("replaced");
    assert_eq!(t.detection()["event"], 4);
}

#[test]
fn on_detect_runs_with_the_detection_in_its_environment() {
    let (d, p) = dir();
    let out = d.path().join("hook.txt");
    let cmd = format!(
        "printf '%s|%s|%s|%s\\n%s\\n' \"$LOOPSCOPE_FILE\" \"$LOOPSCOPE_DETECTOR\" \"$LOOPSCOPE_EVENT\" \"$LOOPSCOPE_REASON\" \"$LOOPSCOPE_JSON\" >> {}",
        out.display()
    );
    let t = Tail::start(&p, &["--on-detect", &cmd]);
    write(&p, &calls(5, "a.rs"));
    let d = t.detection();
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(&out).unwrap_or_default();
        if text.lines().count() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut lines = text.lines();
    let first: Vec<&str> = lines.next().unwrap().splitn(4, '|').collect();
    assert_eq!(first[..3], [p.display().to_string().as_str(), "tool-repeat", "4"]);
    assert_eq!(first[3], d["reason"].as_str().unwrap());
    let json: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(json, d, "LOOPSCOPE_JSON is the detection's JSON line");
}

#[test]
fn a_failing_hook_is_reported_not_fatal() {
    let (_d, p) = dir();
    let t = Tail::start(&p, &["--on-detect", "echo broken >&2; exit 3"]);
    write(&p, &calls(5, "a.rs"));
    t.detection();
    // The hook's own stderr passes through, then loopscope says it failed.
    t.notice("broken");
    t.notice("on-detect command for event 4 exited with status 3");
    write(&p, &line(json!({"type":"prompt"})));
    write(&p, &calls(5, "b.rs"));
    assert_eq!(t.detection()["event"], 10, "still running");
}

#[test]
fn standard_input_is_read_until_it_ends() {
    let text = calls(5, "a.rs") + &line(json!({"type":"prompt"})) + &calls(5, "b.rs");
    let out = Command::new(BIN)
        .args(["tail", "-", "--no-tui", "--json", "--detectors", "tool-repeat"])
        .env_remove("LOOPSCOPE_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let events: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].as_u64().unwrap())
        .collect();
    assert_eq!(events, vec![4, 10]);
}

#[test]
fn human_output_and_a_directory_is_an_error() {
    let (d, p) = dir();
    let out = Command::new(BIN)
        .args(["tail", "--no-tui"])
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
    write(&p, "");
    let mut child = Command::new(BIN)
        .args(["tail", "--no-tui", "--detectors", "tool-repeat"])
        .arg(&p)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(child.stdout.take().unwrap());
    let notices = lines_of(child.stderr.take().unwrap());
    assert!(notices
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .contains("following"));
    write(&p, &calls(5, "a.rs"));
    let l = lines.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        l.starts_with(&format!("{} event 4  tool-repeat    tools", p.display())),
        "{l}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Issue 44, item 8: `tail --no-tui missing.jsonl` said "following … from
/// event 0" right after "waiting for … to appear", though the file never
/// appeared. It says it follows the file once the file is there.
#[test]
fn a_file_not_there_yet_is_waited_for_and_not_said_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.jsonl");
    let mut cmd = Command::new(BIN);
    cmd.args(["tail", "--no-tui"])
        .arg(&path)
        .env_remove("LOOPSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", dir.path());
    let run = Running::start(cmd);
    let mut seen = Vec::new();
    Running::wait(&run.err, "to appear", &mut seen);
    std::fs::write(&path, "{\"type\":\"request\"}\n").unwrap();
    Running::wait(&run.err, "appeared; following it", &mut seen);
    assert!(
        !seen.iter().any(|l| l.contains("from event")),
        "nothing was followed before the file appeared: {seen:#?}"
    );
    assert_eq!(run.stop(), 0);
}
