//! OpenClaw's stable JSON (`stableStringify`), written straight into the
//! text that is digested, and its untrusted-content markers, whose ids are
//! zeroed in outcome digests.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::super::keys::write_js_number;
use super::outcome::{digest_of, Digest};

/// One field of an object OpenClaw builds to digest: JavaScript's
/// `undefined` is written as the word by its stable JSON.
pub(super) enum Field<'a> {
    Undefined,
    Null,
    Bool(bool),
    Json(&'a Value),
    /// An object by reference (no `Value` made of a borrowed map).
    Object(&'a Map<String, Value>),
    Text(&'a str),
}

impl<'a> Field<'a> {
    /// `value ?? null`.
    pub(super) fn or_null(v: Option<&'a Value>) -> Field<'a> {
        match v {
            None | Some(Value::Null) => Field::Null,
            Some(v) => Field::Json(v),
        }
    }

    /// `value` as it is (`undefined` when absent).
    pub(super) fn of(v: Option<&'a Value>) -> Field<'a> {
        v.map_or(Field::Undefined, Field::Json)
    }
}

/// The digest of an object OpenClaw builds, its keys sorted as stable JSON sorts them.
pub(super) fn digest_fields(fields: &mut [(&str, Field<'_>)]) -> Digest {
    fields.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    // Room for the texts at once (a tool's output is most of it).
    let texts: usize = fields
        .iter()
        .map(|f| if let Field::Text(t) = f.1 { t.len() } else { 0 })
        .sum();
    let mut out = String::with_capacity(128 + texts + texts / 8);
    out.push('{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(&mut out, k, true);
        out.push(':');
        match v {
            Field::Undefined => out.push_str("undefined"),
            Field::Null => out.push_str("null"),
            Field::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Field::Json(v) => write_stable(&mut out, v, true),
            Field::Object(m) => write_object(&mut out, m, true),
            Field::Text(s) => write_str(&mut out, s, true),
        }
    }
    out.push('}');
    digest_of(&out)
}

/// The digest of a JSON value (`digestToolOutcome`).
pub(super) fn digest_value(v: &Value) -> Digest {
    let mut out = String::new();
    write_stable(&mut out, v, true);
    digest_of(&out)
}

/// `stableStringify`: object keys sorted by UTF-16 code units at every
/// depth, numbers as JavaScript writes them; `outcome`: strings (and keys)
/// with their untrusted-content marker ids zeroed, as outcome digests are.
pub(super) fn write_stable(out: &mut String, v: &Value, outcome: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_js_number(out, n),
        Value::String(s) => write_str(out, s, outcome),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_stable(out, item, outcome);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, outcome),
    }
}

/// An object as `stableStringify` writes it.
pub(super) fn write_object(out: &mut String, map: &Map<String, Value>, outcome: bool) {
    out.push('{');
    let mut entries: Vec<(std::borrow::Cow<'_, str>, &String, &Value)> = map
        .iter()
        .map(|(k, v)| (if outcome { zero_markers(k) } else { k.into() }, k, v))
        .collect();
    entries.sort_by(|a, b| {
        a.0.encode_utf16()
            .cmp(b.0.encode_utf16())
            .then_with(|| a.1.encode_utf16().cmp(b.1.encode_utf16()))
    });
    for (i, (k, _, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k, false);
        out.push(':');
        write_stable(out, v, outcome);
    }
    out.push('}');
}

/// A string as `JSON.stringify` writes it, markers zeroed when `outcome`
/// (escaped in place: serde_json's `to_string` made a string per value and
/// was the profile's top cost on tool-heavy logs).
pub(super) fn write_str(out: &mut String, s: &str, outcome: bool) {
    let s = if outcome { zero_markers(s) } else { s.into() };
    out.push('"');
    crate::detect::keys::write_escaped(out, &s);
    out.push('"');
}

pub(super) const OPEN: &str = "<<<EXTERNAL_UNTRUSTED_CONTENT id=";
pub(super) const END: &str = "<<<END_EXTERNAL_UNTRUSTED_CONTENT id=";
pub(super) const ZERO_ID: &str = "0000000000000000";

/// OpenClaw's untrusted-content markers with their 16-hex id replaced by
/// zeros where both ids agree and the quoting is consistent (the regex in
/// `digestToolOutcome`, with its back-references, read by hand).
pub(super) fn zero_markers(s: &str) -> std::borrow::Cow<'_, str> {
    // One searcher for every string (`str::contains` builds one per call).
    static OPEN_FINDER: LazyLock<memchr::memmem::Finder<'static>> = LazyLock::new(|| memchr::memmem::Finder::new(OPEN));
    if OPEN_FINDER.find(s.as_bytes()).is_none() {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut done = 0; // bytes of `s` already in `out`
    let mut from = 0; // where the next match may start
    while let Some(found) = s[from..].find(OPEN) {
        let start = from + found;
        match marker_at(s, start) {
            Some((end, id_at, end_id_at, replace)) => {
                if replace {
                    out.push_str(&s[done..id_at]);
                    out.push_str(ZERO_ID);
                    out.push_str(&s[id_at + 16..end_id_at]);
                    out.push_str(ZERO_ID);
                    done = end_id_at + 16;
                }
                from = end;
            }
            None => from = start + 1,
        }
    }
    out.push_str(&s[done..]);
    out.into()
}

/// A whole marker pair starting at `start`: (its end, the opening id's
/// offset, the closing id's offset, whether the callback replaces it).
fn marker_at(s: &str, start: usize) -> Option<(usize, usize, usize, bool)> {
    let b = s.as_bytes();
    let mut at = start + OPEN.len();
    let escapes = b[at..].iter().take_while(|&&c| c == b'\\').count();
    at += escapes;
    if b.get(at) != Some(&b'"') {
        return None;
    }
    at += 1;
    let id = s.get(at..at + 16)?;
    if !id.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return None;
    }
    let id_at = at;
    at += 16;
    let close = format!("{}\">>>", "\\".repeat(escapes));
    if !s[at..].starts_with(&close) {
        return None;
    }
    at += close.len();
    // The middle holds no marker: it ends at the first one, which must close.
    let middle_from = at;
    let next_open = s[at..].find(OPEN).map(|i| at + i);
    let next_end = s[at..].find(END).map(|i| at + i)?;
    if next_open.is_some_and(|o| o < next_end) {
        return None;
    }
    let middle = &s[middle_from..next_end];
    at = next_end + END.len();
    let quote = format!("{}\"", "\\".repeat(escapes));
    if !s[at..].starts_with(&quote) {
        return None;
    }
    at += quote.len();
    if s.get(at..at + 16) != Some(id) {
        return None;
    }
    let end_id_at = at;
    at += 16;
    if !s[at..].starts_with(&close) {
        return None;
    }
    at += close.len();
    let period = escapes + 1;
    let odd_escapes = escapes & (escapes + 1) != 0;
    let bad_quote = quote_runs(middle).any(|run| run % period != 0);
    Some((at, id_at, end_id_at, !(odd_escapes || bad_quote)))
}

/// The length of each `\\*"` run not preceded by a backslash (`(?<!\\)\\*"`).
fn quote_runs(s: &str) -> impl Iterator<Item = usize> + '_ {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i] == b'\\' && (i == 0 || b[i - 1] != b'\\') {
                let run = b[i..].iter().take_while(|&&c| c == b'\\').count();
                if b.get(i + run) == Some(&b'"') {
                    i += run + 1;
                    return Some(run + 1);
                }
                i += run;
            } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\\') {
                i += 1;
                return Some(1);
            } else {
                i += 1;
            }
        }
        None
    })
}
