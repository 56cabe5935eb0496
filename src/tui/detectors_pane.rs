//! The detectors pane: every detector of the profile with its live status,
//! and below the list the selected one's details — its detection's numbers,
//! what repeated, what would have had to change, its parameters and rule.
//! The details scroll; when a detection is shown they take most of the pane.

use crate::output::count;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::cells::{label, sanitize, wrap_line, wrap_text};
use super::component::{scroll_delta, Column, Component, Context, Handled, Hint, Intent, PaneComponent, Place, Share};
use super::keymap::{bind, Binding, Command, Key};
use super::layout::{focus_key, Areas, Pane};
use super::prompt::{Prompt, PromptKind};
use super::theme::Theme;
use crossterm::event::KeyCode as K;
use loopscope_core::config::Configured;
use loopscope_core::detect::params::{Kind, Value};
use loopscope_core::detect::{Detection, DetectorState, Status};

/// The parameter editor's commands.
const PARAM_NEXT: Command = Command::Own("param-next");
const PARAM_PREV: Command = Command::Own("param-prev");
const PARAM_UP: Command = Command::Own("param-up");
const PARAM_DOWN: Command = Command::Own("param-down");
const PARAM_EDIT: Command = Command::Own("param-edit");

/// The pane's keys.
pub const KEYS: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "next detector"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], Command::Up, "previous detector"),
    bind(&[Key::Char('g')], Command::Top, "first detector"),
    bind(&[Key::Char('G')], Command::Bottom, "last detector"),
    bind(
        &[Key::Code(K::PageDown), Key::Ctrl('d')],
        Command::PageDown,
        "scroll the details down",
    ),
    bind(
        &[Key::Code(K::PageUp), Key::Ctrl('u')],
        Command::PageUp,
        "scroll the details up",
    ),
    bind(
        &[Key::Code(K::Enter)],
        Command::Select,
        "go to this detector's detection (the latest shown, else its first)",
    ),
    bind(&[Key::Char('l')], PARAM_NEXT, "next parameter"),
    bind(&[Key::Char('h')], PARAM_PREV, "previous parameter"),
    bind(
        &[Key::Char('+')],
        PARAM_UP,
        "raise the parameter (a flag toggles) and re-run",
    ),
    bind(&[Key::Char('-')], PARAM_DOWN, "lower the parameter and re-run"),
    bind(
        &[Key::Char('=')],
        PARAM_EDIT,
        "type the parameter's value (the line opens empty; Tab or ↑ takes the current one)",
    ),
];

/// What the pane remembers between frames.
#[derive(Clone, Debug, Default)]
pub struct DetectorsPane {
    /// Index of the selected detector in profile order (the order of
    /// `App::states`; the rows are drawn in [`order`]).
    pub selected: usize,
    /// Rows of the details scrolled away.
    pub detail_scroll: usize,
    /// The parameter selected in the details (the editor's).
    pub param: usize,
    /// The user chose a detector here (j/k, g/G, `--select`): the pane
    /// stops following the finding until a detection is chosen.
    pub picked: bool,
}

/// How a detector's status ranks in the list: fired first, then the
/// detectors a fired one stopped (latched), then the rest.
fn rank(status: &Status) -> u8 {
    match status {
        Status::Fired { .. } => 0,
        Status::Latched { .. } => 1,
        _ => 2,
    }
}

/// The rows of the list, as indices into `states`: each compared run's
/// detectors together (`runs` gives each state's run), and within a run
/// the fired ones first — the finding is the first thing the pane shows,
/// even when it has room for one row — then the others, each group in
/// profile order.
pub fn order(states: &[DetectorState], runs: &[usize]) -> Vec<usize> {
    let run = |i: usize| runs.get(i).copied().unwrap_or(0);
    let mut rows: Vec<usize> = (0..states.len()).collect();
    // A stable sort keeps the profile order within each rank.
    rows.sort_by_key(|&i| (run(i), rank(&states[i].status)));
    rows
}

impl DetectorsPane {
    /// Moves the selection; the details start at their top again.
    pub fn select(&mut self, i: usize, count: usize) {
        let i = i.min(count.saturating_sub(1));
        if i != self.selected {
            self.detail_scroll = 0;
            self.param = 0;
        }
        self.selected = i;
    }

    /// Scrolls the details by `delta` rows, within `rows` rows shown `height` at a time.
    pub fn scroll_details(&mut self, delta: isize, rows: usize, height: usize) {
        let last = rows.saturating_sub(height);
        self.detail_scroll = self.detail_scroll.min(last).saturating_add_signed(delta).min(last);
    }
}

impl Component for DetectorsPane {
    const TITLE: &'static str = "detectors pane";
    const KEYS: &'static [Binding] = KEYS;
    const HINTS: &'static [Hint] = &[("PgDn", "details"), ("h/l +/-", "param")];

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        let app = cx.app;
        // Editing a detector's parameters is choosing it: the selection
        // stays on it while its re-runs move the findings.
        if matches!(cmd, PARAM_NEXT | PARAM_PREV | PARAM_UP | PARAM_DOWN | PARAM_EDIT) {
            self.picked = true;
        }
        match cmd {
            Command::PageUp | Command::PageDown => self.page_details(cmd == Command::PageDown, cx),
            Command::Select => {
                let id = app.states.get(self.selected).map(|s| s.id);
                let ds = app.tape.detections();
                let shown = app
                    .detection_shown_for(self.selected)
                    .and_then(|d| ds.iter().position(|x| x == d));
                match shown.or_else(|| ds.iter().position(|d| Some(d.detector) == id)) {
                    Some(i) => out.push(Intent::GoToDetection(i)),
                    None => out.push(Intent::Flash("this detector does not fire in the stream".into())),
                }
            }
            PARAM_NEXT | PARAM_PREV => {
                let n = app.configured.get(self.selected).map_or(0, |c| c.info.params.len());
                let p = self.param.min(n.saturating_sub(1));
                self.param = if cmd == PARAM_NEXT {
                    (p + 1).min(n.saturating_sub(1))
                } else {
                    p.saturating_sub(1)
                };
            }
            PARAM_UP => out.push(Intent::StepParam(1)),
            PARAM_DOWN => out.push(Intent::StepParam(-1)),
            PARAM_EDIT => {
                if let Some((id, name, value, _)) = self.selected_param(&app.configured) {
                    let kind = PromptKind::Param {
                        target: format!("{id}.{name}"),
                    };
                    out.push(Intent::Prompt(Prompt::new(kind, Some(value.to_string()))));
                }
            }
            Command::Up
            | Command::Down
            | Command::HalfPageUp
            | Command::HalfPageDown
            | Command::Top
            | Command::Bottom => {
                // The selection moves over the rows as drawn (fired first).
                let rows = order(&app.states, &app.state_runs);
                let n = rows.len();
                let page = Areas::inner(cx.area).1.max(1) as isize;
                let at = rows.iter().position(|&i| i == self.selected).unwrap_or(0);
                let to = match cmd {
                    Command::Top => 0,
                    Command::Bottom => n.saturating_sub(1),
                    _ => at
                        .saturating_add_signed(scroll_delta(cmd, page))
                        .min(n.saturating_sub(1)),
                };
                if let Some(&i) = rows.get(to) {
                    self.select(i, n);
                }
                self.picked = true;
                out.push(Intent::DetectorSelected);
            }
            _ => return Handled::NotConsumed,
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        let app = cx.app;
        let view = DetectorsView {
            pane: self,
            states: &app.states,
            configured: &app.configured,
            runs: &app.state_runs,
            headers: &app.run_labels(),
            comparison: &app.compare_headers(),
            rechunk_note: app.rechunk_note(),
            detection: app.detection_shown_for(self.selected),
            focus_key: (!cx.focused).then(|| focus_key(app.focus, Pane::Detectors)),
            block: cx.block(format!(" detectors · {} ", app.profile_label())),
        };
        render(frame, cx.area, view, &app.theme);
    }
}

impl PaneComponent for DetectorsPane {
    const PLACE: Place = Place {
        column: Column::Side,
        wide: Share::new(55, 65),
        narrow: Share::new(28, 42),
    };
}

impl DetectorsPane {
    /// PgDn/PgUp: the details scroll by their height less a row.
    fn page_details(&mut self, down: bool, cx: &Context) {
        let app = cx.app;
        let (width, page) = Areas::inner(cx.area);
        let page = page.max(1);
        let inner = Rect::new(0, 0, width as u16, page as u16);
        let shown = app.detection_shown_for(self.selected);
        let (_, details) = split(inner, app.states.len(), shown.is_some());
        let (Some(state), Some(conf)) = (app.states.get(self.selected), app.configured.get(self.selected)) else {
            return;
        };
        let rows = detail_rows(state, conf, shown, self.param, width, &app.theme).len();
        let height = details.height as usize;
        let step = height.saturating_sub(1).max(1) as isize;
        self.scroll_details(if down { step } else { -step }, rows, height);
    }

    /// The parameter the editor has selected (`ID`, `PARAM`), its value and kind.
    pub fn selected_param(&self, configured: &[Configured]) -> Option<(&'static str, &'static str, Value, Kind)> {
        let conf = configured.get(self.selected)?;
        let n = conf.info.params.len();
        if n == 0 {
            return None;
        }
        let k = self.param.min(n - 1);
        let spec = &conf.info.params[k];
        let value = conf.params.iter().nth(k)?.1.clone();
        Some((conf.info.id, spec.name, value, spec.kind))
    }
}

pub struct DetectorsView<'a> {
    pub pane: &'a DetectorsPane,
    pub states: &'a [DetectorState],
    pub configured: &'a [Configured],
    /// When profiles are compared: each state's run, a header per run (its
    /// profile), and the comparison (each profile's first detection and
    /// what streamed after it), shown above the details.
    pub runs: &'a [usize],
    pub headers: &'a [String],
    pub comparison: &'a [String],
    /// Under re-chunking: how the selected detector's verdict moved.
    pub rechunk_note: Option<String>,
    /// The detection shown for the selected detector.
    pub detection: Option<&'a Detection>,
    /// While another pane has the focus: the key that focuses this one
    /// (its scrolling keys act on the focused pane).
    pub focus_key: Option<String>,
    pub block: Block<'a>,
}

pub fn status_style(status: &Status, theme: &Theme) -> Style {
    match status {
        Status::Idle { .. } => theme.idle,
        Status::Watching { .. } => theme.watching,
        Status::Clear { .. } => theme.clear,
        Status::Fired { .. } => theme.fired,
        Status::Latched { .. } => theme.latched,
    }
}

/// How the pane's inner area is split between the list and the details.
pub fn split(inner: Rect, detectors: usize, showing_detection: bool) -> (Rect, Rect) {
    // A shown detection's details matter more than the other detectors'
    // names: the list keeps a few rows around the selection.
    let share = if showing_detection {
        inner.height / 4
    } else {
        inner.height / 2
    };
    let list_height = (detectors as u16).min(share.max(1));
    let [list, details] = Layout::vertical([Constraint::Length(list_height), Constraint::Min(0)]).areas(inner);
    (list, details)
}

pub fn render(frame: &mut Frame, area: Rect, view: DetectorsView<'_>, theme: &Theme) {
    let inner = view.block.inner(area);
    frame.render_widget(view.block, area);
    let rows = view.states.len() + if view.headers.len() > 1 { view.headers.len() } else { 0 };
    let (list, details) = split(inner, rows, view.detection.is_some());
    let width = inner.width as usize;
    let list_height = list.height as usize;
    let selected = view.pane.selected;
    let id_width = view.states.iter().map(|s| s.id.len()).max().unwrap_or(0);
    // Rows: a header before each run's detectors when comparing.
    let mut all: Vec<(Line, Option<usize>)> = Vec::new();
    let mut last_run = None;
    for i in order(view.states, view.runs) {
        let s = &view.states[i];
        let run = view.runs.get(i).copied().unwrap_or(0);
        if view.headers.len() > 1 && last_run != Some(run) {
            let head = view.headers.get(run).cloned().unwrap_or_default();
            all.push((
                Line::styled(label(&format!("■ {head}"), width), theme.run_style(run)),
                None,
            ));
        }
        last_run = Some(run);
        let style = status_style(&s.status, theme);
        let progress = match &s.status {
            Status::Watching { current, threshold, .. } => format!("{current}/{threshold}"),
            _ => String::new(),
        };
        let head = format!("{} {:<id_width$} ", if i == selected { "▸" } else { " " }, s.id);
        let badge = format!("{:<8}", format!("{} {progress}", s.status.label()).trim_end());
        let rest = width.saturating_sub(head.chars().count() + badge.chars().count() + 1);
        let mut line = Line::from(vec![
            Span::styled(head, if i == selected { theme.selected } else { theme.text }),
            Span::styled(badge, style),
            Span::raw(" "),
            Span::styled(
                label(
                    &crate::output::distinguishing_first(&loopscope_core::detect::readable::readable(
                        &s.status.summary(),
                    )),
                    rest,
                ),
                theme.dim,
            ),
        ]);
        if i == selected {
            line = super::cells::selected_line(line, theme.selected);
        }
        all.push((line, Some(i)));
    }
    let at = all.iter().position(|(_, i)| *i == Some(selected)).unwrap_or(0);
    let top = at.saturating_sub(list_height.saturating_sub(1));
    let rows: Vec<Line> = all.into_iter().skip(top).take(list_height).map(|(l, _)| l).collect();
    frame.render_widget(Paragraph::new(rows), list);
    if let (Some(state), Some(conf)) = (view.states.get(selected), view.configured.get(selected)) {
        let mut lines = detail_rows(state, conf, view.detection, view.pane.param, width, theme);
        if let Some(note) = &view.rechunk_note {
            let mut note_rows = Vec::new();
            wrap_text(note, theme.watching, width, &mut note_rows);
            lines.splice(1..1, note_rows);
        }
        if !view.comparison.is_empty() {
            let mut top = vec![lines.remove(0)];
            for (k, c) in view.comparison.iter().enumerate() {
                wrap_text(&format!("■ {c}"), theme.run_style(k), width, &mut top);
            }
            top.append(&mut lines);
            lines = top;
        }
        let height = details.height as usize;
        let lines_len = lines.len();
        let first = view.pane.detail_scroll.min(lines_len.saturating_sub(height));
        let mut shown: Vec<Line> = lines.into_iter().skip(first).take(height).collect();
        // Say that there is more, and which way, on the rule and the last row.
        // PgUp/PgDn act on the focused pane: unfocused, the hint names
        // the key that brings the focus here first.
        let keys = |page: &str| match &view.focus_key {
            None if page == "PgDn" => "PgDn, z zooms".to_string(),
            None => page.to_string(),
            Some(focus) => format!("{focus}, then {page}"),
        };
        if first > 0 {
            if let Some(rule) = shown.first_mut() {
                let more = count(first, "more row");
                *rule = Line::styled(format!("▲ {more} ({})", keys("PgUp")), theme.dim);
            }
        }
        let below = lines_len.saturating_sub(first + height);
        if below > 0 && height > 1 {
            if let Some(last) = shown.last_mut() {
                let more = count(below + 1, "more row");
                *last = Line::styled(format!("▼ {more} ({})", keys("PgDn")), theme.dim);
            }
        }
        frame.render_widget(Paragraph::new(shown), details);
    }
}

/// The details as rows of the pane's width, a rule first.
pub fn detail_rows(
    state: &DetectorState,
    conf: &Configured,
    det: Option<&Detection>,
    param: usize,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(Span::styled("─".repeat(width), theme.border))];
    let style = status_style(&state.status, theme);
    let mut add = |text: &str, style: Style| wrap_text(text, style, width, &mut out);
    match (&state.status, det) {
        (Status::Fired { .. } | Status::Latched { .. }, Some(d)) => {
            let mut where_ = format!("{} at event {}", state.status.label(), d.event);
            if let Some(cp) = d.checkpoint {
                where_ += &format!(" · checkpoint {cp}");
            }
            if let Some(c) = d.at_char {
                where_ += &format!(" · {}@{c}", d.channel.as_str());
            }
            if let Some(o) = d.onset {
                where_ += &format!(" · onset {o}");
            }
            if let Status::Latched { by, .. } = state.status {
                where_ += &format!(" · stopped by {by}");
            }
            add(&where_, style);
            add(&d.readable_reason(), theme.text);
            let mut numbers = Vec::new();
            if let Some(p) = d.period {
                numbers.push(format!("period {p}"));
            }
            if let Some(m) = d.matches.or(d.repeats) {
                // A budget's count is what was spent, against its limit.
                let budget = loopscope_core::detect::BUDGETS.contains(&d.detector);
                let word = match (d.matches.is_some(), budget) {
                    (true, _) => "matches",
                    (false, true) => "spent",
                    (false, false) => "repeats",
                };
                let needs = d.threshold.map_or(String::new(), |t| {
                    format!(" ({} {t})", if budget { "limit" } else { "needs" })
                });
                numbers.push(format!("{word} {m}{needs}"));
            }
            if let Some(a) = d.avg_distance {
                numbers.push(format!("avg distance {a:.1}"));
            }
            if !d.spans.is_empty() {
                numbers.push(format!("{} highlighted", count(d.spans.len(), "span")));
            }
            if !d.events.is_empty() {
                numbers.push(format!("{} in the timeline", count(d.events.len(), "event")));
            }
            add(&numbers.join(" · "), theme.text);
            if let Some(r) = &d.repeated {
                let r = loopscope_core::detect::readable::call_text(r).unwrap_or_else(|| r.clone());
                add(&format!("repeated: {}", sanitize(&label(&r, 2000))), theme.text);
            }
            if let Some(w) = d.what_would_change() {
                add(&w, theme.dim);
            }
        }
        (status, _) => add(&format!("{}: {}", status.label(), status.summary()), style),
    }
    // The parameters, the editor's one marked (h/l choose, +/- change, = type).
    let mut spans = vec![Span::styled("params:", theme.dim)];
    let n = conf.params.iter().count();
    for (k, (name, v)) in conf.params.iter().enumerate() {
        let style = if k == param.min(n.saturating_sub(1)) {
            theme.key
        } else {
            theme.dim
        };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(format!("{name}={v}"), style));
    }
    wrap_line(Line::from(spans), width, &mut out);
    wrap_text(&format!("rule: {}", conf.info.rule), theme.dim, width, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_details_scroll_within_their_rows() {
        let mut p = DetectorsPane::default();
        p.scroll_details(5, 20, 8);
        assert_eq!(p.detail_scroll, 5);
        p.scroll_details(100, 20, 8);
        assert_eq!(p.detail_scroll, 12, "no further than the last page");
        p.scroll_details(-3, 20, 8);
        assert_eq!(p.detail_scroll, 9);
        p.select(1, 3);
        assert_eq!(
            (p.selected, p.detail_scroll),
            (1, 0),
            "another detector starts at the top"
        );
        p.select(9, 3);
        assert_eq!(p.selected, 2);
    }

    #[test]
    fn a_shown_detection_gets_most_of_the_pane() {
        // (rows are detectors plus one header per compared profile)
        let inner = Rect::new(0, 0, 40, 20);
        let (list, details) = split(inner, 8, true);
        assert_eq!((list.height, details.height), (5, 15));
        let (list, _) = split(inner, 8, false);
        assert_eq!(list.height, 8);
    }
}
