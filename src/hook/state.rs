//! What a hook remembers of a session between two calls: a small file per
//! session under the cache folder. A hook is a process of its own at every
//! tool call, and reading a whole transcript each time would cost as much
//! as the transcript; instead the file keeps how far the transcript was
//! read (and which file it was: device, inode, size) and the tool events
//! since the last prompt — a prompt resets every detector, so nothing
//! before it can make a call loop. A call reads what was appended since.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use loopscope_core::event::{Event, EventKind};
use loopscope_core::formats::detect::Kind;
use loopscope_core::formats::Item;

/// The extra field that marks a result a hook reported.
const REPORTED: &str = "reported";

/// Tool events kept (the detectors look at the last few dozen steps).
const KEPT: usize = 256;
/// Outputs longer than this are kept as a digest: the detectors compare
/// results for sameness, and a session's file reads and writes fast.
const KEPT_OUTPUT: usize = 256;
/// The most of a transcript read in one call (a larger growth is read up
/// to this, and the rest next time).
const MAX_READ: u64 = 64 << 20;
/// The state file's version: a file of another is started over.
const VERSION: u64 = 1;

/// A session's remembered place and events.
#[derive(Debug, Default)]
pub struct State {
    /// The transcript read so far: its identity and the offset of the end
    /// of its last complete line.
    pub transcript: Option<Place>,
    /// Prompts, requests, tool calls and results since the last prompt.
    pub events: Vec<Event>,
    /// Bytes of the transcript read by this call (not saved).
    pub read: u64,
    /// Keys of calls refused since the last prompt, with why.
    pub refused: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub offset: u64,
}

/// Whether an event matters to a call's decision.
fn kept(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Prompt { .. }
            | EventKind::Request { .. }
            | EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
    )
}

impl State {
    /// Adds an event: a prompt starts the session's state over.
    pub fn push(&mut self, mut e: Event) {
        if !kept(&e) {
            return;
        }
        if matches!(e.kind, EventKind::Prompt { .. }) {
            self.events.clear();
            self.refused.clear();
        }
        // The same call or result from the transcript and from a hook
        // (a transcript written a little behind the agent) is one.
        if self.known(&e) {
            return;
        }
        // Two requests in a row say no more than one.
        if matches!(e.kind, EventKind::Request { .. })
            && self
                .events
                .last()
                .is_some_and(|l| matches!(l.kind, EventKind::Request { .. }))
        {
            return;
        }
        e.ts = None;
        digest_output(&mut e);
        self.events.push(e);
        if self.events.len() > KEPT {
            let extra = self.events.len() - KEPT;
            self.events.drain(..extra);
        }
    }

    /// A result a hook reported (the agent's own record of what the call
    /// got): it stands for the call, even over the transcript's copy of the
    /// same result, so the results compared all come from one source
    /// whatever the transcript has caught up with.
    pub fn push_reported(&mut self, mut e: Event) {
        e.extra.insert(REPORTED.into(), true.into());
        let id = match &e.kind {
            EventKind::ToolResult { id: Some(id), .. } => id.clone(),
            _ => return self.push(e),
        };
        let at = self
            .events
            .iter()
            .rposition(|x| matches!(&x.kind, EventKind::ToolResult { id: Some(y), .. } if *y == id));
        match at {
            Some(i) if self.events[i].extra.get(REPORTED).is_none() => {
                e.ts = None;
                digest_output(&mut e);
                self.events[i] = e;
            }
            Some(_) => {}
            None => self.push(e),
        }
    }

    /// Whether this call or result (by its id) is already here.
    fn known(&self, e: &Event) -> bool {
        let same_id = |a: &Event| match (&a.kind, &e.kind) {
            (EventKind::ToolCall { id: Some(x), .. }, EventKind::ToolCall { id: Some(y), .. })
            | (EventKind::ToolResult { id: Some(x), .. }, EventKind::ToolResult { id: Some(y), .. }) => x == y,
            _ => false,
        };
        matches!(
            e.kind,
            EventKind::ToolCall { id: Some(_), .. } | EventKind::ToolResult { id: Some(_), .. }
        ) && self.events.iter().rev().any(same_id)
    }

    /// Reads what `transcript` gained since the last call, read as `kind`.
    pub fn read_transcript(&mut self, transcript: &Path, kind: Kind) -> Result<(), String> {
        let shown = loopscope_core::sanitize::path(transcript);
        let mut file = File::open(transcript).map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
        let (dev, ino) = identity(&meta);
        let same = self
            .transcript
            .as_ref()
            .is_some_and(|p| p.path == transcript && p.dev == dev && p.ino == ino && p.offset <= meta.len());
        if !same {
            // Another file, or this one cut shorter: read from its start.
            self.events.clear();
            self.refused.clear();
            self.transcript = None;
        }
        let from = self.transcript.as_ref().map_or(0, |p| p.offset);
        file.seek(SeekFrom::Start(from))
            .map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
        let mut bytes = Vec::new();
        file.take(MAX_READ)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
        // Only whole lines: the agent may be writing the last one.
        let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.read += bytes.len() as u64;
        let mut decoder = kind.build();
        let mut items = Vec::new();
        decoder.feed(&bytes[..end], &mut items);
        decoder.finish(&mut items);
        for item in items {
            if let Item::Event(e, _) = item {
                self.push(e);
            }
        }
        self.transcript = Some(Place {
            path: transcript.to_path_buf(),
            dev,
            ino,
            offset: from + end as u64,
        });
        Ok(())
    }

    fn to_json(&self) -> Value {
        json!({
            "version": VERSION,
            "transcript": self.transcript.as_ref().map(|p| json!({
                "path": p.path, "dev": p.dev, "ino": p.ino, "offset": p.offset
            })),
            "events": self.events.iter().map(Event::to_json).collect::<Vec<_>>(),
            "refused": self.refused.iter().map(|(k, r)| json!([k, r])).collect::<Vec<_>>(),
        })
    }

    fn from_json(v: &Value) -> Option<State> {
        if v["version"].as_u64() != Some(VERSION) {
            return None;
        }
        let transcript = v["transcript"].as_object().map(|t| Place {
            path: PathBuf::from(t["path"].as_str().unwrap_or_default()),
            dev: t["dev"].as_u64().unwrap_or(0),
            ino: t["ino"].as_u64().unwrap_or(0),
            offset: t["offset"].as_u64().unwrap_or(0),
        });
        let events = v["events"]
            .as_array()?
            .iter()
            .filter_map(|e| Event::from_json(e.clone()).ok().map(|p| p.event))
            .collect();
        let refused = v["refused"]
            .as_array()?
            .iter()
            .filter_map(|r| Some((r[0].as_str()?.to_string(), r[1].as_str()?.to_string())))
            .collect();
        Some(State {
            transcript,
            events,
            refused,
            read: 0,
        })
    }
}

/// A long result's output as a digest of what detectors compare (the
/// output less what changes on every call, white space folded): equal
/// digests for the same result, a few dozen bytes however long it was.
fn digest_output(e: &mut Event) {
    let compared = match e.compared_output() {
        Some(Value::String(s)) if s.chars().count() > KEPT_OUTPUT => s.clone(),
        Some(v) if !v.is_string() && v.to_string().len() > KEPT_OUTPUT => v.to_string(),
        _ => return,
    };
    let folded: Vec<&str> = compared.split_whitespace().collect();
    let folded = folded.join(" ");
    let digest = format!(
        "output digest {:016x}{:016x} ({} chars)",
        fnv1a_seeded(folded.as_bytes(), 0xcbf2_9ce4_8422_2325),
        fnv1a_seeded(folded.as_bytes(), 0x6c62_272e_07bb_0142),
        folded.chars().count()
    );
    if let EventKind::ToolResult { output, .. } = &mut e.kind {
        *output = Some(Value::String(digest));
    }
    e.extra.remove(loopscope_core::event::STABLE_OUTPUT);
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// The folder the hooks keep their sessions' state in:
/// `$XDG_CACHE_HOME/loopscope/hooks`, else `~/.cache/loopscope/hooks`.
pub fn dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("loopscope").join("hooks"))
}

/// A session's state file, open and locked: other hooks of the same
/// session (parallel calls) wait their turn, briefly.
pub struct Locked {
    file: File,
}

/// How long a hook waits for another of the same session.
const LOCK_TRIES: u32 = 200;

impl Locked {
    /// Opens (creating) the state of session `key` of `agent`, locked.
    pub fn open(agent: &str, key: &str) -> Result<(Locked, State), String> {
        let dir = dir().ok_or("no cache folder (neither XDG_CACHE_HOME nor HOME is set)")?;
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {}", dir.display(), loopscope_core::io_reason(&e)))?;
        let path = dir.join(file_name(agent, key));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("{}: {}", path.display(), loopscope_core::io_reason(&e)))?;
        lock(&file);
        let mut text = Vec::new();
        (&file)
            .take(256 << 20)
            .read_to_end(&mut text)
            .map_err(|e| format!("{}: {}", path.display(), loopscope_core::io_reason(&e)))?;
        let state = serde_json::from_slice(&text)
            .ok()
            .and_then(|v| State::from_json(&v))
            .unwrap_or_default();
        Ok((Locked { file }, state))
    }

    /// Writes the state back (the lock goes with the file).
    pub fn save(mut self, state: &State) -> Result<(), String> {
        let text = state.to_json().to_string();
        self.file
            .set_len(0)
            .and_then(|()| self.file.seek(SeekFrom::Start(0)).map(|_| ()))
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .map_err(|e| format!("the hook's state: {}", loopscope_core::io_reason(&e)))
    }
}

/// A session's file name: the agent and a hash of its key (a key can be
/// any text: a path, an id).
fn file_name(agent: &str, key: &str) -> String {
    let hash = fnv1a(key.as_bytes());
    format!("{agent}-{hash:016x}.json")
}

fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_seeded(bytes, 0xcbf2_9ce4_8422_2325)
}

/// FNV-1a from `seed`: enough to tell sessions apart in a file name, and
/// two of them (128 bits) to tell results apart among a session's few hundred.
fn fnv1a_seeded(bytes: &[u8], seed: u64) -> u64 {
    let mut h = seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(unix)]
fn lock(file: &File) {
    use std::os::unix::io::AsRawFd;
    for _ in 0..LOCK_TRIES {
        // SAFETY: flock on a file descriptor this process owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Another hook holds it for long: go on without (a hook never waits
    // the agent out; at worst two calls read the same place).
}

#[cfg(not(unix))]
fn lock(_file: &File) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_starts_over_and_the_state_round_trips() {
        let mut s = State::default();
        s.push(Event::tool_call("read", json!({"path": "a"})));
        s.push(Event::request());
        s.push(Event::request());
        s.push(Event::reasoning("not kept"));
        assert_eq!(s.events.len(), 2);
        s.refused.push(("read:{}".into(), "why".into()));
        let back = State::from_json(&s.to_json()).unwrap();
        assert_eq!(back.events, s.events);
        assert_eq!(back.refused, s.refused);
        s.push(Event::prompt("new task"));
        assert_eq!(s.events.len(), 1);
        assert!(s.refused.is_empty());
    }

    #[test]
    fn long_outputs_are_kept_as_digests_equal_for_the_same_result() {
        let mut s = State::default();
        let long = "line one\n".repeat(100);
        let folded_twin = long.replace('\n', "  \n ");
        for out in [&long, &folded_twin, &"other\n".repeat(100), &"short".to_string()] {
            s.push(Event::tool_result_with(true, json!(out)));
        }
        let outs: Vec<String> = s
            .events
            .iter()
            .map(|e| e.to_json()["output"].as_str().unwrap().to_string())
            .collect();
        assert!(outs[0].starts_with("output digest "), "{}", outs[0]);
        assert_eq!(outs[0], outs[1], "white space does not make a result new");
        assert_ne!(outs[0], outs[2]);
        assert_eq!(outs[3], "short");
    }

    #[test]
    fn a_transcript_is_read_from_where_it_was_left_a_whole_line_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("s.jsonl");
        std::fs::write(&t, "{\"type\":\"prompt\",\"text\":\"go\"}\n{\"type\":\"tool_call\",\"name\":\"ls\",\"args\":{}}\n{\"type\":\"tool_ca").unwrap();
        let mut s = State::default();
        s.read_transcript(&t, Kind::Native).unwrap();
        assert_eq!(s.events.len(), 2);
        let first = s.transcript.clone().unwrap().offset;
        let mut f = OpenOptions::new().append(true).open(&t).unwrap();
        f.write_all(b"ll\",\"name\":\"ls\",\"args\":{}}\n").unwrap();
        s.read_transcript(&t, Kind::Native).unwrap();
        assert_eq!(s.events.len(), 3, "the half line, once whole");
        assert!(s.transcript.clone().unwrap().offset > first);
        // The same file cut shorter: read again from its start.
        std::fs::write(&t, "{\"type\":\"tool_call\",\"name\":\"cat\",\"args\":{}}\n").unwrap();
        s.read_transcript(&t, Kind::Native).unwrap();
        assert_eq!(s.events.len(), 1);
    }
}
