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
pub mod messages;
pub mod native;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
pub(crate) mod openclaw;
pub(crate) mod opencode;
pub(crate) mod openhands;
pub(crate) mod otel;
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
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Map, Value};

use crate::event::{Event, EventKind, Ts};
pub use registry::Format;

/// A Codex function-call output's exit code and what detectors compare it
/// by (`loopscope record` reads the outputs Codex sends back to its model).
pub use codex::call_output as codex_call_output;

/// The longest record (a line, an SSE event, an array element, a whole
/// document) held in memory; a longer one is reported as a bad line and
/// skipped as it streams past, so no input can make memory grow without bound.
pub const DEFAULT_MAX_RECORD: usize = 64 << 20;

static MAX_RECORD: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RECORD);

/// The record limit in force (`--max-record`).
pub fn max_record() -> usize {
    MAX_RECORD.load(Ordering::Relaxed)
}

/// Sets the longest record read (`--max-record`); longer ones are skipped.
pub fn set_max_record(bytes: usize) {
    MAX_RECORD.store(bytes.max(1), Ordering::Relaxed);
}

/// The bad-line reason of a record over the limit.
pub fn overlong_reason() -> String {
    format!(
        "longer than the record limit of {} (--max-record)",
        human_bytes(max_record())
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

/// Reports records skipped for passing the record limit, by line.
pub fn report_overlong(lines: Vec<u64>, out: &mut Vec<Item>) {
    report_overlong_to(lines, &mut |item| out.push(item));
}

/// [`report_overlong`], to a sink.
pub fn report_overlong_to(lines: Vec<u64>, sink: &mut dyn FnMut(Item)) {
    for line in lines {
        sink(Item::Problem(Problem {
            line,
            reason: overlong_reason(),
            skipped: true,
        }));
    }
}

/// Something wrong in the input, reported once: a record that is not an
/// event (skipped), or one that was only partly readable (kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number in the input (for whole documents: the element).
    pub line: u64,
    /// What is wrong.
    pub reason: String,
    /// The record was skipped.
    pub skipped: bool,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)?;
        if self.skipped {
            f.write_str("; line skipped")?;
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
    pub fn parse(text: &str) -> Result<FormatChoice, String> {
        if text == "auto" {
            return Ok(FormatChoice::Auto);
        }
        Format::from_name(text).map(FormatChoice::Fixed).ok_or_else(|| {
            let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            format!("unknown format {text:?} (known: auto, {})", names.join(", "))
        })
    }
}

/// Builds events for an importer: the time and position of the record
/// being read are set once, and every event gets them.
pub struct Out<'a> {
    items: &'a mut Vec<Item>,
    /// The record's 1-based line.
    pub line: u64,
    /// The record's time, given to every event built from it.
    pub ts: Option<Ts>,
    /// Fields every event built from here on gets (an OpenTelemetry
    /// span's `trace_id` and `span_id`, so an evaluation of the event can
    /// be parented to the span it came from).
    pub context: Map<String, Value>,
}

impl<'a> Out<'a> {
    /// A builder of events for the record at `line`.
    pub fn new(items: &'a mut Vec<Item>, line: u64) -> Out<'a> {
        Out {
            items,
            line,
            ts: None,
            context: Map::new(),
        }
    }

    /// A new event of this kind, with the record's time and context.
    fn event(&self, kind: EventKind) -> Event {
        let mut e = Event::new(kind);
        e.ts = self.ts.clone();
        if !self.context.is_empty() {
            e.extra = self.context.clone().into();
        }
        e
    }

    /// Emits an event of this kind.
    pub fn push(&mut self, kind: EventKind) {
        let e = self.event(kind);
        self.items.push(Item::Event(e, self.line));
    }

    /// Output tokens the log records for what was just emitted: added to
    /// the `usage` of the last event (so a stream's tokens can be counted
    /// from where a loop began), or of a meta event of its own when none is
    /// at hand.
    pub fn usage(&mut self, output_tokens: u64) {
        if output_tokens == 0 {
            return;
        }
        let add = |e: &mut Event| {
            let usage = e
                .extra
                .entry("usage")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(u) = usage {
                let before = u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
                u.insert(
                    "output_tokens".into(),
                    Value::from(before.saturating_add(output_tokens)),
                );
            }
        };
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            if e.extra.get("usage").is_none_or(Value::is_object) {
                add(e);
                return;
            }
        }
        self.usage_event(output_tokens);
    }

    /// Output tokens an API stream reports for one response (at its end):
    /// a meta event of its own, so the events never depend on how the
    /// stream's bytes were cut.
    pub fn usage_event(&mut self, output_tokens: u64) {
        if output_tokens == 0 {
            return;
        }
        let mut e = self.event(EventKind::Meta);
        e.extra.insert(
            "title".into(),
            Value::String(format!("usage: {output_tokens} output tokens")),
        );
        e.extra
            .insert("usage".into(), serde_json::json!({ "output_tokens": output_tokens }));
        self.items.push(Item::Event(e, self.line));
    }

    /// The item emitted last, to add a field to it.
    pub fn last_mut(&mut self) -> Option<&mut Item> {
        self.items.last_mut()
    }

    /// An item another decoder produced (cassette interactions).
    pub fn item(&mut self, item: Item) {
        self.items.push(item);
    }

    /// Emits a `prompt`.
    pub fn prompt(&mut self, text: &str) {
        self.push(EventKind::Prompt {
            text: Some(text.to_string()),
        });
    }

    /// Emits a `request`.
    pub fn request(&mut self, id: Option<&str>) {
        self.push(EventKind::Request {
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
        });
    }

    /// Emits a `reasoning` delta (nothing for empty text).
    pub fn reasoning(&mut self, text: &str) {
        if !text.is_empty() {
            self.push(EventKind::Reasoning { text: text.to_string() });
        }
    }

    /// Emits a `content` delta (nothing for empty text).
    pub fn content(&mut self, text: &str) {
        if !text.is_empty() {
            self.push(EventKind::Content { text: text.to_string() });
        }
    }

    /// Emits a `note`.
    pub fn note(&mut self, text: impl Into<String>) {
        self.push(EventKind::Note { text: text.into() });
    }

    /// A request to the model, with the model's name when the log has it.
    pub fn request_by(&mut self, id: Option<&str>, model: Option<&str>) {
        self.request(id);
        if let (Some(model), Some(Item::Event(e, _))) = (model.filter(|m| !m.is_empty()), self.items.last_mut()) {
            e.extra.insert("model".into(), Value::String(model.to_string()));
        }
    }

    /// An error the model's API returned (the house style: a note).
    pub fn api_error(&mut self, text: &str) {
        self.note(format!("API error: {}", text.trim()));
    }

    /// The context was compacted (a note of kind `condensation`, which
    /// OpenHands' stuck detector counts).
    pub fn condensation(&mut self, text: impl Into<String>) {
        self.note(text);
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert("kind".into(), Value::String("condensation".into()));
        }
    }

    /// A complete tool call. Arguments given as text are parsed; text that
    /// is not JSON is kept as a string and reported, never dropped.
    pub fn tool_call(&mut self, id: Option<&str>, name: &str, args: Args) {
        let args = match args {
            Args::Json(v) => v,
            Args::Text(t) if t.trim().is_empty() => Value::Object(Map::new()),
            Args::Text(t) => match serde_json::from_str(t) {
                Ok(v) => v,
                Err(e) => {
                    self.warn(format!(
                        "tool call {name}: arguments are not valid JSON ({e}); kept as a string"
                    ));
                    Value::String(t.to_string())
                }
            },
        };
        self.push(EventKind::ToolCall {
            name: name.to_string(),
            args,
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
        });
    }

    /// Emits a `tool_result`.
    pub fn tool_result(&mut self, id: Option<&str>, ok: bool, output: Option<Value>) {
        self.push(EventKind::ToolResult {
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
            ok,
            output,
        });
    }

    /// Emits a `tool_result` whose output holds parts that change on every
    /// call whatever the call did (a chunk id, a wall time): detectors
    /// compare `stable` instead ([`Event::compared_output`]); the exact
    /// output is kept for display.
    pub fn tool_result_varying(&mut self, id: Option<&str>, ok: bool, output: Value, stable: Value) {
        self.tool_result(id, ok, Some(output));
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert(crate::event::STABLE_OUTPUT.into(), stable);
        }
    }

    /// How many items are out so far: [`Out::token_ids`] marks the ones after it.
    pub fn mark(&self) -> usize {
        self.items.len()
    }

    /// The token ids a server sent with the text emitted since `from` (one
    /// streamed chunk): they go to the first text event, as `token_ids`, and
    /// the chunk's other text events (a `<think>` split) get none (`[]`), so
    /// every id is counted once. Ids of a chunk without text (a tool call's
    /// arguments) wait in `held` (the decoder's, per response) for the next
    /// text event, so the sequence keeps every token up to there in order.
    pub fn token_ids(&mut self, from: usize, ids: &[Value], held: &mut Vec<Value>) {
        let mut ids = Some(ids);
        for item in self.items.iter_mut().skip(from) {
            let Item::Event(e, _) = item else { continue };
            if !matches!(e.kind, EventKind::Reasoning { .. } | EventKind::Content { .. }) {
                continue;
            }
            let mine = match ids.take() {
                Some(list) => {
                    let mut all = std::mem::take(held);
                    all.extend_from_slice(list);
                    all
                }
                None => Vec::new(),
            };
            e.extra.insert(crate::event::TOKEN_IDS.into(), Value::Array(mine));
        }
        if let Some(list) = ids {
            held.extend_from_slice(list);
        }
    }

    /// The failed result just emitted came back as the tool's output (the
    /// OpenHands SDK's `ObservationEvent` with `is_error`), not as an error
    /// the tool raised (`AgentErrorEvent`): `error_returned: true`, which
    /// profile `openhands` compares as an observation.
    pub fn error_returned(&mut self) {
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert(crate::event::ERROR_RETURNED.into(), Value::Bool(true));
        }
    }

    /// What the agent's own loop detection did (a warning, a refused call,
    /// a run it stopped), as its session records it: a `note` of kind
    /// `agent_loop_detection`, with the agent and the level, so a profile
    /// that reproduces the agent's detector can be held against it.
    pub fn agent_detection(&mut self, agent: &str, level: &str, text: String) {
        self.note(text);
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra
                .insert("kind".into(), Value::String("agent_loop_detection".into()));
            e.extra.insert("agent".into(), Value::String(agent.into()));
            e.extra.insert("level".into(), Value::String(level.into()));
        }
    }

    /// A tool call that was not run (cancelled, or not started because a
    /// call beside it failed): a `note` of kind `cancelled`, not a failed
    /// result, since nothing ran.
    pub fn cancelled(&mut self, id: Option<&str>, why: &str) {
        self.note(why.to_string());
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert("kind".into(), Value::String("cancelled".into()));
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                e.extra.insert("tool_call_id".into(), Value::String(id.to_string()));
            }
        }
    }

    /// A record that could not be read: skipped.
    pub fn problem(&mut self, reason: impl Into<String>) {
        self.items.push(Item::Problem(Problem {
            line: self.line,
            reason: reason.into(),
            skipped: true,
        }));
    }

    /// A well-formed record of a kind this importer does not know: skipped,
    /// and counted by kind ([`Item::Unknown`]).
    pub fn unknown(&mut self, kind: &str) {
        self.items.push(Item::Unknown(drift::Unknown::new(self.line, kind)));
    }

    /// Something only partly readable: kept, and said.
    pub fn warn(&mut self, reason: impl Into<String>) {
        self.items.push(Item::Problem(Problem {
            line: self.line,
            reason: reason.into(),
            skipped: false,
        }));
    }
}

/// Tool-call arguments as a source has them.
pub enum Args<'a> {
    /// Already parsed.
    Json(Value),
    /// A JSON text, parsed when the call is emitted.
    Text(&'a str),
}

impl<'a> Args<'a> {
    /// A field that holds the arguments as JSON text or as JSON.
    pub fn of(v: Option<&'a Value>) -> Args<'a> {
        match v {
            Some(Value::String(s)) => Args::Text(s),
            other => Args::Json(other.cloned().unwrap_or(Value::Null)),
        }
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
pub fn u64_of(v: Option<&Value>) -> Option<u64> {
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

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens a path for reading ("-" is standard input); files are only ever
/// opened read-only. The error is one line, fit for the user.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>, String> {
    if is_stdin(path) {
        return Ok(Box::new(io::stdin()));
    }
    let shown = crate::sanitize::path(path);
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    if meta.is_dir() {
        return Err(format!("{shown}: is a directory"));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    Ok(Box::new(file))
}

/// An input ready to decode: where its bytes come from and which importer reads them.
pub struct Opened {
    /// Where its bytes come from.
    pub reader: Box<dyn Read + Send>,
    /// The importer reading them.
    pub decoder: Box<dyn Decoder>,
    /// The importer's format.
    pub format: Format,
    /// The format was named with `--format`, not detected.
    pub forced: bool,
    /// What detection made of the input: `None` for an empty input,
    /// `Some(None)` when it matched no format.
    pub looks_like: Option<Option<Format>>,
    /// The reading of the format in use, when read as bytes.
    pub kind: Option<detect::Kind>,
}

impl Opened {
    /// What is needed to judge the events read, once reader and decoder are in use.
    pub fn forced_check(&self) -> ForcedCheck {
        ForcedCheck {
            forced: self.forced,
            format: self.format,
            looks_like: self.looks_like,
        }
    }
}

#[derive(Clone, Copy, Debug)]
/// Whether a forced `--format` read anything (see [`ForcedCheck::check`]).
pub struct ForcedCheck {
    forced: bool,
    format: Format,
    looks_like: Option<Option<Format>>,
}

/// Whether an event carries something of the stream (text, a call, a
/// result, a verdict): a wrong importer can still make a `request` or a
/// `note` out of any JSON, but not these.
pub fn carries_stream(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Prompt { .. }
            | EventKind::Reasoning { .. }
            | EventKind::Content { .. }
            | EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
            | EventKind::LoopCheck { .. }
    )
}

impl ForcedCheck {
    /// A forced format that read nothing of the stream (see
    /// [`carries_stream`]) from a non-empty input matched nothing: in CI
    /// that would be a silent false negative, so it is an error.
    pub fn check(&self, events: usize) -> Result<(), String> {
        match (self.forced, events, self.looks_like) {
            (true, 0, Some(like)) => Err(format!(
                "--format {} read no events from it ({}); try --format auto",
                self.format,
                like.map_or("it matches no format loopscope reads".to_string(), |f| format!(
                    "it looks like {f}"
                ))
            )),
            _ => Ok(()),
        }
    }
}

/// Opens an input and picks its importer: the one asked for, or the one
/// detected from its first bytes. A Cline/Roo task folder opens its
/// `ui_messages.json` (or `api_conversation_history.json`), a Copilot
/// session folder its `events.jsonl`; a store, an OpenHands conversation
/// folder or opencode's storage tree one session (`PATH#ID`, or the newest),
/// and `FILE#ID` a sub-agent's stream in a file that holds several.
pub fn open_input(path: &Path, choice: FormatChoice) -> Result<Opened, String> {
    let path = cline::task_file(path)
        .or_else(|| copilot::session_file(path))
        .unwrap_or_else(|| path.to_path_buf());
    let (file, part) = match source::place(&path) {
        source::Place::File { path, part } => (path, part),
        place => {
            let (records, kind) = source::open_records(&place)?;
            if let FormatChoice::Fixed(f) = choice {
                if f != kind.format() {
                    return Err(format!(
                        "{}: --format {f}, but this is {}'s; try --format auto",
                        crate::sanitize::path(&path),
                        kind.format()
                    ));
                }
            }
            return Ok(Opened {
                reader: Box::new(source::RecordsReader::new(records)),
                decoder: kind.build(),
                format: kind.format(),
                forced: matches!(choice, FormatChoice::Fixed(_)),
                looks_like: Some(Some(kind.format())),
                kind: Some(kind),
            });
        }
    };
    let reader = open(&file)?;
    let hint = file.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut opened = detect::open_reader(reader, choice, hint.as_deref())
        .map_err(|e| format!("{}: {e}", crate::sanitize::path(&file)))?;
    if opened.kind == Some(detect::Kind::Parquet) {
        // A Parquet row (or the first) is read from the file, by its number or id.
        let row = rows::parquet_row(&file, part.as_deref(), &rows::RowOptions::default())?;
        let kind = rows::document_kind(&row.document)
            .map_err(|e| format!("{}#{}: {e}", crate::sanitize::path(&file), row.part()))?;
        return Ok(Opened {
            reader: Box::new(io::Cursor::new(row.document)),
            decoder: kind.build(),
            format: kind.format(),
            forced: false,
            looks_like: Some(Some(kind.format())),
            kind: Some(kind),
        });
    }
    if let Some(part) = part {
        let kind = opened.kind.filter(|k| k.has_parts()).ok_or_else(|| {
            format!(
                "{}: holds one stream ({}); #{} names none in it",
                crate::sanitize::path(&file),
                opened.format,
                crate::sanitize::line(&part)
            )
        })?;
        opened.decoder = kind.build_part(Some(&part));
    }
    Ok(opened)
}
