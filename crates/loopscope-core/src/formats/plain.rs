//! A hand-written reader for the commonest native line,
//! `{"type":"reasoning","text":"…","ts":1.25}` (any key order; `content`,
//! `note` and `prompt` too): the bulk of a log, read without serde's
//! machinery. Anything it does not fully understand is `None` and goes the
//! general way, so for what it accepts it must agree with it exactly (a
//! proptest in tests/native_reader.rs holds it to that).
//!
//! It reads the line's bytes, not a `str`: every byte outside the text is
//! JSON syntax it checks to be ASCII, and the text is checked to be UTF-8
//! as it is copied, so a line is not validated as a whole first (that was
//! a tenth of the time of reading a log of short deltas).

use serde_json::{Map, Value};

use crate::event::{Event, EventKind, Ts};

/// The common line shapes (text events, requests, tool calls and
/// results with only their own fields), read straight into an event
/// without building a JSON object for the line first: most lines of a
/// log, at a fraction of the cost. `None` for anything else (an unknown
/// field, a duplicate key, a clock-time `ts`, a field of the wrong
/// type), which [`Event::from_json`] then reads; for what it accepts,
/// both give the same event.
pub fn plain_event(line: &str) -> Option<Event> {
    plain_line(line.as_bytes())
}

/// [`plain_event`] for a line as read: `None` for a line that is not UTF-8.
pub fn plain_line(raw: &[u8]) -> Option<Event> {
    use std::borrow::Cow;
    // Text lines, most of a log, by hand; the other plain shapes by serde.
    if let Some(e) = text_event(raw) {
        return Some(e);
    }
    let line = std::str::from_utf8(raw).ok()?;
    // Every field is `Some(_)` when present, `Some(None)` when null:
    // a null field the kind does not use stays among the extra fields
    // in the general reader, so such lines go that way.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Plain<'a> {
        #[serde(rename = "type", borrow)]
        type_name: Cow<'a, str>,
        #[serde(default, borrow, deserialize_with = "present")]
        text: Option<Option<Cow<'a, str>>>,
        #[serde(default, borrow, deserialize_with = "present")]
        id: Option<Option<Cow<'a, str>>>,
        #[serde(default, borrow, deserialize_with = "present")]
        name: Option<Option<Cow<'a, str>>>,
        #[serde(default, deserialize_with = "present")]
        ok: Option<Option<bool>>,
        #[serde(default, deserialize_with = "present")]
        args: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        output: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        ts: Option<Option<f64>>,
    }
    fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: serde::Deserializer<'de>,
        T: serde::Deserialize<'de>,
    {
        T::deserialize(d).map(Some)
    }
    let p: Plain<'_> = serde_json::from_str(line).ok()?;
    let ts = match p.ts {
        Some(None) => return None,
        Some(Some(s)) => Some(Ts::Seconds(s)),
        None => None,
    };
    let owned = |c: Option<Cow<'_, str>>| c.map(Cow::into_owned);
    let id = p.id.map(owned);
    let only = |text: bool, id_ok: bool, name: bool, ok: bool, args: bool, output: bool| {
        (text || p.text.is_none())
            && (id_ok || id.is_none())
            && (name || p.name.is_none())
            && (ok || p.ok.is_none())
            && (args || p.args.is_none())
            && (output || p.output.is_none())
    };
    let kind = match p.type_name.as_ref() {
        "reasoning" | "content" | "note" if only(true, false, false, false, false, false) => {
            let text = p.text??.into_owned();
            match p.type_name.as_ref() {
                "reasoning" => EventKind::Reasoning { text },
                "content" => EventKind::Content { text },
                _ => EventKind::Note { text },
            }
        }
        "prompt" if only(true, false, false, false, false, false) => EventKind::Prompt {
            text: p.text.and_then(owned),
        },
        "request" if only(false, true, false, false, false, false) => EventKind::Request { id: id.flatten() },
        "tool_call" if only(false, true, true, false, true, false) => EventKind::ToolCall {
            name: p.name??.into_owned(),
            // A call without arguments is a call with none.
            args: p.args.unwrap_or_else(|| Value::Object(Map::new())),
            id: id.flatten(),
        },
        "tool_result" if only(false, true, false, true, false, true) => EventKind::ToolResult {
            id: id.flatten(),
            ok: p.ok.flatten().unwrap_or(true),
            output: p.output,
        },
        _ => return None,
    };
    Some(Event {
        kind,
        ts,
        extra: Default::default(),
    })
}

/// The line as a text event, or `None` to let the general reader decide
/// (for a line that is not UTF-8 too).
pub fn text_event(b: &[u8]) -> Option<Event> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let (mut kind, mut text, mut ts): (Option<&[u8]>, Option<String>, Option<f64>) = (None, None, None);
    loop {
        let (key, next) = raw_key(b, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        // Keys and the type are matched against ASCII names: anything
        // else they hold sends the line the general way.
        match key {
            b"type" if kind.is_none() => {
                let (s, next) = raw_key(b, i)?;
                kind = Some(s);
                i = next;
            }
            b"text" if text.is_none() => {
                let (s, next) = string(b, i)?;
                text = Some(s);
                i = next;
            }
            b"ts" if ts.is_none() => {
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    i += 1;
                }
                ts = Some(number(&b[start..i])?);
            }
            _ => return None,
        }
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => {
                if skip_ws(b, i + 1) != b.len() {
                    return None;
                }
                break;
            }
            _ => return None,
        }
    }
    let kind = match (kind?, text) {
        (b"reasoning", Some(text)) => EventKind::Reasoning { text },
        (b"content", Some(text)) => EventKind::Content { text },
        (b"note", Some(text)) => EventKind::Note { text },
        (b"prompt", text) => EventKind::Prompt { text },
        _ => return None,
    };
    let mut e = Event::new(kind);
    e.ts = ts.map(Ts::Seconds);
    Some(e)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A string without escapes (a key or the `type`), borrowed as bytes: it
/// is only ever compared with ASCII names.
fn raw_key(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = i + 1 + b[i + 1..].iter().position(|&c| ends_run(c))?;
    if b[end] != b'"' {
        return None;
    }
    Some((&b[i + 1..end], end + 1))
}

/// Whether a byte ends a run of a JSON string's plain text: its closing
/// quote, an escape, or a control char (which JSON refuses raw). None of
/// them can be part of a multi-byte UTF-8 char.
fn ends_run(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// A JSON number as the general reader (serde_json) reads it, to the last
/// bit. Timestamps such as `12.34` or `1712345678.123` take a fast path
/// that is serde_json's own arithmetic for them (at most 19 digits, read
/// exactly into an integer, divided by an exactly represented power of
/// ten); anything else goes to serde_json itself.
fn number(b: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let int_len = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    let (int, rest) = digits.split_at(int_len);
    let frac = match rest {
        [] => &[][..],
        [b'.', frac @ ..] if !frac.is_empty() && frac.iter().all(u8::is_ascii_digit) => frac,
        _ => return serde_json::from_slice::<f64>(b).ok(),
    };
    let leading_zero = int.len() > 1 && int[0] == b'0';
    if int.is_empty() || leading_zero || int.len() + frac.len() > 19 {
        return serde_json::from_slice::<f64>(b).ok();
    }
    let significand = int.iter().chain(frac).fold(0u64, |n, &c| n * 10 + u64::from(c - b'0'));
    let f = significand as f64 / POW10[frac.len()];
    Some(if negative { -f } else { f })
}

/// A JSON string with its escapes decoded; `None` where JSON (as serde_json
/// reads it) would refuse it: a raw control char, a bad escape, a lone
/// surrogate, bytes that are not UTF-8.
fn string(b: &[u8], i: usize) -> Option<(String, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut out = String::new();
    let mut i = i + 1;
    loop {
        let run = b[i..].iter().position(|&c| ends_run(c))?;
        // No char straddles a stop (they are ASCII), so each run is UTF-8
        // on its own exactly when the string is.
        let piece = std::str::from_utf8(&b[i..i + run]).ok()?;
        if out.is_empty() && b.get(i + run) == Some(&b'"') {
            // No escapes at all (the common case): one allocation, exact size.
            return Some((piece.to_string(), i + run + 1));
        }
        out.push_str(piece);
        i += run;
        match b[i] {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let c = match *b.get(i + 1)? {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let hi = hex4(b, i + 2)?;
                        i += 4;
                        match hi {
                            0xD800..=0xDBFF => {
                                if b.get(i + 2) != Some(&b'\\') || b.get(i + 3) != Some(&b'u') {
                                    return None;
                                }
                                let lo = hex4(b, i + 4)?;
                                if !(0xDC00..=0xDFFF).contains(&lo) {
                                    return None;
                                }
                                i += 6;
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                            }
                            0xDC00..=0xDFFF => return None,
                            c => char::from_u32(c)?,
                        }
                    }
                    _ => return None,
                };
                out.push(c);
                i += 2;
            }
            _ => return None,
        }
    }
}

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let digits = b.get(i..i + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    if !text.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        #[test]
        fn numbers_read_as_serde_json_reads_them(
            sign in proptest::option::of(proptest::strategy::Just("-")),
            int in "(0|[1-9][0-9]{0,12}|0[0-9]{1,3})",
            frac in proptest::option::of("[0-9]{0,12}"),
            exp in proptest::option::of("[eE][+-]?[0-9]{1,3}"),
        ) {
            let text = format!(
                "{}{int}{}{}",
                sign.unwrap_or(""),
                frac.map(|f| format!(".{f}")).unwrap_or_default(),
                exp.unwrap_or_default()
            );
            let want = serde_json::from_str::<f64>(&text).ok();
            let got = super::number(text.as_bytes());
            proptest::prop_assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{}", text);
        }
    }

    #[test]
    fn long_and_odd_numbers_read_as_serde_json_reads_them() {
        for text in [
            "1712345678.123",
            "0.1",
            "-0",
            "-0.0",
            "9007199254740993",
            "9007199254740993.5",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1.7976931348623157e308",
            "1e400",
            "01",
            "1.",
            ".5",
            "-",
            "",
        ] {
            let want = serde_json::from_str::<f64>(text).ok().map(f64::to_bits);
            assert_eq!(super::number(text.as_bytes()).map(f64::to_bits), want, "{text}");
        }
    }

    use super::*;

    #[test]
    fn agrees_with_the_general_reader() {
        for line in [
            r#"{"type":"reasoning","text":"plain","ts":1.5}"#,
            r#"{ "ts" : 2 , "text" : "a\"b\\c\/d\b\f\n\r\t" , "type" : "content" }"#,
            r#"{"type":"note","text":"\u00e9\u601d\ud83d\ude42 é 思 🙂"}"#,
            r#"{"type":"prompt"}"#,
            r#"{"type":"prompt","text":"x","ts":-0.0}"#,
            r#"{"type":"content","text":"","ts":1e3}"#,
            r#"{"type":"content","text":"x","ts":0.1000000000000000055511151231257827}"#,
        ] {
            let fast = text_event(line.as_bytes()).unwrap_or_else(|| panic!("{line}"));
            let full = Event::from_json(serde_json::from_str(line).unwrap()).unwrap();
            assert_eq!(fast, full.event, "{line}");
        }
        for line in [
            r#"{"type":"reasoning","text":"a","text":"b"}"#,
            r#"{"type":"reasoning","text":"\ud800"}"#,
            r#"{"type":"reasoning","text":"\udc00x"}"#,
            r#"{"type":"reasoning","text":"\x"}"#,
            "{\"type\":\"reasoning\",\"text\":\"a\tb\"}",
            r#"{"type":"reasoning","text":"a"} x"#,
            r#"{"type":"reasoning","text":"a",}"#,
            r#"{"type":"reasoning","text":null}"#,
            r#"{"type":"reasoning","ts":null,"text":"a"}"#,
            r#"{"type":"reasoning","ts":"1","text":"a"}"#,
            r#"{"type":"request"}"#,
            r#"{"type":"re\u0061soning","text":"a"}"#,
        ] {
            assert_eq!(text_event(line.as_bytes()), None, "{line}");
        }
        // Read from bytes: what is not UTF-8 is left to the general reader,
        // wherever it is (in the text, a key, the type, the spaces).
        for line in [
            &b"{\"type\":\"content\",\"text\":\"a\xffb\"}"[..],
            b"{\"type\":\"content\",\"text\":\"\xe6\x80\"}",
            b"{\"type\":\"content\",\"text\":\"\\n\x9d\"}",
            b"{\"type\":\"content\xff\",\"text\":\"a\"}",
            b"{\"type\":\"content\",\"te\xffxt\":\"a\"}",
            b"{\"type\":\"content\",\"text\":\"a\"}\xff",
            b"\xff{\"type\":\"content\",\"text\":\"a\"}",
        ] {
            assert_eq!(text_event(line), None, "{line:?}");
            assert_eq!(plain_line(line), None, "{line:?}");
        }
        let split = "{\"type\":\"content\",\"text\":\"思\\n🙂\"}";
        assert_eq!(
            text_event(split.as_bytes()).map(|e| e.kind),
            Some(EventKind::Content {
                text: "思\n🙂".into()
            })
        );
    }
}
