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
use crate::event::Event;
use crate::formats::{Decoder, Format, Item, Problem};

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
}

/// Receives feed messages; returns false when nobody listens any more.
pub type Sink = Box<dyn FnMut(Feed) -> bool + Send>;

/// Sends the decoded items as one batch of problems and one of events.
fn send_items(items: &mut Vec<Item>, sink: &mut Sink) -> bool {
    let (mut events, mut problems) = (Vec::new(), Vec::new());
    for item in items.drain(..) {
        match item {
            Item::Event(e, _) => events.push(e),
            Item::Problem(p) => problems.push(p),
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
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    decoder.feed(&buf[..n], &mut items);
                    if !teller.tell(&*decoder, &mut sink) || !send_items(&mut items, &mut sink) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    sink(Feed::Failed(crate::io_reason(&e)));
                    return;
                }
            }
        }
        decoder.finish(&mut items);
        if teller.tell(&*decoder, &mut sink) && send_items(&mut items, &mut sink) && (live || sink(Feed::CaughtUp)) {
            sink(Feed::Ended);
        }
    });
}

/// Makes a fresh decoder: a followed file that starts over gets a new one.
pub type MakeDecoder = Box<dyn Fn() -> Box<dyn Decoder> + Send>;

/// Follows `path` on a thread until the sink stops listening: the content
/// already there first (then `CaughtUp`), then every append as it lands.
/// A half-written last line waits for its newline. Formats whose writers
/// rewrite the whole file are re-read whole on every change instead.
pub fn follow(path: &Path, make: MakeDecoder, mut sink: Sink) {
    let path: PathBuf = path.to_path_buf();
    thread::spawn(move || {
        let (wake_tx, wake) = mpsc::channel::<()>();
        // Watch the directory, not the file: rotation and re-creation are
        // directory events, and the file may not exist yet.
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let watcher = notify::recommended_watcher(move |_res: notify::Result<notify::Event>| {
            let _ = wake_tx.send(());
        })
        .and_then(|mut w| w.watch(&dir, notify::RecursiveMode::NonRecursive).map(|_| w));
        // Without notifications (some network filesystems), polling still works.
        let _watcher = watcher.ok();
        let mut follower = Follower::new(&path);
        let mut decoder = make();
        let mut teller = FormatTeller(None);
        let mut items = Vec::new();
        let mut caught_up = false;
        // An error (permission denied, an I/O error) is said once, and
        // polling backs off while it lasts, up to every few seconds.
        let mut failing: Option<String> = None;
        let mut backoff = POLL;
        loop {
            let changes = match follower.poll() {
                Ok(c) => {
                    failing = None;
                    backoff = POLL;
                    c
                }
                Err(e) => {
                    let msg = format!("{}: {}", crate::sanitize::path(&path), crate::io_reason(&e));
                    if failing.as_ref() != Some(&msg) && !sink(Feed::Failed(msg.clone())) {
                        return;
                    }
                    failing = Some(msg);
                    thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            let whole = decoder.rewrites_whole_file();
            let mut changed = false;
            for change in changes {
                match change {
                    Change::Bytes(_) if whole => changed = true,
                    Change::Bytes(b) => decoder.feed(&b, &mut items),
                    // A rewrite is how these formats grow: read the new version whole.
                    Change::News(FileNews::Truncated | FileNews::Replaced) if whole => changed = true,
                    Change::News(news) => {
                        // A replaced file's unfinished last line is all there will be.
                        if news == FileNews::Replaced {
                            decoder.finish(&mut items);
                        }
                        if matches!(news, FileNews::Replaced | FileNews::Truncated) {
                            decoder = make();
                        }
                        if !send_items(&mut items, &mut sink) || !sink(Feed::File(news)) {
                            return;
                        }
                    }
                }
            }
            if changed {
                // Bounded: a document past the record limit is reported by the decoder.
                let mut all = Vec::new();
                let read = std::fs::File::open(&path)
                    .and_then(|f| f.take(crate::formats::max_record() as u64 + 1).read_to_end(&mut all));
                if read.is_ok() {
                    decoder.reread(&all, &mut items);
                }
            }
            if !teller.tell(&*decoder, &mut sink) || !send_items(&mut items, &mut sink) {
                return;
            }
            if follower.has_more() {
                continue;
            }
            if !caught_up {
                caught_up = true;
                if !sink(Feed::CaughtUp) {
                    return;
                }
            }
            // Wake on a notification or after the polling interval, then
            // take every notification that piled up.
            if let Err(mpsc::RecvTimeoutError::Disconnected) = wake.recv_timeout(POLL) {
                thread::sleep(POLL);
            }
            while wake.try_recv().is_ok() {}
        }
    });
}
