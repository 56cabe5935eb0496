//! Reading one session of a store: a connection shared by every session
//! followed in it, its rows a page at a time, and what changed since.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use rusqlite::Connection;

use super::queries::{queries, Queries};
use super::*;
use crate::formats;

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
    fn conn(&mut self) -> Result<&Connection, Error> {
        let now = identity(&self.path);
        self.missing |= now.is_none();
        if now.is_none() || now != self.opened || self.missing {
            // A connection to a deleted file reads the old file (or fails:
            // "attempt to write a readonly database"); the name is read again.
            self.conn = None;
        }
        if self.conn.is_none() {
            let (conn, immutable) = open_for(&self.path)?;
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
    /// The longest row read (a longer one is a problem line).
    max_record: usize,
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
    /// the store's shared connection; a row over `max_record` bytes is a
    /// problem line.
    /// Its error keeps the kind: the file's I/O error, an unknown schema
    /// ([`ErrorKind::UnsupportedFormat`]), a session that is not there
    /// ([`ErrorKind::NotFound`]).
    pub fn open(path: &Path, id: Option<&str>, max_record: usize) -> Result<SessionRows, Error> {
        let shown = crate::sanitize::path(path);
        let shared = shared(path);
        let (kind, found, queries, incarnation) = {
            let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
            // A connection kept from before may be immutable, on files
            // that changed since (a store being created): looked at first.
            s.refresh();
            let conn = s.conn()?;
            let at = format!("{shown}: ");
            let kind = kind_of(conn).map_err(|e| e.prefixed(&at))?;
            let found = session(conn, kind, id).map_err(|e| e.prefixed(&at))?;
            let queries = queries(conn, kind, max_record).map_err(|e| e.prefixed(&at))?;
            (kind, found, queries, s.incarnation)
        };
        let s = found.ok_or_else(|| {
            let what = match id {
                Some(id) => format!(
                    "{shown}: no session {} in this {} store",
                    crate::sanitize::line(id),
                    kind.name()
                ),
                None => format!("{shown}: the {} store holds no session", kind.name()),
            };
            Error::new(ErrorKind::NotFound, what)
        })?;
        let mut rows = SessionRows::with(shared, kind, &s.id, &s.title, queries, incarnation);
        rows.max_record = max_record;
        Ok(rows)
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
            max_record: formats::DEFAULT_MAX_RECORD,
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
            (None, Some(frame)) => Some(formats::openclaw::unpack(frame, self.max_record)),
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
                        formats::human_bytes(r.size.max(0) as usize),
                        formats::overlong_reason(self.max_record)
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
            StoreKind::Openclaw => formats::openclaw::TRANSCRIPT,
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
                (StoreKind::Openclaw, _) => formats::openclaw::TRANSCRIPT,
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
            s.conn().map_err(io::Error::other)?;
            if s.incarnation != self.incarnation {
                self.news = Some(StoreNews::Replaced);
                return Ok(());
            }
            let conn = s.conn().map_err(io::Error::other)?;
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
                s.conn().map_err(io::Error::other)?;
                if s.incarnation != self.incarnation {
                    // Created again: the rows read were the old store's.
                    self.news = Some(StoreNews::Replaced);
                    return Ok(());
                }
                self.gone = false;
                let conn = s.conn().map_err(io::Error::other)?;
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
