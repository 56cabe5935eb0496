//! Warning floods: a file of a million bad lines printed a million
//! warnings (128 MB of stderr). As compilers and linters do, each file's
//! first [`SHOWN`] are printed and the rest counted, then one line says how
//! many were left out; `scan --bad-lines` lists every one.

use std::io::{self, Write};

use loopscope_core::formats::drift::{Unknown, UnknownKinds};
use loopscope_core::formats::Problem;

/// Bad lines printed per file before the rest are only counted.
pub const SHOWN: usize = 10;

/// Prints one input's problems as warnings, the first [`SHOWN`] in full.
#[derive(Debug)]
pub struct BadLines {
    /// The input's name, made safe for a terminal.
    name: String,
    shown: usize,
    more: usize,
    /// `None`: every problem is printed (`scan --bad-lines`).
    limit: Option<usize>,
    /// What the count line says lists the rest.
    hint: &'static str,
    /// Records of kinds the importer does not know: one line per kind at
    /// the end, not one per record.
    unknown: UnknownKinds,
}

impl BadLines {
    /// For a command other than `scan`: the count line points to `scan --bad-lines`.
    pub fn new(name: &str) -> BadLines {
        BadLines {
            name: loopscope_core::sanitize::line(name),
            shown: 0,
            more: 0,
            limit: Some(SHOWN),
            hint: "`loopscope scan --bad-lines` lists them",
            unknown: UnknownKinds::default(),
        }
    }

    /// For `scan`: `all` lists every problem (`--bad-lines`).
    pub fn for_scan(name: &str, all: bool) -> BadLines {
        BadLines {
            limit: if all { None } else { Some(SHOWN) },
            hint: "--bad-lines lists them",
            ..BadLines::new(name)
        }
    }

    /// Prints `p`, or counts it once [`SHOWN`] have been printed.
    pub fn warn(&mut self, p: &Problem, err: &mut dyn Write) -> io::Result<()> {
        if self.limit.is_some_and(|l| self.shown >= l) {
            self.more += 1;
            return Ok(());
        }
        self.shown += 1;
        writeln!(
            err,
            "loopscope: warning: {}: {}",
            self.name,
            loopscope_core::sanitize::line(&p.to_string())
        )
    }

    /// Counts a record of a kind the importer does not know.
    pub fn unknown(&mut self, u: &Unknown) {
        self.unknown.add(u);
    }

    /// Counts records of kinds the importer does not know, tallied elsewhere.
    pub fn unknown_kinds(&mut self, kinds: &UnknownKinds) {
        self.unknown.merge(kinds);
    }

    /// Problems counted and not printed.
    pub fn left_out(&self) -> usize {
        self.more
    }

    /// The count line, if any problem was left out, and a line per kind
    /// of record the importer did not know; counting starts over.
    pub fn finish(&mut self, err: &mut dyn Write) -> io::Result<()> {
        let more = std::mem::take(&mut self.more);
        self.shown = 0;
        if more > 0 {
            writeln!(
                err,
                "loopscope: warning: {}: … and {} more bad {}; {}",
                self.name,
                thousands(more),
                if more == 1 { "line" } else { "lines" },
                self.hint
            )?;
        }
        for sentence in std::mem::take(&mut self.unknown).sentences() {
            writeln!(
                err,
                "loopscope: warning: {}: {}",
                self.name,
                loopscope_core::sanitize::line(&sentence)
            )?;
        }
        Ok(())
    }
}

/// `999,990`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(line: u64) -> Problem {
        Problem {
            line,
            reason: "not JSON".to_string(),
            skipped: true,
        }
    }

    #[test]
    fn the_first_ten_are_printed_then_one_count_line() {
        let mut out = Vec::new();
        let mut b = BadLines::for_scan("x.jsonl", false);
        for n in 1..=1_000_000 {
            b.warn(&bad(n), &mut out).unwrap();
        }
        b.finish(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), SHOWN + 1);
        assert_eq!(lines[0], "loopscope: warning: x.jsonl: line 1: not JSON; line skipped");
        assert_eq!(
            lines[SHOWN],
            "loopscope: warning: x.jsonl: … and 999,990 more bad lines; --bad-lines lists them"
        );
    }

    #[test]
    fn unknown_records_are_one_line_per_kind_after_the_bad_lines() {
        let mut out = Vec::new();
        let mut b = BadLines::for_scan("s.jsonl", false);
        b.warn(&bad(2), &mut out).unwrap();
        for line in 3..15 {
            b.unknown(&Unknown::new(line, "thread.renamed"));
        }
        b.unknown(&Unknown::new(20, "x\u{1b}[31m"));
        b.finish(&mut out).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "loopscope: warning: s.jsonl: line 2: not JSON; line skipped",
                "loopscope: warning: s.jsonl: 12 records of an unknown kind `thread.renamed` skipped (the first on line 3); loopscope may be older than this agent",
                "loopscope: warning: s.jsonl: 1 record of an unknown kind `x␛[31m` skipped (the first on line 20); loopscope may be older than this agent",
            ]
        );
        b.finish(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3, "said once");
    }

    #[test]
    fn listing_all_prints_every_one_and_a_name_cannot_forge_a_line() {
        let mut out = Vec::new();
        let mut b = BadLines::for_scan("a\nloopscope: fake", true);
        for n in 1..=25 {
            b.warn(&bad(n), &mut out).unwrap();
        }
        b.finish(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 25);
        assert!(text
            .lines()
            .all(|l| l.starts_with("loopscope: warning: a⏎loopscope: fake: line ")));
    }

    #[test]
    fn numbers_have_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(999_990), "999,990");
        assert_eq!(thousands(12_345_678), "12,345,678");
    }
}
