//! Which importer reads an input, from its first bytes (the detection
//! order of `shared/formats/README.md`): zstd magic, YAML cassette, SSE,
//! a JSON array, then the shape of the first JSON line. File names break ties.

use crate::error::{Error, ErrorKind};
use std::io::{Cursor, Read};

use serde_json::Value;

use super::array::ArraySplitter;
use super::sse::looks_like_sse;
use super::{aider, cline, openhands, pi, registry, rows, swe_agent};
use super::{str_of, Decoder, Format, FormatChoice, Opened, ReadOptions};

pub use super::auto::AutoDecoder;
pub use super::partial::top_level_fields;
pub use super::registry::Kind;

impl Kind {
    /// The importer name it belongs to.
    pub fn format(self) -> Format {
        self.entry().format
    }

    /// A whole trajectory in one JSON document: one such per line is a
    /// dataset ([`Kind::Rows`]).
    pub fn is_document(self) -> bool {
        self.entry().spec.document
    }

    /// Whether one file can hold several streams (sub-agents), named `FILE#ID`.
    pub fn has_parts(self) -> bool {
        self.entry().spec.parts
    }

    /// The importer for one stream of the input: `part` names a sub-agent
    /// (see [`Kind::has_parts`]); other kinds read the whole input.
    pub fn build_part(self, part: Option<&str>) -> Box<dyn Decoder> {
        (self.entry().build)(part.filter(|_| self.has_parts()))
    }

    /// Holds other streams rather than events (a cassette, a compressed file).
    pub fn is_container(self) -> bool {
        self.entry().spec.container
    }

    /// The importer that reads it.
    pub fn build(self) -> Box<dyn Decoder> {
        (self.entry().build)(None)
    }
}

const NATIVE_TYPES: [&str; 9] = [
    "meta",
    "prompt",
    "request",
    "reasoning",
    "content",
    "tool_call",
    "tool_result",
    "loop_check",
    "note",
];

/// An API stream payload's format (rules 5a–5d).
fn payload_kind(v: &Value) -> Option<Kind> {
    let t = str_of(v, "type").unwrap_or_default();
    let choices = v.get("choices").and_then(Value::as_array);
    if str_of(v, "object") == Some("chat.completion.chunk")
        || choices.is_some_and(|c| c.iter().any(|c| c.get("delta").is_some()))
    {
        return Some(Kind::OpenaiChat);
    }
    if t.starts_with("response.") {
        return Some(Kind::OpenaiResponses);
    }
    if matches!(
        t,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "ping"
    ) {
        return Some(Kind::Anthropic);
    }
    if v.get("candidates").is_some() || v.get("usageMetadata").is_some() {
        return Some(Kind::Gemini);
    }
    // A stream that starts with an error: {"error": {...}} is read by the chat importer.
    if v.get("error").is_some() && v.as_object().is_some_and(|o| o.len() <= 2) {
        return Some(Kind::OpenaiChat);
    }
    None
}

/// The third set's JSON lines and documents (formats-3.md), tried before
/// the older rules: their shapes are more specific. A store's row names
/// its store; other records go through the table's line tests, in their
/// order (formats/registry.rs).
fn agent_kind(v: &Value) -> Option<Kind> {
    if str_of(v, "loopscope") == Some("rows") {
        let store = str_of(v, "store")?;
        return Kind::ALL.into_iter().find(|k| k.entry().spec.store == Some(store));
    }
    registry::sniffed_kinds()
        .iter()
        .find(|(sniff, _)| (sniff.test)(v))
        .map(|(_, kind)| *kind)
}

/// A JSON object line's format (rules 5a–5k).
fn object_kind(v: &Value) -> Option<Kind> {
    let t = str_of(v, "type").unwrap_or_default();
    let has = |k: &str| v.get(k).is_some();
    if let Some(k) = agent_kind(v) {
        return Some(k);
    }
    if NATIVE_TYPES.contains(&t) && !has("uuid") && !has("payload") {
        return Some(Kind::Native);
    }
    if let Some(k) = payload_kind(v) {
        return Some(k);
    }
    if has("timestamp") && has("type") && has("payload") {
        return Some(Kind::Codex);
    }
    if has("id") && has("timestamp") && has("instructions") {
        return Some(Kind::Codex);
    }
    if matches!(t, "thread.started" | "turn.started" | "turn.completed" | "turn.failed") || t.starts_with("item.") {
        return Some(Kind::Codex);
    }
    if (has("uuid") && has("parentUuid") && has("sessionId"))
        || matches!(
            t,
            "summary" | "file-history-snapshot" | "queue-operation" | "progress" | "user" | "assistant"
        )
        || (matches!(t, "system" | "stream_event" | "result") && (has("session_id") || has("sessionId")))
    {
        // qwen-code writes Claude Code's record shape with Gemini parts.
        let gemini_parts = v.get("message").and_then(|m| m.get("parts")).is_some();
        return Some(if gemini_parts { Kind::QwenCode } else { Kind::ClaudeCode });
    }
    if has("sessionId") && has("projectHash") {
        return Some(if has("messages") {
            Kind::GeminiCliLegacy
        } else {
            Kind::GeminiCliJsonl
        });
    }
    if has("model") && has("created_at") && has("message") && has("done") {
        return Some(Kind::OpenaiChat);
    }
    // A trajectory document: its `messages` (an array; `null` when only
    // the top-level fields of a long document were read), or a dataset
    // row's `trajectory` of messages.
    let messages = |k: &str| match v.get(k) {
        Some(Value::Array(items)) => items.first().is_none_or(|m| m.get("role").is_some()),
        Some(Value::Null) => true,
        _ => false,
    };
    if (messages("messages") || messages("trajectory")) && !has("type") {
        return Some(Kind::Messages);
    }
    None
}

/// The format of a JSON array's items (rule 4).
fn array_kind(first: &Value, hint: Option<&str>) -> Option<Kind> {
    let has = |k: &str| first.get(k).is_some();
    if openhands::is_v0_item(first) {
        return Some(Kind::OpenhandsV0);
    }
    if has("ts") && matches!(str_of(first, "type"), Some("say" | "ask")) {
        return Some(Kind::ClineUi);
    }
    if swe_agent::is_mini_list(first) {
        return Some(Kind::MiniSwe);
    }
    if has("role") && (has("content") || has("text")) {
        // Cline/Roo keep Anthropic-style messages under their own name;
        // any other message list is a chat trajectory.
        let cline = hint.is_some_and(|h| h.ends_with(cline::API_HISTORY));
        return Some(if cline { Kind::ClineApi } else { Kind::Messages });
    }
    if has("role") && has("parts") {
        return Some(Kind::GeminiContents);
    }
    if has("candidates") {
        return Some(Kind::GeminiArray);
    }
    None
}

/// Classifies an input from its beginning. `Ok(None)`: more bytes are
/// needed (only when `complete` is false). `hint` is the file name.
pub fn classify(head: &[u8], complete: bool, hint: Option<&str>) -> Result<Option<Kind>, Error> {
    let unknown = || {
        Err(Error::new(
            ErrorKind::UnsupportedFormat,
            format!("not a format loopscope reads (tried {})", registry::tried()),
        ))
    };
    if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        return Ok(Some(Kind::Zstd));
    }
    if rows::is_parquet(head) {
        return Ok(Some(Kind::Parquet));
    }
    let text = String::from_utf8_lossy(head);
    let text = text.trim_start_matches('\u{feff}');
    let body = text.trim_start();
    if body.is_empty() {
        return if complete {
            // An empty file: nothing to read, whatever it is.
            Ok(Some(hint.map_or(Kind::Native, hinted)))
        } else {
            Ok(None)
        };
    }
    if body.starts_with("interactions:") {
        return Ok(Some(Kind::Cassette));
    }
    if body.starts_with(aider::HEADER)
        || (body.starts_with('#') && hint.is_some_and(|h| h.ends_with(".aider.chat.history.md")))
    {
        return Ok(Some(Kind::Aider));
    }
    let first_line_complete = body.contains('\n') || complete;
    // A short first read ("da", "{\"ty") says nothing yet: wait for the
    // first line (a JSON array is judged by its first element instead).
    if !first_line_complete && !body.starts_with('[') {
        return Ok(None);
    }
    let first_line = body.lines().next().unwrap_or_default();
    if looks_like_sse(first_line) {
        // The first JSON payload decides.
        for line in body.lines() {
            if let Some(data) = line.strip_prefix("data:") {
                let data = data.trim();
                if data == "[DONE]" {
                    continue;
                }
                if let Ok(v) = serde_json::from_str::<Value>(data) {
                    return payload_kind(&v).map(Some).map_or_else(unknown, Ok);
                }
            }
        }
        return if complete { unknown() } else { Ok(None) };
    }
    if body.starts_with('[') {
        let mut first = None;
        ArraySplitter::default().feed(body.as_bytes(), |_, e| {
            if first.is_none() {
                first = serde_json::from_slice::<Value>(e).ok();
            }
        });
        return match first {
            Some(v) => array_kind(&v, hint).map(Some).map_or_else(unknown, Ok),
            None if complete => match hint {
                Some(h) if h.ends_with(cline::API_HISTORY) => Ok(Some(Kind::ClineApi)),
                Some(h) if h.ends_with(cline::UI_MESSAGES) => Ok(Some(Kind::ClineUi)),
                // An empty list: a trajectory with no message yet (a dataset row).
                _ if body.trim_end() == "[]" => Ok(Some(Kind::Messages)),
                _ => unknown(),
            },
            None => Ok(None),
        };
    }
    if body.starts_with('{') {
        if !first_line_complete {
            return Ok(None);
        }
        // The first line that parses decides: a broken first line is a
        // bad line to report, not a reason to give up on the file.
        let complete_lines = if complete {
            body.lines().count()
        } else {
            body.lines().count() - 1
        };
        // Only a line that is a whole JSON object counts: a pretty-printed
        // document has lines that parse on their own (a bare string in a
        // list, `{}`), and they say nothing of its format.
        let mut parsed = body
            .lines()
            .take(complete_lines)
            .take(50)
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(Value::is_object);
        if let Some(v) = parsed.next() {
            let mut kind = object_kind(&v);
            // A session can start with records of the agent's own
            // bookkeeping that name no format (Claude Code's interactive
            // sessions open with `mode` and `permission-mode`): the first
            // line that names one decides.
            let mut by_first_line = true;
            if kind.is_none() {
                kind = parsed.by_ref().find_map(|next| object_kind(&next));
                by_first_line = false;
            }
            // A whole trajectory on the first line and more after it (or a
            // .jsonl name): a dataset of one trajectory per line.
            let first_is_it = body
                .trim_start()
                .lines()
                .next()
                .is_some_and(|l| l.len() == first_line.len());
            let more = !body.trim_start()[first_line.len()..].trim_start().is_empty();
            let jsonl = hint.is_some_and(|h| [".jsonl", ".ndjson", ".jsonl.zst"].iter().any(|e| h.ends_with(e)));
            if kind.is_some_and(Kind::is_document) && by_first_line && first_is_it && (more || jsonl) {
                return Ok(Some(Kind::Rows));
            }
            // pi's session file and its `--mode json` stream start with the same header.
            if kind == Some(Kind::PiSession) && str_of(&v, "type") == Some("session") {
                for next in parsed {
                    match agent_kind(&next) {
                        Some(k @ (Kind::PiSession | Kind::PiStream)) => return Ok(Some(k)),
                        _ if str_of(&next, "type").is_some_and(|t| pi::ENTRY_TYPES.contains(&t)) => {
                            return Ok(Some(Kind::PiSession))
                        }
                        _ => {}
                    }
                }
                return Ok((complete || complete_lines >= 50).then_some(Kind::PiSession));
            }
            return kind.map(Some).map_or_else(unknown, Ok);
        }
        // Pretty-printed JSON (legacy gemini-cli sessions, of any size):
        // the top-level fields read so far decide, without the whole document.
        let (fields, closed) = top_level_fields(body);
        if fields.get("info").is_some() && fields.get("messages").is_some() && fields.get("trajectory_format").is_none()
        {
            // opencode export or mini-swe-agent (whose format name comes last):
            // what `info` holds tells them apart.
            let mini = [
                "\"model_stats\"",
                "\"mini_version\"",
                "\"trajectory_format\"",
                "\"exit_status\"",
            ];
            let opencode = ["\"projectID\"", "\"ses_", "\"sessionID\""];
            let first = |marks: &[&str]| marks.iter().filter_map(|m| body.find(m)).min();
            return match (first(&mini), first(&opencode)) {
                (Some(a), Some(b)) => Ok(Some(if a < b { Kind::MiniSwe } else { Kind::OpencodeExport })),
                (Some(_), None) => Ok(Some(Kind::MiniSwe)),
                (None, Some(_)) => Ok(Some(Kind::OpencodeExport)),
                (None, None) if complete || closed => Ok(Some(Kind::OpencodeExport)),
                (None, None) => Ok(None),
            };
        }
        return match object_kind(&fields) {
            // A document whose first field is a long list of messages or
            // steps, not read to its end: the fields after it (a SWE-agent
            // trajectory's `history` and `info`) may name it more exactly.
            Some(Kind::Messages) if !complete && !closed => Ok(None),
            Some(k) => Ok(Some(k)),
            // Still open: wait, unless 50 lines gave not even one field.
            None if !complete
                && !closed
                && (complete_lines < 50 || fields.as_object().is_some_and(|o| !o.is_empty())) =>
            {
                Ok(None)
            }
            None => unknown(),
        };
    }
    unknown()
}

/// An empty file's reading, by its name.
fn hinted(name: &str) -> Kind {
    if name == "events.jsonl" {
        Kind::CopilotEvents
    } else if name.ends_with(".aider.chat.history.md") {
        Kind::Aider
    } else if name.ends_with(cline::UI_MESSAGES) {
        Kind::ClineUi
    } else if name.ends_with(cline::API_HISTORY) {
        Kind::ClineApi
    } else if name.ends_with(".zst") {
        Kind::Zstd
    } else {
        Kind::Native
    }
}

/// The importer for a format asked for by name, refined by the input's shape.
pub(super) fn for_choice(format: Format, detected: Option<Kind>) -> Kind {
    match detected {
        Some(k) if k.format() == format || k.is_container() => k,
        _ => format.default_kind(),
    }
}

/// Levels of zstd compression read: a compressed file inside a compressed
/// file is refused, since every level holds a decoder and its window
/// (nested frames made 24 KB take 641 MB). A frame's window is at most
/// 128 MiB, zstd's own default limit.
pub(crate) const MAX_ZSTD_DEPTH: usize = 1;

/// A zstd stream, decompressed as it is read.
#[cfg(feature = "zstd")]
fn unzstd(reader: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>, Error> {
    let inner = zstd::stream::read::Decoder::new(reader).map_err(|e| {
        Error::new(
            ErrorKind::Malformed { line: None },
            format!("not a readable zstd file ({e})"),
        )
    })?;
    Ok(Box::new(inner))
}

/// Without the `zstd` feature a compressed input is refused, saying why.
#[cfg(not(feature = "zstd"))]
fn unzstd(_: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>, Error> {
    Err(Error::new(
        ErrorKind::UnsupportedFormat,
        super::feature_off("zstd", "a zstd-compressed input"),
    ))
}

/// Reads enough of `reader` to pick the importer; the reader handed back
/// still starts at the beginning.
/// Its error keeps the kind: an I/O error's, an input no importer reads
/// ([`ErrorKind::UnsupportedFormat`]), a damaged compressed input
/// ([`ErrorKind::Malformed`]).
/// `read` is the format to use (a [`FormatChoice`] is enough) and how
/// much of a record is held ([`ReadOptions`]).
pub fn open_reader(
    reader: Box<dyn Read + Send>,
    read: impl Into<ReadOptions>,
    hint: Option<&str>,
) -> Result<Opened, Error> {
    open_at_depth(reader, &read.into(), hint, 0)
}

fn open_at_depth(
    mut reader: Box<dyn Read + Send>,
    read: &ReadOptions,
    hint: Option<&str>,
    zstd_depth: usize,
) -> Result<Opened, Error> {
    let choice = read.format;
    let mut head = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    // Classification is tried again only when the head has doubled, so a
    // slow pipe or an undecidable start costs linear time, not quadratic.
    let mut next_try = 0;
    let detected = loop {
        let n = loop {
            match reader.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other.map_err(|e| Error::new(crate::error::io_kind(&e), crate::io_reason(&e)))?,
            }
        };
        head.extend_from_slice(&buf[..n]);
        let complete = n == 0 || head.len() >= MAX_HEAD;
        if !complete && head.len() < next_try {
            continue;
        }
        next_try = head.len() * 2;
        match classify(&head, complete, hint) {
            Ok(None) if !complete => continue,
            Ok(found) => break found,
            Err(e) if choice == FormatChoice::Auto => return Err(e),
            Err(_) => break None,
        }
    };
    let empty = head.iter().all(u8::is_ascii_whitespace);
    let reader: Box<dyn Read + Send> = Box::new(Cursor::new(head).chain(reader));
    if detected == Some(Kind::Zstd) {
        if zstd_depth >= MAX_ZSTD_DEPTH {
            return Err(Error::new(
                ErrorKind::Malformed { line: None },
                "a zstd file inside a zstd file: loopscope reads one level of compression; refused as a bad input",
            ));
        }
        let inner = unzstd(reader)?;
        let hint = hint.map(|h| h.trim_end_matches(".zst").to_string());
        return open_at_depth(inner, read, hint.as_deref(), zstd_depth + 1);
    }
    let kind = match choice {
        FormatChoice::Auto => detected.unwrap_or(Kind::Native),
        FormatChoice::Fixed(f) => for_choice(f, detected),
    };
    let mut decoder = kind.build();
    decoder.set_max_record(read.max_record);
    Ok(Opened {
        reader,
        decoder,
        format: kind.format(),
        forced: matches!(choice, FormatChoice::Fixed(_)),
        looks_like: if empty { None } else { Some(detected.map(Kind::format)) },
        kind: Some(kind),
    })
}

/// The most read before an input's format must be decided.
pub(super) const MAX_HEAD: usize = 16 << 20;
