//! Formats written as one document (Cline/Roo's JSON arrays, legacy
//! gemini-cli JSON, VCR cassettes): parsed once the document is complete,
//! and again on every rewrite; the handler emits only what is new.

use serde_json::Value;

use super::{Decoder, Format, Item, Out};

/// What an importer does with each complete version of the document.
pub trait DocHandler: Send {
    /// Emits what this version has that earlier versions did not.
    fn document(&mut self, doc: Value, out: &mut Out<'_>);
}

/// How the document is parsed (JSON or YAML) into a JSON value.
pub type Parse = fn(&[u8]) -> Result<Value, String>;

pub fn parse_json(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON ({e})"))
}

pub struct WholeDecoder<H> {
    buffer: Vec<u8>,
    parsed: bool,
    parse: Parse,
    handler: H,
    format: Format,
    /// The document passed the record limit: reported once, not held.
    too_big: bool,
    /// The longest document held (see [`Decoder::set_max_record`]).
    max_record: usize,
}

impl<H: DocHandler> WholeDecoder<H> {
    pub fn new(handler: H, parse: Parse, format: Format) -> WholeDecoder<H> {
        WholeDecoder {
            buffer: Vec::new(),
            parsed: false,
            parse,
            handler,
            format,
            too_big: false,
            max_record: super::DEFAULT_MAX_RECORD,
        }
    }

    /// Parses the buffer. Before the input ends (`whole` false) only a
    /// JSON document that ends with its closing bracket is tried: YAML can
    /// parse "successfully" while cut short. `report` says why it failed.
    fn try_parse(&mut self, out: &mut Vec<Item>, whole: bool, report: bool) {
        let end = self.buffer.iter().rev().find(|b| !b.is_ascii_whitespace()).copied();
        let json_like = matches!(self.buffer.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'['));
        let looks_complete = json_like && matches!(end, Some(b'}' | b']'));
        if !(whole || looks_complete) {
            return;
        }
        match (self.parse)(&self.buffer) {
            Ok(doc) => {
                self.parsed = true;
                let from = out.len();
                // The handler sets `out.line` to the element it reads (1, 2, …).
                self.handler.document(doc, &mut Out::new(out, 0));
                out[from..].iter_mut().for_each(without_lines);
            }
            // No line: serde says where in the document (`at line 412 column 3`).
            Err(reason) if report => Out::new(out, 0).problem(reason),
            Err(_) => {}
        }
    }
}

/// A document has no lines an editor could go to (Cline's is one line,
/// SWE-agent's is pretty-printed): its events are all on line 1, as
/// [`Item::Event`] says, and a problem or an unknown kind says which
/// record (the element the handler was reading, `record 12`) with line 0.
fn without_lines(item: &mut Item) {
    match item {
        Item::Event(_, line) => *line = 1,
        Item::Problem(p) => {
            if p.line > 0 {
                p.reason = format!("record {}: {}", p.line, p.reason);
            }
            p.line = 0;
        }
        Item::Unknown(u) => u.line = 0,
    }
}

impl<H: DocHandler> WholeDecoder<H> {
    /// The document passed the record limit: said once, no longer held.
    fn refuse(&mut self, out: &mut Vec<Item>) {
        if !std::mem::replace(&mut self.too_big, true) {
            self.buffer = Vec::new();
            Out::new(out, 0).problem(format!("the document is {}", super::overlong_reason(self.max_record)));
        }
    }
}

impl<H: DocHandler> Decoder for WholeDecoder<H> {
    fn set_max_record(&mut self, bytes: usize) {
        self.max_record = bytes.max(1);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        if self.too_big || self.buffer.len() + bytes.len() > self.max_record {
            return self.refuse(out);
        }
        self.buffer.extend_from_slice(bytes);
        self.try_parse(out, false, false);
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        if !self.parsed && !self.too_big {
            self.try_parse(out, true, true);
        }
    }

    fn rewrites_whole_file(&self) -> bool {
        true
    }

    fn reread(&mut self, whole: &[u8], out: &mut Vec<Item>) {
        if whole.len() > self.max_record {
            return self.refuse(out);
        }
        self.buffer = whole.to_vec();
        self.try_parse(out, true, false);
    }

    fn format(&self) -> Option<Format> {
        Some(self.format)
    }
}
