//! How text-loop reads a channel: the normalized view kept in a ring
//! (white space and digit runs folded, with a map back to original char
//! offsets), short periods followed with byte lanes, longer ones proposed
//! by k-grams and followed char by char, and a quiet path that steps the
//! common case with its state in locals. It finds periodic tails; whether
//! a tail is a loop is the detector's to judge (`super::judge`).

use super::lanes::{Lanes, Triggers};
use super::CODE_FACTOR;
use crate::detect::Detection;
use candidates::{follow, propose};
use quiet::quiet_ascii;
use std::collections::VecDeque;

mod candidates;
mod quiet;

/// Periods up to this are checked char by char; longer ones by k-grams of this size.
pub(super) const SHORT: usize = 16;
/// k-gram buckets (direct-mapped): 16 KB, half the first-level cache. Each
/// entry holds a tag from the k-gram's hash besides its position, so a
/// bucket taken by another k-gram rarely proposes anything; a k-gram whose
/// bucket was taken since is found through its neighbours in the loop.
const TABLE: usize = 1 << 12;
/// k-grams are looked up at positions that are multiples of this.
const LOOKUP: usize = 4;
/// Long periods followed at once.
const MAX_CANDIDATES: usize = 8;
/// The normalized text kept starts at this many chars and doubles as needed.
const MIN_RING: usize = 1 << 10;
/// Folds held before the ones that fell out of the ring are let go of (a
/// fold is looked up by binary search, so a few dozen cost nothing).
const SKEWS: usize = 64;

/// Bytes by what the normalized view does with them: a space or a digit
/// folds the ones of its class that follow, a backtick may open a fence,
/// and a byte that is not ASCII starts a char the general path decodes.
const SPACE: u8 = 1;
const DIGIT: u8 = 2;
const TICK: u8 = 4;
const WIDE: u8 = 8;
const CLASS: [u8; 256] = {
    let mut t = [WIDE; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if crate::detect::is_ascii_space(c) {
            SPACE
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c == b'`' {
            TICK
        } else {
            0
        };
        b += 1;
    }
    t
};
/// ASCII chars as the normalized view has them: white space a space, a
/// digit `0`.
const NORMAL: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match CLASS[b] {
            SPACE => b' ',
            DIGIT => b'0',
            _ => b as u8,
        };
        b += 1;
    }
    t
};

/// A char's one-byte code for the short-period lanes: exact for ASCII, a
/// fold for the rest (lanes only propose; runs are then checked exactly).
fn code(c: u32) -> u8 {
    (c ^ (c >> 8) ^ (c >> 16)) as u8
}

/// A k-gram's place in the table: its bucket and its tag (the entry's top
/// byte; the other 24 bits are the position, request origin plus index,
/// wrapping).
#[derive(Clone, Copy)]
struct Kgram {
    slot: usize,
    tag: u32,
}

const POSITION: u32 = (1 << 24) - 1;

impl Kgram {
    fn of(hash: u64) -> Kgram {
        let m = hash.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let bits = TABLE.trailing_zeros();
        Kgram {
            slot: (m >> (64 - bits)) as usize,
            tag: ((m >> (56 - bits)) as u32) << 24,
        }
    }

    fn entry(self, at: u32) -> u32 {
        self.tag | (at & POSITION)
    }

    /// How far back the entry's k-gram was seen, if it is this one's
    /// (tags equal); 0 for none. Positions are 24 bits: a period is far
    /// shorter, and every proposal is checked char by char.
    fn distance(self, entry: u32, at: u32) -> usize {
        if entry & !POSITION == self.tag {
            (at.wrapping_sub(entry) & POSITION) as usize
        } else {
            0
        }
    }
}

/// A char's contribution to the k-gram hash: the k-gram hash is
/// `(h << 4) ^ gear(c)` over the last SHORT chars, so each char leaves it
/// after exactly SHORT steps (16 x 4 bits = 64) and the update is one shift
/// and one xor.
const fn gear(c: u32) -> u64 {
    let x = (c as u64)
        .wrapping_add(0x9E37_79B9_7F4A_7C15)
        .wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 31)
}

/// The per-char state of a channel: plain values, which the quiet path
/// copies into locals for the length of its run so that they live in
/// registers (fields behind a `&mut` are reloaded after every store into
/// the ring), and writes back when it stops.
#[derive(Clone, Copy, Debug, Default)]
struct Hot {
    /// Normalized chars in this request (the index of the next one).
    len: usize,
    /// Chars folded away so far (the original offset of the next view
    /// char is `len + skew`).
    skew: usize,
    /// The class of the last char kept: a space or a digit folds the ones
    /// of its class that follow.
    last: u8,
    /// Backticks in a row, and whether a ``` fence is open (code repeats
    /// lines legitimately, so a loop there needs more copies).
    ticks: u8,
    in_code: bool,
    /// Short periods: per period, positions in a row whose code equals
    /// the code p before ([`Lanes`]).
    lanes: Lanes,
    /// The position the exact short runs are for, if they are kept.
    exact_at: Option<usize>,
    /// k-gram hash of the last SHORT normalized chars.
    hash: u64,
    /// Where this request's positions start in `seen`'s numbering.
    origin: u64,
}

/// One channel of the current request, seen through the normalized view.
#[derive(Clone, Debug, Default)]
pub(super) struct Stream {
    hot: Hot,
    /// The last normalized chars, at `index & (ring.len() - 1)`; the ring
    /// grows (doubling) up to what the longest period needs.
    ring: Vec<u32>,
    /// Where the view's map to original offsets jumps (after folded
    /// chars): (view index, original offset minus view index) from there on.
    skews: VecDeque<(usize, usize)>,
    /// The true short runs per period, while some lane proposes.
    exact: [u32; SHORT],
    /// k-gram bucket -> the tag and position of the last k-gram that fell
    /// there ([`Kgram`]). A new request's positions start past the old ones
    /// (a higher origin), so old entries need no clearing: their distance
    /// is out of reach or checked char by char, so a stale entry costs a
    /// comparison, never a wrong answer.
    seen: Vec<u32>,
    /// Long periods being followed: (period, positions in a row with
    /// v[i] == v[i-period]). A k-gram seen again at distance p proposes p.
    candidates: Vec<(usize, usize)>,
    /// Best candidate so far: (copies in tenths, period), for the status.
    best: (usize, usize),
    /// The last tail judged no loop: (period, start, copies).
    judged: Option<(usize, usize, usize)>,
}

/// A periodic tail found: the period and the region [start, end) in view indexes.
pub(super) struct Tail {
    pub(super) period: usize,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// The normalized text held: the last `ring.len()` chars before `len`.
fn first(len: usize, ring: &[u32]) -> usize {
    len.saturating_sub(ring.len())
}

fn at(ring: &[u32], i: usize) -> u32 {
    ring[i & (ring.len() - 1)]
}

impl Stream {
    /// Reads a delta: every periodic tail with the copies of a loop goes to
    /// `judge`, whose first detection ends the read. `QUIET`: with the
    /// quiet path (always, but in the tests that hold the two ways equal).
    /// Always inlined, as it was before the switch.
    #[inline(always)]
    pub(super) fn read<const QUIET: bool>(
        &mut self,
        text: &str,
        max_period: usize,
        trigger: &Triggers,
        needed: impl Fn(usize) -> usize,
        judge: impl Fn(&Stream, &Tail, usize, usize) -> Option<Detection>,
    ) -> Option<Detection> {
        let stream = self;
        stream.prepare(text.len(), max_period);
        let mut chars = text.chars();
        loop {
            // The state is worked on in place: a copy in a local was written
            // back after every delta with wide moves that waited on the
            // narrow stores of the quiet path (a stall per delta).
            let Stream {
                hot,
                ring,
                seen,
                candidates,
                exact,
                skews,
                best,
                judged,
            } = &mut *stream;
            let mut held = Held {
                ring,
                seen,
                candidates,
                exact,
                trigger,
                skews,
                best,
                max_period,
            };
            let Some((tail, n, need)) = read_until_loop::<QUIET>(hot, &mut held, &mut chars, *judged, &needed) else {
                break;
            };
            if let Some(d) = judge(stream, &tail, n, need) {
                return Some(d);
            }
            stream.judged = Some((tail.period, tail.start, n));
        }
        None
    }

    /// A new request: everything starts over but the allocations, and the
    /// k-gram table, whose entries fall behind the new origin.
    pub(super) fn restart(&mut self) {
        let origin = self.hot.origin + self.hot.len as u64 + 1;
        self.hot = Hot {
            origin,
            ..Hot::default()
        };
        self.skews.clear();
        self.candidates.clear();
        self.best = (0, 0);
        self.judged = None;
    }

    /// Best tail so far: (copies in tenths, period), for the status.
    pub(super) fn best(&self) -> (usize, usize) {
        self.best
    }

    /// The oldest view index still held.
    pub(super) fn first(&self) -> usize {
        first(self.hot.len, &self.ring)
    }

    pub(super) fn at(&self, i: usize) -> u32 {
        at(&self.ring, i)
    }

    pub(super) fn char_at(&self, i: usize) -> char {
        char::from_u32(self.at(i)).unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    /// The original char offset of view index `v` (the end maps to what was read).
    pub(super) fn offset(&self, v: usize) -> usize {
        if v >= self.hot.len {
            return self.hot.len + self.hot.skew;
        }
        let k = self.skews.partition_point(|&(at, _)| at <= v);
        v + if k == 0 { 0 } else { self.skews[k - 1].1 }
    }

    /// Before a delta of up to `more` chars: a ring that holds them without
    /// wrapping onto what is still needed (doubling, re-placing what it
    /// holds, up to what `max_period` needs), the k-gram table, and the
    /// folds that fell out of the ring let go of now and then (every delta
    /// pays this check: the common case is two comparisons).
    #[inline(always)]
    fn prepare(&mut self, more: usize, max_period: usize) {
        if self.hot.len + more > self.ring.len() {
            self.make_room(more, max_period);
        }
        if self.skews.len() > SKEWS {
            self.forget_folds();
        }
    }

    #[cold]
    fn make_room(&mut self, more: usize, max_period: usize) {
        let wanted = (4 * max_period + 2 * SHORT).next_power_of_two();
        let needed = (self.hot.len + more).next_power_of_two().clamp(MIN_RING, wanted);
        if needed > self.ring.len() {
            self.grow(needed);
        }
    }

    /// Lets go of the folds that fell out of the ring (keeping one at or
    /// before the ring's start).
    #[cold]
    fn forget_folds(&mut self) {
        let first = self.first();
        while self.skews.len() > 1 && self.skews[1].0 <= first {
            self.skews.pop_front();
        }
    }

    #[cold]
    fn grow(&mut self, size: usize) {
        let (cap, len) = (self.ring.len(), self.hot.len);
        let mut ring = vec![0; size];
        for i in len.saturating_sub(cap)..len {
            ring[i & (size - 1)] = self.ring[i & (cap - 1)];
        }
        self.ring = ring;
        if self.seen.is_empty() {
            self.seen = vec![0; TABLE];
        }
    }
}

/// Reads one original char; the normalized char it adds to the view, if any.
#[inline(always)]
fn normalize(h: &mut Hot, skews: &mut VecDeque<(usize, usize)>, c: char) -> Option<u32> {
    let (class, v) = if c.is_ascii() {
        (CLASS[c as usize], u32::from(NORMAL[c as usize]))
    } else if c.is_whitespace() {
        (SPACE, u32::from(' '))
    } else {
        (0, u32::from(c))
    };
    if class == TICK {
        h.ticks += 1;
        if h.ticks == 3 {
            h.ticks = 0;
            h.in_code = !h.in_code;
        }
    } else {
        h.ticks = 0;
    }
    // `&`, not `&&`: a space or a digit is common, a second one rare, and
    // only the rare case should be a branch.
    if (class & (SPACE | DIGIT) != 0) & (class == h.last) {
        fold(&mut h.skew, skews, h.len, 1);
        return None;
    }
    h.last = class;
    Some(v)
}

/// `chars` chars folded away before view index `len`: view indexes from
/// `len` on map that much further.
fn fold(skew: &mut usize, skews: &mut VecDeque<(usize, usize)>, len: usize, chars: usize) {
    *skew += chars;
    match skews.back_mut() {
        Some((at, s)) if *at == len => *s = *skew,
        _ => skews.push_back((len, *skew)),
    }
}

/// The state the hot loop works on besides [`Hot`] (borrowed from the
/// stream for one delta): the held text, the k-gram table, the followed
/// candidates, the exact short runs, the folds and the best tail.
struct Held<'a> {
    ring: &'a mut [u32],
    seen: &'a mut [u32],
    candidates: &'a mut Vec<(usize, usize)>,
    exact: &'a mut [u32; SHORT],
    /// Per short period, the run at which a tail has half the copies a
    /// loop needs (a near miss worth looking at).
    trigger: &'a Triggers,
    skews: &'a mut VecDeque<(usize, usize)>,
    best: &'a mut (usize, usize),
    max_period: usize,
}

/// Appends a normalized char; the longest periodic tail ending there, if any.
#[inline(always)]
fn step(h: &mut Hot, held: &mut Held<'_>, v: u32) -> Option<Tail> {
    let i = h.len;
    let mask = held.ring.len() - 1;
    held.ring[i & mask] = v;
    h.len += 1;
    let (lanes, any) = h.lanes.step(code(v), held.trigger);
    h.lanes = lanes;
    h.hash = (h.hash << 4) ^ gear(v);
    let mut seen_at = 0;
    if i + 1 >= SHORT {
        let kgram = Kgram::of(h.hash);
        let at = (h.origin as u32).wrapping_add(1).wrapping_add(i as u32);
        // Every k-gram is recorded, but looked up only at every LOOKUP-th
        // position: in a loop of period p, the k-gram p back is still the
        // last one recorded in its bucket, so the period is proposed a few
        // chars later, long before its third copy (and at the same place
        // however the text was cut into deltas).
        if i.is_multiple_of(LOOKUP) {
            seen_at = kgram.distance(held.seen[kgram.slot], at);
        }
        held.seen[kgram.slot] = kgram.entry(at);
    }
    finish(h, held, v, Stepped { any, seen_at })
}

/// What appending the newest view char left for [`finish`]: whether some
/// short-period lane reached its trigger, and how far back its k-gram was
/// last seen (0: not looked up, or not seen).
#[derive(Clone, Copy)]
struct Stepped {
    any: bool,
    seen_at: usize,
}

/// The rest of a step, once the newest view char is in the ring, the lanes,
/// the hash and the k-gram table (put there by [`step`], or by the quiet
/// path, which hands a char over only when this has something to do): the
/// short tail the lanes point at, the candidates followed one char further,
/// a period proposed. The longest periodic tail ending at the char, if any.
fn finish(h: &mut Hot, held: &mut Held<'_>, v: u32, stepped: Stepped) -> Option<Tail> {
    let i = h.len - 1;
    let first = first(h.len, held.ring);
    let mut found = if stepped.any {
        short_tail(h, held, v, i, first)
    } else {
        None
    };
    if i + 1 >= SHORT {
        if !held.candidates.is_empty() {
            follow(held, v, i, first);
        }
        let d = stepped.seen_at;
        if d > 0 && d <= i && i - d >= first {
            propose(held, i - d, i, first);
        }
        for &(p, run) in held.candidates.iter() {
            let len = run + p;
            if run >= p && found.as_ref().is_none_or(|t| len / p > (t.end - t.start) / t.period) {
                found = Some(Tail {
                    period: p,
                    start: i + 1 - len,
                    end: i + 1,
                });
            }
        }
    }
    found
}

/// Short periods where a lane has reached its trigger: the exact runs,
/// carried on from the last position if they were kept there; otherwise
/// every run was below its trigger one position ago, so a look back of at
/// most that many chars finds it. The periodic tail with the most copies.
#[cold]
fn short_tail(h: &mut Hot, held: &mut Held<'_>, v: u32, i: usize, first: usize) -> Option<Tail> {
    let carried = h.exact_at == Some(i.wrapping_sub(1));
    let ring = &*held.ring;
    for p in 1..=SHORT {
        let run = if carried {
            if i >= first + p && at(ring, i - p) == v {
                held.exact[p - 1] + 1
            } else {
                0
            }
        } else {
            let mut run = 0;
            let most = held.trigger.of(p);
            while run <= most && i >= first + p + run && at(ring, i - run) == at(ring, i - run - p) {
                run += 1;
            }
            run as u32
        };
        held.exact[p - 1] = run;
    }
    h.exact_at = Some(i);
    let mut best = (0, 0);
    for p in 1..=SHORT {
        let run = held.exact[p - 1] as usize;
        if run >= p && (run + p) / p > best.0 {
            best = ((run + p) / p, p);
        }
    }
    (best.1 > 0).then(|| {
        let (p, len) = (best.1, held.exact[best.1 - 1] as usize + best.1);
        Tail {
            period: p,
            start: i + 1 - len,
            end: i + 1,
        }
    })
}

/// The hot loop: reads chars until a periodic tail has the copies of a
/// loop (and is not the tail last judged no loop); that tail, its copies
/// and the copies it needs.
#[inline(always)]
fn read_until_loop<const QUIET: bool>(
    hot: &mut Hot,
    held: &mut Held<'_>,
    chars: &mut std::str::Chars<'_>,
    judged: Option<(usize, usize, usize)>,
    needed: impl Fn(usize) -> usize,
) -> Option<(Tail, usize, usize)> {
    loop {
        let mut handed = None;
        if QUIET && held.candidates.is_empty() && hot.len + 1 >= SHORT {
            let rest = chars.as_str();
            let read;
            (read, handed) = quiet_ascii(hot, held, rest.as_bytes());
            if read > 0 {
                *chars = rest[read..].chars();
            }
        }
        let found = match handed {
            // The quiet path stepped this char and left the rest of its step.
            Some(h) => finish(hot, held, h.view, h.stepped),
            None => {
                let c = chars.next()?;
                let Some(v) = normalize(hot, held.skews, c) else {
                    continue;
                };
                step(hot, held, v)
            }
        };
        let Some(tail) = found else {
            continue;
        };
        let n = (tail.end - tail.start) / tail.period;
        let tenths = (tail.end - tail.start) * 10 / tail.period;
        if tenths > held.best.0 {
            *held.best = (tenths, tail.period);
        }
        let base = needed(tail.period);
        // A digit may be the first of a longer number not read yet: judge
        // the copies (whose numbers must count) once it is whole.
        if n < base || at(held.ring, tail.end - 1) == u32::from(b'0') {
            continue;
        }
        // Code and table rows repeat lines legitimately: more copies there.
        let table = super::table_row(tail.period, |k| at(held.ring, tail.end - tail.period + k));
        let need = base * if hot.in_code || table { CODE_FACTOR } else { 1 };
        // A tail judged no loop is judged again when it has a new copy.
        if n < need || judged == Some((tail.period, tail.start, n)) {
            continue;
        }
        return Some((tail, n, need));
    }
}

#[cfg(test)]
mod tests;
