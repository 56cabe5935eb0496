//! Input formats. Every format is a [`Decoder`]: fed bytes as they arrive,
//! it emits native events and problems. The same decoder serves a whole
//! file (`scan`, `view`, `convert`: fed everything, then `finish`) and a
//! growing one (`tail`: fed each append; a half-written record waits).
//!
//! Framing is written once: `lines` (JSONL), `sse` (server-sent events
//! or bare chunk JSONL), `array` (a streamed JSON array), `whole` (files
//! rewritten as a whole). Each importer only maps payloads to events.

pub(crate) mod aider;
pub(crate) mod anthropic;
pub(crate) mod array;
pub(crate) mod atif;
pub(crate) mod auto;
pub(crate) mod claude_code;
pub(crate) mod claude_trace;
pub mod cline;
pub(crate) mod codex;
pub mod copilot;
pub(crate) mod crush;
pub mod detect;
pub mod drift;
pub mod folder;
pub(crate) mod gemini;
pub(crate) mod gemini_cli;
pub(crate) mod goose;
pub(crate) mod grow;
pub(crate) mod lines;
pub(crate) mod messages;
pub mod native;
pub(crate) mod open;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
pub(crate) mod openclaw;
pub(crate) mod opencode;
pub(crate) mod openhands;
pub(crate) mod otel;
pub(crate) mod out;
pub(crate) mod partial;
pub(crate) mod pi;
pub mod plain;
pub mod registry;
pub mod rows;
pub mod source;
pub mod sqlite;
pub(crate) mod sse;
pub(crate) mod swe_agent;
pub(crate) mod vcr;
pub(crate) mod whole;

use std::fmt;
use std::io::{self, Read};

use serde_json::Value;

use crate::event::{Event, Ts};
pub use open::{carries_stream, is_stdin, open, open_input, ForcedCheck, Opened, ReadOptions};
pub use out::{Args, Out};
pub use registry::Format;

/// A Codex function-call output's exit code and what detectors compare it
/// by (`loopscope record` reads the outputs Codex sends back to its model).
pub use codex::call_output as codex_call_output;

/// The longest record (a line, an SSE event, an array element, a whole
/// document) held in memory by default; a longer one is reported as a bad
/// line and skipped as it streams past, so no input can make memory grow
/// without bound ([`ReadOptions::max_record`] sets another).
pub const DEFAULT_MAX_RECORD: usize = 64 << 20;

/// What an input needs that this build leaves out: "reading X needs
/// loopscope-core's `feature` feature (off in this build)". Such an input is
/// an unsupported format, said with the feature that reads it.
#[allow(dead_code)] // every feature on: nothing is left out
pub(crate) fn feature_off(feature: &str, what: &str) -> String {
    format!("reading {what} needs loopscope-core's `{feature}` feature (off in this build)")
}

/// The bad-line reason of a record over the limit of `max_record` bytes.
pub(crate) fn overlong_reason(max_record: usize) -> String {
    format!(
        "longer than the record limit of {} (--max-record)",
        human_bytes(max_record)
    )
}

/// `64 MiB`, `1.5 GiB`, `512 bytes`.
pub fn human_bytes(n: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64;
    let mut unit = "";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// Parses a size: `65536`, `64K`, `64M`, `1G` (binary multiples).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let mult: u64 = match t[i..].to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
                "" => 1,
                "k" => 1 << 10,
                "m" => 1 << 20,
                "g" => 1 << 30,
                _ => return Err(format!("expected a size like 64M or 1G, got {text:?}")),
            };
            (&t[..i], mult)
        }
        None => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| (1024..=1 << 40).contains(n))
        .map(|n| n as usize)
        .ok_or_else(|| format!("expected a size from 1K to 1T like 64M, got {text:?}"))
}

/// Reports records skipped for passing the record limit of `max_record`
/// bytes, by line.
pub(crate) fn report_overlong(lines: Vec<u64>, max_record: usize, out: &mut Vec<Item>) {
    report_overlong_to(lines, max_record, &mut |item| out.push(item));
}

/// [`report_overlong`], to a sink.
pub(crate) fn report_overlong_to(lines: Vec<u64>, max_record: usize, sink: &mut dyn FnMut(Item)) {
    for line in lines {
        sink(Item::Problem(Problem {
            line,
            reason: overlong_reason(max_record),
            skipped: true,
        }));
    }
}

/// Something wrong in the input, reported once: a record that is not an
/// event (skipped), or one that was only partly readable (kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number in the input; 0 where the input has no lines
    /// (a whole document, whose problems name the record in `reason`).
    pub line: u64,
    /// What is wrong.
    pub reason: String,
    /// The record was skipped.
    pub skipped: bool,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        f.write_str(&self.reason)?;
        if self.skipped {
            f.write_str(if self.line > 0 { "; line skipped" } else { "; skipped" })?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
/// What an importer produces.
pub enum Item {
    /// An event and the 1-based line its record starts on (1 for every
    /// event of a whole document).
    Event(Event, u64),
    /// Something wrong in the input.
    Problem(Problem),
    /// A well-formed record of a kind the importer does not know (a newer
    /// agent's event type, a renamed field): skipped, and counted by kind
    /// so the user learns that loopscope may be older than the agent
    /// ([`drift::UnknownKinds`]).
    Unknown(drift::Unknown),
}

/// An importer: bytes in, events and problems out, as they arrive.
pub trait Decoder: Send {
    /// Sets the longest record it holds in memory (a line, an SSE event, an
    /// array element, a whole document; [`DEFAULT_MAX_RECORD`] until set): a
    /// longer one is reported as a bad line and skipped as it streams past.
    fn set_max_record(&mut self, bytes: usize);
    /// Decodes every complete record in `bytes` (plus what earlier calls held back).
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>);
    /// The input ended: a last record without its terminator is decoded too.
    fn finish(&mut self, out: &mut Vec<Item>);
    /// [`Decoder::feed`], handing each item to `sink` as soon as it is
    /// decoded. By default they are staged in a `Vec` first; the native
    /// reader, whose lines are most of what loopscope reads, hands each
    /// event straight on: an event is large (moving it costs as much as
    /// parsing a short delta) and a burst of staged events outruns the
    /// allocator's per-thread cache when they are freed.
    fn feed_to(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Item)) {
        let mut items = Vec::new();
        self.feed(bytes, &mut items);
        items.into_iter().for_each(sink);
    }
    /// [`Decoder::finish`], handing each item to `sink` (see [`Decoder::feed_to`]).
    fn finish_to(&mut self, sink: &mut dyn FnMut(Item)) {
        let mut items = Vec::new();
        self.finish(&mut items);
        items.into_iter().for_each(sink);
    }
    /// The writers of this format rewrite the whole file (Cline/Roo, legacy
    /// gemini-cli JSON): a follower hands each new version to `reread`.
    fn rewrites_whole_file(&self) -> bool {
        false
    }
    /// A new version of the whole file: only what was not emitted before comes out.
    fn reread(&mut self, _whole: &[u8], _out: &mut Vec<Item>) {}
    /// The importer in use (after auto-detection, the detected one).
    fn format(&self) -> Option<Format> {
        None
    }
    /// A follower read the input to its current end and more may come
    /// (`tail`, `watch`): what a whole file's end would settle (pi's
    /// branch) is settled now, and later records come out as they arrive.
    fn caught_up(&mut self, _out: &mut Vec<Item>) {}
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// The importer with this name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Session files keep whole blocks (a thought, a message), not the
    /// deltas the model streamed: chunk- and checkpoint-level detectors then
    /// see blocks, and a loop can show up one block later than it streamed.
    pub fn has_deltas(self) -> bool {
        self.entry().has_deltas
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--format`: detect, or use this importer.
///
/// ```
/// use loopscope_core::{scan, setup, Format, FormatChoice};
///
/// let seed = setup("seed", &[], &[]).unwrap();
/// let line = "{\"type\":\"reasoning\",\"text\":\"hm\"}\n";
/// let detected = scan(std::io::Cursor::new(line), FormatChoice::Auto, None, &seed).unwrap();
/// assert_eq!(detected.format, Some(Format::Native));
/// assert_eq!(Format::Native.name(), "native");
/// let forced = scan(std::io::Cursor::new(line), FormatChoice::Fixed(Format::Native), None, &seed).unwrap();
/// assert_eq!(forced.events, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FormatChoice {
    #[default]
    /// Detect it from the first bytes.
    Auto,
    /// Use this importer.
    Fixed(Format),
}

impl FormatChoice {
    /// Parses `--format`'s value (`auto` or an importer's name).
    /// A name no importer has is an [`ErrorKind::UnsupportedFormat`](crate::ErrorKind::UnsupportedFormat).
    ///
    /// ```
    /// use loopscope_core::{ErrorKind, Format, FormatChoice};
    ///
    /// assert_eq!(FormatChoice::parse("auto").unwrap(), FormatChoice::Auto);
    /// assert_eq!(FormatChoice::parse("codex").unwrap(), FormatChoice::Fixed(Format::Codex));
    /// assert_eq!(FormatChoice::parse("nope").unwrap_err().kind(), ErrorKind::UnsupportedFormat);
    /// ```
    pub fn parse(text: &str) -> Result<FormatChoice, crate::Error> {
        if text == "auto" {
            return Ok(FormatChoice::Auto);
        }
        Format::from_name(text).map(FormatChoice::Fixed).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            crate::Error::new(
                crate::ErrorKind::UnsupportedFormat,
                format!("unknown format {text:?} (known: auto, {})", names.join(", ")),
            )
        })
    }
}

/// A string field of a JSON object, if it is one.
pub fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The text of a message's content: a string, or the `text` of its parts
/// (`[{type: "text", text}]`, as most agents write them), joined by newlines.
pub fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| str_of(p, "type").is_none_or(|t| t == "text" || t == "input_text" || t == "output_text"))
                .filter_map(|p| p.as_str().or_else(|| str_of(p, "text")))
                .collect();
            texts.join("\n")
        }
        _ => String::new(),
    }
}

/// A time as agents write it: RFC 3339, or an ISO time without an offset
/// (Python's `datetime.now().isoformat()`, local time; read as UTC, which
/// keeps the spacing between events right), or `YYYY-MM-DD HH:MM:SS`. A
/// time without an offset is kept as the RFC 3339 time it was read as (in
/// UTC, as precise as written): the native format's `ts` is RFC 3339, so
/// what `convert` writes of it must read back.
pub fn ts_of(text: &str) -> Option<Ts> {
    if let Some(t) = Ts::from_rfc3339(text) {
        return Some(t);
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text.trim(), f).ok())?;
    let t = naive.and_utc();
    Some(Ts::Clock {
        text: t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        unix: t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9,
    })
}

/// A number that may be written as a JSON number or a decimal string
/// (OTLP writes 64-bit integers as strings).
pub(crate) fn u64_of(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.is_finite()).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Runs `decoder` over a whole reader, handing each item to `sink` as soon
/// as it is decoded, so a large file is never held in memory twice.
pub fn decode_all(mut input: impl Read, decoder: &mut dyn Decoder, mut sink: impl FnMut(Item)) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        decoder.feed_to(&buf[..n], &mut sink);
    }
    decoder.finish_to(&mut sink);
    Ok(())
}

/// Everything a reader produced from one input.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The problems, in order.
    pub problems: Vec<Problem>,
    /// Records of kinds the importer does not know, by kind.
    pub unknown: drift::UnknownKinds,
}

impl Decoded {
    /// Decodes all of `bytes`.
    pub fn from_bytes(bytes: &[u8], decoder: &mut dyn Decoder) -> Decoded {
        let mut d = Decoded::default();
        decode_all(bytes, decoder, |item| d.push(item)).expect("reading from memory cannot fail");
        d
    }

    /// Adds one item.
    pub fn push(&mut self, item: Item) {
        match item {
            Item::Event(e, _) => self.events.push(e),
            Item::Problem(p) => self.problems.push(p),
            Item::Unknown(u) => {
                self.unknown.add(&u);
            }
        }
    }
}
