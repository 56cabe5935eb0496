//! Loops without letters: a run of newlines, digits, `|---`, dots or
//! U+FFFD garbage that repeats a short unit. The normalized view folds
//! white space and digits and the judge wants a letter in a unit (tables
//! and dividers repeat punctuation legitimately), so these tails are found
//! here instead, by length: prose has a letter every few chars, and even a
//! table divider or a row of dots in a table of contents ends long before
//! [`DEFAULT_CHARS`] chars; a runaway model's `\n\n\n…` or `�����…` does
//! not.
//!
//! Cheap on prose: a delta is looked at from both ends to its first and
//! last letter; only the chars outside them (and the inside of a delta
//! longer than the limit, where a whole run could hide) are stepped one by
//! one, and the periods are compared only once a run is long enough to
//! matter. The verdict is the same however the text was cut into deltas.

use std::collections::VecDeque;

/// Chars in a row with no letter that make a loop, by default.
pub(crate) const DEFAULT_CHARS: usize = 256;
/// Longest unit looked for, in chars.
pub(crate) const MAX_PERIOD: usize = 16;

/// A letterless tail found: where it ends (chars into the delta), its
/// period, and how many chars in a row repeat with that period.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Found {
    /// Chars of the delta read up to and including the tail's last char.
    pub(super) chars_into_delta: usize,
    pub(super) period: usize,
    /// Chars of the periodic tail (at least `min_chars`).
    pub(super) length: usize,
}

/// One channel's current run of chars without a letter.
#[derive(Clone, Debug, Default)]
pub(super) struct Letterless {
    /// Chars in the current run.
    run: usize,
    /// The run's last chars (at most `min_chars`).
    kept: VecDeque<char>,
    /// Per period p (index p - 1), positions in a row, ending at the last
    /// char, whose char equals the one p before; kept only while `run`
    /// is at least `min_chars` (`tracking`).
    equal: [usize; MAX_PERIOD],
    tracking: bool,
}

impl Letterless {
    pub(super) fn restart(&mut self) {
        self.run = 0;
        self.kept.clear();
        self.tracking = false;
    }

    /// Reads a delta; the first letterless tail of `min_chars` chars that
    /// repeats a unit of up to [`MAX_PERIOD`] chars, if one ends in it.
    pub(super) fn read(&mut self, text: &str, min_chars: usize) -> Option<Found> {
        let Some(first) = text.char_indices().find(|(_, c)| c.is_alphabetic()) else {
            return self.step_all(text, 0, min_chars);
        };
        // Before the first letter: the run goes on.
        if let Some(found) = self.step_all(&text[..first.0], 0, min_chars) {
            return Some(found);
        }
        let last = text
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_alphabetic())
            .map_or(first.0, |(at, _)| at);
        let after_last = last + text[last..].chars().next().map_or(0, char::len_utf8);
        // Between the first and the last letter a whole run fits only in a
        // delta longer than the limit (whole blocks from session files).
        let middle = &text[first.0..after_last];
        let before = || text[..first.0].chars().count();
        if middle.len() > min_chars {
            if let Some(found) = self.step_all(middle, before(), min_chars) {
                return Some(found);
            }
        }
        self.restart();
        let skipped = || before() + middle.chars().count();
        let rest = &text[after_last..];
        if rest.is_empty() {
            return None;
        }
        // The count of chars before the rest is needed only for a find.
        self.step_all(rest, 0, min_chars).map(|mut found| {
            found.chars_into_delta += skipped();
            found
        })
    }

    /// Steps every char of `text`, which starts `offset` chars into the delta.
    fn step_all(&mut self, text: &str, offset: usize, min_chars: usize) -> Option<Found> {
        for (k, c) in text.chars().enumerate() {
            if let Some((period, length)) = self.step(c, min_chars) {
                return Some(Found {
                    chars_into_delta: offset + k + 1,
                    period,
                    length,
                });
            }
        }
        None
    }

    /// One char; the period and length of a letterless periodic tail of
    /// `min_chars` chars ending at it, if there is one.
    fn step(&mut self, c: char, min_chars: usize) -> Option<(usize, usize)> {
        if c.is_alphabetic() {
            self.restart();
            return None;
        }
        if self.tracking {
            for (k, equal) in self.equal.iter_mut().enumerate() {
                let back = self.kept.len().checked_sub(k + 1).map(|at| self.kept[at]);
                *equal = if back == Some(c) { *equal + 1 } else { 0 };
            }
        }
        self.kept.push_back(c);
        if self.kept.len() > min_chars.max(MAX_PERIOD) {
            self.kept.pop_front();
        }
        self.run += 1;
        if self.run < min_chars {
            return None;
        }
        if !self.tracking {
            self.tracking = true;
            self.count_equal();
        }
        // The shortest unit whose copies cover the last `min_chars` chars.
        (1..=MAX_PERIOD)
            .find(|&p| self.equal[p - 1] + p >= min_chars)
            .map(|p| (p, (self.equal[p - 1] + p).min(self.run)))
    }

    /// The runs of equal chars per period over the kept chars (once a run
    /// is long enough to be looked at).
    fn count_equal(&mut self) {
        for p in 1..=MAX_PERIOD {
            let mut equal = 0;
            for i in p..self.kept.len() {
                equal = if self.kept[i] == self.kept[i - p] { equal + 1 } else { 0 };
            }
            self.equal[p - 1] = equal;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_find(deltas: &[&str], min_chars: usize) -> Option<(usize, Found)> {
        let mut l = Letterless::default();
        let mut read = 0;
        for d in deltas {
            if let Some(f) = l.read(d, min_chars) {
                return Some((read, f));
            }
            read += d.chars().count();
        }
        None
    }

    /// Where a find ends, in chars of the whole text, however it is cut.
    fn end_at(text: &str, cut: usize, min_chars: usize) -> Option<(usize, usize, usize)> {
        let chars: Vec<char> = text.chars().collect();
        let deltas: Vec<String> = chars.chunks(cut).map(|c| c.iter().collect()).collect();
        let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
        first_find(&refs, min_chars).map(|(before, f)| (before + f.chars_into_delta, f.period, f.length))
    }

    #[test]
    fn a_run_of_newlines_dashes_or_replacement_chars_is_found_at_the_limit_whatever_the_cut() {
        for (unit, period) in [
            ("\n", 1),
            ("|---", 4),
            ("�", 1),
            ("0", 1),
            (". ", 2),
            ("🙂", 1),
            ("12345678", 8),
        ] {
            let text = format!("Here is the answer: {}", unit.repeat(400));
            let lead = "Here is the answer".chars().count();
            let mut seen = Vec::new();
            for cut in [1, 3, 7, 20, 64, 1000] {
                seen.push(end_at(&text, cut, 64));
            }
            // The run starts after the last letter (the `:` and space are
            // letterless too, but not of the unit).
            let got = seen[0].expect(unit);
            assert!(seen.iter().all(|s| *s == Some(got)), "{unit:?}: {seen:?}");
            assert_eq!(got.1, period, "{unit:?}");
            assert!(
                got.0 >= lead + 64 && got.0 <= lead + 2 + 64 + period,
                "{unit:?}: {got:?}"
            );
        }
    }

    #[test]
    fn prose_tables_and_lists_have_no_such_run() {
        let table = "| id | name |\n|---|---|\n| 1 | ada |\n| 2 | bob |\n".repeat(40);
        let list: String = (1..300).map(|i| format!("{i}. item {i}\n")).collect();
        let toc = format!("Contents\n{}", "Introduction ........ 1\n".repeat(50));
        let numbers: String = (0..200).map(|i| format!("{} ", i * 7919 % 1000)).collect();
        for text in [table, list, toc, numbers] {
            for cut in [1, 5, 40, 100_000] {
                assert_eq!(end_at(&text, cut, DEFAULT_CHARS), None, "{cut}: {text:.60}");
            }
        }
    }

    #[test]
    fn digits_that_do_not_repeat_are_no_loop_and_cjk_is_letters() {
        // The digits of a long number: no unit of 16 chars or fewer repeats.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let digits: String = (0..600)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'0' + (x % 10) as u8)
            })
            .collect();
        assert_eq!(end_at(&digits, 7, DEFAULT_CHARS), None);
        // CJK text is letters: a stutter of it is text-loop's, not a run.
        assert_eq!(end_at(&"思考。".repeat(300), 4, DEFAULT_CHARS), None);
    }

    #[test]
    fn a_run_inside_a_whole_block_is_found_where_deltas_would_find_it() {
        let text = format!("Intro {} and then words again.", "\n".repeat(300));
        assert_eq!(end_at(&text, 100_000, DEFAULT_CHARS), end_at(&text, 2, DEFAULT_CHARS));
        assert!(end_at(&text, 100_000, DEFAULT_CHARS).is_some());
    }
}
