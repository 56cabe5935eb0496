//! Format drift: agents change what they write between versions (a new
//! event type, a renamed record), and an importer that silently drops what
//! it does not know turns a newer agent's session into a quiet one. Each
//! importer says which records it knows; any other well-formed record is
//! an [`Unknown`], skipped and counted by kind, and the user is told once
//! per kind that loopscope may be older than the agent.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Problem;

/// The longest kind kept (chars): a hostile file's 10 MB "type" is cut.
pub(crate) const MAX_KIND_CHARS: usize = 64;
/// Distinct kinds counted one by one; more are counted together, so no
/// input makes the tally grow without bound.
pub(crate) const MAX_KINDS: usize = 32;
/// The name the kinds past [`MAX_KINDS`] are counted under.
pub(crate) const OTHER_KINDS: &str = "(other kinds)";

/// A well-formed record of a kind its importer does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unknown {
    /// 1-based line of the record; 0 where the input has no lines (a
    /// whole document).
    pub line: u64,
    /// What the record says it is (`type`, `type/subtype`, a table's name),
    /// at most `MAX_KIND_CHARS` chars.
    pub kind: String,
}

impl Unknown {
    /// The record at `line` of this kind (cut to `MAX_KIND_CHARS`).
    pub fn new(line: u64, kind: &str) -> Unknown {
        let kind = match kind.char_indices().nth(MAX_KIND_CHARS) {
            Some((cut, _)) => format!("{}…", &kind[..cut]),
            None if kind.is_empty() => "(no type)".to_string(),
            None => kind.to_string(),
        };
        Unknown { line, kind }
    }

    /// The problem the viewer and the Python package list for the first
    /// record of a kind (one per kind, not one per record).
    pub fn problem(&self) -> Problem {
        Problem {
            line: self.line,
            reason: format!(
                "records of an unknown kind `{}` skipped from here on; loopscope may be older than this agent",
                self.kind
            ),
            skipped: true,
        }
    }
}

/// How many records of one unknown kind were skipped, from which line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// Records of the kind.
    pub count: u64,
    /// The line of the first one (0: the input has no lines).
    pub first_line: u64,
}

/// Unknown records of one input, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnknownKinds {
    kinds: BTreeMap<String, Tally>,
}

impl UnknownKinds {
    /// Counts one record; true for the first of its kind.
    pub fn add(&mut self, u: &Unknown) -> bool {
        self.add_n(&u.kind, u.line, 1)
    }

    /// Counts `count` records of `kind`, the first at `line`.
    fn add_n(&mut self, kind: &str, line: u64, count: u64) -> bool {
        let key = if self.kinds.len() >= MAX_KINDS && !self.kinds.contains_key(kind) {
            OTHER_KINDS
        } else {
            kind
        };
        match self.kinds.get_mut(key) {
            Some(t) => {
                t.count += count;
                false
            }
            None => {
                self.kinds.insert(
                    key.to_string(),
                    Tally {
                        count,
                        first_line: line,
                    },
                );
                true
            }
        }
    }

    /// No unknown record was seen.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Every record skipped as unknown.
    pub fn total(&self) -> u64 {
        self.kinds.values().map(|t| t.count).sum()
    }

    /// The kinds and their tallies, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Tally)> {
        self.kinds.iter().map(|(k, t)| (k.as_str(), *t))
    }

    /// Adds another input's tallies (a dataset's rows, a folder's files).
    pub fn merge(&mut self, other: &UnknownKinds) {
        for (kind, t) in other.iter() {
            self.add_n(kind, t.first_line, t.count);
        }
    }

    /// One sentence per kind: `12 records of an unknown kind `foo` skipped
    /// (the first on line 7); loopscope may be older than this agent`.
    pub fn sentences(&self) -> Vec<String> {
        self.iter()
            .map(|(kind, t)| {
                let first = match t.first_line {
                    0 => String::new(),
                    line => format!(" (the first on line {line})"),
                };
                format!(
                    "{} {} of an unknown kind `{kind}` skipped{first}; loopscope may be older than this agent",
                    t.count,
                    if t.count == 1 { "record" } else { "records" },
                )
            })
            .collect()
    }

    /// `{"foo": 12, …}`, for `scan --summary --json`.
    pub fn to_json(&self) -> Value {
        let map: Map<String, Value> = self
            .iter()
            .map(|(k, t)| (k.to_string(), Value::from(t.count)))
            .collect();
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_counted_once_each_and_said_in_one_sentence() {
        let mut u = UnknownKinds::default();
        assert!(u.add(&Unknown::new(7, "foo")));
        for line in 8..19 {
            assert!(!u.add(&Unknown::new(line, "foo")));
        }
        assert!(u.add(&Unknown::new(30, "bar")));
        assert_eq!(u.total(), 13);
        assert_eq!(
            u.sentences(),
            [
                "1 record of an unknown kind `bar` skipped (the first on line 30); loopscope may be older than this agent",
                "12 records of an unknown kind `foo` skipped (the first on line 7); loopscope may be older than this agent",
            ]
        );
        assert_eq!(u.to_json(), serde_json::json!({"bar": 1, "foo": 12}));
    }

    #[test]
    fn hostile_kinds_are_cut_and_bounded() {
        let mut u = UnknownKinds::default();
        let long = "x".repeat(10_000);
        u.add(&Unknown::new(1, &long));
        assert_eq!(u.iter().next().unwrap().0.chars().count(), MAX_KIND_CHARS + 1);
        for n in 0..10_000 {
            u.add(&Unknown::new(n, &format!("kind{n}")));
        }
        assert_eq!(u.iter().count(), MAX_KINDS + 1, "the rest are one tally");
        assert_eq!(u.total(), 10_001);
        let other = u.iter().find(|(k, _)| *k == OTHER_KINDS).unwrap().1;
        assert_eq!(other.count, 10_001 - MAX_KINDS as u64);
    }

    #[test]
    fn merging_adds_counts_and_keeps_the_bound() {
        let (mut a, mut b) = (UnknownKinds::default(), UnknownKinds::default());
        a.add(&Unknown::new(3, "foo"));
        b.add(&Unknown::new(5, "foo"));
        b.add(&Unknown::new(6, "foo"));
        b.add(&Unknown::new(9, "bar"));
        a.merge(&b);
        assert_eq!(a.to_json(), serde_json::json!({"bar": 1, "foo": 3}));
        let mut many = UnknownKinds::default();
        for n in 0..MAX_KINDS {
            many.add(&Unknown::new(1, &format!("k{n}")));
        }
        many.merge(&b);
        assert_eq!(many.total(), MAX_KINDS as u64 + 3);
        assert_eq!(many.iter().count(), MAX_KINDS + 1);
    }
}
