//! The buffer pane: the current request's reasoning (or content) with the
//! evidence of every detection highlighted; for a tool detection (or a
//! stream of tool calls only), the calls and their results side by side.

use crate::output::count;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span as TextSpan};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use unicode_segmentation::UnicodeSegmentation;

use super::buffer_layout::{BufferLayout, Row};
use super::calls::{self, Calls};
use super::cells::cell;
use super::component::{scroll_delta, Column, Component, Context, Handled, Intent, PaneComponent, Place, Share};
use super::keymap::{bind, Binding, Command, Key};
use super::layout::Areas;
use super::theme::Theme;
use crossterm::event::KeyCode as K;
use loopscope_core::detect::{CheckpointRun, Span};
use loopscope_core::event::Channel;
use loopscope_core::text::TextBuffer;

pub const KEYS: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "scroll down"),
    bind(
        &[Key::Char('k'), Key::Code(K::Up)],
        Command::Up,
        "scroll up (live: stops following)",
    ),
    bind(&[Key::Code(K::PageDown)], Command::PageDown, "a page down"),
    bind(&[Key::Code(K::PageUp)], Command::PageUp, "a page up"),
    bind(&[Key::Ctrl('d')], Command::HalfPageDown, "half a page down"),
    bind(&[Key::Ctrl('u')], Command::HalfPageUp, "half a page up"),
    bind(&[Key::Char('h')], Command::Left, "scroll left (wrap off)"),
    bind(&[Key::Char('l')], Command::Right, "scroll right (wrap off)"),
    bind(
        &[Key::Char('o')],
        Command::Inspect,
        "inspect the first call shown (its whole arguments and output), else the position's event",
    ),
];

/// Columns moved by h/l.
const SIDE_STEP: usize = 8;

/// What the pane remembers between frames.
#[derive(Clone, Debug)]
pub struct BufferPane {
    pub channel: Channel,
    pub wrap: bool,
    pub scroll: Scroll,
    pub layout: BufferLayout,
    /// Sorted by start.
    pub highlights: Vec<Highlight>,
    /// Shown instead of the text: a tool detection's calls, the calls of a
    /// request without text, or the call a search hit is in.
    pub calls: Option<Calls>,
    /// Shown under a text too short to fill the pane: the request's calls.
    pub below: Option<Calls>,
    /// A search hit in a tool call or result (its event): the big pane
    /// shows the request's calls, scrolled to it, until the position moves.
    pub calls_hit: Option<usize>,
}

impl Default for BufferPane {
    fn default() -> BufferPane {
        BufferPane {
            channel: Channel::Reasoning,
            wrap: true,
            scroll: Scroll::default(),
            layout: BufferLayout::default(),
            highlights: Vec::new(),
            calls: None,
            below: None,
            calls_hit: None,
        }
    }
}

impl BufferPane {
    /// Scrolls so char `at` is near the top.
    pub fn reveal(&mut self, at: usize) {
        let row = self.layout.row_of(at);
        self.scroll.follow = false;
        self.scroll.top = row.saturating_sub(2);
    }

    /// Scrolls by `delta` rows in a pane `height` rows high over `rows` rows;
    /// back at the bottom it follows the text again, like `less +F`.
    pub fn scroll_by(&mut self, delta: isize, rows: usize, height: usize) {
        let last_page = rows.saturating_sub(height);
        let top = self
            .scroll
            .first_row(rows, height)
            .saturating_add_signed(delta)
            .min(last_page);
        self.scroll.top = top;
        self.scroll.follow = top >= last_page;
    }
}

impl Component for BufferPane {
    const TITLE: &'static str = "buffer pane";
    const KEYS: &'static [Binding] = KEYS;

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        match cmd {
            Command::Left => self.scroll.left = self.scroll.left.saturating_sub(SIDE_STEP),
            Command::Right if !self.wrap => self.scroll.left += SIDE_STEP,
            Command::Right => {}
            // As in less: the bottom follows the text again (live: the stream).
            Command::Bottom => {
                self.scroll.follow = true;
                if cx.app.live.is_some() {
                    out.push(Intent::Follow);
                }
            }
            Command::Up | Command::Down | Command::PageUp | Command::PageDown => self.scroll(cmd, cx, out),
            Command::HalfPageUp | Command::HalfPageDown | Command::Top => self.scroll(cmd, cx, out),
            // The calls' "more rows" say `o`: it shows the first call whole.
            Command::Inspect => {
                let width = Areas::inner(cx.area).0;
                let theme = &cx.app.theme;
                let first = match (&self.calls, &self.below) {
                    (Some(c), _) => calls::call_at_row(c, self.scroll.top, width, theme),
                    (None, Some(c)) => c.calls.first().map(|c| c.event),
                    (None, None) => None,
                };
                out.push(first.map_or(Intent::Inspect, Intent::InspectCall));
            }
            _ => return Handled::NotConsumed,
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        let app = cx.app;
        let theme = &app.theme;
        let search = app.search.pattern.as_ref();
        let area = cx.area;
        if let Some(calls) = &self.calls {
            let title = format!(" {} · {} ", calls.title, count(calls.calls.len(), "call"));
            calls::render(frame, area, (calls, self.scroll.top), search, cx.block(title), theme);
            return;
        }
        // A short text leaves room: the request's calls go under it.
        let area = match &self.below {
            Some(calls) => {
                let text_rows = self.layout.rows().len() as u16 + 2;
                let [text, rest] =
                    Layout::vertical([Constraint::Length(text_rows.max(3)), Constraint::Min(3)]).areas(area);
                let title = format!(" {} · {} ", calls.title, count(calls.calls.len(), "call"));
                calls::render(frame, rest, (calls, 0), search, cx.block(title), theme);
                text
            }
            None => area,
        };
        let engine = app.tape.cursor();
        let buffers = engine.buffers();
        let buf = if self.channel == Channel::Content {
            &buffers.content
        } else {
            &buffers.reasoning
        };
        let request = match engine.request_start() {
            Some(e) => format!(" · request from event {e}"),
            None => String::new(),
        };
        let title = format!(" {}{request} · {} ", self.channel.as_str(), count(buf.len(), "char"));
        let mut flags = Vec::new();
        if !self.wrap {
            flags.push("no wrap".to_string());
        }
        // Nothing read yet (tail waiting for a file or a session): nothing is
        // followed, so nothing says so.
        if !app.tape.is_empty() {
            flags.push(if self.scroll.follow { "following" } else { "scrolled" }.to_string());
        }
        let mut block = cx.block(title);
        if !flags.is_empty() {
            block = block.title_top(Line::from(format!(" {} ", flags.join(" · "))).right_aligned());
        }
        // Nothing to show: say why rather than a blank pane.
        if let Some(why) = empty_state(app) {
            let line = Line::styled(format!(" {why}"), theme.dim);
            // Wrapped: a narrow pane (or a long reason) would cut it.
            let said = Paragraph::new(line).block(block).wrap(Wrap { trim: false });
            frame.render_widget(said, area);
            return;
        }
        // At a turn guard's or a tool loop's detection, a request with no
        // text on this channel (and no calls under it) was a blank pane:
        // say so, and where to look.
        let at_a_guard = app
            .chosen
            .and_then(|i| app.tape.detections().get(i))
            .is_some_and(|d| matches!(d.channel, Channel::Tools | Channel::Turns));
        if at_a_guard && buf.is_empty() && self.below.is_none() {
            let other = if self.channel == Channel::Content {
                "reasoning"
            } else {
                "content"
            };
            let why = format!(
                " no {} text in this request (c shows {other}; the detectors pane has the numbers)",
                self.channel.as_str()
            );
            let said = Paragraph::new(Line::styled(why, theme.dim))
                .block(block)
                .wrap(Wrap { trim: false });
            frame.render_widget(said, area);
            return;
        }
        let view = BufferView {
            buf,
            layout: &self.layout,
            scroll: self.scroll,
            wrap: self.wrap,
            highlights: &self.highlights,
            runs: &app.runs,
            block,
        };
        render(frame, area, view, theme);
    }
}

/// What the big pane says when the stream has no event to show: still
/// reading, waiting for a live one, or an input that held none (and why,
/// when that is known).
fn empty_state(app: &super::app::App) -> Option<String> {
    if !app.tape.is_empty() {
        return None;
    }
    Some(if let Some(e) = &app.read_error {
        format!("nothing shown: {e}")
    } else if app.live.is_some() {
        "no events yet: they show here as the stream is written".to_string()
    } else if app.loading {
        "reading…".to_string()
    } else if app.bad_lines() > 0 {
        format!(
            "no events: every line was bad ({}; :bad lists them)",
            count(app.bad_lines(), "bad line")
        )
    } else {
        "no events: the input is empty (or holds nothing loopscope shows)".to_string()
    })
}

impl PaneComponent for BufferPane {
    const PLACE: Place = Place {
        column: Column::Main,
        wide: Share::new(100, 100),
        narrow: Share::new(50, 36),
    };
}

impl BufferPane {
    /// Scrolls the text (or the calls shown instead); scrolling up a live
    /// stream stops following it (`F` or `G` resumes).
    fn scroll(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) {
        let (width, height) = Areas::inner(cx.area);
        let height = height.max(1);
        let rows = match &self.calls {
            Some(c) => calls::rows(c, width, &cx.app.theme).len(),
            None => self.layout.rows().len(),
        };
        let delta = scroll_delta(cmd, height as isize);
        self.scroll_by(delta, rows, height);
        if delta < 0 {
            out.push(Intent::StopFollowing);
        }
    }
}

/// What a highlighted range means; drawn in ascending order, so later kinds
/// are patched over earlier ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    ChunkExtent,
    CopyA,
    CopyB,
    CopyFirst,
    ChunkStart,
    Search,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Highlight {
    pub span: Span,
    pub mark: Mark,
}

impl Mark {
    fn style(self, t: &Theme) -> Style {
        match self {
            Mark::ChunkExtent => t.chunk_extent,
            Mark::CopyA => t.copy_a,
            Mark::CopyB => t.copy_b,
            Mark::CopyFirst => t.copy_first,
            Mark::ChunkStart => t.chunk_start,
            Mark::Search => t.search,
        }
    }
}

/// Scroll position of the pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scroll {
    /// Keep the last row in view as the buffer grows.
    pub follow: bool,
    pub top: usize,
    /// Columns skipped on the left when wrapping is off.
    pub left: usize,
}

impl Default for Scroll {
    fn default() -> Scroll {
        Scroll {
            follow: true,
            top: 0,
            left: 0,
        }
    }
}

impl Scroll {
    /// The first visible row for a pane of `height` rows over `rows` rows.
    pub fn first_row(&self, rows: usize, height: usize) -> usize {
        let last_page = rows.saturating_sub(height);
        if self.follow {
            last_page
        } else {
            self.top.min(last_page)
        }
    }
}

/// Everything the pane draws, borrowed from the app state.
pub struct BufferView<'a> {
    pub buf: &'a TextBuffer,
    pub layout: &'a BufferLayout,
    pub scroll: Scroll,
    pub wrap: bool,
    /// Sorted by start.
    pub highlights: &'a [Highlight],
    pub runs: &'a [CheckpointRun],
    pub block: Block<'a>,
}

pub fn render(frame: &mut Frame, area: Rect, view: BufferView<'_>, theme: &Theme) {
    let inner = view.block.inner(area);
    let (width, height) = (inner.width as usize, inner.height as usize);
    let rows = view.layout.rows();
    let first = view.scroll.first_row(rows.len(), height);
    let longest = view.highlights.iter().map(|h| h.span.len()).max().unwrap_or(0);
    let lines: Vec<Line> = rows[first..(first + height).min(rows.len())]
        .iter()
        .map(|row| match *row {
            Row::Marker { at } => marker_line(at, view.runs, width, theme),
            Row::Text { start, end } => {
                let left = if view.wrap { 0 } else { view.scroll.left };
                text_line(view.buf, start, end, left, width, view.highlights, longest, theme)
            }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines).block(view.block), area);
}

/// One text row, styled by the highlights covering each grapheme.
#[allow(clippy::too_many_arguments)]
fn text_line<'a>(
    buf: &TextBuffer,
    start: usize,
    end: usize,
    left: usize,
    width: usize,
    highlights: &[Highlight],
    longest: usize,
    theme: &Theme,
) -> Line<'a> {
    // Highlights that may touch [start, end): sorted by start, none longer than `longest`.
    let hi = highlights.partition_point(|h| h.span.start < end);
    let lo = highlights[..hi].partition_point(|h| h.span.start + longest <= start);
    let mut near: Vec<&Highlight> = highlights[lo..hi].iter().filter(|h| h.span.end > start).collect();
    near.sort_by_key(|h| h.mark);
    let text = buf.slice(start..end);
    let mut spans: Vec<TextSpan> = Vec::new();
    let (mut run, mut run_style) = (String::new(), theme.text);
    let (mut off, mut col) = (start, 0);
    for g in text.graphemes(true) {
        let (shown, w) = cell(g, col);
        let style = near
            .iter()
            .filter(|h| h.span.start <= off && off < h.span.end)
            .fold(theme.text, |s, h| s.patch(h.mark.style(theme)));
        off += g.chars().count();
        let from = col;
        col += w;
        if col <= left {
            continue;
        }
        if from < left || col - left > width {
            break; // a wide char cut by the left edge or the right edge
        }
        if style != run_style && !run.is_empty() {
            spans.push(TextSpan::styled(std::mem::take(&mut run), run_style));
        }
        run_style = style;
        run.push_str(&shown);
    }
    if !run.is_empty() {
        spans.push(TextSpan::styled(run, run_style));
    }
    Line::from(spans)
}

/// "── ⚑ 3000 · block-cycle FIRED · list-cycle clear ───"
fn marker_line<'a>(at: usize, runs: &[CheckpointRun], width: usize, theme: &Theme) -> Line<'a> {
    let here: Vec<&CheckpointRun> = runs.iter().filter(|r| r.checkpoint == at).collect();
    let fired = here.iter().any(|r| r.fired);
    let style = if fired { theme.marker_fired } else { theme.marker };
    let mut label = format!("── ⚑ {at}");
    if let Some(r) = here.first() {
        if r.at_char != at {
            label += &format!(" (ran at {}, event {})", r.at_char, r.event);
        } else {
            label += &format!(" (event {})", r.event);
        }
    }
    for r in &here {
        label += &format!(" · {} {}", r.detector, if r.fired { "FIRED" } else { "clear" });
    }
    label.push(' ');
    let used = unicode_width::UnicodeWidthStr::width(label.as_str());
    if used < width {
        label += &"─".repeat(width - used);
    }
    Line::from(TextSpan::styled(super::cells::label(&label, width), style))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrolling_up_leaves_the_bottom_and_coming_back_follows_again() {
        let mut p = BufferPane::default();
        assert!(p.scroll.follow);
        p.scroll_by(-3, 100, 10);
        assert_eq!((p.scroll.top, p.scroll.follow), (87, false));
        p.scroll_by(2, 100, 10);
        assert!(!p.scroll.follow);
        p.scroll_by(1, 100, 10);
        assert!(p.scroll.follow, "back at the last page");
        p.scroll_by(isize::MIN / 2, 100, 10);
        assert_eq!(p.scroll.top, 0);
        p.scroll_by(-1, 5, 10);
        assert!(p.scroll.follow, "a buffer shorter than the pane is all in view");
    }
}
