//! A hand-written reader for the common native lines: text deltas
//! (`{"type":"reasoning","text":"…","ts":1.25}`), prompts, requests, tool
//! calls and results with only their own fields, in any key order. They
//! are the bulk of a log, read here without building a JSON object for the
//! line first. Anything it does not fully understand is `None` and goes the
//! general way ([`Event::from_json`]), so for what it accepts it must agree
//! with it exactly (proptests in tests/native_reader.rs hold it to that).
//!
//! It reads the line's bytes, not a `str`: every byte outside the strings
//! is JSON syntax it checks to be ASCII, and the strings are checked to be
//! UTF-8 as they are copied, so a line is not validated as a whole first
//! (that was a tenth of the time of reading a log of short deltas). Tool
//! arguments and non-string outputs, any JSON, are read by serde_json from
//! where they start.

mod lex;

use serde_json::{Map, Value};

use self::lex::{boolean, each_field, nullable, raw_string, seconds, string, value};
use crate::event::{Event, EventKind, Extra, Ts};

/// The common line shapes (text events, requests, tool calls and
/// results with only their own fields), read straight into an event.
/// `None` for anything else (an unknown field, a duplicate key, a
/// clock-time `ts`, a field of the wrong type, an escape in a key),
/// which [`Event::from_json`] then reads; for what it accepts, both give
/// the same event.
pub fn plain_event(line: &str) -> Option<Event> {
    plain_line(line.as_bytes())
}

/// [`plain_event`] for a line as read: `None` for a line that is not UTF-8.
pub fn plain_line(raw: &[u8]) -> Option<Event> {
    plain_line_as(raw, |event| event)
}

/// [`plain_line`], each event handed to `wrap` where it is made: the
/// native reader wraps it in its item there, and an event moved into an
/// item after it was made was copied (as much as reading a short delta).
pub(crate) fn plain_line_as<T>(raw: &[u8], wrap: impl FnOnce(Event) -> T) -> Option<T> {
    // A text delta (most lines) is read with the least state; the rest,
    // and a text line it leaves (`"text":null`), by the general shape.
    if let Some((kind, ts)) = text_event(raw) {
        return Some(wrap(Event {
            kind,
            ts: ts.map(Ts::Seconds),
            extra: Extra::default(),
        }));
    }
    let fields = Fields::read(raw)?;
    let ts = fields.ts.map(Ts::Seconds);
    Some(wrap(Event {
        kind: fields.kind()?,
        ts,
        extra: Extra::default(),
    }))
}

/// A line holding a text delta, a note or a prompt with its text (the
/// event's kind and time), or `None`.
fn text_event(b: &[u8]) -> Option<(EventKind, Option<f64>)> {
    let (mut kind, mut text, mut ts) = (None, None, None);
    each_field(b, |key, i| match key {
        b"type" if kind.is_none() => raw_string(b, i).map(|(name, next)| {
            kind = Some(name);
            next
        }),
        b"text" if text.is_none() => string(b, i).map(|(s, next)| {
            text = Some(s);
            next
        }),
        b"ts" if ts.is_none() => seconds(b, i).map(|(s, next)| {
            ts = Some(s);
            next
        }),
        _ => None,
    })?;
    let kind = match (kind?, text) {
        (b"reasoning", Some(text)) => EventKind::Reasoning { text },
        (b"content", Some(text)) => EventKind::Content { text },
        (b"note", Some(text)) => EventKind::Note { text },
        (b"prompt", text) => EventKind::Prompt { text },
        _ => return None,
    };
    Some((kind, ts))
}

/// The fields a plain line may have. Each is `None` when absent and the
/// nullable ones `Some(None)` when null: a null field the kind does not
/// take stays among the extra fields in the general reader, so such
/// lines go that way.
#[derive(Default)]
struct Fields<'a> {
    type_name: Option<&'a [u8]>,
    text: Option<Option<String>>,
    id: Option<Option<String>>,
    name: Option<Option<String>>,
    ok: Option<Option<bool>>,
    args: Option<Value>,
    output: Option<Value>,
    ts: Option<f64>,
}

impl<'a> Fields<'a> {
    /// The fields of a one-object line, or `None` for any other line (a
    /// key not listed, or seen twice, too).
    fn read(b: &'a [u8]) -> Option<Fields<'a>> {
        let mut f = Fields::default();
        each_field(b, |key, i| match key {
            b"type" if f.type_name.is_none() => raw_string(b, i).map(|(name, next)| {
                f.type_name = Some(name);
                next
            }),
            b"text" if f.text.is_none() => nullable(b, i, string, &mut f.text),
            b"id" if f.id.is_none() => nullable(b, i, string, &mut f.id),
            b"name" if f.name.is_none() => nullable(b, i, string, &mut f.name),
            b"ok" if f.ok.is_none() => nullable(b, i, boolean, &mut f.ok),
            b"args" if f.args.is_none() => value(b, i).map(|(v, next)| {
                f.args = Some(v);
                next
            }),
            b"output" if f.output.is_none() => value(b, i).map(|(v, next)| {
                f.output = Some(v);
                next
            }),
            b"ts" if f.ts.is_none() => seconds(b, i).map(|(s, next)| {
                f.ts = Some(s);
                next
            }),
            _ => None,
        })?;
        Some(f)
    }

    /// The event the fields make, if its kind takes all of them.
    fn kind(self) -> Option<EventKind> {
        let present = [
            self.text.is_some(),
            self.id.is_some(),
            self.name.is_some(),
            self.ok.is_some(),
            self.args.is_some(),
            self.output.is_some(),
        ];
        // The fields (in the order above) a kind takes: any other one it
        // has is an extra field, which the general reader keeps.
        let takes_only = |takes: [bool; 6]| present.iter().zip(takes).all(|(has, takes)| takes || !has);
        const TEXT: [bool; 6] = [true, false, false, false, false, false];
        Some(match self.type_name? {
            b"reasoning" if takes_only(TEXT) => EventKind::Reasoning { text: self.text?? },
            b"content" if takes_only(TEXT) => EventKind::Content { text: self.text?? },
            b"note" if takes_only(TEXT) => EventKind::Note { text: self.text?? },
            b"prompt" if takes_only(TEXT) => EventKind::Prompt {
                text: self.text.flatten(),
            },
            b"request" if takes_only([false, true, false, false, false, false]) => {
                EventKind::Request { id: self.id.flatten() }
            }
            b"tool_call" if takes_only([false, true, true, false, true, false]) => EventKind::ToolCall {
                name: self.name??,
                // A call without arguments is a call with none.
                args: self.args.unwrap_or_else(|| Value::Object(Map::new())),
                id: self.id.flatten(),
            },
            b"tool_result" if takes_only([false, true, false, true, false, true]) => EventKind::ToolResult {
                id: self.id.flatten(),
                ok: self.ok.flatten().unwrap_or(true),
                output: self.output,
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
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
            r#"{"type":"request"}"#,
            r#"{"id":null,"type":"request"}"#,
            r#"{"type":"tool_call","name":"t","args":{"b":[1,{"c":null}],"a":"x"},"id":"c1"}"#,
            r#"{"type":"tool_call","name":"t","args":"not an object","ts":2}"#,
            r#"{"type":"tool_result","output":{"lines":[1,2]},"ok":false}"#,
            r#"{"type":"tool_result","output":-12.5e3 ,"ok":null}"#,
            r#"{"type":"tool_result","output":"a\n思","id":"c1"}"#,
            r#"{"type":"tool_call","name":"t","args":{ "a" : "1" , "b":true,"a":null,"\u00e9":"\n" } }"#,
            r#"{"type":"tool_call","name":"t","args":{}}"#,
            r#"{"type":"tool_call","name":"t","args":{"n":1.5,"s":"x"}}"#,
            r#"{"type":"tool_call","name":"t","args":{"o":{"p":[]},"s":"x"}}"#,
        ] {
            let fast = plain_line(line.as_bytes()).unwrap_or_else(|| panic!("{line}"));
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
            r#"{"type":"re\u0061soning","text":"a"}"#,
            r#"{"type":"tool_call","name":"x","args":{"a":1}x}"#,
            r#"{"type":"tool_result","output":5x}"#,
        ] {
            assert_eq!(plain_line(line.as_bytes()), None, "{line}");
        }
        // serde_json refuses a line nested over 128 deep: arguments read
        // on their own are never let through nearer that than the line is.
        for depth in 90..140 {
            let args = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let line = format!(r#"{{"type":"tool_call","name":"x","args":{args}}}"#);
            let full = serde_json::from_str(&line)
                .ok()
                .map(|v| Event::from_json(v).unwrap().event);
            let fast = plain_line(line.as_bytes());
            assert!(fast.is_none() || fast == full, "depth {depth}");
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
            assert_eq!(plain_line(line), None, "{line:?}");
        }
        let split = "{\"type\":\"content\",\"text\":\"思\\n🙂\"}";
        assert_eq!(
            plain_line(split.as_bytes()).map(|e| e.kind),
            Some(EventKind::Content {
                text: "思\n🙂".into()
            })
        );
    }
}
