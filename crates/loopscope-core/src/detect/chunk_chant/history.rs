//! chunk-chant's history: the units of the content in reach, chunk
//! hashes, the chain of each chunk's positions and the buckets that find a
//! chunk's newest position; compacted to its units while a session is quiet.

use std::collections::VecDeque;

use super::{mul_mod, BASE, MOD};

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
pub(super) const MAX_BUCKETS: usize = 1 << 22;

/// Text appended to the history by one delta, for mapping positions back to
/// content-channel offsets.
#[derive(Clone, Copy, Debug)]
pub(super) struct Segment {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) request: u64,
    /// Char offset of the delta in its request's content buffer.
    pub(super) chan_start: usize,
}

/// The history and chunk statistics, with absolute unit positions.
#[derive(Debug, Default)]
pub(super) struct History {
    /// Units from absolute position `base` on.
    pub(super) units: Vec<u32>,
    /// `prefix[i]` = hash of `units[..i]`; one longer than `units`.
    pub(super) prefix: Vec<u64>,
    /// Per position: the previous position of the same chunk, or NONE.
    pub(super) prev_same: Vec<usize>,
    pub(super) base: usize,
    /// Absolute start of the history (older units are gone).
    pub(super) start: usize,
    /// Next position to examine.
    pub(super) index: usize,
    pub(super) buckets: Buckets,
    /// Per examined position: its chunk hash, and the previous position
    /// recorded in its bucket (NONE for none, or for an unrecorded collision).
    pub(super) hashes: Vec<u64>,
    pub(super) bucket_prev: Vec<usize>,
    pub(super) segments: VecDeque<Segment>,
    /// Compacted ([`History::compact`]): the positions in reach left
    /// unrecorded (collisions); prefix, hashes, chains and buckets are gone
    /// until [`History::rebuild`] works them out again from the units.
    pub(super) compacted: Option<Vec<usize>>,
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
            prefix: self.prefix[dead.min(self.prefix.len())..].to_vec(),
            prev_same: self.prev_same[dead.min(self.prev_same.len())..].to_vec(),
            hashes: self.hashes[dead.min(self.hashes.len())..].to_vec(),
            bucket_prev: self.bucket_prev[dead.min(self.bucket_prev.len())..].to_vec(),
            base: keep_from,
            start: self.start,
            index: self.index,
            buckets: self.buckets.clone(),
            segments: self.segments.clone(),
            compacted: self.compacted.clone(),
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

    /// Empties the history: gemini-cli's resetContentTracking.
    pub(super) fn reset(&mut self) {
        let end = self.end();
        // Every recorded position falls before the new start: out of reach.
        let buckets = std::mem::take(&mut self.buckets);
        *self = History {
            base: end,
            start: end,
            index: end,
            prefix: vec![0],
            buckets,
            ..History::default()
        };
    }

    /// Empties the history and moves its end on by `units` that are never
    /// stored: the head of a delta longer than the whole history, which
    /// would be cut before any of it was examined.
    pub(super) fn skip(&mut self, units: usize) {
        self.reset();
        let end = self.end() + units;
        (self.base, self.start, self.index) = (end, end, end);
    }

    /// Prefix hashes for the units from `from` on (just appended).
    pub(super) fn extend_prefix(&mut self, from: usize) {
        if self.prefix.is_empty() {
            self.prefix.push(0);
        }
        let mut last = *self.prefix.last().expect("prefix starts with 0");
        let new = &self.units[from..];
        self.prefix.reserve(new.len());
        for &unit in new {
            let next = mul_mod(last, BASE) + u64::from(unit) + 1;
            last = if next >= MOD { next - MOD } else { next };
            self.prefix.push(last);
        }
    }

    pub(super) fn hash(&self, pos: usize, len: usize, pow: u64) -> u64 {
        let (i, j) = (pos - self.base, pos - self.base + len);
        let h = self.prefix[j] + MOD - mul_mod(self.prefix[i], pow);
        if h >= MOD {
            h - MOD
        } else {
            h
        }
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
            self.prev_same.resize(new_start - self.base, NONE);
            // Positions cut before they were examined are never recorded.
            self.hashes.resize(new_start - self.base, 0);
            self.bucket_prev.resize(new_start - self.base, NONE);
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
            self.prefix.drain(..dead);
            self.prev_same.drain(..dead.min(self.prev_same.len()));
            self.hashes.drain(..dead.min(self.hashes.len()));
            self.bucket_prev.drain(..dead.min(self.bucket_prev.len()));
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

    /// How many of the newest `limit` positions of a chunk are still in
    /// history ([`History::positions`] without building the list).
    /// Records examined position `pos` (its `chunk` units hash to `hash`)
    /// as its chunk's newest, unless the newest position with that hash
    /// holds different text, which gemini-cli leaves unrecorded.
    pub(super) fn record(&mut self, pos: usize, hash: u64, chunk: usize) -> Seen {
        let in_reach = (pos + 1).saturating_sub(self.start);
        if in_reach * 2 > self.buckets.head.len() && self.buckets.head.len() < MAX_BUCKETS {
            self.grow_buckets(pos, in_reach);
        }
        let bucket = self.buckets.of(hash);
        let mut q = self.buckets.head[bucket];
        let seen = loop {
            if q == NONE || q < self.start {
                break Seen::New;
            }
            let i = q - self.base;
            if self.hashes[i] == hash {
                let j = pos - self.base;
                break if self.units[i..i + chunk] == self.units[j..j + chunk] {
                    Seen::At(q)
                } else {
                    Seen::Collision
                };
            }
            q = self.bucket_prev[i];
        };
        self.hashes.push(hash);
        if matches!(seen, Seen::Collision) {
            self.bucket_prev.push(UNRECORDED);
        } else {
            self.bucket_prev.push(self.buckets.head[bucket]);
            self.buckets.head[bucket] = pos;
        }
        seen
    }

    /// Keeps only the units (4 bytes each) and the collisions: an idle
    /// session's history costs a tenth of what it does while examined. Not
    /// after a detection (the index stays on the chunk that fired).
    pub(super) fn compact(&mut self) {
        let examined = self.index.saturating_sub(self.base);
        if self.compacted.is_some() || self.prev_same.len() != examined || self.hashes.len() != examined {
            return;
        }
        let keep_from = self
            .segments
            .front()
            .map_or(self.start, |s| s.start.min(self.start))
            .max(self.base);
        let collisions = (self.start.max(self.base)..self.index)
            .filter(|p| self.bucket_prev[p - self.base] == UNRECORDED)
            .collect();
        self.units.drain(..keep_from - self.base);
        self.units.shrink_to_fit();
        self.base = keep_from;
        for v in [&mut self.prev_same, &mut self.bucket_prev] {
            *v = Vec::new();
        }
        self.prefix = Vec::new();
        self.hashes = Vec::new();
        self.buckets = Buckets::default();
        self.segments.shrink_to_fit();
        self.compacted = Some(collisions);
    }

    /// Works out again what [`History::compact`] dropped: the prefix
    /// hashes, and each examined position in reach recorded in order as it
    /// was (the collisions left out), so every chain is what it was for
    /// the positions a look can still reach.
    pub(super) fn rebuild(&mut self, chunk: usize, pow: u64) {
        let Some(collisions) = self.compacted.take() else {
            return;
        };
        self.extend_prefix(0);
        let examined = self.index.saturating_sub(self.base);
        self.prev_same.reserve(examined);
        self.hashes.reserve(examined);
        self.bucket_prev.reserve(examined);
        for pos in self.base..self.index {
            if pos < self.start {
                self.prev_same.push(NONE);
                self.hashes.push(0);
                self.bucket_prev.push(NONE);
                continue;
            }
            let hash = self.hash(pos, chunk, pow);
            if collisions.binary_search(&pos).is_ok() {
                self.hashes.push(hash);
                self.bucket_prev.push(UNRECORDED);
                self.prev_same.push(NONE);
                continue;
            }
            let previous = match self.record(pos, hash, chunk) {
                Seen::At(p) => p,
                Seen::New | Seen::Collision => NONE,
            };
            self.prev_same.push(previous);
        }
    }

    /// Buckets for `in_reach` positions, refilled with the recorded
    /// positions in history before `pos`, oldest first (so each chain runs
    /// newest to oldest, as if they had been recorded into these buckets).
    pub(super) fn grow_buckets(&mut self, pos: usize, in_reach: usize) {
        self.buckets = Buckets::new(in_reach.max(self.buckets.head.len()));
        for p in self.start..pos {
            let i = p - self.base;
            if self.bucket_prev[i] == UNRECORDED {
                continue;
            }
            let bucket = self.buckets.of(self.hashes[i]);
            self.bucket_prev[i] = self.buckets.head[bucket];
            self.buckets.head[bucket] = p;
        }
    }

    pub(super) fn count_positions(&self, last: usize, limit: usize) -> usize {
        let (mut n, mut p) = (0, last);
        while n < limit && p != NONE && p >= self.start {
            n += 1;
            p = self.prev_same[p - self.base];
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
            p = self.prev_same[p - self.base];
        }
        out.reverse();
        out
    }
}
