//! Inputs that are streams: standard input redirected from a file is that
//! file (never written over), a stream is read once even by a command that
//! reads its input twice (`report`), a FIFO or `<(…)` is read from its
//! first byte, and a standard error nobody reads is no crash.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const DEMO: &str = "sample-logs/demo.jsonl";

fn demo() -> Vec<u8> {
    fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(DEMO)).unwrap()
}

/// Runs `cmd` to the end, killed (and the test failed) after a minute: a
/// command that waits forever on a FIFO must fail the test, not hang it.
fn output_within_a_minute(mut cmd: Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("still running after a minute (waiting on a stream?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A FIFO in `dir` that a thread fills with the demo once it is opened.
fn fifo_with_demo(dir: &Path, name: &str) -> (std::path::PathBuf, std::thread::JoinHandle<()>) {
    let fifo = dir.join(name);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        // Opening blocks until loopscope opens it to read; a reader that
        // closes early makes the write fail, which the test sees in its output.
        std::thread::spawn(move || {
            let _ = fs::write(fifo, demo());
        })
    };
    (fifo, writer)
}

#[test]
fn standard_input_redirected_from_the_output_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    let commands: [&[&str]; 4] = [
        &["report", "-", "-o"],
        &["convert", "-", "-o"],
        &["screenshot", "-", "-o"],
        &["replay-into", "-"],
    ];
    for args in commands {
        fs::write(&log, demo()).unwrap();
        let mut cmd = common::loopscope_at_root();
        cmd.args(args).arg(&log).stdin(fs::File::open(&log).unwrap());
        let out = output_within_a_minute(cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is the same file as the input standard input; refusing to write over it"),
            "{args:?}: {err}"
        );
        assert_eq!(fs::read(&log).unwrap(), demo(), "{args:?} wrote over its input");
    }
}

#[test]
fn report_reads_a_piped_stream_once() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let mut child = common::loopscope_at_root()
        .args(["report", "-", "-o"])
        .arg(&html)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&demo()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The scan and the pictures both saw the stream: one detection, drawn.
    assert!(err.contains("1 session, 1 fired, 1 detection"), "{err}");
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("block-cycle") && page.contains("<svg"),
        "no detection drawn"
    );
}

#[test]
fn scan_and_report_read_a_fifo_from_its_first_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, writer) = fifo_with_demo(dir.path(), "scan.fifo");
    let mut cmd = common::loopscope_at_root();
    cmd.arg("scan").arg(&fifo);
    let out = output_within_a_minute(cmd);
    writer.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    // What scanning the file finds, at the same event: nothing of the
    // stream was lost to a look at its head.
    let mut cmd = common::loopscope_at_root();
    cmd.args(["scan", DEMO]);
    let from_file = String::from_utf8_lossy(&output_within_a_minute(cmd).stdout).into_owned();
    let without_names = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split_once(' ').map_or("", |x| x.1).to_string())
            .collect()
    };
    assert!(from_file.contains("event 278"), "{from_file}");
    assert_eq!(without_names(&text), without_names(&from_file), "{text}");

    let (fifo, writer) = fifo_with_demo(dir.path(), "report.fifo");
    let mut cmd = common::loopscope_at_root();
    cmd.arg("report").arg(&fifo).arg("-o").arg(dir.path().join("r.html"));
    let out = output_within_a_minute(cmd);
    writer.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("1 session, 1 fired, 1 detection"), "{err}");
}

#[test]
fn a_standard_error_nobody_reads_is_no_crash() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    // Not a format loopscope reads: `report` says so on standard error.
    fs::write(
        &junk,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = common::loopscope_at_root()
        .arg("report")
        .arg(&junk)
        .arg("-o")
        .arg(dir.path().join("r.html"))
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    // 2: the input could not be read; not 101, the panic of a failed write.
    assert_eq!(status.code(), Some(2));
}

/// A row dataset on standard input is its rows, as the file is.
#[test]
fn report_of_a_piped_dataset_reports_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rows/dataset.jsonl");
    let summary = |out: &Output| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.lines()
            .find_map(|l| {
                l.rsplit_once(": ")
                    .filter(|(_, r)| r.contains("sessions"))
                    .map(|(_, r)| r.to_string())
            })
            .unwrap_or_else(|| panic!("no summary: {err}"))
    };
    let mut cmd = common::loopscope_at_root();
    cmd.arg("report").arg(&dataset).arg("-o").arg(dir.path().join("a.html"));
    let from_file = output_within_a_minute(cmd);
    let mut cmd = common::loopscope_at_root();
    cmd.args(["report", "-", "-o"])
        .arg(dir.path().join("b.html"))
        .stdin(fs::File::open(&dataset).unwrap());
    let from_stdin = output_within_a_minute(cmd);
    assert!(summary(&from_file).starts_with("7 sessions"), "{}", summary(&from_file));
    assert_eq!(summary(&from_stdin), summary(&from_file));
}
