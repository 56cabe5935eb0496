//! Independent counters for tests/wild.rs: what a real agent's file says
//! of itself (prompts, calls, results, failures, cancellations), counted
//! from the file's own structure by a few lines per format, without the
//! importer. Where the structure does not decide a count, the counter gives
//! the bounds it does decide, and says why.

pub mod aider;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod gemini_cli;
pub mod openhands;
pub mod swe_agent;

use serde_json::Value;

/// What the file decides of one count: exactly `lo` when `lo == hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    pub lo: usize,
    pub hi: usize,
}

impl Bound {
    pub fn exact(n: usize) -> Bound {
        Bound { lo: n, hi: n }
    }

    pub fn between(lo: usize, hi: usize) -> Bound {
        Bound { lo, hi }
    }

    /// Not decidable from the file at all.
    pub fn any() -> Bound {
        Bound { lo: 0, hi: usize::MAX }
    }

    pub fn holds(self, n: usize) -> bool {
        (self.lo..=self.hi).contains(&n)
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.lo, self.hi) {
            (lo, hi) if lo == hi => write!(f, "{lo}"),
            (0, usize::MAX) => f.write_str("(undecided)"),
            (lo, usize::MAX) => write!(f, "at least {lo}"),
            (lo, hi) => write!(f, "{lo} to {hi}"),
        }
    }
}

/// A file's counts. `failed` counts failed results; `cancelled` calls that
/// were answered without running (not results).
#[derive(Clone, Debug)]
pub struct Truth {
    pub prompts: Bound,
    pub calls: Bound,
    pub results: Bound,
    pub failed: Bound,
    pub cancelled: Bound,
    /// Calls of these names (aider: commands apart from edits).
    pub calls_named: Vec<(&'static [&'static str], Bound)>,
}

impl Truth {
    /// Exact counts, no cancellations.
    pub fn exact(prompts: usize, calls: usize, results: usize, failed: usize) -> Truth {
        Truth {
            prompts: Bound::exact(prompts),
            calls: Bound::exact(calls),
            results: Bound::exact(results),
            failed: Bound::exact(failed),
            cancelled: Bound::exact(0),
            calls_named: Vec::new(),
        }
    }
}

/// A JSON value's string at `key`.
pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text of a message's content: a string, or its text parts joined.
pub fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| str_at(p, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The JSON lines of a JSONL file (a bad line is an error: the wild files are well formed).
pub fn json_lines(text: &str) -> Result<Vec<Value>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}
