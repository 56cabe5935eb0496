//! `watch` and `tail --latest` (issue 16) on a fake HOME whose sessions
//! grow and appear while they run: detection lines from several agents'
//! files, switching to a new session, folders that do not exist yet,
//! truncation, deletion, half-written lines; the list in tmux.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::fleet::{Fleet, PROJECT};
use common::tmux::Tmux;
use common::Running;

fn sample(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs").join(name)).unwrap()
}

/// Writes `bytes` to `path` in two pieces cut inside a line, a moment apart
/// (an agent flushing half a record).
fn write_in_halves(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let cut = bytes.len() / 2;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&bytes[..cut]).unwrap();
    f.flush().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    f.write_all(&bytes[cut..]).unwrap();
}

#[test]
fn watch_no_tui_prints_new_detections_from_several_agents_sessions() {
    let fleet = Fleet::new();
    let mut cmd = fleet.cmd();
    cmd.args(["watch", "--no-tui", "--idle-after", "1h"]);
    let run = Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    // What the sessions held at the start only marks them: nothing printed.
    Running::wait(&run.err, "watching 7 sessions", &mut err);
    let home = fleet.path();
    let claude_new = home.join(PROJECT).join("9a9a9a9a-new.jsonl");
    write_in_halves(&claude_new, &sample("formats/claude-code-session.jsonl"));
    let rollout = home.join(".codex/sessions/2026/11/21/rollout-2026-11-21T09-00-00-0200.jsonl");
    write_in_halves(&rollout, &sample("formats/codex-rollout-errors.jsonl"));
    let line = Running::wait(&run.out, "9a9a9a9a-new.jsonl", &mut out);
    assert!(line.contains("action-window") || line.contains("tool-repeat"), "{line}");
    Running::wait(&run.out, "rollout-2026-11-21T09-00-00-0200.jsonl", &mut out);
    Running::wait(&run.err, "new session", &mut err);
    // An existing, clean session that grows into a loop.
    let clean = home.join(PROJECT).join("00000000-clean.jsonl");
    let rest: Vec<u8> = String::from_utf8(sample("formats/claude-code-session.jsonl"))
        .unwrap()
        .lines()
        .skip(4)
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&clean)
        .unwrap()
        .write_all(&rest)
        .unwrap();
    Running::wait(&run.out, "00000000-clean.jsonl", &mut out);
    let lines_err: Vec<String> = run.err.try_iter().collect();
    assert!(
        lines_err.iter().all(|l| !l.contains("line ")),
        "bad lines: {lines_err:?}"
    );
    assert_eq!(run.stop(), 1);
    // The session that looped before watching began was not announced.
    assert!(out.iter().all(|l| !l.contains("5f0c1d2e")), "{out:#?}");
}

#[test]
fn watch_json_names_the_parent_of_a_sub_agent_and_survives_truncation_and_deletion() {
    let fleet = Fleet::new();
    let mut cmd = fleet.cmd();
    cmd.args(["watch", "--no-tui", "--json", "--agent", "claude-code"]);
    let run = Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    Running::wait(&run.err, "watching 4 sessions", &mut err);
    let parent = fleet.path().join(PROJECT).join("77777777-parent.jsonl");
    std::fs::write(&parent, &sample("formats/claude-code-session.jsonl")[..200]).unwrap();
    let sub = fleet
        .path()
        .join(PROJECT)
        .join("77777777-parent/subagents/agent-s9.jsonl");
    write_in_halves(&sub, &sample("formats/claude-code-session.jsonl"));
    let line = Running::wait(&run.out, "agent-s9.jsonl", &mut out);
    let rec: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(rec["type"], "detection");
    assert!(
        rec["parent"].as_str().unwrap().ends_with("77777777-parent.jsonl"),
        "{rec}"
    );
    // Truncated and written again as it was: read from its new start, the
    // loop found where it was before is not announced twice...
    std::thread::sleep(Duration::from_millis(600));
    out.extend(run.out.try_iter());
    let before = out.clone();
    let claude = sample("formats/claude-code-session.jsonl");
    std::fs::write(&sub, b"").unwrap();
    std::thread::sleep(Duration::from_millis(600));
    std::fs::write(&sub, &claude).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // ...but started over with one more question first, it is a loop one
    // event later: announced.
    std::fs::write(&sub, b"").unwrap();
    std::thread::sleep(Duration::from_millis(600));
    let first = claude.iter().position(|b| *b == b'\n').unwrap() + 1;
    std::fs::write(&sub, [&claude[..first], &claude[..]].concat()).unwrap();
    let line = Running::wait(&run.out, "agent-s9.jsonl", &mut out);
    assert!(!before.contains(&line), "announced twice: {line}");
    // Deleted: said once on stderr; the others go on.
    std::fs::remove_file(&sub).unwrap();
    Running::wait(&run.err, "agent-s9.jsonl: deleted", &mut err);
    let other = fleet.path().join(PROJECT).join("88888888-after.jsonl");
    write_in_halves(&other, &sample("formats/claude-code-session.jsonl"));
    Running::wait(&run.out, "88888888-after.jsonl", &mut out);
    assert_eq!(run.stop(), 1);
}

#[test]
fn a_folder_that_does_not_exist_yet_is_watched_for() {
    let dir = tempfile::tempdir().unwrap();
    let later = dir.path().join("runs/today");
    let mut cmd = common::loopscope_at_root();
    cmd.args(["watch", "--no-tui"]).arg(&later);
    let run = Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    Running::wait(&run.err, "does not exist yet", &mut err);
    Running::wait(&run.err, "watching 0 sessions", &mut err);
    write_in_halves(&later.join("a.jsonl"), &sample("identical-tool-calls.jsonl"));
    Running::wait(&run.out, "a.jsonl", &mut out);
    assert_eq!(run.stop(), 1);
}

#[cfg(unix)]
#[test]
fn an_unreadable_session_is_reported_and_the_rest_go_on() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked.jsonl");
    std::fs::write(&locked, sample("identical-tool-calls.jsonl")).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = if std::fs::File::open(&locked).is_ok() {
        // Root reads any file, so watch runs as an unprivileged user
        // (nobody, through util-linux's setpriv), to whom the file is as
        // unreadable as to anyone else; the folder lets it in.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_loopscope"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("LOOPSCOPE_CONFIG")
            .env_remove("NO_COLOR")
            .env("XDG_CONFIG_HOME", "/nonexistent");
        c
    } else {
        common::loopscope_at_root()
    };
    cmd.args(["watch", "--no-tui"]).arg(dir.path());
    let run = Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    Running::wait(&run.err, "locked.jsonl: permission denied", &mut err);
    write_in_halves(&dir.path().join("b.jsonl"), &sample("identical-tool-calls.jsonl"));
    Running::wait(&run.out, "b.jsonl", &mut out);
    run.stop();
}

#[test]
fn tail_latest_follows_the_newest_session_and_switches_to_a_new_one() {
    let fleet = Fleet::new();
    let newest = fleet
        .path()
        .join(PROJECT)
        .join("5f0c1d2e-0000-4000-8000-000000000001.jsonl");
    // The looping session is the newest; the others are older.
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    for f in ["00000000-clean.jsonl", "agent-old42.jsonl", "notes.jsonl"] {
        let p = fleet.path().join(PROJECT).join(f);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let mut cmd = fleet.cmd();
    cmd.args(["tail", "--latest", "claude-code", "--no-tui"]);
    let run = Running::start(cmd);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let line = Running::wait(&run.err, "now following", &mut err);
    assert!(line.ends_with(&newest.display().to_string()), "{line}");
    Running::wait(&run.err, "following", &mut err);
    // The agent starts a new session in another project.
    let started: PathBuf = fleet.path().join(".claude/projects/-home-dev-api/3c3c3c3c-next.jsonl");
    write_in_halves(&started, &sample("formats/claude-code-session.jsonl"));
    let line = Running::wait(&run.err, "now following", &mut err);
    assert!(line.ends_with("3c3c3c3c-next.jsonl"), "{line}");
    let det = Running::wait(&run.out, "3c3c3c3c-next.jsonl", &mut out);
    assert!(det.contains("event 11"), "{det}");
    // A sub-agent of it is not a new session to switch to.
    let sub = fleet
        .path()
        .join(".claude/projects/-home-dev-api/3c3c3c3c-next/subagents/agent-q.jsonl");
    write_in_halves(&sub, &sample("formats/claude-code-session.jsonl"));
    std::thread::sleep(Duration::from_millis(1500));
    let later: Vec<String> = run.err.try_iter().collect();
    assert!(later.iter().all(|l| !l.contains("agent-q")), "{later:?}");
    assert_eq!(run.stop(), 1);
}

#[test]
fn with_no_session_yet_tail_latest_says_where_it_waits_and_follows_nothing() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = common::fleet::in_home(home.path());
    cmd.args(["tail", "--latest", "codex", "--no-tui"]);
    let run = Running::start(cmd);
    let mut err = Vec::new();
    let line = Running::wait(&run.err, "no session yet", &mut err);
    let folder = home.path().join(".codex/sessions");
    assert!(
        line.ends_with(&format!("waiting for one in {}", folder.display())),
        "{line}"
    );
    // Nothing is followed yet, so nothing says "following".
    std::thread::sleep(Duration::from_millis(800));
    err.extend(run.err.try_iter());
    assert!(err.iter().all(|l| !l.contains("following")), "{err:?}");
    // The first session to appear is followed, and said so.
    let session = folder.join("2026/11/20/rollout-2026-11-20T10-00-00-0199.jsonl");
    write_in_halves(&session, &sample("formats/codex-rollout-errors.jsonl"));
    let line = Running::wait(&run.err, "now following", &mut err);
    assert!(line.ends_with("rollout-2026-11-20T10-00-00-0199.jsonl"), "{line}");
    run.stop();
}

#[test]
fn scan_of_an_agent_with_no_session_exits_2_naming_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    // One agent's folder exists and is empty, the other's does not exist.
    std::fs::create_dir_all(home.path().join(".codex/sessions")).unwrap();
    let out = common::fleet::in_home(home.path())
        .args(["scan", "--agent", "codex,gemini-cli"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap();
    assert!(
        last.contains("no session of codex, gemini-cli found (looked in "),
        "{err}"
    );
    assert!(
        last.contains(&home.path().join(".codex/sessions").display().to_string()),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn tail_latest_refuses_what_it_cannot_follow() {
    let out = common::loopscope_at_root()
        .args(["tail", "--latest", "nothing-like-this", "--no-tui"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a directory") && err.lines().count() == 1, "{err}");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs/demo.jsonl");
    let out = common::loopscope_at_root()
        .args(["watch", "--no-tui"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopscope tail FILE"));
}

#[test]
fn the_list_shows_sessions_and_opens_one_in_the_viewer() {
    let fleet = Fleet::new();
    let cmd = format!(
        "HOME={home} XDG_CONFIG_HOME={home}/.config {bin} watch",
        home = fleet.path().display(),
        bin = env!("CARGO_BIN_EXE_loopscope")
    );
    let t = Tmux::start_in("watch-list", &cmd, fleet.path());
    let screen = t.wait_for("sessions · by activity");
    t.wait_for("7 sessions");
    let screen = t.screen().to_string() + &screen;
    assert!(screen.contains("↳ agent-a1b2c3.jsonl"), "{screen}");
    assert!(screen.contains("⚠ FIRED"), "{screen}");
    // A new session that loops: badged.
    let new = fleet.path().join(PROJECT).join("9b9b9b9b-new.jsonl");
    write_in_halves(&new, &sample("formats/claude-code-session.jsonl"));
    t.wait_for("1 new");
    // Enter on the newest (the new one) opens the live viewer; Esc comes back.
    t.keys(&["Home", "Enter"]);
    t.wait_for("LIVE");
    // Another session loops while this one is open: said in the viewer.
    let other = fleet.path().join(PROJECT).join("9c9c9c9c-other.jsonl");
    write_in_halves(&other, &sample("formats/claude-code-session.jsonl"));
    t.wait_for("fired in");
    t.keys(&["Escape"]);
    t.wait_for("sessions · by activity");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// At 80x24: `/` filters the list; Enter on a FIRED session opens the
/// viewer at that detection, its detail shown; q comes back to the list,
/// and q there quits.
#[test]
fn enter_on_a_fired_session_opens_its_detection_and_q_comes_back() {
    let fleet = Fleet::new();
    let cmd = format!(
        "HOME={home} XDG_CONFIG_HOME={home}/.config {bin} watch",
        home = fleet.path().display(),
        bin = env!("CARGO_BIN_EXE_loopscope")
    );
    let t = Tmux::start_sized("watch-fired", &cmd, fleet.path(), (80, 24));
    t.wait_for("7 sessions");
    t.keys(&["/"]);
    t.keys(&["-l", "codex"]);
    let screen = t.wait_for("filter: codex");
    assert!(screen.lines().last().unwrap().starts_with("filter: codex"), "{screen}");
    t.keys(&["Enter"]);
    let screen = t.wait_for("1 of 7 match /codex/");
    assert!(screen.contains("⚠ FIRED error-streak"), "{screen}");
    t.keys(&["Enter"]);
    let screen = t.wait_for("FIRED at event");
    assert!(screen.contains("error-streak"), "{screen}");
    assert!(screen.contains("PAUSED"), "it stays at the detection: {screen}");
    // q comes back to the list (the filter still on), q there quits.
    t.keys(&["q"]);
    t.wait_for("1 of 7 match /codex/");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// Times any thread of a process was switched out so far (voluntary and
/// not): how often it woke up.
#[cfg(target_os = "linux")]
fn wakeups(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_fleet_never_wakes_up() {
    // Issue 31: 10,003 idle sessions took ~10 % of a core: every session was
    // looked at every 5 s and the thread woke every second. Now it sleeps
    // until a notification: no wakeup at all while nothing changes.
    let dir = tempfile::tempdir().unwrap();
    let day_ago = std::time::SystemTime::now() - Duration::from_secs(86_400);
    for i in 0..200 {
        let path = dir.path().join(format!("s{i:03}.jsonl"));
        std::fs::write(&path, sample("long-clean-session.jsonl")).unwrap();
        std::fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(day_ago)
            .unwrap();
    }
    let mut cmd = common::loopscope_at_root();
    cmd.args(["watch", "--no-tui"]).arg(dir.path());
    let run = Running::start(cmd);
    Running::wait(&run.err, "watching 200 sessions", &mut Vec::new());
    // Its own reads of the files are notifications too, handled by now.
    std::thread::sleep(Duration::from_millis(500));
    let before = wakeups(run.child.id());
    // A window to count in (the old watch woke once a second: 4 here).
    std::thread::sleep(Duration::from_secs(4));
    let woke = wakeups(run.child.id()) - before;
    assert!(woke <= 1, "{woke} wakeups in an idle window");
    // And a notification still wakes it: a session that grows is read.
    let grown = dir.path().join("s007.jsonl");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&grown)
        .unwrap()
        .write_all(&sample("identical-tool-calls.jsonl"))
        .unwrap();
    Running::wait(&run.out, "s007.jsonl", &mut Vec::new());
    run.stop();
}

#[cfg(unix)]
#[test]
fn more_sessions_than_file_descriptors_are_all_followed() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        std::fs::write(
            dir.path().join(format!("s{i:03}.jsonl")),
            sample("identical-tool-calls.jsonl"),
        )
        .unwrap();
    }
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -n 64 && exec {} watch --no-tui --from-start {}",
            env!("CARGO_BIN_EXE_loopscope"),
            dir.path().display()
        ))
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env_remove("LOOPSCOPE_CONFIG");
    let run = Running::start(cmd);
    let mut err = Vec::new();
    Running::wait(&run.err, "watching 300 sessions", &mut err);
    // A session that grows after them all is still followed.
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join("s007.jsonl"))
        .unwrap()
        .write_all(&sample("identical-tool-calls.jsonl"))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut lines = 0;
    while Instant::now() < deadline && lines < 300 * 3 + 1 {
        if run.out.recv_timeout(Duration::from_millis(200)).is_ok() {
            lines += 1;
        }
    }
    let errors: Vec<String> = run.err.try_iter().collect();
    assert!(errors.iter().all(|l| !l.contains("open files")), "{errors:?}");
    assert!(lines > 300 * 3, "{lines} detection lines");
    run.stop();
}

/// `--latest all` (offered by the completions, refused until now): the
/// newest session of any agent, here Codex's over an older Claude Code one.
#[test]
fn tail_latest_all_follows_the_newest_session_of_any_agent() {
    let home = tempfile::tempdir().unwrap();
    let claude = home.path().join(".claude/projects/-home-dev-app/1a1a1a1a-old.jsonl");
    let codex = home
        .path()
        .join(".codex/sessions/2026/11/28/rollout-2026-11-28T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl");
    for (path, sample_name) in [
        (&claude, "formats/claude-code-session.jsonl"),
        (&codex, "formats/codex-rollout-errors.jsonl"),
    ] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, sample(sample_name)).unwrap();
    }
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&claude)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let mut cmd = common::fleet::in_home(home.path());
    cmd.args(["tail", "--latest", "all", "--no-tui"]);
    let run = Running::start(cmd);
    let mut err = Vec::new();
    let line = Running::wait(&run.err, "now following", &mut err);
    assert!(line.ends_with(&codex.display().to_string()), "{line}");
    run.stop();
}
