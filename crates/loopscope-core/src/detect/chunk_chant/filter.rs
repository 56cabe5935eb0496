//! Which chunk positions may fire, found cheaply, so that the exact record
//! (hashes, chains, buckets) is kept only where a chunk may fire.
//!
//! A chunk fires when it occurs `threshold` times with the first and the
//! last at most `span` units apart (`threshold - 1` times the largest
//! average distance). The text is cut into blocks of `spacing` units
//! (aligned on absolute positions; `spacing` is a power of two below
//! `threshold`), and at each block start (the grid) the k-gram of the next
//! `blocks` blocks is looked up among the grid's earlier k-grams and then
//! indexed. Each of the `threshold` occurrences holds, at its first grid
//! position, a k-gram of the chunk at an offset below `spacing`; there are
//! fewer offsets than occurrences, so two occurrences hold the same k-gram
//! at grid positions `gi < gj` at most `span` apart, and looking up `gj`
//! finds `gi`. The firing position is then within `spacing - 1` before
//! `gj` and `span` after it: that range is marked, and only marked
//! positions are examined exactly. No firing is missed; a mark is only a
//! "may": the exact record decides.
//!
//! Prose costs a multiply-add per unit (the block hashes, independent of
//! one another) and a lookup in a table of a few KB per block, not per
//! unit.

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

/// BASE^(len - 1).
pub(super) fn top_weight(len: usize) -> u64 {
    (1..len).fold(1u64, |acc, _| acc.wrapping_mul(BASE))
}

/// The largest block: more would make the k-grams short for a chunk.
const MAX_SPACING: usize = 16;
/// The most blocks in a k-gram (64 units at least: prose seldom repeats one).
const MAX_BLOCKS: usize = 64;

/// A weight per unit of a block (odd, random, 32 bits: a unit times a
/// weight is one 32-by-32-bit product): a block's hash is the sum of its
/// units' products, independent multiplications the processor overlaps,
/// instead of a chain of them.
static WEIGHTS: [u32; MAX_SPACING] = [
    0x9E37_79B9,
    0xC2B2_AE3D,
    0x1656_67B1,
    0x85EB_CA77,
    0x27D4_EB2F,
    0xD6E8_FEB9,
    0xA076_1D65,
    0xE703_7ED1,
    0x8EBC_6AF1,
    0x5899_65CD,
    0x1D8E_4E27,
    0xFF51_AFD7,
    0xC4CE_B9FF,
    0x94D0_49BB,
    0xBF58_476D,
    0x2545_F491,
];

/// A block's hash (its units in order; equal blocks, equal hashes).
#[inline]
fn block_hash(units: &[u32]) -> u64 {
    let sum = units
        .iter()
        .zip(&WEIGHTS)
        .fold(0u64, |h, (&u, &w)| h.wrapping_add(u64::from(u ^ w) * u64::from(w)));
    let x = (sum ^ (sum >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

/// Fibonacci hashing: a bucket from a hash's top bits.
const BUCKET_MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// A grid position's k-gram: its hash and the previous grid ordinal in its
/// bucket (plus one; 0 for none).
#[derive(Clone, Copy, Debug)]
struct Node {
    hash: u64,
    prev: usize,
}

#[derive(Clone, Debug)]
pub(super) struct KgramFilter {
    /// Units per block, and between grid positions (a power of two).
    spacing: usize,
    /// Blocks per k-gram.
    blocks: usize,
    /// The farthest apart the first and the last of `threshold` occurrences
    /// of a chunk can be and still fire.
    span: usize,
    /// More grid ordinals (position / spacing) than a look can reach in
    /// `max_history`: the ring's largest size, a power of two.
    reach: usize,
    /// The next block to hash (its number: its first position / spacing).
    next_block: usize,
    /// Blocks hashed one after the other up to `next_block` (a k-gram needs
    /// `blocks` of them; the history's start or a reset breaks the run).
    run: usize,
    /// The k-gram hash ending at `next_block - 1`, to roll on from.
    kgram: u64,
    /// The latest blocks' hashes, by block number modulo its (power-of-two) length.
    recent: Vec<u64>,
    /// Grid ordinal `n`'s node is at `n % ring.len()` (allocated on first use).
    ring: Vec<Node>,
    /// Per bucket, the newest grid ordinal whose k-gram falls in it, plus
    /// one (0 for none).
    head: Vec<usize>,
    shift: u32,
    /// Ranges of positions that may fire, `[start, end)`, oldest first,
    /// apart from one another.
    marked: VecDeque<(usize, usize)>,
}

impl KgramFilter {
    pub(super) fn new(chunk: usize, threshold: usize, max_avg_distance: usize, max_history: usize) -> KgramFilter {
        // Fewer grid offsets than occurrences (so two share one), and at
        // least one whole block in a k-gram inside every chunk.
        let most = (threshold - 1).min(chunk.div_ceil(2)).clamp(1, MAX_SPACING);
        let spacing = 1usize << most.ilog2();
        // A k-gram at any of the first `spacing` offsets of a chunk fits in
        // it; a shorter one would do too (more hits, none missed), so a huge
        // chunk keeps a bounded list of block hashes.
        let blocks = ((chunk + 1 - spacing) / spacing).clamp(1, MAX_BLOCKS);
        let gaps = threshold - 1;
        // One more unit per gap than the bound, so the average's rounding
        // (a float division) can never put a firing chunk outside.
        let span = max_avg_distance
            .saturating_mul(gaps)
            .saturating_add(gaps)
            .min(max_history);
        KgramFilter {
            spacing,
            blocks,
            span,
            // Out-of-reach ordinals may be overwritten: every ordinal at or
            // after the history's start keeps its node.
            // (A power of two: a mask, not a division, finds a node.)
            reach: (max_history / spacing + 2).next_power_of_two(),
            next_block: 0,
            run: 0,
            kgram: 0,
            recent: vec![0; blocks.next_power_of_two()],
            ring: Vec::new(),
            head: Vec::new(),
            shift: 0,
            marked: VecDeque::new(),
        }
    }

    /// Forgets the marks and the blocks hashed (the history was emptied).
    pub(super) fn reset(&mut self) {
        self.run = 0;
        self.marked.clear();
    }

    /// Lets go of the tables (a quiet session): they are made again when needed.
    pub(super) fn release(&mut self) {
        self.ring = Vec::new();
        self.head = Vec::new();
        self.marked.shrink_to_fit();
    }

    /// Hashes every block of the history (`units` from absolute position
    /// `base`, in reach from `start`) not hashed yet, and looks up and
    /// indexes every k-gram they complete.
    pub(super) fn feed(&mut self, units: &[u32], base: usize, start: usize) {
        let (spacing, blocks) = (self.spacing, self.blocks);
        let grid_shift = spacing.trailing_zeros();
        let end = base + units.len();
        // The first block wholly in reach.
        let first_block = (start + spacing - 1) >> grid_shift;
        if self.next_block < first_block {
            self.next_block = first_block;
            self.run = 0;
        }
        let complete = end >> grid_shift;
        if self.next_block >= complete {
            return;
        }
        // The ring holds every grid ordinal in reach: it grows with the
        // history a session really has (a fresh or small one costs little;
        // `watch` keeps one per session), up to what `max_history` needs.
        let needed = ((end - start) >> grid_shift) + 2;
        let needed = needed.next_power_of_two().min(self.reach);
        if self.ring.len() < needed {
            self.allocate(needed);
            // Made again (grown, or released while quiet): the k-grams in
            // reach indexed before are indexed again.
            let indexed_to = (self.next_block + 1).saturating_sub(blocks).max(first_block);
            if self.run >= blocks {
                for ord in first_block..indexed_to {
                    let hash = self.kgram_at(units, base, ord);
                    self.insert(ord, hash);
                }
            }
        }
        let mask = self.ring.len() - 1;
        let recent_mask = self.recent.len() - 1;
        let turn = (blocks % 64) as u32;
        let (mut run, mut kgram) = (self.run, self.kgram);
        let (shift, span) = (self.shift, self.span);
        // Locals, not fields: stores through the tables could alias
        // fields as far as the compiler knows.
        let (head, ring, recent, marked) = (
            &mut self.head[..],
            &mut self.ring[..],
            &mut self.recent[..],
            &mut self.marked,
        );
        for block in self.next_block..complete {
            let at = (block << grid_shift) - base;
            let hash = block_hash(&units[at..at + spacing]);
            let leaving = recent[block.wrapping_sub(blocks) & recent_mask];
            recent[block & recent_mask] = hash;
            run += 1;
            if run < blocks {
                continue;
            }
            kgram = if run == blocks {
                (0..blocks).fold(0u64, |k, i| {
                    k.rotate_left(1) ^ recent[(block + 1 + i - blocks) & recent_mask]
                })
            } else {
                kgram.rotate_left(1) ^ leaving.rotate_left(turn) ^ hash
            };
            // The k-gram starting at grid ordinal `ord` is complete: an
            // earlier grid position within `span` holding it marks the
            // positions that may fire.
            let ord = block + 1 - blocks;
            let pos = ord << grid_shift;
            let first = first_block.max((pos.saturating_sub(span) + spacing - 1) >> grid_shift);
            let b = (kgram.wrapping_mul(BUCKET_MIX) >> shift) as usize;
            let ord1 = head[b];
            if in_chain(ring, mask, ord1, kgram, first) {
                mark(marked, pos.saturating_sub(spacing - 1), pos + span + 1);
            }
            ring[ord & mask] = Node {
                hash: kgram,
                prev: ord1,
            };
            head[b] = ord + 1;
        }
        (self.run, self.kgram, self.next_block) = (run, kgram, complete);
    }

    /// The k-gram hash at grid ordinal `ord`, from the units.
    fn kgram_at(&self, units: &[u32], base: usize, ord: usize) -> u64 {
        let spacing = self.spacing;
        (0..self.blocks).fold(0u64, |k, i| {
            let at = (ord + i) * spacing - base;
            k.rotate_left(1) ^ block_hash(&units[at..at + spacing])
        })
    }

    fn insert(&mut self, ord: usize, hash: u64) {
        let bucket = (hash.wrapping_mul(BUCKET_MIX) >> self.shift) as usize;
        let mask = self.ring.len() - 1;
        self.ring[ord & mask] = Node {
            hash,
            prev: self.head[bucket],
        };
        self.head[bucket] = ord + 1;
    }

    fn allocate(&mut self, size: usize) {
        // Two buckets per grid position: the table stays in the fastest
        // cache (a lookup per block, most finding an empty bucket or one
        // out of reach).
        let buckets = size * 2;
        self.ring = vec![Node { hash: 0, prev: 0 }; size];
        self.head = vec![0; buckets];
        self.shift = 64 - buckets.trailing_zeros();
    }

    /// The first position from `pos` on that may fire, as far as the
    /// k-grams looked up tell.
    pub(super) fn next_suspect(&mut self, pos: usize) -> Option<usize> {
        while self.marked.front().is_some_and(|&(_, end)| end <= pos) {
            self.marked.pop_front();
        }
        self.marked.front().map(|&(start, _)| start.max(pos))
    }

    /// Whether the chunk at `pos` may fire. Positions are asked in
    /// increasing order.
    pub(super) fn suspect(&mut self, pos: usize) -> bool {
        self.next_suspect(pos) == Some(pos)
    }
}

/// Whether a grid k-gram with this hash is in the chain from `ord1` (an
/// ordinal plus one) on, at ordinal `first` or later.
#[inline]
fn in_chain(ring: &[Node], mask: usize, mut ord1: usize, hash: u64, first: usize) -> bool {
    while ord1 > first {
        let node = ring[(ord1 - 1) & mask];
        if node.hash == hash {
            return true;
        }
        ord1 = node.prev;
    }
    false
}

/// Adds `[start, end)` to the marked ranges (starts come in increasing
/// order: a range overlapping the last one extends it).
fn mark(marked: &mut VecDeque<(usize, usize)>, start: usize, end: usize) {
    match marked.back_mut() {
        Some(last) if start <= last.1 => last.1 = last.1.max(end),
        _ => marked.push_back((start, end)),
    }
}
