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
//! last letter, and only the length of the run around them is counted
//! (the inside of a delta longer than the limit is skimmed byte by byte,
//! as a whole run could hide there). A run's chars are stepped one by one
//! only once it is long enough to
//! matter. The verdict is the same however the text was cut into deltas.

use crate::text::TextBuffer;
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

/// One channel's current run of chars without a letter. Prose only counts
/// the run; its chars are looked at once it is long ([`Long`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Letterless {
    /// Chars in the current run.
    run: usize,
    long: Option<Long>,
}

/// A run of `min_chars` chars or more, char by char.
#[derive(Clone, Debug, Default)]
struct Long {
    /// The run's last chars (at most `min_chars`).
    kept: VecDeque<char>,
    /// Per period p (index p - 1), positions in a row, ending at the last
    /// char, whose char equals the one p before; counted once `kept` holds
    /// `min_chars` chars (`counted`).
    equal: [usize; MAX_PERIOD],
    counted: bool,
}

/// Whether a char is a letter, with ASCII decided by a compare.
#[inline(always)]
fn letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        c.is_alphabetic()
    }
}

/// Whether an ASCII byte is a letter (one compare after folding case).
#[inline(always)]
fn ascii_letter(b: u8) -> bool {
    (b | 0x20).wrapping_sub(b'a') < 26
}

/// Byte index of the first letter: ASCII bytes by a compare, the rest of
/// the text from the first other char on by its properties.
#[inline(always)]
fn first_letter(text: &str) -> Option<usize> {
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if b >= 0x80 {
            // Every byte before was ASCII: `i` starts a char.
            return text[i..].char_indices().find(|&(_, c)| letter(c)).map(|(at, _)| i + at);
        }
        if ascii_letter(b) {
            return Some(i);
        }
    }
    None
}

/// Byte index just past the last letter (as [`first_letter`], backwards).
#[inline(always)]
fn past_last_letter(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    for i in (0..bytes.len()).rev() {
        let b = bytes[i];
        if b >= 0x80 {
            // Every byte after was ASCII: `i + 1` ends a char.
            return text[..=i]
                .char_indices()
                .rev()
                .find(|&(_, c)| letter(c))
                .map(|(at, c)| at + c.len_utf8());
        }
        if ascii_letter(b) {
            return Some(i + 1);
        }
    }
    None
}

/// Chars of `text`, knowing it has at least `bytes / 4`: counted only
/// when the run could reach `limit` with them.
fn reaches(run: usize, text: &str, limit: usize) -> Option<usize> {
    (run + text.len() >= limit)
        .then(|| run + text.chars().count())
        .filter(|&n| n >= limit)
}

impl Letterless {
    pub(super) fn restart(&mut self) {
        self.run = 0;
        self.long = None;
    }

    /// Reads a delta that `buffer` already holds at its end; the first
    /// letterless tail of `min_chars` chars that repeats a unit of up to
    /// [`MAX_PERIOD`] chars, if one ends in it.
    #[inline(always)]
    pub(super) fn read(&mut self, text: &str, buffer: &TextBuffer, min_chars: usize) -> Option<Found> {
        if self.quick(text.as_bytes(), min_chars) {
            return None;
        }
        self.read_any(text, buffer, min_chars)
    }

    /// The common case, a short ASCII delta whose ends are no run of the
    /// limit's length: the run after its last letter, counted from both
    /// ends in a few compares. Whether it was that case.
    #[inline(always)]
    fn quick(&mut self, bytes: &[u8], min_chars: usize) -> bool {
        let n = bytes.len();
        if n > min_chars {
            return false;
        }
        let mut i = 0;
        while i < n && bytes[i] < 0x80 && !ascii_letter(bytes[i]) {
            i += 1;
        }
        if self.run + i >= min_chars {
            return false;
        }
        if i == n {
            self.run += n;
            return true;
        }
        if bytes[i] >= 0x80 {
            return false;
        }
        let mut j = n;
        while bytes[j - 1] < 0x80 && !ascii_letter(bytes[j - 1]) {
            j -= 1;
        }
        if bytes[j - 1] >= 0x80 {
            return false;
        }
        self.run = n - j;
        self.long = None;
        true
    }

    #[cold]
    fn read_any(&mut self, text: &str, buffer: &TextBuffer, min_chars: usize) -> Option<Found> {
        let Some(first) = first_letter(text) else {
            return match reaches(self.run, text, min_chars) {
                Some(_) => self.step_all(text, 0, buffer, text, min_chars),
                None => {
                    self.run += text.chars().count();
                    None
                }
            };
        };
        // Before the first letter the run goes on.
        let head = &text[..first];
        if reaches(self.run, head, min_chars).is_some() {
            if let Some(found) = self.step_all(head, 0, buffer, text, min_chars) {
                return Some(found);
            }
        }
        let past_last = past_last_letter(text).unwrap_or(first);
        // Between the first and the last letter a run that long fits only
        // in a delta longer than the limit (whole blocks from session files).
        let middle = &text[first..past_last];
        if middle.len() > min_chars && long_gap(middle, min_chars) {
            self.restart();
            let before = head.chars().count();
            if let Some(found) = self.step_all(middle, before, buffer, text, min_chars) {
                return Some(found);
            }
        }
        self.long = None;
        let rest = &text[past_last..];
        if reaches(0, rest, min_chars).is_none() {
            self.run = if rest.is_ascii() {
                rest.len()
            } else {
                rest.chars().count()
            };
            return None;
        }
        self.run = 0;
        let before = text[..past_last].chars().count();
        self.step_all(rest, before, buffer, text, min_chars)
    }

    /// Steps every char of `part`, which starts `offset` chars into the
    /// delta `text`: the run's earlier chars come from `buffer`.
    fn step_all(
        &mut self,
        part: &str,
        offset: usize,
        buffer: &TextBuffer,
        text: &str,
        min_chars: usize,
    ) -> Option<Found> {
        if self.long.is_none() {
            // The run's chars before this part, from the buffer.
            let at = buffer.len() - text.chars().count() + offset;
            let back = self.run.min(min_chars).min(at);
            let kept = buffer.chars_from(at - back).take(back).collect();
            self.long = Some(Long {
                kept,
                ..Long::default()
            });
        }
        for (k, c) in part.chars().enumerate() {
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

    /// One char of a long run (or of one that may become long); the period
    /// and length of a letterless periodic tail of `min_chars` chars
    /// ending at it, if there is one.
    fn step(&mut self, c: char, min_chars: usize) -> Option<(usize, usize)> {
        if letter(c) {
            self.restart();
            return None;
        }
        let long = self.long.get_or_insert_with(Long::default);
        if long.counted {
            for (k, equal) in long.equal.iter_mut().enumerate() {
                let back = long.kept.len().checked_sub(k + 1).map(|at| long.kept[at]);
                *equal = if back == Some(c) { *equal + 1 } else { 0 };
            }
        }
        long.kept.push_back(c);
        if long.kept.len() > min_chars.max(MAX_PERIOD) {
            long.kept.pop_front();
        }
        self.run += 1;
        if self.run < min_chars {
            return None;
        }
        if !long.counted {
            long.counted = true;
            long.count_equal();
        }
        // The shortest unit whose copies cover the last `min_chars` chars.
        (1..=MAX_PERIOD)
            .find(|&p| long.equal[p - 1] + p >= min_chars)
            .map(|p| (p, (long.equal[p - 1] + p).min(self.run)))
    }
}

/// Whether `text` has `min_chars` bytes or more in a row with no ASCII
/// letter (a run of `min_chars` chars with no letter has at least that
/// many bytes; non-ASCII letters are told apart only char by char).
fn long_gap(text: &str, min_chars: usize) -> bool {
    let mut gap = 0;
    for &b in text.as_bytes() {
        gap = if b.is_ascii_alphabetic() { 0 } else { gap + 1 };
        if gap >= min_chars {
            return true;
        }
    }
    false
}

impl Long {
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
        let mut buffer = TextBuffer::new();
        let mut read = 0;
        for d in deltas {
            buffer.push_str(d);
            if let Some(f) = l.read(d, &buffer, min_chars) {
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
