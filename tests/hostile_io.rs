//! Issue 23: where loopscope writes and what it says. Outputs never
//! replace a device, a FIFO, a link or a standard stream; nothing is ever
//! written into an input (by identity, also through standard output and
//! error); failures to read are said, secrets are not.

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use loopscope_core::Event;

fn lines(events: &[Event]) -> String {
    events.iter().map(|e| e.to_json().to_string() + "\n").collect()
}

fn session() -> String {
    lines(&[Event::prompt("hi"), Event::request(), Event::content("hello there")])
}

fn loopscope_in(dir: &Path) -> Command {
    let mut cmd = common::loopscope_at_root();
    cmd.current_dir(dir);
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    loopscope_in(dir).args(args).output().unwrap()
}

// ---- outputs never replace what is not a regular file ----

#[test]
fn a_character_device_is_written_to_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.jsonl"), session()).unwrap();
    // A /dev/null of our own (root, as CI runs), else the real one.
    let made = Command::new("mknod")
        .args(["fakenull", "c", "1", "3"])
        .current_dir(d)
        .status()
        .is_ok_and(|s| s.success());
    let null = if made { d.join("fakenull") } else { "/dev/null".into() };
    for args in [&["report", "in.jsonl", "-o"][..], &["convert", "in.jsonl", "-o"][..]] {
        let out = loopscope_in(d).args(args).arg(&null).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let kind = std::fs::metadata(&null).unwrap().file_type();
        assert!(kind.is_char_device(), "{args:?} replaced {}", null.display());
    }
    let leftovers: Vec<_> = std::fs::read_dir(d).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(leftovers.len() <= 2, "{leftovers:?}");
}

#[test]
fn a_fifo_is_streamed_into_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.jsonl"), session()).unwrap();
    let fifo = d.join("out.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = run(d, &["convert", "in.jsonl", "-o", "out.fifo"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let got = reader.join().unwrap();
    assert!(
        got.starts_with("{\"type\":\"meta\"") && got.contains("hello there"),
        "{got}"
    );
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn standard_output_by_any_name_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.jsonl"), session()).unwrap();
    // /dev/stdout is a link to /proc/self/fd/1; a private one of the same
    // kind, so that a regression replaces it and not the machine's.
    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("my-stdout")).unwrap();
    for name in ["-", "my-stdout"] {
        // Into a pipe.
        let out = run(d, &["convert", "in.jsonl", "-o", name]);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("hello there"), "{name}");
        // Appended to a file by the shell: appended, not replaced.
        let log = d.join("log.txt");
        std::fs::write(&log, "before\n").unwrap();
        let append = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        let out = loopscope_in(d)
            .args(["convert", "in.jsonl", "-o", name])
            .stdout(append)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.starts_with("before\n{\"type\":\"meta\"") && text.contains("hello there"),
            "{name}: {text}"
        );
    }
    assert!(std::fs::symlink_metadata(d.join("my-stdout"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn links_are_written_through_and_a_dangling_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("in.jsonl"), session()).unwrap();
    std::fs::write(d.join("real.jsonl"), "old\n").unwrap();
    std::os::unix::fs::symlink("real.jsonl", d.join("link.jsonl")).unwrap();
    let out = run(d, &["convert", "in.jsonl", "-o", "link.jsonl"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::read_to_string(d.join("real.jsonl"))
        .unwrap()
        .contains("hello there"));
    assert!(std::fs::symlink_metadata(d.join("link.jsonl"))
        .unwrap()
        .file_type()
        .is_symlink());
    std::os::unix::fs::symlink("nowhere.jsonl", d.join("dangling.jsonl")).unwrap();
    let out = run(d, &["convert", "in.jsonl", "-o", "dangling.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to replace the link"));
    assert!(std::fs::symlink_metadata(d.join("dangling.jsonl"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(!d.join("nowhere.jsonl").exists());
}

// ---- nothing is written into an input ----

/// Runs `args` with standard output (or error) appended to `into`, and
/// asserts a refusal that left `into` as it was.
fn assert_refused_redirect(dir: &Path, args: &[&str], into: &Path, stderr: bool) {
    let before = std::fs::read(into).unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(into).unwrap();
    let mut cmd = loopscope_in(dir);
    cmd.args(args).stdin(Stdio::null());
    if stderr {
        cmd.stderr(file).stdout(Stdio::null());
    } else {
        cmd.stdout(file).stderr(Stdio::piped());
    }
    // Followers run until stopped: one that does not refuse fails here
    // rather than hanging the test.
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{args:?} ran on instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(2), "{args:?}");
    if !stderr {
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(
            err.contains("standard output is") && err.contains("refusing to write"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(
        std::fs::read(into).unwrap(),
        before,
        "{args:?} wrote into {}",
        into.display()
    );
}

#[test]
fn every_command_refuses_standard_output_or_error_into_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.jsonl");
    std::fs::write(&input, session()).unwrap();
    let judge = [
        "judge",
        "in.jsonl",
        "--dry-run",
        "--endpoint",
        "http://127.0.0.1:9",
        "--model",
        "m",
    ];
    for args in [
        &["scan", "in.jsonl"][..],
        &["convert", "in.jsonl"],
        &["tune", "in.jsonl", "--vary", "chunk-chant.threshold=5..6"],
        &judge,
        &["tail", "--no-tui", "in.jsonl"],
        &["screenshot", "in.jsonl"],
    ] {
        assert_refused_redirect(d, args, &input, false);
        assert_refused_redirect(d, args, &input, true);
    }
}

#[test]
fn followers_of_folders_refuse_output_inside_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sessions = d.join("sessions");
    std::fs::create_dir_all(sessions.join("project")).unwrap();
    let s = sessions.join("project/session.jsonl");
    std::fs::write(&s, session()).unwrap();
    // A session that is followed, and a new file that would become one.
    for into in [s.clone(), sessions.join("project/new.jsonl")] {
        std::fs::write(&into, if into == s { session() } else { String::new() }).unwrap();
        for args in [
            &["watch", "--no-tui", "sessions"][..],
            &["tail", "--no-tui", "--latest", "sessions"],
        ] {
            assert_refused_redirect(d, args, &into, false);
        }
    }
    // --snapshot and replay-into name their output.
    let out = run(d, &["watch", "sessions", "--snapshot", "sessions/project/snap.svg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside the folder"));
    assert!(!sessions.join("project/snap.svg").exists());
}

// ---- failures are said, never taken for "not a session" ----

/// `loopscope` as a user that permissions apply to: as root (CI, many
/// containers) through setpriv as nobody, since root reads any file.
fn unprivileged(dir: &Path) -> Option<Command> {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let mut cmd = if root {
        let ok = Command::new("setpriv")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("skipped: running as root without setpriv, nothing is unreadable");
            return None;
        }
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_loopscope"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_loopscope"))
    };
    cmd.current_dir(dir)
        .env_remove("LOOPSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("HOME", dir);
    Some(cmd)
}

#[test]
fn an_unreadable_session_or_folder_is_a_warning_and_exit_2_not_a_skip() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = d.join("projects");
    std::fs::create_dir_all(s.join("locked")).unwrap();
    std::fs::write(s.join("good.jsonl"), session()).unwrap();
    std::fs::write(s.join("shut.jsonl"), session()).unwrap();
    std::fs::write(s.join("locked/inside.jsonl"), session()).unwrap();
    std::fs::write(s.join("notes.txt"), "not a session\n").unwrap();
    for p in ["shut.jsonl", "locked"] {
        std::fs::set_permissions(s.join(p), std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    for args in [
        &["scan", "projects"][..],
        &["scan", "--agent", "claude-code"],
        &["report", "projects", "-o", "/dev/null"],
    ] {
        let Some(mut cmd) = unprivileged(d) else { return };
        let out = cmd.args(args).env("LOOPSCOPE_CLAUDE_CODE_DIR", &s).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("shut.jsonl: cannot be read (permission denied)"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("locked: cannot read this folder (permission denied)"),
            "{args:?}: {err}"
        );
        // The readable session is still scanned; only notes.txt is "not a session".
        if args[0] == "scan" {
            assert!(String::from_utf8_lossy(&out.stdout).contains("good.jsonl"), "{args:?}");
            assert!(!err.contains("2 files skipped"), "{args:?}: {err}");
        }
    }
}

#[test]
fn watch_follows_a_session_whose_first_write_was_a_few_bytes_of_a_line() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = common::loopscope_at_root();
    cmd.args(["watch", "--no-tui"]).arg(dir.path());
    let run = common::Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    common::Running::wait(&run.err, "watching 0 sessions", &mut err);
    // The agent's first write: 11 bytes of its first record, no newline.
    let path = dir.path().join("s.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(b"{\"type\":\"pr").unwrap();
    f.flush().unwrap();
    // Long enough for the watcher to look at it and judge it (and for a
    // full rescan, which once made that judgement final).
    std::thread::sleep(std::time::Duration::from_millis(5500));
    let call = "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a\"}}\n";
    let rest = format!("ompt\",\"text\":\"go\"}}\n{{\"type\":\"request\"}}\n{}", call.repeat(6));
    f.write_all(rest.as_bytes()).unwrap();
    f.flush().unwrap();
    let line = common::Running::wait(&run.out, "tool-repeat", &mut out);
    assert!(line.contains("s.jsonl"), "{line}");
    common::Running::wait(&run.err, "new session", &mut err);
}

// ---- nothing forges a line ----

#[test]
fn a_file_name_or_tool_name_with_a_newline_cannot_forge_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("logs");
    std::fs::create_dir(&d).unwrap();
    // A tool name that would print a second, made-up detection line.
    let forged = "read\nlogs/ok.jsonl event 9  tool-repeat  tools  all clear";
    let mut events = vec![Event::prompt("go"), Event::request()];
    for _ in 0..6 {
        events.push(Event::tool_call(forged, serde_json::json!({"path": "a\nb"})));
    }
    let mut text = lines(&events);
    text.push_str("not json\n");
    let name = "evil\nok.jsonl: no detections (1 event)\n\u{1b}[2J.jsonl";
    std::fs::write(d.join(name), &text).unwrap();
    for args in [&["scan", "logs"][..], &["scan", "--summary", "logs"]] {
        let out = run(dir.path(), args);
        let (stdout, stderr) = (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        );
        for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                line.starts_with("logs/evil⏎") || line.starts_with("summary") || line.starts_with("  "),
                "{args:?}: a forged line: {line:?}\n{stdout}"
            );
        }
        assert!(stdout.contains("tool-repeat"), "{stdout}");
        assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'));
        for line in stderr.lines() {
            assert!(line.starts_with("loopscope: "), "{line:?}");
        }
    }
    // tail --no-tui prints the same one line per detection.
    let mut cmd = loopscope_in(dir.path());
    cmd.args(["tail", "--no-tui", "--from-start"]).arg(d.join(name));
    let run = common::Running::start(cmd);
    let mut seen = Vec::new();
    common::Running::wait(&run.out, "tool-repeat", &mut seen);
    for line in &seen {
        assert!(
            line.contains("/logs/evil⏎ok.jsonl: no detections (1 event)⏎␛[2J.jsonl event "),
            "{line:?}"
        );
    }
}

#[test]
fn write_in_the_viewer_refuses_a_fifo_rather_than_hang() {
    use common::viewer::{app_with, paused};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let now = std::time::Instant::now();
    let mut app = app_with(
        common::viewer::demo_events(),
        loopscope_core::Profile::Seed,
        (120, 40),
        paused(),
        now,
    );
    app.run_command(&format!("write {}", fifo.display()), now);
    let said = app.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(said.contains("is a FIFO"), "{said}");
}

// ---- generated outputs (completions, man page, detector list) ----

#[test]
fn generated_outputs_meet_a_full_disk_and_a_closed_pipe_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 5] = [
        &["completions", "bash"],
        &["completions", "zsh"],
        &["completions", "fish"],
        &["man"],
        &["detectors"],
    ];
    for args in commands {
        // A full disk is one line and exit 2.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = loopscope_in(dir.path()).args(args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim(), "loopscope: no space left on device", "{args:?}");
        // A reader that is gone (`| head`) is no error.
        let mut child = loopscope_in(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
