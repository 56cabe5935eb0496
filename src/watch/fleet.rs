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
//! holds several sessions is listed again on each change; and when the
//! kernel says notifications were lost, everything is looked at again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use notify::Watcher;

use super::{project_of, Root, SessionRow, WatchNews, WatchOptions, WatchSink};
use crate::detect::Detection;
use crate::engine::Engine;
use crate::files::FileId;
use crate::formats::{self, Item};
use crate::replay::feed::{Followed, Step};
use crate::replay::follow::FileNews;
use crate::sessions::{self, Agent};

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
}

impl Tracked {
    /// Quiet: lets go of the file and of what the detectors can work out again.
    fn rest(&mut self) {
        self.followed.rest();
        self.engine.compact();
    }
}

/// What a file looked like when it was judged not a session: it is judged
/// again once it differs (grown past a first line still being written,
/// rewritten, replaced).
#[derive(Clone, Debug, PartialEq)]
struct Stamp {
    id: Option<FileId>,
    len: u64,
    modified: Option<SystemTime>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Stamp {
        id: FileId::from_meta(&meta),
        len: if meta.is_dir() { 0 } else { meta.len() },
        modified: sessions::modified(path),
    })
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

/// A file an editor or an atomic writer keeps for a moment (hidden,
/// `~`, `.tmp`, `.part`, `.swp`): not a session, even in a named folder
/// (`scan` of the final files never meets it).
fn is_scratch(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.starts_with('.')
        || name.ends_with('~')
        || name
            .split('.')
            .skip(1)
            .any(|part| matches!(part, "tmp" | "temp" | "part" | "swp" | "swx" | "crdownload"))
}

/// A store's side files (`-wal`, `-shm`, `-journal`) stand for the store.
fn store_of(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|s| text.strip_suffix(s))
        .map_or_else(|| path.to_path_buf(), PathBuf::from)
}

pub(super) struct Watching {
    opts: WatchOptions,
    sink: WatchSink,
    tracked: BTreeMap<PathBuf, Tracked>,
    /// Paths under the roots that are not sessions, as they were when judged.
    ignored: HashMap<PathBuf, Option<Stamp>>,
    /// Stores that could not be listed, to list again at the time given.
    retry: Vec<(PathBuf, Option<Agent>, Instant)>,
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
                    crate::sanitize::path(&r.path)
                )));
            }
        }
        w.catch_up();
        let mut last_poll = Instant::now();
        while w.open {
            let poll_at = w.polling.then(|| last_poll + POLL_FALLBACK);
            let retry_at = w.retry.iter().map(|r| r.2).min();
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
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let notice = match res {
                Ok(e) if e.need_rescan() => Notice::Lost,
                Ok(e) if crate::replay::feed::is_change(&e.kind) => Notice::Changed(e.paths),
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
    /// that appears is walked once watched.
    fn arm(&mut self) {
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
            let mut above = root.path.parent();
            while let Some(a) = above.filter(|a| !a.as_os_str().is_empty()) {
                if a.is_dir() {
                    lookouts.insert(a.to_path_buf());
                    break;
                }
                above = a.parent();
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

    /// The root a path is under (the deepest that holds it).
    fn root_of(&self, p: &Path) -> Option<Root> {
        self.opts
            .roots
            .iter()
            .filter(|r| p.starts_with(&r.path))
            .max_by_key(|r| r.path.components().count())
            .cloned()
    }

    /// Walks every root for sessions not followed yet, then reads every session.
    fn rescan(&mut self) {
        for r in self.opts.roots.clone() {
            if r.path.exists() {
                self.walk_into(&r.path, r.agent);
            }
        }
        let all: Vec<PathBuf> = self.tracked.keys().cloned().collect();
        for p in &all {
            self.poll(p);
        }
    }

    /// Follows the sessions under `dir` (or `dir` itself: a file, a task
    /// folder) not followed yet.
    fn walk_into(&mut self, dir: &Path, agent: Option<Agent>) {
        let files = if dir.is_dir() && !sessions::is_unit(dir) {
            sessions::files_under(dir, agent)
        } else {
            vec![dir.to_path_buf()]
        };
        for f in files {
            self.consider_file(&f, agent);
        }
    }

    /// Handles notifications: the sessions they touch are read, and paths
    /// that belong to no session (or to a store or folder of sessions,
    /// which may hold a new one) are looked into.
    fn changed(&mut self, mut paths: Vec<PathBuf>) {
        paths.sort();
        paths.dedup();
        let mut todo: BTreeSet<PathBuf> = BTreeSet::new();
        let mut unknown: Vec<PathBuf> = Vec::new();
        let mut rearm = false;
        for p in paths {
            // A root (or a folder above one) appeared or went.
            rearm |= self.opts.roots.iter().any(|r| r.path.starts_with(&p)) || self.lookouts.contains(&p);
            let (owners, container) = self.owners(&p);
            if owners.is_empty() || container {
                unknown.push(p);
            }
            todo.extend(owners);
        }
        if rearm {
            self.arm();
        }
        for p in unknown {
            self.consider_path(&p);
        }
        for k in &todo {
            self.poll(k);
        }
    }

    /// The followed sessions a changed path belongs to: itself, the folder
    /// it is in (a task, a conversation), or every stream of the store or
    /// folder it is in or is (a store's `-wal` included); and whether it is
    /// in such a store or folder of streams (which may hold new ones).
    fn owners(&self, p: &Path) -> (Vec<PathBuf>, bool) {
        let mut out = Vec::new();
        let mut container = false;
        let base = store_of(p);
        let root = self.root_of(&base);
        for a in base.ancestors() {
            if root.as_ref().is_some_and(|r| !a.starts_with(&r.path)) || a.as_os_str().is_empty() {
                break;
            }
            if self.tracked.contains_key(a) {
                out.push(a.to_path_buf());
            }
            let prefix = formats::source::join(a, "");
            let streams: Vec<PathBuf> = self
                .tracked
                .range(prefix.clone()..)
                .map(|(k, _)| k)
                .take_while(|k| {
                    k.as_os_str()
                        .as_encoded_bytes()
                        .starts_with(prefix.as_os_str().as_encoded_bytes())
                })
                .cloned()
                .collect();
            container |= !streams.is_empty();
            out.extend(streams);
        }
        (out, container)
    }

    /// A changed path no session is known for: the session it is, is in,
    /// or (a new folder) holds.
    fn consider_path(&mut self, p: &Path) {
        let base = store_of(p);
        let Some(root) = self.root_of(&base) else { return };
        // Inside a task or conversation folder, or opencode's tree: that is the session.
        let unit = base
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(&root.path) && *a != root.path)
            .find(|a| sessions::is_unit(a))
            .map(Path::to_path_buf);
        if let Some(unit) = unit {
            return self.consider_file(&unit, root.agent);
        }
        match std::fs::metadata(&base) {
            Ok(m) if m.is_dir() && !sessions::is_unit(&base) => {
                // Watched before it is walked: a file made in it meanwhile
                // is found by the walk or notified, never neither.
                if let Some(w) = &mut self.watcher {
                    let _ = w.watch(&base, notify::RecursiveMode::Recursive);
                }
                self.walk_into(&base, root.agent);
            }
            Ok(m) if m.is_dir() || root.agent.is_none_or(|a| a.is_session_file(&base)) || base == root.path => {
                self.consider_file(&base, root.agent);
            }
            _ => {}
        }
    }

    /// Follows the streams of a found file (a store's sessions and a
    /// file's sub-agents each as one) not followed yet.
    fn consider_file(&mut self, f: &Path, agent: Option<Agent>) {
        if is_scratch(f) && !self.opts.roots.iter().any(|r| r.path == f) {
            return;
        }
        match sessions::streams_of(f) {
            Ok(streams) => {
                for (path, parent) in streams {
                    self.consider(path, agent, parent);
                }
            }
            // A store being created or written: listed again soon.
            Err(_) => {
                if !self.retry.iter().any(|r| r.0 == f) {
                    self.retry.push((f.to_path_buf(), agent, Instant::now() + RETRY));
                }
            }
        }
    }

    fn retry_due(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.retry).into_iter().partition(|r| r.2 <= now);
        self.retry = later;
        for (f, agent, _) in due {
            self.consider_file(&f, agent);
            let keys: Vec<PathBuf> = self.owners(&f).0;
            for k in keys {
                self.poll(&k);
            }
        }
    }

    /// Starts following `path` if it is a session not followed yet.
    fn consider(&mut self, path: PathBuf, agent: Option<Agent>, parent: Option<PathBuf>) {
        if self.tracked.contains_key(&path) {
            return;
        }
        let now = stamp(&path);
        if self.ignored.get(&path).is_some_and(|was| *was == now) {
            return;
        }
        // An empty file may be a session being created: judged once written.
        if sessions::being_created(&path) {
            return;
        }
        // A file that cannot be read is shown with its problem (the rest
        // go on); one that is not a session is judged again if it changes.
        let (base, _) = formats::source::split(&path);
        let readable = formats::cline::task_file(&base).map_or_else(
            || {
                if base.is_dir() {
                    Ok(())
                } else {
                    std::fs::File::open(&base).map(drop)
                }
            },
            |f| std::fs::File::open(f).map(drop),
        );
        let format = match (readable, formats::open_input(&path, self.opts.format)) {
            (Ok(()), Ok(o)) => Some(o.format),
            (Err(_), _) => None,
            (Ok(()), Err(_)) => {
                self.ignored.insert(path, now);
                return;
            }
        };
        self.ignored.remove(&path);
        // A task or Copilot session folder is followed through its file.
        let follow = formats::cline::task_file(&path)
            .or_else(|| formats::copilot::session_file(&path))
            .unwrap_or_else(|| path.clone());
        let row = SessionRow {
            agent: agent
                .map_or_else(|| format.map_or("?", |f| f.name()), Agent::name)
                .to_string(),
            project: project_of(&follow),
            parent: parent.or_else(|| sessions::parent_session(&path)),
            events: 0,
            bad_lines: 0,
            bytes: 0,
            last_activity: sessions::modified(&path).unwrap_or(SystemTime::UNIX_EPOCH),
            idle: false,
            detections: 0,
            fired: None,
            problem: None,
            path: path.clone(),
        };
        let mut followed = Followed::new(&follow, &crate::replay::feed::make_for(&follow, self.opts.format));
        if !self.caught_up {
            // What it holds now is what it held when watching began;
            // anything written while the others are read is new.
            followed.stop_at(std::fs::metadata(&follow).ok().filter(|m| m.is_file()).map(|m| m.len()));
        }
        let tracked = Tracked {
            followed,
            engine: Engine::new(&self.opts.setup),
            row,
            // A session that appears while watching is live from its start.
            live: self.caught_up,
            grew_at: None,
        };
        self.tracked.insert(path.clone(), tracked);
        if self.caught_up {
            self.poll(&path);
        }
    }

    /// Reads what is new in one session and runs its detectors.
    fn poll(&mut self, key: &Path) {
        let Some(mut t) = self.tracked.remove(key) else { return };
        let before = t.row.clone();
        let mut found: Vec<Detection> = Vec::new();
        let mut grew = false;
        loop {
            let steps = match t.followed.poll() {
                Ok(s) => {
                    if t.row.problem.as_deref() != Some(DELETED) {
                        t.row.problem = None;
                    }
                    s
                }
                Err(e) => {
                    t.row.problem = Some(crate::io_reason(&e));
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
                                    for d in t.engine.push(&e) {
                                        t.row.detections += 1;
                                        t.row.fired.get_or_insert((d.detector, d.event));
                                        found.push(d);
                                    }
                                }
                                Item::Problem(_) => t.row.bad_lines += 1,
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
        let new_problem = match (&t.row.problem, &before.problem) {
            (Some(p), None) => Some(format!("{}: {p}", crate::sanitize::path(&t.row.path))),
            _ => None,
        };
        let announce = t.live || self.opts.from_start;
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
mod tests {
    use super::*;

    #[test]
    fn scratch_files_are_told_by_name() {
        for name in [
            "a.jsonl.tmp",
            ".a.jsonl",
            "a.jsonl~",
            "a.tmp.jsonl",
            "a.json.part",
            ".a.jsonl.swp",
        ] {
            assert!(is_scratch(Path::new(name)), "{name}");
        }
        for name in [
            "a.jsonl",
            "rollout-2026.jsonl.zst",
            "temperature.json",
            "tmp.jsonl",
            "opencode.db",
        ] {
            assert!(!is_scratch(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_store_side_file_stands_for_the_store() {
        assert_eq!(
            store_of(Path::new("/x/opencode.db-wal")),
            PathBuf::from("/x/opencode.db")
        );
        assert_eq!(
            store_of(Path::new("/x/opencode.db-shm")),
            PathBuf::from("/x/opencode.db")
        );
        assert_eq!(store_of(Path::new("/x/a.jsonl")), PathBuf::from("/x/a.jsonl"));
    }
}
