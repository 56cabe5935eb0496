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

/// What `loopscope scan --help` ends with.
pub const SCAN: &str = "\
Examples:
  loopscope scan session.jsonl                   what fired, one line each (exit 1 if anything did)
  loopscope scan --agent all --since 1d --summary
  loopscope scan logs/ --json > detections.jsonl
  loopscope scan session.jsonl --profile seed,gemini-cli --summary
  loopscope scan session.jsonl --set block-cycle.min_matches=8";

/// What `loopscope report --help` ends with.
pub const REPORT: &str = "\
Examples:
  loopscope report logs/ -o report.html
  loopscope report --agent claude-code --since 7d -o week.html
  loopscope report --profile seed,extended session.jsonl -o compare.html";

/// What `loopscope watch --help` ends with.
pub const WATCH: &str = "\
Examples:
  loopscope watch                                every agent's usual folders
  loopscope watch --agent claude-code,codex --bell
  loopscope watch logs/ --no-tui --json          one line per detection, until Ctrl-C";

/// What `loopscope detectors --help` ends with.
pub const DETECTORS: &str = "\
Examples:
  loopscope detectors --profile gemini-cli
  loopscope detectors --profile extended --json
  loopscope detectors --print-default-config > loopscope.toml";

/// What `loopscope convert --help` ends with.
pub const CONVERT: &str = "\
Examples:
  loopscope convert rollout.jsonl -o native.jsonl
  loopscope convert --format anthropic stream.sse";

/// What `loopscope screenshot --help` ends with.
pub const SCREENSHOT: &str = "\
Examples:
  loopscope screenshot session.jsonl --at 278 -o at-278.svg
  loopscope screenshot session.jsonl --at end --size 100x30 -o end.txt";

/// What `loopscope tune --help` ends with.
pub const TUNE: &str = "\
Examples:
  loopscope tune logs/ --vary block-cycle.min_matches=4..10
  loopscope tune logs/ --vary block-cycle.min_matches=4..10 --expect loops.txt --write-config tuned.toml";

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::super::flags::Cli;
    use super::*;

    /// Every example a `--help` shows is one the command line takes.
    #[test]
    fn every_example_parses() {
        let all = [
            MAIN, VIEW, TAIL, SCAN, REPORT, WATCH, DETECTORS, CONVERT, SCREENSHOT, TUNE,
        ];
        let mut seen = 0;
        for text in all {
            for line in text.lines().filter_map(|l| l.trim_start().strip_prefix("loopscope")) {
                // What follows two spaces is the example's description; a
                // redirection is the shell's.
                let command = line.split("  ").next().unwrap_or_default();
                let command = command.split(" > ").next().unwrap_or_default();
                let mut args = vec!["loopscope".to_string()];
                args.extend(shell_words(command));
                if let Err(e) = Cli::try_parse_from(&args) {
                    panic!("{args:?}: {e}");
                }
                seen += 1;
            }
        }
        assert!(seen >= 25, "{seen}");
    }

    /// Words as a shell splits them, with single quotes.
    fn shell_words(line: &str) -> Vec<String> {
        let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        words.extend((!word.is_empty()).then_some(word));
        words
    }

    /// `--agent`'s help names every agent it takes.
    #[test]
    fn agent_help_names_every_agent() {
        let mut command = Cli::command();
        for sub in ["scan", "report", "watch", "tune"] {
            let help = command.find_subcommand_mut(sub).unwrap().render_long_help().to_string();
            let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
            for agent in loopscope::sessions::Agent::ALL {
                assert!(help.contains(agent.name()), "{sub} --help lacks {}", agent.name());
            }
        }
    }
}
