//! How paraphrase-loop reads a channel: blocks (sentences or lines) built
//! as the text streams, each a set of word shingles (words, or for CJK,
//! pairs of chars) with a signature for cheap comparisons, the key of its
//! exact words for the chant rule, and what the text long before looked
//! like (the background: how many older blocks hold each word, so the
//! words every block says weigh less than the ones a block brings).

use std::collections::VecDeque;

use crate::detect::Detection;

mod open;
pub(super) use open::OpenBlock;

#[derive(Clone, Debug)]
pub(super) struct Block {
    pub(super) start: usize,
    pub(super) end: usize,
    /// Without repeats; sorted (for merging) only once the block is
    /// compared exactly, which clean text rarely needs. A table row's are
    /// its cells, each a whole (rows that share most words but differ in
    /// a cell or two are different rows).
    pub(super) shingles: Vec<u64>,
    sorted: bool,
    /// One of 128 bits per shingle (its top 7 bits), and how many are set: a
    /// cheap upper bound of what two blocks share, so clean text is
    /// rejected without a merge.
    sig: u128,
    bits: usize,
}

impl Block {
    /// At most how many shingles two blocks share: each shared shingle sets
    /// a bit in both signatures, except that several of ours may share a bit
    /// (those are at most our shingles minus our bits).
    pub(super) fn shared_bound(&self, other: &Block) -> usize {
        bits_set(self.sig & other.sig) + (self.shingles.len() - self.bits)
    }

    pub(super) fn sort(&mut self) {
        if !self.sorted {
            self.shingles.sort_unstable();
            self.sorted = true;
        }
    }

    /// A block of the given words (each a distinct number), for the rules' tests.
    #[cfg(test)]
    pub(super) fn for_test(words: &[u64]) -> Block {
        let shingles: Vec<u64> = words.iter().map(|&w| mix(w)).collect();
        let sig = shingles.iter().fold(0u128, |sig, &x| sig | sig_bit(x));
        Block {
            start: 0,
            end: 0,
            bits: bits_set(sig),
            shingles,
            sorted: false,
            sig,
        }
    }
}

/// Bits set in `x`: with the POPCNT instruction where the CPU has it
/// (baseline x86-64 does not, and counting without it costs ~25
/// instructions; every closed block is bounded against six others).
fn bits_set(x: u128) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the instruction the function is compiled
        // with, checked just above (the check is a cached load).
        return unsafe { bits_set_popcnt(x) };
    }
    x.count_ones() as usize
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn bits_set_popcnt(x: u128) -> usize {
    x.count_ones() as usize
}

/// A word as it is read: its chars folded in by rotate and xor (one cycle
/// each, exact for short ASCII words); mixed into a shingle when it ends.
fn fold(word: u64, c: u32) -> u64 {
    word.rotate_left(7) ^ u64::from(c)
}

/// A folded word or char pair made into a well-spread shingle hash (its
/// top bits, which a multiply spreads best, pick the signature bit).
fn mix(x: u64) -> u64 {
    (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The signature bit of a shingle.
fn sig_bit(x: u64) -> u128 {
    1u128 << (x >> 57)
}

/// CJK char pairs are told apart from folded words by this mark.
const PAIR: u64 = 1 << 63;

/// In a table row's words, where a cell ends (a `|`).
const CELL: u64 = u64::MAX;

/// What closing a block made of its words besides the shingles.
pub(super) struct Shingled {
    sig: u128,
    /// Bits set in `sig` (counted as they are set: baseline x86-64 has no
    /// popcount instruction).
    bits: usize,
    sorted: bool,
    /// The key of the words in order, for the chant rule (none for a
    /// table row or a block without words).
    key: Option<u64>,
}

/// Byte classes: part of a word, white space, the end of a block, a mark
/// the slow path looks at (a backtick of a fence, a table's bar), not ASCII
/// (a char the slow path reads).
const WORD: u8 = 1;
const SPACE: u8 = 2;
pub(super) const END: u8 = 4;
const MARK: u8 = 8;
const NOT_ASCII: u8 = 16;
/// Where the fast path stops.
const STOP: u8 = END | MARK | NOT_ASCII;
const BYTE_CLASS: [u8; 256] = {
    let mut t = [NOT_ASCII; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = 0;
        if c.is_ascii_alphanumeric() {
            t[b] = WORD;
        }
        if crate::detect::is_ascii_space(c) {
            t[b] = SPACE;
        }
        if matches!(c, b'\n' | b'.' | b'!' | b'?' | b';') {
            t[b] |= END;
        }
        if matches!(c, b'`' | b'|') {
            t[b] |= MARK;
        }
        b += 1;
    }
    t
};

/// One channel of the current request, cut into blocks.
#[derive(Clone, Debug, Default)]
pub(super) struct Blocks {
    /// Chars read.
    pub(super) chars: usize,
    open: OpenBlock,
    /// The newest blocks of at least `min_words` shingles.
    pub(super) done: Vec<Block>,
    /// Shingle vectors of dropped blocks, reused for new ones.
    spare: Vec<Vec<u64>>,
    /// Unions of the two copies being compared (kept for their capacity).
    pub(super) scratch: (Vec<u64>, Vec<u64>),
    /// Best (cycle, blocks in a row alike) so far, for the status.
    pub(super) best: (usize, usize),
    /// Backticks in a row (the last one just before char `tick_end`), and
    /// whether a ``` fence is open: code repeats its lines legitimately.
    ticks: u8,
    tick_end: usize,
    in_code: bool,
    /// Three backticks inside a fence: they close it only if no info
    /// string follows (CommonMark: ```` ```python ```` opens a block, never
    /// closes one), judged at the next char.
    fence_closing: bool,
    /// The background: per shingle bucket, how many blocks that left the
    /// newest `keep` hold it (allocated when the first one leaves) and how
    /// many blocks those counts are over (both halved now and then, so a
    /// long text's counts stay in range and recent text counts more); how
    /// many blocks have left, how many were ever done, how many were
    /// dropped from `done`'s front.
    df: Vec<u16>,
    counted: u32,
    background: usize,
    closed: usize,
    dropped: usize,
    /// The newest sentences of any length (outside code and tables), for
    /// the chant rule: the key of their words, and their chars.
    pub(super) sentences: VecDeque<Sentence>,
    /// How many of those have each low byte of key: a sentence whose byte
    /// no other has was not said before (most sentences of clean text).
    keys: Keys,
}

/// Sentence counts by the low byte of their key.
#[derive(Clone, Debug)]
struct Keys([u8; 256]);

impl std::default::Default for Keys {
    fn default() -> Keys {
        Keys([0; 256])
    }
}

impl std::ops::Index<usize> for Keys {
    type Output = u8;
    fn index(&self, i: usize) -> &u8 {
        &self.0[i]
    }
}

impl std::ops::IndexMut<usize> for Keys {
    fn index_mut(&mut self, i: usize) -> &mut u8 {
        &mut self.0[i]
    }
}

/// A sentence or line as the chant rule sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sentence {
    pub(super) key: u64,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Sentences the chant rule looks back over.
pub(super) const SENTENCES: usize = 48;

/// Shingles a block keeps free of repeats as they come; a longer block is
/// deduplicated by sorting when it ends.
const SCAN: usize = 64;

/// Shingle vectors kept for reuse.
const SPARE: usize = 128;

/// Longest block, in chars: a longer one is dropped and a new one starts.
const MAX_BLOCK: usize = 16 * 1024;

/// Buckets of the background's counts.
const DF: usize = 1 << 13;

/// The background's counts are halved when they are over this many blocks.
const HALVE: u32 = 1 << 14;

/// A closed block: whether it joined `done`, and whether it joined the
/// sentences as one that may have been said before.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Closed {
    pub(super) block: bool,
    pub(super) sentence: bool,
}

impl Blocks {
    /// Reads a delta; `closed` is asked about each block that ends, and its
    /// first detection ends the read.
    pub(super) fn read(
        &mut self,
        text: &str,
        min_words: usize,
        keep: usize,
        mut closed: impl FnMut(&mut Blocks, Closed) -> Option<Detection>,
    ) -> Option<Detection> {
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if self.fence_closing && bytes[at] != b'`' {
                // Anything but white space right after the backticks is an
                // info string: the fence opens a block (a model's doubled
                // opening, ```` ```ts\npath\n```python ````), it does not close one.
                self.fence_closing = false;
                self.in_code = !crate::detect::is_ascii_space(bytes[at]);
            }
            let ends = if bytes[at] < 0x80 {
                let (read, stop) = self.open.feed_ascii(&bytes[at..], self.chars);
                at += read;
                self.chars += read;
                if stop & MARK != 0 && bytes[at - 1] == b'`' {
                    self.tick(self.chars - 1);
                }
                stop & END != 0
            } else {
                let c = text[at..].chars().next().expect("a char starts at a char boundary");
                at += c.len_utf8();
                self.open.push_other(c, self.chars);
                self.chars += 1;
                matches!(c, '。' | '！' | '？' | '；')
            };
            if self.open.len > MAX_BLOCK {
                self.open.clear();
                continue;
            }
            if ends {
                let what = self.close(min_words, keep);
                if let Some(d) = closed(self, what) {
                    return Some(d);
                }
            }
        }
        None
    }

    /// A backtick at char offset `at`: three in a row open or close a fence.
    fn tick(&mut self, at: usize) {
        self.ticks = if self.ticks > 0 && self.tick_end == at {
            self.ticks + 1
        } else {
            1
        };
        self.tick_end = at + 1;
        if self.ticks == 3 {
            self.ticks = 0;
            if self.in_code {
                self.fence_closing = true;
            } else {
                self.in_code = true;
            }
        }
    }

    /// Ends the open block at the current offset.
    fn close(&mut self, min_words: usize, keep: usize) -> Closed {
        let mut shingles = self.spare.pop().unwrap_or_default();
        let shingled = self.open.shingles(&mut shingles);
        let start = self.open.start.unwrap_or(self.chars);
        let mut what = Closed::default();
        if let Some(key) = shingled.key.filter(|_| !self.in_code) {
            if self.sentences.len() == SENTENCES {
                let gone = self.sentences.pop_front().expect("full");
                self.keys[usize::from(gone.key as u8)] -= 1;
            }
            // Only a sentence that may have been said before can make a chant.
            what.sentence = self.keys[usize::from(key as u8)] > 0;
            self.keys[usize::from(key as u8)] += 1;
            self.sentences.push_back(Sentence {
                key,
                start,
                end: self.chars,
            });
        }
        self.open.clear();
        // Code repeats the shape of its lines (fields, calls, cases) without
        // re-saying a thought: its lines are no blocks.
        if shingles.len() < min_words || self.in_code {
            self.spare.push(shingles);
            return what;
        }
        self.done.push(Block {
            start,
            end: self.chars,
            shingles,
            sorted: shingled.sorted,
            sig: shingled.sig,
            bits: shingled.bits,
        });
        self.closed += 1;
        // Blocks older than the newest `keep` go to the background.
        while self.closed - self.background > keep {
            if self.df.is_empty() {
                self.df = vec![0; DF];
            }
            for &x in &self.done[self.background - self.dropped].shingles {
                let slot = &mut self.df[bucket(x)];
                *slot = slot.saturating_add(1);
            }
            self.background += 1;
            self.counted += 1;
            if self.counted == HALVE {
                self.df.iter_mut().for_each(|d| *d /= 2);
                self.counted /= 2;
            }
        }
        if self.done.len() > 2 * keep + 8 {
            let drop = self.done.len() - keep;
            self.dropped += drop;
            self.spare.extend(self.done.drain(..drop).map(|b| b.shingles));
            self.spare.truncate(SPARE);
        }
        what.block = true;
        what
    }

    /// Whether shingles weigh differently yet (some blocks are in the background).
    pub(super) fn weighs(&self) -> bool {
        self.counted > 0
    }

    /// How much a shingle weighs (1024 at most): less the more background
    /// blocks hold it. With `n` background blocks, one held by `df` of them
    /// weighs (n + 8) / (n + 8 + 8 df): a word of every block (`the`,
    /// `claim`, `wherein`) little, a word the text never said before fully.
    pub(super) fn weight(&self, x: u64) -> u32 {
        let df = self.df.get(bucket(x)).map_or(0, |&d| u32::from(d));
        let n = self.counted;
        1024 * (n + 8) / (n + 8 + 8 * df)
    }

    /// A new request: the text starts over, the allocations stay.
    pub(super) fn restart(&mut self) {
        let mut spare = std::mem::take(&mut self.spare);
        spare.extend(self.done.drain(..).map(|b| b.shingles));
        spare.truncate(SPARE);
        let mut open = std::mem::take(&mut self.open);
        open.clear();
        let mut df = std::mem::take(&mut self.df);
        // Counts are only ever added for background blocks: a request
        // that had none left them all zero (most requests of an agent).
        if self.background > 0 {
            df.fill(0);
        }
        let mut sentences = std::mem::take(&mut self.sentences);
        sentences.clear();
        *self = Blocks {
            spare,
            open,
            df,
            sentences,
            done: std::mem::take(&mut self.done),
            scratch: std::mem::take(&mut self.scratch),
            ..Blocks::default()
        };
    }
}

/// A shingle's bucket in the background counts (bits the signature does not use).
fn bucket(x: u64) -> usize {
    (x >> 20) as usize & (DF - 1)
}

pub(super) fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}')
}

#[cfg(test)]
mod tests;
