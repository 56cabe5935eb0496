//! Which chunk positions may repeat an earlier chunk, found cheaply, so
//! that the exact record (hashes, chains, buckets) is kept only where a
//! chunk may repeat.
//!
//! A chunk of `chunk` units is cut into a k-gram of `k` units at each of
//! its first `spacing` offsets (`spacing - 1 + k == chunk`). Every
//! position whose offset is a multiple of `spacing` (the grid) indexes its
//! k-gram. If the chunk at `p` equals an earlier one at `q`, the grid
//! position `s` in `[q, q + spacing)` holds the k-gram that the chunk at
//! `p` holds at `x = p + (s - q)`, so looking up every k-gram as it
//! completes finds `x` among the grid's k-grams, and `p` is within
//! `spacing` positions before a hit. No repeat is missed; a hit is only a
//! "may": the exact record decides. Prose without repeats costs a rolled
//! hash and a lookup in a table of a few KB per unit.

use std::collections::VecDeque;

use super::BASE;

/// A polynomial hash of `len` units rolled one position at a time: the
/// hash at `pos` comes from the one at `pos - 1` in O(1).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Roller {
    at: Option<(usize, u64)>,
}

impl Roller {
    pub(super) fn forget(&mut self) {
        self.at = None;
    }

    /// The hash of `units[pos - base..][..len]`; `top` is BASE^(len - 1),
    /// the weight of the unit that leaves.
    pub(super) fn hash(&mut self, units: &[u32], base: usize, pos: usize, len: usize, top: u64) -> u64 {
        let h = match self.at {
            Some((p, h)) if p + 1 == pos && p >= base => roll(h, units[p - base], units[pos + len - 1 - base], top),
            Some((p, h)) if p == pos => h,
            _ => units[pos - base..pos - base + len]
                .iter()
                .fold(0u64, |h, &u| h.wrapping_mul(BASE).wrapping_add(u64::from(u) + 1)),
        };
        self.at = Some((pos, h));
        h
    }
}

/// The hash of the units one position on: `out` leaves, `inn` comes in.
#[inline]
fn roll(hash: u64, out: u32, inn: u32, top: u64) -> u64 {
    let (out, inn) = (u64::from(out) + 1, u64::from(inn) + 1);
    hash.wrapping_sub(out.wrapping_mul(top))
        .wrapping_mul(BASE)
        .wrapping_add(inn)
}

/// Whether a grid k-gram with this hash is in the chain from `ord1` on.
fn in_chain(ring: &[Node], mut ord1: usize, hash: u64, first_grid: usize) -> bool {
    while ord1 > first_grid {
        let node = ring[(ord1 - 1) & (ring.len() - 1)];
        if node.hash == hash {
            return true;
        }
        ord1 = node.prev;
    }
    false
}

/// Fibonacci hashing: a bucket from a hash's top bits.
const BUCKET_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// A unit's code in the k-gram hash: a mixed 64-bit value.
#[inline]
fn code(unit: u32) -> u64 {
    let x = (u64::from(unit) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// The k-gram hash, a cyclic polynomial ("buzhash"): the XOR of each
/// unit's code rotated by its distance from the end. Rolling it takes a
/// rotation and two XORs in sequence, half the latency of the polynomial
/// hash's multiplications: it is on every position's path.
fn kgram_hash(units: &[u32]) -> u64 {
    units.iter().fold(0, |h, &u| h.rotate_left(1) ^ code(u))
}

/// The k-gram hash one position on: `out` leaves (its code turned by k),
/// `inn` comes in.
#[inline]
fn roll_kgram(hash: u64, out: u32, inn: u32, turn: u32) -> u64 {
    hash.rotate_left(1) ^ code(out).rotate_left(turn) ^ code(inn)
}

/// BASE^(len - 1).
pub(super) fn top_weight(len: usize) -> u64 {
    (1..len).fold(1u64, |acc, _| acc.wrapping_mul(BASE))
}

/// A grid position's k-gram: its hash and the previous grid ordinal in its
/// bucket (plus one; 0 for none).
#[derive(Clone, Copy, Debug)]
struct Node {
    hash: u64,
    prev: usize,
}

#[derive(Clone, Debug)]
pub(super) struct KgramFilter {
    k: usize,
    spacing: usize,
    /// More grid ordinals (position / spacing) than a look can reach in
    /// `max_history`: the ring's largest size, a power of two.
    reach: usize,
    /// Positions from `next` on to the next grid position.
    to_grid: usize,
    /// The hash of the k-gram at `next - 1`, to roll on from.
    last: Option<u64>,
    /// The next position whose k-gram is looked up.
    next: usize,
    /// Grid ordinal `n`'s node is at `n % ring.len()` (allocated on first use).
    ring: Vec<Node>,
    /// Per bucket, the newest grid ordinal whose k-gram falls in it, plus
    /// one (0 for none).
    head: Vec<usize>,
    shift: u32,
    /// Positions whose k-gram was at an earlier grid position, oldest first.
    hits: VecDeque<usize>,
}

impl KgramFilter {
    pub(super) fn new(chunk: usize, max_history: usize) -> KgramFilter {
        // About a third of the chunk between grid positions: k-grams long enough
        // that prose rarely shares one without a repeat (k = 34 of 50).
        // (A power of two: positions become grid ordinals by a shift, not
        // a division, on every delta.)
        let spacing = 1usize << (chunk / 3).max(1).ilog2();
        let k = chunk + 1 - spacing;
        KgramFilter {
            k,
            spacing,
            // Out-of-reach ordinals may be overwritten: every ordinal at or
            // after the history's start keeps its node.
            // (A power of two: a mask, not a division, finds a node.)
            reach: (max_history / spacing + 2).next_power_of_two(),
            last: None,
            next: 0,
            to_grid: 0,
            ring: Vec::new(),
            head: Vec::new(),
            shift: 0,
            hits: VecDeque::new(),
        }
    }

    /// Forgets the positions looked up (the history was emptied).
    pub(super) fn reset(&mut self) {
        self.last = None;
        self.hits.clear();
    }

    /// Lets go of the tables (a quiet session): they are made again when needed.
    pub(super) fn release(&mut self) {
        self.ring = Vec::new();
        self.head = Vec::new();
        self.hits.shrink_to_fit();
    }

    /// Looks up (and indexes, on the grid) every k-gram of the history
    /// (`units` from absolute position `base`, in reach from `start`) not
    /// looked up yet.
    pub(super) fn feed(&mut self, units: &[u32], base: usize, start: usize) {
        let end = base + units.len();
        if self.next < start {
            self.next = start;
            self.to_grid = start.wrapping_neg() & (self.spacing - 1);
        }
        if self.next + self.k > end {
            return;
        }
        let spacing = self.spacing;
        let grid_shift = spacing.trailing_zeros();
        let first_grid = (start + spacing - 1) >> grid_shift;
        // The ring holds every grid ordinal in reach: it grows with the
        // history a session really has (a fresh or small one costs little;
        // `watch` keeps one per session), up to what `max_history` needs.
        let needed = (((end - start) >> grid_shift) + 2).next_power_of_two().min(self.reach);
        if self.ring.len() < needed {
            self.allocate(needed);
            // Made again (grown, or released while quiet): the grid
            // positions in reach looked up before are indexed again.
            for ord in first_grid..(self.next + spacing - 1) >> grid_shift {
                let at = ord * spacing - base;
                let hash = kgram_hash(&units[at..at + self.k]);
                self.insert(ord, hash);
            }
        }
        let (k, mask) = (self.k, self.ring.len() - 1);
        let turn = (k % 64) as u32;
        let mut pos = self.next;
        let mut hash = match self.last {
            Some(h) if pos > start => roll_kgram(h, units[pos - 1 - base], units[pos + k - 1 - base], turn),
            _ => kgram_hash(&units[pos - base..pos - base + k]),
        };
        // Locals, not fields: stores through the tables could alias
        // fields as far as the compiler knows, which would put a store and
        // a reload of each on every position's path.
        let (shift, mut to_grid) = (self.shift, self.to_grid);
        let (head, ring, hits) = (&mut self.head[..], &mut self.ring[..], &mut self.hits);
        let bucket = |hash: u64| (hash.wrapping_mul(BUCKET_MIX) >> shift) as usize;
        loop {
            // The newest grid k-gram of the hash's bucket, if in reach
            // (ordinals are kept plus one: 0 is none, never in reach); the
            // rest of its chain only when it is in reach with another hash
            // and has an older one in reach (rare). No branch on the
            // common path, so the loads of many positions overlap.
            let b = bucket(hash);
            let ord1 = head[b];
            let node = ring[ord1.wrapping_sub(1) & mask];
            let in_reach = ord1 > first_grid;
            let mut hit = in_reach & (node.hash == hash);
            if in_reach & !hit & (node.prev > first_grid) {
                hit = in_chain(ring, node.prev, hash, first_grid);
            }
            if hit {
                hits.push_back(pos);
            }
            if to_grid == 0 {
                ring[(pos >> grid_shift) & mask] = Node { hash, prev: ord1 };
                head[b] = (pos >> grid_shift) + 1;
                to_grid = spacing;
            }
            to_grid -= 1;
            if pos + 1 + k > end {
                break;
            }
            hash = roll_kgram(hash, units[pos - base], units[pos + k - base], turn);
            pos += 1;
        }
        self.to_grid = to_grid;
        self.last = Some(hash);
        self.next = pos + 1;
    }

    fn bucket(&self, hash: u64) -> usize {
        (hash.wrapping_mul(BUCKET_MIX) >> self.shift) as usize
    }

    fn insert(&mut self, ord: usize, hash: u64) {
        let bucket = self.bucket(hash);
        let mask = self.ring.len() - 1;
        self.ring[ord & mask] = Node {
            hash,
            prev: self.head[bucket],
        };
        self.head[bucket] = ord + 1;
    }

    fn allocate(&mut self, size: usize) {
        // Eight buckets per grid position: most lookups find an empty
        // bucket or one out of reach, a branch rarely mispredicted.
        let buckets = size * 8;
        self.ring = vec![Node { hash: 0, prev: 0 }; size];
        self.head = vec![0; buckets];
        self.shift = 64 - buckets.trailing_zeros();
    }

    /// The first position from `pos` on whose chunk may equal an earlier
    /// one, as far as the k-grams looked up tell.
    pub(super) fn next_suspect(&mut self, pos: usize) -> Option<usize> {
        while self.hits.front().is_some_and(|&x| x < pos) {
            self.hits.pop_front();
        }
        self.hits
            .front()
            .map(|&x| (x + 1).saturating_sub(self.spacing).max(pos))
    }

    /// Whether the chunk at `pos` may equal an earlier one in history: a
    /// k-gram within its first `spacing` offsets was at a grid position
    /// before. Positions are asked in increasing order.
    pub(super) fn suspect(&mut self, pos: usize) -> bool {
        while self.hits.front().is_some_and(|&x| x < pos) {
            self.hits.pop_front();
        }
        self.hits.front().is_some_and(|&x| x < pos + self.spacing)
    }
}
