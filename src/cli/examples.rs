//! What `--help` ends with (`loopscope`, `view`, `tail`): a few examples
//! to start from, and the key that lists the viewer's keys. Kept apart
//! from the flags so the flags' file stays about flags.

/// What `loopscope --help` ends with: a start, and the key that lists the rest.
pub const MAIN: &str = "\
Examples:
  loopscope                              the bundled demo, in the viewer
  loopscope session.jsonl                replay a recorded stream (same as `view`)
  loopscope view --latest claude-code    an agent's newest session
  loopscope tail session.jsonl           follow a stream that is being written
  loopscope scan --agent all --summary   every session on this machine, headless

In the viewer, ? lists every key (/ searches them), q quits, Ctrl-Z suspends.";

/// What `loopscope view --help` ends with.
pub const VIEW: &str = "\
Examples:
  loopscope view session.jsonl --speed 4 --pause-on-detect
  loopscope view session.jsonl --paused --start-at 278
  loopscope view session.jsonl --profile seed,gemini-cli
  loopscope view --latest codex

In the viewer, ? lists every key (/ searches them), q quits, Ctrl-Z suspends.";

/// What `loopscope tail --help` ends with.
pub const TAIL: &str = "\
Examples:
  loopscope tail session.jsonl
  loopscope tail --latest claude-code --bell
  loopscope tail session.jsonl --no-tui --json --on-detect 'notify-send loop'

In the viewer, ? lists every key (/ searches them), q quits, Ctrl-Z suspends.";
