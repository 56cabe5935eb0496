//! OpenClaw's stable JSON (`stableStringify`) as the digests see it, and
//! its untrusted-content markers, whose ids are zeroed in outcome digests.
//!
//! OpenClaw only ever compares the sha256 of a stable JSON text for
//! equality, so what is digested here is not that text but its canonical
//! structure (keys sorted by UTF-16 code units, strings with their markers
//! zeroed, numbers as the double JavaScript writes): a tagged,
//! length-prefixed byte form that is equal exactly when the texts are, in a
//! buffer reused from digest to digest. Escaping strings and writing numbers
//! as text were most of the profile's cost on tool-heavy logs.

use std::cell::Cell;
use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::outcome::Digest;

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

/// The canonical form of stable JSON texts, written to be digested. Each
/// value starts with a tag byte that tells its kind; strings carry their
/// length; arrays and objects end with a tag of their own. So the form is
/// prefix-free and two values have the same form exactly when their stable
/// JSON texts are the same.
pub(super) struct Canon(Vec<u8>);

/// What each value starts with (and what arrays and objects end with).
mod tag {
    pub const UNDEFINED: u8 = b'u';
    pub const NULL: u8 = b'n';
    pub const TRUE: u8 = b't';
    pub const FALSE: u8 = b'f';
    pub const NUMBER: u8 = b'#';
    pub const STRING: u8 = b's';
    pub const ARRAY: u8 = b'[';
    pub const ARRAY_END: u8 = b']';
    pub const OBJECT: u8 = b'{';
    pub const OBJECT_END: u8 = b'}';
    /// A call's identity: the tool's name, then its arguments.
    pub const CALL: u8 = b'c';
    /// `"error:" + digest(text)`.
    pub const ERROR: u8 = b'e';
}
pub(super) use tag::{CALL, ERROR};

thread_local! {
    /// The buffer digests are written into, kept between digests (taken
    /// out while in use, so a digest inside a digest only costs a buffer).
    static BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The digest of what `write` puts in a fresh canonical form.
pub(super) fn digest_with(write: impl FnOnce(&mut Canon)) -> Digest {
    let mut canon = Canon(BUFFER.take());
    canon.0.clear();
    write(&mut canon);
    let digest = twox_hash::XxHash3_128::oneshot(&canon.0);
    // A tool output can be large: a huge buffer is not kept.
    if canon.0.capacity() <= 1 << 20 {
        BUFFER.set(canon.0);
    }
    digest
}

impl Canon {
    pub(super) fn tag(&mut self, tag: u8) {
        self.0.push(tag);
    }

    /// A string's bytes, with its length first.
    pub(super) fn raw(&mut self, s: &str) {
        self.0.extend_from_slice(&(s.len() as u64).to_le_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A string as `JSON.stringify` writes it; its markers zeroed when
    /// `outcome` (outcome digests normalise every string, keys included).
    pub(super) fn str(&mut self, s: &str, outcome: bool) {
        self.tag(tag::STRING);
        if outcome {
            self.raw(&zero_markers(s));
        } else {
            self.raw(s);
        }
    }

    /// `stableStringify` of a JSON value: numbers as JavaScript writes them
    /// (its shortest round-trip text names one double, and `-0` is written
    /// `0`), objects with their keys sorted.
    pub(super) fn value(&mut self, v: &Value, outcome: bool) {
        match v {
            Value::Null => self.tag(tag::NULL),
            Value::Bool(b) => self.tag(if *b { tag::TRUE } else { tag::FALSE }),
            Value::Number(n) => {
                self.tag(tag::NUMBER);
                // `+ 0.0` turns -0 into 0.
                let x = n.as_f64().unwrap_or(0.0) + 0.0;
                self.0.extend_from_slice(&x.to_bits().to_le_bytes());
            }
            Value::String(s) => self.str(s, outcome),
            Value::Array(items) => {
                self.tag(tag::ARRAY);
                for item in items {
                    self.value(item, outcome);
                }
                self.tag(tag::ARRAY_END);
            }
            Value::Object(map) => self.object(map, outcome),
        }
    }

    /// An object as `stableStringify` writes it: keys in UTF-16 code unit
    /// order (in outcome digests the keys with markers zeroed, two keys
    /// that become one kept in their own order).
    pub(super) fn object(&mut self, map: &Map<String, Value>, outcome: bool) {
        /// Objects up to this size are sorted on the stack.
        const SMALL: usize = 16;
        static NULL: Value = Value::Null;
        self.tag(tag::OBJECT);
        if map.len() <= SMALL && !(outcome && map.keys().any(|k| has_marker(k))) {
            // Keys without markers are themselves, and a map's keys differ.
            let mut entries: [(&str, &Value); SMALL] = [("", &NULL); SMALL];
            for (slot, (k, v)) in entries.iter_mut().zip(map) {
                *slot = (k.as_str(), v);
            }
            let entries = &mut entries[..map.len()];
            entries.sort_unstable_by(|a, b| utf16_cmp(a.0, b.0));
            for (k, v) in entries.iter() {
                self.str(k, false);
                self.value(v, outcome);
            }
        } else {
            let mut entries: Vec<(std::borrow::Cow<'_, str>, &String, &Value)> = map
                .iter()
                .map(|(k, v)| (if outcome { zero_markers(k) } else { k.into() }, k, v))
                .collect();
            entries.sort_by(|a, b| utf16_cmp(&a.0, &b.0).then_with(|| utf16_cmp(a.1, b.1)));
            for (k, _, v) in &entries {
                self.str(k, false);
                self.value(v, outcome);
            }
        }
        self.tag(tag::OBJECT_END);
    }

    /// One of OpenClaw's own fields (outcome digests).
    fn field(&mut self, f: &Field<'_>) {
        match f {
            Field::Undefined => self.tag(tag::UNDEFINED),
            Field::Null => self.tag(tag::NULL),
            Field::Bool(b) => self.tag(if *b { tag::TRUE } else { tag::FALSE }),
            Field::Json(v) => self.value(v, true),
            Field::Object(m) => self.object(m, true),
            Field::Text(s) => self.str(s, true),
        }
    }
}

/// JavaScript's string order (UTF-16 code units), without decoding the
/// common prefix: UTF-8 byte order is code point order, which differs from
/// code unit order only between a character above U+FFFF and one from
/// U+E000 to U+FFFF; at an ASCII character both orders agree.
pub(super) fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let Some(i) = x.iter().zip(y).position(|(p, q)| p != q) else {
        return x.len().cmp(&y.len());
    };
    if x[i] < 0x80 || y[i] < 0x80 {
        // An ASCII byte is a whole character; the equal prefix ends at a
        // character boundary in both, so the other is a whole character too.
        return x[i].cmp(&y[i]);
    }
    let mut from = i;
    while !a.is_char_boundary(from) {
        from -= 1;
    }
    a[from..].encode_utf16().cmp(b[from..].encode_utf16())
}

/// The digest of an object OpenClaw builds, its keys sorted as stable JSON sorts them.
pub(super) fn digest_fields(fields: &mut [(&str, Field<'_>)]) -> Digest {
    fields.sort_by(|a, b| utf16_cmp(a.0, b.0));
    digest_with(|c| {
        c.tag(tag::OBJECT);
        for (k, v) in fields.iter() {
            c.str(k, true);
            c.field(v);
        }
        c.tag(tag::OBJECT_END);
    })
}

/// The digest of a JSON value (`digestToolOutcome`).
pub(super) fn digest_value(v: &Value) -> Digest {
    digest_with(|c| c.value(v, true))
}

/// Whether a string holds the start of a marker (the one search a plain
/// string costs: for its `<`s, which few outputs have many of).
fn has_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= OPEN.len()
        && memchr::memchr_iter(b'<', &b[..=b.len() - OPEN.len()]).any(|i| b[i..].starts_with(OPEN.as_bytes()))
}

pub(super) const OPEN: &str = "<<<EXTERNAL_UNTRUSTED_CONTENT id=";
pub(super) const END: &str = "<<<END_EXTERNAL_UNTRUSTED_CONTENT id=";
pub(super) const ZERO_ID: &str = "0000000000000000";

/// OpenClaw's untrusted-content markers with their 16-hex id replaced by
/// zeros where both ids agree and the quoting is consistent (the regex in
/// `digestToolOutcome`, with its back-references, read by hand).
pub(super) fn zero_markers(s: &str) -> std::borrow::Cow<'_, str> {
    if !has_marker(s) {
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

#[cfg(test)]
#[path = "stable_tests.rs"]
mod tests;
