//! `chunk-chant`: gemini-cli's content "chanting" check. Every position of
//! the content history starts a fixed-size chunk; a chunk seen `threshold`
//! times close together is a loop.
//!
//! gemini-cli shifts every stored position when its 5000-unit history is
//! truncated and hashes every chunk whole, which costs O(history) per
//! delta. Here positions are absolute and chunks are hashed with a
//! polynomial hash rolled one unit at a time, so a delta costs O(its
//! length). Each chunk's positions form a chain (`prev_same`); a position
//! that falls out of the history simply stops counting, which is
//! gemini-cli's "drop negative positions, delete chunks left with none".
//! Where a k-gram filter shows that no chunk can fire (most prose, and
//! text that repeats too far apart to fire), the positions are not recorded
//! at all: the record is worked out from the history's units when a chunk
//! may fire (see `filter`), and the status's counts when it is asked.

use super::content_classes::Classifier;
use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{
    quote, Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Span, Status,
};
use crate::event::{Channel, EventKind};
use filter::{top_weight, KgramFilter};
use history::{Buckets, History, Seen, Segment};
use std::sync::OnceLock;

mod filter;
mod history;

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
        top: top_weight(chunk),
        filter: KgramFilter::new(
            chunk,
            p.count("threshold"),
            p.count("max_avg_distance"),
            p.count("max_history"),
        ),
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
        last_delta: None,
        best: OnceLock::new(),
    })
}

/// The rolling hashes' base (odd). Hashes are polynomials modulo 2^64 of
/// a chunk's units (each plus one); a chunk whose hash matches is compared
/// unit by unit, so a collision is never taken for a repeat.
const BASE: u64 = 0x1F35_A7BD_9C2E_4B71;

#[derive(Clone)]
pub(crate) struct ChunkChant {
    chunk: usize,
    /// BASE^(chunk - 1): the weight of the unit that leaves a rolled hash.
    top: u64,
    /// Which positions may fire.
    filter: KgramFilter,
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
    /// The positions the last delta made examinable, for the status.
    last_delta: Option<(usize, usize)>,
    /// The most-seen chunk among them, (count, chunk text): worked out
    /// when the status is first asked.
    best: OnceLock<Option<(usize, String)>>,
}

impl ChunkChant {
    /// Empties the history (gemini-cli's resetContentTracking).
    fn reset_history(&mut self) {
        self.history.reset();
        self.filter.reset();
        self.set_last_delta(None);
    }

    /// The positions the last delta made examinable (the status's
    /// most-seen chunk is worked out among them when next asked).
    fn set_last_delta(&mut self, positions: Option<(usize, usize)>) {
        self.last_delta = positions;
        self.best = OnceLock::new();
    }

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
        let (text, skipped_chars, skipped_units) = self.fitting_tail(text);
        if skipped_units > 0 {
            self.history.skip(skipped_units);
            self.filter.reset();
        }
        let start = self.history.end();
        let h = &mut self.history;
        let ascii = text.is_ascii();
        if ascii {
            // One unit per byte in either count; the loop vectorises.
            h.units.extend(text.bytes().map(u32::from));
        } else if self.utf16 {
            h.units.extend(text.encode_utf16().map(u32::from));
        } else {
            h.units.extend(text.chars().map(u32::from));
        }
        self.history.segments.push_back(Segment {
            start,
            len: self.history.end() - start,
            request: self.request,
            chan_start: obs.content_before + skipped_chars,
            pairs: self.utf16 && !ascii && text.chars().any(|c| c.len_utf16() == 2),
        });
        if self.history.len() > self.max_history {
            let new_start = self.history.end() - self.max_history;
            self.history.cut_front(new_start, self.max_history, self.utf16);
        }
    }

    /// Examines every new chunk position; gemini-cli's analyzeContentChunksForLoop.
    fn scan(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        let (top, chunk) = (self.top, self.chunk);
        let from = self.history.index;
        let h = &self.history;
        self.filter.feed(&h.units, h.base, h.start);
        while self.history.index + chunk <= self.history.end() {
            let h = &mut self.history;
            if !h.hot {
                // Up to the next position that may fire, no chunk can:
                // skipped, recorded only if the record is ever needed.
                let examinable = h.end() + 1 - chunk;
                match self.filter.next_suspect(h.index) {
                    Some(p) if p < examinable => h.index = p,
                    _ => {
                        h.index = examinable;
                        break;
                    }
                }
            }
            let index = h.index;
            if self.filter.suspect(index) {
                h.warm(chunk, top);
            } else {
                // Let the record go once nothing in reach may fire.
                h.quiet += 1;
                if h.quiet > self.max_history {
                    h.cool();
                    h.index += 1;
                    continue;
                }
            }
            let hash = h.hash(index, chunk, top);
            let seen_before = match h.record(index, hash, chunk) {
                Seen::New => false,
                Seen::At(_) => true,
                // A hash collision: a different chunk, left unrecorded as
                // gemini-cli leaves a chunk whose content does not match.
                Seen::Collision => {
                    h.index += 1;
                    continue;
                }
            };
            if seen_before && h.count_positions(index, self.threshold) >= self.threshold {
                if let Some(d) = self.check(index, obs) {
                    self.set_last_delta(Some((from, index + 1)));
                    return Some(d); // fired: the index stays on the chunk, as in gemini-cli
                }
            }
            self.history.index += 1;
        }
        self.set_last_delta(Some((from, self.history.index)));
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
            let n = periods.len();
            format!(
                ", {n} distinct {} between them (max {})",
                if n == 1 { "text" } else { "texts" },
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
    const KINDS: Kinds = Kinds::REQUEST.and(Kinds::TOOL_CALL).and(Kinds::CONTENT);

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.request += 1;
                None
            }
            // Chanting happens within one stream; a tool call in between ends it.
            EventKind::ToolCall { .. } => {
                self.reset_history();
                None
            }
            EventKind::Content { text } => {
                let c = self.classes.classify(text);
                if c.fences > 0 || c.structural || c.divider {
                    self.reset_history();
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
        self.reset_history();
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
        let best = self.best.get_or_init(|| {
            let (from, to) = self.last_delta?;
            let (count, pos) = self.history.most_seen(from, to, self.chunk, self.top, self.threshold)?;
            Some((count, self.text_of(self.history.slice(pos, self.chunk))))
        });
        match best {
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
            self.reset_history();
            self.history.buckets = Buckets::default();
            self.filter.release();
        } else {
            self.history.compact();
            self.filter.release();
        }
    }
}

#[cfg(test)]
mod tests;
