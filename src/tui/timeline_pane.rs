//! The timeline pane: the timeline's entries with the current position
//! marked, a selection to move through them, and a filter (only
//! detections, only failed results, one tool, or a regex).

use crate::output::count;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use regex::Regex;

use super::cells::label;
use super::component::{scroll_delta, Column, Component, Context, Handled, Hint, Intent, PaneComponent, Place, Share};
use super::keymap::{bind, Binding, Command, Key};
use super::layout::Areas;
use super::search::smart_case;
use super::theme::Theme;
use super::timeline::{describe, Entry, EntryKind, Timeline};
use crossterm::event::KeyCode as K;
use loopscope_core::detect::Detection;
use loopscope_core::event::Event;

pub const KEYS: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "next row"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], Command::Up, "previous row"),
    bind(
        &[Key::Code(K::PageDown), Key::Ctrl('d')],
        Command::PageDown,
        "a page down",
    ),
    bind(&[Key::Code(K::PageUp), Key::Ctrl('u')], Command::PageUp, "a page up"),
    bind(&[Key::Char('g')], Command::Top, "first row"),
    bind(&[Key::Char('G')], Command::Bottom, "last row"),
    bind(
        &[Key::Code(K::Enter)],
        Command::Select,
        "a ⚠ row: select its detection; another: go there and inspect it",
    ),
    bind(
        &[Key::Char('o')],
        Command::Inspect,
        "inspect the row's event (arguments, result, text)",
    ),
];

/// Which entries the timeline shows.
#[derive(Clone, Debug)]
pub enum Filter {
    Detections,
    /// Tool calls whose result failed, and failed results.
    Failed,
    /// Calls of one tool.
    Tool(String),
    /// Rows whose text matches (smart case).
    Pattern(Regex),
}

impl Filter {
    /// What the user typed after `f`: `detections`, `failed`, `tool NAME`,
    /// or a regex. Empty text means no filter.
    pub fn parse(text: &str) -> Result<Option<Filter>, String> {
        let t = text.trim();
        Ok(Some(match t {
            "" => return Ok(None),
            "detections" | "detection" | "d" | "⚠" => Filter::Detections,
            "failed" | "errors" | "error" | "x" | "✗" => Filter::Failed,
            _ => match t.strip_prefix("tool ") {
                Some(name) if !name.trim().is_empty() => Filter::Tool(name.trim().to_string()),
                _ => Filter::Pattern(smart_case(t)?),
            },
        }))
    }

    pub fn keeps(&self, e: &Entry) -> bool {
        match (self, &e.kind) {
            (Filter::Detections, EntryKind::Detection { .. }) => true,
            (Filter::Failed, EntryKind::Call { result, .. }) => matches!(result, Some((_, false))),
            (Filter::Failed, EntryKind::Result { ok }) => !ok,
            (Filter::Tool(want), EntryKind::Call { name, .. }) => name == want,
            (Filter::Pattern(re), _) => re.is_match(&describe(e)),
            _ => false,
        }
    }

    /// The filter as it is typed after `f` (what [`Filter::parse`] reads).
    pub fn typed(&self) -> String {
        match self {
            Filter::Pattern(re) => re.as_str().to_string(),
            other => other.describe(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Filter::Detections => "detections".into(),
            Filter::Failed => "failed".into(),
            Filter::Tool(n) => format!("tool {n}"),
            Filter::Pattern(re) => format!("/{}/", re.as_str()),
        }
    }
}

/// What the pane remembers: the entries, the selected one, the filter.
#[derive(Clone, Debug, Default)]
pub struct TimelinePane {
    pub timeline: Timeline,
    /// The selected entry, while the user moves through the list.
    pub selected: Option<usize>,
    filter: Option<Filter>,
    /// With a filter: the entries it keeps, in order.
    kept: Vec<usize>,
    /// The first row drawn while the user moves a selection: the list
    /// stays put under the pointer (a click) and scrolls only when the
    /// selection leaves it, as lazygit's and gitui's lists do.
    top: Option<usize>,
}

impl TimelinePane {
    pub fn push(&mut self, index: usize, event: &Event) {
        let before = self.timeline.entries().len();
        self.timeline.push(index, event);
        self.refilter_from(before.saturating_sub(1));
    }

    pub fn push_detection(&mut self, d: &Detection, profile: Option<&str>) {
        let before = self.timeline.entries().len();
        self.timeline.push_detection(d, profile);
        self.refilter_from(before);
    }

    /// A note of loopscope's own before event `at` (`now following …`).
    pub fn push_note(&mut self, at: usize, text: String) {
        let before = self.timeline.entries().len();
        self.timeline.push_note(at, text);
        self.refilter_from(before);
    }

    /// Entries from `from` on changed (a merged text entry grows): judge them again.
    fn refilter_from(&mut self, from: usize) {
        let Some(filter) = &self.filter else { return };
        while self.kept.last().is_some_and(|&k| k >= from) {
            self.kept.pop();
        }
        let entries = self.timeline.entries();
        self.kept
            .extend((from..entries.len()).filter(|&i| filter.keeps(&entries[i])));
    }

    pub fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    pub fn set_filter(&mut self, filter: Option<Filter>) {
        self.filter = filter;
        self.kept.clear();
        self.refilter_from(0);
        // Keep the selection on a shown row.
        self.selected = self
            .selected
            .and_then(|e| self.row_at_or_before(e))
            .map(|r| self.entry(r));
    }

    /// Rows shown.
    pub fn rows(&self) -> usize {
        match self.filter {
            Some(_) => self.kept.len(),
            None => self.timeline.entries().len(),
        }
    }

    /// The entry shown at row `r`.
    pub fn entry(&self, r: usize) -> usize {
        match self.filter {
            Some(_) => self.kept[r],
            None => r,
        }
    }

    /// The last row showing entry `e` or one before it.
    fn row_at_or_before(&self, e: usize) -> Option<usize> {
        match self.filter {
            Some(_) => self.kept.partition_point(|&k| k <= e).checked_sub(1),
            None => Some(e.min(self.rows().checked_sub(1)?)),
        }
    }

    /// The row of the current position (the entry holding the last shown event).
    pub fn current_row(&self, cursor: usize) -> Option<usize> {
        self.row_at_or_before(self.timeline.current(cursor)?)
    }

    /// The row the pane centres on: the selection, else the position.
    fn focus_row(&self, cursor: usize) -> usize {
        self.selected
            .and_then(|e| self.row_at_or_before(e))
            .or(self.current_row(cursor))
            .unwrap_or(0)
    }

    /// The first row drawn in a pane `height` rows high: where the user's
    /// scrolling left it while the selection is in view, else the focus
    /// row (the selection, else the position) in the middle.
    pub fn top_row(&self, cursor: usize, height: usize) -> usize {
        let last_top = self.rows().saturating_sub(height);
        let selected = self.selected.and_then(|e| self.row_at_or_before(e));
        if let (Some(top), Some(row)) = (self.top, selected) {
            let top = top.min(last_top);
            if (top..top + height).contains(&row) {
                return top;
            }
        }
        self.focus_row(cursor).saturating_sub(height / 2).min(last_top)
    }

    /// Moves the selection by `delta` rows (from the position when nothing
    /// is selected) in a pane `height` rows high; the list scrolls only as
    /// far as it must to show it.
    pub fn move_by(&mut self, delta: isize, cursor: usize, height: usize) {
        let n = self.rows();
        if n == 0 {
            return;
        }
        let top = self.top_row(cursor, height);
        let row = self.focus_row(cursor).saturating_add_signed(delta).min(n - 1);
        self.selected = Some(self.entry(row));
        self.top = Some(if row < top {
            row
        } else if row >= top + height {
            row + 1 - height
        } else {
            top
        });
    }

    /// Selects row `row` of a pane `height` rows high (the first or the
    /// last, a click), the list scrolled as little as it takes.
    pub fn select_row(&mut self, row: usize, cursor: usize, height: usize) {
        if row < self.rows() {
            let delta = row as isize - self.focus_row(cursor) as isize;
            self.move_by(delta, cursor, height);
        }
    }

    pub fn selected_entry(&self) -> Option<&Entry> {
        self.timeline.entries().get(self.selected?)
    }

    /// A new stream (the file was truncated): no entries, same filter.
    pub fn clear(&mut self) {
        let judge = self.timeline.judge_params();
        self.timeline = Timeline::default();
        self.timeline.set_judge(judge);
        self.selected = None;
        self.kept.clear();
    }
}

impl Component for TimelinePane {
    const TITLE: &'static str = "timeline pane";
    const KEYS: &'static [Binding] = KEYS;
    const HINTS: &'static [Hint] = &[("Enter", "go"), ("o", "inspect")];

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        let (cursor, height) = (cx.app.cursor, Areas::inner(cx.area).1.max(1));
        match cmd {
            Command::Top => self.select_row(0, cursor, height),
            Command::Bottom => self.select_row(self.rows().saturating_sub(1), cursor, height),
            Command::Up | Command::Down | Command::PageUp | Command::PageDown => self.step(cmd, cx),
            Command::HalfPageUp | Command::HalfPageDown => self.step(cmd, cx),
            // A ⚠ row: its detection; another: go there and inspect it.
            Command::Select => match self.selected_entry().map(|e| (&e.kind, e.last)) {
                Some((EntryKind::Detection { index, .. }, _)) => out.push(Intent::GoToDetection(*index)),
                Some((_, last)) => out.push(Intent::InspectAt(last)),
                None => {}
            },
            Command::Inspect => out.push(Intent::Inspect),
            _ => return Handled::NotConsumed,
        }
        Handled::Consumed
    }

    /// A click on a row selects it; the list stays where it is, so the
    /// row stays under the pointer.
    fn on_click(&mut self, at: Position, cx: &Context, _out: &mut Vec<Intent>) -> Handled {
        let area = cx.area;
        if at.y > area.y && at.y + 1 < area.y + area.height {
            let top = self.top_row(cx.app.cursor, Areas::inner(area).1.max(1));
            let row = top + usize::from(at.y - area.y - 1);
            if row < self.rows() {
                self.selected = Some(self.entry(row));
                self.top = Some(top);
            }
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        let app = cx.app;
        let involved = match app.selected_detection() {
            Some(d) => d.events.as_slice(),
            None => &[],
        };
        let filter = self
            .filter()
            .map_or(String::new(), |f| format!("· only {} ", label(&f.describe(), 30)));
        let title = format!(
            " timeline · {} · {} {filter}",
            count(app.tape.len(), "event"),
            count(app.tape.detections().len(), "detection")
        );
        let view = TimelineView {
            pane: self,
            cursor: app.cursor,
            involved,
            block: cx.block(title),
        };
        render(frame, cx.area, view, &app.theme);
    }
}

impl PaneComponent for TimelinePane {
    const PLACE: Place = Place {
        column: Column::Side,
        wide: Share::new(45, 35),
        narrow: Share::new(22, 22),
    };
}

impl TimelinePane {
    /// Moves the selection by a row or a page.
    fn step(&mut self, cmd: Command, cx: &Context) {
        let height = Areas::inner(cx.area).1.max(1);
        self.move_by(scroll_delta(cmd, height as isize), cx.app.cursor, height);
    }
}

/// What the pane draws.
pub struct TimelineView<'a> {
    pub pane: &'a TimelinePane,
    pub cursor: usize,
    /// Events to mark as involved in the selected detection.
    pub involved: &'a [usize],
    pub block: Block<'a>,
}

pub fn render(frame: &mut Frame, area: Rect, view: TimelineView<'_>, theme: &Theme) {
    let inner = view.block.inner(area);
    let (width, height) = (inner.width as usize, inner.height as usize);
    let pane = view.pane;
    let entries = pane.timeline.entries();
    let current = pane.timeline.current(view.cursor);
    let top = pane.top_row(view.cursor, height);
    let mut lines: Vec<Line> = (top..pane.rows().min(top + height))
        .map(|r| {
            let i = pane.entry(r);
            let e = &entries[i];
            let mut style = if e.first >= view.cursor { theme.dim } else { theme.text };
            if let EntryKind::Detection { run, .. } = e.kind {
                if e.first < view.cursor {
                    style = theme.run_style(run);
                }
            }
            if !view.involved.is_empty() && e.involves(view.involved) {
                style = style.patch(theme.involved);
            }
            if pane.selected == Some(i) {
                style = style.patch(theme.selected);
            }
            let pointer = if Some(i) == current { "▶" } else { " " };
            let text = format!("{:>6} {}", e.first, describe(e));
            Line::from(vec![
                Span::styled(pointer, theme.here),
                Span::styled(label(&text, width.saturating_sub(1)), style),
            ])
        })
        .collect();
    if lines.is_empty() && pane.filter().is_some() {
        lines.push(Line::styled(
            "  no row passes the filter (f, then Enter, clears it)",
            theme.dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines).block(view.block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pane() -> TimelinePane {
        let mut p = TimelinePane::default();
        let events = [
            Event::request(),
            Event::tool_call("read", json!({"p": 1})),
            Event::tool_result(false),
            Event::reasoning("thinking"),
            Event::tool_call("grep", json!({"q": "x"})),
            Event::tool_result(true),
        ];
        for (i, e) in events.iter().enumerate() {
            p.push(i, e);
        }
        p
    }

    #[test]
    fn filters_keep_their_rows_as_the_stream_grows() {
        let mut p = pane();
        assert_eq!(p.rows(), 4);
        p.set_filter(Filter::parse("failed").unwrap());
        assert_eq!((p.rows(), p.entry(0)), (1, 1));
        p.set_filter(Filter::parse("tool grep").unwrap());
        assert_eq!((p.rows(), p.entry(0)), (1, 3));
        p.set_filter(Filter::parse("REASON").unwrap());
        assert_eq!(p.rows(), 0, "upper case in the pattern: case matters");
        p.set_filter(Filter::parse("reason").unwrap());
        assert_eq!(p.rows(), 1);
        // A merged text entry that grows is judged again; new rows join.
        p.push(6, &Event::reasoning(" more"));
        p.push(7, &Event::reasoning(" again"));
        assert_eq!(p.rows(), 2, "the merged entry is kept once");
        p.push(8, &Event::content("x"));
        assert_eq!(p.rows(), 2);
        p.set_filter(Filter::parse("").unwrap());
        assert_eq!(p.rows(), 6);
        assert!(Filter::parse("(").is_err());
    }

    /// Every kind of row (shown or still to come, detections of each
    /// compared run, rows involved in the selected detection, the current
    /// row), selected in every theme, reads: its text and background
    /// differ and contrast at least 4.5:1 (WCAG AA) as the pictures draw them.
    #[test]
    fn a_selected_row_is_readable_in_every_state_and_theme() {
        use crate::tui::colors::{contrast, drawn_colors};
        use ratatui::backend::TestBackend;
        use ratatui::Terminal;
        let mut p = pane();
        for run in 0..4 {
            let mut d = Detection::new("tool-repeat", 2 + run, loopscope_core::event::Channel::Tools, None);
            d.run = run;
            p.push_detection(&d, None);
        }
        let mut late = Detection::new("block-cycle", 5, loopscope_core::event::Channel::Reasoning, Some(10));
        late.run = 1;
        p.push_detection(&late, None);
        let rows = p.rows();
        for theme in [Theme::dark(), Theme::light(), Theme::mono()] {
            // Shown up to event 3: later rows are drawn as still to come;
            // the calls at 1 and 4 are involved in the selected detection.
            for cursor in [4, 6] {
                for r in 0..rows {
                    p.selected = Some(p.entry(r));
                    let mut t = Terminal::new(TestBackend::new(60, rows as u16 + 2)).unwrap();
                    t.draw(|f| {
                        let view = TimelineView {
                            pane: &p,
                            cursor,
                            involved: &[1, 4],
                            block: Block::bordered(),
                        };
                        render(f, f.area(), view, &theme)
                    })
                    .unwrap();
                    let buf = t.backend().buffer();
                    let y = 1 + r as u16;
                    let row: String = (2..59).map(|x| buf[(x, y)].symbol()).collect();
                    for x in 2..59 {
                        let cell = &buf[(x, y)];
                        let (fg, bg) = drawn_colors(cell, theme.canvas);
                        let c = contrast(&fg, &bg);
                        assert!(
                            fg != bg && c >= 4.5,
                            "{} theme, row {r} ({row:?}) at {x}, cursor {cursor}: {fg} on {bg}, contrast {c:.2}",
                            theme.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_selection_moves_over_shown_rows_only() {
        let mut p = pane();
        p.set_filter(Some(Filter::Pattern(Regex::new("✓|✗").unwrap())));
        p.move_by(1, 0, 10);
        assert_eq!(p.selected, Some(3), "from the first row to the second shown one");
        p.move_by(5, 0, 10);
        assert_eq!(p.selected, Some(3));
        p.move_by(-9, 0, 10);
        assert_eq!(p.selected, Some(1));
        assert_eq!(
            p.current_row(6),
            Some(1),
            "the position's row is the last shown one before it"
        );
    }
}
