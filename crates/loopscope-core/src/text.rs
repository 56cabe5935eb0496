//! An append-only text buffer addressed by char offsets.
//!
//! The reasoning and content buffers of a request can reach megabytes, and the
//! engine is cloned for seek snapshots. Text is therefore kept in immutable
//! pieces of at most `PIECE_BYTES` shared by `Arc`: a clone copies a list of
//! pointers and one small tail, and a char offset is found by a binary search
//! over pieces plus a scan inside one piece.

use std::ops::Range;
use std::sync::Arc;

const PIECE_BYTES: usize = 32 * 1024;

#[derive(Debug)]
struct Piece {
    text: String,
    /// Char offset of the piece's first char in the buffer.
    start: usize,
    chars: usize,
}

#[derive(Clone, Debug, Default)]
/// A growing text with char offsets (a channel's buffer).
pub struct TextBuffer {
    frozen: Vec<Arc<Piece>>,
    tail: String,
    tail_chars: usize,
    /// Char offset where the tail starts (the chars in frozen pieces).
    tail_start: usize,
}

impl TextBuffer {
    /// An empty buffer.
    pub fn new() -> TextBuffer {
        TextBuffer::default()
    }

    /// Length in chars (Unicode scalar values).
    pub fn len(&self) -> usize {
        self.tail_start + self.tail_chars
    }

    /// Whether it holds no char.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties it, keeping the tail's room: a buffer is emptied at every
    /// request and fills again much as before, and growing it from nothing
    /// each time copied every request's text once more (a tail is at most
    /// a piece, so the room kept is bounded).
    pub(crate) fn clear(&mut self) {
        self.frozen.clear();
        self.tail.clear();
        self.tail_chars = 0;
        self.tail_start = 0;
    }

    /// Appends `s`; the cost is proportional to `s`, never to the buffer.
    pub fn push_str(&mut self, mut s: &str) {
        while !s.is_empty() {
            let room = PIECE_BYTES.saturating_sub(self.tail.len());
            if s.len() <= room {
                self.append_tail(s);
                return;
            }
            let mut cut = room.min(s.len());
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            if cut == 0 && self.tail.is_empty() {
                // One char longer than a piece cannot happen (chars are <= 4 bytes).
                cut = s.char_indices().nth(1).map_or(s.len(), |(i, _)| i);
            }
            self.append_tail(&s[..cut]);
            s = &s[cut..];
            self.freeze();
        }
    }

    fn append_tail(&mut self, s: &str) {
        self.tail.push_str(s);
        self.tail_chars += char_count(s);
    }

    fn freeze(&mut self) {
        if self.tail.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.tail);
        self.frozen.push(Arc::new(Piece {
            text,
            start: self.tail_start,
            chars: self.tail_chars,
        }));
        self.tail_start += self.tail_chars;
        self.tail_chars = 0;
    }

    /// The pieces as (char offset, text, char count), in order.
    fn pieces(&self) -> impl Iterator<Item = (usize, &str, usize)> {
        self.frozen
            .iter()
            .map(|p| (p.start, p.text.as_str(), p.chars))
            .chain(std::iter::once((self.tail_start, self.tail.as_str(), self.tail_chars)))
    }

    /// Index of the first piece that may contain char `at`.
    fn piece_index(&self, at: usize) -> usize {
        self.frozen.partition_point(|p| p.start + p.chars <= at)
    }

    /// The chars in `range` (clamped to the buffer).
    pub fn slice(&self, range: Range<usize>) -> String {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let mut out = String::new();
        for (piece_start, text, chars) in self.pieces().skip(self.piece_index(start)) {
            if piece_start >= end {
                break;
            }
            let from = start.saturating_sub(piece_start);
            let to = end - piece_start;
            out.push_str(&text[byte_offset(text, chars, from)..byte_offset(text, chars, to)]);
        }
        out
    }

    /// Iterates the chars from offset `start` to the end.
    pub(crate) fn chars_from(&self, start: usize) -> impl Iterator<Item = char> + '_ {
        let first = self.piece_index(start);
        self.pieces().skip(first).flat_map(move |(piece_start, text, chars)| {
            text[byte_offset(text, chars, start.saturating_sub(piece_start))..].chars()
        })
    }

    /// The whole buffer as one string (tests, small buffers).
    pub(crate) fn to_string_lossless(&self) -> String {
        self.slice(0..self.len())
    }
}

/// Byte offset of char `n` in `text`, which has `chars` chars (its length
/// when `n` is past the end). ASCII text, the common case, needs no scan.
fn byte_offset(text: &str, chars: usize, n: usize) -> usize {
    if n >= chars {
        text.len()
    } else if chars == text.len() {
        n
    } else {
        // Char `n` starts at the (n + 1)th byte that is not a UTF-8
        // continuation byte (0b10xx_xxxx). They are counted a block at a
        // time (a count the compiler vectorises), then one by one in the
        // block that holds it: the viewer asks this of a 32 KB piece for
        // every line it draws.
        let is_start = |b: &u8| (*b as i8) >= -0x40;
        let bytes = text.as_bytes();
        let (mut seen, mut at) = (0, 0);
        for block in bytes.chunks(64) {
            let here = block.iter().filter(|b| is_start(b)).count();
            if seen + here > n {
                break;
            }
            seen += here;
            at += block.len();
        }
        bytes[at..]
            .iter()
            .enumerate()
            .filter(|(_, b)| is_start(b))
            .nth(n - seen)
            .map_or(text.len(), |(i, _)| at + i)
    }
}

/// The chars of `s`: its length when it is ASCII (most deltas), found a
/// word at a time, instead of a count of a short string byte by byte.
#[inline]
pub fn char_count(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn a_chars_byte_offset_is_where_char_indices_puts_it(
            text in "[a-z思🙂é\n]{0,200}",
            n in 0usize..220,
        ) {
            let chars = text.chars().count();
            let want = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            proptest::prop_assert_eq!(byte_offset(&text, chars, n), want);
        }
    }

    #[test]
    fn offsets_are_chars_across_pieces() {
        let mut b = TextBuffer::new();
        let unit = "思考🙂ab"; // 3 + 4 + 4 + 2 bytes, 5 chars
        let mut expect = String::new();
        for _ in 0..20_000 {
            b.push_str(unit);
            expect.push_str(unit);
        }
        assert!(b.frozen.len() > 3);
        assert_eq!(b.len(), 100_000);
        let chars: Vec<char> = expect.chars().collect();
        for (s, e) in [(0, 7), (32_760, 32_790), (99_990, 100_000), (5, 5), (70_000, 99_999)] {
            let want: String = chars[s..e].iter().collect();
            assert_eq!(b.slice(s..e), want, "{s}..{e}");
        }
        assert_eq!(b.slice(99_998..200_000), "ab");
        let tail: String = b.chars_from(99_995).collect();
        assert_eq!(tail, "思考🙂ab");
        assert_eq!(b.to_string_lossless(), expect);
    }

    #[test]
    fn one_huge_push_is_split_into_pieces() {
        let mut b = TextBuffer::new();
        let big = "é".repeat(100_000);
        b.push_str(&big);
        assert_eq!(b.len(), 100_000);
        assert!(b.frozen.iter().all(|p| p.text.len() <= PIECE_BYTES));
        assert_eq!(b.slice(49_999..50_001), "éé");
    }

    #[test]
    fn clones_share_frozen_pieces() {
        let mut b = TextBuffer::new();
        b.push_str(&"x".repeat(100_000));
        let c = b.clone();
        assert!(Arc::ptr_eq(&b.frozen[0], &c.frozen[0]));
        b.push_str("y");
        assert_eq!(c.len(), 100_000);
        assert_eq!(b.len(), 100_001);
    }
}
