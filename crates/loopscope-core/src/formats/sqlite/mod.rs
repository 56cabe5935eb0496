//! Agents that keep their sessions in SQLite — opencode and Kilo CLI
//! (`opencode.db`, `kilo.db`), Goose (`sessions.db`), Crush
//! (`.crush/crush.db`), OpenClaw (`openclaw-agent.sqlite`) — read as
//! streams: one session's rows, as JSON lines their importers read
//! (`super::opencode`, `super::goose`, `super::crush`, `super::pi`
//! for OpenClaw's entries), built by SQLite's own JSON functions (OpenClaw
//! compresses its longer entries: those are unpacked here, bounded).
//!
//! A database is only ever opened read-only and never locked against the
//! agent writing it: in WAL mode (opencode, Goose) a reader sees what is
//! committed, the `-wal` file included, without blocking the writer; a WAL
//! database whose `-wal` is gone (the agent is not running) is opened
//! immutable, so nothing is created beside it. A session is read in pages
//! of rows, never whole; following it, a look costs two `stat`s until the
//! files change, then a query for the rows added or updated since (by rowid
//! and update time) — never the whole store.

#[cfg(feature = "sqlite")]
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;
#[cfg(feature = "sqlite")]
use std::time::SystemTime;

#[cfg(feature = "sqlite")]
use rusqlite::{Connection, OpenFlags};

#[cfg(feature = "sqlite")]
use crate::error::{Error, ErrorKind};

#[cfg(not(feature = "sqlite"))]
pub(crate) mod off;
#[cfg(feature = "sqlite")]
mod queries;
#[cfg(feature = "sqlite")]
mod reader;
#[cfg(not(feature = "sqlite"))]
pub use off::{SessionReader, SessionRows};
#[cfg(feature = "sqlite")]
pub use reader::{SessionReader, SessionRows};

/// What happened to a followed store's file, besides new rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreNews {
    /// The file is gone; what was read is kept.
    Deleted,
    /// Another database has the name now (deleted and created again): its
    /// sessions must be found again and read from their start.
    Replaced,
}
#[cfg(feature = "sqlite")]
use serde_json::json;

/// The stores loopscope reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// opencode and Kilo CLI (`session`, `message`, `part`).
    Opencode,
    /// Goose (`sessions`, `messages.content_json`).
    Goose,
    /// Crush (`sessions`, `messages.parts`).
    Crush,
    /// OpenClaw (`session_windows`, `transcript_events`).
    Openclaw,
}

impl StoreKind {
    /// The store's name in messages and row headers.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::Opencode => "opencode",
            StoreKind::Goose => "goose",
            StoreKind::Crush => "crush",
            StoreKind::Openclaw => "openclaw",
        }
    }

    /// The importer of its rows.
    pub fn format(self) -> super::Format {
        match self {
            StoreKind::Opencode => super::Format::Opencode,
            StoreKind::Goose => super::Format::Goose,
            StoreKind::Crush => super::Format::Crush,
            StoreKind::Openclaw => super::Format::Openclaw,
        }
    }
}

/// The first bytes of every SQLite database.
pub(crate) const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether a file starts like a SQLite database.
pub(crate) fn is_database(path: &Path) -> bool {
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == MAGIC)
}

/// One session in a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreSession {
    /// The session's id in the store.
    pub id: String,
    /// Its title (empty when it has none).
    pub title: String,
    /// The session that started it (a sub-agent's child session).
    pub parent: Option<String>,
    /// Last update, ms since the epoch.
    pub updated: i64,
}

#[cfg(feature = "sqlite")]
/// What the files look like now: a change to either is a reason to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Signature {
    db: Option<(SystemTime, u64)>,
    wal: Option<(SystemTime, u64)>,
    /// Which file the name is (a store deleted and created again is another).
    identity: Option<Identity>,
}

#[cfg(feature = "sqlite")]
/// A file's device, inode and creation time (a file deleted and created
/// again often gets the same inode back; its creation time differs where
/// the filesystem keeps one, and a name seen missing in between is another
/// file anyway: see [`Shared::missing`]).
type Identity = (u64, u64, Option<SystemTime>);

#[cfg(feature = "sqlite")]
fn identity(path: &Path) -> Option<Identity> {
    let m = std::fs::metadata(path).ok()?;
    let born = m.created().ok();
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino(), born))
    }
    #[cfg(not(unix))]
    {
        Some((0, 0, born))
    }
}

#[cfg(feature = "sqlite")]
fn signature(path: &Path) -> Signature {
    let of = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    };
    Signature {
        db: of(path),
        wal: of(&wal_path(path)),
        identity: identity(path),
    }
}

#[cfg(feature = "sqlite")]
fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-wal");
    PathBuf::from(s)
}

#[cfg(feature = "sqlite")]
/// `file:` URI of a path (`?`, `#` and `%` escaped).
fn uri(path: &Path, query: &str) -> String {
    let mut out = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '?' | '#' | '%' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    format!("{out}?{query}")
}

#[cfg(feature = "sqlite")]
/// A SQLite failure as an error of its kind: a damaged or foreign file is
/// malformed input, a refused open a permission error, the rest I/O.
fn failure(e: &rusqlite::Error) -> Error {
    let kind = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) => {
            ErrorKind::Malformed { line: None }
        }
        Some(rusqlite::ErrorCode::PermissionDenied) => ErrorKind::PermissionDenied,
        _ => ErrorKind::Io,
    };
    Error::new(kind, reason(e))
}

#[cfg(feature = "sqlite")]
/// A database's error as a phrase for the user.
fn reason(e: &rusqlite::Error) -> String {
    if let rusqlite::Error::SqliteFailure(f, _) = e {
        if f.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK {
            return HOT_JOURNAL.to_string();
        }
    }
    let s = e.to_string();
    if s.contains("file is not a database") {
        "not a SQLite database (or a damaged one)".to_string()
    } else if s.contains("malformed") {
        "the database is damaged (malformed)".to_string()
    } else if s.contains("locked") || s.contains("busy") {
        "the database is locked by another program; try again".to_string()
    } else {
        s
    }
}

#[cfg(feature = "sqlite")]
/// What a hot journal is and how to recover, as SQLite's own guidance
/// (sqlite.org/howtocorrupt.html, §1.4 and sqlite.org/lockingv3.html,
/// "hot journals") puts it. Reading the database would roll the journal
/// back, which is a write: loopscope only reads.
const HOT_JOURNAL: &str = "a hot journal lies beside it: a writer stopped mid-transaction, and SQLite must roll \
     that back before the database can be read; loopscope only reads and will not touch it. To recover, open \
     it once with its agent or `sqlite3 FILE 'PRAGMA integrity_check'` with write access; never delete the \
     -journal file (that corrupts the database)";

#[cfg(feature = "sqlite")]
/// Opens a database for reading only (see the module's notes on WAL).
pub(crate) fn open(path: &Path) -> Result<Connection, Error> {
    open_for(path).map(|(c, _)| c)
}

#[cfg(feature = "sqlite")]
/// The connection, and whether it was opened immutable (it must be opened
/// again to see a change).
fn open_for(path: &Path) -> Result<(Connection, bool), Error> {
    let shown = crate::sanitize::path(path);
    let mut head = [0u8; 100];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| Error::io(&shown, &e))?;
    if n < 100 || &head[..16] != MAGIC {
        return Err(Error::new(
            ErrorKind::UnsupportedFormat,
            format!("{shown}: not a SQLite database (or a truncated one)"),
        ));
    }
    // Bytes 18 and 19 are 2 in WAL mode.
    let wal_mode = head[18] == 2 || head[19] == 2;
    let immutable = wal_mode && !wal_path(path).exists();
    let query = if immutable { "mode=ro&immutable=1" } else { "mode=ro" };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri(path, query), flags)
        .map_err(|e| failure(&e).prefixed(&format!("{shown}: ")))?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(2));
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
        .map_err(|e| failure(&e).prefixed(&format!("{shown}: ")))?;
    Ok((conn, immutable))
}

#[cfg(feature = "sqlite")]
/// The columns of a table (empty when it does not exist).
fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let Ok(mut stmt) = conn.prepare(&format!("PRAGMA table_info(\"{table}\")")) else {
        return Vec::new();
    };
    stmt.query_map([], |r| r.get::<_, String>(1))
        .map(|rows| rows.flatten().collect())
        .unwrap_or_default()
}

#[cfg(feature = "sqlite")]
/// Which agent's store a database is, from its tables.
pub(crate) fn kind_of(conn: &Connection) -> Result<StoreKind, Error> {
    let part = columns(conn, "part");
    let message = columns(conn, "message");
    let messages = columns(conn, "messages");
    let has = |cols: &[String], c: &str| cols.iter().any(|x| x == c);
    // Recognised by its tables; a missing column is said when reading.
    if !part.is_empty() && has(&message, "session_id") {
        return Ok(StoreKind::Opencode);
    }
    if has(&messages, "content_json") && has(&messages, "session_id") {
        return Ok(StoreKind::Goose);
    }
    if has(&messages, "parts") && has(&messages, "session_id") {
        return Ok(StoreKind::Crush);
    }
    let transcript = columns(conn, super::openclaw::TRANSCRIPT);
    if has(&transcript, "event_json") && has(&transcript, "session_id") {
        return Ok(StoreKind::Openclaw);
    }
    let mut tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 12")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))
                .map(|rows| rows.flatten().collect())
        })
        .unwrap_or_default();
    tables.iter_mut().for_each(|t| *t = crate::sanitize::line(t));
    Err(Error::new(
        ErrorKind::UnsupportedFormat,
        format!(
            "a SQLite database, but not an agent's session store loopscope reads (opencode/Kilo, Goose, Crush, OpenClaw); its tables: {}",
            if tables.is_empty() { "none".to_string() } else { tables.join(", ") }
        ),
    ))
}

#[cfg(feature = "sqlite")]
/// A column's expression: itself if the table has it, else NULL (older
/// and newer schemas differ in optional columns).
fn col(cols: &[String], name: &str) -> String {
    if cols.iter().any(|c| c == name) {
        format!("\"{name}\"")
    } else {
        "NULL".to_string()
    }
}

#[cfg(feature = "sqlite")]
/// A time column as ms since the epoch, whatever it holds (ms, seconds,
/// or SQLite's `YYYY-MM-DD HH:MM:SS`).
fn millis(expr: &str) -> String {
    format!(
        "(CASE WHEN typeof({expr}) = 'text' THEN CAST(strftime('%s', {expr}) AS INTEGER) * 1000 \
         WHEN {expr} < 100000000000 THEN {expr} * 1000 ELSE {expr} END)"
    )
}

#[cfg(feature = "sqlite")]
/// The sessions of a store, newest first.
pub(crate) fn sessions(conn: &Connection, kind: StoreKind) -> Result<Vec<StoreSession>, Error> {
    sessions_where(conn, kind, None)
}

#[cfg(feature = "sqlite")]
/// One session of a store by id (None: the newest), without listing the others.
pub(crate) fn session(conn: &Connection, kind: StoreKind, id: Option<&str>) -> Result<Option<StoreSession>, Error> {
    sessions_where(conn, kind, Some(id.unwrap_or_default())).map(|v| v.into_iter().next())
}

#[cfg(feature = "sqlite")]
/// The sessions, or with `one` the one with that id (empty: the newest).
fn sessions_where(conn: &Connection, kind: StoreKind, one: Option<&str>) -> Result<Vec<StoreSession>, Error> {
    let (table, title, parent, updated) = match kind {
        StoreKind::Opencode => ("session", "title", "parent_id", "time_updated"),
        StoreKind::Goose => ("sessions", "name", "", "updated_at"),
        StoreKind::Crush => ("sessions", "title", "parent_session_id", "updated_at"),
        StoreKind::Openclaw => ("session_windows", "session_key", "", "updated_at"),
    };
    let cols = columns(conn, table);
    if cols.is_empty() {
        return Err(Error::new(
            ErrorKind::UnsupportedFormat,
            format!("the store has no {table} table (a schema this version does not know)"),
        ));
    }
    let (filter, and) = match one {
        Some("") => (" ORDER BY 4 DESC, 1 LIMIT 1", ""),
        Some(_) => (" WHERE id = ?1", " AND w.session_id = ?1"),
        None => (" ORDER BY 4 DESC, 1", ""),
    };
    let sql = match kind {
        StoreKind::Openclaw => {
            let order = if and.is_empty() { filter } else { and };
            super::openclaw::sessions_sql(!columns(conn, "session_nodes").is_empty(), order)
        }
        _ => format!(
            "SELECT id, {t}, {p}, {u} FROM \"{table}\"{filter}",
            t = col(&cols, title),
            p = col(&cols, parent),
            u = millis(&col(&cols, updated)),
        ),
    };
    let mut stmt = conn.prepare(&sql).map_err(|e| failure(&e))?;
    let params: Vec<&str> = one.filter(|id| !id.is_empty()).into_iter().collect();
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |r| {
            Ok(StoreSession {
                id: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                title: r.get::<_, Option<String>>(1).ok().flatten().unwrap_or_default(),
                parent: r.get::<_, Option<String>>(2).ok().flatten().filter(|p| !p.is_empty()),
                updated: r.get::<_, Option<i64>>(3).ok().flatten().unwrap_or(0),
            })
        })
        .map_err(|e| failure(&e))?;
    rows.map(|r| r.map_err(|e| failure(&e))).collect()
}
