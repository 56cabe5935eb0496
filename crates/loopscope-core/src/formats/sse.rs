//! Server-sent events, or "bare chunk JSONL" (the same payloads one per
//! line, as proxies and SDK fixtures log them), chosen by the first
//! non-blank line. `\r\n`, comment lines (`: OPENROUTER PROCESSING`),
//! `event:` names, multi-line `data:` and padded JSON are all handled here,
//! so each stream importer only sees parsed payloads.

use serde_json::Value;

use super::lines::{is_blank, parse_json, Lines};
use super::{Decoder, Format, Item, Out};

/// What a stream importer does with each payload.
pub trait Handler: Send {
    fn payload(&mut self, event: Option<&str>, value: Value, out: &mut Out<'_>);
    /// `data: [DONE]`.
    fn done(&mut self, _out: &mut Out<'_>) {}
    /// The input ended: flush what is pending (unfinished tool calls).
    fn finish(&mut self, _out: &mut Out<'_>) {}
    /// A follower read to the current end (see [`super::Decoder::caught_up`]).
    fn caught_up(&mut self, _out: &mut Out<'_>) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Sse,
    Bare,
}

/// Turns lines into payloads.
#[derive(Debug)]
pub struct Framer {
    lines: Lines,
    /// The longest line or event data held (its lines hold the same).
    max_record: usize,
    mode: Option<Mode>,
    event: Option<String>,
    data: String,
    data_line: u64,
    last_line: u64,
    /// The event's data passed the record limit: the rest of it is dropped.
    data_dropped: bool,
    /// Lines of records skipped for their length.
    overlong: Vec<u64>,
}

/// One payload: its SSE event name, its data, the line it started on.
pub struct Payload<'a> {
    pub event: Option<&'a str>,
    pub data: &'a str,
    pub line: u64,
}

pub fn looks_like_sse(line: &str) -> bool {
    ["data:", "event:", "id:", ":", "retry:"]
        .iter()
        .any(|p| line.starts_with(p))
}

impl Default for Framer {
    fn default() -> Framer {
        Framer {
            lines: Lines::default(),
            max_record: super::DEFAULT_MAX_RECORD,
            mode: None,
            event: None,
            data: String::new(),
            data_line: 0,
            last_line: 0,
            data_dropped: false,
            overlong: Vec::new(),
        }
    }
}

impl Framer {
    /// Sets the longest line or event data held (see [`Decoder::set_max_record`]).
    pub fn set_max_record(&mut self, bytes: usize) {
        self.lines.set_max_record(bytes);
        self.max_record = self.lines.max_record();
    }

    pub fn feed(&mut self, bytes: &[u8], f: &mut impl FnMut(Payload<'_>)) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |n, raw| self.line(n, raw, f));
        self.overlong.extend(lines.take_overlong());
        self.lines = lines;
    }

    /// Reports records skipped for passing the record limit.
    pub fn report_overlong(&mut self, out: &mut Vec<Item>) {
        super::report_overlong(std::mem::take(&mut self.overlong), self.max_record, out);
    }

    pub fn finish(&mut self, f: &mut impl FnMut(Payload<'_>)) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|n, raw| self.line(n, raw, f));
        self.overlong.extend(lines.take_overlong());
        self.lines = lines;
        self.dispatch(f);
    }

    pub fn last_line(&self) -> u64 {
        self.last_line
    }

    fn dispatch(&mut self, f: &mut impl FnMut(Payload<'_>)) {
        if std::mem::take(&mut self.data_dropped) {
            self.overlong.push(self.data_line);
            self.data = String::new();
        }
        if !self.data.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = self.event.take();
            f(Payload {
                event: event.as_deref(),
                data: &data,
                line: self.data_line,
            });
        }
        self.event = None;
    }

    fn line(&mut self, n: u64, raw: &[u8], f: &mut impl FnMut(Payload<'_>)) {
        self.last_line = n;
        let text = String::from_utf8_lossy(raw);
        let text = text.as_ref();
        if self.mode.is_none() {
            if is_blank(raw) {
                return;
            }
            self.mode = Some(if looks_like_sse(text) { Mode::Sse } else { Mode::Bare });
        }
        match self.mode {
            Some(Mode::Bare) => {
                if !is_blank(raw) {
                    f(Payload {
                        event: None,
                        data: text.trim_end(),
                        line: n,
                    });
                }
            }
            _ => {
                if text.trim().is_empty() {
                    self.dispatch(f);
                } else if let Some(v) = text.strip_prefix("data:") {
                    let v = v.strip_prefix(' ').unwrap_or(v);
                    if self.data.is_empty() && !self.data_dropped {
                        self.data_line = n;
                    } else if !self.data_dropped {
                        self.data.push('\n');
                    }
                    if self.data_dropped || self.data.len() + v.len() > self.max_record {
                        // Many `data:` lines of one event: held no longer.
                        self.data_dropped = true;
                        self.data = String::new();
                    } else {
                        self.data.push_str(v.trim_end());
                    }
                } else if let Some(v) = text.strip_prefix("event:") {
                    self.event = Some(v.trim().to_string());
                }
                // `:` comments, `id:` and `retry:` carry nothing for us.
            }
        }
    }
}

/// A stream importer: framing plus a payload handler.
pub struct StreamDecoder<H> {
    framer: Framer,
    handler: H,
    format: Format,
}

impl<H: Handler> StreamDecoder<H> {
    pub fn new(handler: H, format: Format) -> StreamDecoder<H> {
        StreamDecoder {
            framer: Framer::default(),
            handler,
            format,
        }
    }
}

/// One line of bare chunk JSONL: the whole line is the payload. A
/// `{"loopscope": "problem"}` line is a problem a store or folder reader
/// found in a record (see [`super::source`]).
fn deliver_line(handler: &mut impl Handler, line: u64, raw: &[u8], out: &mut Vec<Item>) {
    if raw.starts_with(b"{\"loopscope\":\"problem\"") {
        let v: Value = serde_json::from_slice(raw).unwrap_or(Value::Null);
        let reason = v
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("an unreadable record");
        Out::new(out, line).problem(reason);
        return;
    }
    if !is_blank(raw) {
        let data = String::from_utf8_lossy(raw);
        deliver(
            handler,
            Payload {
                event: None,
                data: &data,
                line,
            },
            out,
        );
    }
}

/// Hands one payload to a handler: `[DONE]`, parsed JSON, or a problem.
pub fn deliver(handler: &mut dyn Handler, p: Payload<'_>, items: &mut Vec<Item>) {
    let mut out = Out::new(items, p.line);
    if p.data.trim() == "[DONE]" {
        handler.done(&mut out);
        return;
    }
    match parse_json(p.data.as_bytes()) {
        Ok(v) => handler.payload(p.event, v, &mut out),
        Err(reason) => out.problem(reason),
    }
}

impl<H: Handler> Decoder for StreamDecoder<H> {
    fn set_max_record(&mut self, bytes: usize) {
        self.framer.set_max_record(bytes);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        let handler = &mut self.handler;
        self.framer.feed(bytes, &mut |p| deliver(handler, p, out));
        self.framer.report_overlong(out);
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        let handler = &mut self.handler;
        self.framer.finish(&mut |p| deliver(handler, p, out));
        self.framer.report_overlong(out);
        let mut o = Out::new(out, self.framer.last_line());
        self.handler.finish(&mut o);
    }

    fn format(&self) -> Option<Format> {
        Some(self.format)
    }
}

/// JSONL whose every line is one record for `handler` (session files).
pub struct JsonLinesDecoder<H> {
    lines: Lines,
    handler: H,
    format: Format,
}

impl<H: Handler> JsonLinesDecoder<H> {
    pub fn new(handler: H, format: Format) -> JsonLinesDecoder<H> {
        JsonLinesDecoder {
            lines: Lines::default(),
            handler,
            format,
        }
    }
}

impl<H: Handler> Decoder for JsonLinesDecoder<H> {
    fn set_max_record(&mut self, bytes: usize) {
        self.lines.set_max_record(bytes);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        let handler = &mut self.handler;
        self.lines.feed(bytes, |n, raw| deliver_line(handler, n, raw, out));
        super::report_overlong(self.lines.take_overlong(), self.lines.max_record(), out);
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        let handler = &mut self.handler;
        let mut last = 0;
        self.lines.finish(|n, raw| {
            last = n;
            deliver_line(handler, n, raw, out);
        });
        super::report_overlong(self.lines.take_overlong(), self.lines.max_record(), out);
        let mut o = Out::new(out, last);
        self.handler.finish(&mut o);
    }

    fn caught_up(&mut self, out: &mut Vec<Item>) {
        self.handler.caught_up(&mut Out::new(out, 0));
    }

    fn format(&self) -> Option<Format> {
        Some(self.format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &str) -> Vec<(Option<String>, String, u64)> {
        let mut f = Framer::default();
        let mut got = Vec::new();
        let mut push = |p: Payload<'_>| got.push((p.event.map(String::from), p.data.to_string(), p.line));
        // Fed byte by byte: framing never depends on how input is split.
        for b in input.as_bytes() {
            f.feed(std::slice::from_ref(b), &mut push);
        }
        f.finish(&mut push);
        got
    }

    #[test]
    fn sse_events_comments_crlf_and_multi_line_data() {
        let got = frames(": OPENROUTER PROCESSING\r\n\r\nevent: error\r\ndata: {\"a\":1}   \r\n\r\ndata: x\ndata: y\n\ndata: [DONE]\n");
        assert_eq!(
            got,
            vec![
                (Some("error".into()), "{\"a\":1}".into(), 4),
                (None, "x\ny".into(), 6),
                (None, "[DONE]".into(), 9)
            ]
        );
    }

    #[test]
    fn bare_jsonl_is_one_payload_per_line() {
        assert_eq!(
            frames("{\"a\":1}\n\n{\"b\":2}"),
            vec![(None, "{\"a\":1}".into(), 1), (None, "{\"b\":2}".into(), 3)]
        );
    }
}
