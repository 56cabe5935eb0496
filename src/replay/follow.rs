//! Following a file by name while something writes it, like
//! `less --follow-name`: new bytes as they are appended, and the file's life
//! — not there yet, truncated, replaced (rotation, delete-and-recreate), or
//! deleted for good. The file is only ever opened for reading.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::files::FileId;

/// What happened to the followed path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileNews {
    /// The path does not exist (yet).
    Waiting,
    /// It exists now, after waiting.
    Appeared,
    /// It got shorter: the writer started over; reading restarts at 0.
    Truncated,
    /// Another file now has the name (rotation or delete-and-recreate);
    /// the old one was read to its end, the new one is read from its start.
    Replaced,
    /// The name is gone; what was read is kept.
    Deleted,
    /// `tail --latest`: the agent started another session, followed from
    /// its start now (a new stream).
    Switched(PathBuf),
    /// `tail --latest`: no session in these folders yet (some may not
    /// exist yet); the first one to appear is followed.
    NoSession(Vec<PathBuf>),
}

/// What one poll found, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Bytes(Vec<u8>),
    News(FileNews),
}

pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    /// Device and inode of the file being read, to tell a replaced file apart.
    id: Option<FileId>,
    offset: u64,
    /// The last news reported, so a state is said once.
    said: Option<FileNews>,
    polled: bool,
    /// The last read stopped at [`CHUNK`]: there is more to read now.
    more: bool,
    /// The handle was let go while the file is quiet ([`Follower::rest`]):
    /// the next look opens it again at `offset` if it is the same file.
    rested: bool,
    /// Reading stops at this length until told otherwise
    /// ([`Follower::stop_at`]); a new file (replaced, truncated) lifts it.
    end: Option<u64>,
}

/// The most one poll reads, so a large backlog streams through in pieces
/// instead of being held whole.
pub const CHUNK: usize = 4 << 20;

impl Follower {
    pub fn new(path: &Path) -> Follower {
        Follower {
            path: path.to_path_buf(),
            file: None,
            id: None,
            offset: 0,
            said: None,
            polled: false,
            more: false,
            rested: false,
            end: None,
        }
    }

    /// Reads no further than `end` bytes of the current file (None: to its
    /// end): `watch` catches a session up to the length it had when
    /// watching began, so what comes after is told apart as new.
    pub fn stop_at(&mut self, end: Option<u64>) {
        self.end = end;
    }

    /// Whether a descriptor of the file is held (see [`Follower::rest`]).
    pub fn holds_file(&self) -> bool {
        self.file.is_some()
    }

    /// Lets go of the open file (`watch` follows thousands of sessions and
    /// cannot hold a descriptor for each quiet one); the next look finds
    /// where it was, or what happened to the file meanwhile.
    pub fn rest(&mut self) {
        if self.file.is_some() && !self.more {
            self.file = None;
            self.rested = true;
        }
    }

    /// A rested follower's look: nothing when the file is as it was left
    /// (no descriptor opened), else the file open again where reading goes on.
    fn wake(&mut self, out: &mut Vec<Change>) -> io::Result<bool> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.say(FileNews::Deleted, out);
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let same = FileId::from_meta(&meta) == self.id;
        let stopped = self.end.is_some_and(|end| self.offset >= end);
        if same && (meta.len() == self.offset || (stopped && meta.len() > self.offset)) {
            return Ok(false);
        }
        self.rested = false;
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.say(FileNews::Deleted, out);
                return Ok(false);
            }
            Err(e) => {
                self.rested = true;
                return Err(e);
            }
        };
        let meta = f.metadata()?;
        if FileId::from_meta(&meta) != self.id {
            // Replaced while rested: what the old file got since is gone with it.
            self.id = FileId::from_meta(&meta);
            self.offset = 0;
            self.end = None;
            self.said = None;
            self.say(FileNews::Replaced, out);
        } else if meta.len() < self.offset {
            self.offset = 0;
            self.end = None;
            self.said = None;
            self.say(FileNews::Truncated, out);
        } else {
            f.seek(SeekFrom::Start(self.offset))?;
        }
        self.file = Some(f);
        Ok(true)
    }

    /// More bytes were left behind by the last poll: poll again at once.
    pub fn has_more(&self) -> bool {
        self.more
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the current file read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn say(&mut self, news: FileNews, out: &mut Vec<Change>) {
        if self.said.as_ref() != Some(&news) {
            self.said = Some(news.clone());
            out.push(Change::News(news));
        }
    }

    /// Opens the path, if it exists, as the file being read from its start.
    fn open(&mut self) -> io::Result<bool> {
        match File::open(&self.path) {
            Ok(f) => {
                self.id = FileId::from_meta(&f.metadata()?);
                self.file = Some(f);
                self.offset = 0;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read_new(&mut self, out: &mut Vec<Change>) -> io::Result<()> {
        self.more = false;
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        let room = self
            .end
            .map_or(CHUNK as u64, |end| end.saturating_sub(self.offset).min(CHUNK as u64));
        let mut bytes = Vec::new();
        let n = loop {
            match file.by_ref().take(room).read_to_end(&mut bytes) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        // Stopped at `end`: nothing more until the limit is lifted.
        self.more =
            n as u64 == room && room == CHUNK as u64 && self.end.is_none_or(|end| self.offset + (n as u64) < end);
        if n > 0 {
            self.offset += n as u64;
            out.push(Change::Bytes(bytes));
        }
        Ok(())
    }

    /// Reads what is new and notices what happened to the path.
    pub fn poll(&mut self) -> io::Result<Vec<Change>> {
        let mut out = Vec::new();
        let first = !self.polled;
        self.polled = true;
        if self.rested && !self.wake(&mut out)? {
            return Ok(out);
        }
        if self.file.is_none() {
            if !self.open()? {
                self.say(FileNews::Waiting, &mut out);
                return Ok(out);
            }
            if !first {
                self.say(FileNews::Appeared, &mut out);
            }
        }
        self.read_new(&mut out)?;
        if self.more {
            // What happened to the name is looked at once this file is read.
            return Ok(out);
        }
        let current = std::fs::metadata(&self.path);
        match current {
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.say(FileNews::Deleted, &mut out),
            Err(e) => return Err(e),
            Ok(meta) if FileId::from_meta(&meta) != self.id => {
                // Rotated or recreated: the old file was read to its end above.
                if self.open()? {
                    self.end = None;
                    self.said = None;
                    self.say(FileNews::Replaced, &mut out);
                    self.read_new(&mut out)?;
                }
            }
            Ok(meta) if meta.len() < self.offset => {
                let file = self.file.as_mut().expect("open");
                file.seek(SeekFrom::Start(0))?;
                self.offset = 0;
                self.end = None;
                self.said = None;
                self.say(FileNews::Truncated, &mut out);
                self.read_new(&mut out)?;
            }
            Ok(_) => {
                if matches!(self.said, Some(FileNews::Deleted | FileNews::Waiting)) {
                    self.said = None;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::io::Write;

    fn append(p: &Path, s: &str) {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .unwrap()
            .write_all(s.as_bytes())
            .unwrap();
    }

    fn text(changes: &[Change]) -> String {
        changes
            .iter()
            .map(|c| match c {
                Change::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                Change::News(n) => format!("<{n:?}>"),
            })
            .collect()
    }

    #[test]
    fn a_file_through_its_whole_life() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.jsonl");
        let mut f = Follower::new(&p);
        assert_eq!(text(&f.poll().unwrap()), "<Waiting>");
        assert_eq!(text(&f.poll().unwrap()), "", "said once");
        append(&p, "a\n");
        assert_eq!(text(&f.poll().unwrap()), "<Appeared>a\n");
        append(&p, "b");
        append(&p, "c\n");
        assert_eq!(text(&f.poll().unwrap()), "bc\n");
        std::fs::write(&p, "x\n").unwrap();
        assert_eq!(text(&f.poll().unwrap()), "<Truncated>x\n");
        // Rotation: the old file gets a last line, then a new file takes the name.
        append(&p, "last\n");
        std::fs::rename(&p, dir.path().join("run.jsonl.1")).unwrap();
        append(&p, "new\n");
        assert_eq!(text(&f.poll().unwrap()), "last\n<Replaced>new\n");
        std::fs::remove_file(&p).unwrap();
        assert_eq!(text(&f.poll().unwrap()), "<Deleted>");
        assert_eq!(text(&f.poll().unwrap()), "");
        append(&p, "again\n");
        assert_eq!(text(&f.poll().unwrap()), "<Replaced>again\n");
    }

    #[test]
    fn a_rested_follower_goes_on_where_it_was_and_sees_what_happened() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.jsonl");
        append(&p, "a\n");
        let mut f = Follower::new(&p);
        assert_eq!(text(&f.poll().unwrap()), "a\n");
        f.rest();
        assert!(f.file.is_none(), "no descriptor held");
        assert_eq!(text(&f.poll().unwrap()), "");
        assert!(f.file.is_none(), "a quiet file is not opened to look at it");
        append(&p, "b\n");
        assert_eq!(text(&f.poll().unwrap()), "b\n");
        f.rest();
        std::fs::write(&p, "x\n").unwrap();
        assert_eq!(text(&f.poll().unwrap()), "<Truncated>x\n");
        f.rest();
        std::fs::rename(&p, dir.path().join("run.jsonl.1")).unwrap();
        append(&p, "new\n");
        assert_eq!(text(&f.poll().unwrap()), "<Replaced>new\n");
        f.rest();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(text(&f.poll().unwrap()), "<Deleted>");
        assert_eq!(text(&f.poll().unwrap()), "");
    }

    #[test]
    fn stopped_at_a_length_it_reads_no_further_until_let_go_or_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.jsonl");
        append(&p, "a\nb\n");
        let mut f = Follower::new(&p);
        f.stop_at(Some(2));
        append(&p, "c\n");
        assert_eq!(text(&f.poll().unwrap()), "a\n");
        assert!(!f.has_more());
        f.rest();
        assert_eq!(text(&f.poll().unwrap()), "", "stopped: nothing read");
        assert!(!f.holds_file(), "and no descriptor opened to find that out");
        f.stop_at(None);
        assert_eq!(text(&f.poll().unwrap()), "b\nc\n");
        // A new file under the name is new from its start: no limit on it.
        f.stop_at(Some(f.offset()));
        std::fs::write(&p, "x\n").unwrap();
        assert_eq!(text(&f.poll().unwrap()), "<Truncated>x\n");
    }

    #[test]
    fn a_large_backlog_comes_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.jsonl");
        std::fs::write(&p, vec![b'x'; CHUNK * 2 + 10]).unwrap();
        let mut f = Follower::new(&p);
        let mut sizes = Vec::new();
        loop {
            for c in f.poll().unwrap() {
                if let Change::Bytes(b) = c {
                    sizes.push(b.len());
                }
            }
            if !f.has_more() {
                break;
            }
        }
        assert_eq!(sizes, vec![CHUNK, CHUNK, 10]);
    }
}
