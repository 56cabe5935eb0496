//! Issue 44 in a real terminal (tmux): what a lazygit, k9s or less user
//! does without thinking — a wrong `--format` said, Ctrl-Z and `fg`, keys
//! that do nothing said — and what only a terminal shows (wide chars
//! beside an overlay's border). `.ci/run` installs tmux where missing.

mod common;

use common::tmux::Tmux;

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-logs");

fn viewer(name: &str, args: &str, size: (u16, u16)) -> Tmux {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_loopscope"));
    Tmux::start_sized(name, &cmd, std::path::Path::new(SAMPLES), size)
}

fn bottom(screen: &str) -> String {
    screen.lines().last().unwrap_or_default().trim_end().to_string()
}

/// Item 4: a wrong `--format` was an empty screen that said nothing.
#[test]
fn a_wrong_format_is_said_on_the_bottom_line() {
    let t = viewer("format", "view demo.jsonl --format claude-code --paused", (120, 24));
    let screen = t.wait_for("read no events");
    assert_eq!(
        bottom(&screen),
        "✗ --format claude-code read no events from it (it looks like native); try --format auto"
    );
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// Item 5: the inspector over CJK text kept its left border in a terminal.
#[test]
fn cjk_text_beside_an_overlay_leaves_its_border() {
    let t = viewer("cjk", "view error-total-zh.jsonl --paused --start-at 160", (80, 24));
    t.wait_for("PAUSED");
    t.keys(&["Tab", "Tab", "o"]);
    let screen = t.wait_for("events 157–162");
    let row = screen.lines().nth(2).unwrap();
    assert!(row.starts_with("│运 │reasoning · 21 chars"), "{screen}");
    t.keys(&["Escape"]);
    t.wait_for("? help");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// Item 6: Ctrl-Z suspends as in any terminal program (raw mode delivers
/// it as a key): the shell gets its screen and cooked terminal back, and
/// `fg` brings the viewer back, redrawn whole.
#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_brings_the_viewer_back() {
    // An interactive shell, for job control.
    let t = Tmux::start_sized(
        "suspend",
        "env HISTFILE=/dev/null PS1='$ ' bash --norc --noprofile -i",
        std::path::Path::new(SAMPLES),
        (100, 30),
    );
    t.wait_for("$");
    let cmd = format!("{} view demo.jsonl --paused", env!("CARGO_BIN_EXE_loopscope"));
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("PAUSED");
    assert!(t.alternate_screen_on());
    t.keys(&["C-z"]);
    let screen = t.wait_for("Stopped");
    assert!(!t.alternate_screen_on(), "the shell's screen is back: {screen}");
    assert!(t.cursor_shown());
    assert!(!t.mouse_reporting_on());
    t.keys(&["fg", "Enter"]);
    let screen = t.wait_for("PAUSED");
    assert!(t.alternate_screen_on());
    assert!(
        screen.contains("detectors · seed") && screen.contains("? help"),
        "redrawn whole: {screen}"
    );
    t.keys(&["q"]);
    t.wait_until("the shell's prompt", |s| !s.contains("PAUSED"));
    // fg's status is the viewer's.
    t.keys(&["echo VIEWER=$?", "Enter"]);
    t.wait_for("VIEWER=0");
}

/// Item 13: `watch typo-dir` said why the list is empty only in the
/// header, cut at 80 columns; the empty list says it whole.
#[test]
fn watch_of_a_missing_folder_says_so_whole_at_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "HOME={h} XDG_CONFIG_HOME={h}/.config {bin} watch typo-dir",
        h = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_loopscope")
    );
    let t = Tmux::start_sized("watch-typo", &cmd, dir.path(), (80, 24));
    let screen = t.wait_for("no session yet");
    assert!(
        screen.contains("typo-dir does not exist yet; watching for it"),
        "{screen}"
    );
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// Item 13: `view --latest AGENT` was rejected (only `tail` took it); it
/// opens the agent's most recently written session, as `tail --latest`
/// follows it.
#[test]
fn view_latest_opens_the_newest_session_of_an_agent() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join(".claude/projects/-home-dev-shop");
    std::fs::create_dir_all(&project).unwrap();
    let session = std::fs::read(format!("{SAMPLES}/formats/claude-code-session.jsonl")).unwrap();
    std::fs::write(project.join("0b1c2d3e-old.jsonl"), &session).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(project.join("0b1c2d3e-old.jsonl"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    std::fs::write(project.join("5f0c1d2e-new.jsonl"), &session).unwrap();
    let cmd = format!(
        "HOME={h} XDG_CONFIG_HOME={h}/.config {bin} view --latest claude-code --paused",
        h = home.path().display(),
        bin = env!("CARGO_BIN_EXE_loopscope")
    );
    let t = Tmux::start_sized("latest-view", &cmd, home.path(), (120, 30));
    let screen = t.wait_for_any(&["PAUSED", "EXIT="]);
    assert!(
        screen.lines().next().unwrap().contains("5f0c1d2e-new.jsonl"),
        "{screen}"
    );
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}
