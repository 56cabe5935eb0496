//! stable.rs's tests: two values digest alike exactly when OpenClaw's
//! stable JSON texts of them are equal (the text written here as OpenClaw
//! writes it, the reference the canonical form stands for).

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::*;
use crate::detect::keys::{js_number, write_escaped};

/// `stableStringify` as text: keys sorted by UTF-16 code units, numbers as
/// JavaScript writes them, strings JSON-escaped (markers zeroed when `outcome`).
fn stable_text(out: &mut String, v: &Value, outcome: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => text_str(out, s, outcome),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                stable_text(out, item, outcome);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut entries: Vec<(String, &String, &Value)> = map
                .iter()
                .map(|(k, v)| {
                    (
                        if outcome {
                            zero_markers(k).into_owned()
                        } else {
                            k.clone()
                        },
                        k,
                        v,
                    )
                })
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
                text_str(out, k, false);
                out.push(':');
                stable_text(out, v, outcome);
            }
            out.push('}');
        }
    }
}

fn text_str(out: &mut String, s: &str, outcome: bool) {
    let s = if outcome { zero_markers(s) } else { s.into() };
    out.push('"');
    write_escaped(out, &s);
    out.push('"');
}

fn text_of(v: &Value, outcome: bool) -> String {
    let mut out = String::new();
    stable_text(&mut out, v, outcome);
    out
}

fn canon_of(v: &Value, outcome: bool) -> Digest {
    digest_with(|c| c.value(v, outcome))
}

/// Strings from a small set, so that equal texts come up often: escapes,
/// CJK, emoji, characters on both sides of U+E000 and above U+FFFF (where
/// UTF-16 order is not code point order), and markers.
fn small_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("a".to_string()),
        Just("b".to_string()),
        Just("\"\\\n".to_string()),
        Just("思考".to_string()),
        Just("\u{e000}".to_string()),
        Just("\u{ffff}".to_string()),
        Just("👩‍💻".to_string()),
        Just("<<<EXTERNAL_UNTRUSTED_CONTENT id=\"0123456789abcdef\">>>x<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\"0123456789abcdef\">>>".to_string()),
        Just("<<<EXTERNAL_UNTRUSTED_CONTENT id=\"fedcba9876543210\">>>x<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\"fedcba9876543210\">>>".to_string()),
    ]
}

fn small_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(1.5),
            Just(1e21),
            Just(2.0f64.powi(60))
        ]
        .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop_oneof![Just(1u64), Just(1u64 << 60), Just((1u64 << 60) + 1)].prop_map(|n| Value::Number(n.into())),
        small_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((small_string(), inner), 0..3)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The canonical form is as fine as the text, no finer: equal digests
    /// exactly when the stable JSON texts are equal, for argument digests
    /// (strings as they are) and outcome digests (markers zeroed).
    #[test]
    fn digests_are_equal_exactly_when_stable_texts_are(a in small_value(), b in small_value(), outcome in any::<bool>()) {
        prop_assert_eq!(
            canon_of(&a, outcome) == canon_of(&b, outcome),
            text_of(&a, outcome) == text_of(&b, outcome),
            "{} vs {}", text_of(&a, outcome), text_of(&b, outcome)
        );
    }

    /// UTF-16 code unit order, decided at the first differing byte.
    #[test]
    fn keys_sort_in_utf16_order(a in "[a\u{e000}\u{ffff}😀思]{0,4}", b in "[a\u{e000}\u{ffff}😀思]{0,4}") {
        prop_assert_eq!(utf16_cmp(&a, &b), a.encode_utf16().cmp(b.encode_utf16()));
    }
}

#[test]
fn key_order_and_number_spelling_do_not_matter_but_types_do() {
    let v = |s: &str| serde_json::from_str::<Value>(s).expect("JSON");
    assert_eq!(
        canon_of(&v(r#"{"b":1,"a":[1.0,"x"]}"#), false),
        canon_of(&v(r#"{"a":[1,"x"],"b":1.0}"#), false)
    );
    assert_eq!(canon_of(&v("-0.0"), false), canon_of(&v("0"), false));
    assert_ne!(canon_of(&v("1"), false), canon_of(&v(r#""1""#), false));
    assert_ne!(canon_of(&v(r#"["a","b"]"#), false), canon_of(&v(r#"["ab"]"#), false));
    assert_ne!(canon_of(&v(r#"[[],[]]"#), false), canon_of(&v(r#"[[[]]]"#), false));
    assert_ne!(canon_of(&v(r#"{"a":{}}"#), false), canon_of(&v(r#"{"a":[]}"#), false));
}
