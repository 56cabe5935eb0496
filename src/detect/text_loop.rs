//! `text-loop` (profile `extended`): a periodic tail of any period, found
//! continuously on the reasoning and content channels, char by char, so the
//! verdict and where the evidence completes never depend on delta
//! boundaries.
//!
//! Each channel is read through a normalized view (runs of white space
//! folded to one space, runs of digits to one `0`, so growing list numbers
//! and counters still repeat) with a map back to original char offsets.
//! Short periods (up to [`SHORT`]) are checked directly: a run of positions
//! where `v[i] == v[i-p]`. Longer ones through k-grams: each position's
//! k-gram is looked up among earlier ones (a hash of the last k chars), and
//! a run of positions whose previous occurrence is the same distance `p`
//! back is a text of period `p`. Both cost O(1) per char.

use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{
    channel_text, quote, Buffers, Detection, DetectorInfo, Family, Observation, PerChannel, PromptScoped, Rule, Span,
    Status,
};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "text-loop",
    family: Family::Continuous,
    channel: Channel::Reasoning,
    rule: "the end of the reasoning or content of a request repeats with some period p (2 to `max_period` chars \
           of the normalized text: white space and digit runs folded): `copies` whole copies of a unit of 16 chars \
           or more, `short_copies` of a shorter one, 80 of a single char, three times as many inside a code fence \
           or a table; the unit has a letter, and numbers across copies are equal or count like a list",
    profiles: &[Profile::Extended],
    params: &[
        ParamSpec::new(
            "copies",
            Kind::Count { min: 2 },
            Default::Count(3),
            "copies of a unit of 16 chars or more that make a loop",
        ),
        ParamSpec::new(
            "short_copies",
            Kind::Count { min: 2 },
            Default::Count(6),
            "copies of a shorter unit that make a loop",
        ),
        ParamSpec::new(
            "max_period",
            Kind::Count { min: 16 },
            Default::Count(5000),
            "longest period looked for, in normalized chars",
        ),
    ],
    build,
};

/// Periods up to this are checked char by char; longer ones by k-grams of this size.
const SHORT: usize = 16;
/// k-gram buckets (direct-mapped, positions of one request).
const TABLE: usize = 1 << 15;
/// Long periods followed at once.
const MAX_CANDIDATES: usize = 8;
/// Inside a code fence or a table a loop needs this many times the copies.
const CODE_FACTOR: usize = 3;

fn build(p: &Params) -> Box<dyn super::Detector> {
    let max_period = p.count("max_period");
    PromptScoped::boxed(TextLoop {
        copies: p.count("copies"),
        short_copies: p.count("short_copies"),
        max_period,
        streams: PerChannel::default(),
    })
}

/// Rolling hash of the last SHORT chars, wrapping arithmetic (odd base):
/// a match is only a proposal, checked char by char, so collisions cost a
/// comparison, never a wrong answer.
const BASE: u64 = 0x9E37_79B9_7F4A_7C15 | 1;

/// BASE^SHORT, to drop the char leaving the k-gram window.
const POW: u64 = {
    let (mut acc, mut k) = (1u64, 0);
    while k < SHORT {
        acc = acc.wrapping_mul(BASE);
        k += 1;
    }
    acc
};

/// A slot of `last` before any char was read (no char has this value).
const NO_CHAR: u32 = u32::MAX;

/// One channel of the current request, seen through the normalized view.
#[derive(Clone, Debug, Default)]
struct Stream {
    /// Normalized chars from absolute index `base` on, and for each the
    /// original char offset where it starts.
    view: Vec<char>,
    orig: Vec<usize>,
    base: usize,
    /// Original chars read in this request.
    chars: usize,
    last_space: bool,
    last_digit: bool,
    /// Backticks in a row, and whether a ``` fence is open (code repeats
    /// lines legitimately, so a loop there needs more copies).
    ticks: usize,
    in_code: bool,
    /// Per short period p (index p - 1): positions in a row with
    /// v[i] == v[i-p]; and the last SHORT view chars, newest first. Fixed
    /// arrays, so the update is one vectorizable pass.
    runs: [u32; SHORT],
    last: [u32; SHORT],
    /// Rolling hash of the last SHORT normalized chars.
    hash: u64,
    /// k-gram hash bucket -> the last position whose k-gram fell there, as
    /// `origin + i` so a new request's stream (a higher origin) ignores the
    /// old entries without clearing. Direct-mapped: a k-gram whose bucket
    /// was taken by another is simply not matched there (its neighbours
    /// in the loop are), and each lookup is checked char by char.
    seen: Vec<u64>,
    /// Where this request's positions start in `seen`'s numbering.
    origin: u64,
    /// Long periods being followed: (period, positions in a row with
    /// v[i] == v[i-period]). A k-gram seen again at distance p proposes p.
    candidates: Vec<(usize, usize)>,
    /// Best candidate so far: (copies in tenths, period), for the status.
    best: (usize, usize),
}

/// A periodic tail found: the period and the region [start, end) in view indexes.
struct Tail {
    period: usize,
    start: usize,
    end: usize,
}

impl Stream {
    /// A new request: everything starts over but the k-gram table, whose
    /// entries fall behind the new origin.
    fn restart(&mut self) {
        let seen = std::mem::take(&mut self.seen);
        let origin = self.origin + self.len() as u64 + 1;
        *self = Stream {
            seen,
            origin,
            ..Stream::default()
        };
    }

    fn len(&self) -> usize {
        self.base + self.view.len()
    }

    fn at(&self, i: usize) -> char {
        self.view[i - self.base]
    }

    /// Reads one original char; returns whether the view grew.
    fn push_char(&mut self, c: char) -> bool {
        let offset = self.chars;
        self.chars += 1;
        if c == '`' {
            self.ticks += 1;
            if self.ticks == 3 {
                self.ticks = 0;
                self.in_code = !self.in_code;
            }
        } else {
            self.ticks = 0;
        }
        let v = if c.is_whitespace() {
            if self.last_space {
                return false;
            }
            ' '
        } else if c.is_ascii_digit() {
            if self.last_digit {
                return false;
            }
            '0'
        } else {
            c
        };
        self.last_space = v == ' ';
        self.last_digit = v == '0' && c.is_ascii_digit();
        self.view.push(v);
        self.orig.push(offset);
        true
    }

    /// Updates the periodic runs for the newest view char; the longest
    /// periodic tail ending there, if any period repeats.
    fn step(&mut self, max_period: usize) -> Option<Tail> {
        let i = self.len() - 1;
        let c = self.at(i);
        let mut found: Option<Tail> = None;
        // One pass over the short periods: extend each run, and keep the
        // smallest period with the most whole copies.
        if i == 0 {
            self.last = [NO_CHAR; SHORT];
        }
        let cu = u32::from(c);
        // Branch-free lanes over fixed arrays (the compiler vectorizes them):
        // most chars extend no run. A run that wrapped at 2^32 merely restarts.
        const LANE: [u32; SHORT] = {
            let mut lane = [0u32; SHORT];
            let mut k = 0;
            while k < SHORT {
                lane[k] = k as u32;
                k += 1;
            }
            lane
        };
        let (mut runs, last) = (self.runs, self.last);
        let mut any = 0u32;
        for k in 0..SHORT {
            let mask = 0u32.wrapping_sub(u32::from(last[k] == cu));
            runs[k] = runs[k].wrapping_add(1) & mask;
            any |= u32::from(runs[k] > LANE[k]);
        }
        self.runs = runs;
        self.last.copy_within(0..SHORT - 1, 1);
        self.last[0] = cu;
        let mut best = (0, 0);
        if any != 0 {
            for p in 1..=SHORT {
                let run = self.runs[p - 1] as usize;
                if run >= p && (run + p) / p > best.0 {
                    best = ((run + p) / p, p);
                }
            }
        }
        if best.1 > 0 {
            let (p, len) = (best.1, self.runs[best.1 - 1] as usize + best.1);
            found = Some(Tail {
                period: p,
                start: i + 1 - len,
                end: i + 1,
            });
        }
        // k-grams for longer periods.
        let leaving = if i >= SHORT { Some(self.at(i - SHORT)) } else { None };
        let mut h = self.hash.wrapping_mul(BASE).wrapping_add(u64::from(cu) + 1);
        if let Some(old) = leaving {
            h = h.wrapping_sub((u64::from(u32::from(old)) + 1).wrapping_mul(POW));
        }
        self.hash = h;
        if i + 1 >= SHORT {
            if self.seen.is_empty() {
                self.seen = vec![0; TABLE];
            }
            let slot = (self.hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE.trailing_zeros())) as usize;
            let stored = std::mem::replace(&mut self.seen[slot], self.origin + i as u64 + 1);
            // 0 is an empty bucket; entries at or below the origin are older requests'.
            let prev = (stored > self.origin)
                .then(|| (stored - self.origin - 1) as usize)
                .filter(|&q| q >= self.base);
            // Follow the candidates one char further; drop the broken ones.
            let mut k = 0;
            while k < self.candidates.len() {
                let (p, run) = self.candidates[k];
                if i >= self.base + p && self.at(i - p) == c {
                    self.candidates[k].1 = run + 1;
                    k += 1;
                } else {
                    self.candidates.swap_remove(k);
                }
            }
            if let Some(q) = prev {
                let d = i - q;
                if d > SHORT
                    && d <= max_period
                    && !self.candidates.iter().any(|&(p, _)| p == d)
                    && self.same_kgram(q, i)
                {
                    // How far back the text already agrees at this distance.
                    let mut run = 0;
                    while run < 8 * d && i >= self.base + d + run && self.at(i - run) == self.at(i - run - d) {
                        run += 1;
                    }
                    if self.candidates.len() >= MAX_CANDIDATES {
                        // Keep the best followed ones.
                        let worst = (0..self.candidates.len())
                            .min_by_key(|&k| self.candidates[k].1 * 1000 / self.candidates[k].0.max(1))
                            .expect("not empty");
                        self.candidates.swap_remove(worst);
                    }
                    self.candidates.push((d, run));
                }
            }
            for &(p, run) in &self.candidates {
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
        self.trim(max_period);
        found
    }

    fn same_kgram(&self, q: usize, i: usize) -> bool {
        q >= self.base + SHORT - 1 && (0..SHORT).all(|k| self.at(q - k) == self.at(i - k))
    }

    /// Keeps what the longest period needs (a few copies of it).
    fn trim(&mut self, max_period: usize) {
        let keep = 4 * max_period + SHORT;
        if self.view.len() > 2 * keep {
            let drop = self.view.len() - keep;
            self.view.drain(..drop);
            self.orig.drain(..drop);
            self.base += drop;
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct TextLoop {
    copies: usize,
    short_copies: usize,
    max_period: usize,
    streams: PerChannel<Stream>,
}

impl TextLoop {
    fn needed(&self, period: usize) -> usize {
        needed(period, self.copies, self.short_copies)
    }

    fn read(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection> {
        let (copies, short_copies, max_period) = (self.copies, self.short_copies, self.max_period);
        let needed = |p: usize| needed(p, copies, short_copies);
        let stream = self.streams.get_mut(channel);
        for c in text.chars() {
            if !stream.push_char(c) {
                continue;
            }
            let Some(tail) = stream.step(max_period) else {
                continue;
            };
            let n = (tail.end - tail.start) / tail.period;
            let tenths = (tail.end - tail.start) * 10 / tail.period;
            if tenths > stream.best.0 {
                stream.best = (tenths, tail.period);
            }
            // Code and table rows repeat lines legitimately: more copies there.
            let table = (tail.end - tail.period..tail.end).any(|i| stream.at(i) == '|');
            let need = needed(tail.period) * if stream.in_code || table { CODE_FACTOR } else { 1 };
            if n < need {
                continue;
            }
            if let Some(d) = judge(stream, &tail, n, need, channel, obs) {
                return Some(d);
            }
        }
        None
    }
}

/// Copies that make a loop of period `p`: a single repeated char needs
/// three times the short units' count (`ffffff` in a hash, `!!!!!!`).
fn needed(p: usize, copies: usize, short_copies: usize) -> usize {
    match p {
        1 => 80.max(short_copies),
        p if p < SHORT => short_copies,
        _ => copies,
    }
}

/// Whether a periodic tail is a loop, and its detection: the unit must have
/// a letter (tables and dividers repeat punctuation), and numbers that the
/// view folded must be equal or count by one from copy to copy (a list of
/// `image-320w`, `image-640w` differs by more than a counter).
fn judge(
    s: &Stream,
    tail: &Tail,
    copies: usize,
    needed: usize,
    channel: Channel,
    obs: &Observation<'_>,
) -> Option<Detection> {
    let p = tail.period;
    // Whole copies, ending at the tail's end.
    let start = tail.end - copies * p;
    let unit: String = (tail.end - p..tail.end).map(|i| s.at(i)).collect();
    if !unit.chars().any(char::is_alphabetic) {
        return None;
    }
    let text = obs.buffers.channel(channel)?;
    // View index -> original char offset (the end maps to what was read).
    let offset = |v: usize| s.orig.get(v - s.base).copied().unwrap_or(s.chars);
    let spans: Vec<(usize, usize)> = (0..copies)
        .map(|k| (offset(start + k * p), offset(start + (k + 1) * p)))
        .collect();
    // Table rows count their ids legitimately: there, numbers must not change.
    let table = unit.contains('|');
    if !numbers_count(&spans.iter().map(|&(x, y)| text.slice(x..y)).collect::<Vec<_>>(), table) {
        return None;
    }
    let mut d = Detection::new(INFO.id, obs.index, channel, Some(s.chars));
    d.period = Some(p);
    d.repeats = Some(copies);
    d.threshold = Some(needed);
    d.onset = Some(spans[0].0);
    d.spans = spans.iter().map(|&(x, y)| Span::new(x, y)).collect();
    let unit_text = text.slice(offset(tail.end - p)..offset(tail.end));
    d.repeated = Some(unit_text.clone());
    d.reason = format!(
        "the {} repeats a {p}-char unit {} {copies} times in a row (needs {needed}), from char {}",
        channel.as_str(),
        quote(&unit_text, 60),
        spans[0].0
    );
    Some(d)
}

/// The numbers of each copy, position by position, are all equal or count
/// like a list or a counter: every column that changes steps by the number
/// of changing columns (1, 2, 3 / 4, 5, 6 has three columns stepping by 3;
/// `assistant57`, `assistant58` one stepping by 1; `image-320w`,
/// `image-640w` steps by 320 and is no loop). `fixed`: nothing may change.
fn numbers_count(copies: &[String], fixed: bool) -> bool {
    let numbers: Vec<Vec<u64>> = copies
        .iter()
        .map(|c| {
            c.split(|ch: char| !ch.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .map(|s| s.parse::<u64>().unwrap_or(u64::MAX))
                .collect()
        })
        .collect();
    let n = numbers.iter().map(Vec::len).min().unwrap_or(0);
    let columns: Vec<Vec<i64>> = (0..n)
        .map(|j| {
            numbers
                .windows(2)
                .map(|w| w[1][j].wrapping_sub(w[0][j]) as i64)
                .collect()
        })
        .collect();
    let changing = columns.iter().filter(|steps| steps.iter().any(|&s| s != 0)).count() as i64;
    if fixed {
        return changing == 0;
    }
    columns.iter().all(|steps| {
        steps.iter().all(|&s| s == 0) || steps.iter().all(|&s| s == changing) || steps.iter().all(|&s| s == -changing)
    })
}

impl Rule for TextLoop {
    const ID: &'static str = "text-loop";

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.streams.each(Stream::restart);
                None
            }
            kind => {
                let (channel, text) = channel_text(kind)?;
                self.read(channel, text, obs)
            }
        }
    }

    fn reset(&mut self) {
        self.streams.each(Stream::restart);
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let (r, c) = (self.streams.reasoning.best, self.streams.content.best);
        let (channel, (tenths, period)) = if r.0 >= c.0 { ("reasoning", r) } else { ("content", c) };
        if period == 0 {
            return Status::Watching {
                current: 0,
                threshold: self.copies,
                detail: "no repeated text yet".to_string(),
            };
        }
        let needed = self.needed(period);
        Status::Watching {
            current: tenths / 10,
            threshold: needed,
            detail: format!(
                "{channel}: period {period}: {}.{} of {needed} copies",
                tenths / 10,
                tenths % 10
            ),
        }
    }
}
