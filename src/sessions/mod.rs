//! Where agents keep their sessions, and the walk that turns the paths,
//! directories, globs and agent names a user gives into session files
//! (`scan`, `report`, `watch`, `tail --latest`).
//!
//! Sub-agents get one stream each, named after their parent session:
//! Claude Code ≥ 2.1 writes `<session>/subagents/agent-<id>.jsonl`, older
//! versions `agent-<id>.jsonl` next to the session (its `sessionId` names
//! the parent), gemini-cli `chats/<parent id>/<session>.jsonl`.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use loopscope_core::formats;

mod agents;
mod latest;
pub use agents::Agent;
pub use latest::Latest;

/// The process environment, for [`Agent::locations`].
pub fn process_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// One session file (or Cline/Roo task folder) to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    pub path: PathBuf,
    /// Found in a directory, a glob or an agent's folders (so a file that is
    /// not a session is skipped, not an error), rather than named.
    pub found: bool,
    /// The agent whose folders it was found in.
    pub agent: Option<Agent>,
    /// For a sub-agent: its parent session (a file, or the folder named
    /// after the parent's id).
    pub parent: Option<PathBuf>,
    /// A folder the walk could not read, and why: said and counted as a
    /// failure, never taken for "no sessions here".
    pub unreadable: Option<String>,
    /// The session's title, where its store keeps one.
    pub title: Option<String>,
}

impl Session {
    pub fn named(path: PathBuf) -> Session {
        Session {
            path,
            found: false,
            agent: None,
            parent: None,
            unreadable: None,
            title: None,
        }
    }

    /// How it is shown: its path, or for a sub-agent `PARENT ▸ agent-ID`.
    pub fn label(&self) -> String {
        label(&self.path, self.parent.as_deref())
    }

    /// Sub-agents sort right after their parent.
    fn order_key(&self) -> (PathBuf, bool, PathBuf) {
        match &self.parent {
            Some(p) => (p.clone(), true, self.path.clone()),
            None => (self.path.clone(), false, PathBuf::new()),
        }
    }
}

/// How a session is shown: its path, or for a sub-agent `PARENT ▸ agent-ID`,
/// on one line and terminal-safe.
pub fn label(path: &Path, parent: Option<&Path>) -> String {
    match parent {
        Some(parent) => {
            // A stream inside a container (`store#session`) is named by its id.
            if let (_, Some(id)) = formats::source::split(path) {
                return format!("{} ▸ {id}", parent.display());
            }
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let stem = stem.strip_suffix(".jsonl").unwrap_or(&stem);
            format!(
                "{} ▸ {}",
                loopscope_core::sanitize::path(parent),
                loopscope_core::sanitize::line(stem)
            )
        }
        None => loopscope_core::sanitize::path(path),
    }
}

/// Which files found in folders are kept, by modification time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Freshness {
    /// `--since 7d`.
    pub since: Option<Duration>,
    /// `--newer-than DATE`.
    pub newer_than: Option<SystemTime>,
}

impl Freshness {
    fn cutoff(&self) -> Option<SystemTime> {
        [
            self.since.and_then(|d| SystemTime::now().checked_sub(d)),
            self.newer_than,
        ]
        .into_iter()
        .flatten()
        .max()
    }
}

/// What the user asked to read: paths (files, directories, globs) and agents.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub agents: Vec<Agent>,
    pub fresh: Freshness,
}

/// What a request found.
#[derive(Debug, Default)]
pub struct Collected {
    /// The sessions, in a stable order.
    pub sessions: Vec<Session>,
    /// For standard error: an empty directory, a glob that matched
    /// nothing, an agent with no folder here.
    pub notes: Vec<String>,
    /// Sessions left out as older than `--since` / `--newer-than`: when
    /// nothing else was found, there is nothing new (not nothing at all).
    pub aged_out: usize,
}

/// The sessions a request names, and what to say about them. A named path
/// that does not exist is kept, so that reading it reports the error.
pub fn collect(req: &Request, env: &dyn Fn(&str) -> Option<OsString>) -> Collected {
    let cutoff = req.fresh.cutoff();
    let aged_out = std::cell::Cell::new(0);
    let fresh = |p: &Path| {
        let kept = cutoff.is_none_or(|c| modified(p).is_some_and(|m| m >= c));
        aged_out.set(aged_out.get() + usize::from(!kept));
        kept
    };
    let mut out: Vec<Session> = Vec::new();
    let mut notes = Vec::new();
    for p in &req.paths {
        if p.as_os_str() != "-" && !p.exists() && is_glob(p) {
            let matched = expand_glob(p);
            if matched.is_empty() {
                notes.push(format!("{}: no file matches", loopscope_core::sanitize::path(p)));
                continue;
            }
            let mut found = Walked::default();
            for m in matched {
                if m.is_dir() && !is_unit(&m) {
                    walk(&m, &mut found, 0);
                } else {
                    found.files.push(m);
                }
            }
            push_found(&mut out, &mut notes, p, found, None, &fresh);
        } else if p.is_dir() && !is_unit(p) {
            let mut found = Walked::default();
            walk(p, &mut found, 0);
            push_found(&mut out, &mut notes, p, found, None, &fresh);
        } else {
            out.push(Session::named(p.clone()));
        }
    }
    let mut missing = Vec::new();
    for &agent in &req.agents {
        let places: Vec<PathBuf> = agent.locations(env).into_iter().filter(|d| d.exists()).collect();
        if places.is_empty() {
            missing.push(agent);
        }
        for place in places {
            // A store named by the agent's own variable (OPENCODE_DB) is a file.
            let found = if place.is_file() {
                Walked {
                    files: vec![place.clone()],
                    ..Walked::default()
                }
            } else {
                walk_under(&place, Some(agent))
            };
            push_found(&mut out, &mut notes, &place, found, Some(agent), &fresh);
        }
    }
    let out = expand(out, &mut notes, cutoff, &aged_out);
    // Naming every agent (`all`) is not a claim that each is installed: say
    // so only when none of them has a folder here.
    if missing.len() == req.agents.len() || req.agents.len() < Agent::ALL.len() {
        for agent in missing {
            let looked = agent.locations(env);
            let place = match looked.as_slice() {
                [] => "no home directory".to_string(),
                [one] => loopscope_core::sanitize::path(one),
                [first, rest @ ..] => format!("{} and {} more", loopscope_core::sanitize::path(first), rest.len()),
            };
            notes.push(format!(
                "{}: no session folder here (looked in {place}; set {} to look elsewhere)",
                agent.name(),
                agent.override_var()
            ));
        }
    }
    Collected {
        sessions: out,
        notes,
        aged_out: aged_out.get(),
    }
}

/// A folder read as one session (not walked into): a Cline/Roo task, a
/// Copilot session, an OpenHands conversation, opencode's storage tree.
pub fn is_unit(dir: &Path) -> bool {
    formats::cline::task_file(dir).is_some()
        || formats::copilot::session_file(dir).is_some()
        || formats::folder::is_conversation(dir)
        || formats::folder::is_opencode_tree(dir)
}

/// Whether a path may hold several streams, so it is worth looking into:
/// a database, a Copilot events file, a trajectory, opencode's tree.
pub fn may_hold_streams(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let db = [".db", ".sqlite", ".sqlite3", ".db3"].iter().any(|e| name.ends_with(e));
    db || name == "events.jsonl"
        || (name.contains("trajectory") && name.ends_with(".json"))
        || formats::folder::is_opencode_tree(path)
        || formats::copilot::session_file(path).is_some()
}

/// Each session that holds several streams becomes one per stream: a
/// store's sessions (`db#id`, child sessions after their parent with it as
/// parent), a file's sub-agents. A store that cannot be read is said when it
/// was found in an agent's folder (one named is reported when opened).
fn expand(
    sessions: Vec<Session>,
    notes: &mut Vec<String>,
    cutoff: Option<SystemTime>,
    aged_out: &std::cell::Cell<usize>,
) -> Vec<Session> {
    let mut out = Vec::with_capacity(sessions.len());
    for s in sessions {
        if s.parent.is_some() || !may_hold_streams(&s.path) {
            out.push(s);
            continue;
        }
        let path = formats::copilot::session_file(&s.path).unwrap_or_else(|| s.path.clone());
        match formats::source::streams(&path) {
            Ok(Some(streams)) => {
                for st in streams {
                    let time = st
                        .updated
                        .map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64));
                    if cutoff.is_some_and(|c| time.is_some_and(|t| t < c)) {
                        aged_out.set(aged_out.get() + 1);
                        continue;
                    }
                    out.push(Session {
                        path: st.path,
                        parent: st.parent,
                        title: st.title,
                        ..s.clone()
                    });
                }
            }
            Ok(None) => out.push(s),
            Err(e) => {
                if s.agent.is_some() {
                    notes.push(e.to_string());
                }
                out.push(s);
            }
        }
    }
    out
}

/// The streams a found file holds, each with its parent (a sub-agent's):
/// a store's sessions, a file's sub-agents, or the file itself. An error
/// when a store cannot be listed now (locked, being created): it is not
/// one stream for that.
pub fn streams_of(path: &Path) -> Result<Vec<(PathBuf, Option<PathBuf>)>, String> {
    if !may_hold_streams(path) {
        return Ok(vec![(path.to_path_buf(), None)]);
    }
    let file = formats::copilot::session_file(path).unwrap_or_else(|| path.to_path_buf());
    Ok(match formats::source::streams(&file)? {
        Some(streams) => streams.into_iter().map(|s| (s.path, s.parent)).collect(),
        None => vec![(path.to_path_buf(), None)],
    })
}

/// The top-level streams under some folders with their last change (a
/// store's sessions by their update time): where `tail --latest` looks.
pub fn latest_streams(roots: &[PathBuf], agent: Option<Agent>) -> Vec<(PathBuf, SystemTime)> {
    let mut out = Vec::new();
    for root in roots {
        let files = if root.is_file() {
            vec![root.clone()]
        } else if root.is_dir() {
            files_under(root, agent)
        } else {
            continue;
        };
        for f in files.into_iter().filter(|p| parent_session(p).is_none()) {
            let file = formats::copilot::session_file(&f).unwrap_or_else(|| f.clone());
            match may_hold_streams(&f).then(|| formats::source::streams(&file)) {
                Some(Ok(Some(streams))) => {
                    let file_time = modified(&f);
                    for s in streams.into_iter().filter(|s| s.parent.is_none()) {
                        let time = match s.updated {
                            Some(ms) => Some(std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)),
                            None => file_time,
                        };
                        if let Some(t) = time {
                            out.push((s.path, t));
                        }
                    }
                }
                _ => {
                    if let Some(t) = modified(&f) {
                        out.push((f, t));
                    }
                }
            }
        }
    }
    out
}

/// Adds the files found under `root`, freshest-filtered and in order
/// (sub-agents after their parents), then the folders that could not be read.
fn push_found(
    out: &mut Vec<Session>,
    notes: &mut Vec<String>,
    root: &Path,
    walked: Walked,
    agent: Option<Agent>,
    fresh: &dyn Fn(&Path) -> bool,
) {
    let Walked {
        files: found,
        unreadable,
    } = walked;
    out.extend(unreadable.into_iter().map(|(path, why)| Session {
        unreadable: Some(why),
        found: true,
        agent,
        ..Session::named(path)
    }));
    if found.is_empty() && !out.iter().any(|s| s.unreadable.is_some() && s.path == root) {
        notes.push(format!("{}: no files to scan", loopscope_core::sanitize::path(root)));
        return;
    }
    let total = found.len();
    let mut sessions: Vec<Session> = found
        .into_iter()
        .filter(|f| fresh(f))
        .map(|path| Session {
            parent: parent_session(&path),
            path,
            found: true,
            agent,
            unreadable: None,
            title: None,
        })
        .collect();
    if total > 0 && sessions.is_empty() {
        notes.push(format!(
            "{}: no file changed in that time",
            loopscope_core::sanitize::path(root)
        ));
    }
    sessions.sort_by_key(Session::order_key);
    sessions.dedup_by(|a, b| a.path == b.path);
    out.extend(sessions);
}

/// The modification time; for a task folder, its newest file's; for a
/// stream inside a container (`store.db#session`, `events.jsonl#agent`),
/// the container's (the stream has no file of its own: without this, it
/// was last active in 1970).
pub fn modified(path: &Path) -> Option<SystemTime> {
    let (base, _) = loopscope_core::formats::source::split(path);
    let path = base.as_path();
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    let own = meta.modified().ok();
    std::fs::read_dir(path)
        .ok()?
        .flatten()
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .chain(own)
        .max()
}

fn is_glob(p: &Path) -> bool {
    p.to_str().is_some_and(|s| s.contains(['*', '?', '[']))
}

/// The paths a glob matches, in name order (`**` crosses folders).
fn expand_glob(p: &Path) -> Vec<PathBuf> {
    let Some(pattern) = p.to_str() else { return Vec::new() };
    let Ok(paths) = glob::glob(pattern) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = paths.flatten().filter(|m| m.is_file() || m.is_dir()).collect();
    out.sort();
    out
}

/// What a walk found: files, and folders it could not read (with why).
#[derive(Debug, Default)]
pub struct Walked {
    pub files: Vec<PathBuf>,
    pub unreadable: Vec<(PathBuf, String)>,
}

/// Every regular file under `dir` (task folders as one), depth-limited;
/// symbolic links to folders are not followed (no cycles).
pub fn walk(dir: &Path, out: &mut Walked, depth: usize) {
    if depth > 32 {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            out.unreadable.push((dir.to_path_buf(), loopscope_core::io_reason(&e)));
            return;
        }
    };
    for e in entries {
        let e = match e {
            Ok(e) => e,
            Err(e) => {
                out.unreadable.push((dir.to_path_buf(), loopscope_core::io_reason(&e)));
                continue;
            }
        };
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if is_unit(&path) {
                out.files.push(path);
            } else {
                walk(&path, out, depth + 1);
            }
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            out.files.push(path);
        }
    }
}

/// The parent session of a sub-agent's file, from where the agent puts it.
pub fn parent_session(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let dir = path.parent()?;
    let dir_name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !name.ends_with(".jsonl") {
        return None;
    }
    // Claude Code ≥ 2.1: <project>/<session>/subagents/agent-<id>.jsonl
    if dir_name == "subagents" && name.starts_with("agent-") {
        let session_dir = dir.parent()?;
        let id = session_dir.file_name()?.to_str()?;
        return Some(session_dir.parent()?.join(format!("{id}.jsonl")));
    }
    // Older Claude Code: agent-<id>.jsonl next to the session it names.
    if name.starts_with("agent-") {
        let id = first_line_field(path, "sessionId")?;
        let own = name.trim_end_matches(".jsonl");
        if id.is_empty() || id == own || id.contains(['/', '\\']) {
            return None;
        }
        return Some(dir.join(format!("{id}.jsonl")));
    }
    // gemini-cli: chats/<parent session id>/<session>.jsonl
    let chats = dir.parent()?;
    if chats.file_name().is_some_and(|n| n == "chats") {
        let short: String = dir_name.chars().take(8).collect();
        let parent_file = std::fs::read_dir(chats).ok().and_then(|entries| {
            let mut files: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.is_file()
                        && p.file_stem()
                            .and_then(|s| s.to_str())
                            .is_some_and(|s| !short.is_empty() && (s.ends_with(&short) || s == dir_name))
                })
                .collect();
            files.sort();
            files.pop()
        });
        return Some(parent_file.unwrap_or_else(|| dir.to_path_buf()));
    }
    None
}

/// A string field of the first JSON line of `path`.
fn first_line_field(path: &Path, field: &str) -> Option<String> {
    first_json_lines(path, 1)
        .into_iter()
        .next()?
        .get(field)?
        .as_str()
        .map(str::to_string)
}

/// The first `n` lines of a file that parse as JSON (its first 256 KB
/// read at most; none for a folder or an unreadable file): where sessions
/// say who they are (`sessionId`, `cwd`).
pub fn first_json_lines(path: &Path, n: usize) -> Vec<serde_json::Value> {
    let mut head = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(256 * 1024).read_to_end(&mut head));
    if read.is_err() {
        return Vec::new();
    }
    head.split(|b| *b == b'\n')
        .take(n)
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
}

/// The files under `root` that can be `agent`'s sessions (every file for
/// a folder the user named).
pub fn files_under(root: &Path, agent: Option<Agent>) -> Vec<PathBuf> {
    walk_under(root, agent).files
}

/// [`files_under`], with the folders that could not be read.
pub fn walk_under(root: &Path, agent: Option<Agent>) -> Walked {
    let mut found = Walked::default();
    walk(root, &mut found, 0);
    found.files.retain(|f| agent.is_none_or(|a| a.is_session_file(f)));
    found
}

/// An empty file may be a session being created: it is looked at again
/// later rather than judged now.
pub fn being_created(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0)
}

/// `--newer-than`: a date (midnight UTC) or an RFC 3339 time.
pub fn parse_date(s: &str) -> Result<SystemTime, String> {
    let t = s.trim();
    let parsed = chrono::DateTime::parse_from_rfc3339(t)
        .map(|d| d.timestamp())
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc().timestamp())
        });
    match parsed {
        Ok(secs) if secs >= 0 => Ok(std::time::UNIX_EPOCH + Duration::from_secs(secs as u64)),
        _ => Err(format!(
            "expected a date like 2026-11-01 or 2026-11-01T12:00:00Z, got {t:?}"
        )),
    }
}

/// `--since 7d`: a duration in days, hours, minutes or seconds.
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.len().saturating_sub(1));
    let bad = || format!("expected a duration like 7d, 12h, 30m, got {s:?}");
    let n: u64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3600),
        "m" => n.checked_mul(60),
        "s" => Some(n),
        _ => None,
    };
    secs.map(Duration::from_secs).ok_or_else(bad)
}

#[cfg(test)]
mod tests;
