//! Issue 22's screen at 80x24, in a real terminal (tmux): the selected row
//! reads, messages show on the bottom line, prompts edit and complete, and
//! playback announces what fired. `.ci/run` installs tmux where missing.

mod common;

use common::tmux::Tmux;

const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sample-logs");

fn at_80x24(name: &str, args: &str) -> Tmux {
    let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_loopscope"));
    Tmux::start_sized(name, &cmd, std::path::Path::new(SAMPLES), (80, 24))
}

fn bottom(screen: &str) -> String {
    screen.lines().last().unwrap_or_default().trim_end().to_string()
}

/// The reproduction: after the position, the selected timeline
/// row was drawn grey on grey. It is black text (colour 0) on grey (7).
#[test]
fn the_selected_row_after_the_position_is_drawn_dark_on_light() {
    let t = at_80x24("select", "fp-code-block.jsonl --paused --start-at 100");
    t.wait_for("PAUSED");
    t.keys(&["Tab", "Tab", "Down", "Down", "Down"]);
    t.wait_for("timeline");
    let colored = t.screen_with_colors();
    // The timeline's selected row (the detectors pane has one too).
    let (event, text) = colored
        .lines()
        .filter_map(|l| {
            let text = l.split("\u{1b}[38;5;0m\u{1b}[48;5;7m").nth(1)?;
            let text = text.split('\u{1b}').next()?.trim();
            Some((text.split_whitespace().next()?.parse::<usize>().ok()?, text.to_string()))
        })
        .next()
        .unwrap_or_else(|| panic!("no timeline row in black on grey:\n{colored}"));
    assert!(event > 100, "the selected row ({text:?}) is after the position");
    assert!(text.chars().filter(|c| c.is_alphabetic()).count() > 5, "{text:?}");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

#[test]
fn messages_prompts_and_quitting_at_80_columns() {
    let t = at_80x24("messages", "demo.jsonl --paused");
    t.wait_for("PAUSED");
    // `e` past the last detection: said, whole, on the bottom line.
    t.keys(&["G", "e", "e"]);
    let screen = t.wait_for("no detection that way");
    assert_eq!(bottom(&screen), "no detection that way");
    // The next key makes it stale: the hints come back.
    t.keys(&["E"]);
    let screen = t.wait_for("? help");
    assert!(!screen.contains("no detection that way"), "{screen}");
    // `=` on a parameter: empty, the value as its hint; 21 sets 21.
    // (Fired detectors are listed first: g is block-cycle.)
    t.keys(&["Tab", "g", "l", "l", "="]);
    let screen = t.wait_for("block-cycle.min_matches=");
    assert!(bottom(&screen).contains("6  (Tab or ↑: this value)"), "{screen}");
    t.keys(&["-l", "21"]);
    t.keys(&["Enter"]);
    let screen = t.wait_for("block-cycle.min_matches=21: 0 detections");
    assert!(
        bottom(&screen).starts_with("block-cycle.min_matches=21: 0 detections"),
        "{screen}"
    );
    // `:` completes and edits; `:q` quits.
    t.keys(&[":"]);
    t.keys(&["-l", "res"]);
    t.keys(&["Tab"]);
    t.wait_for(":reset");
    t.keys(&["Enter"]);
    t.wait_for("parameters as at the start");
    t.keys(&[":"]);
    t.keys(&["-l", "q"]);
    t.keys(&["Enter"]);
    t.wait_for("EXIT=0");
}

#[test]
fn the_inspectors_copy_is_said_on_the_bottom_line() {
    let t = at_80x24("copy", "demo.jsonl --paused --start-at 278");
    t.wait_for("PAUSED");
    t.keys(&["Tab", "Tab", "o"]);
    t.wait_for("j/k scroll");
    t.keys(&["y"]);
    let screen = t.wait_for("copied to the clipboard");
    assert_eq!(bottom(&screen), "copied to the clipboard (OSC 52)");
    // (Esc and q apart: together a terminal reads them as Alt-q.)
    t.keys(&["Escape"]);
    t.wait_for("? help");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

#[test]
fn the_demo_announces_its_detection_as_it_plays() {
    let t = at_80x24("demo", "demo.jsonl --speed 64");
    let screen = t.wait_for("⚠ block-cycle at 278");
    assert!(
        screen.lines().next().unwrap().contains("⚠ block-cycle at 278"),
        "{screen}"
    );
    let screen = t.wait_for("FIRED at event 278");
    assert!(screen.contains("block-cycle"), "{screen}");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}

/// `tail --latest` with no session yet says, on the bottom line, which
/// folder it waits on.
#[test]
fn tail_latest_with_no_session_says_where_it_waits() {
    let home = tempfile::tempdir().unwrap();
    let cmd = format!(
        "HOME={h} XDG_CONFIG_HOME={h}/.config {bin} tail --latest codex",
        h = home.path().display(),
        bin = env!("CARGO_BIN_EXE_loopscope")
    );
    let t = Tmux::start_sized("latest", &cmd, home.path(), (80, 24));
    let screen = t.wait_for("no session yet");
    let line = bottom(&screen);
    assert!(line.starts_with("no session yet: waiting for one in"), "{line}");
    assert!(line.ends_with(".codex/sessions"), "the folder's end is kept: {line}");
    assert!(!screen.contains("following"), "nothing is followed yet: {screen}");
    t.keys(&["q"]);
    t.wait_for("EXIT=0");
}
