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
