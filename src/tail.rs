//! `loopscope tail`: a stream that is still being written. The headless form
//! (`--no-tui`) prints each detection the moment it happens; the TUI form is
//! the viewer with a live source. Both run `--on-detect` hooks from here.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;

use crate::replay::feed::{self, Feed, MakeDecoder, Sink};
use crate::replay::follow::FileNews;
use crate::scan::{detection_record, position, EXIT_CLEAN, EXIT_DETECTED};
use loopscope_core::config::Setup;
use loopscope_core::detect::Detection;
use loopscope_core::engine::Engine;
use loopscope_core::formats::cline;
use loopscope_core::formats::FormatChoice;

/// What to follow.
#[derive(Clone, Debug)]
pub enum Target {
    File(PathBuf),
    Stdin,
    /// `--latest AGENT|DIR`: the newest session, switching to each new one.
    Latest(String),
}

impl Target {
    pub fn name(&self) -> String {
        match self {
            Target::File(p) => loopscope_core::sanitize::path(p),
            Target::Stdin => "-".to_string(),
            Target::Latest(spec) => format!("latest {spec}"),
        }
    }

    /// Starts the thread that feeds this target's events to `sink`, read
    /// with the importer chosen (or detected from the first bytes).
    pub fn start(&self, choice: FormatChoice, sink: Sink) {
        match self {
            // A FIFO, /dev/stdin on a pipe, a character device: a stream
            // with no offsets to seek to, read as it comes, like `-`.
            Target::File(path) if is_stream(path) => {
                let path = path.clone();
                let hint = path.file_name().map(|n| n.to_string_lossy().into_owned());
                std::thread::spawn(move || {
                    // Opening a FIFO waits for its writer: on this thread, not the caller's.
                    let mut sink = sink;
                    match std::fs::File::open(&path) {
                        Ok(f) => {
                            let decoder = Box::new(crate::reading::auto_decoder(choice, hint.as_deref(), None));
                            feed::read(Box::new(f), decoder, true, sink);
                        }
                        Err(e) => {
                            sink(Feed::Failed(format!(
                                "{}: {}",
                                loopscope_core::sanitize::path(&path),
                                loopscope_core::io_reason(&e)
                            )));
                        }
                    }
                });
            }
            Target::File(path) => {
                let path = cline::task_file(path)
                    .or_else(|| loopscope_core::formats::copilot::session_file(path))
                    .unwrap_or_else(|| path.clone());
                feed::follow(&path, feed::make_for(&path, choice), sink)
            }
            Target::Stdin => {
                let decoder = Box::new(crate::reading::auto_decoder(choice, None, None));
                feed::read(Box::new(io::stdin()) as Box<dyn Read + Send>, decoder, true, sink)
            }
            Target::Latest(spec) => match crate::sessions::Latest::new(spec, &crate::sessions::process_env) {
                Ok(mut latest) => {
                    let make: MakeDecoder =
                        std::sync::Arc::new(move || Box::new(crate::reading::auto_decoder(choice, None, None)));
                    let roots = latest.roots();
                    feed::follow_latest(
                        roots,
                        Box::new(move |current, nudged| latest.next(current, nudged)),
                        make,
                        sink,
                    )
                }
                Err(msg) => {
                    let mut sink = sink;
                    sink(Feed::Failed(msg));
                }
            },
        }
    }
}

/// Whether a path is something that exists but cannot be followed by
/// offset (a FIFO, a character device, a socket, a pipe behind /dev/stdin).
pub fn is_stream(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// What the file's news means, for a person.
pub fn describe(news: &FileNews, name: &str) -> String {
    match news {
        FileNews::Waiting => format!("waiting for {name} to appear"),
        FileNews::Appeared => format!("{name} appeared; following it"),
        FileNews::Truncated => format!("{name} was truncated; starting over from its beginning"),
        FileNews::Replaced => format!("{name} was replaced; following the new file"),
        FileNews::Deleted => format!("{name} was deleted; keeping what was read"),
        FileNews::Switched(path) => format!("now following {}", loopscope_core::sanitize::path(path)),
        FileNews::NoSession(roots) if roots.is_empty() => "no session yet, and no folder to look in".to_string(),
        FileNews::NoSession(roots) => format!(
            "no session yet: waiting for one in {}",
            roots
                .iter()
                .map(|r| loopscope_core::sanitize::path(r))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `--on-detect CMD`: run once per detection through the shell, with the
/// detection in the environment, on its own thread so nothing waits for it.
#[derive(Clone, Debug)]
pub struct OnDetect {
    pub command: String,
    pub file: String,
}

impl OnDetect {
    /// Runs the hook; `done` gets an error message if it failed. `quiet`
    /// keeps its output off the terminal (the TUI owns the screen); else its
    /// output goes to stderr, so stdout keeps only detections.
    pub fn run(&self, d: &Detection, quiet: bool, done: impl FnOnce(Result<(), String>) + Send + 'static) {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .env("LOOPSCOPE_FILE", &self.file)
            .env("LOOPSCOPE_DETECTOR", d.detector)
            .env("LOOPSCOPE_EVENT", d.event.to_string())
            .env("LOOPSCOPE_REASON", &d.reason)
            .env("LOOPSCOPE_JSON", detection_record(&self.file, None, d).to_string())
            .stdin(Stdio::null());
        if quiet {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::from(io::stderr())).stderr(Stdio::inherit());
        }
        let event = d.event;
        thread::spawn(move || {
            let result = match cmd.output() {
                Ok(out) if out.status.success() => Ok(()),
                Ok(out) => {
                    let why = String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let code = out
                        .status
                        .code()
                        .map_or("a signal".to_string(), |c| format!("status {c}"));
                    let why = if why.is_empty() {
                        String::new()
                    } else {
                        format!(": {why}")
                    };
                    Err(format!("on-detect command for event {event} exited with {code}{why}"))
                }
                Err(e) => Err(format!("on-detect command could not start: {e}")),
            };
            done(result);
        });
    }
}

pub struct HeadlessOptions {
    pub format: FormatChoice,
    pub json: bool,
    /// Announce detections in the content that was there before following began.
    pub from_start: bool,
    pub bell: bool,
    pub on_detect: Option<String>,
    /// Wraps the feed before the detectors see it (a live judge inserting verdicts).
    pub wrap_sink: Box<dyn Fn(Sink) -> Sink>,
    /// The followed session's part in `--otlp` and `--metrics`.
    pub link: Option<crate::telemetry::SharedLink>,
}

/// One detection as a human line (unaligned: lines are printed as they
/// come); one line whatever a tool name in the reason holds.
pub fn human_line(name: &str, d: &Detection) -> String {
    format!(
        "{} event {}  {:<13}  {:<15}  {}",
        loopscope_core::sanitize::line(name),
        d.event,
        d.detector,
        position(d),
        loopscope_core::sanitize::line(&d.readable_reason())
    )
}

/// `tail --no-tui`: prints each detection as it happens, until interrupted
/// or until standard input ends. Exit 1 if anything was printed.
pub fn run_headless(
    target: &Target,
    setup: &Setup,
    opts: &HeadlessOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<i32> {
    let mut name = target.name();
    let (tx, rx) = mpsc::channel::<Feed>();
    let feed_tx = tx.clone();
    let sink: Sink = Box::new(move |f| feed_tx.send(f).is_ok());
    let sink = (opts.wrap_sink)(sink);
    let sink = match &opts.link {
        Some(link) => crate::telemetry::metered(sink, link.clone()),
        None => sink,
    };
    target.start(opts.format, sink);
    on_stop_signal(move |_| {
        let _ = tx.send(Feed::Ended);
    });
    let mut hook = opts.on_detect.as_ref().map(|command| OnDetect {
        command: command.clone(),
        file: name.clone(),
    });
    let mut engine = Engine::new(setup);
    // The first bad lines of each followed file, then a count when it ends.
    let mut bad = crate::scan::BadLines::new(&name);
    let mut announcing = opts.from_start;
    let mut caught_up = false;
    let mut detected = false;
    let mut switched = false;
    // A named file not there yet is waited for, not followed: "appeared;
    // following it" says when it is.
    let mut waiting = false;
    for message in rx {
        match message {
            Feed::Events(events) => {
                for event in events {
                    for d in engine.push(&event) {
                        if !announcing {
                            continue;
                        }
                        if let Some(link) = &opts.link {
                            link.with(|l| l.detection(&d, &event, setup.profile.name()));
                        }
                        detected = true;
                        let line = if opts.json {
                            loopscope_core::sanitize::json(&detection_record(&name, None, &d).to_string()).into_owned()
                        } else {
                            human_line(&name, &d)
                        };
                        writeln!(out, "{line}")?;
                        out.flush()?;
                        if opts.bell {
                            // The one control character printed on purpose, past the sanitizer.
                            let _ = io::stderr().write_all(b"\x07");
                        }
                        if let Some(h) = &hook {
                            h.run(&d, false, |r| {
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
                }
            }
            Feed::Problems(problems) => {
                for p in problems {
                    bad.warn(&p, err)?;
                }
            }
            Feed::CaughtUp => {
                announcing = true;
                caught_up = true;
                // Following is said once something is followed: a named
                // file (which may not exist yet), or an agent's session.
                let file = matches!(target, Target::File(_)) && !waiting;
                if file || (matches!(target, Target::Latest(_)) && switched) {
                    writeln!(err, "loopscope: following {name} from event {}", engine.position())?;
                }
            }
            Feed::File(news) => {
                writeln!(err, "loopscope: {}", describe(&news, &name))?;
                waiting = matches!(news, FileNews::Waiting);
                if let FileNews::Switched(path) = &news {
                    // A new session: its own stream, announced from its start.
                    switched = true;
                    bad.finish(err)?;
                    name = loopscope_core::sanitize::path(path);
                    bad = crate::scan::BadLines::new(&name);
                    if let Some(h) = hook.as_mut() {
                        h.file = name.clone();
                    }
                    announcing = caught_up || opts.from_start;
                }
                if matches!(news, FileNews::Truncated | FileNews::Switched(_)) {
                    engine = Engine::new(setup);
                }
            }
            Feed::Failed(msg) => writeln!(err, "loopscope: {msg}")?,
            Feed::Warning(msg) => writeln!(err, "loopscope: warning: {msg}")?,
            Feed::Format(_) | Feed::Read(_) => {}
            Feed::Ended => break,
        }
    }
    bad.finish(err)?;
    if let Some(link) = &opts.link {
        link.with(|l| l.finish());
    }
    Ok(if detected { EXIT_DETECTED } else { EXIT_CLEAN })
}

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT call `stop` once with the signal (on
/// a thread of their own): `tail` and `watch` end as at the end of input,
/// the viewer as on `q` but with the exit status 128 + the signal.
pub fn on_stop_signal(stop: impl FnOnce(i32) + Send + 'static) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    // SIGQUIT too: its default (a core dump) would leave the terminal in
    // raw mode on the alternate screen.
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT]) {
        thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                stop(sig);
            }
        });
    }
}
