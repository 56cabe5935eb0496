//! chunk-chant's history: the units of the content in reach and, while it
//! is "hot" (some chunk may fire, the k-gram filter says), the exact
//! record of every examined position: its chunk hash, the chain of its
//! chunk's positions and the buckets that find a chunk's newest position.
//! While "cold" only the units are kept; the record is worked out from
//! them when a chunk may fire again.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use super::filter::Roller;

/// What the history knew of a chunk position's hash.
pub(super) enum Seen {
    /// Not in the history: a new chunk.
    New,
    /// Seen at this position, the chunk's newest until now.
    At(usize),
    /// The hash belongs to a different chunk: left unrecorded.
    Collision,
}

/// Buckets of chunk positions by hash, as zlib finds earlier matches:
/// `head[bucket]` is the newest recorded position whose hash falls in the
/// bucket and each position links to the previous one of its bucket, so
/// finding a chunk's newest position walks a chain that is short (the
/// buckets outnumber the positions in history) and stops at the first
/// position before the history. Nothing is ever deleted: old positions
/// simply fall out of reach, and a reset costs nothing. The buckets start
/// few and double (rebuilt from the positions in history) whenever the
/// history outgrows half of them, so an engine's size follows the text it
/// has seen, not the longest history it may keep.
#[derive(Clone, Debug, Default)]
pub(super) struct Buckets {
    pub(super) head: Vec<usize>,
    /// 64 - log2(head.len()), for Fibonacci hashing.
    pub(super) shift: u32,
}

impl Buckets {
    /// Sized for a history of `positions` positions (twice as many buckets).
    pub(super) fn new(positions: usize) -> Buckets {
        let size = (positions * 2).next_power_of_two().clamp(MIN_BUCKETS, MAX_BUCKETS);
        Buckets {
            head: vec![NONE; size],
            shift: 64 - size.trailing_zeros(),
        }
    }

    pub(super) fn of(&self, hash: u64) -> usize {
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }
}

/// `prev_same` of a position that starts the chain of its chunk.
pub(super) const NONE: usize = usize::MAX;
/// `bucket_prev` of a position left unrecorded (a hash collision): it is
/// in no chain, so a rebuild of the buckets skips it.
pub(super) const UNRECORDED: usize = usize::MAX - 1;
pub(super) const MIN_BUCKETS: usize = 64;
/// Units of storage a reset keeps (1 KB).
const KEPT_ON_RESET: usize = 256;
pub(super) const MAX_BUCKETS: usize = 1 << 22;

/// What the history keeps of an examined position: one push per position.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    /// The hash of the chunk starting there.
    pub(super) hash: u64,
    /// The previous position recorded in the same bucket (NONE), or
    /// UNRECORDED for a collision.
    pub(super) bucket_prev: usize,
    /// The previous position of the same chunk (NONE for none).
    pub(super) prev_same: usize,
}

impl Slot {
    /// A position cut from the history before it was examined.
    pub(super) const UNEXAMINED: Slot = Slot {
        hash: 0,
        bucket_prev: NONE,
        prev_same: NONE,
    };
}

/// Text appended to the history by one delta, for mapping positions back to
/// content-channel offsets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) request: u64,
    /// Char offset of the delta in its request's content buffer.
    pub(super) chan_start: usize,
    /// Whether it holds a surrogate pair (counted as UTF-16 units): only
    /// then do its units and chars differ in number.
    pub(super) pairs: bool,
}

/// The history and chunk statistics, with absolute unit positions.
#[derive(Debug, Default)]
pub(super) struct History {
    /// Units from absolute position `base` on.
    pub(super) units: Vec<u32>,
    pub(super) base: usize,
    /// Absolute start of the history (older units are gone).
    pub(super) start: usize,
    /// Next position to examine.
    pub(super) index: usize,
    /// Whether `slots` and `buckets` record every examined position.
    pub(super) hot: bool,
    /// Positions examined hot since the last one that may fire.
    pub(super) quiet: usize,
    /// Per examined position from `base` on, while hot.
    pub(super) slots: Vec<Slot>,
    pub(super) buckets: Buckets,
    /// Rolls the chunk hash from one position to the next.
    pub(super) roller: Roller,
    pub(super) segments: VecDeque<Segment>,
}

impl Clone for History {
    /// Engine snapshots (seeking) clone this: only what is still in
    /// history is copied, so a snapshot costs what the history holds.
    fn clone(&self) -> History {
        let keep_from = self
            .segments
            .front()
            .map_or(self.start, |s| s.start.min(self.start))
            .max(self.base);
        let dead = keep_from - self.base;
        History {
            units: self.units[dead..].to_vec(),
            slots: self.slots[dead.min(self.slots.len())..].to_vec(),
            base: keep_from,
            start: self.start,
            index: self.index,
            hot: self.hot,
            quiet: self.quiet,
            buckets: self.buckets.clone(),
            roller: self.roller,
            segments: self.segments.clone(),
        }
    }
}

impl History {
    pub(super) fn end(&self) -> usize {
        self.base + self.units.len()
    }

    pub(super) fn len(&self) -> usize {
        self.end() - self.start
    }

    /// Empties the history: gemini-cli's resetContentTracking. Every
    /// recorded position falls before the new start, out of reach; the
    /// storage is kept for what comes next (no free and grow per reset).
    pub(super) fn reset(&mut self) {
        let end = self.end();
        // Small storage is kept for what comes next; large storage (a long
        // history's) is let go, so an engine holds what its text needs now.
        self.units.clear();
        self.units.shrink_to(KEPT_ON_RESET);
        self.slots = Vec::new();
        self.segments.clear();
        self.segments.shrink_to(KEPT_ON_RESET / 16);
        (self.base, self.start, self.index) = (end, end, end);
        self.roller.forget();
        self.hot = false;
    }

    /// Empties the history and moves its end on by `units` that are never
    /// stored: the head of a delta longer than the whole history, which
    /// would be cut before any of it was examined.
    pub(super) fn skip(&mut self, units: usize) {
        self.reset();
        let end = self.end() + units;
        (self.base, self.start, self.index) = (end, end, end);
    }

    /// The hash of the `len` units at `pos`, rolled from the last one.
    pub(super) fn hash(&mut self, pos: usize, len: usize, top: u64) -> u64 {
        self.roller.hash(&self.units, self.base, pos, len, top)
    }

    pub(super) fn slice(&self, pos: usize, len: usize) -> &[u32] {
        &self.units[pos - self.base..pos - self.base + len]
    }

    /// Drops everything before `new_start`. Positions there stop counting
    /// by themselves; storage and stale map entries are swept now and then
    /// so the cost stays proportional to what was appended.
    pub(super) fn cut_front(&mut self, new_start: usize, max_history: usize, utf16: bool) {
        self.start = new_start;
        if self.index < new_start {
            // Positions cut before they were examined are never recorded.
            if self.hot {
                self.slots.resize(new_start - self.base, Slot::UNEXAMINED);
            }
            self.index = new_start;
        }
        while self.segments.front().is_some_and(|s| s.start + s.len <= new_start) {
            self.segments.pop_front();
        }
        self.trim_front_segment(utf16);
        // The front segment may start a unit early (a surrogate pair cut in
        // half); storage is kept from there.
        let keep_from = self.segments.front().map_or(self.start, |s| s.start.min(self.start));
        let dead = keep_from - self.base;
        let live = self.units.len() - dead;
        if dead > 4096 && dead > 3 * live {
            self.units.drain(..dead);
            self.slots.drain(..dead.min(self.slots.len()));
            self.base = keep_from;
        }
        let _ = max_history;
    }

    /// A delta longer than the history straddles its start: the part that
    /// left is taken off the segment (its chars counted into `chan_start`),
    /// so a segment never reaches into storage that is swept away. Each
    /// unit is counted once, so this stays proportional to what was appended.
    pub(super) fn trim_front_segment(&mut self, utf16: bool) {
        let Some(seg) = self.segments.front().copied() else {
            return;
        };
        // Without a pair a unit is a char (most text): nothing to count.
        let utf16 = utf16 && seg.pairs;
        let mut cut = self.start;
        // Never split a surrogate pair: the pair's char stays in the segment.
        if utf16
            && cut > seg.start
            && self
                .units
                .get(cut - self.base)
                .is_some_and(|u| (0xDC00..=0xDFFF).contains(u))
        {
            cut -= 1;
        }
        if cut <= seg.start {
            return;
        }
        let gone = &self.units[seg.start - self.base..cut - self.base];
        let chars = if utf16 {
            gone.iter().filter(|&&u| !(0xDC00..=0xDFFF).contains(&u)).count()
        } else {
            gone.len()
        };
        let front = self.segments.front_mut().expect("checked above");
        front.start = cut;
        front.len -= cut - seg.start;
        front.chan_start += chars;
    }

    /// Records examined position `pos` (its `chunk` units hash to `hash`)
    /// as its chunk's newest, unless the newest position with that hash
    /// holds different text, which gemini-cli leaves unrecorded.
    pub(super) fn record(&mut self, pos: usize, hash: u64, chunk: usize) -> Seen {
        debug_assert_eq!(self.slots.len(), pos - self.base);
        let in_reach = (pos + 1).saturating_sub(self.start);
        if in_reach * 2 > self.buckets.head.len() && self.buckets.head.len() < MAX_BUCKETS {
            self.grow_buckets(pos, in_reach);
        }
        let bucket = self.buckets.of(hash);
        let head = self.buckets.head[bucket];
        let mut q = head;
        let seen = loop {
            if q == NONE || q < self.start {
                break Seen::New;
            }
            let slot = self.slots[q - self.base];
            if slot.hash == hash {
                let (i, j) = (q - self.base, pos - self.base);
                break if self.units[i..i + chunk] == self.units[j..j + chunk] {
                    Seen::At(q)
                } else {
                    Seen::Collision
                };
            }
            q = slot.bucket_prev;
        };
        let slot = match seen {
            Seen::Collision => Slot {
                hash,
                bucket_prev: UNRECORDED,
                prev_same: NONE,
            },
            Seen::New | Seen::At(_) => {
                self.buckets.head[bucket] = pos;
                Slot {
                    hash,
                    bucket_prev: head,
                    prev_same: if let Seen::At(p) = seen { p } else { NONE },
                }
            }
        };
        self.slots.push(slot);
        seen
    }

    /// Makes the record of every examined position (when cold): each in
    /// reach recorded in order, as it would have been, so every chain is
    /// what it would be for the positions a look can still reach.
    pub(super) fn warm(&mut self, chunk: usize, top: u64) {
        self.quiet = 0;
        if self.hot {
            return;
        }
        self.hot = true;
        self.slots.clear();
        self.buckets.head.fill(NONE);
        self.slots.reserve(self.index - self.base);
        for pos in self.base..self.index {
            if pos < self.start {
                self.slots.push(Slot::UNEXAMINED);
            } else {
                let hash = self.hash(pos, chunk, top);
                self.record(pos, hash, chunk);
            }
        }
    }

    /// Drops the record (nothing in reach may fire); the units stay.
    pub(super) fn cool(&mut self) {
        self.hot = false;
        self.slots.clear();
    }

    /// Keeps only the units (4 bytes each): an idle session's history costs
    /// a tenth of what it does while examined. Not after a detection (the
    /// index stays on the chunk that fired, recorded).
    pub(super) fn compact(&mut self) {
        if self.hot && self.slots.len() != self.index.saturating_sub(self.base) {
            return;
        }
        let keep_from = self
            .segments
            .front()
            .map_or(self.start, |s| s.start.min(self.start))
            .max(self.base);
        self.units.drain(..keep_from - self.base);
        self.units.shrink_to_fit();
        self.base = keep_from;
        self.hot = false;
        self.slots = Vec::new();
        self.roller.forget();
        self.buckets = Buckets::default();
        self.segments.shrink_to_fit();
    }

    /// Buckets for `in_reach` positions, refilled with the recorded
    /// positions in history before `pos`, oldest first (so each chain runs
    /// newest to oldest, as if they had been recorded into these buckets).
    pub(super) fn grow_buckets(&mut self, pos: usize, in_reach: usize) {
        self.buckets = Buckets::new(in_reach.max(self.buckets.head.len()));
        for p in self.start..pos {
            let slot = &mut self.slots[p - self.base];
            if slot.bucket_prev == UNRECORDED {
                continue;
            }
            let bucket = self.buckets.of(slot.hash);
            slot.bucket_prev = self.buckets.head[bucket];
            self.buckets.head[bucket] = p;
        }
    }

    /// How many of the newest `limit` positions of a chunk are still in
    /// history ([`History::positions`] without building the list).
    pub(super) fn count_positions(&self, last: usize, limit: usize) -> usize {
        let (mut n, mut p) = (0, last);
        while n < limit && p != NONE && p >= self.start {
            n += 1;
            p = self.slots[p - self.base].prev_same;
        }
        n
    }

    /// The newest `limit` positions still in history of the chunk whose
    /// newest position is `last`, oldest first.
    pub(super) fn positions(&self, last: usize, limit: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut p = last;
        while out.len() < limit && p != NONE && p >= self.start {
            out.push(p);
            p = self.slots[p - self.base].prev_same;
        }
        out.reverse();
        out
    }

    /// Of the positions `from..to`, the one whose chunk had occurred most
    /// often by then (itself included, at most `limit`), with that count,
    /// if any chunk there had occurred before: what the record's chains
    /// would say, worked out from the units when the status is asked (the
    /// scan does not pay for it, and cold positions have no record).
    /// Chunks are told apart by their units, as gemini-cli's are.
    pub(super) fn most_seen(
        &self,
        from: usize,
        to: usize,
        chunk: usize,
        top: u64,
        limit: usize,
    ) -> Option<(usize, usize)> {
        let from = from.max(self.start);
        let to = to.min((self.end() + 1).saturating_sub(chunk));
        if from >= to {
            return None;
        }
        let mut roller = Roller::default();
        let mut at: HashMap<u64, Vec<usize>, BuildHasherDefault<Mixed>> = HashMap::default();
        let hashes: Vec<u64> = (from..to)
            .map(|p| roller.hash(&self.units, self.base, p, chunk, top))
            .collect();
        for &h in &hashes {
            at.entry(h).or_default();
        }
        roller.forget();
        for q in self.start..to {
            if let Some(list) = at.get_mut(&roller.hash(&self.units, self.base, q, chunk, top)) {
                list.push(q);
            }
        }
        let mut best: Option<(usize, usize)> = None;
        for (p, h) in (from..to).zip(hashes) {
            let list = &at[&h];
            let mine = self.slice(p, chunk);
            // Newest first; a hash shared by other text (rare) is looked
            // through only so far, so no text makes this slow.
            let count = list[..list.partition_point(|&q| q <= p)]
                .iter()
                .rev()
                .take(limit.saturating_mul(4))
                .filter(|&&q| self.slice(q, chunk) == mine)
                .take(limit)
                .count();
            if count >= 2 && best.is_none_or(|(c, _)| count > c) {
                best = Some((count, p));
            }
        }
        best
    }
}

/// A hasher for keys that are already hashes: one multiplication.
#[derive(Default)]
struct Mixed(u64);

impl Hasher for Mixed {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0 ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}
