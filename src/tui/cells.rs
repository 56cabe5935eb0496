//! Turning log text into terminal cells. Text from logs never reaches the
//! terminal raw: control characters and text-direction overrides become
//! visible placeholders, tabs become spaces, and widths are measured the way
//! ratatui measures them (grapheme clusters, `unicode-width`).

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::style::Style;
use ratatui::text::{Line, Span as TextSpan};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Tab stops every this many columns.
pub const TAB: usize = 4;

pub use loopscope_core::sanitize::placeholder;

/// Log text for a one-line label (see [`loopscope_core::sanitize::line`]).
pub fn sanitize(text: &str) -> String {
    loopscope_core::sanitize::line(text)
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

/// Like [`label`], keeping the end: a path cut to at most `max` cells
/// keeps its file name (a session id), "…/-home-dev-shop/5f0c1d2e.jsonl".
pub fn label_end(text: &str, max: usize) -> String {
    let clean = sanitize(text);
    if clean.width() <= max {
        return clean;
    }
    let mut tail: Vec<char> = Vec::new();
    let mut w = 0;
    for c in clean.chars().rev() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        tail.push(c);
        w += cw;
    }
    std::iter::once('…').chain(tail.into_iter().rev()).collect()
}

/// Like [`label`], cutting the middle: a message too long for its line
/// keeps how it starts (what happened) and how it ends (a file's name).
pub fn label_middle(text: &str, max: usize) -> String {
    let clean = sanitize(text);
    if clean.width() <= max || max < 8 {
        return label(&clean, max);
    }
    let head = label(&clean, max / 2);
    let head = head.trim_end_matches('…');
    let tail = label_end(&clean, max - head.width());
    format!("{head}{tail}")
}

/// A selected row: every span in the selection's colours (both set, so a
/// dim or coloured span stays readable on the selection's background).
pub fn selected_line(line: Line<'static>, selected: Style) -> Line<'static> {
    let spans: Vec<TextSpan<'static>> = line
        .spans
        .into_iter()
        .map(|sp| {
            let style = sp.style.patch(selected);
            sp.style(style)
        })
        .collect();
    Line::from(spans).style(line.style.patch(selected))
}

/// Each match of `re` in each row marked in `style` (patched over the
/// row's own styles). A match is looked for row by row: one cut by the
/// wrapping is marked on neither row.
pub fn mark_matches(rows: &mut [Line<'static>], re: &regex::Regex, style: Style) {
    for row in rows.iter_mut() {
        let text: String = row.spans.iter().map(|s| s.content.as_ref()).collect();
        let found: Vec<(usize, usize)> = re
            .find_iter(&text)
            .filter(|m| !m.is_empty())
            .map(|m| (m.start(), m.end()))
            .collect();
        if found.is_empty() {
            continue;
        }
        let mut spans: Vec<TextSpan<'static>> = Vec::new();
        let mut at = 0;
        for span in std::mem::take(&mut row.spans) {
            let (start, end) = (at, at + span.content.len());
            at = end;
            // Cut the span at every match boundary inside it.
            let mut cuts = vec![start, end];
            for &(a, b) in &found {
                cuts.extend([a, b].into_iter().filter(|&c| c > start && c < end));
            }
            cuts.sort_unstable();
            cuts.dedup();
            for w in cuts.windows(2) {
                let piece = &span.content[w[0] - start..w[1] - start];
                let hit = found.iter().any(|&(a, b)| w[0] >= a && w[1] <= b);
                let st = if hit { span.style.patch(style) } else { span.style };
                spans.push(TextSpan::styled(piece.to_string(), st));
            }
        }
        row.spans = spans;
    }
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
        let s: String = loopscope_core::sanitize::shown_chars(g).collect();
        if s == g {
            // An emoji sequence, its joiners kept.
            return (Cow::Borrowed(g), g.width());
        }
        let w = s.width();
        return (Cow::Owned(s), w);
    }
    (Cow::Borrowed(g), g.width())
}

/// Log text of many lines as styled rows at most `width` cells wide: each
/// line sanitized (tabs to spaces), broken at the last space that fits, or
/// anywhere in a word longer than the width.
pub fn wrap_text(text: &str, style: Style, width: usize, out: &mut Vec<Line<'static>>) {
    for line in text.split('\n') {
        wrap_line(Line::styled(sanitize(line.trim_end_matches('\r')), style), width, out);
    }
}

/// One styled line (already sanitized) as rows at most `width` cells wide.
pub fn wrap_line(line: Line<'static>, width: usize, out: &mut Vec<Line<'static>>) {
    let width = width.max(1);
    if line.width() <= width {
        out.push(line);
        return;
    }
    let base = line.style;
    // Graphemes with their style and width, then rows cut from them.
    let mut cells: Vec<(String, Style, usize)> = Vec::new();
    for span in &line.spans {
        for g in span.content.graphemes(true) {
            let w = unicode_width::UnicodeWidthStr::width(g);
            cells.push((g.to_string(), base.patch(span.style), w));
        }
    }
    let mut start = 0;
    while start < cells.len() {
        let (mut end, mut used, mut last_space) = (start, 0, None);
        while end < cells.len() && used + cells[end].2 <= width {
            used += cells[end].2;
            if cells[end].0 == " " {
                last_space = Some(end);
            }
            end += 1;
        }
        if end == start {
            end += 1; // a glyph wider than the row
        } else if end < cells.len() {
            if let Some(sp) = last_space.filter(|&sp| sp > start) {
                end = sp + 1;
            }
        }
        let mut spans: Vec<TextSpan<'static>> = Vec::new();
        for (g, st, _) in &cells[start..end] {
            match spans.last_mut() {
                Some(last) if last.style == *st => last.content.to_mut().push_str(g),
                _ => spans.push(TextSpan::styled(g.clone(), *st)),
            }
        }
        out.push(Line::from(spans));
        start = end;
    }
}

/// Blanks the cells a wide glyph covers past its first (some widgets
/// leave what was there before): afterwards a visible symbol there was
/// drawn over the glyph's second half.
pub fn settle_wide_glyphs(buf: &mut Buffer) {
    for_wide_glyphs(buf, |buf, at, width| {
        for k in 1..width {
            buf[(at.0 + k, at.1)].reset();
        }
    });
}

/// A wide glyph whose second half something was drawn over (an overlay's
/// border beside CJK text) becomes a space: a terminal would draw the
/// glyph over that border, and ratatui skips the covered cell when it
/// sends the frame. Run [`settle_wide_glyphs`] before drawing over.
pub fn mend_cut_wide_glyphs(buf: &mut Buffer) {
    for_wide_glyphs(buf, |buf, at, width| {
        if (1..width).any(|k| buf[(at.0 + k, at.1)].symbol() != " ") {
            buf[at].set_symbol(" ");
        }
    });
}

/// Calls `f` with the position and width of each glyph wider than a cell
/// that fits in its row.
fn for_wide_glyphs(buf: &mut Buffer, mut f: impl FnMut(&mut Buffer, (u16, u16), u16)) {
    let area = buf.area;
    for y in area.top()..area.bottom() {
        let mut x = area.left();
        while x < area.right() {
            let width = buf[(x, y)].symbol().width().max(1) as u16;
            if width > 1 && x + width <= area.right() {
                f(buf, (x, y), width);
            }
            x += width;
        }
    }
}

/// The picture as plain text, a line per row (`screenshot -o x.txt`): for
/// bug reports, diffs and tests. Log text in it is already sanitized.
pub fn to_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        // A wide glyph covers the next cell: that cell is not text of its own.
        let mut row = String::new();
        let mut x = 0;
        while x < area.width {
            let symbol = buffer[(x, y)].symbol();
            row.push_str(symbol);
            x += unicode_width::UnicodeWidthStr::width(symbol).max(1) as u16;
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
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
    fn long_lines_wrap_at_spaces_and_inside_long_words() {
        let rows = |text: &str, w: usize| {
            let mut out = Vec::new();
            wrap_text(text, Style::default(), w, &mut out);
            out.iter().map(|l| l.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(rows("the quick brown fox", 10), vec!["the quick ", "brown fox"]);
        assert_eq!(rows("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(rows("思考思考思", 4), vec!["思考", "思考", "思"]);
        assert_eq!(rows("a\n\u{1b}[2J", 10), vec!["a", "␛[2J"]);
    }

    #[test]
    fn labels_are_cut_by_width() {
        assert_eq!(label("思考思考思考", 7), "思考思…");
        assert_eq!(label("short", 10), "short");
        let path = "/home/dev/.claude/projects/-home-dev-shop/5f0c1d2e-0000.jsonl";
        assert_eq!(label_end(path, 25), "…shop/5f0c1d2e-0000.jsonl");
        assert_eq!(label_end("思考思考思考", 7), "…考思考");
        let said = label_middle(&format!("waiting for {path} to appear"), 40);
        assert!(
            said.starts_with("waiting for /home") && said.ends_with(".jsonl to appear"),
            "{said}"
        );
        assert!(said.width() <= 40, "{said}");
    }

    #[test]
    fn a_border_over_half_a_wide_glyph_wins() {
        use ratatui::layout::Rect;
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 1));
        buf.set_string(0, 0, "运行中", Style::default());
        settle_wide_glyphs(&mut buf);
        // An overlay's border at column 3, over 行's second half.
        buf[(3, 0)].set_symbol("│");
        mend_cut_wide_glyphs(&mut buf);
        let row: Vec<&str> = (0..6).map(|x| buf[(x, 0)].symbol()).collect();
        assert_eq!(row, ["运", " ", " ", "│", "中", " "]);
    }
}
