//! Every command in README.md (and sample-logs/README.md) runs, so none
//! of them rots.
//!
//! Each line of a ```sh block is run in README order, in one scratch folder
//! that has `sample-logs/`, with this build's `loopscope` first on PATH:
//! the viewer (`loopscope [view] …`, `tail` without `--no-tui`) in tmux until
//! its status line shows, then `q`; `tail --no-tui` on a file until it prints
//! its first detection, then SIGINT; everything else to its end. Exit status
//! 2 (could not run) or a warning fails. A ```text block after an sh block
//! lists output lines those commands must print (a trailing `…`: a prefix).
//! `cargo`, `pip` and `pytest` lines are set-up and test commands for
//! `.ci/run`, which must run each of them. ```toml
//! blocks must be valid config files and ```json blocks valid native logs.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::{interrupt, lines_of};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

struct Block {
    lang: String,
    lines: Vec<String>,
}

fn blocks(file: &str) -> Vec<Block> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in readme.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    lines: Vec::new(),
                })
            }
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some(b), _) => b.lines.push(line.to_string()),
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{file} has an unclosed code block");
    out
}

/// The command of a README line: without its trailing `  # comment`.
fn command(line: &str) -> Option<String> {
    let cut = line.find("  #").map_or(line, |i| &line[..i]).trim();
    (!cut.is_empty() && !cut.starts_with('#')).then(|| cut.to_string())
}

#[derive(Debug, PartialEq)]
enum Kind {
    Viewer,
    Follow,
    Finite,
}

fn kind(cmd: &str) -> Kind {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "loopscope")
        .expect("a loopscope command");
    let sub = words.get(at + 1).copied().unwrap_or("");
    let subcommands = [
        "view",
        "tail",
        "scan",
        "detectors",
        "convert",
        "screenshot",
        "replay-into",
        "completions",
        "man",
        "tune",
        "report",
        "watch",
        "judge",
    ];
    let no_tui = words.contains(&"--no-tui");
    match sub {
        "tail" if !no_tui => Kind::Viewer,
        "tail" if words.get(at + 2) == Some(&"-") => Kind::Finite,
        "tail" => Kind::Follow,
        "watch" if words.contains(&"--snapshot") => Kind::Finite,
        "watch" if no_tui => Kind::Follow,
        "view" => Kind::Viewer,
        s if subcommands.contains(&s) => Kind::Finite,
        _ => Kind::Viewer,
    }
}

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(Path::new(ROOT).join("sample-logs"), dir.path().join("sample-logs")).unwrap();
        Scratch { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The shell preamble: this build first on PATH, no user config.
    fn env(&self) -> String {
        let bin = Path::new(env!("CARGO_BIN_EXE_loopscope")).parent().unwrap();
        format!(
            "export PATH='{}':\"$PATH\" XDG_CONFIG_HOME='{}/no-config'; unset LOOPSCOPE_CONFIG NO_COLOR; ",
            bin.display(),
            self.path().display()
        )
    }

    fn sh(&self, cmd: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("{}exec {cmd}", self.env()))
            .current_dir(self.path());
        c.stdin(Stdio::null());
        c
    }
}

fn wait_with_timeout(mut child: std::process::Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < limit, "{what}: still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn check_status(cmd: &str, out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{cmd}: exit {:?}\n{err}",
        out.status.code()
    );
    assert!(!err.contains("warning"), "{cmd}: {err}");
}

fn run_finite(s: &Scratch, cmd: &str) -> String {
    let child = s.sh(cmd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let out = wait_with_timeout(child, Duration::from_secs(60), cmd);
    check_status(cmd, &out);
    // What it was told to write is there.
    let words: Vec<&str> = cmd.split_whitespace().collect();
    for pair in words.windows(2) {
        if pair[0] == "-o" || pair[0] == ">" {
            let len = std::fs::metadata(s.path().join(pair[1])).map(|m| m.len()).unwrap_or(0);
            assert!(len > 0, "{cmd}: wrote nothing to {}", pair[1]);
        }
    }
    String::from_utf8(out.stdout).unwrap()
}

/// Runs until its first line of output, then is interrupted as a user would.
fn run_follow(s: &Scratch, cmd: &str) -> String {
    let mut child = s.sh(cmd).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let rx = lines_of(child.stdout.take().unwrap());
    let mut printed = vec![rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{cmd}: printed nothing in 20 s"))];
    // The file is not growing: once the output is quiet, all of it is read.
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
        printed.push(line);
    }
    // (Only loopscope: hooks it started may still be running.)
    interrupt(&child);
    let out = wait_with_timeout(child, Duration::from_secs(10), cmd);
    check_status(cmd, &out);
    printed.extend(rx.try_iter());
    printed.join("\n")
}

fn run_viewer(s: &Scratch, cmd: &str, n: usize) {
    let t = Tmux::start_in(&format!("readme{n}"), &format!("{}{cmd}", s.env()), s.path());
    let screen = t.wait_for_any(&["PLAYING", "PAUSED", "END", "LIVE"]);
    assert!(screen.contains("detectors ·"), "{cmd}:\n{screen}");
    t.keys(&["q"]);
    let screen = t.wait_for("EXIT=");
    assert!(screen.contains("EXIT=0"), "{cmd}:\n{screen}");
}

/// Runs the sh blocks of `file`; returns the scratch folder and how many
/// commands ran.
fn run_sh_blocks(file: &str) -> (Scratch, usize) {
    let s = Scratch::new();
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let all = blocks(file);
    let mut ran = 0;
    for (i, b) in all.iter().enumerate() {
        if b.lang != "sh" {
            continue;
        }
        let mut printed = String::new();
        for cmd in b.lines.iter().filter_map(|l| command(l)) {
            if ["cargo ", "pip ", "pytest "].iter().any(|p| cmd.starts_with(p)) {
                assert!(
                    ci.lines().any(|l| !l.trim_start().starts_with('#') && l.contains(&cmd)),
                    ".ci/run must run {file}'s `{cmd}`"
                );
                continue;
            }
            ran += 1;
            match kind(&cmd) {
                Kind::Viewer => run_viewer(&s, &cmd, ran),
                Kind::Follow => printed += &run_follow(&s, &cmd),
                Kind::Finite => printed += &run_finite(&s, &cmd),
            }
            printed.push('\n');
        }
        if let Some(next) = all.get(i + 1).filter(|n| n.lang == "text") {
            for want in next.lines.iter().filter(|l| !l.trim().is_empty()) {
                let want = want.trim_end_matches('…');
                assert!(
                    printed.contains(want),
                    "{file} promises\n{want}\nbut the commands printed\n{printed}"
                );
            }
        }
    }
    (s, ran)
}

#[test]
fn every_readme_command_runs() {
    let (s, ran) = run_sh_blocks("README.md");
    assert!(ran >= 25, "only {ran} README commands found");
    // The hook example wrote what it says (hooks run in the background):
    // looked for up to 500 times, 20 ms apart, so a lost hook fails.
    let mut log = String::new();
    for _ in 0..500 {
        log = std::fs::read_to_string(s.path().join("loops.log")).unwrap_or_default();
        if log.contains("tool-repeat fired at event 42") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(log.contains("tool-repeat fired at event 42"), "loops.log: {log:?}");
}

#[test]
fn every_sample_logs_readme_command_runs() {
    let (_, ran) = run_sh_blocks("sample-logs/README.md");
    assert!(ran >= 2, "only {ran} commands found in sample-logs/README.md");
}

#[test]
fn the_readme_config_and_native_examples_are_valid() {
    let s = Scratch::new();
    let mut checked = 0;
    for b in blocks("README.md") {
        let text = b.lines.join("\n") + "\n";
        let cmd = match b.lang.as_str() {
            "toml" => "loopscope detectors --config example.toml",
            "json" => "loopscope scan example.jsonl",
            _ => continue,
        };
        let file = if b.lang == "toml" {
            "example.toml"
        } else {
            "example.jsonl"
        };
        std::fs::write(s.path().join(file), text).unwrap();
        let out = s.sh(cmd).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stderr.is_empty(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        checked += 1;
    }
    assert_eq!(checked, 2, "the README has one config and one native-format example");
}

#[test]
fn readme_lines_are_classified_as_a_user_would_run_them() {
    assert_eq!(kind("loopscope"), Kind::Viewer);
    assert_eq!(kind("loopscope a.jsonl"), Kind::Viewer);
    assert_eq!(kind("loopscope view - < a.jsonl"), Kind::Viewer);
    assert_eq!(kind("loopscope tail a.jsonl --from-start"), Kind::Viewer);
    assert_eq!(kind("loopscope tail a.jsonl --no-tui"), Kind::Follow);
    assert_eq!(kind("cat a | loopscope tail - --no-tui"), Kind::Finite);
    assert_eq!(kind("loopscope scan a.jsonl"), Kind::Finite);
    assert_eq!(command("loopscope   # the demo").as_deref(), Some("loopscope"));
    assert_eq!(command("# a comment"), None);
}

#[test]
fn the_readmes_links_to_files_exist() {
    for (file, base) in [("README.md", ""), ("sample-logs/README.md", "sample-logs/")] {
        let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
        let mut links = 0;
        for (i, _) in text.match_indices("](") {
            let target = &text[i + 2..];
            let target = &target[..target.find(')').unwrap()];
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            links += 1;
            assert!(
                Path::new(ROOT).join(base).join(target).exists(),
                "{file} links to missing {target}"
            );
        }
        assert!(links > 0, "{file} has no links to check");
    }
}

/// The README's table of agents proven in CI names every pinned agent at
/// its pinned version, and nothing else (tests/agent_pins.tsv).
#[test]
fn the_readmes_agents_are_the_pinned_ones() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let pins = std::fs::read_to_string(Path::new(ROOT).join("tests/agent_pins.tsv")).unwrap();
    let section = readme
        .split("### The agents, as they write today")
        .nth(1)
        .expect("the README has the agents' section");
    let rows: Vec<(String, String)> = section
        .lines()
        .skip_while(|l| !l.starts_with("| agent |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].to_string())
        })
        .collect();
    let pinned: Vec<(String, String)> = pins
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect::<Vec<_>>())
        // Node 24 is what OpenClaw runs on, not an agent.
        .filter(|f| f[0] != "node24")
        .map(|f| (f[0].to_string(), f[3].to_string()))
        .collect();
    assert_eq!(rows, pinned, "README's agents table against tests/agent_pins.tsv");
}
