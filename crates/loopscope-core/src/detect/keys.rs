//! Keys that decide when two tool calls are "the same": `name:args`.
//!
//! `canonical` sorts object keys recursively, so argument order never
//! matters. `js` reproduces gemini-cli's `JSON.stringify`: keys keep file
//! order except that integer-like keys come first in ascending order (the
//! JavaScript object-key order), and numbers are written as JavaScript writes
//! them. In both, numbers are compared by value (`1.0` is `1`).

use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// How a tool call becomes a key that compares equal for the same call.
pub enum KeyStyle {
    /// Keys sorted at every depth, numbers normalised: the same call whatever the key order.
    Canonical,
    /// JavaScript's `JSON.stringify` of the object as written (gemini-cli): key order matters.
    Js,
    /// `safe-stable-stringify` (Roo Code): keys sorted by UTF-16 code units
    /// at every depth, numbers as JavaScript writes them.
    Stable,
}

impl KeyStyle {
    /// The style a parameter word names (`js`, else canonical).
    pub(crate) fn from_word(word: &str) -> KeyStyle {
        if word == "js" {
            KeyStyle::Js
        } else {
            KeyStyle::Canonical
        }
    }
}

/// The key of one tool call.
pub fn call_key(name: &str, args: &Value, style: KeyStyle) -> String {
    // Room for most calls' keys at once.
    let mut out = String::with_capacity(name.len() + 128);
    match style {
        KeyStyle::Canonical | KeyStyle::Stable => out.push_str(name),
        KeyStyle::Js => {
            // gemini-cli trims the name and calls a nameless tool generic_tool.
            let trimmed = name.trim();
            out.push_str(if trimmed.is_empty() { "generic_tool" } else { trimmed });
        }
    }
    out.push(':');
    write_value(&mut out, args, style);
    out
}

/// A string as JSON writes it (serde_json and JavaScript's JSON.stringify
/// agree): quotes, backslashes and control characters escaped, nothing
/// else; straight into `out`, without a copy of the string.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    write_escaped(out, s);
    out.push('"');
}

/// Whether any byte is a control char, `"` or `\\`: eight bytes a step
/// (the classic has-less / has-zero tests, exact as a yes or no).
fn needs_escape(b: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let x = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let control = x.wrapping_sub(LO * 0x20) & !x & HI;
        if control | zero(x ^ (LO * u64::from(b'"'))) | zero(x ^ (LO * u64::from(b'\\'))) != 0 {
            return true;
        }
    }
    chunks.remainder().iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\')
}

/// The inside of a JSON string: `s` escaped (as serde_json and
/// `JSON.stringify` escape it).
pub(crate) fn write_escaped(out: &mut String, s: &str) {
    // Most strings have nothing to escape: one look, one copy.
    if !needs_escape(s.as_bytes()) {
        out.push_str(s);
        return;
    }
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let escaped = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0C => "\\f",
            0..=0x1F => "",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        if escaped.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(escaped);
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
}

/// At least the first `chars` chars of `v` as serde_json writes it (keys
/// in file order), or all of it, written no further than that (a call's
/// arguments may hold a whole file; a reason shows the head).
pub(crate) fn json_head(v: &Value, chars: usize) -> String {
    let mut out = String::with_capacity(4 * chars + 8);
    // A char is at most 4 bytes: `4 * chars` bytes hold `chars` chars.
    write_head(&mut out, v, 4 * chars);
    out
}

/// Writes `v` into `out` until `out` holds `room` bytes; whether all of it was written.
fn write_head(out: &mut String, v: &Value, room: usize) -> bool {
    use std::fmt::Write as _;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // serde_json's Display of a number is how it writes one.
        Value::Number(n) => write!(out, "{n}").expect("a String takes any text"),
        Value::String(s) => return write_string_head(out, s, room),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if out.len() >= room || !write_head(out, item, room) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if out.len() >= room || !write_string_head(out, k, room) {
                    return false;
                }
                out.push(':');
                if out.len() >= room || !write_head(out, item, room) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// [`write_string`] until `out` holds `room` bytes; whether all of it was written.
fn write_string_head(out: &mut String, s: &str, room: usize) -> bool {
    out.push('"');
    // Escapes only lengthen: a head of the string as long as the room is enough.
    let mut cut = room.saturating_sub(out.len()).min(s.len());
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    write_escaped(out, &s[..cut]);
    if cut < s.len() {
        return false;
    }
    out.push('"');
    true
}

fn write_value(out: &mut String, v: &Value, style: KeyStyle) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_js_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, style);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut write = |i: usize, k: &str, v: &Value| {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, v, style);
            };
            // Keys already in the style's order (most arguments) need no sorted copy.
            if in_order(map, style) {
                map.iter().enumerate().for_each(|(i, (k, v))| write(i, k, v));
            } else {
                for (i, (k, v)) in ordered_keys(map, style).into_iter().enumerate() {
                    write(i, k, v);
                }
            }
            out.push('}');
        }
    }
}

/// Whether the map's keys are in the order `style` writes them already.
fn in_order(map: &Map<String, Value>, style: KeyStyle) -> bool {
    match style {
        KeyStyle::Canonical => map.keys().zip(map.keys().skip(1)).all(|(a, b)| a <= b),
        KeyStyle::Stable => map
            .keys()
            .zip(map.keys().skip(1))
            .all(|(a, b)| a.encode_utf16().le(b.encode_utf16())),
        KeyStyle::Js => map.keys().all(|k| array_index(k).is_none()),
    }
}

fn ordered_keys(map: &Map<String, Value>, style: KeyStyle) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    match style {
        KeyStyle::Canonical => entries.sort_by(|a, b| a.0.cmp(b.0)),
        KeyStyle::Stable => entries.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16())),
        // Stable sort: integer-like keys first, ascending; the rest keep file order.
        KeyStyle::Js => entries.sort_by_key(|(k, _)| array_index(k).map_or((1, 0), |i| (0, i))),
    }
    entries
}

/// `v` as JSON in `style`, without a name (Roo's stable JSON of arguments).
pub(crate) fn json(v: &Value, style: KeyStyle) -> String {
    let mut out = String::new();
    write_value(&mut out, v, style);
    out
}

/// `JSON.stringify(v, keys)`: with a replacer array, JavaScript keeps only
/// the keys in `keys`, at every depth, written in `keys` order (Cline's
/// call signature).
pub(crate) fn json_with_replacer(v: &Value, keys: &[&str]) -> String {
    let mut out = String::new();
    write_replaced(&mut out, v, keys);
    out
}

fn write_replaced(out: &mut String, v: &Value, keys: &[&str]) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_replaced(out, item, keys);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut first = true;
            for k in keys {
                if let Some(item) = map.get(*k) {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    write_string(out, k);
                    out.push(':');
                    write_replaced(out, item, keys);
                }
            }
            out.push('}');
        }
        other => write_value(out, other, KeyStyle::Js),
    }
}

/// A JavaScript array index: a canonical decimal below 2^32 - 1.
fn array_index(key: &str) -> Option<u64> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u64>().ok().filter(|&i| i < u64::from(u32::MAX))
}

/// Integers below 2^53 in magnitude: every one is a double, and its
/// shortest round-trip digits are its own decimal digits (a shorter string
/// would be another integer at least 1 away, beyond half the spacing of
/// doubles there), so JavaScript writes it as its plain decimal.
const EXACT_INTEGERS: u64 = 1 << 53;

/// [`js_number`] of a JSON number, into `out`: integers (most arguments'
/// numbers: limits, line numbers, counts) digit by digit, without the
/// float formatting and its allocations, which were a third of a call's key.
pub(crate) fn write_js_number(out: &mut String, n: &serde_json::Number) {
    let int = match (n.as_u64(), n.as_i64()) {
        (Some(u), _) if u < EXACT_INTEGERS => Some((false, u)),
        (None, Some(i)) if i.unsigned_abs() < EXACT_INTEGERS => Some((i < 0, i.unsigned_abs())),
        _ => None,
    };
    let Some((negative, mut u)) = int else {
        out.push_str(&js_number(n.as_f64().unwrap_or(0.0)));
        return;
    };
    if negative {
        out.push('-');
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// A number as JavaScript's `Number.prototype.toString` writes it.
pub(crate) fn js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string(); // also -0
    }
    if !x.is_finite() {
        return "null".to_string(); // what JSON.stringify writes
    }
    // An integer below 2^53 is its own shortest round-trip digits (its
    // neighbours are at most 1 apart), so JavaScript writes it as is.
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return (x as i64).to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as JavaScript uses.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().expect("numeric exponent") + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e >= 0 { '+' } else { '-' };
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        format!("{first}{frac}e{sign}{}", e.abs())
    };
    if x < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        /// Strings are written as serde_json writes them, whatever they hold.
        #[test]
        fn strings_are_escaped_as_json_writes_them(s in "(\\PC|[\\x00-\\x1f\"\\\\\u{7f}\u{2028}])*") {
            let mut out = String::new();
            write_string(&mut out, &s);
            proptest::prop_assert_eq!(out, serde_json::to_string(&s).unwrap());
        }
    }

    use super::*;

    proptest::proptest! {
        /// Integers are written digit by digit exactly as the float path writes them.
        #[test]
        fn integers_are_written_as_js_writes_them(i in proptest::num::i64::ANY, small in -(1i64 << 54)..(1i64 << 54), u in proptest::num::u64::ANY) {
            for n in [serde_json::Number::from(i), serde_json::Number::from(small), serde_json::Number::from(u)] {
                let mut out = String::new();
                write_js_number(&mut out, &n);
                proptest::prop_assert_eq!(out, js_number(n.as_f64().unwrap()));
            }
        }
    }
    use serde_json::json;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn js_numbers() {
        for (x, want) in [
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456.789, "123456.789"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (-0.0, "0"),
            (2.5e-8, "2.5e-8"),
            (-42.0, "-42"),
            (9_007_199_254_740_991.0, "9007199254740991"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (1_152_921_504_606_846_976.0, "1152921504606847000"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(js_number(x), want, "{x}");
        }
    }

    #[test]
    fn js_key_order_puts_integer_keys_first() {
        let a = parse(r#"{"b":1,"2":2,"a":{"10":1,"9":2,"x":3}}"#);
        assert_eq!(
            call_key("t", &a, KeyStyle::Js),
            r#"t:{"2":2,"b":1,"a":{"9":2,"10":1,"x":3}}"#
        );
        let b = parse(r#"{"2":2,"b":1}"#);
        let c = parse(r#"{"b":1,"2":2}"#);
        assert_eq!(call_key("t", &b, KeyStyle::Js), call_key("t", &c, KeyStyle::Js));
        // Non-integer keys keep file order in js, so these differ; canonical makes them equal.
        let d = parse(r#"{"a":1,"b":2}"#);
        let e = parse(r#"{"b":2,"a":1}"#);
        assert_ne!(call_key("t", &d, KeyStyle::Js), call_key("t", &e, KeyStyle::Js));
        assert_eq!(
            call_key("t", &d, KeyStyle::Canonical),
            call_key("t", &e, KeyStyle::Canonical)
        );
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("4294967295"), None);
        assert_eq!(array_index("4294967294"), Some(4294967294));
    }

    #[test]
    fn numbers_compare_by_value_and_names_are_trimmed_in_js() {
        let one = json!({"a": 1});
        let one_f = parse(r#"{"a":1.0}"#);
        assert_eq!(call_key("t", &one, KeyStyle::Js), call_key("t", &one_f, KeyStyle::Js));
        assert_eq!(call_key("t", &one, KeyStyle::Canonical), r#"t:{"a":1}"#);
        assert_eq!(call_key("  read ", &json!({}), KeyStyle::Js), "read:{}");
        assert_eq!(call_key(" ", &json!({}), KeyStyle::Js), "generic_tool:{}");
        assert_eq!(call_key(" ", &json!({}), KeyStyle::Canonical), " :{}");
    }

    /// Any JSON: nested, with numbers of every kind and strings that need escapes.
    fn arbitrary_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "(\\PC|[\\x00-\\x1f\"\\\\\u{7f}\u{2028}]){0,40}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("(\\PC|\"){0,8}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The head is the start of what serde_json writes, and holds the
        /// chars asked for (or all of it).
        #[test]
        fn a_json_head_is_the_head_of_the_json(v in arbitrary_json(), chars in 0usize..80) {
            let (head, full) = (json_head(&v, chars), v.to_string());
            proptest::prop_assert!(full.starts_with(&head), "{head:?} of {full:?}");
            proptest::prop_assert!(head == full || head.chars().count() >= chars, "{head:?} of {full:?}");
        }
    }

    #[test]
    fn a_long_string_is_written_no_further_than_its_head() {
        let v = json!({"path": "a.rs", "content": "x".repeat(1 << 20)});
        let head = json_head(&v, 51);
        assert!(
            head.len() <= 4 * 51 + 4 && head.starts_with(r#"{"path":"a.rs","content":"xxx"#),
            "{head}"
        );
        assert_eq!(json_head(&json!({"a": [1, 2.5, null]}), 51), r#"{"a":[1,2.5,null]}"#);
    }

    #[test]
    fn strings_are_escaped() {
        let v = json!({"cmd": "echo \"hi\"\n", "emoji": "🙂"});
        assert_eq!(
            call_key("sh", &v, KeyStyle::Canonical),
            r#"sh:{"cmd":"echo \"hi\"\n","emoji":"🙂"}"#
        );
    }
}

#[cfg(test)]
mod escape_tests {
    use super::needs_escape;

    /// The word-at-a-time test says yes exactly when a byte-wise look does:
    /// every byte value at every place of a word and of the tail, next to
    /// ASCII and next to UTF-8 lead and continuation bytes.
    #[test]
    fn needs_escape_is_the_bytewise_test() {
        let naive = |b: &[u8]| b.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\');
        for filler in [b'a', 0x7f, 0x80, 0xe4, 0xff, b' ', b'!', b'#', b'[', b']'] {
            for len in [1usize, 7, 8, 9, 16, 19] {
                for at in 0..len {
                    for v in 0..=255u8 {
                        let mut buf = vec![filler; len];
                        buf[at] = v;
                        assert_eq!(needs_escape(&buf), naive(&buf), "{buf:?}");
                    }
                }
            }
        }
    }
}
