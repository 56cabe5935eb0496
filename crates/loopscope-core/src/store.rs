//! Where a viewed stream's events live. Recent events stay decoded in
//! memory; once they pass a budget, the oldest blocks are written as native
//! JSONL to a temporary file (unlinked at once, so nothing is left behind)
//! and read back a block at a time when a seek replays them. Memory then
//! stays bounded however long the log is; the log itself is never written.
//!
//! The spool is bounded too: at most its limit ([`DEFAULT_MAX_SPOOL`] unless
//! [`Tape::with_max_spool`](crate::Tape::with_max_spool) sets one: `--max-spool`),
//! and never so much that the temporary folder's disk would keep less than
//! `DISK_RESERVE` free. Past either, the store keeps no more events (a
//! 91 KB zstd file that expands to a gigabyte is cut, said, and viewed up
//! to there) and says why (`EventStore::cut`).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};

use crate::event::{Event, EventKind};

/// Events per block: the unit written out and read back.
const BLOCK: usize = 1024;
/// Decoded events kept in memory (an estimate of their size) before the
/// oldest blocks go to the spool file.
pub(crate) const HOT_BUDGET: usize = 32 << 20;

/// The default of `--max-spool`: 1 GiB. A store's limit is its own
/// (`EventStore::with_limits`, [`Tape::with_max_spool`](crate::Tape::with_max_spool)),
/// not a setting of the process.
pub const DEFAULT_MAX_SPOOL: u64 = 1 << 30;
/// What a spool leaves free on its disk at least (or a tenth of the disk,
/// if that is less).
pub(crate) const DISK_RESERVE: u64 = 1 << 30;

/// Where and why a store stopped keeping events.
#[derive(Clone, Debug, PartialEq)]
pub struct Cut {
    /// Events kept: the stream is shown up to here.
    pub at: usize,
    /// What stopped it, said to the user.
    pub why: String,
}

enum Block {
    Hot(Vec<Event>),
    /// `len` bytes at `offset` of the spool file, `count` events.
    Cold {
        offset: u64,
        len: usize,
    },
}

/// A stream's events, in memory up to a budget and spooled to an anonymous temporary file past it.
pub(crate) struct EventStore {
    blocks: Vec<Block>,
    len: usize,
    /// Estimated bytes of the hot blocks.
    hot_bytes: usize,
    /// The first block still hot (all before it are cold).
    first_hot: usize,
    spool: Option<Spool>,
    /// The last cold block read back, for sequential replays.
    cache: RefCell<Option<(usize, Vec<Event>)>>,
    budget: usize,
    max_spool: u64,
    cut: Option<Cut>,
}

struct Spool {
    file: File,
    end: u64,
}

impl Default for EventStore {
    fn default() -> EventStore {
        EventStore::with_budget(HOT_BUDGET)
    }
}

/// A rough size of an event in memory: its text and fields plus overhead.
fn weight(e: &Event) -> usize {
    let text = match &e.kind {
        EventKind::Reasoning { text } | EventKind::Content { text } | EventKind::Note { text } => text.len(),
        EventKind::Prompt { text } => text.as_ref().map_or(0, String::len),
        EventKind::ToolCall { name, args, .. } => name.len() + json_weight(args),
        EventKind::ToolResult { output, .. } => output.as_ref().map_or(0, json_weight),
        _ => 0,
    };
    160 + text + e.extra.iter().map(|(k, v)| k.len() + json_weight(v)).sum::<usize>()
}

fn json_weight(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => 32 + s.len(),
        serde_json::Value::Array(a) => 32 + a.iter().map(json_weight).sum::<usize>(),
        serde_json::Value::Object(o) => 64 + o.iter().map(|(k, v)| 32 + k.len() + json_weight(v)).sum::<usize>(),
        _ => 32,
    }
}

impl EventStore {
    /// A store keeping at most `budget` bytes of events in memory.
    pub(crate) fn with_budget(budget: usize) -> EventStore {
        EventStore {
            blocks: Vec::new(),
            len: 0,
            hot_bytes: 0,
            first_hot: 0,
            spool: None,
            cache: RefCell::new(None),
            budget,
            max_spool: DEFAULT_MAX_SPOOL,
            cut: None,
        }
    }

    /// As [`EventStore::with_budget`], spooling at most `max_spool` bytes.
    pub(crate) fn max_spool(&self) -> u64 {
        self.max_spool
    }

    pub(crate) fn with_limits(budget: usize, max_spool: u64) -> EventStore {
        EventStore {
            max_spool,
            ..EventStore::with_budget(budget)
        }
    }

    /// Where the store stopped keeping events, and why (the spool limit,
    /// a disk nearly full): None while it keeps them all.
    pub(crate) fn cut(&self) -> Option<&Cut> {
        self.cut.as_ref()
    }

    /// Events held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no event.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Blocks written out so far (for tests and the status of big logs).
    pub(crate) fn spooled_blocks(&self) -> usize {
        self.first_hot
    }

    /// Adds an event at the end; false when it is not kept (the store was
    /// cut: see [`EventStore::cut`]).
    pub(crate) fn push(&mut self, event: Event) -> bool {
        if self.cut.is_some() {
            return false;
        }
        if self.len.is_multiple_of(BLOCK) {
            self.blocks.push(Block::Hot(Vec::with_capacity(BLOCK)));
        }
        self.hot_bytes += weight(&event);
        if let Some(Block::Hot(v)) = self.blocks.last_mut() {
            v.push(event);
        }
        self.len += 1;
        // Keep the block being filled in memory; spool the oldest full ones.
        while self.hot_bytes > self.budget && self.first_hot + 1 < self.blocks.len() {
            if let Err(e) = self.spool_oldest() {
                // No more room on disk for it: no more events (memory stays
                // bounded too), and the viewer says where and why.
                self.cut = Some(Cut {
                    at: self.len,
                    why: e.to_string(),
                });
                break;
            }
        }
        true
    }

    fn spool_oldest(&mut self) -> io::Result<()> {
        if self.spool.is_none() {
            self.spool = Some(Spool {
                file: anonymous_file()?,
                end: 0,
            });
        }
        let spool = self.spool.as_mut().expect("created above");
        let Block::Hot(events) = &self.blocks[self.first_hot] else {
            unreachable!("blocks before first_hot are cold, the rest hot")
        };
        let mut bytes = Vec::new();
        let mut freed = 0;
        for e in events {
            serde_json::to_writer(&mut bytes, &e.to_json())?;
            bytes.push(b'\n');
            freed += weight(e);
        }
        let size = bytes.len() as u64;
        if spool.end + size > self.max_spool {
            return Err(io::Error::other(format!(
                "the temporary spool reached its limit of {} (--max-spool)",
                crate::formats::human_bytes(self.max_spool as usize)
            )));
        }
        if let Some(free) = free_space(&spool.file) {
            if free.available < size + DISK_RESERVE.min(free.total / 10) {
                return Err(io::Error::other(format!(
                    "the temporary folder's disk has {} free, and the spool leaves at least {} there",
                    crate::formats::human_bytes(free.available as usize),
                    crate::formats::human_bytes(DISK_RESERVE.min(free.total / 10) as usize)
                )));
            }
        }
        spool.file.write_all(&bytes)?;
        self.blocks[self.first_hot] = Block::Cold {
            offset: spool.end,
            len: bytes.len(),
        };
        spool.end += bytes.len() as u64;
        self.hot_bytes -= freed;
        self.first_hot += 1;
        Ok(())
    }

    /// Calls `f` on events `from..to` in order (a seek's replay).
    pub(crate) fn for_each(&self, from: usize, to: usize, mut f: impl FnMut(&Event)) {
        let to = to.min(self.len);
        let mut i = from;
        while i < to {
            let (b, within) = (i / BLOCK, i % BLOCK);
            let end = (to - b * BLOCK).min(BLOCK);
            match &self.blocks[b] {
                Block::Hot(events) => events[within..end].iter().for_each(&mut f),
                Block::Cold { offset, len } => {
                    let mut cache = self.cache.borrow_mut();
                    if cache.as_ref().is_none_or(|(cb, _)| *cb != b) {
                        *cache = Some((b, self.read_block(*offset, *len)));
                    }
                    let events = &cache.as_ref().expect("filled above").1;
                    events[within.min(events.len())..end.min(events.len())]
                        .iter()
                        .for_each(&mut f);
                }
            }
            i = b * BLOCK + end;
        }
    }

    /// Event `i`, decoded (read back from the spool file if needed).
    pub(crate) fn get(&self, i: usize) -> Option<Event> {
        let mut out = None;
        self.for_each(i, i + 1, |e| out = Some(e.clone()));
        out
    }

    fn read_block(&self, offset: u64, len: usize) -> Vec<Event> {
        let Some(spool) = &self.spool else { return Vec::new() };
        let mut bytes = vec![0; len];
        if read_at(&spool.file, &mut bytes, offset).is_err() {
            return Vec::new();
        }
        // The spool is native JSONL: read back by the native reader.
        crate::formats::Decoded::from_bytes(&bytes, &mut crate::formats::native::NativeDecoder::new()).events
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        let n = file.seek_read(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

/// Bytes available to this user, and the size, of a file's filesystem.
struct FreeSpace {
    available: u64,
    total: u64,
}

#[cfg(unix)]
// The fields' types differ by platform (u32 on some): the casts are needed there.
#[allow(clippy::unnecessary_cast)]
fn free_space(file: &File) -> Option<FreeSpace> {
    use std::os::unix::io::AsRawFd;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: fstatvfs fills the struct for an open descriptor, or fails.
    let ok = unsafe { libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) } == 0;
    if !ok {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let st = unsafe { st.assume_init() };
    let unit = st.f_frsize as u64;
    Some(FreeSpace {
        available: (st.f_bavail as u64).saturating_mul(unit),
        total: (st.f_blocks as u64).saturating_mul(unit),
    })
}

#[cfg(not(unix))]
fn free_space(_file: &File) -> Option<FreeSpace> {
    None
}

/// A temporary file nobody else can open: created exclusively in the
/// temporary directory and unlinked at once (the open handle keeps it).
fn anonymous_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    for attempt in 0..100u32 {
        let path = dir.join(format!(".loopscope-spool-{}-{attempt}", std::process::id()));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free name for a temporary file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(i: usize) -> Event {
        match i % 4 {
            0 => Event::reasoning(&format!("thought {i} 思考 🙂 \"quoted\"")).at(i as f64 * 0.5),
            1 => Event::tool_call("read_file", serde_json::json!({"path": format!("f{i}.rs"), "n": i})),
            2 => {
                let mut e = Event::tool_result(i.is_multiple_of(3));
                e.extra.insert("model".into(), serde_json::json!("m"));
                e
            }
            _ => Event::content(&"x".repeat(i % 50)),
        }
    }

    #[test]
    fn spooled_events_read_back_as_they_were() {
        let mut store = EventStore::with_budget(64 * 1024);
        let n = 10_000;
        for i in 0..n {
            store.push(event(i));
        }
        assert!(store.spooled_blocks() > 3, "the budget made it spool");
        assert_eq!(store.len(), n);
        let mut seen = Vec::new();
        store.for_each(0, n, |e| seen.push(e.clone()));
        assert_eq!(seen.len(), n);
        for (i, e) in seen.iter().enumerate() {
            assert_eq!(*e, event(i), "event {i}");
        }
        // Any range, across block boundaries.
        let mut part = Vec::new();
        store.for_each(1000, 3100, |e| part.push(e.clone()));
        assert_eq!(part, seen[1000..3100].to_vec());
        assert_eq!(store.get(5), Some(event(5)));
        assert_eq!(store.get(n), None);
    }

    #[test]
    fn the_spool_stops_at_its_limit_and_the_store_says_where() {
        let mut store = EventStore::with_limits(64 * 1024, 256 * 1024);
        let n = 200_000;
        let kept = (0..n).take_while(|&i| store.push(event(i))).count();
        let cut = store.cut().expect("cut").clone();
        assert!(
            cut.why.contains("--max-spool") && cut.why.contains("256 KiB"),
            "{}",
            cut.why
        );
        assert_eq!(cut.at, kept);
        assert_eq!(store.len(), kept);
        assert!(kept < n / 10, "{kept} kept");
        let spooled = store.spool.as_ref().unwrap().end;
        assert!(spooled <= 256 * 1024, "{spooled} bytes spooled");
        assert!(!store.push(event(0)), "nothing more is kept");
        // What was kept reads back whole.
        let mut seen = 0;
        store.for_each(0, kept, |e| {
            assert_eq!(*e, event(seen));
            seen += 1;
        });
        assert_eq!(seen, kept);
    }
}
