//! The block being read: its words folded and its CJK chars paired as the
//! text streams, no copy of its text kept, until it closes.

use super::*;

/// The open block, built as the text streams (no copy of its text is
/// kept): the word being read and the words so far.
#[derive(Clone, Debug, Default)]
pub(in crate::detect::paraphrase) struct OpenBlock {
    /// Chars in the block, and the offset of its first char that is not white space.
    pub(in crate::detect::paraphrase) len: usize,
    pub(in crate::detect::paraphrase) start: Option<usize>,
    /// It starts with `|`: a table row.
    pub(in crate::detect::paraphrase) row: bool,
    pub(in crate::detect::paraphrase) word: u64,
    pub(in crate::detect::paraphrase) in_word: bool,
    pub(in crate::detect::paraphrase) prev_cjk: Option<char>,
    /// Folded words and pairs in order, repeats included.
    pub(in crate::detect::paraphrase) words: Vec<u64>,
}

impl OpenBlock {
    pub(in crate::detect::paraphrase) fn clear(&mut self) {
        let mut words = std::mem::take(&mut self.words);
        words.clear();
        *self = OpenBlock {
            words,
            ..OpenBlock::default()
        };
    }

    pub(in crate::detect::paraphrase) fn end_word(&mut self) {
        if self.in_word {
            self.words.push(self.word);
            self.word = 0;
            self.in_word = false;
        }
    }

    /// Reads ASCII bytes from the start of `bytes` (the first at char offset
    /// `offset`) up to a non-ASCII byte, the end of the block, a backtick or
    /// a bar (each included) or the block's size limit; returns how many it
    /// read and the class of the last one. The common case, kept free of
    /// branches that depend on the text: a table instead of Unicode lookups,
    /// the state in locals.
    pub(in crate::detect::paraphrase) fn feed_ascii(&mut self, bytes: &[u8], offset: usize) -> (usize, u8) {
        let room = MAX_BLOCK + 1 - self.len.min(MAX_BLOCK);
        let bytes = &bytes[..bytes.len().min(room)];
        let mut k = 0;
        if self.start.is_none() {
            // Leading white space (a newline ends the block, so it stops here).
            while k < bytes.len() && BYTE_CLASS[usize::from(bytes[k])] == SPACE {
                k += 1;
            }
            if k < bytes.len() && bytes[k] < 0x80 {
                self.start = Some(offset + k);
                self.row = bytes[k] == b'|';
            }
        }
        let (mut word, mut in_word) = (self.word, self.in_word);
        // Words are written straight after the block's words, into room
        // made first: a word that ends here takes a char and the byte
        // after it, so half the bytes and two more are enough (and the
        // bytes are at most a block's size).
        self.words.reserve(bytes.len() / 2 + 2);
        let room = self.words.spare_capacity_mut();
        let mut ended = 0;
        // One test per byte for every reason to stop (a byte that is not
        // ASCII, the end of the block, a mark); the byte it stops at is
        // read after the loop.
        while k < bytes.len() {
            let b = bytes[k];
            let class = BYTE_CLASS[usize::from(b)];
            if class & STOP != 0 {
                break;
            }
            let is_word = class & WORD != 0;
            // Written at every byte, kept where a word ends (no branch).
            room[ended].write(word);
            ended += usize::from(in_word & !is_word);
            // Letters and digits: setting 0x20 lowercases a letter and keeps a digit.
            word = if is_word { fold(word, u32::from(b | 0x20)) } else { 0 };
            in_word = is_word;
            k += 1;
        }
        // SAFETY: the `ended` slots after the words were each written
        // before the count passed them.
        unsafe { self.words.set_len(self.words.len() + ended) };
        let (mut read, mut stop) = (k, 0);
        if let Some(&b) = bytes.get(k) {
            let class = BYTE_CLASS[usize::from(b)];
            if class & (END | MARK) != 0 {
                // ASCII and never part of a word: it ends the one being read.
                if in_word {
                    self.words.push(word);
                }
                (word, in_word) = (0, false);
                read = k + 1;
                stop = class;
            }
        }
        if read > 0 {
            self.prev_cjk = None;
        }
        (self.word, self.in_word) = (word, in_word);
        self.len += read;
        if stop & MARK != 0 && self.row && bytes[read - 1] == b'|' {
            self.words.push(CELL);
        }
        (read, stop)
    }

    /// Reads one char that is not ASCII, at char offset `offset`.
    pub(in crate::detect::paraphrase) fn push_other(&mut self, c: char, offset: usize) {
        self.len += 1;
        if c.is_whitespace() {
            self.end_word();
            self.prev_cjk = None;
            return;
        }
        if self.start.is_none() {
            self.start = Some(offset);
        }
        if is_cjk(c) {
            self.end_word();
            if let Some(p) = self.prev_cjk {
                self.words
                    .push((u64::from(u32::from(p)) << 32 | u64::from(u32::from(c))) | PAIR);
            }
            self.prev_cjk = Some(c);
        } else {
            self.prev_cjk = None;
            if c.is_alphanumeric() {
                // Numbers stay as they are: items that differ by a number
                // (sizes, ids) are different items; counters are text-loop's.
                for l in c.to_lowercase() {
                    self.word = fold(self.word, u32::from(l));
                }
                self.in_word = true;
            } else {
                self.end_word();
            }
        }
    }

    /// The block's shingles (mixed, without repeats), their signature and
    /// how many bits it has set, and the key of its words in order (the
    /// chant rule's; none for a table row); sorted when the block was long
    /// (sorting is how those are deduplicated). A table row's shingles are
    /// its cells.
    pub(in crate::detect::paraphrase) fn shingles(&mut self, out: &mut Vec<u64>) -> Shingled {
        self.end_word();
        if self.row {
            // Each cell's words folded into one.
            let mut cells = Vec::new();
            let mut cell = 0u64;
            for &w in &self.words {
                if w == CELL {
                    if cell != 0 {
                        cells.push(cell);
                    }
                    cell = 0;
                } else {
                    cell = fold(cell.rotate_left(13), 0) ^ w;
                }
            }
            if cell != 0 {
                cells.push(cell);
            }
            self.words = cells;
        }
        out.clear();
        let (mut sig, mut bits, mut key) = (0u128, 0, 0u64);
        // One pass for the set and the key: the key's chain of multiplies
        // is latency bound, the set's work fills the gaps.
        for &w in &self.words {
            key = mix(key.rotate_left(17) ^ w);
            let x = mix(w);
            let bit = sig_bit(x);
            let new_bit = sig & bit == 0;
            // A set bit is a repeat or a collision: look (short blocks only).
            if new_bit || out.len() > SCAN || !out.contains(&x) {
                bits += usize::from(new_bit);
                sig |= bit;
                out.push(x);
            }
        }
        let sorted = out.len() > SCAN;
        if sorted {
            out.sort_unstable();
            out.dedup();
        }
        Shingled {
            sig,
            bits,
            sorted,
            key: (!self.row && !self.words.is_empty()).then_some(key),
        }
    }
}
