//! Sessions kept as folders of JSON files, read as JSON lines:
//! - an OpenHands conversation (`<id>/events/event-NNNNN-<uuid>.json`, one
//!   event per file, in index order; followed by the files that appear);
//! - opencode's storage tree before 1.2 (`storage/{session,message,part}/…`).
//!
//! A folder of thousands of files is listed once per change of the folder
//! and its files read a batch at a time, each no larger than the record
//! limit; nothing in the folder is ever written.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{json, Value};

/// Files read per look, so a large folder streams through in pieces.
const BATCH: usize = 256;

/// Whether a folder is an OpenHands conversation.
pub fn is_conversation(dir: &Path) -> bool {
    let events = dir.join("events");
    events.is_dir() && (dir.join("base_state.json").is_file() || first_event(&events).is_some())
}

fn first_event(events: &Path) -> Option<PathBuf> {
    std::fs::read_dir(events)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| event_index(p).is_some() && !is_dangling(p))
}

/// A symbolic link to nothing: no file of the folder's, skipped silently
/// as a walk of the folder skips it (ripgrep and `find` do not report one
/// either unless asked to follow links).
pub(crate) fn is_dangling(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(p).is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
}

/// `event-00042-<uuid>.json` → 42.
fn event_index(p: &Path) -> Option<u64> {
    let name = p.file_name()?.to_str()?;
    let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
    rest.split('-').next()?.parse().ok()
}

/// A JSON file as one line (raw newlines cannot be inside JSON strings, so
/// they are whitespace), or a problem line.
fn file_line(path: &Path, max_record: usize, out: &mut Vec<u8>) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let problem = |why: String| json!({"loopscope": "problem", "reason": format!("{name}: {why}")}).to_string();
    let line = match std::fs::metadata(path) {
        Ok(m) if m.len() as usize > max_record => problem(format!(
            "it is {}, {}",
            super::human_bytes(m.len() as usize),
            super::overlong_reason(max_record)
        )),
        Ok(_) => match std::fs::read(path) {
            Ok(bytes) => {
                let text: Vec<u8> = bytes
                    .into_iter()
                    .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                    .collect();
                if text.iter().all(u8::is_ascii_whitespace) {
                    problem("the file is empty".to_string())
                } else {
                    String::from_utf8_lossy(&text).into_owned()
                }
            }
            Err(e) => problem(crate::io_reason(&e)),
        },
        Err(e) => problem(crate::io_reason(&e)),
    };
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}

/// An OpenHands conversation's events, in index order, then each new one;
/// then, when all listed events are read, the conversation's execution
/// status where it ended stuck or in error. The SDK keeps that status in
/// `base_state.json`, not as an event of its log (its own stuck detector's
/// stop is only there): it is given as the `ConversationStateUpdateEvent`
/// the SDK streams to its clients, once per change to that status.
pub(crate) struct Conversation {
    events: PathBuf,
    base_state: PathBuf,
    /// `base_state.json`'s modification time when last read.
    state_read_at: Option<SystemTime>,
    /// The last execution status given (only `stuck` and `error` are).
    status_given: Option<String>,
    /// The next event index to read.
    next: u64,
    /// Files listed but not read yet.
    queue: std::collections::VecDeque<PathBuf>,
    listed_at: Option<SystemTime>,
    bytes: u64,
    /// The longest event file read (a longer one is a problem line).
    max_record: usize,
}

impl Conversation {
    /// The conversation in `dir` (its `events/` folder is read); an event
    /// file over `max_record` bytes is a problem, not read.
    pub fn new(dir: &Path, max_record: usize) -> Conversation {
        Conversation {
            max_record,
            events: dir.join("events"),
            base_state: dir.join("base_state.json"),
            state_read_at: None,
            status_given: None,
            next: 0,
            queue: Default::default(),
            listed_at: None,
            bytes: 0,
        }
    }

    /// Appends the next events as lines (a batch at a time).
    pub fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        if self.queue.is_empty() {
            let modified = std::fs::metadata(&self.events)?.modified().ok();
            if modified.is_none() || modified != self.listed_at {
                self.listed_at = modified;
                let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(&self.events)?
                    .flatten()
                    .map(|e| e.path())
                    .filter_map(|p| Some((event_index(&p)?, p)))
                    .filter(|(i, p)| *i >= self.next && !is_dangling(p))
                    .collect();
                found.sort();
                self.queue.extend(found.into_iter().map(|(_, p)| p));
            }
        }
        let start = out.len();
        for _ in 0..BATCH {
            let Some(p) = self.queue.pop_front() else { break };
            // A file still being written is taken at the next look.
            if std::fs::metadata(&p).is_ok_and(|m| m.len() == 0) {
                self.queue.push_front(p);
                self.listed_at = None;
                break;
            }
            self.next = event_index(&p).map_or(self.next, |i| i + 1);
            file_line(&p, self.max_record, out);
        }
        if self.queue.is_empty() {
            self.status_line(out);
        }
        self.bytes += (out.len() - start) as u64;
        Ok(())
    }

    /// The execution status's line, when `base_state.json` changed and the
    /// status it holds is newly `stuck` or `error` (a resumed conversation
    /// that stops again is given again).
    fn status_line(&mut self, out: &mut Vec<u8>) {
        let modified = std::fs::metadata(&self.base_state).and_then(|m| m.modified()).ok();
        if modified.is_none() || modified == self.state_read_at {
            return;
        }
        self.state_read_at = modified;
        let status = read_json(&self.base_state, self.max_record)
            .and_then(|v| v.get("execution_status")?.as_str().map(str::to_string));
        let Some(status) = status else { return };
        if self.status_given.as_deref() == Some(status.as_str()) {
            return;
        }
        if matches!(status.as_str(), "stuck" | "error") {
            let line = json!({"kind": "ConversationStateUpdateEvent", "id": "base_state.json", "source": "environment",
                              "key": "execution_status", "value": status});
            out.extend_from_slice(line.to_string().as_bytes());
            out.push(b'\n');
        }
        self.status_given = Some(status);
    }

    /// Files listed and not read yet.
    pub fn has_more(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Bytes of lines produced so far.
    pub fn offset(&self) -> u64 {
        self.bytes
    }
}

/// Whether a folder is opencode's storage tree (before 1.2).
pub fn is_opencode_tree(dir: &Path) -> bool {
    dir.join("session").is_dir() && dir.join("message").is_dir()
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| {
            r.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json") && !is_dangling(p))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn read_json(p: &Path, max_record: usize) -> Option<Value> {
    let m = std::fs::metadata(p).ok()?;
    if m.len() as usize > max_record {
        return None;
    }
    serde_json::from_slice(&std::fs::read(p).ok()?).ok()
}

/// The sessions of a storage tree: (id, title, parent, updated ms), newest first.
pub(crate) fn tree_sessions(root: &Path) -> Vec<super::sqlite::StoreSession> {
    let mut out = Vec::new();
    for project in std::fs::read_dir(root.join("session")).into_iter().flatten().flatten() {
        for f in json_files(&project.path()) {
            let Some(v) = read_json(&f, super::DEFAULT_MAX_RECORD) else {
                continue;
            };
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            out.push(super::sqlite::StoreSession {
                id: s("id").unwrap_or_else(|| f.file_stem().unwrap_or_default().to_string_lossy().into_owned()),
                title: s("title").unwrap_or_default(),
                parent: s("parentID"),
                updated: v.pointer("/time/updated").and_then(Value::as_i64).unwrap_or(0),
            });
        }
    }
    out.sort_by(|a, b| b.updated.cmp(&a.updated).then(a.id.cmp(&b.id)));
    out
}

/// One session of a storage tree: its messages in order, each with its parts.
pub(crate) struct TreeSession {
    root: PathBuf,
    messages: std::collections::VecDeque<PathBuf>,
    started: bool,
    session: String,
    bytes: u64,
    /// The longest message or part file read (a longer one is a problem line).
    max_record: usize,
}

impl TreeSession {
    /// The session `session` of the tree at `root`; a file over
    /// `max_record` bytes is a problem, not read.
    pub fn new(root: &Path, session: &str, max_record: usize) -> TreeSession {
        TreeSession {
            max_record,
            root: root.to_path_buf(),
            messages: Default::default(),
            started: false,
            session: session.to_string(),
            bytes: 0,
        }
    }

    /// Appends the next messages and their parts as row lines.
    pub fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        if !self.started {
            self.started = true;
            let header = json!({"loopscope": "rows", "store": "opencode", "session": self.session});
            out.extend_from_slice(format!("{header}\n").as_bytes());
            // Messages in creation order (their ids sort by time too).
            let mut msgs: Vec<(i64, PathBuf)> = json_files(&self.root.join("message").join(&self.session))
                .into_iter()
                .map(|p| {
                    let t = read_json(&p, self.max_record)
                        .and_then(|v| v.pointer("/time/created").and_then(Value::as_i64))
                        .unwrap_or(0);
                    (t, p)
                })
                .collect();
            msgs.sort();
            self.messages = msgs.into_iter().map(|(_, p)| p).collect();
        }
        for _ in 0..BATCH {
            let Some(m) = self.messages.pop_front() else { break };
            row("message", &m, self.max_record, out);
            let id = m.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            for p in json_files(&self.root.join("part").join(&id)) {
                row("part", &p, self.max_record, out);
            }
        }
        self.bytes += (out.len() - start) as u64;
        Ok(())
    }

    /// Messages not read yet.
    pub fn has_more(&self) -> bool {
        !self.started || !self.messages.is_empty()
    }

    /// Bytes of lines produced so far.
    pub fn offset(&self) -> u64 {
        self.bytes
    }
}

/// A file of the tree as a row line.
fn row(table: &str, p: &Path, max_record: usize, out: &mut Vec<u8>) {
    let mut line = Vec::new();
    file_line(p, max_record, &mut line);
    if line.starts_with(b"{\"loopscope\"") {
        out.extend_from_slice(&line);
        return;
    }
    out.extend_from_slice(format!("{{\"row\":\"{table}\",\"data\":").as_bytes());
    out.extend_from_slice(line.strip_suffix(b"\n").unwrap_or(&line));
    out.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(dir: &Path, i: u64, kind: &str, extra: Value) {
        let mut v = json!({"id": format!("e{i}"), "source": "agent", "kind": kind});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        std::fs::write(dir.join(format!("events/event-{i:05}-e{i}.json")), v.to_string()).unwrap();
    }

    fn status(dir: &Path, s: &str) {
        std::fs::write(dir.join("base_state.json"), json!({"execution_status": s}).to_string()).unwrap();
    }

    /// Lines of one poll, as text.
    fn poll(c: &mut Conversation) -> Vec<String> {
        let mut out = Vec::new();
        c.poll(&mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(str::to_string).collect()
    }

    /// The SDK keeps a stuck stop only in base_state.json: given once, after
    /// the events, and again only when a resumed conversation stops again.
    #[test]
    fn a_stuck_status_is_given_after_the_events_once_per_stop() {
        let path = std::env::temp_dir().join(format!("loopscope-conversation-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("events")).unwrap();
        struct Gone(PathBuf);
        impl Drop for Gone {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let dir = Gone(path);
        let dir = &dir.0;
        event(dir, 0, "MessageEvent", json!({"source": "user"}));
        status(dir, "running");
        let mut c = Conversation::new(dir, super::super::DEFAULT_MAX_RECORD);
        assert_eq!(poll(&mut c).len(), 1);
        event(dir, 1, "ActionEvent", json!({"tool_name": "terminal"}));
        // A later modification time than the first read's (coarse clocks).
        std::thread::sleep(std::time::Duration::from_millis(20));
        status(dir, "stuck");
        let lines = poll(&mut c);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("ActionEvent"));
        let given: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(given["kind"], "ConversationStateUpdateEvent");
        assert_eq!(given["value"], "stuck");
        assert!(poll(&mut c).is_empty(), "given once");
        std::thread::sleep(std::time::Duration::from_millis(20));
        status(dir, "stuck");
        assert!(poll(&mut c).is_empty(), "the same stop rewritten is not a new one");
        for s in ["running", "stuck"] {
            std::thread::sleep(std::time::Duration::from_millis(20));
            status(dir, s);
            let lines = poll(&mut c);
            assert_eq!(lines.len(), usize::from(s == "stuck"), "{s}: {lines:?}");
        }
    }
}
