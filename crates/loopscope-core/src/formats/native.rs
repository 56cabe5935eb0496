//! The native loopscope JSONL reader (`shared/design/log-format.md`).

use super::lines::{is_blank, parse_json, Lines};
use super::{report_overlong_to, Decoder, Item, Problem};
use crate::event::Event;

/// Reads each line as one event.
#[derive(Debug, Default)]
pub struct NativeDecoder {
    lines: Lines,
}

impl NativeDecoder {
    /// An importer of loopscope's own JSONL.
    pub fn new() -> NativeDecoder {
        NativeDecoder::default()
    }

    /// Whether a partial last line is being held back.
    pub fn has_pending(&self) -> bool {
        self.lines.has_pending()
    }
}

fn line(number: u64, raw: &[u8], sink: &mut dyn FnMut(Item)) {
    if is_blank(raw) {
        return;
    }
    if let Some(item) = crate::formats::plain::plain_line_as(raw, |event| Item::Event(event, number)) {
        sink(item);
        return;
    }
    match parse_json(raw).and_then(|v| Event::from_json(v).map_err(String::from)) {
        Ok(parsed) => {
            if let Some(reason) = parsed.warning {
                sink(Item::Problem(Problem {
                    line: number,
                    reason,
                    skipped: false,
                }));
            }
            sink(Item::Event(parsed.event, number));
        }
        Err(reason) => sink(Item::Problem(Problem {
            line: number,
            reason,
            skipped: true,
        })),
    }
}

impl Decoder for NativeDecoder {
    fn set_max_record(&mut self, bytes: usize) {
        self.lines.set_max_record(bytes);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        self.feed_to(bytes, &mut |item| out.push(item));
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.finish_to(&mut |item| out.push(item));
    }

    fn feed_to(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Item)) {
        self.lines.feed(bytes, |n, raw| line(n, raw, sink));
        report_overlong_to(self.lines.take_overlong(), self.lines.max_record(), sink);
    }

    fn finish_to(&mut self, sink: &mut dyn FnMut(Item)) {
        self.lines.finish(|n, raw| line(n, raw, sink));
        report_overlong_to(self.lines.take_overlong(), self.lines.max_record(), sink);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_fast_path_reads_what_the_full_reader_reads() {
        let lines = [
            r#"{"type":"reasoning","text":"a \"q\" 思考 🙂","ts":1.5}"#,
            r#"{"ts":2,"type":"content","text":"x"}"#,
            r#"{"type":"request"}"#,
            r#"{"type":"request","id":"r1","ts":3}"#,
            r#"{"type":"prompt","text":null}"#,
            r#"{"type":"prompt"}"#,
            r#"{"type":"note","text":""}"#,
            r#"{"type":"request","id":null}"#,
            r#"{"type":"tool_call","id":"c1","name":"read","args":{"b":1,"a":[1.0,null]},"ts":4}"#,
            r#"{"type":"tool_call","name":"read"}"#,
            r#"{"type":"tool_call","name":"read","args":null,"id":null}"#,
            r#"{"type":"tool_result","id":"c1","ok":false,"output":"boom"}"#,
            r#"{"type":"tool_result","output":null,"ok":null}"#,
            r#"{"type":"tool_result"}"#,
        ];
        for l in lines {
            let fast = crate::formats::plain::plain_event(l).unwrap_or_else(|| panic!("{l} takes the fast path"));
            let full = Event::from_json(serde_json::from_str(l).unwrap()).unwrap();
            assert_eq!(full.warning, None);
            assert_eq!(fast, full.event, "{l}");
        }
        // Shapes that must go the full way (and keep what they carry).
        for l in [
            r#"{"type":"reasoning","text":"a","model":"m"}"#,
            r#"{"type":"reasoning","text":"a","text":"b"}"#,
            r#"{"type":"reasoning","ts":"2025-01-01T00:00:00Z","text":"a"}"#,
            r#"{"type":"reasoning"}"#,
            r#"{"type":"content","text":5}"#,
            r#"{"type":"tool_call"}"#,
            r#"{"type":"tool_call","name":"x","ok":true}"#,
            r#"{"type":"tool_result","ok":"yes"}"#,
            r#"{"type":"tool_result","text":"t"}"#,
            r#"{"type":"request","text":"t"}"#,
            r#"{"type":"request","ts":null}"#,
        ] {
            assert_eq!(crate::formats::plain::plain_event(l), None, "{l}");
        }
    }
    use crate::event::EventKind;
    use crate::formats::Decoded;

    fn problems(items: &[Item]) -> Vec<&Problem> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Problem(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn bad_lines_are_reported_with_line_numbers_and_skipped() {
        let input = b"{\"type\":\"prompt\"}\n\nnot json\n[1,2]\n{\"type\":\"reasoning\",\"text\":\"a\"}\n\xff\xfe\n{\"type\":7}\n{\"type\":\"content\"}\n";
        let d = Decoded::from_bytes(input, &mut NativeDecoder::new());
        assert_eq!(d.events.len(), 3, "the content line without text is still an event");
        let lines: Vec<(u64, bool)> = d.problems.iter().map(|p| (p.line, p.skipped)).collect();
        assert_eq!(lines, vec![(3, true), (4, true), (6, true), (7, true), (8, false)]);
        assert!(
            d.problems[0].reason.starts_with("not valid JSON"),
            "{}",
            d.problems[0].reason
        );
        assert!(d.problems[0].reason.contains("column 2"), "{}", d.problems[0].reason);
        assert_eq!(d.problems[1].reason, "expected a JSON object, found an array");
        assert!(d.problems[2].reason.contains("UTF-8"));
        assert_eq!(d.problems[3].reason, "`type` must be a string, not a number");
    }

    #[test]
    fn a_half_written_line_waits_for_its_newline() {
        let mut dec = NativeDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"{\"type\":\"reasoning\",\"te", &mut out);
        assert!(out.is_empty());
        assert!(dec.has_pending());
        dec.feed(b"xt\":\"\xe6\x80", &mut out); // a UTF-8 char split across writes
        assert!(out.is_empty());
        dec.feed(b"\x9d\"}\r\n{\"type\":\"request\"}", &mut out);
        assert_eq!(out.len(), 1);
        let Item::Event(e, _) = &out[0] else { panic!() };
        assert_eq!(e.kind, EventKind::Reasoning { text: "思".into() });
        dec.finish(&mut out);
        assert_eq!(out.len(), 2, "finish reads the unterminated last line");
        assert!(problems(&out).is_empty());
    }

    #[test]
    fn byte_order_mark_and_crlf_are_accepted() {
        let d = Decoded::from_bytes(b"\xef\xbb\xbf{\"type\":\"meta\"}\r\n", &mut NativeDecoder::new());
        assert_eq!(d.events.len(), 1);
        assert!(d.problems.is_empty());
    }
}
