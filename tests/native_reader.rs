//! The native reader never panics and never depends on how input is split.

use loopscope_core::formats::native::NativeDecoder;
use loopscope_core::formats::{Decoded, Decoder, Item};
use proptest::prelude::*;

fn feed_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut dec = NativeDecoder::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts {
        dec.feed(&bytes[at..c.max(at)], &mut out);
        at = c.max(at);
    }
    dec.feed(&bytes[at..], &mut out);
    dec.finish(&mut out);
    out
}

const SAMPLE: &str = "{\"type\":\"prompt\",\"text\":\"修复\"}\n{\"type\":\"reasoning\",\"text\":\"🙂 a\"}\r\nnot json\n\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"b\":1,\"a\":2}}\n{\"type\":\"content\",\"text\":\"end\"}";

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let d = Decoded::from_bytes(&bytes, &mut NativeDecoder::new());
        let lines = bytes.split(|&b| b == b'\n').count() as u64;
        prop_assert!(d.problems.iter().all(|p| p.line >= 1 && p.line <= lines));
    }

    #[test]
    fn splitting_the_input_anywhere_gives_the_same_items(cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let whole = feed_in_pieces(SAMPLE.as_bytes(), &[]);
        prop_assert_eq!(feed_in_pieces(SAMPLE.as_bytes(), &cuts), whole);
    }

    #[test]
    fn truncated_files_keep_every_complete_line(cut in 0usize..SAMPLE.len()) {
        let bytes = &SAMPLE.as_bytes()[..cut];
        let d = Decoded::from_bytes(bytes, &mut NativeDecoder::new());
        // The lines before the cut are read exactly; the cut line adds at most one item.
        let whole_lines = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let complete = Decoded::from_bytes(&bytes[..whole_lines], &mut NativeDecoder::new());
        prop_assert_eq!(&d.events[..complete.events.len()], &complete.events[..]);
        prop_assert_eq!(&d.problems[..complete.problems.len()], &complete.problems[..]);
        prop_assert!(d.events.len() + d.problems.len() <= complete.events.len() + complete.problems.len() + 1);
    }
}

#[test]
fn sample_reads_as_expected() {
    let d = Decoded::from_bytes(SAMPLE.as_bytes(), &mut NativeDecoder::new());
    assert_eq!(d.events.len(), 4);
    assert_eq!(d.problems.len(), 1);
    assert_eq!(d.problems[0].line, 3);
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        (-1e12f64..1e12).prop_map(|n| serde_json::json!(n)),
        Just(serde_json::json!({"b": 1, "a": [1.0, null]})),
        "[a-z \"\\\\思🙂]{0,8}".prop_map(serde_json::Value::String),
        prop::sample::select(vec![
            "reasoning",
            "content",
            "note",
            "prompt",
            "request",
            "tool_call",
            "2025-01-01T00:00:00Z"
        ])
        .prop_map(|s| serde_json::Value::String(s.to_string())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// The fast path for plain lines reads exactly what the full reader reads.
    #[test]
    fn the_plain_fast_path_agrees_with_the_full_reader(
        fields in prop::collection::vec((prop::sample::select(vec!["type", "text", "id", "ts", "model", "name", "args", "ok", "output"]), json_value()), 0..5)
    ) {
        // Written by hand so duplicate keys reach the readers too.
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{:?}:{}", k, v)).collect();
        let line = format!("{{{}}}", body.join(","));
        if let Some(fast) = loopscope_core::formats::plain::plain_event(&line) {
            let full = loopscope_core::Event::from_json(serde_json::from_str(&line).unwrap()).unwrap();
            prop_assert_eq!(full.warning, None, "{}", line);
            prop_assert_eq!(fast, full.event, "{}", line);
        }
    }
}

fn raw_json_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            " ",
            "思",
            "🙂",
            "\\\"",
            "\\\\",
            "\\/",
            "\\n",
            "\\t",
            "\\b",
            "\\u00e9",
            "\\u601D",
            "\\ud83d\\ude42",
            "\\ud800",
            "\\udc00",
            "\\ud83dx",
            "\\x",
            "\t",
            "\u{7f}",
            "\u{85}",
            "\\u",
            "\\u12",
        ]),
        0..10,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    /// The hand-written text-line reader agrees with serde_json on every
    /// escape, number and layout it accepts, and accepts no invalid JSON.
    #[test]
    fn the_hand_written_text_reader_agrees_with_serde(
        kind in prop::sample::select(vec!["reasoning", "content", "note", "prompt", "request"]),
        text in raw_json_string(),
        ts in prop::sample::select(vec!["", ",\"ts\":1.5", ",\"ts\":-0", ",\"ts\":1e400", ",\"ts\":01", ",\"ts\":3.0000000000000004e-3", ", \"ts\" :7 "]),
        space in prop::sample::select(vec!["", " ", "\t"]),
        swap in any::<bool>(),
    ) {
        let line = if swap {
            format!("{{{space}\"text\":{space}\"{text}\"{ts},\"type\":\"{kind}\"}}")
        } else {
            format!("{{\"type\":\"{kind}\",{space}\"text\":\"{text}\"{ts}}}")
        };
        let full = serde_json::from_str(&line).ok().and_then(|v| loopscope_core::Event::from_json(v).ok());
        if let Some(fast) = loopscope_core::formats::plain::plain_event(&line) {
            let full = full.expect("the fast path accepted invalid JSON");
            prop_assert_eq!(full.warning, None, "{}", line);
            prop_assert_eq!(fast, full.event, "{}", line);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    /// The text-line reader reads bytes and checks UTF-8 only where text
    /// is: a line with a stray byte anywhere (not UTF-8, a control char, a
    /// quote) is read exactly as the full reader reads it, or left to it.
    #[test]
    fn a_stray_byte_anywhere_in_a_text_line_is_never_misread(
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(vec![0x80u8, 0xbf, 0xc3, 0xe6, 0xf0, 0xff, 0x00, 0x1f, b'"', b'\\', b' ']),
        swap in any::<bool>(),
    ) {
        let line = if swap {
            "{ \"text\":\"é思🙂 a\\n\",\"ts\":1.5,\"type\":\"content\"} "
        } else {
            "{\"type\":\"reasoning\",\"text\":\"a 思 🙂\",\"ts\":12.25}"
        };
        let mut bytes = line.as_bytes().to_vec();
        bytes.insert(at.index(bytes.len() + 1), byte);
        let full = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|l| serde_json::from_str(l).ok())
            .and_then(|v| loopscope_core::Event::from_json(v).ok());
        if let Some(fast) = loopscope_core::formats::plain::plain_line(&bytes) {
            let full = full.expect("the fast path accepted a line the full reader refuses");
            prop_assert_eq!(full.warning, None);
            prop_assert_eq!(fast, full.event);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Tool arguments read by hand (one object of strings and literals)
    /// are the map serde_json builds: keys repeated, escaped, any order;
    /// anything else in them is left to serde_json.
    #[test]
    fn hand_read_arguments_are_what_serde_json_reads(
        fields in prop::collection::vec((
            prop::sample::select(vec!["\"a\"", "\"b\"", "\"\\u0061\"", "\"思\"", "\"\"", "a"]),
            prop::sample::select(vec!["\"x\"", "\"\\n思\"", "true", "false", "null", "nul", "1", "[]", "{\"c\":\"d\"}", "\"\\ud800\""]),
        ), 0..5),
        space in prop::sample::select(vec!["", " ", "\n"]),
    ) {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{space}{k}{space}:{space}{v}{space}")).collect();
        let line = format!("{{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{{{}}}}}", body.join(","));
        let full = serde_json::from_str(&line).ok().and_then(|v| loopscope_core::Event::from_json(v).ok());
        if let Some(fast) = loopscope_core::formats::plain::plain_event(&line) {
            let full = full.expect("the fast path accepted a line the full reader refuses");
            prop_assert_eq!(full.warning, None, "{}", line);
            // As written too: maps compare equal in any order.
            prop_assert_eq!(fast.to_json().to_string(), full.event.to_json().to_string());
            prop_assert_eq!(fast, full.event, "{}", line);
        } else {
            prop_assert!(full.is_none(), "a plain call left to the general reader: {}", line);
        }
    }
}
