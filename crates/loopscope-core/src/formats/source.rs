//! Where a stream's records come from when it is not simply a file's bytes:
//! a session in an agent's SQLite store, an OpenHands conversation folder,
//! opencode's storage tree — and the streams a file or store holds.
//!
//! A stream inside a container is named `CONTAINER#ID`: `opencode.db#ses_…`
//! (a session), `events.jsonl#explore-1` (a Copilot sub-agent),
//! `trajectory.json#<session_id>` (an ATIF sub-agent). A store named alone
//! opens its most recently updated session.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::detect::Kind;
use super::folder::{self, Conversation, TreeSession};
use super::sqlite::{self, SessionRows, StoreKind, StoreSession};
use crate::error::{Error, ErrorKind};

/// What a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A file read as bytes; `part` names a sub-agent's stream in it.
    File {
        /// The file.
        path: PathBuf,
        /// A sub-agent's id.
        part: Option<String>,
    },
    /// A session of a SQLite store (None: the newest).
    Store {
        /// The database file.
        db: PathBuf,
        /// The session's id.
        session: Option<String>,
    },
    /// An OpenHands conversation folder.
    Conversation(PathBuf),
    /// opencode's storage tree (None: the newest session).
    Tree {
        /// The `storage` folder.
        root: PathBuf,
        /// The session's id.
        session: Option<String>,
    },
}

/// Splits `PATH#ID` when PATH exists and the whole does not.
pub fn split(path: &Path) -> (PathBuf, Option<String>) {
    if path.exists() {
        return (path.to_path_buf(), None);
    }
    let text = path.to_string_lossy();
    match text.rsplit_once('#') {
        Some((base, id)) if !id.is_empty() && !id.contains(['/', '\\']) && Path::new(base).exists() => {
            (PathBuf::from(base), Some(id.to_string()))
        }
        _ => (path.to_path_buf(), None),
    }
}

/// `BASE#ID`.
pub fn join(base: &Path, id: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push("#");
    s.push(id);
    PathBuf::from(s)
}

/// What a path names (a file that does not exist is a file, to be reported
/// when opened).
pub fn place(path: &Path) -> Place {
    let (base, part) = split(path);
    if base.is_dir() {
        if folder::is_conversation(&base) {
            return Place::Conversation(base);
        }
        if folder::is_opencode_tree(&base) {
            return Place::Tree {
                root: base,
                session: part,
            };
        }
    } else if base.is_file() && sqlite::is_database(&base) {
        return Place::Store {
            db: base,
            session: part,
        };
    }
    Place::File { path: base, part }
}

/// Whether a path is read through [`Records`] (a store, a folder) rather
/// than as a file's bytes.
pub fn is_records(path: &Path) -> bool {
    !matches!(place(path), Place::File { .. })
}

/// Records produced as JSON lines, polled: read to the end, then (when
/// followed) what is new at each look.
pub trait Records: Send {
    /// Appends what is new to `out` (nothing: nothing now).
    fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()>;
    /// More is ready at once (a first reading goes on).
    fn has_more(&self) -> bool;
    /// Bytes produced so far.
    fn offset(&self) -> u64;
    /// What happened to the source's file since the last call (a store
    /// deleted, or created again: then these records are done, and the
    /// place is opened again).
    fn news(&mut self) -> Option<sqlite::StoreNews> {
        None
    }
}

/// The record sources: each has the methods of [`Records`] as its own.
macro_rules! records {
    ($($t:ty),*) => {$(
        impl Records for $t {
            fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
                <$t>::poll(self, out)
            }
            fn has_more(&self) -> bool {
                <$t>::has_more(self)
            }
            fn offset(&self) -> u64 {
                <$t>::offset(self)
            }
        }
    )*};
}

records!(Conversation, TreeSession);

impl Records for SessionRows {
    fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        SessionRows::poll(self, out)
    }
    fn has_more(&self) -> bool {
        SessionRows::has_more(self)
    }
    fn offset(&self) -> u64 {
        SessionRows::offset(self)
    }
    fn news(&mut self) -> Option<sqlite::StoreNews> {
        SessionRows::news(self)
    }
}

/// A store's kind and sessions (newest first); without the `sqlite`
/// feature, an error that names it.
#[cfg(not(feature = "sqlite"))]
pub(crate) fn store_sessions(db: &Path) -> Result<(StoreKind, Vec<StoreSession>), Error> {
    Err(sqlite::off::refusal(db))
}

/// A store's kind and sessions (newest first).
#[cfg(feature = "sqlite")]
pub(crate) fn store_sessions(db: &Path) -> Result<(StoreKind, Vec<StoreSession>), Error> {
    let at = format!("{}: ", crate::sanitize::path(db));
    let conn = sqlite::open(db)?;
    let kind = sqlite::kind_of(&conn).map_err(|e| e.prefixed(&at))?;
    let sessions = sqlite::sessions(&conn, kind).map_err(|e| e.prefixed(&at))?;
    Ok((kind, sessions))
}

/// Opens the records of a place that is not a file, with the importer
/// that reads them; a record over `max_record` bytes is a problem line.
pub fn open_records(place: &Place, max_record: usize) -> Result<(Box<dyn Records>, Kind), Error> {
    match place {
        Place::Store { db, session } => {
            let rows = SessionRows::open(db, session.as_deref(), max_record)?;
            let kind = rows.kind();
            let k = match kind {
                StoreKind::Opencode => Kind::OpencodeLines,
                StoreKind::Goose => Kind::GooseRows,
                StoreKind::Crush => Kind::CrushRows,
                StoreKind::Openclaw => Kind::OpenclawRows,
            };
            Ok((Box::new(rows), k))
        }
        Place::Conversation(dir) => Ok((Box::new(Conversation::new(dir, max_record)), Kind::OpenhandsEvents)),
        Place::Tree { root, session } => {
            let shown = crate::sanitize::path(root);
            let id = match session {
                Some(id) => id.clone(),
                None => folder::tree_sessions(root)
                    .first()
                    .map(|s| s.id.clone())
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::NotFound,
                            format!("{shown}: the opencode storage tree holds no session"),
                        )
                    })?,
            };
            Ok((Box::new(TreeSession::new(root, &id, max_record)), Kind::OpencodeLines))
        }
        Place::File { path, .. } => Err(Error::new(
            ErrorKind::InvalidValue,
            format!("{}: a file, not a store or a folder", crate::sanitize::path(path)),
        )),
    }
}

/// Records read to their end, as a reader.
pub(crate) struct RecordsReader {
    records: Box<dyn Records>,
    buf: Vec<u8>,
    at: usize,
    started: bool,
}

impl RecordsReader {
    /// Reads `records` to their end.
    pub fn new(records: Box<dyn Records>) -> RecordsReader {
        RecordsReader {
            records,
            buf: Vec::new(),
            at: 0,
            started: false,
        }
    }
}

impl Read for RecordsReader {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buf.len() {
            if self.started && !self.records.has_more() {
                return Ok(0);
            }
            self.started = true;
            self.buf.clear();
            self.at = 0;
            self.records.poll(&mut self.buf)?;
        }
        let n = into.len().min(self.buf.len() - self.at);
        into[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One stream a container holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// `CONTAINER#ID`.
    pub path: PathBuf,
    /// A sub-agent's parent stream.
    pub parent: Option<PathBuf>,
    /// The session's title, where its store keeps one.
    pub title: Option<String>,
    /// Last update, ms since the epoch (stores only).
    pub updated: Option<i64>,
}

/// The streams a path holds when it holds several (a store's sessions, a
/// file's sub-agents); None for a plain single stream. Child sessions and
/// sub-agents come right after their parent.
pub fn streams(path: &Path) -> Result<Option<Vec<Stream>>, Error> {
    if split(path).1.is_some() {
        return Ok(None);
    }
    let sessions = match place(path) {
        Place::Store { db, .. } => store_sessions(&db)?.1,
        Place::Tree { root, .. } => folder::tree_sessions(&root),
        Place::File { path, .. } if path.is_file() => return Ok(file_parts(&path)),
        _ => return Ok(None),
    };
    let ids: std::collections::HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let mut out: Vec<Stream> = sessions
        .iter()
        .map(|s| Stream {
            path: join(path, &s.id),
            parent: s.parent.as_deref().filter(|p| ids.contains(p)).map(|p| join(path, p)),
            title: Some(s.title.clone()).filter(|t| !t.is_empty()),
            updated: Some(s.updated),
        })
        .collect();
    out.sort_by(|a, b| {
        let key = |s: &Stream| {
            (
                s.parent.clone().unwrap_or_else(|| s.path.clone()),
                s.parent.is_some(),
                s.path.clone(),
            )
        };
        key(a).cmp(&key(b))
    });
    Ok(Some(out))
}

/// A Copilot events file or an ATIF trajectory with sub-agents: the main
/// stream, then one per sub-agent. The file is only looked into when its
/// name says what it is.
fn file_parts(path: &Path) -> Option<Vec<Stream>> {
    let name = path.file_name()?.to_str()?;
    let subs: Vec<(String, String)> = if name == "events.jsonl" {
        copilot_agents(path)
    } else if name.ends_with(".json") && name.contains("trajectory") {
        let meta = std::fs::metadata(path).ok()?;
        if meta.len() as usize > super::DEFAULT_MAX_RECORD {
            return None;
        }
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        if !super::atif::is_atif(&doc) {
            return None;
        }
        let top = doc
            .get("session_id")
            .and_then(|s| s.as_str())
            .unwrap_or_default()
            .to_string();
        super::atif::sub_agents(&doc)
            .into_iter()
            .map(|(id, parent)| (id, if parent == top { String::new() } else { parent }))
            .collect()
    } else {
        return None;
    };
    if subs.is_empty() {
        return None;
    }
    let mut out = vec![Stream {
        path: path.to_path_buf(),
        parent: None,
        title: None,
        updated: None,
    }];
    for (id, parent) in subs {
        out.push(Stream {
            path: join(path, &id),
            parent: Some(if parent.is_empty() {
                path.to_path_buf()
            } else {
                join(path, &parent)
            }),
            title: None,
            updated: None,
        });
    }
    Some(out)
}

/// The sub-agents (`agentId`) of a Copilot events file, in order of appearance.
fn copilot_agents(path: &Path) -> Vec<(String, String)> {
    let Ok(f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    // Listing streams reads at most the first GiB.
    let mut f = f.take(1 << 30);
    let mut seen: Vec<(String, String)> = Vec::new();
    // Lines as the importer splits them: one longer than the record limit
    // is dropped as it streams past, never held whole.
    let mut lines = super::lines::Lines::default();
    let mut one = |_: u64, line: &[u8]| {
        if memchr::memmem::find(line, b"\"agentId\"").is_none() {
            return;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
            return;
        };
        if let Some(a) = super::copilot::sub_agent_of(&v) {
            if !seen.iter().any(|(s, _)| s == a) {
                seen.push((a.to_string(), String::new()));
            }
        }
    };
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => lines.feed(&buf[..n], &mut one),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lines.finish(&mut one);
    seen
}
