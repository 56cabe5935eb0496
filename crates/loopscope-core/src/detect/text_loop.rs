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
    quote, Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PerChannel, PromptScoped, Rule,
    Span, Status, TextReader, TEXT_KINDS,
};
use crate::event::Channel;
use lanes::Triggers;
use letterless::Letterless;
use scan::{Stream, Tail, SHORT};

mod lanes;
mod letterless;
mod scan;

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "text-loop",
    family: Family::Continuous,
    channel: Channel::Reasoning,
    rule: "the end of the reasoning or content of a request repeats with some period p (2 to `max_period` chars \
           of the normalized text: white space and digit runs folded): `copies` whole copies of a unit of 16 chars \
           or more, `short_copies` of a shorter one, 80 of a single char, three times as many inside a code fence \
           or a table row (the bars of a chat-template marker such as `<|im_start|>` are no table); the unit has a \
           letter, and numbers across copies are equal, or in a unit of 16 chars or more outside a table count like \
           a list or a counter; a unit with no letter (newlines, digits, `|---`, dots, U+FFFD, up to 16 chars) \
           is a loop once its copies cover `letterless_chars` chars with no letter among them",
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
            Default::Count(5),
            "copies of a shorter unit that make a loop",
        ),
        ParamSpec::new(
            "max_period",
            Kind::Count { min: 16 },
            Default::Count(5000),
            "longest period looked for, in normalized chars",
        ),
        ParamSpec::new(
            "letterless_chars",
            Kind::Count { min: 32 },
            Default::Count(letterless::DEFAULT_CHARS),
            "chars in a row with no letter, repeating a unit of up to 16, that make a loop (prose never has them)",
        ),
    ],
    group: None,
    build,
};

/// Copies of a unit shown (and checked for counting numbers) at most.
const MAX_SPANS: usize = 64;
/// Inside a code fence or a table a loop needs this many times the copies.
const CODE_FACTOR: usize = 3;

fn build(p: &Params) -> Box<dyn super::Detector> {
    let max_period = p.count("max_period");
    let (copies, short_copies) = (p.count("copies"), p.count("short_copies"));
    PromptScoped::boxed(TextLoop {
        copies,
        short_copies,
        max_period,
        trigger: triggers(copies, short_copies),
        streams: PerChannel::default(),
        letterless_chars: p.count("letterless_chars"),
        letterless: PerChannel::default(),
    })
}
#[derive(Clone, Debug)]
pub(crate) struct TextLoop {
    copies: usize,
    short_copies: usize,
    max_period: usize,
    trigger: Triggers,
    streams: PerChannel<Stream>,
    letterless_chars: usize,
    /// Runs with no letter, per channel ([`letterless`]).
    letterless: PerChannel<Letterless>,
}

impl TextLoop {
    fn needed(&self, period: usize) -> usize {
        needed(period, self.copies, self.short_copies)
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

/// Per short period, the run at which a tail has half the copies a loop
/// needs (a near miss worth looking at).
fn triggers(copies: usize, short_copies: usize) -> Triggers {
    Triggers::new(std::array::from_fn(|k| {
        // Runs of p count copies - 1 periods: half the needed copies, at least two.
        let p = k + 1;
        let half = needed(p, copies, short_copies).div_ceil(2).max(2);
        (p * (half - 1)).min(usize::from(u8::MAX)) as u8
    }))
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
    // Whole copies, ending at the tail's end; the newest MAX_SPANS of them
    // are shown and checked (a long run of a short unit stays cheap).
    let start = tail.end - copies * p;
    let held = (tail.end - s.first()) / p;
    let shown = copies.min(MAX_SPANS).min(held).max(1);
    let unit: String = (tail.end - p..tail.end).map(|i| s.char_at(i)).collect();
    if !unit.chars().any(char::is_alphabetic) {
        return None;
    }
    let text = obs.buffers.channel(channel)?;
    let spans: Vec<(usize, usize)> = (copies - shown..copies)
        .map(|k| (s.offset(start + k * p), s.offset(start + (k + 1) * p)))
        .collect();
    let table = table_row(p, |k| s.at(tail.end - p + k));
    // Table rows count their ids legitimately, and so do short items
    // (`Figure imgb0023`, `Figure imgb0024`, … `Step 4`): there, numbers
    // must not change. A longer unit whose number counts is a turn or a
    // block written again with its index (`<|im_start|>assistant57`).
    let fixed = table || p < SHORT;
    numbers_count(&spans.iter().map(|&(x, y)| text.slice(x..y)).collect::<Vec<_>>(), fixed)?;
    let onset = s.offset(start.max(s.first()));
    // The tail ends at the last char read: its offset is what was read.
    let mut d = Detection::new(INFO.id, obs.index, channel, Some(s.offset(tail.end)));
    d.period = Some(p);
    d.repeats = Some(copies);
    d.threshold = Some(needed);
    d.onset = Some(onset);
    d.spans = spans.iter().map(|&(x, y)| Span::new(x, y)).collect();
    d.evidence = Evidence::Copies;
    let unit_text = text.slice(s.offset(tail.end - p)..s.offset(tail.end));
    d.repeated = Some(unit_text.clone());
    d.reason = format!(
        "the {} repeats a {p}-char unit {} {copies} times in a row (needs {needed}), from char {}",
        channel.as_str(),
        quote(&unit_text, 60),
        onset
    );
    Some(d)
}

/// The detection of a run with no letter that repeats a short unit.
fn judge_letterless(
    found: &letterless::Found,
    text: &str,
    min_chars: usize,
    channel: Channel,
    obs: &Observation<'_>,
) -> Option<Detection> {
    let buffer = obs.buffers.channel(channel)?;
    let end = (buffer.len() - text.chars().count()) + found.chars_into_delta;
    let p = found.period;
    let copies = found.length / p;
    let onset = end - copies * p;
    let shown = copies.min(MAX_SPANS);
    let spans: Vec<Span> = (copies - shown..copies)
        .map(|k| Span::new(onset + k * p, onset + (k + 1) * p))
        .collect();
    let unit = buffer.slice(end - p..end);
    let needed = min_chars.div_ceil(p);
    let mut d = Detection::new(INFO.id, obs.index, channel, Some(end));
    d.period = Some(p);
    d.repeats = Some(copies);
    d.threshold = Some(needed);
    d.onset = Some(onset);
    d.spans = spans;
    d.evidence = Evidence::Copies;
    d.repeated = Some(unit.clone());
    d.reason = format!(
        "the {} repeats a {p}-char unit {} {copies} times in a row with no letter in it (needs {needed}: \
         {min_chars} chars), from char {onset}",
        channel.as_str(),
        quote(&unit, 60),
    );
    Some(d)
}

/// Whether a unit of period `p` (its chars by index, read cyclically: the
/// text repeats it) is a table row: it has `|`s that separate cells. The
/// bars of a chat-template marker (`<|im_start|>`, `<|eot_id|>`) touch its
/// angle brackets and separate nothing. A row's cells are short: a unit
/// with more than `ROW_CHARS_PER_BAR` chars per such bar is text that
/// happens to hold a bar (a `||` in a paragraph of code, a type `A | B`
/// in a long answer), not a row.
pub(super) fn table_row(p: usize, unit: impl Fn(usize) -> u32) -> bool {
    let (bar, open, close) = (u32::from('|'), u32::from('<'), u32::from('>'));
    let bars = (0..p)
        .filter(|&k| unit(k) == bar && unit((k + p - 1) % p) != open && unit((k + 1) % p) != close)
        .count();
    bars > 0 && p <= ROW_CHARS_PER_BAR * bars
}

/// The most chars per cell bar a table row has (a row of three bars: 240
/// chars).
const ROW_CHARS_PER_BAR: usize = 80;

/// The numbers of each copy, position by position, are all equal or count
/// like a list or a counter: every column that changes steps by the number
/// of changing columns (1, 2, 3 / 4, 5, 6 has three columns stepping by 3;
/// `assistant57`, `assistant58` one stepping by 1), or every one steps by
/// one (a turn index written twice, `<turn 57> … </turn 57>`, is one counter
/// in two places); `image-320w`, `image-640w` steps by 320 and is no loop.
/// `fixed`: nothing may change. Whether some number changes, if they count.
fn numbers_count(copies: &[String], fixed: bool) -> Option<bool> {
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
        return (changing == 0).then_some(false);
    }
    let steps_by = |by: i64| {
        columns
            .iter()
            .all(|steps| steps.iter().all(|&s| s == 0) || steps.iter().all(|&s| s == by))
    };
    (steps_by(changing) || steps_by(-changing) || steps_by(1) || steps_by(-1)).then_some(changing > 0)
}

impl TextReader for TextLoop {
    fn restart(&mut self) {
        self.streams.each(Stream::restart);
        self.letterless.each(Letterless::restart);
    }

    fn read(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection> {
        let (copies, short_copies) = (self.copies, self.short_copies);
        let periodic = self.streams.get_mut(channel).read::<true>(
            text,
            self.max_period,
            &self.trigger,
            |p| needed(p, copies, short_copies),
            |stream, tail, n, need| judge(stream, tail, n, need, channel, obs),
        );
        match periodic {
            None => self.read_letterless(channel, text, obs),
            // Both in one delta (rare: the first detection ends the prompt
            // for this detector): the one whose evidence completed first,
            // as the same text cut finer would have it.
            Some(a) => match self.read_letterless(channel, text, obs) {
                Some(b) if b.at_char < a.at_char => Some(b),
                _ => Some(a),
            },
        }
    }
}

impl TextLoop {
    #[inline(always)]
    fn read_letterless(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection> {
        let buffer = obs.buffers.channel(channel)?;
        let found = self
            .letterless
            .get_mut(channel)
            .read(text, buffer, self.letterless_chars)?;
        judge_letterless(&found, text, self.letterless_chars, channel, obs)
    }
}

impl Rule for TextLoop {
    const ID: &'static str = "text-loop";
    const KINDS: Kinds = TEXT_KINDS;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        self.observe_text(obs)
    }

    fn reset(&mut self) {
        TextReader::restart(self);
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let (r, c) = (self.streams.reasoning.best(), self.streams.content.best());
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
