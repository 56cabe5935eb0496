//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod collector;
pub mod fleet;
pub mod tmux;
pub mod viewer;

/// The lines a child writes to a pipe, as they come.
pub fn lines_of(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Interrupts a child as Ctrl-C would (SIGINT to it alone).
pub fn interrupt(child: &std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -INT {}", child.id());
}

/// This build's `loopscope`, run from the project root as a fresh user
/// would: no config file, no NO_COLOR.
pub fn loopscope_at_root() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_loopscope"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("LOOPSCOPE_CONFIG")
        .env_remove("NO_COLOR")
        .env("XDG_CONFIG_HOME", "/nonexistent");
    cmd
}

/// The records `scan --json ROOT` prints, run in `cwd`, sorted: what
/// `watch --json --from-start` must have printed for the final files.
pub fn scan_records(cwd: &std::path::Path, root: impl AsRef<std::ffi::OsStr>) -> Vec<String> {
    let out = loopscope_at_root()
        .current_dir(cwd)
        .args(["scan", "--json"])
        .arg(root)
        .output()
        .unwrap();
    let mut lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

use loopscope_core::{Choices, Detection, Engine, Event, Profile, Setup};
use serde_json::Value;

/// A setup with only these detectors of the profile, at their defaults.
pub fn setup(profile: Profile, detectors: &[&str]) -> Setup {
    Setup::resolve_with(
        &Choices {
            profile: Some(profile),
            detectors: Some(detectors.iter().map(|s| s.to_string()).collect()),
            ..Choices::default()
        },
        "",
    )
    .expect("valid setup")
}

/// Runs events through a fresh engine and returns every detection.
pub fn run(setup: &Setup, events: &[Event]) -> Vec<Detection> {
    let mut engine = Engine::new(setup);
    events.iter().flat_map(|e| engine.push(e)).collect()
}

/// A small deterministic PRNG (xorshift64*), so "random" cases are repeatable.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn pick(&mut self, alphabet: &[u8]) -> char {
        alphabet[(self.next() % alphabet.len() as u64) as usize] as char
    }
    pub fn text(&mut self, alphabet: &[u8], len: usize) -> String {
        (0..len).map(|_| self.pick(alphabet)).collect()
    }
}

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

pub fn tool(name: &str, args: &str) -> Event {
    Event::tool_call(name, serde_json::from_str::<Value>(args).expect("valid args"))
}

/// A running command, its stdout and stderr line by line.
pub struct Running {
    pub child: std::process::Child,
    pub out: std::sync::mpsc::Receiver<String>,
    pub err: std::sync::mpsc::Receiver<String>,
}

impl Running {
    pub fn start(mut cmd: std::process::Command) -> Running {
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines_of(child.stdout.take().unwrap());
        let err = lines_of(child.stderr.take().unwrap());
        Running { child, out, err }
    }

    /// Waits for a line containing `text` on `which`, returning it.
    pub fn wait(rx: &std::sync::mpsc::Receiver<String>, text: &str, seen: &mut Vec<String>) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
                seen.push(line.clone());
                if line.contains(text) {
                    return line;
                }
            }
        }
        panic!("no line with {text:?}; seen: {seen:#?}");
    }

    /// Interrupts it like Ctrl-C does and returns the exit code.
    pub fn stop(mut self) -> i32 {
        interrupt(&self.child);
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

/// A test that fails midway leaves no process behind.
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
