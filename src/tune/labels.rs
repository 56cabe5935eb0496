//! `tune --expect FILE`: which sessions really loop, and where each loop
//! begins. One session a line, `PATH` or `PATH EVENT`:
//!
//! ```text
//! # loops.txt, beside the sessions
//! 2026-03/parser-fix.jsonl       412   # the loop begins at event 412
//! 2026-03/refactor-chant.jsonl         # loops; onset not labelled
//! ```
//!
//! A path is taken as written or relative to the file's folder, so a
//! folder of sessions with its list inside works from anywhere. Every
//! session tried that the file does not name is clean work. EVENT is the
//! event index `scan` prints and `view --start-at` takes; with it, `tune`
//! measures how late each loop is caught.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::files::FileId;

/// The most read of an `--expect` file (some 200,000 paths): `/dev/zero`
/// is refused after this much, not read until memory runs out.
pub const MAX_EXPECT_FILE: usize = 16 << 20;

/// One labelled loop.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The path as the line wrote it.
    pub given: PathBuf,
    /// The event at which the loop begins, when the line says.
    pub onset: Option<usize>,
}

/// The parsed file, and which of its labels matched a session tried.
#[derive(Debug)]
pub struct Labels {
    pub source: PathBuf,
    pub labels: Vec<Label>,
    /// Paths (as written and joined to the file's folder) to labels.
    by_path: HashMap<PathBuf, usize>,
    /// Files that exist, by identity: a label matches the same file
    /// reached through another path, a symlink or a hard link.
    by_id: HashMap<FileId, usize>,
}

impl Labels {
    pub fn read(path: &Path) -> Result<Labels, String> {
        let text = loopscope_core::config::read_capped(path, MAX_EXPECT_FILE).map_err(|e| format!("--expect {e}"))?;
        Ok(Labels::parse(&text, path))
    }

    /// The labels of `text`, read as the file `source`.
    pub fn parse(text: &str, source: &Path) -> Labels {
        let base = source.parent().unwrap_or(Path::new(""));
        let mut out = Labels {
            source: source.to_path_buf(),
            labels: Vec::new(),
            by_path: HashMap::new(),
            by_id: HashMap::new(),
        };
        for line in text.lines() {
            let Some(label) = parse_line(line) else { continue };
            let k = out.labels.len();
            let joined = base.join(&label.given);
            // The first line naming a file wins; a later one is a repeat.
            if out.by_path.contains_key(&label.given) || out.by_path.contains_key(&joined) {
                continue;
            }
            for p in [&label.given, &joined] {
                if let Some(id) = FileId::of(p) {
                    out.by_id.entry(id).or_insert(k);
                }
            }
            out.by_path.insert(label.given.clone(), k);
            out.by_path.insert(joined, k);
            out.labels.push(label);
        }
        out
    }

    /// The label of a session tried, if it is one of the loops.
    pub fn find(&self, file: &Path) -> Option<usize> {
        self.by_path
            .get(file)
            .or_else(|| FileId::of(file).and_then(|id| self.by_id.get(&id)))
            .copied()
    }

    /// The file itself, so a folder walk does not try it as a session.
    pub fn id(&self) -> Option<FileId> {
        FileId::of(&self.source)
    }
}

/// `PATH`, `PATH EVENT`, either with a `# comment`; `None` for a blank or
/// comment line. A `#` starts a comment at the line's start or after a
/// space: a session inside a store (`opencode.db#ses_1`) keeps its `#`.
fn parse_line(line: &str) -> Option<Label> {
    let cut = line
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with(char::is_whitespace)))
        .map_or(line, |(i, _)| &line[..i])
        .trim();
    if cut.is_empty() {
        return None;
    }
    // The last word is the onset when it is a number and a path is left:
    // a path with spaces in it still reads as one path.
    let (path, onset) = match cut.rsplit_once(char::is_whitespace) {
        Some((p, n)) if !p.trim().is_empty() => match n.parse::<usize>() {
            Ok(n) => (p.trim_end(), Some(n)),
            Err(_) => (cut, None),
        },
        _ => (cut, None),
    };
    Some(Label {
        given: PathBuf::from(path),
        onset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_give_a_path_and_perhaps_an_onset() {
        let l = |s: &str| parse_line(s).map(|l| (l.given.display().to_string(), l.onset));
        assert_eq!(l("a.jsonl"), Some(("a.jsonl".into(), None)));
        assert_eq!(l("  a.jsonl\t412  # begins here"), Some(("a.jsonl".into(), Some(412))));
        assert_eq!(l("my logs/会话 1.jsonl"), Some(("my logs/会话 1.jsonl".into(), None)));
        assert_eq!(
            l("my logs/会话 1.jsonl 7"),
            Some(("my logs/会话 1.jsonl".into(), Some(7)))
        );
        assert_eq!(l("opencode.db#ses_1 30"), Some(("opencode.db#ses_1".into(), Some(30))));
        assert_eq!(l("12"), Some(("12".into(), None)), "a lone number is a path");
        assert_eq!(l("# a comment"), None);
        assert_eq!(l("   "), None);
    }

    #[test]
    fn a_path_matches_as_written_or_beside_the_list() {
        let labels = Labels::parse("a.jsonl 5\nsub/b.jsonl\na.jsonl 9\n", Path::new("logs/loops.txt"));
        assert_eq!(labels.labels.len(), 2, "a repeated path keeps its first line");
        assert_eq!(labels.find(Path::new("logs/a.jsonl")), Some(0));
        assert_eq!(labels.find(Path::new("a.jsonl")), Some(0));
        assert_eq!(labels.find(Path::new("logs/sub/b.jsonl")), Some(1));
        assert_eq!(labels.find(Path::new("logs/c.jsonl")), None);
        assert_eq!(labels.labels[0].onset, Some(5));
    }
}
