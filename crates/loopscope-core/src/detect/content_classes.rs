//! The structural tests `chunk-chant` applies to each content delta, written
//! with JavaScript regex semantics: `\s` is JavaScript's whitespace set
//! (it has U+FEFF, lacks U+0085), `.` stops at \n, \r, U+2028 and U+2029, and
//! `^`/`$` are the ends of the delta (no multi-line flag).

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

const WS: &str = r"[\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";

/// What one delta contains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Classes {
    /// Number of "```" (non-overlapping).
    pub fences: usize,
    /// A table row, list item, heading or blockquote starts somewhere in it.
    pub structural: bool,
    /// The whole delta is a divider.
    pub divider: bool,
}

pub(crate) struct Classifier {
    structural: RegexSet,
    divider: Regex,
}

impl Classifier {
    fn new(quirks: bool) -> Classifier {
        // gemini-cli writes the bullet class `[*-+]`, a range from '*' to '+',
        // and the divider class `[+-_=*…]`, whose range '+'..'_' holds every
        // capital letter, digit and most punctuation.
        let bullet = if quirks { "[*+]" } else { r"[\-*+]" };
        let divider = if quirks {
            r"^[\x2B-\x5F=*\x{2500}-\x{257F}]+$"
        } else {
            r"^[\-+_=*\x{2500}-\x{257F}]+$"
        };
        let structural = RegexSet::new([
            format!(r"(?:^|\n){WS}*(?:\|{DOT}*\||[|+\-]{{3,}})"),
            format!(r"(?:^|\n){WS}*{bullet}{WS}"),
            format!(r"(?:^|\n){WS}*[0-9]+\.{WS}"),
            format!(r"(?:^|\n)#+{WS}"),
            format!(r"(?:^|\n)>{WS}"),
        ])
        .expect("valid structural regexes");
        Classifier {
            structural,
            divider: Regex::new(divider).expect("valid divider regex"),
        }
    }

    pub(crate) fn get(quirks: bool) -> &'static Classifier {
        static QUIRKS: LazyLock<Classifier> = LazyLock::new(|| Classifier::new(true));
        static FIXED: LazyLock<Classifier> = LazyLock::new(|| Classifier::new(false));
        if quirks {
            &QUIRKS
        } else {
            &FIXED
        }
    }

    pub(crate) fn classify(&self, text: &str) -> Classes {
        // Cheap tests first (most deltas are plain words): each only skips
        // a regex that could not match, so the answers are the regexes'.
        Classes {
            fences: if text.as_bytes().contains(&b'`') {
                text.matches("```").count()
            } else {
                0
            },
            structural: may_be_structural(text) && self.structural.is_match(text),
            divider: may_be_divider(text) && self.divider.is_match(text),
        }
    }
}

/// Whether some line start of the delta (its start, or after a `\n`),
/// past whitespace, has a char a structural element starts with. Skips a
/// superset of JavaScript's whitespace, so it never says no to a match.
///
/// One pass: every line start inside a run of whitespace reaches the same
/// first non-whitespace char, so each char is looked at once (rescanning
/// from every `\n` made a delta of blank lines quadratic), and the rest of
/// a line after that char is skipped to its `\n` by a byte search.
fn may_be_structural(text: &str) -> bool {
    let mut rest = text;
    'lines: loop {
        for (i, c) in rest.char_indices() {
            count_step();
            if c == '\n' || c.is_whitespace() || c == '\u{feff}' {
                // A new line, or leading whitespace: still at a line start.
                continue;
            }
            if matches!(c, '|' | '+' | '-' | '*' | '#' | '>' | '0'..='9') {
                return true;
            }
            match rest[i..].find('\n') {
                Some(j) => {
                    rest = &rest[i + j + 1..];
                    continue 'lines;
                }
                None => return false,
            }
        }
        return false;
    }
}

#[cfg(test)]
thread_local! {
    /// Chars [`may_be_structural`] looked at, for the test that its work is linear.
    static STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[inline(always)]
fn count_step() {
    #[cfg(test)]
    STEPS.with(|s| s.set(s.get() + 1));
}

/// Whether the delta's first char could begin a divider (either class).
fn may_be_divider(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| matches!(c, '\x2A'..='\x5F' | '\u{2500}'..='\u{257F}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(t: &str) -> Classes {
        Classifier::get(false).classify(t)
    }
    fn quirk(t: &str) -> Classes {
        Classifier::get(true).classify(t)
    }

    #[test]
    fn structural_elements_reset() {
        for t in [
            "| Column 1 | Column 2 |",
            "|---|---|",
            "+---+---+",
            "|++|++|",
            "* List item",
            "\n+ Plus item",
            "1. Numbered item",
            "\n42. Another",
            "## Heading",
            "###### H6",
            "> Quote",
            "text\n  * nested",
            "\u{feff}* bom-space bullet",
        ] {
            assert!(fixed(t).structural, "{t:?}");
        }
        for t in [
            "plain text",
            "a | b",
            "#hashtag",
            ">quote-without-space",
            "1.5 apples",
            "x - y",
        ] {
            assert!(!fixed(t).structural, "{t:?}");
        }
    }

    #[test]
    fn the_dash_bullet_quirk() {
        assert!(fixed("\n- Dash item").structural);
        assert!(!quirk("\n- Dash item").structural);
        assert!(quirk("\n* Star item").structural);
        // NEL is not JavaScript whitespace.
        assert!(!fixed("*\u{85}x").structural);
    }

    #[test]
    fn dividers() {
        for t in ["-----", "╭─╭─", "=====", "***", "___"] {
            assert!(fixed(t).divider, "{t:?}");
            assert!(quirk(t).divider, "{t:?}");
        }
        for t in ["ABCDE", "I", ".", "2024", "HELLO WORLD?"] {
            assert!(!fixed(t).divider || t.is_empty(), "{t:?}");
        }
        for t in ["ABCDE", "I", ".", "2024", "0123456789"] {
            assert!(quirk(t).divider, "{t:?}");
        }
        for t in ["abcde", "HELLO WORLD", "", "--- \n"] {
            assert!(!quirk(t).divider, "{t:?}");
        }
    }

    #[test]
    fn the_cheap_tests_never_hide_a_match() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let alphabet: Vec<char> = " \t\n\r|+-*#>0123456789.aZ_=`\u{a0}\u{feff}\u{85}\u{2028}─:"
            .chars()
            .collect();
        for _ in 0..20_000 {
            let len = (rng % 12) as usize;
            let text: String = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    alphabet[(rng % alphabet.len() as u64) as usize]
                })
                .collect();
            for c in [Classifier::get(false), Classifier::get(true)] {
                let full = Classes {
                    fences: text.matches("```").count(),
                    structural: c.structural.is_match(&text),
                    divider: c.divider.is_match(&text),
                };
                assert_eq!(c.classify(&text), full, "{text:?}");
            }
        }
    }

    /// Chars looked at to classify `text`.
    fn steps(text: &str) -> usize {
        STEPS.with(|s| s.set(0));
        let _ = fixed(text);
        STEPS.with(|s| s.get())
    }

    #[test]
    fn blank_line_floods_cost_linear_work() {
        // 200,000 blank lines once cost 23 s (every line start rescanned
        // the whitespace after it); the work now doubles with the input.
        for unit in ["\n", " \n", "\n\t\u{3000}", "\r\n"] {
            let (n, twice) = (steps(&unit.repeat(50_000)), steps(&unit.repeat(100_000)));
            assert!(n >= 50_000, "{unit:?}: {n}");
            let ratio = twice as f64 / n as f64;
            assert!((1.8..2.2).contains(&ratio), "{unit:?}: {n} then {twice}");
        }
        // What follows the flood still counts.
        assert!(fixed(&format!("{}  * item", "\n".repeat(100_000))).structural);
        assert!(!fixed(&format!("{}  word", "\n".repeat(100_000))).structural);
    }

    #[test]
    fn fences_count_non_overlapping() {
        assert_eq!(fixed("```js\n```").fences, 2);
        assert_eq!(fixed("````").fences, 1);
        assert_eq!(fixed("``````").fences, 2);
    }
}
