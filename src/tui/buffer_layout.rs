//! The rows of the buffer pane: the shown buffer wrapped (or not) at the
//! pane's width, with checkpoint marker rows at their exact char offsets.
//!
//! Wrapping a 10 MB buffer on every frame is too slow, so the rows are kept
//! in a [`BufferLayout`] that is redone only from the earliest change: new
//! text (from the last row), a new or removed checkpoint marker (from the row
//! holding it), or a shorter buffer after seeking back.

use unicode_segmentation::UnicodeSegmentation;

use super::cells::{cell, is_newline};
use loopscope_core::event::Channel;
use loopscope_core::text::TextBuffer;

/// One visual row of the pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// Chars `[start, end)` of the buffer (a trailing newline is not part of it).
    Text { start: usize, end: usize },
    /// The checkpoint at this char offset.
    Marker { at: usize },
}

impl Row {
    pub fn start(&self) -> usize {
        match *self {
            Row::Text { start, .. } => start,
            Row::Marker { at } => at,
        }
    }

    pub fn end(&self) -> usize {
        match *self {
            Row::Text { end, .. } => end,
            Row::Marker { at } => at,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct LayoutKey {
    request: Option<usize>,
    channel: Channel,
    width: usize,
    wrap: bool,
}

/// The rows of the shown buffer for one width, kept up to date incrementally.
#[derive(Clone, Debug, Default)]
pub struct BufferLayout {
    key: Option<LayoutKey>,
    markers: Vec<usize>,
    len: usize,
    rows: Vec<Row>,
}

impl BufferLayout {
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Brings the rows up to date with `buf` and the checkpoint `markers`.
    pub fn sync(
        &mut self,
        buf: &TextBuffer,
        request: Option<usize>,
        channel: Channel,
        markers: &[usize],
        width: usize,
        wrap: bool,
    ) {
        let key = LayoutKey {
            request,
            channel,
            width: width.max(1),
            wrap,
        };
        let len = buf.len();
        let mut markers: Vec<usize> = markers.iter().copied().filter(|&m| m <= len).collect();
        markers.sort_unstable();
        markers.dedup();
        if self.key.as_ref() != Some(&key) {
            self.key = Some(key);
            self.rows.clear();
            self.markers = markers;
            self.layout_from(buf, 0, 0);
            self.len = len;
            return;
        }
        let mut dirty: Option<usize> = None;
        let mut note = |at: usize| dirty = Some(dirty.map_or(at, |d| d.min(at)));
        if len != self.len {
            note(len.min(self.len));
        }
        if markers != self.markers {
            let changed = markers
                .iter()
                .zip(&self.markers)
                .find(|(a, b)| a != b)
                .map(|(a, b)| *a.min(b))
                .or_else(|| {
                    markers
                        .get(self.markers.len())
                        .or(self.markers.get(markers.len()))
                        .copied()
                });
            if let Some(at) = changed {
                note(at);
            }
        }
        let Some(from) = dirty else { return };
        let mut i = self.rows.partition_point(|r| r.end() < from);
        let wrap = self.key.as_ref().is_some_and(|k| k.wrap);
        // A wrapped row was broken by looking past its end, into the row
        // holding the change: redo it too.
        if wrap && i > 0 && matches!(self.rows[i - 1], Row::Text { .. }) {
            i -= 1;
        }
        // A marker row belongs with the text row that starts at it: redo both.
        while i > 0
            && matches!(self.rows[i - 1], Row::Marker { at } if self.rows.get(i).is_none_or(|r| r.start() == at))
        {
            i -= 1;
        }
        let (row_start, scan_from) = match self.rows.get(i) {
            // Without wrapping, plain growth only needs the new text scanned.
            Some(&Row::Text { start, end })
                if !wrap && from == end && i + 1 == self.rows.len() && markers == self.markers =>
            {
                (start, end)
            }
            Some(r) => (r.start(), r.start()),
            None => (0, 0),
        };
        self.rows.truncate(i);
        self.markers = markers;
        self.layout_from(buf, row_start, scan_from);
        self.len = len;
    }

    /// Lays out `buf` from `scan_from`, the current row having started at `row_start`.
    fn layout_from(&mut self, buf: &TextBuffer, mut row_start: usize, scan_from: usize) {
        let LayoutKey { width, wrap, .. } = self.key.clone().expect("key set before layout");
        let text = buf.slice(scan_from..buf.len());
        let mut off = scan_from;
        let mut col = 0;
        // Where the row could break on a space: (offset after it, column after it).
        let mut last_space: Option<(usize, usize)> = None;
        let mut mi = self.markers.partition_point(|&m| m < scan_from);
        for g in text.graphemes(true) {
            if self.push_markers_until(off, &mut row_start, &mut mi) {
                (col, last_space) = (0, None);
            }
            let n = g.chars().count();
            if is_newline(g) {
                self.rows.push(Row::Text {
                    start: row_start,
                    end: off,
                });
                off += n;
                (row_start, col, last_space) = (off, 0, None);
                continue;
            }
            if wrap {
                if col > 0 && col + cell(g, col).1 > width {
                    match last_space {
                        Some((after, col_after)) if after > row_start && after <= off => {
                            self.rows.push(Row::Text {
                                start: row_start,
                                end: after,
                            });
                            row_start = after;
                            col -= col_after;
                        }
                        _ => {
                            self.rows.push(Row::Text {
                                start: row_start,
                                end: off,
                            });
                            row_start = off;
                            col = 0;
                        }
                    }
                    last_space = None;
                    // The carried word and this grapheme may still not fit: break before it too.
                    if col > 0 && col + cell(g, col).1 > width {
                        self.rows.push(Row::Text {
                            start: row_start,
                            end: off,
                        });
                        row_start = off;
                        col = 0;
                    }
                }
                col += cell(g, col).1;
                if g == " " || g == "\t" {
                    last_space = Some((off + n, col));
                }
            }
            off += n;
        }
        self.push_markers_until(off, &mut row_start, &mut mi);
        self.rows.push(Row::Text {
            start: row_start,
            end: off,
        });
    }

    /// Puts a marker row for every marker from `mi` at or before `off`, each
    /// ending the text row before it; says whether it put any.
    fn push_markers_until(&mut self, off: usize, row_start: &mut usize, mi: &mut usize) -> bool {
        let first = *mi;
        while *mi < self.markers.len() && self.markers[*mi] <= off {
            if off > *row_start {
                self.rows.push(Row::Text {
                    start: *row_start,
                    end: off,
                });
            }
            self.rows.push(Row::Marker { at: self.markers[*mi] });
            *row_start = off;
            *mi += 1;
        }
        *mi > first
    }

    /// Index of the row that shows char `at`.
    pub fn row_of(&self, at: usize) -> usize {
        let i = self.rows.partition_point(|r| match r {
            Row::Text { end, .. } => *end <= at,
            Row::Marker { at: m } => *m <= at,
        });
        i.min(self.rows.len().saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str, markers: &[usize], width: usize, wrap: bool) -> (BufferLayout, TextBuffer) {
        let mut b = TextBuffer::new();
        b.push_str(text);
        let mut l = BufferLayout::default();
        l.sync(&b, Some(1), Channel::Reasoning, markers, width, wrap);
        (l, b)
    }

    fn texts(l: &BufferLayout, b: &TextBuffer) -> Vec<String> {
        l.rows()
            .iter()
            .map(|r| match r {
                Row::Text { start, end } => b.slice(*start..*end),
                Row::Marker { at } => format!("<{at}>"),
            })
            .collect()
    }

    #[test]
    fn wraps_at_spaces_and_hard_breaks_long_words() {
        let (l, b) = layout("the quick brown fox\njumps", &[], 10, true);
        assert_eq!(texts(&l, &b), vec!["the quick ", "brown fox", "jumps"]);
        let (l, b) = layout("abcdefghijklmnop", &[], 5, true);
        assert_eq!(texts(&l, &b), vec!["abcde", "fghij", "klmno", "p"]);
    }

    #[test]
    fn wide_chars_never_straddle_the_edge() {
        let (l, b) = layout("思考思考思", &[], 5, true);
        assert_eq!(texts(&l, &b), vec!["思考", "思考", "思"]);
        let (l, b) = layout("a🙂🙂", &[], 4, true);
        assert_eq!(texts(&l, &b), vec!["a🙂", "🙂"]);
    }

    #[test]
    fn markers_split_the_text_at_their_offset() {
        let (l, b) = layout("0123456789", &[4], 80, true);
        assert_eq!(texts(&l, &b), vec!["0123", "<4>", "456789"]);
        let (l, b) = layout("ab\ncd", &[3], 80, true);
        assert_eq!(texts(&l, &b), vec!["ab", "<3>", "cd"]);
        let (l, b) = layout("abc", &[3], 80, true);
        assert_eq!(texts(&l, &b), vec!["abc", "<3>", ""]);
    }

    #[test]
    fn incremental_sync_equals_a_fresh_layout() {
        let pieces = [
            "The parser ",
            "returns early on\nempty input. ",
            "思考思考思考思考",
            "\n\n",
            "and then a very long word: ",
            "abcdefghijklmnopqrstuvwxyz",
            " end.",
        ];
        for wrap in [true, false] {
            let mut b = TextBuffer::new();
            let mut l = BufferLayout::default();
            let mut markers = Vec::new();
            for (i, p) in pieces.iter().enumerate() {
                b.push_str(p);
                if i == 3 {
                    markers.push(20); // a checkpoint discovered after the text passed it
                }
                l.sync(&b, Some(1), Channel::Reasoning, &markers, 12, wrap);
                let mut fresh = BufferLayout::default();
                fresh.sync(&b, Some(1), Channel::Reasoning, &markers, 12, wrap);
                assert_eq!(l.rows(), fresh.rows(), "after piece {i}, wrap {wrap}");
            }
            // Seeking back: a shorter buffer of the same request, without the marker.
            let mut short = TextBuffer::new();
            short.push_str(&pieces[..2].concat());
            l.sync(&short, Some(1), Channel::Reasoning, &[], 12, wrap);
            let mut fresh = BufferLayout::default();
            fresh.sync(&short, Some(1), Channel::Reasoning, &[], 12, wrap);
            assert_eq!(l.rows(), fresh.rows(), "after shrinking, wrap {wrap}");
        }
    }

    #[test]
    fn growth_after_a_marker_at_a_row_start_keeps_one_marker() {
        let mut b = TextBuffer::new();
        let mut l = BufferLayout::default();
        b.push_str("0123456789");
        l.sync(&b, Some(1), Channel::Reasoning, &[10], 80, true);
        for piece in ["ab", "cd", "\nef", "gh"] {
            b.push_str(piece);
            l.sync(&b, Some(1), Channel::Reasoning, &[10], 80, true);
            let markers = l.rows().iter().filter(|r| matches!(r, Row::Marker { .. })).count();
            assert_eq!(markers, 1, "after {piece:?}: {:?}", l.rows());
        }
        assert_eq!(texts(&l, &b), vec!["0123456789", "<10>", "abcd", "efgh"]);
    }

    proptest::proptest! {
        #[test]
        fn any_sequence_of_changes_equals_a_fresh_layout(
            steps in proptest::collection::vec(
                (proptest::sample::select(vec!["ab ", "思考", "🙂x", "\n", "\t", "word ", "longerword", " "]), 0usize..4, proptest::bool::ANY),
                1..40,
            ),
            width in 3usize..14,
            wrap in proptest::bool::ANY,
        ) {
            let mut text = String::new();
            let mut l = BufferLayout::default();
            for (piece, op, add_marker) in steps {
                text.push_str(piece);
                let len = text.chars().count();
                // Sometimes show a shorter prefix (seeking back), and markers come and go.
                let shown: String = if op == 0 { text.chars().take(len / 2).collect() } else { text.clone() };
                let n = shown.chars().count();
                let markers: Vec<usize> = if add_marker { vec![n / 3, n / 2] } else { vec![n / 3] };
                let mut b = TextBuffer::new();
                b.push_str(&shown);
                l.sync(&b, Some(1), Channel::Reasoning, &markers, width, wrap);
                let mut fresh = BufferLayout::default();
                fresh.sync(&b, Some(1), Channel::Reasoning, &markers, width, wrap);
                proptest::prop_assert_eq!(l.rows(), fresh.rows());
                if wrap {
                    for r in l.rows() {
                        if let Row::Text { start, end } = *r {
                            let row = b.slice(start..end);
                            let (mut col, mut widest) = (0, 0);
                            for g in row.graphemes(true) {
                                let w = cell(g, col).1;
                                widest = widest.max(w);
                                col += w;
                            }
                            proptest::prop_assert!(col <= width.max(widest), "row {:?} is {} wide", row, col);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn row_of_finds_the_row_showing_a_char() {
        let (l, _) = layout("the quick brown fox\njumps", &[], 10, true);
        assert_eq!(l.row_of(0), 0);
        assert_eq!(l.row_of(12), 1);
        assert_eq!(l.row_of(21), 2);
    }
}
