//! Agents that keep their sessions in SQLite — opencode and Kilo CLI
//! (`opencode.db`, `kilo.db`), Goose (`sessions.db`), Crush
//! (`.crush/crush.db`), OpenClaw (`openclaw-agent.sqlite`) — read as
//! streams: one session's rows, as JSON lines their importers read
//! ([`super::opencode`], [`super::goose`], [`super::crush`], [`super::pi`]
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

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use rusqlite::{Connection, OpenFlags};
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
pub const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Whether a file starts like a SQLite database.
pub fn is_database(path: &Path) -> bool {
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

/// What the files look like now: a change to either is a reason to look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Signature {
    db: Option<(SystemTime, u64)>,
    wal: Option<(SystemTime, u64)>,
    /// Which file the name is (a store deleted and created again is another).
    identity: Option<Identity>,
}

/// A file's device, inode and creation time (a file deleted and created
/// again often gets the same inode back; its creation time differs where
/// the filesystem keeps one, and a name seen missing in between is another
/// file anyway: see [`Shared::missing`]).
type Identity = (u64, u64, Option<SystemTime>);

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

fn wal_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push("-wal");
    PathBuf::from(s)
}

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

/// What a hot journal is and how to recover, as SQLite's own guidance
/// (sqlite.org/howtocorrupt.html, §1.4 and sqlite.org/lockingv3.html,
/// "hot journals") puts it. Reading the database would roll the journal
/// back, which is a write: loopscope only reads.
const HOT_JOURNAL: &str = "a hot journal lies beside it: a writer stopped mid-transaction, and SQLite must roll \
     that back before the database can be read; loopscope only reads and will not touch it. To recover, open \
     it once with its agent or `sqlite3 FILE 'PRAGMA integrity_check'` with write access; never delete the \
     -journal file (that corrupts the database)";

/// Opens a database for reading only (see the module's notes on WAL).
pub fn open(path: &Path) -> Result<Connection, String> {
    open_for(path).map(|(c, _)| c)
}

/// The connection, and whether it was opened immutable (it must be opened
/// again to see a change).
fn open_for(path: &Path) -> Result<(Connection, bool), String> {
    let shown = crate::sanitize::path(path);
    let mut head = [0u8; 100];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    if n < 100 || &head[..16] != MAGIC {
        return Err(format!("{shown}: not a SQLite database (or a truncated one)"));
    }
    // Bytes 18 and 19 are 2 in WAL mode.
    let wal_mode = head[18] == 2 || head[19] == 2;
    let immutable = wal_mode && !wal_path(path).exists();
    let query = if immutable { "mode=ro&immutable=1" } else { "mode=ro" };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri(path, query), flags).map_err(|e| format!("{shown}: {}", reason(&e)))?;
    let _ = conn.busy_timeout(std::time::Duration::from_secs(2));
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
        .map_err(|e| format!("{shown}: {}", reason(&e)))?;
    Ok((conn, immutable))
}

/// The columns of a table (empty when it does not exist).
fn columns(conn: &Connection, table: &str) -> Vec<String> {
    let Ok(mut stmt) = conn.prepare(&format!("PRAGMA table_info(\"{table}\")")) else {
        return Vec::new();
    };
    stmt.query_map([], |r| r.get::<_, String>(1))
        .map(|rows| rows.flatten().collect())
        .unwrap_or_default()
}

/// Which agent's store a database is, from its tables.
pub fn kind_of(conn: &Connection) -> Result<StoreKind, String> {
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
    Err(format!(
        "a SQLite database, but not an agent's session store loopscope reads (opencode/Kilo, Goose, Crush, OpenClaw); its tables: {}",
        if tables.is_empty() { "none".to_string() } else { tables.join(", ") }
    ))
}

/// A column's expression: itself if the table has it, else NULL (older
/// and newer schemas differ in optional columns).
fn col(cols: &[String], name: &str) -> String {
    if cols.iter().any(|c| c == name) {
        format!("\"{name}\"")
    } else {
        "NULL".to_string()
    }
}

/// A time column as ms since the epoch, whatever it holds (ms, seconds,
/// or SQLite's `YYYY-MM-DD HH:MM:SS`).
fn millis(expr: &str) -> String {
    format!(
        "(CASE WHEN typeof({expr}) = 'text' THEN CAST(strftime('%s', {expr}) AS INTEGER) * 1000 \
         WHEN {expr} < 100000000000 THEN {expr} * 1000 ELSE {expr} END)"
    )
}

/// The sessions of a store, newest first.
pub fn sessions(conn: &Connection, kind: StoreKind) -> Result<Vec<StoreSession>, String> {
    sessions_where(conn, kind, None)
}

/// One session of a store by id (None: the newest), without listing the others.
pub fn session(conn: &Connection, kind: StoreKind, id: Option<&str>) -> Result<Option<StoreSession>, String> {
    sessions_where(conn, kind, Some(id.unwrap_or_default())).map(|v| v.into_iter().next())
}

/// The sessions, or with `one` the one with that id (empty: the newest).
fn sessions_where(conn: &Connection, kind: StoreKind, one: Option<&str>) -> Result<Vec<StoreSession>, String> {
    let (table, title, parent, updated) = match kind {
        StoreKind::Opencode => ("session", "title", "parent_id", "time_updated"),
        StoreKind::Goose => ("sessions", "name", "", "updated_at"),
        StoreKind::Crush => ("sessions", "title", "parent_session_id", "updated_at"),
        StoreKind::Openclaw => ("session_windows", "session_key", "", "updated_at"),
    };
    let cols = columns(conn, table);
    if cols.is_empty() {
        return Err(format!(
            "the store has no {table} table (a schema this version does not know)"
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
    let mut stmt = conn.prepare(&sql).map_err(|e| reason(&e))?;
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
        .map_err(|e| reason(&e))?;
    rows.map(|r| r.map_err(|e| reason(&e))).collect()
}

/// The statements that read one kind of store.
#[derive(Clone, Debug)]
struct Queries {
    /// Rows of a session in order, a page after (time, rowid) `?2, ?3`.
    page: String,
    /// For opencode: a message's parts, in order.
    parts: Option<String>,
    /// Rows of a session added (rowid > `?2`) or updated (time ≥ `?3`) since.
    since: Vec<String>,
}

/// Each query gives: rowid, id, update time, the line (NULL when the
/// row is unusable), its size, whether its JSON is valid.
fn queries(conn: &Connection, kind: StoreKind) -> Result<Queries, String> {
    let max = super::max_record();
    let need = |table: &str, wanted: &[&str]| -> Result<Vec<String>, String> {
        let cols = columns(conn, table);
        for w in wanted {
            if !cols.iter().any(|c| c == w) {
                return Err(format!(
                    "the store's {table} table has no {w} column (a schema this version does not know)"
                ));
            }
        }
        Ok(cols)
    };
    let guarded = |data: &str, line: String| {
        format!("CASE WHEN json_valid({data}) AND length({data}) <= {max} THEN {line} END, length({data}), json_valid({data})")
    };
    Ok(match kind {
        StoreKind::Opencode => {
            let m = need("message", &["id", "session_id", "data"])?;
            let p = need("part", &["id", "message_id", "data"])?;
            let (mc, mu) = (col(&m, "time_created"), col(&m, "time_updated"));
            let (pc, pu) = (col(&p, "time_created"), col(&p, "time_updated"));
            let mline = guarded(
                "data",
                format!("json_object('row', 'message', 'time', {mc}, 'data', json_set(data, '$.id', id))"),
            );
            let pline = guarded(
                "data",
                format!("json_object('row', 'part', 'time', {pc}, 'data', json_set(data, '$.id', id, '$.messageID', message_id))"),
            );
            let psession = if p.iter().any(|c| c == "session_id") {
                "session_id = ?1".to_string()
            } else {
                "message_id IN (SELECT id FROM message WHERE session_id = ?1)".to_string()
            };
            Queries {
                page: format!(
                    "SELECT rowid, id, coalesce({mu}, 0), {mline}, coalesce({mc}, 0) FROM message \
                     WHERE session_id = ?1 AND (coalesce({mc}, 0) > ?2 OR (coalesce({mc}, 0) = ?2 AND rowid > ?3)) \
                     ORDER BY coalesce({mc}, 0), rowid LIMIT 256"
                ),
                parts: Some(format!(
                    "SELECT rowid, id, coalesce({pu}, 0), {pline}, 0 FROM part WHERE message_id = ?1 ORDER BY id"
                )),
                since: vec![
                    format!(
                        "SELECT rowid, id, coalesce({mu}, 0), {mline}, 0 FROM message \
                         WHERE session_id = ?1 AND (rowid > ?2 OR coalesce({mu}, 0) >= ?3) ORDER BY coalesce({mu}, 0), rowid"
                    ),
                    format!(
                        "SELECT rowid, id, coalesce({pu}, 0), {pline}, 0 FROM part \
                         WHERE {psession} AND (rowid > ?4 OR coalesce({pu}, 0) >= ?3) ORDER BY coalesce({pu}, 0), rowid"
                    ),
                ],
            }
        }
        StoreKind::Goose => {
            let c = need("messages", &["id", "session_id", "role", "content_json"])?;
            let t = millis(&col(&c, "created_timestamp"));
            let line = guarded(
                "content_json",
                format!(
                    "json_object('row', 'message', 'id', id, 'role', role, 'time', {t}, 'data', json(content_json), \
                     'metadata', CASE WHEN json_valid({md}) THEN json({md}) END)",
                    md = col(&c, "metadata_json")
                ),
            );
            let page = format!(
                "SELECT rowid, id, 0, {line}, rowid FROM messages WHERE session_id = ?1 AND rowid > ?3 ORDER BY rowid LIMIT 256"
            );
            Queries {
                since: vec![format!(
                    "SELECT rowid, id, 0, {line}, 0 FROM messages WHERE session_id = ?1 AND rowid > ?2 ORDER BY rowid"
                )],
                page,
                parts: None,
            }
        }
        StoreKind::Openclaw => {
            need(
                super::openclaw::TRANSCRIPT,
                &["session_id", "seq", "event_json", "event_zstd", "created_at"],
            )?;
            Queries {
                page: super::openclaw::page_sql(max),
                parts: None,
                since: vec![super::openclaw::since_sql(max)],
            }
        }
        StoreKind::Crush => {
            let c = need("messages", &["id", "session_id", "role", "parts"])?;
            let created = millis(&format!("coalesce({}, 0)", col(&c, "created_at")));
            let updated = format!("coalesce({}, 0)", col(&c, "updated_at"));
            let line = guarded(
                "parts",
                format!(
                    "json_object('row', 'message', 'id', id, 'role', role, 'time', {created}, 'model', {model}, \
                     'finished', {fin}, 'summary', {sum}, 'data', json(parts))",
                    model = col(&c, "model"),
                    fin = col(&c, "finished_at"),
                    sum = col(&c, "is_summary_message"),
                ),
            );
            Queries {
                page: format!(
                    "SELECT rowid, id, {updated}, {line}, {created} FROM messages \
                     WHERE session_id = ?1 AND ({created} > ?2 OR ({created} = ?2 AND rowid > ?3)) \
                     ORDER BY {created}, rowid LIMIT 256"
                ),
                parts: None,
                since: vec![format!(
                    "SELECT rowid, id, {updated}, {line}, 0 FROM messages \
                     WHERE session_id = ?1 AND (rowid > ?2 OR {updated} >= ?3) ORDER BY {updated}, rowid"
                )],
            }
        }
    })
}

/// A database shared by the streams of its sessions: one connection, and
/// one look at its files per change however many sessions are followed.
struct Shared {
    path: PathBuf,
    conn: Option<Connection>,
    immutable: bool,
    signature: Signature,
    /// Bumped each time the files changed.
    generation: u64,
    /// The file the connection was (last) opened on.
    opened: Option<Identity>,
    /// Bumped each time the name was found to be another file (the store
    /// deleted and created again): what was read came from the old one.
    incarnation: u64,
    /// The name was seen with no file since the connection was opened.
    missing: bool,
}

impl Shared {
    fn conn(&mut self) -> io::Result<&Connection> {
        let now = identity(&self.path);
        self.missing |= now.is_none();
        if now.is_none() || now != self.opened || self.missing {
            // A connection to a deleted file reads the old file (or fails:
            // "attempt to write a readonly database"); the name is read again.
            self.conn = None;
        }
        if self.conn.is_none() {
            let (conn, immutable) = open_for(&self.path).map_err(io::Error::other)?;
            if self.opened.is_some() && (now != self.opened || self.missing) {
                self.incarnation += 1;
            }
            self.opened = now;
            self.missing = false;
            self.conn = Some(conn);
            self.immutable = immutable;
        }
        Ok(self.conn.as_ref().expect("opened"))
    }

    /// Looks at the files; a change bumps the generation (and an immutable
    /// connection is opened again, to see it).
    fn refresh(&mut self) -> u64 {
        let now = signature(&self.path);
        self.missing |= now.identity.is_none();
        if now != self.signature {
            // A -wal appearing or going changes how the database must be opened.
            if self.immutable || now.wal.is_some() != self.signature.wal.is_some() {
                self.conn = None;
            }
            self.signature = now;
            self.generation += 1;
        }
        self.generation
    }
}

static SHARED: Mutex<Vec<(PathBuf, Weak<Mutex<Shared>>)>> = Mutex::new(Vec::new());

/// The store used last stays open: a scan reads its sessions one after
/// the other, each would otherwise open it again.
static LAST: Mutex<Option<Arc<Mutex<Shared>>>> = Mutex::new(None);

fn shared(path: &Path) -> Arc<Mutex<Shared>> {
    let s = shared_uncached(path);
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
    s
}

fn shared_uncached(path: &Path) -> Arc<Mutex<Shared>> {
    let mut all = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|(_, w)| w.strong_count() > 0);
    if let Some(s) = all.iter().find(|(p, _)| p == path).and_then(|(_, w)| w.upgrade()) {
        return s;
    }
    let s = Arc::new(Mutex::new(Shared {
        path: path.to_path_buf(),
        conn: None,
        immutable: false,
        signature: signature(path),
        generation: 0,
        opened: None,
        incarnation: 0,
        missing: false,
    }));
    all.push((path.to_path_buf(), Arc::downgrade(&s)));
    s
}

/// One session's rows as JSON lines: read to the end (`scan`), then, when
/// followed, what is added or changed.
pub struct SessionRows {
    shared: Arc<Mutex<Shared>>,
    kind: StoreKind,
    session: String,
    queries: Queries,
    header: Option<String>,
    /// The page cursor: the last (time, rowid) read.
    cursor: (i64, i64),
    read_all: bool,
    /// The generation the rows were last read at.
    seen: u64,
    /// The highest rowid read per query of `since`, and the latest update time.
    rowids: Vec<i64>,
    newest: i64,
    /// Rows read at exactly `newest` (a later look at `>= newest` skips them).
    at_newest: HashMap<String, i64>,
    /// Rows read in this look, 1-based, for problem lines.
    row: u64,
    bytes: u64,
    /// The store's incarnation the rows come from (see [`Shared`]).
    incarnation: u64,
    /// What happened to the store's file, not yet taken by [`Self::news`].
    news: Option<StoreNews>,
    /// The file is gone (said once).
    gone: bool,
}

/// What happened to a followed store's file, besides new rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreNews {
    /// The file is gone; what was read is kept.
    Deleted,
    /// Another database has the name now (deleted and created again): its
    /// sessions must be found again and read from their start.
    Replaced,
}

/// One row of a query.
struct Row {
    rowid: i64,
    id: String,
    updated: i64,
    line: Option<String>,
    size: i64,
    valid: bool,
    order: i64,
    /// The row compressed (OpenClaw's entries of 1 KiB and more).
    packed: Option<Vec<u8>>,
}

fn rows(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> io::Result<Vec<Row>> {
    let mut stmt = conn.prepare_cached(sql).map_err(|e| io::Error::other(reason(&e)))?;
    let params = &params[..stmt.parameter_count().min(params.len())];
    let mapped = stmt
        .query_map(params, |r| {
            Ok(Row {
                rowid: r.get(0)?,
                id: match r.get_ref(1)? {
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                    _ => String::new(),
                },
                updated: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                line: r.get(3)?,
                size: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
                valid: r.get::<_, Option<i64>>(5)?.unwrap_or(0) != 0,
                order: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                packed: r.get::<_, Option<Vec<u8>>>(7).ok().flatten(),
            })
        })
        .map_err(|e| io::Error::other(reason(&e)))?;
    mapped
        .collect::<Result<_, _>>()
        .map_err(|e| io::Error::other(reason(&e)))
}

impl SessionRows {
    /// The session `id` of the store at `path` (None: its newest), found on
    /// the store's shared connection.
    pub fn open(path: &Path, id: Option<&str>) -> Result<SessionRows, String> {
        let shown = crate::sanitize::path(path);
        let shared = shared(path);
        let (kind, found, queries, incarnation) = {
            let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
            // A connection kept from before may be immutable, on files
            // that changed since (a store being created): looked at first.
            s.refresh();
            let conn = s.conn().map_err(|e| e.to_string())?;
            let kind = kind_of(conn).map_err(|e| format!("{shown}: {e}"))?;
            let found = session(conn, kind, id).map_err(|e| format!("{shown}: {e}"))?;
            let queries = queries(conn, kind).map_err(|e| format!("{shown}: {e}"))?;
            (kind, found, queries, s.incarnation)
        };
        let s = found.ok_or_else(|| match id {
            Some(id) => format!(
                "{shown}: no session {} in this {} store",
                crate::sanitize::line(id),
                kind.name()
            ),
            None => format!("{shown}: the {} store holds no session", kind.name()),
        })?;
        Ok(SessionRows::with(shared, kind, &s.id, &s.title, queries, incarnation))
    }

    /// A session of the store at `path` (the caller found its kind and id).
    pub fn new(path: &Path, kind: StoreKind, session: &str, title: &str) -> Result<SessionRows, String> {
        let shared = shared(path);
        let (queries, incarnation) = {
            let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
            s.refresh();
            let conn = s.conn().map_err(|e| e.to_string())?;
            (queries(conn, kind)?, s.incarnation)
        };
        Ok(SessionRows::with(shared, kind, session, title, queries, incarnation))
    }

    fn with(
        shared: Arc<Mutex<Shared>>,
        kind: StoreKind,
        session: &str,
        title: &str,
        queries: Queries,
        incarnation: u64,
    ) -> SessionRows {
        let since = queries.since.len();
        let header = json!({"loopscope": "rows", "store": kind.name(), "session": session, "title": title});
        SessionRows {
            shared,
            kind,
            session: session.to_string(),
            queries,
            header: Some(format!("{header}\n")),
            cursor: (i64::MIN, i64::MIN),
            read_all: false,
            seen: 0,
            rowids: vec![0; since.max(1)],
            newest: 0,
            at_newest: HashMap::new(),
            row: 0,
            bytes: 0,
            incarnation,
            news: None,
            gone: false,
        }
    }

    /// What happened to the store's file since the last call, if anything.
    /// After [`StoreNews::Replaced`] these rows give nothing more: the
    /// session is opened again ([`SessionRows::open`]) in the new store.
    pub fn news(&mut self) -> Option<StoreNews> {
        self.news.take()
    }

    /// The store it is read from.
    pub fn kind(&self) -> StoreKind {
        self.kind
    }

    /// Bytes of lines produced so far.
    pub fn offset(&self) -> u64 {
        self.bytes
    }

    /// Writes a row's line (or a problem line for an unusable row).
    fn emit(&mut self, table: &str, r: &Row, out: &mut Vec<u8>) {
        self.row += 1;
        if r.updated >= self.newest {
            if r.updated > self.newest {
                self.newest = r.updated;
                self.at_newest.clear();
            }
            self.at_newest.insert(format!("{table}/{}", r.id), r.updated);
        }
        let unpacked = match (&r.line, &r.packed) {
            (None, Some(frame)) => Some(super::openclaw::unpack(frame, super::max_record())),
            _ => None,
        };
        let line = match (&r.line, unpacked) {
            (Some(l), _) => l.clone(),
            (None, Some(Ok(text))) => text,
            (None, Some(Err(why))) => {
                json!({"loopscope": "problem", "reason": format!("{table} row {}: {why}", r.id)}).to_string()
            }
            (None, None) => {
                let why = if !r.valid {
                    "its JSON is not valid".to_string()
                } else {
                    format!(
                        "it is {}, {}",
                        super::human_bytes(r.size.max(0) as usize),
                        super::overlong_reason()
                    )
                };
                json!({"loopscope": "problem", "reason": format!("{table} row {}: {why}", r.id)}).to_string()
            }
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }

    /// The next page of the first reading; false once all was read.
    fn next_page(&mut self, conn: &Connection, out: &mut Vec<u8>) -> io::Result<bool> {
        let page = rows(
            conn,
            &self.queries.page,
            &[&self.session, &self.cursor.0, &self.cursor.1],
        )?;
        let Some(last) = page.last() else { return Ok(false) };
        self.cursor = (last.order, last.rowid);
        let table = match self.kind {
            StoreKind::Opencode => "message",
            StoreKind::Openclaw => super::openclaw::TRANSCRIPT,
            _ => "messages",
        };
        for r in &page {
            self.rowids[0] = self.rowids[0].max(r.rowid);
            self.emit(table, r, out);
            if let Some(parts) = self.queries.parts.clone() {
                for p in rows(conn, &parts, &[&r.id])? {
                    let last = self.rowids.len() - 1;
                    self.rowids[last] = self.rowids[last].max(p.rowid);
                    self.emit("part", &p, out);
                }
            }
        }
        Ok(true)
    }

    /// What was added or updated since the last look.
    fn since(&mut self, conn: &Connection, out: &mut Vec<u8>) -> io::Result<()> {
        let newest = self.newest;
        let last_part = *self.rowids.last().unwrap_or(&0);
        for (i, sql) in self.queries.since.clone().iter().enumerate() {
            let table = match (self.kind, i) {
                (StoreKind::Opencode, 0) => "message",
                (StoreKind::Opencode, _) => "part",
                (StoreKind::Openclaw, _) => super::openclaw::TRANSCRIPT,
                _ => "messages",
            };
            let found = rows(conn, sql, &[&self.session, &self.rowids[i], &newest, &last_part])?;
            for r in found {
                let key = format!("{table}/{}", r.id);
                let old = r.rowid <= self.rowids[i];
                if old && r.updated == newest && self.at_newest.get(&key) == Some(&r.updated) {
                    continue; // read at the last look already
                }
                self.rowids[i] = self.rowids[i].max(r.rowid);
                self.emit(table, &r, out);
            }
        }
        Ok(())
    }

    /// Reads what is new into `out` (empty: nothing now). The first calls
    /// read the session from its start, a page at a time.
    pub fn poll(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        if let Some(h) = self.header.take() {
            out.extend_from_slice(h.as_bytes());
        }
        let shared = self.shared.clone();
        let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
        if !self.read_all {
            if self.seen == 0 {
                self.seen = s.refresh();
            }
            s.conn()?;
            if s.incarnation != self.incarnation {
                self.news = Some(StoreNews::Replaced);
                return Ok(());
            }
            let conn = s.conn()?;
            if !self.next_page(conn, out)? {
                self.read_all = true;
                // One look for what changed while the pages were read.
                self.seen = u64::MAX;
            }
        } else {
            let generation = s.refresh();
            if generation != self.seen || s.incarnation != self.incarnation {
                self.seen = generation;
                if identity(&s.path).is_none() {
                    // Deleted (perhaps to be created again): said once,
                    // looked at again at the next change.
                    if !std::mem::replace(&mut self.gone, true) {
                        self.news = Some(StoreNews::Deleted);
                    }
                    return Ok(());
                }
                if s.signature.db.is_some_and(|(_, len)| len == 0) {
                    // Being created (SQLite writes its header at the first
                    // commit): looked at again at the next change.
                    return Ok(());
                }
                s.conn()?;
                if s.incarnation != self.incarnation {
                    // Created again: the rows read were the old store's.
                    self.news = Some(StoreNews::Replaced);
                    return Ok(());
                }
                self.gone = false;
                let conn = s.conn()?;
                self.since(conn, out)?;
            }
        }
        self.bytes += (out.len() - start) as u64;
        Ok(())
    }

    /// The first reading is not over: poll again at once.
    pub fn has_more(&self) -> bool {
        !self.read_all
    }
}

/// A session read to its end, as a reader of its lines.
pub struct SessionReader {
    rows: SessionRows,
    buf: Vec<u8>,
    at: usize,
}

impl SessionReader {
    /// Reads `rows` to their end.
    pub fn new(rows: SessionRows) -> SessionReader {
        SessionReader {
            rows,
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl Read for SessionReader {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buf.len() {
            if !self.rows.has_more() {
                return Ok(0);
            }
            self.buf.clear();
            self.at = 0;
            self.rows.poll(&mut self.buf)?;
        }
        let n = into.len().min(self.buf.len() - self.at);
        into[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
