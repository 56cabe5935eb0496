//! tool-loop's step key: when two steps are the same. It is the 128-bit
//! XXH3 of `call key NUL ok|output` (or `error|output`), the output's white
//! space runs folded to one space and trimmed, hashed as it streams: the
//! output is never copied, split or joined (a tool result is often the
//! largest thing in a log, and tool-heavy logs are mostly results). Two
//! steps are the same exactly when those bytes are (a collision of a
//! 128-bit hash among the few dozen steps compared is not a practical
//! concern), so the key decides as the string it stands for did.

use serde_json::Value;
use twox_hash::xxhash3_128::{RawHasher, SecretBuffer, DEFAULT_SECRET_LENGTH};

/// A step's key (equal for the same action with the same result).
pub(super) type StepKey = u128;

type Hasher = RawHasher<&'static [u8; DEFAULT_SECRET_LENGTH]>;

/// The key of a call (its canonical `name:args` key) and of its result:
/// `ok`, and the output if one was recorded.
pub(super) fn step_key(call: &str, ok: bool, output: Option<&Value>) -> StepKey {
    // The default secret, borrowed: nothing is allocated.
    let mut h: Hasher = RawHasher::new(SecretBuffer::default());
    h.write(call.as_bytes());
    h.write(if ok { b"\0ok|" } else { b"\0error|" });
    match output {
        None => {}
        Some(Value::String(s)) => write_folded(&mut h, s),
        Some(v) => {
            serde_json::to_writer(HashWriter(&mut h), v).expect("writing into a hash cannot fail");
        }
    }
    h.finish_128()
}

/// Writes `s` with its white space runs folded to one space and trimmed
/// (what `split_whitespace` joined with spaces is): each stretch of words
/// already separated by one plain space goes in as it stands, so a result
/// of plain prose is one write.
fn write_folded(h: &mut Hasher, s: &str) {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut wrote = false;
    loop {
        while i < bytes.len() && is_space_at(s, i) {
            i += char_len(bytes[i]);
        }
        if i == bytes.len() {
            return;
        }
        let from = i;
        // At `i`, or just before it, a char that is no white space.
        loop {
            while let Some(chunk) = bytes.get(i..i + 8) {
                if !plain(u64::from_le_bytes(chunk.try_into().expect("8 bytes"))) {
                    break;
                }
                i += 8;
            }
            if i == bytes.len() {
                break;
            }
            if !is_space_at(s, i) {
                i += 1;
                continue;
            }
            // One plain space and a word go on with the stretch.
            if i + 1 < bytes.len() && bytes[i] == b' ' && !is_space_at(s, i + 1) {
                i += 2;
                continue;
            }
            break;
        }
        if wrote {
            h.write(b" ");
        }
        h.write(&bytes[from..i]);
        wrote = true;
    }
}

/// Whether 8 bytes (little-endian), after a char that is no white space,
/// go on a stretch as they stand: printable ASCII and single spaces, the
/// last no space. Eight at a time: most of a result is that.
#[inline(always)]
fn plain(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte below 0x20 (a control char or white space other than a
    // space) sets its high bit here: exact for ASCII, whether any does.
    let control = x.wrapping_sub(0x20 * ONES) & !x & HIGH;
    // Spaces, each exactly: the high bit of a byte that is 0x20.
    let y = x ^ (0x20 * ONES);
    let spaces = !(((y & !HIGH) + !HIGH) | y | !HIGH);
    x & HIGH == 0 && control == 0 && spaces & (spaces >> 8) == 0 && spaces >> 63 == 0
}

/// Bytes by whether a char that starts with them may be white space:
/// ASCII white space is; of the rest only chars led by these bytes may be
/// (U+0085 and U+00A0, U+1680, U+2000 to U+205F, U+3000), and a byte that
/// leads or continues any other char never starts one.
const SPACE: u8 = 1;
const MAYBE: u8 = 2;
const STARTS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        if crate::detect::is_ascii_space(b as u8) {
            t[b] = SPACE;
        }
        b += 1;
    }
    t[0xC2] = MAYBE;
    t[0xE1] = MAYBE;
    t[0xE2] = MAYBE;
    t[0xE3] = MAYBE;
    t
};

/// Whether a white space char starts at byte `i` of `s` (a char boundary,
/// or a byte inside a char, which no white space starts at).
#[inline(always)]
fn is_space_at(s: &str, i: usize) -> bool {
    match STARTS[usize::from(s.as_bytes()[i])] {
        0 => false,
        SPACE => true,
        _ => s[i..].chars().next().is_some_and(char::is_whitespace),
    }
}

/// The length of the white space char that starts with byte `b`.
fn char_len(b: u8) -> usize {
    match b {
        0..0x80 => 1,
        0xC0..0xE0 => 2,
        0xE0..0xF0 => 3,
        _ => 4,
    }
}

/// serde_json's writer into the hash (a result that is not a string).
struct HashWriter<'a>(&'a mut Hasher);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// The key as tool-loop first made it: the whole string, whose hash the
    /// streaming key must be.
    fn string_key(call: &str, ok: bool, output: Option<&Value>) -> String {
        let out = match output {
            None => String::new(),
            Some(Value::String(s)) => s.split_whitespace().collect::<Vec<_>>().join(" "),
            Some(v) => v.to_string(),
        };
        format!("{call}\u{0}{}|{out}", if ok { "ok" } else { "error" })
    }

    fn same_as_the_string(call: &str, ok: bool, output: Option<&Value>) {
        let expected = twox_hash::XxHash3_128::oneshot(string_key(call, ok, output).as_bytes());
        assert_eq!(step_key(call, ok, output), expected, "{call:?} {ok} {output:?}");
    }

    #[test]
    fn the_hash_of_the_folded_string() {
        for out in [
            "",
            " ",
            "a",
            " a",
            "a ",
            "a b",
            "a  b",
            "a\tb",
            "a \nb  c d\r\n",
            "\u{3000}全角\u{3000}\u{3000}空白 と\u{a0}nbsp",
            "emoji 🦀  crab\u{2028}line",
            "\u{85}next\u{85}",
        ] {
            same_as_the_string("read:{}", true, Some(&json!(out)));
            same_as_the_string("read:{}", false, Some(&json!(out)));
        }
        same_as_the_string("read:{}", true, None);
        same_as_the_string(
            "sh:{\"c\":1}",
            true,
            Some(&json!({"lines": ["a  b", 2, null], "z": 1.5})),
        );
        // Long outputs go past the hash's internal buffer.
        let long = "word  ".repeat(2000) + &"x ".repeat(3000);
        same_as_the_string("read:{}", true, Some(&json!(long)));
    }

    #[test]
    fn the_bytes_that_may_start_white_space_are_all_there() {
        for c in (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .filter(|c| c.is_whitespace())
        {
            let mut buf = [0; 4];
            let lead = c.encode_utf8(&mut buf).as_bytes()[0];
            assert_ne!(STARTS[usize::from(lead)], 0, "{c:?}");
        }
    }

    #[test]
    fn eight_plain_bytes_are_words_and_single_spaces() {
        let plain_bytes = |s: &[u8; 8]| plain(u64::from_le_bytes(*s));
        assert!(plain_bytes(b"ab cd ef"));
        assert!(plain_bytes(b" abcdefg"));
        assert!(plain_bytes(b"a b c d!"));
        assert!(!plain_bytes(b"ab  cdef"), "two spaces");
        assert!(!plain_bytes(b"abcdefg "), "a space last");
        assert!(!plain_bytes(b"ab\tcdefg"), "a tab");
        assert!(!plain_bytes(b"abcdefg\n"), "a newline");
        assert!(!plain_bytes(b"abc\x00efgh"), "a control char");
        assert!(!plain_bytes("abcdefé".as_bytes().try_into().unwrap()), "not ASCII");
        // Every single odd byte in every place.
        for at in 0..8 {
            for b in 0..=255u8 {
                let mut x = *b"abcdefgh";
                x[at] = b;
                let want = (0x20..0x80).contains(&b) && !(b == b' ' && at == 7);
                assert_eq!(plain_bytes(&x), want, "{b:#x} at {at}");
            }
        }
    }

    #[test]
    fn folding_makes_the_same_step_and_results_differ() {
        let a = step_key("read:{}", true, Some(&json!("a  b\n")));
        assert_eq!(a, step_key("read:{}", true, Some(&json!(" a b"))));
        assert_ne!(a, step_key("read:{}", false, Some(&json!("a b"))));
        assert_ne!(a, step_key("read:{}", true, Some(&json!("ab"))));
        assert_ne!(a, step_key("read:{\"p\":1}", true, Some(&json!("a b"))));
        // No output recorded is an empty one, as in the string.
        assert_eq!(
            step_key("read:{}", true, None),
            step_key("read:{}", true, Some(&json!("")))
        );
    }

    proptest! {
        #[test]
        fn streaming_hash_equals_the_hash_of_the_joined_string(
            call in "[a-z:{}\"]{0,12}",
            ok: bool,
            // White space of every kind, and chars that share their first byte.
            out in "([ \t\n\x0b\x0c\r\u{85}\u{a0}\u{1680}\u{2000}-\u{200b}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}]{0,3}\
                     (ab|é|漢字|ぁ|…|\u{3001}|🦀|x{1,40}|\\PC{1,6})){0,30}[ \t\n\u{3000}]{0,3}",
        ) {
            same_as_the_string(&call, ok, Some(&Value::String(out)));
        }
    }
}
