//! Text from logs never reaches a terminal raw. Every printer goes through
//! this module: the viewer's cells, scan's and tail's lines, warnings and
//! file names. Control characters (C0, DEL, C1), text-direction
//! overrides and invisible characters (zero-width spaces and joiners, tag
//! characters, the soft hyphen, fillers) become visible placeholders; in
//! JSON they become `\u` escapes, so the data is unchanged and the terminal
//! still safe. A zero-width joiner inside an emoji sequence (👩‍💻) is kept.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;

/// The visible stand-in for a character that must not be sent to a terminal.
pub fn placeholder(c: char) -> Option<char> {
    if (' '..='~').contains(&c) {
        // Printable ASCII, most of any log: one comparison, not the list.
        return None;
    }
    match c {
        // C0 controls as their Control Pictures (␀ … ␟), DEL as ␡.
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32),
        '\u{7f}' => Some('␡'),
        c if is_hidden(c) => Some('�'),
        _ => None,
    }
}

/// C1 controls (a terminal may read U+009B as CSI), bidi marks, overrides
/// and isolates (they reorder or hide text), line and paragraph separators;
/// and what takes no room on screen, so text can hide in it: the soft
/// hyphen, the combining grapheme joiner, zero-width spaces, non-joiners,
/// joiners and no-break spaces (U+FEFF), word joiners, invisible operators,
/// Hangul and Khmer fillers, the Mongolian vowel separator and the tag
/// characters (U+E0000–E007F, which spell ASCII no one sees).
fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{80}'..='\u{9f}'
        | '\u{ad}'
        | '\u{34f}'
        | '\u{61c}'
        | '\u{115f}' | '\u{1160}'
        | '\u{17b4}' | '\u{17b5}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}' | '\u{2029}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{3164}'
        | '\u{feff}'
        | '\u{ffa0}'
        | '\u{e0000}'..='\u{e007f}')
}

/// The zero-width joiner: hidden text outside an emoji sequence, the glue
/// of one inside (👩‍💻 is 👩 ZWJ 💻).
const ZWJ: char = '\u{200d}';

/// A char an emoji ZWJ sequence is made of (pictographs, their variation
/// selector and skin tones).
fn is_pictograph(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF | 0x2190..=0x21FF | 0x2300..=0x23FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0xFE0F
        | 0xA9 | 0xAE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x3030 | 0x303D | 0x3297 | 0x3299)
}

/// Each char of `text` as shown: unsafe ones as their placeholders, but a
/// zero-width joiner between two pictographs (an emoji sequence) kept.
pub fn shown_chars(text: &str) -> impl Iterator<Item = char> + '_ {
    let mut prev: Option<char> = None;
    let mut rest = text.chars().peekable();
    std::iter::from_fn(move || {
        let c = rest.next()?;
        let glue = c == ZWJ && prev.is_some_and(is_pictograph) && rest.peek().is_some_and(|&n| is_pictograph(n));
        prev = Some(c);
        Some(if glue { c } else { placeholder(c).unwrap_or(c) })
    })
}

/// Whether a char must be replaced before it is printed.
pub fn is_unsafe(c: char) -> bool {
    placeholder(c).is_some()
}

/// Log text for one line: newlines shown as ⏎, tabs as a space, anything
/// unsafe as its placeholder.
pub fn line(text: &str) -> String {
    shown_with(text, "⏎", " ")
}

/// The longest line of a message printed whole: a message may quote a bad
/// value, a path or a flag's argument, and one can be 128 KB (a command
/// line's) or more (a config's, a file's).
pub(crate) const MESSAGE_LINE_CHARS: usize = 400;

/// `text` with each line cut to `MESSAGE_LINE_CHARS`, its start and end
/// kept (an error's cause is at its end).
pub fn cut_lines(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let n = line.chars().count();
        if n > MESSAGE_LINE_CHARS {
            let head: String = line.chars().take(MESSAGE_LINE_CHARS - 60).collect();
            let tail: String = line.chars().skip(n - 40).collect();
            out += &format!("{head}… ({} chars cut) …{tail}\n", n - MESSAGE_LINE_CHARS + 20);
        } else {
            out += line;
            out.push('\n');
        }
    }
    out
}

/// Text for a terminal that may span lines: newlines and tabs stay.
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && c != '\t' && is_unsafe(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(shown_with(text, "\n", "\t"))
}

/// `text` as shown ([`shown_chars`]), its newlines and tabs as given.
fn shown_with(text: &str, newline: &str, tab: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str(newline);
        }
        for (j, piece) in part.split('\t').enumerate() {
            if j > 0 {
                out.push_str(tab);
            }
            out.extend(shown_chars(piece));
        }
    }
    out
}

/// A file name as printed (names can hold escape sequences too).
pub fn path(p: &Path) -> String {
    line(&p.to_string_lossy())
}

/// Serialized JSON made terminal-safe: every unsafe char left raw by the
/// serializer (DEL, C1, bidi) becomes a `\uXXXX` escape. Outside strings
/// JSON is ASCII punctuation, so the document means exactly the same.
pub fn json(serialized: &str) -> Cow<'_, str> {
    if !serialized.chars().any(is_unsafe) {
        return Cow::Borrowed(serialized);
    }
    let mut out = String::with_capacity(serialized.len() + 16);
    for c in serialized.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer to a terminal (or whatever stands for one): what goes through
/// it is printed with [`text`]'s rules, whoever wrote it.
pub struct Terminal<W: Write> {
    inner: W,
}

impl<W: Write> Terminal<W> {
    /// Wraps a writer.
    pub fn new(inner: W) -> Terminal<W> {
        Terminal { inner }
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Bytes that are not UTF-8 (raw bytes, a piece of a char) are
        // decoded lossily; valid text is borrowed as it is.
        self.inner.write_all(text(&String::from_utf8_lossy(buf)).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OSC 52 (clipboard), OSC 0 (title), CSI, 8-bit CSI, bidi override.
    const PAYLOADS: [&str; 5] = [
        "\u{1b}]52;c;aGVsbG8=\u{7}",
        "\u{1b}]0;pwned\u{1b}\\",
        "\u{1b}[2J\u{1b}[31mred",
        "\u{9b}31m\u{9d}0;t\u{9c}",
        "abc\u{202e}fdp.exe\u{2066}",
    ];

    #[test]
    fn no_payload_survives_any_printer() {
        for p in PAYLOADS {
            for out in [line(p), text(p).into_owned(), path(Path::new(p))] {
                assert!(!out.chars().any(is_unsafe), "{out:?}");
                assert!(!out.contains('\u{1b}'));
            }
            let mut t = Terminal::new(Vec::new());
            t.write_all(p.as_bytes()).unwrap();
            writeln!(t, "name {p}").unwrap();
            let printed = String::from_utf8(t.inner).unwrap();
            assert!(!printed.chars().any(|c| c != '\n' && is_unsafe(c)), "{printed:?}");
        }
    }

    #[test]
    fn json_stays_the_same_data_and_becomes_safe() {
        for p in PAYLOADS {
            let v = serde_json::json!({ "name": p, "n": 1 });
            let raw = v.to_string();
            let safe = json(&raw);
            assert!(!safe.chars().any(is_unsafe), "{safe}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), v);
        }
    }

    #[test]
    fn visible_placeholders() {
        assert_eq!(line("\u{1b}[31mred\u{7}"), "␛[31mred␇");
        assert_eq!(line("a\nb\tc\u{202e}d"), "a⏎b c�d");
        assert_eq!(text("a\nb\u{1b}"), "a\nb␛");
        assert_eq!(text("plain 思考 🙂"), Cow::Borrowed("plain 思考 🙂"));
    }

    #[test]
    fn invisible_chars_are_shown_and_emoji_sequences_kept() {
        // Zero-width space, joiner, non-joiner, word joiner, U+FEFF, soft
        // hyphen, a Hangul filler, and "hi" in tag characters.
        let hidden = "a\u{200b}b\u{200d}c\u{200c}d\u{2060}e\u{feff}f\u{ad}g\u{3164}h\u{e0068}\u{e0069}";
        assert_eq!(line(hidden), "a�b�c�d�e�f�g�h��");
        assert_eq!(text(hidden), "a�b�c�d�e�f�g�h��");
        assert!(json(&serde_json::to_string(hidden).unwrap()).contains("\\u200b"));
        // 👩‍💻, 🏳️‍🌈 and a family stay whole; a joiner next to text does not.
        for emoji in ["👩\u{200d}💻", "🏳\u{fe0f}\u{200d}🌈", "👨\u{200d}👩\u{200d}👧 思考"] {
            assert_eq!(line(emoji), emoji);
            assert_eq!(text(emoji), emoji);
        }
        assert_eq!(line("👩\u{200d}x"), "👩�x");
        assert_eq!(line("\u{200d}💻"), "�💻");
    }
}
