//! The pieces of JSON the plain-line reader reads by hand, from bytes.
//! Each takes the line and the index where its piece starts, and gives
//! what it read and the index after it, or `None` where serde_json would
//! read something else or refuse the line (the general reader decides).

use serde_json::{Map, Value};

/// Walks a line holding one JSON object: `field` is handed each key (a
/// string without escapes: keys are only ever matched against ASCII
/// names) and the index of its value, and gives the index after the
/// value. `None` from it, or any syntax out of place, refuses the line.
pub(super) fn each_field<'a>(b: &'a [u8], mut field: impl FnMut(&'a [u8], usize) -> Option<usize>) -> Option<()> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    loop {
        let (key, next) = raw_string(b, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, field(key, skip_ws(b, i + 1))?);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') if skip_ws(b, i + 1) == b.len() => return Some(()),
            _ => return None,
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A string without escapes (a key, a `type`), borrowed as bytes: it is
/// only ever compared with ASCII names, so it needs no UTF-8 check.
pub(super) fn raw_string(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    // Keys and types are a few bytes: one at a time is quickest.
    let end = i + 1 + b[i + 1..].iter().position(|&c| ends_run(c))?;
    (b[end] == b'"').then_some((&b[i + 1..end], end + 1))
}

/// A field that may be `null` (`Some(None)`) or what `read` reads.
pub(super) fn nullable<T>(
    b: &[u8],
    i: usize,
    read: impl FnOnce(&[u8], usize) -> Option<(T, usize)>,
    slot: &mut Option<Option<T>>,
) -> Option<usize> {
    if b[i..].starts_with(b"null") {
        *slot = Some(None);
        return Some(i + 4);
    }
    let (v, next) = read(b, i)?;
    *slot = Some(Some(v));
    Some(next)
}

pub(super) fn boolean(b: &[u8], i: usize) -> Option<(bool, usize)> {
    let rest = &b[i..];
    if rest.starts_with(b"true") {
        Some((true, i + 4))
    } else if rest.starts_with(b"false") {
        Some((false, i + 5))
    } else {
        None
    }
}

/// Any JSON value (a tool's arguments or output): a string or a flat
/// object by hand, the rest by serde_json from where it starts.
pub(super) fn value(b: &[u8], i: usize) -> Option<(Value, usize)> {
    match b.get(i) {
        Some(b'"') => return string(b, i).map(|(s, next)| (Value::String(s), next)),
        Some(b'{') => {
            if let Some(read) = flat_object(b, i) {
                return Some(read);
            }
        }
        _ => {}
    }
    let mut values = serde_json::Deserializer::from_slice(&b[i..]).into_iter::<Value>();
    let v = values.next()?.ok()?;
    let end = i + values.byte_offset();
    // serde_json refuses a line nested deeper than 128, counting the
    // line's own object: a value that may be near that goes the general
    // way, which counts from the line.
    let openers = b[i..end].iter().filter(|&&c| c == b'{' || c == b'[').count();
    (openers < 100).then_some((v, end))
}

/// Tool arguments as most are: one object of strings (and `true`,
/// `false`, `null`), read into the map serde_json builds, by the same
/// `Map::insert` (a repeated key keeps its first place and its last
/// value). `None` for anything else, which serde_json then reads.
fn flat_object(b: &[u8], i: usize) -> Option<(Value, usize)> {
    let mut map = Map::new();
    let mut i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some((Value::Object(map), i + 1));
    }
    loop {
        let (key, next) = string(b, i)?;
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let (v, next) = match b.get(i)? {
            b'"' => string(b, i).map(|(s, next)| (Value::String(s), next))?,
            b't' | b'f' => boolean(b, i).map(|(v, next)| (Value::Bool(v), next))?,
            b'n' if b[i..].starts_with(b"null") => (Value::Null, i + 4),
            _ => return None,
        };
        map.insert(key, v);
        i = skip_ws(b, next);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some((Value::Object(map), i + 1)),
            _ => return None,
        }
    }
}

/// A `ts` number.
pub(super) fn seconds(b: &[u8], i: usize) -> Option<(f64, usize)> {
    number(&b[i..]).map(|(s, len)| (s, i + len))
}

/// Whether a byte ends a run of a JSON string's plain text: its closing
/// quote, an escape, or a control char (which JSON refuses raw). None of
/// them can be part of a multi-byte UTF-8 char.
fn ends_run(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The length of the plain text at the start of `b` (up to the first
/// byte that [`ends_run`]), and whether it is all ASCII; `None` if no
/// byte ends it. Eight bytes at a time: most of a log is string text.
#[inline]
fn plain_run(b: &[u8]) -> Option<(usize, bool)> {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    let mut high = 0;
    let mut words = b.chunks_exact(8);
    for (n, word) in words.by_ref().enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of eight"));
        // A byte-wise "is below" test (Mycroft's, as serde_json's own
        // string reader does it): a borrow can only flag bytes above a
        // true hit, so the lowest flagged byte is exact.
        let below = |x: u64, limit: u8| x.wrapping_sub(ONES * u64::from(limit)) & !x;
        let hits = (below(w, 0x20) | below(w ^ (ONES * 0x22), 1) | below(w ^ (ONES * 0x5c), 1)) & HIGH;
        if hits != 0 {
            let len = n * 8 + hits.trailing_zeros() as usize / 8;
            return Some((len, high & HIGH == 0 && b[n * 8..len].is_ascii()));
        }
        high |= w;
    }
    let done = b.len() - words.remainder().len();
    let len = done + words.remainder().iter().position(|&c| ends_run(c))?;
    Some((len, high & HIGH == 0 && b[done..len].is_ascii()))
}

/// The JSON number at the start of `b` as the general reader (serde_json)
/// reads it, to the last bit, and its length. Timestamps such as `12.34`
/// or `1712345678.123` take a fast path, read in one pass, that is
/// serde_json's own arithmetic for them (at most 19 digits, read exactly
/// into an integer, divided by an exactly represented power of ten);
/// anything else goes to serde_json itself.
fn number(b: &[u8]) -> Option<(f64, usize)> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    let numeric = |c: &u8| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E');
    let negative = b.first() == Some(&b'-');
    let int_start = usize::from(negative);
    let mut at = int_start;
    // Wrapping: more than 19 digits go the slow way below anyway.
    let mut significand = 0u64;
    let mut digits = |at: &mut usize| {
        let start = *at;
        while let Some(c) = b.get(*at).filter(|c| c.is_ascii_digit()) {
            significand = significand.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
            *at += 1;
        }
        *at - start
    };
    let int_len = digits(&mut at);
    let frac_len = if b.get(at) == Some(&b'.') {
        at += 1;
        digits(&mut at)
    } else {
        usize::MAX
    };
    let plain = match frac_len {
        usize::MAX => int_len,
        0 => 0,
        frac => int_len + frac,
    };
    let leading_zero = int_len > 1 && b[int_start] == b'0';
    if int_len == 0 || plain == 0 || leading_zero || plain > 19 || b.get(at).is_some_and(numeric) {
        let len = b.iter().position(|c| !numeric(c)).unwrap_or(b.len());
        return Some((serde_json::from_slice::<f64>(&b[..len]).ok()?, len));
    }
    // Through i64 when it fits (one instruction on x86-64, and the same value).
    let significand = i64::try_from(significand).map_or(significand as f64, |s| s as f64);
    let f = significand / POW10[if frac_len == usize::MAX { 0 } else { frac_len }];
    Some((if negative { -f } else { f }, at))
}

/// A JSON string with its escapes decoded; `None` where JSON (as serde_json
/// reads it) would refuse it: a raw control char, a bad escape, a lone
/// surrogate, bytes that are not UTF-8.
pub(super) fn string(b: &[u8], i: usize) -> Option<(String, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut out = String::new();
    let mut i = i + 1;
    loop {
        let (run, ascii) = plain_run(&b[i..])?;
        let piece = &b[i..i + run];
        // No char straddles a stop (they are ASCII), so each run is UTF-8
        // on its own exactly when the string is.
        let piece = if ascii {
            // SAFETY: every byte of the run is below 0x80 (plain_run saw
            // each one; its test checks that), and ASCII is UTF-8. Text is
            // most of a log; checking it again cost a tenth of the read.
            unsafe { std::str::from_utf8_unchecked(piece) }
        } else {
            std::str::from_utf8(piece).ok()?
        };
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
    /// A number as a `ts` is read: followed by the rest of its line, and
    /// taken whole (its bits, to compare).
    fn read_number(text: &str) -> Option<u64> {
        let (n, len) = super::number(format!("{text},\"x\":1}}").as_bytes())?;
        assert_eq!(len, text.len(), "{text}");
        Some(n.to_bits())
    }

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
            let got = read_number(&text);
            proptest::prop_assert_eq!(got, want.map(f64::to_bits), "{}", text);
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
            "1.5-",
            "1+",
            "--1",
            "1.2.3",
            "-01.5",
            "99999999999999999999.5",
        ] {
            let want = serde_json::from_str::<f64>(text).ok().map(f64::to_bits);
            assert_eq!(read_number(text), want, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_plain_run_ends_where_a_byte_by_byte_reading_ends_it(
            bytes in proptest::collection::vec(proptest::prop_oneof![
                0x20u8..0x7f,
                proptest::strategy::Just(b'"'),
                proptest::strategy::Just(b'\\'),
                0u8..0x20,
                0x80u8..=0xff,
            ], 0..40),
            plain in 0usize..40,
        ) {
            // A stretch of plain text first, so runs cross the words too.
            let mut b = vec![b'a'; plain];
            b.extend(bytes);
            let want = b.iter().position(|&c| super::ends_run(c)).map(|len| (len, b[..len].is_ascii()));
            proptest::prop_assert_eq!(super::plain_run(&b), want);
        }
    }
}
