//! Turning log text into terminal cells. Text from logs never reaches the
//! terminal raw: control characters and text-direction overrides become
//! visible placeholders, tabs become spaces, and widths are measured the way
//! ratatui measures them (grapheme clusters, `unicode-width`).

use std::borrow::Cow;

use unicode_width::UnicodeWidthStr;

/// Tab stops every this many columns.
pub const TAB: usize = 4;

pub use crate::sanitize::placeholder;

/// Log text for a one-line label (see [`crate::sanitize::line`]).
pub fn sanitize(text: &str) -> String {
    crate::sanitize::line(text)
}

/// Like [`sanitize`], cut to at most `max` cells with an ellipsis.
pub fn label(text: &str, max: usize) -> String {
    let clean = sanitize(text);
    if clean.width() <= max {
        return clean;
    }
    let mut out = String::new();
    let mut w = 0;
    for c in clean.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Whether a grapheme ends a line.
pub fn is_newline(g: &str) -> bool {
    g == "\n" || g == "\r\n"
}

/// A grapheme as drawn starting at column `col`: the text to draw and its width.
pub fn cell(g: &str, col: usize) -> (Cow<'_, str>, usize) {
    if g == "\t" {
        let w = TAB - col % TAB;
        return (Cow::Owned(" ".repeat(w)), w);
    }
    if g.chars().any(|c| placeholder(c).is_some()) {
        let s: String = g.chars().map(|c| placeholder(c).unwrap_or(c)).collect();
        let w = s.width();
        return (Cow::Owned(s), w);
    }
    (Cow::Borrowed(g), g.width())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_become_visible() {
        assert_eq!(sanitize("\u{1b}[31mred\u{7}"), "␛[31mred␇");
        assert_eq!(sanitize("a\nb\tc\u{202e}d"), "a⏎b c�d");
        assert_eq!(cell("\u{1b}", 0), (Cow::Owned("␛".to_string()), 1));
    }

    #[test]
    fn widths_of_wide_and_tab_cells() {
        assert_eq!(cell("思", 0).1, 2);
        assert_eq!(cell("🙂", 0).1, 2);
        assert_eq!(cell("\t", 0).1, 4);
        assert_eq!(cell("\t", 5).1, 3);
        assert_eq!(cell("e\u{301}", 0).1, 1);
    }

    #[test]
    fn labels_are_cut_by_width() {
        assert_eq!(label("思考思考思考", 7), "思考思…");
        assert_eq!(label("short", 10), "short");
    }
}
