//! `loopscope watch`: every session of some agents (or folders) followed
//! at once, on one thread ([`fleet`]). Each session keeps its follower, its
//! importer's state and its engine (the detectors' state), never its
//! events; the folders are watched with file notifications (a polling
//! fallback where there are none), so idle sessions cost nothing.

mod fleet;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, SystemTime};

use crate::sessions::{self, Agent};
use loopscope_core::config::Setup;
use loopscope_core::detect::Detection;
use loopscope_core::formats::FormatChoice;

/// A folder to watch: an agent's session folder, or one the user named.
#[derive(Clone, Debug)]
pub struct Root {
    pub path: PathBuf,
    pub agent: Option<Agent>,
    /// Named by the user (not one of `all`'s usual places): say when it
    /// does not exist yet.
    pub named: bool,
}

/// The roots of folders and agents (with neither: every agent's usual places).
pub fn roots(dirs: &[PathBuf], agents: &[Agent], env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Vec<Root> {
    let mut out: Vec<Root> = dirs
        .iter()
        .map(|d| Root {
            path: d.clone(),
            agent: None,
            named: true,
        })
        .collect();
    let all = dirs.is_empty() && agents.is_empty();
    let chosen: Vec<Agent> = if all { Agent::ALL.to_vec() } else { agents.to_vec() };
    for a in chosen {
        for path in a.locations(env) {
            out.push(Root {
                path,
                agent: Some(a),
                named: !all && agents.len() < Agent::ALL.len(),
            });
        }
    }
    out
}

pub struct WatchOptions {
    pub roots: Vec<Root>,
    pub setup: Setup,
    pub format: FormatChoice,
    /// A session that has not grown for this long is idle.
    pub idle_after: Duration,
    /// Announce the detections in what sessions held when watching began
    /// (else they only set the sessions' state).
    pub from_start: bool,
    /// Where announced detections and counts go besides (`--otlp`, `--metrics`).
    pub telemetry: crate::telemetry::Telemetry,
}

pub use fleet::POLL_FALLBACK;

/// One session as the list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    pub path: PathBuf,
    /// The agent whose folder it is in, else its format.
    pub agent: String,
    /// The project (the session's working folder, or the folder it is in).
    pub project: String,
    pub parent: Option<PathBuf>,
    pub events: usize,
    pub bad_lines: usize,
    pub bytes: u64,
    pub last_activity: SystemTime,
    pub idle: bool,
    pub detections: usize,
    /// The first detection's detector and event.
    pub fired: Option<(&'static str, usize)>,
    /// A standing problem (permission denied, deleted).
    pub problem: Option<String>,
}

impl SessionRow {
    /// `PARENT ▸ agent-ID` for a sub-agent, else the path.
    pub fn label(&self) -> String {
        sessions::label(&self.path, self.parent.as_deref())
    }

    /// streaming / idle / ⚠ FIRED detector.
    pub fn state(&self) -> String {
        match self.fired {
            Some((d, _)) => format!("⚠ FIRED {d}"),
            None if self.problem.is_some() => "problem".to_string(),
            None if self.idle => "idle".to_string(),
            None => "streaming".to_string(),
        }
    }
}

/// What the watching thread tells its listener.
#[derive(Clone, Debug)]
pub enum WatchNews {
    /// A session found or changed (all rows come again after each change).
    Row(SessionRow),
    /// A new detection in a session (after catching up, or all with `from_start`).
    Detection { row: SessionRow, detection: Box<Detection> },
    /// Something to tell the user (a folder that does not exist yet).
    Note(String),
    /// Every session that existed when watching began has been read.
    CaughtUp,
}

pub type WatchSink = Box<dyn FnMut(WatchNews) -> bool + Send>;

/// The project of a session: the basename of the `cwd` its first lines
/// record (Claude Code, Codex), else the folder that holds it (gemini-cli's
/// project folder above `chats/`, a Claude Code project folder).
pub fn project_of(path: &Path) -> String {
    if let Some(cwd) = first_cwd(path) {
        if let Some(name) = Path::new(&cwd).file_name() {
            return name.to_string_lossy().into_owned();
        }
    }
    let mut dir = path.parent();
    while let Some(d) = dir {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !matches!(name.as_str(), "chats" | "subagents" | "tasks") && !name.is_empty() {
            return name;
        }
        dir = d.parent();
    }
    String::new()
}

/// A `cwd` (or Codex's `payload.cwd`) in the first lines.
fn first_cwd(path: &Path) -> Option<String> {
    sessions::first_json_lines(path, 20).into_iter().find_map(|v| {
        v.get("cwd")
            .or_else(|| v.pointer("/payload/cwd"))
            .and_then(|c| c.as_str())
            .map(str::to_string)
    })
}

/// Starts the watching thread; it runs until the sink stops listening.
pub fn spawn(opts: WatchOptions, sink: WatchSink) {
    thread::spawn(move || fleet::Watching::run(opts, sink));
}

/// How `watch --no-tui` reports.
pub struct PrintOptions {
    pub json: bool,
    pub bell: bool,
    pub on_detect: Option<String>,
}

/// `watch --no-tui`: one line per detection across every session (a
/// `scan --json` detection record with `--json`), notes on stderr, until
/// interrupted. Exit 1 if anything was printed.
pub fn run_headless(
    opts: WatchOptions,
    print: &PrintOptions,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> std::io::Result<i32> {
    let (tx, rx) = mpsc::channel::<Option<WatchNews>>();
    let news_tx = tx.clone();
    spawn(opts, Box::new(move |n| news_tx.send(Some(n)).is_ok()));
    crate::tail::on_stop_signal(move |_| {
        let _ = tx.send(None);
    });
    let mut detected = false;
    let mut sessions = std::collections::BTreeSet::new();
    let mut caught_up = false;
    while let Ok(Some(news)) = rx.recv() {
        match news {
            WatchNews::Row(row) => {
                if sessions.insert(row.path.clone()) && caught_up {
                    writeln!(
                        err,
                        "loopscope: new session {}",
                        loopscope_core::sanitize::path(&row.path)
                    )?;
                }
            }
            WatchNews::Detection { row, detection: d } => {
                detected = true;
                let file = row.path.display().to_string();
                let line = if print.json {
                    let parent = row.parent.as_ref().map(|p| p.display().to_string());
                    loopscope_core::sanitize::json(
                        &crate::scan::detection_record(&file, parent.as_deref(), &d).to_string(),
                    )
                    .into_owned()
                } else {
                    crate::tail::human_line(&row.label(), &d)
                };
                writeln!(out, "{line}")?;
                out.flush()?;
                if print.bell {
                    // The one control character printed on purpose, past the sanitizer.
                    let _ = std::io::Write::write_all(&mut std::io::stderr(), b"\x07");
                }
                if let Some(command) = &print.on_detect {
                    let hook = crate::tail::OnDetect {
                        command: command.clone(),
                        file,
                    };
                    hook.run(&d, false, |r| {
                        if let Err(msg) = r {
                            eprint!(
                                "{}",
                                loopscope_core::sanitize::text(&loopscope_core::sanitize::cut_lines(&format!(
                                    "loopscope: {msg}"
                                )))
                            );
                        }
                    });
                }
            }
            WatchNews::Note(text) => writeln!(err, "loopscope: {}", loopscope_core::sanitize::text(&text))?,
            WatchNews::CaughtUp => {
                caught_up = true;
                writeln!(
                    err,
                    "loopscope: watching {}",
                    crate::output::count(sessions.len(), "session")
                )?;
            }
        }
    }
    Ok(if detected {
        crate::scan::EXIT_DETECTED
    } else {
        crate::scan::EXIT_CLEAN
    })
}
