//! The watching thread behind `watch`: every session under the roots
//! followed at once, woken by file notifications only. Each session keeps
//! its reader's position, its importer's state and its detectors' state,
//! never its events, and lets go of its file once quiet; an idle fleet
//! costs no wakeup at all.
//!
//! A session is never lost, whatever order the writes land in: a changed
//! path that belongs to no session is judged again (a file seen before its
//! first newline, or rewritten, renamed or replaced since it was judged no
//! session); a new folder is watched before it is walked, so a file made
//! in it meanwhile is found by one or the other; a store or a folder that
//! holds several sessions is listed again on each change; a session that
//! is a symbolic link is watched itself; a path notified from a relative
//! root is named as the root is; and when the kernel says notifications
//! were lost, everything is looked at again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use notify::Watcher;

use super::{project_of, Root, SessionRow, WatchNews, WatchOptions, WatchSink};
use crate::files::FileId;
use crate::replay::feed::{Followed, Step};
use crate::replay::follow::FileNews;
use crate::sessions::{self, Agent};
use loopscope_core::detect::Detection;
use loopscope_core::engine::Engine;
use loopscope_core::formats::{self, Item};

/// Without notifications (or once the kernel's watch limit is reached),
/// how often everything is looked at.
pub const POLL_FALLBACK: Duration = Duration::from_secs(1);
/// A session's file is gone (what was read stays in the list).
const DELETED: &str = "deleted";
/// A session that grew this recently keeps its file open.
const HOT: Duration = Duration::from_secs(10);
/// The least time between two looks at every session's timers (idle,
/// resting), so sessions going quiet one after another cost one look.
const TICK_SPACING: Duration = Duration::from_millis(250);
/// How soon a store that could not be listed (being written) is tried again.
const RETRY: Duration = Duration::from_secs(1);
/// How long a file named like a scratch file (`.x.jsonl`, `x.jsonl.tmp`)
/// must stay unchanged, once watching, before it is followed: an atomic
/// writer renames it away sooner, one that stays is a session `scan` reads.
const SETTLE: Duration = Duration::from_secs(2);

/// What the notification thread hands the watching thread.
enum Notice {
    /// Paths created, written, renamed or removed.
    Changed(Vec<PathBuf>),
    /// Notifications were lost (the kernel's queue overflowed): look at everything.
    Lost,
    /// A folder could not be watched (the kernel's limit of watches):
    /// notifications no longer tell everything.
    Incomplete(String),
}

struct Tracked {
    followed: Followed,
    engine: Engine,
    row: SessionRow,
    /// Its detections are announced (it was read to where it stood when
    /// watching began, or it is new).
    live: bool,
    /// When it last grew while live; a session quiet for [`HOT`] lets go of
    /// its file descriptor (thousands of sessions must not hold thousands).
    grew_at: Option<Instant>,
    /// Its part in `--otlp` and `--metrics` (None without them).
    link: Option<crate::telemetry::SessionLink>,
    /// What its detections so far were (sorted fingerprints): a file
    /// rewritten whole (in place, or written aside and renamed over it)
    /// is read again from its start, and what it found before is not
    /// announced again.
    seen: Vec<u64>,
}

/// The most detections a session remembers not to announce twice.
const MAX_SEEN: usize = 1 << 16;

/// What tells a detection from another: the detector, where, and why.
fn fingerprint(d: &Detection) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (d.detector, d.event, d.at_char, &d.reason).hash(&mut h);
    h.finish()
}

impl Tracked {
    /// Whether a detection is new to this session (one found again in a
    /// file read anew is not).
    fn first_time(&mut self, d: &Detection) -> bool {
        let print = fingerprint(d);
        match self.seen.binary_search(&print) {
            Ok(_) => false,
            Err(at) => {
                if self.seen.len() < MAX_SEEN {
                    self.seen.insert(at, print);
                }
                true
            }
        }
    }

    /// Quiet: lets go of the file and of what the detectors can work out again.
    fn rest(&mut self) {
        self.followed.rest();
        self.engine.compact();
        self.seen.shrink_to_fit();
    }
}

/// Reading thousands of sessions leaves the heap full of holes their read
/// buffers and decoders left: glibc keeps them resident unless asked to
/// give them back (a fleet of 10,000 is ~10 % smaller for it).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Notifications name paths from the root (the current folder joined to
/// a relative root): a changed path is also named as the user named its
/// root (`runs/a.jsonl`, `./runs/a.jsonl`, `../x/runs/a.jsonl`), as the
/// sessions walked from it are, and as `scan` prints them.
struct AsNamed {
    /// Each relative root and every folder above it within its name (a
    /// root that does not exist yet is looked for from one of them), with
    /// the path notifications give it.
    folders: Vec<(PathBuf, PathBuf)>,
}

impl AsNamed {
    fn new(roots: &[Root]) -> AsNamed {
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut folders: Vec<(PathBuf, PathBuf)> = roots
            .iter()
            .filter(|r| r.path.is_relative())
            .flat_map(|r| r.path.ancestors().filter(|a| !a.as_os_str().is_empty()))
            .map(|a| (cwd.join(a), a.to_path_buf()))
            .collect();
        folders.sort();
        folders.dedup();
        AsNamed { folders }
    }

    /// The path as notified, and as named from each relative root it is
    /// under (one of them is the root's: the others belong to no root and
    /// are let go).
    fn names(&self, p: PathBuf) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .folders
            .iter()
            .filter_map(|(abs, named)| {
                let rest = p.strip_prefix(abs).ok()?;
                Some(if rest.as_os_str().is_empty() {
                    named.clone()
                } else {
                    named.join(rest)
                })
            })
            .collect();
        out.push(p);
        out
    }
}

mod discover;

use discover::Stamp;

pub(super) struct Watching {
    opts: WatchOptions,
    sink: WatchSink,
    tracked: BTreeMap<PathBuf, Tracked>,
    /// Paths under the roots that are not sessions, as they were when judged.
    ignored: HashMap<PathBuf, Option<Stamp>>,
    /// Stores that could not be listed, to list again at the time given.
    retry: Vec<(PathBuf, Option<Agent>, Instant)>,
    /// Files named like scratch files, as they were last seen, followed if
    /// still so at the time given ([`SETTLE`]).
    settling: Vec<(PathBuf, Option<Agent>, Option<Stamp>, Instant)>,
    /// Sessions that are symbolic links, watched themselves: a file written
    /// elsewhere is notified there, not in the root.
    links: BTreeSet<PathBuf>,
    caught_up: bool,
    open: bool,
    notices: mpsc::Sender<Notice>,
    watcher: Option<notify::RecommendedWatcher>,
    /// Per root: its recursive watch is in place.
    armed: Vec<bool>,
    /// Folders watched (not recursively) for roots that do not exist yet.
    lookouts: BTreeSet<PathBuf>,
    /// Notifications do not tell everything (there are none, or a folder
    /// could not be watched): everything is looked at every [`POLL_FALLBACK`].
    polling: bool,
    /// When some session's timers (idle, resting) are due next.
    next_tick: Option<Instant>,
    last_tick: Instant,
}

impl Watching {
    fn new(opts: WatchOptions, sink: WatchSink, notices: mpsc::Sender<Notice>) -> Watching {
        let armed = vec![false; opts.roots.len()];
        Watching {
            opts,
            sink,
            tracked: BTreeMap::new(),
            ignored: HashMap::new(),
            retry: Vec::new(),
            settling: Vec::new(),
            links: BTreeSet::new(),
            caught_up: false,
            open: true,
            notices,
            watcher: None,
            armed,
            lookouts: BTreeSet::new(),
            polling: false,
            next_tick: None,
            last_tick: Instant::now(),
        }
    }

    fn send(&mut self, news: WatchNews) {
        if self.open && !(self.sink)(news) {
            self.open = false;
        }
    }

    /// Runs until the sink stops listening.
    pub(super) fn run(opts: WatchOptions, sink: WatchSink) {
        let (tx, rx) = mpsc::channel::<Notice>();
        let mut w = Watching::new(opts, sink, tx);
        w.watcher = w.make_watcher();
        w.polling = w.watcher.is_none();
        for r in w.opts.roots.clone() {
            if !r.path.exists() && r.named {
                let name = r.agent.map_or(String::new(), |a| format!("{}: ", a.name()));
                w.send(WatchNews::Note(format!(
                    "{name}{} does not exist yet; watching for it",
                    loopscope_core::sanitize::path(&r.path)
                )));
            }
        }
        w.catch_up();
        let mut last_poll = Instant::now();
        while w.open {
            let poll_at = w.polling.then(|| last_poll + POLL_FALLBACK);
            let retry_at = w.retry.iter().map(|r| r.2).chain(w.settling.iter().map(|s| s.3)).min();
            let deadline = [w.next_tick, poll_at, retry_at].into_iter().flatten().min();
            // Sleeps until a notification, or the next timer if one is set:
            // with every session idle and at rest, until a notification.
            let first = match deadline {
                None => rx.recv().ok(),
                Some(at) => rx.recv_timeout(at.saturating_duration_since(Instant::now())).ok(),
            };
            let (mut changed, mut lost) = (Vec::new(), false);
            for notice in first.into_iter().chain(rx.try_iter()) {
                match notice {
                    Notice::Changed(paths) => changed.extend(paths),
                    Notice::Lost => lost = true,
                    Notice::Incomplete(why) => {
                        lost = true;
                        if !w.polling {
                            w.polling = true;
                            w.send(WatchNews::Note(format!(
                                "{why}: looking at every session every {} s instead",
                                POLL_FALLBACK.as_secs()
                            )));
                        }
                    }
                }
            }
            if lost || poll_at.is_some_and(|at| at <= Instant::now()) {
                last_poll = Instant::now();
                w.arm();
                w.rescan();
            } else if !changed.is_empty() {
                w.changed(changed);
            }
            w.retry_due();
            if w.next_tick.is_some_and(|at| at <= Instant::now()) {
                w.tick();
            }
        }
    }

    /// Reads every session there is to where it stood when watching began
    /// (only its state is set: `--from-start` announces what it found),
    /// then tells the listener, then reads what was written meanwhile as new.
    fn catch_up(&mut self) {
        self.arm();
        self.rescan();
        self.caught_up = true;
        for t in self.tracked.values_mut() {
            t.live = true;
            t.followed.stop_at(None);
        }
        self.tick();
        self.send(WatchNews::CaughtUp);
        let all: Vec<PathBuf> = self.tracked.keys().cloned().collect();
        for p in &all {
            self.poll(p);
        }
        give_back_freed_memory();
    }

    fn make_watcher(&self) -> Option<notify::RecommendedWatcher> {
        let tx = self.notices.clone();
        let named = AsNamed::new(&self.opts.roots);
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let notice = match res {
                Ok(e) if e.need_rescan() => Notice::Lost,
                Ok(e) if crate::replay::feed::is_change(&e.kind) => {
                    Notice::Changed(e.paths.into_iter().flat_map(|p| named.names(p)).collect())
                }
                Ok(_) => return,
                Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                    Notice::Incomplete("the system's limit of watched folders is reached".to_string())
                }
                Err(_) => Notice::Lost,
            };
            let _ = tx.send(notice);
        })
        .ok()
    }

    /// Watches each root that exists (recursively), and for one that does
    /// not, the nearest folder above it that does, to see it appear. A root
    /// that appears is walked once watched. A folder made while the
    /// watches were being placed sends no notice (`mkdir -p runs/today`:
    /// `today` made before `runs` is watched), so the roots are looked at
    /// again after each placing, until what is watched matches what exists.
    fn arm(&mut self) {
        // Each round follows a folder made in the last one: a bound only
        // against a file system that never stops changing.
        for _ in 0..64 {
            self.arm_once();
            if self.settled() {
                break;
            }
        }
    }

    /// The nearest folder above a root that does not exist, that does.
    fn lookout_of(root: &Path) -> Option<PathBuf> {
        let mut above = root.parent();
        while let Some(a) = above.filter(|a| !a.as_os_str().is_empty()) {
            if a.is_dir() {
                return Some(a.to_path_buf());
            }
            above = a.parent();
        }
        None
    }

    /// Whether every root that exists is watched, and every one that does
    /// not is looked out for from the nearest folder that does.
    fn settled(&self) -> bool {
        self.opts.roots.iter().zip(&self.armed).all(|(root, &armed)| {
            if armed {
                return true;
            }
            if root.path.exists() {
                return false;
            }
            Self::lookout_of(&root.path).is_none_or(|l| {
                self.lookouts.contains(&l)
                    || self
                        .opts
                        .roots
                        .iter()
                        .zip(&self.armed)
                        .any(|(r, a)| *a && l.starts_with(&r.path))
            })
        })
    }

    fn arm_once(&mut self) {
        let mut lookouts = BTreeSet::new();
        for i in 0..self.opts.roots.len() {
            let root = self.opts.roots[i].clone();
            let exists = root.path.exists();
            if self.armed[i] && exists {
                continue;
            }
            self.armed[i] = false;
            if exists {
                // A root that cannot be watched (the watch limit) is looked at by polling.
                let watched = match &mut self.watcher {
                    Some(w) => w.watch(&root.path, notify::RecursiveMode::Recursive).is_ok(),
                    None => false,
                };
                self.polling |= !watched;
                self.armed[i] = true;
                if self.caught_up {
                    self.walk_into(&root.path, root.agent);
                }
                continue;
            }
            if let Some(l) = Self::lookout_of(&root.path) {
                lookouts.insert(l);
            }
        }
        // A folder inside a watched root is watched already (and watching
        // it again, not recursively, would stop the root's watch from
        // following new folders under it).
        let inside = |p: &Path, me: &Self| {
            me.opts
                .roots
                .iter()
                .zip(&me.armed)
                .any(|(r, a)| *a && p.starts_with(&r.path))
        };
        lookouts.retain(|p| !inside(p, self));
        if let Some(w) = &mut self.watcher {
            for gone in self.lookouts.difference(&lookouts) {
                let _ = w.unwatch(gone);
            }
            for new in lookouts.difference(&self.lookouts) {
                let _ = w.watch(new, notify::RecursiveMode::NonRecursive);
            }
        }
        self.lookouts = lookouts;
    }

    /// Reads what is new in one session and runs its detectors.
    fn poll(&mut self, key: &Path) {
        let Some(mut t) = self.tracked.remove(key) else { return };
        let before = t.row.clone();
        let mut found: Vec<Detection> = Vec::new();
        let mut grew = false;
        let announce = t.live || self.opts.from_start;
        let profile = self.opts.setup.profile.name();
        loop {
            let steps = match t.followed.poll() {
                Ok(s) => {
                    if t.row.problem.as_deref() != Some(DELETED) {
                        t.row.problem = None;
                    }
                    s
                }
                Err(e) => {
                    t.row.problem = Some(loopscope_core::io_reason(&e));
                    break;
                }
            };
            for step in steps {
                match step {
                    Step::Items(items) => {
                        for item in items {
                            match item {
                                Item::Event(e, _) => {
                                    grew = true;
                                    t.row.events += 1;
                                    if let Some(link) = t.link.as_mut() {
                                        link.saw(&e);
                                    }
                                    for d in t.engine.push(&e) {
                                        t.row.detections += 1;
                                        t.row.fired.get_or_insert((d.detector, d.event));
                                        if !t.first_time(&d) {
                                            continue;
                                        }
                                        if let (Some(link), true) = (t.link.as_mut(), announce) {
                                            link.detection(&d, &e, profile);
                                        }
                                        found.push(d);
                                    }
                                }
                                Item::Problem(_) => t.row.bad_lines += 1,
                                // Said by `scan`; the list has no column for it.
                                Item::Unknown(_) => {}
                            }
                        }
                    }
                    // Another file under the name, or the same one started
                    // over: a new stream from its start, as `scan` reads it.
                    Step::News(news @ (FileNews::Truncated | FileNews::Replaced)) => {
                        t.engine = Engine::new(&self.opts.setup);
                        t.row.events = 0;
                        t.row.bad_lines = 0;
                        t.row.detections = 0;
                        t.row.fired = None;
                        if news == FileNews::Replaced {
                            t.row.problem = None;
                        }
                    }
                    Step::News(FileNews::Deleted) => t.row.problem = Some(DELETED.to_string()),
                    Step::News(FileNews::Appeared) => t.row.problem = None,
                    Step::News(_) => {}
                }
            }
            if !t.followed.has_more() {
                break;
            }
        }
        // Bytes read, a half-written line included (no second look at the file).
        if t.followed.offset() != t.row.bytes {
            grew = true;
            t.row.bytes = t.followed.offset();
        }
        // What a session held when watching began is not activity: its
        // last activity stays its modification time.
        if grew && t.live {
            t.row.last_activity = SystemTime::now().max(t.row.last_activity);
            t.row.idle = false;
            t.grew_at = Some(Instant::now());
            self.tick_by(Instant::now() + HOT.min(self.opts.idle_after));
        }
        if t.grew_at.is_none_or(|at| at.elapsed() >= HOT) {
            t.rest();
        }
        if let Some(link) = t.link.as_mut() {
            // Counts start over with a file that does.
            let since = |now: u64, then: u64| if now >= then { now - then } else { now };
            link.read(
                crate::telemetry::Read {
                    events: since(t.row.events as u64, before.events as u64),
                    bytes: since(t.row.bytes, before.bytes),
                    bad_lines: since(t.row.bad_lines as u64, before.bad_lines as u64),
                },
                t.live,
            );
            if t.row.problem.as_deref() == Some(DELETED) && before.problem.as_deref() != Some(DELETED) {
                link.finish();
            }
        }
        let new_problem = match (&t.row.problem, &before.problem) {
            (Some(p), None) => Some(format!("{}: {p}", loopscope_core::sanitize::path(&t.row.path))),
            _ => None,
        };
        let row = t.row.clone();
        self.tracked.insert(key.to_path_buf(), t);
        if let Some(note) = new_problem {
            self.send(WatchNews::Note(note));
        }
        if row != before || !self.caught_up {
            self.send(WatchNews::Row(row.clone()));
        }
        if announce {
            for d in found {
                self.send(WatchNews::Detection {
                    row: row.clone(),
                    detection: Box::new(d),
                });
            }
        }
    }

    /// The timers are looked at by `at` at the latest.
    fn tick_by(&mut self, at: Instant) {
        let at = at.max(self.last_tick + TICK_SPACING);
        self.next_tick = Some(self.next_tick.map_or(at, |t| t.min(at)));
    }

    /// Sessions that stopped growing for `idle_after` are idle, and those
    /// quiet for [`HOT`] let go of their file; the next such moment is
    /// when this runs again (never, while every session is idle and at rest).
    fn tick(&mut self) {
        let idle_after = self.opts.idle_after;
        let (now, clock) = (Instant::now(), SystemTime::now());
        self.last_tick = now;
        let mut next: Option<Instant> = None;
        let mut changed = Vec::new();
        for t in self.tracked.values_mut() {
            let quiet = clock.duration_since(t.row.last_activity).unwrap_or_default();
            let idle = quiet >= idle_after;
            if idle != t.row.idle {
                t.row.idle = idle;
                changed.push(t.row.clone());
            }
            let mut due = (!idle).then(|| now + (idle_after - quiet));
            if t.followed.holds_file() {
                match t.grew_at.map(|at| at + HOT).filter(|at| *at > now) {
                    Some(at) => due = Some(due.map_or(at, |d| d.min(at))),
                    None => t.rest(),
                }
            }
            next = match (next, due) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        self.next_tick = next.map(|at| at.max(now + TICK_SPACING));
        for row in changed {
            self.send(WatchNews::Row(row));
        }
    }
}

#[cfg(test)]
mod tests;
