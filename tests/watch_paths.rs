//! `watch` follows every session `scan` would read, however the folder is
//! named on the command line and whatever the session file is: a relative
//! root (`./runs/`, `../x`), a symlink to a file growing elsewhere, a file
//! whose name looks like an editor's or an atomic writer's scratch file
//! but stays. Each is checked against `scan --json` of the final files.

mod common;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use common::Running;

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs").join(name)).unwrap()
}

/// `loopscope ARGS` run in `cwd`.
fn loopscope_in(cwd: &Path) -> std::process::Command {
    let mut cmd = common::loopscope_at_root();
    cmd.current_dir(cwd);
    cmd
}

/// Appends `bytes` a line at a time, each line in two writes.
fn append_slowly(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let cut = line.len() / 2;
        f.write_all(&line[..cut]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        f.write_all(&line[cut..]).unwrap();
    }
}

/// What `watch --json --from-start ROOT` (run in `cwd`) prints while `write`
/// runs, and what `scan --json ROOT` prints of the final files, sorted.
/// Watch is read until it has printed as many records as scan, then until
/// it reports a sentinel session written last (or a minute has passed).
fn watched_then_scanned(cwd: &Path, root: &str, write: impl FnOnce()) -> (Vec<String>, Vec<String>) {
    let mut cmd = loopscope_in(cwd);
    cmd.args(["watch", "--no-tui", "--json", "--from-start", root]);
    let run = Running::start(cmd);
    Running::wait(&run.err, "watching", &mut Vec::new());
    write();
    let expected = common::scan_records(cwd, root);
    let mut printed: Vec<String> = Vec::new();
    let failsafe = Instant::now() + Duration::from_secs(60);
    while printed.len() < expected.len() && Instant::now() < failsafe {
        printed.extend(run.out.recv_timeout(Duration::from_millis(100)));
    }
    std::fs::write(
        cwd.join(root).join("zz-sentinel.jsonl"),
        sample("identical-tool-calls.jsonl"),
    )
    .unwrap();
    while !printed.iter().any(|l| l.contains("zz-sentinel")) && Instant::now() < failsafe {
        printed.extend(run.out.recv_timeout(Duration::from_millis(100)));
    }
    run.stop();
    std::fs::remove_file(cwd.join(root).join("zz-sentinel.jsonl")).unwrap();
    printed.retain(|l| !l.contains("zz-sentinel"));
    printed.sort();
    (printed, expected)
}

#[test]
fn a_relative_root_is_followed_like_an_absolute_one() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("runs/old")).unwrap();
    let loop_bytes = sample("identical-tool-calls.jsonl");
    let half = loop_bytes.len() / 2;
    std::fs::write(home.join("runs/old/a.jsonl"), &loop_bytes[..half]).unwrap();
    for root in ["runs", "./runs/", "../home/runs"] {
        let name = root.replace(['.', '/'], "");
        let (watched, expected) = watched_then_scanned(&home, root, || {
            // A session that grows, and one in a folder made meanwhile.
            append_slowly(&home.join("runs/old/a.jsonl"), &loop_bytes[half..]);
            std::fs::create_dir_all(home.join(format!("runs/new-{name}"))).unwrap();
            append_slowly(
                &home.join(format!("runs/new-{name}/b.jsonl")),
                &sample("three-step-cycle.jsonl"),
            );
        });
        assert!(expected.iter().any(|l| l.contains("new-")), "{expected:#?}");
        assert_eq!(watched, expected, "watch {root}");
        std::fs::write(home.join("runs/old/a.jsonl"), &loop_bytes[..half]).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_session_written_elsewhere_is_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (root, elsewhere) = (dir.path().join("root"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (watched, expected) = watched_then_scanned(dir.path(), "root", || {
        // Linked while still empty, then written where it lives.
        std::fs::write(elsewhere.join("s.jsonl"), b"").unwrap();
        std::os::unix::fs::symlink(elsewhere.join("s.jsonl"), root.join("s.jsonl")).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        append_slowly(&elsewhere.join("s.jsonl"), &sample("identical-tool-calls.jsonl"));
    });
    assert!(!expected.is_empty());
    assert_eq!(watched, expected);
}

#[test]
fn a_file_named_like_a_scratch_file_that_stays_is_a_session() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("root")).unwrap();
    let (watched, expected) = watched_then_scanned(dir.path(), "root", || {
        append_slowly(
            &dir.path().join("root/.hidden.jsonl"),
            &sample("identical-tool-calls.jsonl"),
        );
        append_slowly(
            &dir.path().join("root/run.tmp.jsonl"),
            &sample("three-step-cycle.jsonl"),
        );
        // Written as a scratch file and renamed: only the final name is a session.
        let scratch = dir.path().join("root/c.jsonl.tmp");
        append_slowly(&scratch, &sample("ab-tool-cycle.jsonl"));
        std::fs::rename(&scratch, dir.path().join("root/c.jsonl")).unwrap();
    });
    assert_eq!(expected.iter().filter(|l| l.contains(".hidden.jsonl")).count(), 3);
    assert!(expected.iter().any(|l| l.contains("c.jsonl\"")), "{expected:#?}");
    assert_eq!(watched, expected);
}

#[test]
fn a_session_rewritten_whole_announces_each_detection_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let bytes = sample("identical-tool-calls.jsonl");
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let (watched, expected) = watched_then_scanned(dir.path(), "root", || {
        for n in (1..=lines.len()).step_by(4).chain([lines.len()]) {
            let upto = lines[..n].concat();
            // Atomically: written aside, renamed over the session.
            std::fs::write(root.join(".a.jsonl.tmp"), &upto).unwrap();
            std::fs::rename(root.join(".a.jsonl.tmp"), root.join("a.jsonl")).unwrap();
            // In place: truncated and written again.
            std::fs::write(root.join("b.jsonl"), &upto).unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
    });
    assert_eq!(expected.len(), 6, "{expected:#?}");
    assert_eq!(watched, expected);
}
