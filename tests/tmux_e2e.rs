//! The real binary in a real terminal (tmux): keys in, screen out, and the
//! terminal restored afterwards — after `q`, Ctrl-C, a panic and SIGTERM.
//! `.ci/run` installs tmux where it is missing.

mod common;

use std::process::Command;
use std::time::Instant;

use common::tmux::Tmux;

/// The endless input runs alone (it keeps a core busy); the rest share.
static TIMING: std::sync::RwLock<()> = std::sync::RwLock::new(());

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-logs/demo.jsonl");

fn viewer(extra: &str) -> String {
    format!("{} {DEMO} --paused {extra}", env!("CARGO_BIN_EXE_loopscope"))
}

/// After the app exits: the main screen is back, mouse reporting is off,
/// the cursor shows, and the shell's `stty` reports canonical (cooked)
/// mode, not raw mode.
fn assert_restored(t: &Tmux, _screen: &str) {
    let screen = t.wait_for("icanon");
    assert!(!t.alternate_screen_on(), "still on the alternate screen:\n{screen}");
    assert!(!t.mouse_reporting_on(), "mouse reporting still on:\n{screen}");
    assert!(t.cursor_shown(), "the cursor is still hidden:\n{screen}");
    assert!(
        screen.lines().any(|l| l.trim() == "icanon"),
        "not back in cooked mode:\n{screen}"
    );
}

#[test]
fn seeking_to_the_end_shows_the_detection_and_q_restores_the_terminal() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let t = Tmux::start("q", &viewer(""));
    t.wait_for("PAUSED");
    assert!(t.alternate_screen_on());
    t.keys(&["G"]);
    let screen = t.wait_for("END");
    assert!(screen.contains("block-cycle   FIRED"), "{screen}");
    assert!(screen.contains("⚠ block-cycle: 2 blocks repeat: 8"), "{screen}");
    t.keys(&["e"]);
    t.keys(&["E"]);
    let screen = t.wait_for("FIRED at event 278");
    assert!(screen.contains("period 2 · matches 8 (needs 6)"), "{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn ctrl_c_quits_from_the_help_overlay() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let t = Tmux::start("ctrlc", &viewer(""));
    t.wait_for("PAUSED");
    t.keys(&["?"]);
    t.wait_for("loopscope keys");
    t.keys(&["C-c"]);
    // Ctrl-C is a key in raw mode; the viewer ends as SIGINT ends a program.
    let screen = t.wait_for("EXIT=130");
    assert_restored(&t, &screen);
}

#[test]
fn a_panic_restores_the_terminal_and_prints_its_message() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let t = Tmux::start("panic", &format!("LOOPSCOPE_TEST_PANIC=1 {}", viewer("")));
    let screen = t.wait_for("EXIT=");
    assert_restored(&t, &screen);
    let screen = t.screen();
    // The whole message is on the main screen, not overwritten.
    assert!(
        screen.contains("thread 'main'") && screen.contains("panicked at"),
        "{screen}"
    );
    assert!(screen.contains("deliberate panic (LOOPSCOPE_TEST_PANIC)"), "{screen}");
    assert!(screen.contains("EXIT=101"), "{screen}");
}

#[test]
fn an_allocation_failure_or_a_panic_on_another_thread_restores_the_terminal() {
    // Out of memory is an abort (SIGABRT), not a panic: no hook runs, only
    // a signal handler. (Rust's own "memory allocation … failed" goes to
    // the alternate screen, gone with it; the handler's line is written
    // after leaving it.) A panic on another thread ends the app too.
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    for (how, said, status) in [
        ("alloc", "an allocation failed", "EXIT=134"),
        ("thread", "deliberate panic on a thread", "EXIT=101"),
    ] {
        let t = Tmux::start(how, &format!("LOOPSCOPE_TEST_PANIC={how} {}", viewer("")));
        let screen = t.wait_for("EXIT=");
        assert_restored(&t, &screen);
        let screen = t.screen();
        assert!(screen.contains(said) && screen.contains(status), "{how}: {screen}");
    }
}

#[test]
fn sigterm_sigquit_and_sigint_restore_the_terminal_and_exit_128_plus_the_signal() {
    // SIGQUIT's default action (a core dump) left raw mode, the alternate
    // screen and mouse reporting on; it now stops the app as SIGTERM does.
    // SIGINT ended it with 0 (issue 31): 130, as a shell reports it.
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    for (signal, status) in [("-TERM", "EXIT=143"), ("-QUIT", "EXIT=131"), ("-INT", "EXIT=130")] {
        let t = Tmux::start(&signal[1..].to_lowercase(), &viewer(""));
        t.wait_for("PAUSED");
        assert!(t.mouse_reporting_on());
        let shell = t.run(&["display", "-p", "-t", "e2e", "#{pane_pid}"]);
        let killed = Command::new("pkill")
            .args([signal, "-P", shell.trim()])
            .status()
            .unwrap();
        assert!(killed.success());
        let screen = t.wait_for("EXIT=");
        assert_restored(&t, &screen);
        assert!(screen.contains(status), "{signal}: {screen}");
    }
}

#[test]
fn tail_shows_appended_lines_live_and_pausing_keeps_reading() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.jsonl");
    let append = |text: &str| {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    };
    let cmd = format!(
        "{} tail {} --profile gemini-cli",
        env!("CARGO_BIN_EXE_loopscope"),
        file.display()
    );
    let t = Tmux::start("tail", &cmd);
    t.wait_for("to appear");
    append("{\"type\":\"prompt\",\"text\":\"go\"}\n{\"type\":\"request\"}\n");
    append("{\"type\":\"reasoning\",\"text\":\"Reading the config before the tests. \"}\n");
    t.wait_for("Reading the config before the tests.");
    assert!(t.screen().contains("● LIVE"));
    let call = "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"cfg.toml\"}}\n";
    append(&call.repeat(4));
    t.wait_for("4 of 5 identical");
    // The fifth call: the detection is on screen within a frame or two.
    let appended = Instant::now();
    append(call);
    let screen = t.wait_for("tool-repeat FIRED");
    println!(
        "tail TUI: append -> FIRED on a settled screen (tmux capture polled every 50 ms, +30 ms settle) {:?}",
        appended.elapsed()
    );
    assert!(screen.contains("⚠ tool-repeat"), "{screen}");
    // Space freezes the view; appends keep being read; G follows again.
    t.keys(&["Space"]);
    t.wait_for("PAUSED");
    append("{\"type\":\"note\",\"text\":\"written while paused\"}\n");
    t.wait_for("LIVE +1 new");
    // (The timeline lists the note as soon as it is read, so wait for the
    // status line, not for the note.)
    t.keys(&["G"]);
    let screen = t.wait_for("● LIVE");
    assert!(screen.contains("written while paused"), "{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn keys_and_q_are_answered_while_input_keeps_streaming() {
    let _alone = TIMING.write().unwrap_or_else(|e| e.into_inner());
    // An input that never ends, as fast as `yes` writes it: the viewer is
    // always behind, so a key that waited for the input to be taken in
    // would never be answered. What is checked is the order, never a
    // time: the help opens while events keep arriving, and q quits before
    // the (endless) input ends.
    let line = r#"{"type":"reasoning","text":"step of the plan "}"#;
    let t = Tmux::start(
        "endless",
        &format!("yes '{line}' | {} view - --paused", env!("CARGO_BIN_EXE_loopscope")),
    );
    // (The screen never settles while events stream in: screens are taken
    // as they are, and a count read only from a whole status line.)
    let loaded = |screen: &str| -> Option<usize> {
        let status = screen.lines().next()?;
        let range = status.split("(0–").nth(1)?.split(')').next()?;
        Some(range.parse::<usize>().ok()? + 1)
    };
    t.wait_until("the viewer", |s| s.contains("timeline") && loaded(s).is_some());
    t.keys(&["?"]);
    let screen = t.wait_until("the help", |s| s.contains("loopscope keys") && loaded(s).is_some());
    let at_help = loaded(&screen).unwrap();
    t.keys(&["?"]);
    // Events are still arriving after the key was answered.
    t.wait_until("more events", |s| loaded(s).is_some_and(|n| n > at_help));
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn inspecting_a_failed_call_and_the_detections_list_at_80x24() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let t = Tmux::start_sized(
        "inspect",
        &viewer("--start-at 278"),
        std::path::Path::new("."),
        (80, 24),
    );
    let screen = t.wait_for("FIRED at event 278");
    assert!(
        screen.contains("event 278 (0–313)"),
        "--start-at selects the detection: {screen}"
    );
    assert!(screen.trim_end().ends_with("? help"), "{screen}");
    // The failed call, through the timeline filter and the inspector.
    t.keys(&["f"]);
    t.wait_for("filter:");
    t.keys(&["failed", "Enter", "Tab", "Tab", "j", "o"]);
    let screen = t.wait_for("result · event 70 · ✗ error");
    assert!(screen.contains("\"command\": \"cargo test"), "{screen}");
    assert!(screen.contains("assertion `left == right` failed"), "{screen}");
    // Esc on its own: followed at once by a key it would read as Alt+key.
    t.keys(&["Escape"]);
    t.wait_for("timeline ·");
    t.keys(&["d"]);
    let screen = t.wait_for("1 detection ·");
    assert!(screen.contains("block-cycle"), "{screen}");
    t.keys(&["Enter", "z"]);
    let screen = t.wait_for("zoomed");
    assert!(screen.contains("rule:") || screen.contains("more rows"), "{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn a_live_detection_flashes_a_badge_and_is_selected() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.jsonl");
    std::fs::write(&file, "{\"type\":\"prompt\",\"text\":\"go\"}\n").unwrap();
    let cmd = format!("{} tail {}", env!("CARGO_BIN_EXE_loopscope"), file.display());
    let t = Tmux::start_sized("badge", &cmd, std::path::Path::new("."), (80, 24));
    t.wait_for("● LIVE");
    let call = "{\"type\":\"tool_call\",\"name\":\"read_file\",\"args\":{\"path\":\"a.rs\"}}\n";
    let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    std::io::Write::write_all(&mut f, call.repeat(5).as_bytes()).unwrap();
    let screen = t.wait_for("⚠ tool-repeat at 5");
    assert!(screen.contains("FIRED"), "{screen}");
    assert!(
        screen.contains("the calls involved"),
        "the calls fill the big pane: {screen}"
    );
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn set_silences_a_detection_and_compare_shows_two_profiles() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-logs/fp-code-block.jsonl");
    let cmd = format!("{} {file} --paused --start-at 220", env!("CARGO_BIN_EXE_loopscope"));
    let t = Tmux::start("whatif", &cmd);
    let screen = t.wait_for("FIRED at event 220");
    assert!(screen.contains("⚠ block-cycle"), "{screen}");
    t.keys(&[":"]);
    t.wait_for("set/reset/profile");
    t.keys(&["set block-cycle.min_matches=21", "Enter"]);
    let screen = t.wait_for("seed*");
    assert!(!screen.contains("⚠ block-cycle"), "the detection is gone: {screen}");
    assert!(screen.contains("⚠ list-cycle"), "{screen}");
    t.keys(&[":"]);
    t.wait_for("set/reset/profile");
    t.keys(&["compare seed,extended", "Enter"]);
    let screen = t.wait_for("seed* vs extended");
    assert!(screen.contains("■ seed") && screen.contains("■ extended"), "{screen}");
    assert!(
        screen.contains("⚠ [seed*] list-cycle"),
        "the edited profile is starred: {screen}"
    );
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=0");
    assert_restored(&t, &screen);
}

#[test]
fn write_in_tail_never_writes_over_the_followed_log_or_into_latests_folder() {
    let _shared = TIMING.read().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let log = "{\"type\":\"prompt\",\"text\":\"go\"}\n{\"type\":\"request\"}\n{\"type\":\"content\",\"text\":\"a line to follow\"}\n";
    std::fs::create_dir(dir.path().join("sessions")).unwrap();
    std::fs::write(dir.path().join("sessions/live.jsonl"), log).unwrap();
    let bin = env!("CARGO_BIN_EXE_loopscope");
    for (name, command, write) in [
        (
            "write-tail",
            format!("{bin} tail sessions/live.jsonl"),
            "write sessions/live.jsonl",
        ),
        (
            "write-latest",
            format!("{bin} tail --latest sessions"),
            "write sessions/tuned.jsonl",
        ),
    ] {
        let t = Tmux::start_sized(name, &command, dir.path(), (200, 50));
        t.wait_for("● LIVE");
        t.keys(&[":"]);
        t.keys(&["-l", write]);
        t.keys(&["Enter"]);
        let screen = t.wait_for("refusing to write");
        assert!(screen.contains("sessions"), "{screen}");
        t.keys(&["q"]);
        t.wait_for("EXIT=0");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("sessions/live.jsonl")).unwrap(),
            log
        );
        assert!(!dir.path().join("sessions/tuned.jsonl").exists());
    }
}
