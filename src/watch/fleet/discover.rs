//! How the watching thread finds sessions: the roots walked, a changed
//! path traced to the sessions it belongs to or judged as a new one, and
//! what is not a session remembered as it was, to be judged again once it
//! changes.

use super::*;

/// What a file looked like when it was judged not a session: it is judged
/// again once it differs (grown past a first line still being written,
/// rewritten, replaced).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Stamp {
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

/// A file an editor or an atomic writer may keep for a moment (hidden,
/// `~`, `.tmp`, `.part`, `.swp`): once watching, followed only if it stays
/// ([`SETTLE`]), so that a file renamed into place is one session, under
/// its final name, as `scan` of the final files finds it.
fn is_scratch(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let parts: Vec<&str> = name.split('.').collect();
    // write-file-atomic (npm) appends a hash: `x.jsonl.1a2b3c4d`.
    let hashed = parts.len() > 2
        && parts
            .last()
            .is_some_and(|p| p.len() >= 6 && p.bytes().all(|b| b.is_ascii_hexdigit()));
    name.starts_with('.')
        || name.ends_with('~')
        || hashed
        || parts[1..].iter().any(|part| {
            part.starts_with("tmp")
                || part.starts_with("temp")
                || matches!(*part, "part" | "swp" | "swx" | "crdownload")
        })
}

/// A store's side files (`-wal`, `-shm`, `-journal`) stand for the store.
fn store_of(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    ["-wal", "-shm", "-journal"]
        .iter()
        .find_map(|s| text.strip_suffix(s))
        .map_or_else(|| path.to_path_buf(), PathBuf::from)
}

impl Watching {
    /// The root a path is under (the deepest that holds it).
    pub(super) fn root_of(&self, p: &Path) -> Option<Root> {
        self.opts
            .roots
            .iter()
            .filter(|r| p.starts_with(&r.path))
            .max_by_key(|r| r.path.components().count())
            .cloned()
    }

    /// Walks every root for sessions not followed yet, then reads every session.
    pub(super) fn rescan(&mut self) {
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
    pub(super) fn walk_into(&mut self, dir: &Path, agent: Option<Agent>) {
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
    pub(super) fn changed(&mut self, mut paths: Vec<PathBuf>) {
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
    pub(super) fn owners(&self, p: &Path) -> (Vec<PathBuf>, bool) {
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
    pub(super) fn consider_path(&mut self, p: &Path) {
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
    pub(super) fn consider_file(&mut self, f: &Path, agent: Option<Agent>) {
        // What is there when watching begins is read as `scan` reads it.
        if self.caught_up && is_scratch(f) && !self.opts.roots.iter().any(|r| r.path == f) {
            return self.settle(f, agent);
        }
        self.follow_file(f, agent);
    }

    /// A file named like a scratch file is followed once it has stayed
    /// unchanged for [`SETTLE`]; one renamed or deleted before is let go.
    fn settle(&mut self, f: &Path, agent: Option<Agent>) {
        let now = stamp(f);
        self.settling.retain(|s| s.0 != f);
        if now.is_some() {
            self.settling
                .push((f.to_path_buf(), agent, now, Instant::now() + SETTLE));
        }
    }

    fn follow_file(&mut self, f: &Path, agent: Option<Agent>) {
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

    /// A session that is a symbolic link is watched itself (the file it
    /// names, maybe outside every root, is written there), once.
    fn watch_link(&mut self, path: &Path) {
        let (base, _) = formats::source::split(path);
        let is_link = std::fs::symlink_metadata(&base).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && !self.links.contains(&base) {
            if let Some(w) = &mut self.watcher {
                if w.watch(&base, notify::RecursiveMode::NonRecursive).is_ok() {
                    self.links.insert(base);
                }
            }
        }
    }

    pub(super) fn retry_due(&mut self) {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.settling).into_iter().partition(|s| s.3 <= now);
        self.settling = later;
        for (f, agent, was, _) in due {
            match stamp(&f) {
                None => {}
                same if same == was => self.follow_file(&f, agent),
                _ => self.settle(&f, agent),
            }
        }
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
    pub(super) fn consider(&mut self, path: PathBuf, agent: Option<Agent>, parent: Option<PathBuf>) {
        if self.tracked.contains_key(&path) {
            return;
        }
        self.watch_link(&path);
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
        let format = match (readable, crate::reading::open_input(&path, self.opts.format)) {
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
        let telemetry = &self.opts.telemetry;
        let link = (!telemetry.is_empty()).then(|| {
            telemetry.session(
                crate::telemetry::SessionInfo {
                    name: row.label(),
                    id: path.display().to_string(),
                    agent: row.agent.clone(),
                    format: format.map_or("", |f| f.name()).to_string(),
                    profile: self.opts.setup.profile.name().to_string(),
                },
                false,
            )
        });
        let tracked = Tracked {
            followed,
            engine: Engine::new(&self.opts.setup),
            link,
            row,
            // A session that appears while watching is live from its start.
            live: self.caught_up,
            grew_at: None,
            seen: Vec::new(),
        };
        self.tracked.insert(path.clone(), tracked);
        if self.caught_up {
            self.poll(&path);
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
            "a.tmp-x",
            "a.jsonl.tmp4a1b",
            "a.jsonl.1a2b3c4d",
        ] {
            assert!(is_scratch(Path::new(name)), "{name}");
        }
        for name in [
            "a.jsonl",
            "rollout-2026.jsonl.zst",
            "temperature.json",
            "tmp.jsonl",
            "opencode.db",
            "app.log.1",
            "rollout-2026-11-21T09-00-00-0200.jsonl",
        ] {
            assert!(!is_scratch(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_notified_path_is_named_as_its_root_was() {
        let cwd = std::env::current_dir().unwrap();
        let root = |p: &str| Root {
            path: PathBuf::from(p),
            agent: None,
            named: true,
        };
        let named = AsNamed::new(&[root("./runs/"), root("../up/x"), root("/abs/y")]);
        let has = |p: PathBuf, name: &str| named.names(p).contains(&PathBuf::from(name));
        assert!(has(cwd.join("runs/a/b.jsonl"), "./runs/a/b.jsonl"));
        assert!(has(cwd.join("./runs"), "./runs/"));
        assert!(has(cwd.join("../up/x/c.jsonl"), "../up/x/c.jsonl"));
        // Above a root that does not exist yet: its folders are named too.
        assert!(has(cwd.join("../up"), "../up"));
        assert_eq!(
            named.names(PathBuf::from("/abs/y/d.jsonl")),
            [PathBuf::from("/abs/y/d.jsonl")]
        );
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
