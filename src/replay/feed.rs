//! Where events come from: a whole input read once (`view`), a stream read
//! until it ends (`tail -`), or a file followed while it grows (`tail FILE`).
//! Each runs on its own thread and hands [`Feed`] messages to a sink, so the
//! TUI and the headless `tail --no-tui` share them.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use notify::Watcher;

use super::follow::{Change, FileNews, Follower};
use loopscope_core::event::Event;
use loopscope_core::formats::drift::UnknownKinds;
use loopscope_core::formats::source::{self, Records};
use loopscope_core::formats::sqlite::StoreNews;
use loopscope_core::formats::{Decoder, Format, Item, Problem};

/// The polling fallback when file notifications are unavailable.
pub const POLL: Duration = Duration::from_millis(250);

/// The longest wait between tries while a file cannot be read.
pub const MAX_BACKOFF: Duration = Duration::from_secs(4);

#[derive(Clone, Debug)]
pub enum Feed {
    /// The importer reading the input (known once detected).
    Format(Format),
    Events(Vec<Event>),
    Problems(Vec<Problem>),
    /// Everything that existed when following began has been sent.
    CaughtUp,
    File(FileNews),
    /// The input ended (a whole file, or standard input closed).
    Ended,
    Failed(String),
    /// Something to tell the user that stops nothing (a judge that did not answer).
    Warning(String),
    /// Bytes read from the input since the last such message (for `--metrics`).
    Read(u64),
}

/// Receives feed messages; returns false when nobody listens any more.
pub type Sink = Box<dyn FnMut(Feed) -> bool + Send>;

/// Sends the decoded items as one batch of problems and one of events;
/// `unknown` tallies records of kinds the importer does not know, so only
/// the first of each kind becomes a problem.
fn send_items(items: &mut Vec<Item>, unknown: &mut UnknownKinds, sink: &mut Sink) -> bool {
    let (mut events, mut problems) = (Vec::new(), Vec::new());
    for item in items.drain(..) {
        match item {
            Item::Event(e, _) => events.push(e),
            Item::Problem(p) => problems.push(p),
            // The viewer lists the first record of each unknown kind.
            Item::Unknown(u) => {
                if unknown.add(&u) {
                    problems.push(u.problem())
                }
            }
        }
    }
    (problems.is_empty() || sink(Feed::Problems(problems))) && (events.is_empty() || sink(Feed::Events(events)))
}

/// Tells the sink the importer's format once it is known.
struct FormatTeller(Option<Format>);

impl FormatTeller {
    fn tell(&mut self, decoder: &dyn Decoder, sink: &mut Sink) -> bool {
        match decoder.format() {
            Some(f) if self.0 != Some(f) => {
                self.0 = Some(f);
                sink(Feed::Format(f))
            }
            _ => true,
        }
    }
}

/// Reads `reader` to its end on a thread. `live` streams (standard input
/// for `tail -`) have no backlog: they are caught up from the start.
pub fn read(mut reader: Box<dyn Read + Send>, mut decoder: Box<dyn Decoder>, live: bool, mut sink: Sink) {
    thread::spawn(move || {
        let mut teller = FormatTeller(None);
        if !teller.tell(&*decoder, &mut sink) || (live && !sink(Feed::CaughtUp)) {
            return;
        }
        let mut buf = vec![0u8; 64 * 1024];
        let mut items = Vec::new();
        let mut unknown = UnknownKinds::default();
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    decoder.feed(&buf[..n], &mut items);
                    if !teller.tell(&*decoder, &mut sink)
                        || !send_items(&mut items, &mut unknown, &mut sink)
                        || !sink(Feed::Read(n as u64))
                    {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    sink(Feed::Failed(loopscope_core::io_reason(&e)));
                    return;
                }
            }
        }
        decoder.finish(&mut items);
        if teller.tell(&*decoder, &mut sink)
            && send_items(&mut items, &mut unknown, &mut sink)
            && (live || sink(Feed::CaughtUp))
        {
            sink(Feed::Ended);
        }
    });
}

/// Makes a fresh decoder: a followed file that starts over gets a new one.
pub type MakeDecoder = std::sync::Arc<dyn Fn() -> Box<dyn Decoder> + Send + Sync>;

/// What one look at a followed file found, in the order it happened.
#[derive(Debug)]
pub enum Step {
    Items(Vec<Item>),
    News(FileNews),
}

/// What a followed stream is read from: a file by name, or records polled
/// from a store or a folder ([`loopscope_core::formats::source`]).
enum Tracker {
    File(Follower),
    Records {
        path: PathBuf,
        /// None until it could be opened (a store being created, locked).
        records: Option<Box<dyn Records>>,
    },
}

/// A file followed by name and the importer reading it, one look at a
/// time: `tail` follows one, `watch` many on one thread.
pub struct Followed {
    tracker: Tracker,
    decoder: Box<dyn Decoder>,
    make: MakeDecoder,
}

/// The importer for a followed path: detected from its first bytes, for
/// `FILE#ID` the sub-agent's stream in it.
pub fn make_for(path: &Path, choice: loopscope_core::formats::FormatChoice) -> MakeDecoder {
    let (base, part) = loopscope_core::formats::source::split(path);
    let hint = base.file_name().map(|n| n.to_string_lossy().into_owned());
    let path = path.to_path_buf();
    std::sync::Arc::new(move || {
        // A store's or a folder's session comes as records of its own: `#ID`
        // chose them, it names no part inside them.
        let part = part.as_deref().filter(|_| !source::is_records(&path));
        Box::new(crate::reading::auto_decoder(choice, hint.as_deref(), part))
    })
}

impl Followed {
    pub fn new(path: &Path, make: &MakeDecoder) -> Followed {
        let tracker = match source::place(path) {
            source::Place::File { path, .. } => Tracker::File(Follower::new(&path)),
            _ => Tracker::Records {
                path: path.to_path_buf(),
                records: None,
            },
        };
        Followed {
            tracker,
            decoder: make(),
            make: make.clone(),
        }
    }

    pub fn path(&self) -> &Path {
        match &self.tracker {
            Tracker::File(f) => f.path(),
            Tracker::Records { path, .. } => path,
        }
    }

    /// The importer's format, once known.
    pub fn format(&self) -> Option<Format> {
        self.decoder.format()
    }

    /// More bytes were left behind by the last look: look again at once.
    pub fn has_more(&self) -> bool {
        match &self.tracker {
            Tracker::File(f) => f.has_more(),
            Tracker::Records { records, .. } => records.as_ref().is_some_and(|r| r.has_more()),
        }
    }

    /// Bytes of the current file read so far.
    pub fn offset(&self) -> u64 {
        match &self.tracker {
            Tracker::File(f) => f.offset(),
            Tracker::Records { records, .. } => records.as_ref().map_or(0, |r| r.offset()),
        }
    }

    /// Reads what is new. A half-written last line waits for its newline;
    /// formats whose writers rewrite the whole file are re-read whole.
    pub fn poll(&mut self) -> io::Result<Vec<Step>> {
        let mut steps = self.poll_source()?;
        if !self.has_more() {
            // Read to the current end: what a file's end would settle is settled.
            let mut items = Vec::new();
            self.decoder.caught_up(&mut items);
            if !items.is_empty() {
                steps.push(Step::Items(items));
            }
        }
        Ok(steps)
    }

    fn poll_source(&mut self) -> io::Result<Vec<Step>> {
        // A store or folder that did not exist yet when following began.
        if let Tracker::File(f) = &self.tracker {
            if f.offset() == 0 && source::is_records(f.path()) {
                self.tracker = Tracker::Records {
                    path: f.path().to_path_buf(),
                    records: None,
                };
            }
        }
        let follower = match &mut self.tracker {
            Tracker::File(f) => f,
            Tracker::Records { path, records } => {
                if records.is_none() {
                    let place = source::place(path);
                    *records = Some(
                        source::open_records(&place, crate::reading::max_record())
                            .map_err(io::Error::other)?
                            .0,
                    );
                }
                let mut bytes = Vec::new();
                let source = records.as_mut().expect("opened");
                source.poll(&mut bytes)?;
                match source.news() {
                    Some(StoreNews::Deleted) => return Ok(vec![Step::News(FileNews::Deleted)]),
                    Some(StoreNews::Replaced) => {
                        // Another store has the name: its session is found
                        // again at the next look and read from its start.
                        *records = None;
                        let mut items = Vec::new();
                        self.decoder.finish(&mut items);
                        self.decoder = (self.make)();
                        let mut steps: Vec<Step> = Vec::new();
                        if !items.is_empty() {
                            steps.push(Step::Items(items));
                        }
                        steps.push(Step::News(FileNews::Replaced));
                        return Ok(steps);
                    }
                    None => {}
                }
                let mut items = Vec::new();
                if !bytes.is_empty() {
                    self.decoder.feed(&bytes, &mut items);
                }
                return Ok(if items.is_empty() {
                    Vec::new()
                } else {
                    vec![Step::Items(items)]
                });
            }
        };
        let changes = follower.poll()?;
        let whole = self.decoder.rewrites_whole_file();
        let mut steps = Vec::new();
        let mut items = Vec::new();
        let mut changed = false;
        for change in changes {
            match change {
                Change::Bytes(_) if whole => changed = true,
                Change::Bytes(b) => self.decoder.feed(&b, &mut items),
                // A rewrite is how these formats grow: read the new version whole.
                Change::News(FileNews::Truncated | FileNews::Replaced) if whole => changed = true,
                Change::News(news) => {
                    // A replaced file's unfinished last line is all there will be.
                    if news == FileNews::Replaced {
                        self.decoder.finish(&mut items);
                    }
                    if matches!(news, FileNews::Replaced | FileNews::Truncated) {
                        self.decoder = (self.make)();
                    }
                    if !items.is_empty() {
                        steps.push(Step::Items(std::mem::take(&mut items)));
                    }
                    steps.push(Step::News(news));
                }
            }
        }
        if changed {
            // Bounded: a document past the record limit is reported by the decoder.
            let mut all = Vec::new();
            let read = std::fs::File::open(follower.path())
                .and_then(|f| f.take(crate::reading::max_record() as u64 + 1).read_to_end(&mut all));
            if read.is_ok() {
                self.decoder.reread(&all, &mut items);
            }
        }
        if !items.is_empty() {
            steps.push(Step::Items(items));
        }
        Ok(steps)
    }

    /// Lets go of the file's descriptor while it is quiet (see [`Follower::rest`]).
    pub fn rest(&mut self) {
        if let Tracker::File(f) = &mut self.tracker {
            f.rest();
        }
    }

    /// Whether a file descriptor is held (a store's shared connection is not counted).
    pub fn holds_file(&self) -> bool {
        matches!(&self.tracker, Tracker::File(f) if f.holds_file())
    }

    /// Reads a file no further than `end` bytes (see [`Follower::stop_at`]);
    /// records (stores, folders) have no such limit.
    pub fn stop_at(&mut self, end: Option<u64>) {
        if let Tracker::File(f) = &mut self.tracker {
            f.stop_at(end);
        }
    }

    /// The stream ended for good (another session is followed now): its
    /// unfinished last line is all there will be.
    pub fn finish(&mut self) -> Vec<Item> {
        let mut items = Vec::new();
        self.decoder.finish(&mut items);
        items
    }
}

/// For `tail --latest`: the file to follow now, given the one followed
/// (None: keep it). Asked after each look once caught up.
/// `nudged`: something changed in the folders since the last call (or
/// there are no notifications), so a walk may find something.
pub type NextSession = Box<dyn FnMut(Option<&Path>, bool) -> Option<PathBuf> + Send>;

/// Whether a notification is a change: opening and reading a file are
/// events too (a follower's own reads among them), which must not wake it.
pub fn is_change(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// Watches the folders a followed file is in: its directory, or for
/// `--latest` the session folders (recursively), which may not exist yet.
fn watch_folders(dirs: &[PathBuf], recursive: bool, wake: mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if res.is_ok_and(|e| is_change(&e.kind)) {
            let _ = wake.send(());
        }
    })
    .ok()?;
    let mode = if recursive {
        notify::RecursiveMode::Recursive
    } else {
        notify::RecursiveMode::NonRecursive
    };
    let mut any = false;
    for d in dirs {
        any |= watcher.watch(d, mode).is_ok();
    }
    any.then_some(watcher)
}

/// Follows `path` on a thread until the sink stops listening: the content
/// already there first (then `CaughtUp`), then every append as it lands.
/// A half-written last line waits for its newline. Formats whose writers
/// rewrite the whole file are re-read whole on every change instead.
pub fn follow(path: &Path, make: MakeDecoder, sink: Sink) {
    let path = path.to_path_buf();
    thread::spawn(move || follow_on(Some(path), Vec::new(), None, make, sink));
}

/// Follows the session `next` names, switching when it names another
/// (`tail --latest`); `roots` are the folders sessions appear in.
pub fn follow_latest(roots: Vec<PathBuf>, mut next: NextSession, make: MakeDecoder, mut sink: Sink) {
    thread::spawn(move || {
        let first = next(None, true);
        if let Some(f) = &first {
            if !sink(Feed::File(FileNews::Switched(f.clone()))) {
                return;
            }
        }
        follow_on(first, roots, Some(next), make, sink)
    });
}

fn follow_on(
    path: Option<PathBuf>,
    roots: Vec<PathBuf>,
    mut next: Option<NextSession>,
    make: MakeDecoder,
    mut sink: Sink,
) {
    let (wake_tx, wake) = mpsc::channel::<()>();
    // Watch the directory, not the file: rotation and re-creation are
    // directory events, and the file may not exist yet.
    let dirs: Vec<PathBuf> = match (&path, roots.is_empty()) {
        (Some(p), true) => vec![match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        }],
        _ => roots.clone(),
    };
    // Without notifications (some network filesystems), polling still works.
    let mut watcher = watch_folders(&dirs, !roots.is_empty(), wake_tx.clone());
    let mut followed = path.as_deref().map(|p| Followed::new(p, &make));
    let mut teller = FormatTeller(None);
    let mut caught_up = false;
    let mut unknown = UnknownKinds::default();
    // An error (permission denied, an I/O error) is said once, and
    // polling backs off while it lasts, up to every few seconds.
    let mut failing: Option<String> = None;
    let mut backoff = POLL;
    let mut waiting_said = false;
    let mut nudged = false;
    // Bytes of the followed file read so far (a file that starts over reads from 0).
    let mut offset = 0;
    loop {
        if let Some(f) = followed.as_mut() {
            let steps = match f.poll() {
                Ok(steps) => {
                    failing = None;
                    backoff = POLL;
                    steps
                }
                Err(e) => {
                    let (shown, reason) = (loopscope_core::sanitize::path(f.path()), loopscope_core::io_reason(&e));
                    // A store's or a folder's own errors name it already.
                    let msg = if reason.starts_with(&shown) {
                        reason
                    } else {
                        format!("{shown}: {reason}")
                    };
                    if failing.as_ref() != Some(&msg) && !sink(Feed::Failed(msg.clone())) {
                        return;
                    }
                    failing = Some(msg);
                    thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            for step in steps {
                let ok = match step {
                    Step::Items(mut items) => send_items(&mut items, &mut unknown, &mut sink),
                    Step::News(news) => sink(Feed::File(news)),
                };
                if !ok {
                    return;
                }
            }
            if !teller.tell(f.decoder.as_ref(), &mut sink) {
                return;
            }
            let now = f.offset();
            if now != offset {
                let read = if now > offset { now - offset } else { now };
                offset = now;
                if !sink(Feed::Read(read)) {
                    return;
                }
            }
            if f.has_more() {
                continue;
            }
        } else if !waiting_said {
            waiting_said = true;
            // A named file that does not exist yet, or an agent with no session yet.
            let news = match next {
                Some(_) => FileNews::NoSession(roots.clone()),
                None => FileNews::Waiting,
            };
            if !sink(Feed::File(news)) {
                return;
            }
        }
        if !caught_up {
            caught_up = true;
            if !sink(Feed::CaughtUp) {
                return;
            }
        }
        if let Some(next) = next.as_mut() {
            let current = followed.as_ref().map(|f| f.path().to_path_buf());
            let nudged = std::mem::take(&mut nudged) || watcher.is_none();
            if let Some(new) = next(current.as_deref(), nudged) {
                if let Some(f) = followed.as_mut() {
                    let mut items = f.finish();
                    if !send_items(&mut items, &mut unknown, &mut sink) {
                        return;
                    }
                }
                if !sink(Feed::File(FileNews::Switched(new.clone()))) {
                    return;
                }
                teller = FormatTeller(None);
                offset = 0;
                followed = Some(Followed::new(&new, &make));
                if watcher.is_none() {
                    watcher = watch_folders(&dirs, true, wake_tx.clone());
                }
                continue;
            }
            // A session folder that did not exist may exist now.
            if watcher.is_none() && dirs.iter().any(|d| d.is_dir()) {
                watcher = watch_folders(&dirs, true, wake_tx.clone());
            }
        }
        // Wake on a notification or after the polling interval, then
        // take every notification that piled up.
        match wake.recv_timeout(POLL) {
            Ok(()) => nudged = true,
            Err(mpsc::RecvTimeoutError::Disconnected) => thread::sleep(POLL),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        while wake.try_recv().is_ok() {
            nudged = true;
        }
    }
}
