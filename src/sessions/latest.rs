//! `tail --latest`: which session of an agent (or a folder) to follow now.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{being_created, Agent};
use loopscope_core::formats;

/// `tail --latest AGENT|all|DIR`: the most recently written session (of
/// the agent, of any agent, in the folder), then each new session started. Sub-agents are left to `watch`: they
/// belong to the session that started them.
pub struct Latest {
    roots: Vec<PathBuf>,
    /// The agents and their folders; none for a directory.
    agents: Vec<(Agent, Vec<PathBuf>)>,
    /// Files seen so far (a new session is one not among them).
    known: std::collections::HashSet<PathBuf>,
    last_look: Option<std::time::Instant>,
    /// A change was said while it was too soon to look: look at the next call.
    nudged: bool,
}

/// How often `Latest` walks the folders for a new session at most, when
/// something changed in them…
const LATEST_LOOK: Duration = Duration::from_millis(700);
/// …and when nothing was said to change (a missed notification).
const LATEST_ANYWAY: Duration = Duration::from_secs(5);

impl Latest {
    /// Agents' names (their usual folders; `all`, or comma-separated) or a directory.
    pub fn new(spec: &str, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Latest, String> {
        let (roots, agents) = match Agent::parse_list(spec) {
            Ok(agents) => {
                let agents: Vec<(Agent, Vec<PathBuf>)> = agents.into_iter().map(|a| (a, a.locations(env))).collect();
                (agents.iter().flat_map(|(_, r)| r.clone()).collect(), agents)
            }
            Err(_) if Path::new(spec).is_dir() => (vec![PathBuf::from(spec)], Vec::new()),
            Err(e) => return Err(format!("--latest {spec:?}: not a directory, and {e}")),
        };
        Ok(Latest {
            roots,
            agents,
            known: Default::default(),
            last_look: None,
            nudged: false,
        })
    }

    /// The folders new sessions appear in (some may not exist yet).
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.clone()
    }

    /// What is being followed, for messages.
    pub fn describe(&self) -> String {
        match self.agents.as_slice() {
            [(a, _)] => format!("the newest {} session", a.name()),
            all if all.len() == Agent::ALL.len() => "the newest session of any agent".to_string(),
            [] => format!(
                "the newest session in {}",
                self.roots
                    .first()
                    .map_or(String::new(), |r| loopscope_core::sanitize::path(r))
            ),
            some => {
                let names: Vec<&str> = some.iter().map(|(a, _)| a.name()).collect();
                format!("the newest session of {}", names.join(", "))
            }
        }
    }

    /// The session files under the roots now, with their modification times.
    fn sessions_now(&self) -> Vec<(PathBuf, SystemTime)> {
        if self.agents.is_empty() {
            return super::latest_streams(&self.roots, None);
        }
        let mut all: Vec<(PathBuf, SystemTime)> = Vec::new();
        for (agent, roots) in &self.agents {
            all.extend(super::latest_streams(roots, Some(*agent)));
        }
        all
    }

    /// The first call: the most recently written session. Later calls: a
    /// session that appeared since the last look (the newest, if several),
    /// else None (keep following). Looks at most every 0.7 s.
    pub fn next(&mut self, current: Option<&Path>, nudged: bool) -> Option<PathBuf> {
        self.nudged |= nudged;
        let wait = if self.nudged { LATEST_LOOK } else { LATEST_ANYWAY };
        if self.last_look.is_some_and(|t| t.elapsed() < wait) {
            return None;
        }
        self.nudged = false;
        self.last_look = Some(std::time::Instant::now());
        let now = self.sessions_now();
        let mut fresh: Vec<(PathBuf, SystemTime)> = Vec::new();
        for (path, time) in now {
            // A store's session that was updated is not new; one that appeared is.
            if self.known.contains(&path) {
                continue;
            }
            if being_created(&path) {
                continue;
            }
            self.known.insert(path.clone());
            if crate::reading::open_input(&path, formats::FormatChoice::Auto).is_ok() {
                fresh.push((path, time));
            }
        }
        let newest = fresh.into_iter().max_by_key(|(p, t)| (*t, p.clone())).map(|(p, _)| p)?;
        (Some(newest.as_path()) != current).then_some(newest)
    }
}
