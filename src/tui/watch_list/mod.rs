//! `watch`'s list of sessions: its state (the rows the watching thread
//! reports, the selection, what is new, the filter and the order), its
//! keys, and (render.rs) its drawing, a pure function of the state and the
//! time passed in.

mod render;

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::SystemTime;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use regex::Regex;

use super::prompt::{Edit, Prompt, PromptKind};
use crate::watch::{SessionRow, WatchNews};
use loopscope_core::detect::Detection;

/// What a key asks of the watch screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListAction {
    None,
    /// Open this session in the viewer; at a FIRED row, on its detection's event.
    Open {
        path: PathBuf,
        at: Option<usize>,
    },
    Quit,
    /// Ctrl-C: quit as SIGINT ends a program.
    Interrupt,
}

/// The list's keys: (keys, what they do); the footer and the help are made from it.
pub const KEYS: &[(&str, &str)] = &[
    ("↑/k ↓/j", "select"),
    ("PgUp PgDn Home End", "move by a page, to the ends"),
    (
        "Enter",
        "open the session in the viewer (live; a FIRED one at its detection); q or Esc there comes back",
    ),
    ("n", "select the next session with an unseen detection"),
    (
        "/",
        "filter: only the sessions whose agent, project, file or state match (a regex; empty clears)",
    ),
    (
        "s",
        "sort by the next column: activity, state, agent, project, session, events",
    ),
    ("S", "reverse the order"),
    ("Esc", "clear the filter"),
    ("?", "this help"),
    ("q Ctrl-C", "quit"),
    ("Ctrl-Z", "suspend to the shell (its `fg` brings the list back)"),
];

/// What the list is sorted by (sub-agents stay under their parent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    /// Newest activity first.
    #[default]
    Activity,
    /// Fired first, then streaming, idle, with a problem.
    State,
    Agent,
    Project,
    Session,
    /// Most events first.
    Events,
}

impl SortBy {
    const ALL: [SortBy; 6] = [
        SortBy::Activity,
        SortBy::State,
        SortBy::Agent,
        SortBy::Project,
        SortBy::Session,
        SortBy::Events,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortBy::Activity => "activity",
            SortBy::State => "state",
            SortBy::Agent => "agent",
            SortBy::Project => "project",
            SortBy::Session => "session",
            SortBy::Events => "events",
        }
    }

    fn next(self) -> SortBy {
        let i = SortBy::ALL.iter().position(|s| *s == self).unwrap_or(0);
        SortBy::ALL[(i + 1) % SortBy::ALL.len()]
    }

    fn compare(self, a: &SessionRow, b: &SessionRow) -> Ordering {
        let rank = |r: &SessionRow| match (r.fired, &r.problem) {
            (Some(_), _) => 0,
            (None, Some(_)) => 3,
            (None, None) if r.idle => 2,
            (None, None) => 1,
        };
        let by = match self {
            SortBy::Activity => Ordering::Equal,
            SortBy::State => rank(a).cmp(&rank(b)),
            SortBy::Agent => a.agent.cmp(&b.agent),
            SortBy::Project => a.project.cmp(&b.project),
            SortBy::Session => file_name(&a.path).cmp(&file_name(&b.path)),
            SortBy::Events => b.events.cmp(&a.events),
        };
        by.then(b.last_activity.cmp(&a.last_activity)).then(a.path.cmp(&b.path))
    }
}

#[derive(Debug, Default)]
pub struct WatchList {
    rows: BTreeMap<PathBuf, SessionRow>,
    /// The sessions in display order, filtered (recomputed when rows change).
    order: Vec<PathBuf>,
    selected: usize,
    /// The user moved the selection: it stays on its session as rows move;
    /// until then it stays on the first.
    moved: bool,
    /// Sessions with a detection since they were last opened.
    pub unseen: HashSet<PathBuf>,
    /// The newest announced detection: session label and reason.
    pub last: Option<(String, String)>,
    pub caught_up: bool,
    /// The latest note from the watcher (a folder that does not exist yet).
    pub note: Option<String>,
    pub help: bool,
    pub sort: SortBy,
    pub reverse: bool,
    /// Only the sessions this matches (`/`).
    pub filter: Option<Regex>,
    /// The filter being typed.
    pub prompt: Option<Prompt>,
    filters: Vec<String>,
}

impl WatchList {
    /// Applies the watcher's news; returns a detection to announce.
    pub fn apply(&mut self, news: WatchNews) -> Option<(SessionRow, Detection)> {
        match news {
            WatchNews::Row(row) => {
                let selected = self.order.get(self.selected).cloned();
                self.rows.insert(row.path.clone(), row);
                self.reorder(selected);
                None
            }
            WatchNews::Detection { row, detection } => {
                self.unseen.insert(row.path.clone());
                self.last = Some((row.label(), detection.readable_reason()));
                let selected = self.order.get(self.selected).cloned();
                self.rows.insert(row.path.clone(), row.clone());
                self.reorder(selected);
                Some((row, *detection))
            }
            WatchNews::Note(text) => {
                self.note = Some(text);
                None
            }
            WatchNews::CaughtUp => {
                self.caught_up = true;
                None
            }
        }
    }

    /// Whether the filter keeps a row: its agent, project, file or state match.
    fn keeps(&self, r: &SessionRow) -> bool {
        self.filter.as_ref().is_none_or(|re| {
            [r.agent.as_str(), &r.project, &file_name(&r.path), &r.state()]
                .iter()
                .any(|t| re.is_match(t))
        })
    }

    /// In the chosen order (newest first by default); each sub-agent right
    /// under its parent; with a filter, the rows it keeps (a parent stays
    /// for a child that matches).
    fn reorder(&mut self, keep: Option<PathBuf>) {
        let (sort, reverse) = (self.sort, self.reverse);
        let cmp = |a: &&SessionRow, b: &&SessionRow| {
            let o = sort.compare(a, b);
            if reverse {
                o.reverse()
            } else {
                o
            }
        };
        let children_of = |p: &PathBuf| -> Vec<&SessionRow> {
            let mut c: Vec<&SessionRow> = self.rows.values().filter(|c| c.parent.as_ref() == Some(p)).collect();
            c.sort_by(cmp);
            c
        };
        let mut top: Vec<&SessionRow> = self
            .rows
            .values()
            .filter(|r| r.parent.as_ref().is_none_or(|p| !self.rows.contains_key(p)))
            .collect();
        top.sort_by(cmp);
        let mut order = Vec::with_capacity(self.rows.len());
        for r in top {
            let children = children_of(&r.path);
            let kept: Vec<&SessionRow> = if self.keeps(r) {
                children
            } else {
                children.into_iter().filter(|c| self.keeps(c)).collect()
            };
            if self.keeps(r) || !kept.is_empty() {
                order.push(r.path.clone());
                order.extend(kept.into_iter().map(|c| c.path.clone()));
            }
        }
        self.order = order;
        if let Some(k) = keep.filter(|_| self.moved) {
            if let Some(i) = self.order.iter().position(|p| *p == k) {
                self.selected = i;
            }
        }
        self.selected = self.selected.min(self.order.len().saturating_sub(1));
    }

    /// Sessions shown (with a filter, those it keeps).
    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Sessions watched, shown or not.
    pub fn total(&self) -> usize {
        self.rows.len()
    }

    pub fn selected(&self) -> Option<&SessionRow> {
        self.order.get(self.selected).and_then(|p| self.rows.get(p))
    }

    pub fn row(&self, path: &PathBuf) -> Option<&SessionRow> {
        self.rows.get(path)
    }

    /// The rows in display order, with whether each is a sub-agent shown under its parent.
    pub fn ordered(&self) -> Vec<(bool, &SessionRow)> {
        self.order
            .iter()
            .filter_map(|p| self.rows.get(p))
            .map(|r| (r.parent.as_ref().is_some_and(|p| self.rows.contains_key(p)), r))
            .collect()
    }

    pub fn key(&mut self, key: KeyEvent, page: usize) -> ListAction {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return ListAction::Interrupt;
        }
        if self.prompt.is_some() {
            self.filter_key(key);
            return ListAction::None;
        }
        if self.help {
            self.help = false;
            if matches!(key.code, KeyCode::Char('q')) && key.modifiers.is_empty() {
                return ListAction::Quit;
            }
            return ListAction::None;
        }
        let last = self.order.len().saturating_sub(1);
        if matches!(
            key.code,
            KeyCode::Up | KeyCode::Down | KeyCode::PageUp | KeyCode::PageDown | KeyCode::Home | KeyCode::End
        ) || matches!(key.code, KeyCode::Char('k' | 'j' | 'g' | 'G' | 'n'))
        {
            self.moved = true;
        }
        let selected = self.order.get(self.selected).cloned();
        match key.code {
            KeyCode::Char('q') => return ListAction::Quit,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(page.max(1)),
            KeyCode::PageDown => self.selected = (self.selected + page.max(1)).min(last),
            KeyCode::Home | KeyCode::Char('g') => self.selected = 0,
            KeyCode::End | KeyCode::Char('G') => self.selected = last,
            KeyCode::Char('n') => {
                let n = self.order.len();
                if let Some(i) = (1..=n)
                    .map(|k| (self.selected + k) % n)
                    .find(|&i| self.unseen.contains(&self.order[i]))
                {
                    self.selected = i;
                }
            }
            KeyCode::Char('/') => {
                let now = self.filter.as_ref().map(|re| re.as_str().to_string());
                self.prompt = Some(Prompt::new(PromptKind::Search, now));
            }
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                self.moved = true;
                self.reorder(selected);
            }
            KeyCode::Char('S') => {
                self.reverse = !self.reverse;
                self.moved = true;
                self.reorder(selected);
            }
            KeyCode::Esc if self.filter.is_some() => {
                self.filter = None;
                self.reorder(selected);
            }
            KeyCode::Char('?') | KeyCode::F(1) => self.help = true,
            KeyCode::Enter => {
                if let Some(p) = selected {
                    self.unseen.remove(&p);
                    let at = self.rows.get(&p).and_then(|r| r.fired).map(|(_, e)| e);
                    return ListAction::Open { path: p, at };
                }
            }
            _ => {}
        }
        ListAction::None
    }

    /// A key while the filter is typed: Enter applies it (empty clears it).
    fn filter_key(&mut self, key: KeyEvent) {
        let Some(mut prompt) = self.prompt.take() else {
            return;
        };
        match prompt.key(key, &self.filters, &|_, _| (0, Vec::new())) {
            Edit::Typing => self.prompt = Some(prompt),
            Edit::Cancel => {}
            Edit::Submit(text) => {
                if !text.trim().is_empty() && self.filters.last() != Some(&text) {
                    self.filters.push(text.clone());
                }
                match text.trim() {
                    "" => self.filter = None,
                    t => match super::search::smart_case(t) {
                        Ok(re) => self.filter = Some(re),
                        Err(e) => self.note = Some(format!("bad filter: {e}")),
                    },
                }
                let selected = self.order.get(self.selected).cloned();
                self.reorder(selected);
            }
        }
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The last part of a label, for the header.
fn short(label: &str) -> String {
    label.rsplit('/').next().unwrap_or(label).to_string()
}

/// "4s ago", "3m ago", "2h ago", "5d ago".
pub fn ago(now: SystemTime, then: SystemTime) -> String {
    let s = now.duration_since(then).unwrap_or_default().as_secs();
    match s {
        0..60 => format!("{s}s ago"),
        60..3600 => format!("{}m ago", s / 60),
        3600..86_400 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests;
