//! `chunk-chant`: gemini-cli's content "chanting" check. Every position of
//! the content history starts a fixed-size chunk; a chunk seen `threshold`
//! times close together is a loop.
//!
//! gemini-cli shifts every stored position when its 5000-unit history is
//! truncated, which costs O(history) per delta. Here positions are absolute
//! and chunks are hashed with a polynomial hash over prefix sums, so a delta
//! costs O(its length). Each chunk's positions form a chain (`prev_same`);
//! a position that falls out of the history simply stops counting, which is
//! gemini-cli's "drop negative positions, delete chunks left with none".

use std::collections::VecDeque;

use super::content_classes::Classifier;
use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{quote, Buffers, Detection, DetectorInfo, Evidence, Family, Observation, PromptScoped, Rule, Span, Status};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "chunk-chant",
    family: Family::ContentStream,
    channel: Channel::Content,
    rule: "a `chunk`-unit chunk of the content history (last `max_history` units, reset by tables, lists, \
           headings, quotes, fences, dividers and tool calls; code blocks skipped) occurs `threshold` times \
           with average distance <= `max_avg_distance` (and <= `max_periods` distinct texts between them)",
    profiles: &[Profile::Seed, Profile::GeminiCli],
    params: &[
        ParamSpec::new(
            "chunk",
            Kind::Count { min: 1 },
            Default::Count(50),
            "chunk size, in units",
        ),
        ParamSpec::new(
            "threshold",
            Kind::Count { min: 2 },
            Default::Count(10),
            "occurrences that make a loop",
        ),
        ParamSpec::new(
            "max_history",
            Kind::Count { min: 1 },
            Default::Count(5000),
            "units of content history kept",
        ),
        ParamSpec::new(
            "max_avg_distance",
            Kind::Count { min: 0 },
            Default::Count(250),
            "largest average distance between the last `threshold` occurrences",
        ),
        ParamSpec::new(
            "max_periods",
            Kind::Count { min: 0 },
            Default::Count(0),
            "most distinct texts between occurrences (0 = no check)",
        )
        .gemini(Default::Count(5)),
        ParamSpec::new(
            "units",
            Kind::Choice(&["chars", "utf16"]),
            Default::Word("chars"),
            "what lengths and positions count",
        )
        .gemini(Default::Word("utf16")),
        ParamSpec::new(
            "quirks",
            Kind::Flag,
            Default::Flag(false),
            "gemini-cli's regex classes ([*-+] bullets, [+-_=*] dividers) and a code-block state that survives prompts",
        )
        .gemini(Default::Flag(true)),
        ParamSpec::new(
            "shared_latch",
            Kind::Flag,
            Default::Flag(false),
            "stop together with tool-repeat when either fires (one gemini-cli service)",
        )
        .gemini(Default::Flag(true)),
    ],
    group: None,
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    let quirks = p.flag("quirks");
    let chunk = p.count("chunk");
    PromptScoped::boxed(ChunkChant {
        chunk,
        pow: (0..chunk).fold(1, |acc, _| mul_mod(acc, BASE)),
        threshold: p.count("threshold"),
        max_history: p.count("max_history"),
        max_avg_distance: p.count("max_avg_distance"),
        max_periods: p.count("max_periods"),
        utf16: p.word("units") == "utf16",
        quirks,
        shared_latch: p.flag("shared_latch"),
        classes: Classifier::get(quirks),
        // The buckets grow with the history a session really has: a fresh
        // detector costs nothing (`watch` keeps one per session).
        history: History::default(),
        in_code_block: false,
        request: 0,
        last_best: None,
    })
}

/// Rolling-hash modulus (a Mersenne prime) and base.
const MOD: u64 = (1 << 61) - 1;
const BASE: u64 = 0x1F35_A7BD_9C2E_4B71 % MOD;

fn mul_mod(a: u64, b: u64) -> u64 {
    // Mersenne reduction: 2^61 = 1 (mod MOD), so fold the high bits onto the low.
    let p = u128::from(a) * u128::from(b);
    let folded = ((p as u64) & MOD) + ((p >> 61) as u64);
    let once = if folded >= MOD { folded - MOD } else { folded };
    if once >= MOD {
        once - MOD
    } else {
        once
    }
}

/// What the history knew of a chunk position's hash.
enum Seen {
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
struct Buckets {
    head: Vec<usize>,
    /// 64 - log2(head.len()), for Fibonacci hashing.
    shift: u32,
}

impl Buckets {
    /// Sized for a history of `positions` positions (twice as many buckets).
    fn new(positions: usize) -> Buckets {
        let size = (positions * 2).next_power_of_two().clamp(MIN_BUCKETS, MAX_BUCKETS);
        Buckets {
            head: vec![NONE; size],
            shift: 64 - size.trailing_zeros(),
        }
    }

    fn of(&self, hash: u64) -> usize {
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }
}

/// `prev_same` of a position that starts the chain of its chunk.
const NONE: usize = usize::MAX;
/// `bucket_prev` of a position left unrecorded (a hash collision): it is
/// in no chain, so a rebuild of the buckets skips it.
const UNRECORDED: usize = usize::MAX - 1;
const MIN_BUCKETS: usize = 64;
const MAX_BUCKETS: usize = 1 << 22;

/// Text appended to the history by one delta, for mapping positions back to
/// content-channel offsets.
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: usize,
    len: usize,
    request: u64,
    /// Char offset of the delta in its request's content buffer.
    chan_start: usize,
}

/// The history and chunk statistics, with absolute unit positions.
#[derive(Debug, Default)]
struct History {
    /// Units from absolute position `base` on.
    units: Vec<u32>,
    /// `prefix[i]` = hash of `units[..i]`; one longer than `units`.
    prefix: Vec<u64>,
    /// Per position: the previous position of the same chunk, or NONE.
    prev_same: Vec<usize>,
    base: usize,
    /// Absolute start of the history (older units are gone).
    start: usize,
    /// Next position to examine.
    index: usize,
    buckets: Buckets,
    /// Per examined position: its chunk hash, and the previous position
    /// recorded in its bucket (NONE for none, or for an unrecorded collision).
    hashes: Vec<u64>,
    bucket_prev: Vec<usize>,
    segments: VecDeque<Segment>,
    /// Compacted ([`History::compact`]): the positions in reach left
    /// unrecorded (collisions); prefix, hashes, chains and buckets are gone
    /// until [`History::rebuild`] works them out again from the units.
    compacted: Option<Vec<usize>>,
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
    fn end(&self) -> usize {
        self.base + self.units.len()
    }

    fn len(&self) -> usize {
        self.end() - self.start
    }

    /// Empties the history: gemini-cli's resetContentTracking.
    fn reset(&mut self) {
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
    fn skip(&mut self, units: usize) {
        self.reset();
        let end = self.end() + units;
        (self.base, self.start, self.index) = (end, end, end);
    }

    /// Prefix hashes for the units from `from` on (just appended).
    fn extend_prefix(&mut self, from: usize) {
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

    fn hash(&self, pos: usize, len: usize, pow: u64) -> u64 {
        let (i, j) = (pos - self.base, pos - self.base + len);
        let h = self.prefix[j] + MOD - mul_mod(self.prefix[i], pow);
        if h >= MOD {
            h - MOD
        } else {
            h
        }
    }

    fn slice(&self, pos: usize, len: usize) -> &[u32] {
        &self.units[pos - self.base..pos - self.base + len]
    }

    /// Drops everything before `new_start`. Positions there stop counting
    /// by themselves; storage and stale map entries are swept now and then
    /// so the cost stays proportional to what was appended.
    fn cut_front(&mut self, new_start: usize, max_history: usize, utf16: bool) {
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
    fn trim_front_segment(&mut self, utf16: bool) {
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
    fn record(&mut self, pos: usize, hash: u64, chunk: usize) -> Seen {
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
    fn compact(&mut self) {
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
    fn rebuild(&mut self, chunk: usize, pow: u64) {
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
    fn grow_buckets(&mut self, pos: usize, in_reach: usize) {
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

    fn count_positions(&self, last: usize, limit: usize) -> usize {
        let (mut n, mut p) = (0, last);
        while n < limit && p != NONE && p >= self.start {
            n += 1;
            p = self.prev_same[p - self.base];
        }
        n
    }

    /// The newest `limit` positions still in history of the chunk whose
    /// newest position is `last`, oldest first.
    fn positions(&self, last: usize, limit: usize) -> Vec<usize> {
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

#[derive(Clone)]
pub(crate) struct ChunkChant {
    chunk: usize,
    /// BASE^chunk, to take a chunk's hash out of two prefix hashes.
    pow: u64,
    threshold: usize,
    max_history: usize,
    max_avg_distance: usize,
    max_periods: usize,
    utf16: bool,
    quirks: bool,
    shared_latch: bool,
    classes: &'static Classifier,
    history: History,
    in_code_block: bool,
    /// Counts `request`s, to tell which history text is in the current content buffer.
    request: u64,
    /// The most-seen chunk touched by the last delta: (count, chunk text).
    last_best: Option<(usize, String)>,
}

impl ChunkChant {
    fn text_of(&self, units: &[u32]) -> String {
        if self.utf16 {
            let u16s: Vec<u16> = units.iter().map(|&u| u as u16).collect();
            String::from_utf16_lossy(&u16s)
        } else {
            units.iter().filter_map(|&u| char::from_u32(u)).collect()
        }
    }

    fn unit_name(&self) -> &'static str {
        if self.utf16 {
            "UTF-16 units"
        } else {
            "chars"
        }
    }

    /// Char offset in the current request's content buffer of history position `pos`.
    fn channel_offset(&self, pos: usize) -> Option<usize> {
        let h = &self.history;
        let i = h.segments.partition_point(|s| s.start + s.len <= pos);
        let seg = h
            .segments
            .get(i)
            .filter(|s| s.start <= pos && s.request == self.request)?;
        let before = h.slice(seg.start, pos - seg.start);
        let chars = if self.utf16 {
            // A position inside a surrogate pair belongs to the pair's char.
            let starts = before.iter().filter(|&&u| !(0xDC00..=0xDFFF).contains(&u)).count();
            let inside = h.slice(pos, 1).first().is_some_and(|u| (0xDC00..=0xDFFF).contains(u));
            starts - usize::from(inside)
        } else {
            before.len()
        };
        Some(seg.chan_start + chars)
    }

    /// The part of a delta that can still be in the history once it is
    /// appended: its last `max_history` units (a surrogate pair kept
    /// whole), with the chars and units before it. Everything before is cut
    /// before the scan, so it is never stored: one huge delta costs memory
    /// for `max_history` units, not ~36 bytes per char of it.
    fn fitting_tail<'t>(&self, text: &'t str) -> (&'t str, usize, usize) {
        // No more units than bytes, in either count: most deltas end here.
        if text.len() <= self.max_history {
            return (text, 0, 0);
        }
        let units_of = |c: char| if self.utf16 { c.len_utf16() } else { 1 };
        let (mut tail_units, mut at) = (0, text.len());
        for (i, c) in text.char_indices().rev() {
            if tail_units >= self.max_history {
                break;
            }
            tail_units += units_of(c);
            at = i;
        }
        if at == 0 {
            return (text, 0, 0);
        }
        let head = &text[..at];
        let head_units = if self.utf16 {
            head.encode_utf16().count()
        } else {
            head.chars().count()
        };
        (&text[at..], head.chars().count(), head_units)
    }

    fn append(&mut self, text: &str, obs: &Observation<'_>) {
        self.history.rebuild(self.chunk, self.pow);
        let (text, skipped_chars, skipped_units) = self.fitting_tail(text);
        if skipped_units > 0 {
            self.history.skip(skipped_units);
        }
        let start = self.history.end();
        let h = &mut self.history;
        let from = h.units.len();
        if self.utf16 {
            h.units.extend(text.encode_utf16().map(u32::from));
        } else {
            h.units.extend(text.chars().map(u32::from));
        }
        h.extend_prefix(from);
        self.history.segments.push_back(Segment {
            start,
            len: self.history.end() - start,
            request: self.request,
            chan_start: obs.content_before + skipped_chars,
        });
        if self.history.len() > self.max_history {
            let new_start = self.history.end() - self.max_history;
            self.history.cut_front(new_start, self.max_history, self.utf16);
        }
    }

    /// Examines every new chunk position; gemini-cli's analyzeContentChunksForLoop.
    fn scan(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let (pow, chunk) = (self.pow, self.chunk);
        self.last_best = None;
        let mut best = 0;
        while self.history.index + chunk <= self.history.end() {
            let h = &mut self.history;
            let index = h.index;
            debug_assert_eq!(h.prev_same.len(), index - h.base);
            let hash = h.hash(index, chunk, pow);
            let previous = match h.record(index, hash, chunk) {
                Seen::New => None,
                Seen::At(p) => Some(p),
                // A hash collision: a different chunk, left unrecorded as
                // gemini-cli leaves a chunk whose content does not match.
                Seen::Collision => {
                    h.prev_same.push(NONE);
                    h.index += 1;
                    continue;
                }
            };
            h.prev_same.push(previous.unwrap_or(NONE));
            if previous.is_some() {
                let count = h.count_positions(index, self.threshold);
                if count > best {
                    best = count;
                    self.last_best = Some((count, self.text_of(self.history.slice(index, chunk))));
                }
                if count >= self.threshold {
                    if let Some(d) = self.check(index, obs) {
                        return Some(d); // fired: the index stays on the chunk, as in gemini-cli
                    }
                }
            }
            self.history.index += 1;
        }
        None
    }

    /// The distance and periods tests on the last `threshold` occurrences.
    fn check(&self, index: usize, obs: &Observation<'_>) -> Option<Detection> {
        let h = &self.history;
        let recent = h.positions(index, self.threshold);
        let avg = (recent[recent.len() - 1] - recent[0]) as f64 / (self.threshold - 1) as f64;
        if avg > self.max_avg_distance as f64 {
            return None;
        }
        let mut periods: Vec<&[u32]> = Vec::new();
        if self.max_periods > 0 {
            for w in recent.windows(2) {
                let between = h.slice(w[0], w[1] - w[0]);
                if !periods.contains(&between) {
                    periods.push(between);
                }
            }
            if periods.len() > self.max_periods {
                return None;
            }
        }
        let text = self.text_of(h.slice(index, self.chunk));
        let all = h.positions(index, usize::MAX);
        let count = all.len();
        let mut d = Detection::new(INFO.id, obs.index, Channel::Content, Some(obs.buffers.content.len()));
        d.repeats = Some(count);
        d.threshold = Some(self.threshold);
        d.avg_distance = Some(avg);
        d.evidence = Evidence::Occurrences;
        d.spans = all
            .iter()
            .filter_map(|&p| {
                let start = self.channel_offset(p)?;
                let end = self.channel_offset(p + self.chunk - 1).map_or(start + 1, |e| e + 1);
                Some(Span::new(start, end))
            })
            .collect();
        let elsewhere = all.len() - d.spans.len();
        d.repeated = Some(text.clone());
        let periods_note = if self.max_periods > 0 {
            format!(
                ", {} distinct texts between them (max {})",
                periods.len(),
                self.max_periods
            )
        } else {
            String::new()
        };
        let earlier = if elsewhere > 0 {
            format!(" ({elsewhere} of them in earlier requests)")
        } else {
            String::new()
        };
        d.reason = format!(
            "the {}-{} chunk {} occurs {count} times{earlier}; the last {} are on average {:.1} apart (max {}){periods_note}",
            self.chunk,
            if self.utf16 { "unit" } else { "char" },
            quote(&text, 60),
            self.threshold,
            avg,
            self.max_avg_distance,
        );
        Some(d)
    }
}

impl Rule for ChunkChant {
    const ID: &'static str = "chunk-chant";

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.request += 1;
                None
            }
            // Chanting happens within one stream; a tool call in between ends it.
            EventKind::ToolCall { .. } => {
                self.history.reset();
                self.last_best = None;
                None
            }
            EventKind::Content { text } => {
                let c = self.classes.classify(text);
                if c.fences > 0 || c.structural || c.divider {
                    self.history.reset();
                }
                let was = self.in_code_block;
                if c.fences % 2 == 1 {
                    self.in_code_block = !self.in_code_block;
                }
                if was || self.in_code_block || c.divider {
                    return None;
                }
                self.append(text, obs);
                self.scan(obs)
            }
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.history.reset();
        self.last_best = None;
        self.request += 1; // a prompt also empties the content buffer
        if !self.quirks {
            self.in_code_block = false;
        }
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let hist = format!(
            "history {} of {} {}",
            self.history.len(),
            self.max_history,
            self.unit_name()
        );
        if self.in_code_block {
            return Status::Idle {
                detail: format!("inside a code block: content is skipped ({hist})"),
            };
        }
        match &self.last_best {
            Some((count, text)) => Status::Watching {
                current: *count,
                threshold: self.threshold,
                detail: format!(
                    "chunk {} seen {count} of {} times ({hist})",
                    quote(text, 24),
                    self.threshold
                ),
            },
            None => Status::Watching {
                current: 0,
                threshold: self.threshold,
                detail: format!("no repeated chunk in the last delta ({hist})"),
            },
        }
    }

    fn shares_latch(&self) -> bool {
        self.shared_latch
    }

    fn compact(&mut self, stopped: bool) {
        if stopped {
            // Dead until the prompt that resets it: let all of it go.
            self.history.reset();
            self.history.buckets = Buckets::default();
            self.last_best = None;
        } else {
            self.history.compact();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `record` answers for every position of `units` (hashes folded
    /// to a few values, so different chunks collide), the history window
    /// moving on as it goes; and the buckets it ended with.
    fn record_all(units: &[u32], buckets: Buckets) -> (Vec<String>, usize) {
        let chunk = 4;
        let pow = (0..chunk).fold(1, |acc, _| mul_mod(acc, BASE));
        let mut h = History {
            buckets,
            ..History::default()
        };
        h.units.extend_from_slice(units);
        h.extend_prefix(0);
        let seen = (0..=units.len() - chunk)
            .map(|pos| {
                h.start = pos.saturating_sub(700);
                let hash = h.hash(pos, chunk, pow) % 13;
                match h.record(pos, hash, chunk) {
                    Seen::New => "new".to_string(),
                    Seen::At(q) => format!("at {q}"),
                    Seen::Collision => "collision".to_string(),
                }
            })
            .collect();
        (seen, h.buckets.head.len())
    }

    #[test]
    fn a_compacted_history_finds_what_a_kept_one_finds_and_costs_its_units() {
        use crate::config::Setup;
        use crate::engine::Engine;
        use crate::event::Event;
        for profile in [crate::detect::Profile::Seed, crate::detect::Profile::GeminiCli] {
            // Every detector of the profile compacts (tool-repeat's calls too).
            let setup = Setup::profile(profile);
            let (mut kept, mut compacted) = (Engine::new(&setup), Engine::new(&setup));
            let mut seed = 7u64;
            let mut found = (Vec::new(), Vec::new());
            for i in 0..400 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let event = match seed >> 60 {
                    // Now and then the same call six times (tool-repeat fires).
                    _ if i % 40 < 6 => Event::tool_call("ls", serde_json::json!({"path": "src/思考"})),
                    0 => Event::prompt("go on"),
                    1 => Event::request(),
                    2 if i % 3 == 0 => Event::tool_call("ls", serde_json::json!({"path": (seed >> 58) % 2})),
                    3..=7 => {
                        Event::content(&"I will check it once more 思考🙂, ".repeat(1 + (seed >> 50) as usize % 4))
                    }
                    _ => {
                        // Text from few words (思考 and 🙂 among them), so chunks repeat and chant.
                        let words = ["loop ", "again ", "思考 ", "🙂 ", "and ", "then "];
                        let text: String = (0..(seed >> 40) % 90)
                            .map(|k| words[((seed >> (k % 50)) % words.len() as u64) as usize])
                            .collect();
                        Event::content(&text)
                    }
                };
                found.0.extend(kept.push(&event));
                found.1.extend(compacted.push(&event));
                compacted.compact();
                let status = |e: &Engine| format!("{:?}", e.states());
                assert_eq!(status(&kept), status(&compacted), "event {i}");
            }
            assert_eq!(found.0, found.1, "{profile:?}");
            for id in ["chunk-chant", "tool-repeat"] {
                assert!(found.0.iter().any(|d| d.detector == id), "{profile:?}: {id} fires");
            }
        }
    }

    #[test]
    fn buckets_grow_with_the_history_and_find_what_presized_ones_find() {
        // A few chunks repeating irregularly, CJK and emoji among them.
        let text: Vec<u32> = (0..3000u32)
            .map(|i| ['a', 'b', '思', '🙂', 'c'][((i * i + i / 7) % 5) as usize] as u32)
            .collect();
        let (grown, size) = record_all(&text, Buckets::default());
        let (presized, _) = record_all(&text, Buckets::new(5000));
        assert_eq!(grown, presized);
        assert!(grown.iter().any(|s| s == "collision") && grown.iter().any(|s| s.starts_with("at")));
        // The window holds about 700 positions: the buckets follow it, not max_history.
        assert!((1024..=4096).contains(&size), "{size} buckets");
        assert_eq!(record_all(&text[..40], Buckets::default()).1, 128);
    }
}
