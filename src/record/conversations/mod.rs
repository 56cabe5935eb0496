//! Conversations and their session files. Each request is matched to the
//! conversation it continues (by its first messages, or the Responses
//! API's `previous_response_id`, or as a retry of its last request: see
//! [`retry`]); a conversation is answered one request at a time, so a
//! request that finds its conversation busy (sub-agents started alike, in
//! parallel) starts its own file and nothing interleaves. A user message's
//! prompt is the user's words; the context an agent wraps around them is
//! noted. Each event is one `write` of one line: `tail` and `watch` see it
//! at once.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use serde_json::{json, Value};

mod exchange;
mod retry;

use super::conversation_guard::ConversationGuard;
use super::guard::{Found, Guard, Stop};
use super::protocol::{Protocol, Request, Role, Turn};
use crate::files::FileId;
use loopscope_core::detect::Detection;
use loopscope_core::event::{Event, EventKind, Ts, STABLE_OUTPUT};
use loopscope_core::formats::Item;
use retry::LastAsk;

/// Session files kept open at once; idle ones beyond this are closed and
/// reopened (checked to be the same file) when their conversation goes on.
const MAX_OPEN: usize = 64;
/// Conversations kept to be continued (their detectors' state, their last
/// request): past this the least recently used idle ones are let go, a
/// quarter at a time, so memory stays flat however many the proxy sees. A
/// conversation let go that comes back starts a new session file.
pub const MAX_KEPT: usize = 256;
/// `--max-session`'s default: a session file stops growing at 4 GiB.
pub const MAX_SESSION: u64 = 4 << 30;

/// Every conversation recorded into one folder.
pub struct Recorder {
    dir: PathBuf,
    pub guard: Option<Guard>,
    entries: Mutex<Vec<Entry>>,
    /// Conversations started, and detections.
    pub conversations: AtomicUsize,
    pub detections: AtomicUsize,
    /// Where the guard's detections and the counts go besides (`--otlp`, `--metrics`).
    pub telemetry: crate::telemetry::Telemetry,
    /// The most bytes a session file gets (`--max-session`).
    pub max_session: u64,
}

/// The registry's view of one conversation.
struct Entry {
    key: u64,
    conv: Arc<Mutex<Conversation>>,
    /// A request of it is being answered.
    busy: bool,
    /// Turns in its last request.
    turns: usize,
    /// Its last response's id (for `previous_response_id`).
    last_response: Option<String>,
    /// Its last request, as a retry of it would ask again.
    last_ask: LastAsk,
    last_used: Instant,
}

/// One conversation's session file and detectors.
pub struct Conversation {
    pub path: PathBuf,
    /// The name as printed.
    pub shown: String,
    file: Option<File>,
    id: Option<FileId>,
    /// Writing failed (said once); the proxy goes on without it.
    broken: bool,
    /// Its detectors under `--guard`.
    guard: Option<ConversationGuard>,
    /// Its part in `--otlp` and `--metrics` (None without them).
    link: Option<crate::telemetry::SessionLink>,
    started: Instant,
    /// The next user text starts a new task (a prompt), not a remark.
    awaiting_prompt: bool,
    /// Bytes written to its file, and the most it may get.
    written: u64,
    max_bytes: u64,
    /// It reached `max_bytes`: a note said so, nothing more is written.
    full: bool,
}

/// One request's part in its conversation.
pub struct Exchange<'a> {
    recorder: &'a Recorder,
    conv: Arc<Mutex<Conversation>>,
    /// The model asked for a tool in this response.
    tool_called: bool,
    response_id: Option<String>,
    released: bool,
    /// Events of the answer recorded so far (none at its end: it was not
    /// a stream loopscope could read).
    pub answer_events: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    /// A recorder into `dir` (created if missing).
    pub fn new(dir: &Path, guard: Option<Guard>) -> Result<Recorder, String> {
        let shown = loopscope_core::sanitize::path(dir);
        if dir.exists() && !dir.is_dir() {
            return Err(format!("{shown}: is not a directory"));
        }
        fs::create_dir_all(dir).map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
        Ok(Recorder {
            dir: dir.to_path_buf(),
            guard,
            entries: Mutex::new(Vec::new()),
            conversations: AtomicUsize::new(0),
            detections: AtomicUsize::new(0),
            telemetry: crate::telemetry::Telemetry::default(),
            max_session: MAX_SESSION,
        })
    }

    /// Starts recording one request: finds or starts its conversation and
    /// writes what is new in the request (a prompt, tool results, remarks).
    pub fn begin(&self, protocol: Protocol, req: &Request, upstream: &str) -> Exchange<'_> {
        let ask = LastAsk::of(req);
        let (conv, start, added) = {
            let mut entries = lock(&self.entries);
            forget_oldest(&mut entries);
            let mut added = None;
            let chosen = match &req.previous_response {
                Some(prev) => entries
                    .iter()
                    .position(|e| !e.busy && e.last_response.as_deref() == Some(prev.as_str())),
                None => entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.key == req.key && !e.busy && e.turns <= req.turns.len())
                    .max_by_key(|(_, e)| (e.turns, e.last_used))
                    .map(|(i, _)| i)
                    .or_else(|| {
                        entries.iter().position(|e| {
                            added = e.last_ask.added_by(&ask).filter(|_| !e.busy);
                            added.is_some()
                        })
                    }),
            };
            let i = match chosen {
                Some(i) => i,
                None => {
                    let conv = self.create(protocol, req, upstream);
                    entries.push(Entry {
                        key: req.key,
                        conv: Arc::new(Mutex::new(conv)),
                        busy: false,
                        turns: 0,
                        last_response: None,
                        last_ask: LastAsk::default(),
                        last_used: Instant::now(),
                    });
                    entries.len() - 1
                }
            };
            close_idle(&mut entries);
            let e = &mut entries[i];
            // What is new: past the last request's turns and past the
            // model's last answer; all of it when the API keeps the history.
            let after_answer = req
                .turns
                .iter()
                .rposition(|t| t.role == Role::Assistant)
                .map_or(0, |p| p + 1);
            let start = match &req.previous_response {
                Some(_) => 0,
                None if e.turns <= req.turns.len() => e.turns.max(after_answer),
                None => after_answer,
            };
            e.busy = true;
            e.turns = req.turns.len();
            if added.is_some() {
                // The conversation's next requests repeat the words added.
                e.key = req.key;
            }
            e.last_ask = ask;
            e.last_used = Instant::now();
            (e.conv.clone(), start, added)
        };
        let mut x = Exchange {
            recorder: self,
            conv,
            tool_called: false,
            response_id: None,
            released: false,
            answer_events: 0,
        };
        if let Some(words) = added {
            x.note(&words, Some("retry"), &[]);
        }
        x.write_turns(req, start);
        x
    }

    fn create(&self, protocol: Protocol, req: &Request, upstream: &str) -> Conversation {
        self.conversations.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now();
        let unix = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let time = chrono::DateTime::from_timestamp(unix.as_secs() as i64, unix.subsec_nanos()).unwrap_or_default();
        let model = req.model.as_deref().unwrap_or("unknown-model");
        let stem = format!("{}-{}", time.format("%Y-%m-%dT%H-%M-%SZ"), file_safe(model));
        let (path, file) = match create_new(&self.dir, &stem) {
            Ok(pair) => (pair.0, Some(pair.1)),
            Err((path, e)) => {
                eprintln!(
                    "loopscope: cannot record into {}: {}",
                    loopscope_core::sanitize::path(&path),
                    loopscope_core::io_reason(&e)
                );
                (path, None)
            }
        };
        let telemetry = &self.telemetry;
        let link = (!telemetry.is_empty()).then(|| {
            telemetry.session(
                crate::telemetry::SessionInfo {
                    name: loopscope_core::sanitize::path(&path),
                    id: path.display().to_string(),
                    // Recorded sessions are known by the API they went to.
                    agent: protocol.name().to_string(),
                    format: "native".to_string(),
                    profile: self.guard.as_ref().map_or("", |g| g.setup.profile.name()).to_string(),
                },
                false,
            )
        });
        let mut conv = Conversation {
            link,
            shown: loopscope_core::sanitize::path(&path),
            id: file
                .as_ref()
                .and_then(|f| f.metadata().ok())
                .as_ref()
                .and_then(FileId::from_meta),
            broken: file.is_none(),
            file,
            path,
            guard: self.guard.as_ref().map(|g| ConversationGuard::new(&g.setup)),
            started: Instant::now(),
            awaiting_prompt: true,
            written: 0,
            max_bytes: self.max_session,
            full: false,
        };
        let mut meta = Event::new(EventKind::Meta);
        for (k, v) in [
            ("format", json!("loopscope")),
            ("version", json!(1)),
            ("model", json!(req.model)),
            ("source", json!("loopscope record")),
            ("api", json!(protocol.name())),
            ("upstream", json!(upstream)),
            (
                "started",
                json!(time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            ),
        ] {
            if !v.is_null() {
                meta.extra.insert(k.into(), v);
            }
        }
        conv.write(meta, None);
        conv
    }
}

/// A model name as part of a file name.
fn file_safe(model: &str) -> String {
    let safe: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let safe = safe.trim_matches(['-', '.']);
    if safe.is_empty() {
        "unknown-model".to_string()
    } else {
        safe.to_string()
    }
}

/// A new file `stem.jsonl` (or `stem-2.jsonl`, …): never one that exists,
/// nor a symlink's target.
fn create_new(dir: &Path, stem: &str) -> Result<(PathBuf, File), (PathBuf, io::Error)> {
    let mut n = 1;
    loop {
        let name = if n == 1 {
            format!("{stem}.jsonl")
        } else {
            format!("{stem}-{n}.jsonl")
        };
        let path = dir.join(name);
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
            Err(e) => return Err((path, e)),
        }
    }
}

/// Lets go of the least recently used idle conversations once more than
/// [`MAX_KEPT`] are kept (down to three quarters of it).
fn forget_oldest(entries: &mut Vec<Entry>) {
    if entries.len() < MAX_KEPT {
        return;
    }
    let mut idle: Vec<Instant> = entries.iter().filter(|e| !e.busy).map(|e| e.last_used).collect();
    let excess = (entries.len() - MAX_KEPT * 3 / 4).min(idle.len());
    if excess == 0 {
        return;
    }
    idle.sort_unstable();
    let cutoff = idle[excess - 1];
    let mut dropped = 0;
    entries.retain(|e| {
        let go = dropped < excess && !e.busy && e.last_used <= cutoff;
        dropped += usize::from(go);
        !go
    });
}

/// Closes the files of the least recently used idle conversations.
fn close_idle(entries: &mut [Entry]) {
    let mut idle: Vec<usize> = (0..entries.len())
        .filter(|&i| !entries[i].busy && lock(&entries[i].conv).file.is_some())
        .collect();
    if idle.len() <= MAX_OPEN {
        return;
    }
    idle.sort_by_key(|&i| entries[i].last_used);
    let excess = idle.len() - MAX_OPEN / 2;
    for &i in idle.iter().take(excess) {
        lock(&entries[i].conv).file = None;
    }
}

impl Conversation {
    /// Writes one event (its time set) and runs the guard's detectors on it.
    fn write(&mut self, mut event: Event, at: Option<Instant>) -> Vec<Detection> {
        let secs = at
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(self.started)
            .as_secs_f64();
        event.ts = Some(Ts::Seconds((secs * 1000.0).round() / 1000.0));
        let detections = match &mut self.guard {
            Some(guard) => guard.push(&event),
            None => Vec::new(),
        };
        let mut line = event.to_json().to_string();
        line.push('\n');
        if let Some(link) = self.link.as_mut() {
            link.saw(&event);
            let read = crate::telemetry::Read {
                events: 1,
                bytes: line.len() as u64,
                bad_lines: 0,
            };
            link.read(read, true);
            let profile = link.info.profile.clone();
            for d in &detections {
                link.detection(d, &event, &profile);
            }
        }
        if !self.broken && !self.full && self.written + line.len() as u64 > self.max_bytes {
            // The rest of this conversation is passed on and judged, not written.
            self.full = true;
            let mut note = Event::note(&format!(
                "this session reached --max-session ({}): the rest of the conversation is not written",
                loopscope_core::formats::human_bytes(usize::try_from(self.max_bytes).unwrap_or(usize::MAX))
            ));
            note.extra.insert("kind".into(), json!("max-session"));
            note.ts = event.ts.clone();
            line = note.to_json().to_string();
            line.push('\n');
            eprintln!(
                "loopscope: {}: reached --max-session; the rest of this conversation is not written",
                self.shown
            );
        } else if self.full {
            return detections;
        }
        if !self.broken {
            self.written += line.len() as u64;
            if let Err(e) = self.file().and_then(|f| f.write_all(line.as_bytes())) {
                self.broken = true;
                eprintln!(
                    "loopscope: {}: {}; this conversation is no longer recorded",
                    self.shown,
                    loopscope_core::io_reason(&e)
                );
            }
        }
        detections
    }

    /// The open file, reopened for appending if it was closed, provided
    /// it is still the file this conversation created.
    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let f = OpenOptions::new().append(true).open(&self.path)?;
            let same = f.metadata().ok().as_ref().and_then(FileId::from_meta) == self.id;
            if !same {
                return Err(io::Error::other("was replaced by another file"));
            }
            self.file = Some(f);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }
}

#[cfg(test)]
mod tests;
