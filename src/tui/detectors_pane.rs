//! The detectors pane: every detector of the profile with its live status,
//! and below the list the selected one's details — its detection's numbers,
//! what repeated, what would have had to change, its parameters and rule.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::cells::{label, sanitize};
use super::theme::Theme;
use crate::config::Configured;
use crate::detect::{Detection, DetectorState, Status};

pub struct DetectorsView<'a> {
    pub states: &'a [DetectorState],
    pub configured: &'a [Configured],
    pub selected: usize,
    /// The selected detector's latest detection up to the cursor.
    pub detection: Option<&'a Detection>,
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

pub fn render(frame: &mut Frame, area: Rect, view: DetectorsView<'_>, theme: &Theme) {
    let inner = view.block.inner(area);
    frame.render_widget(view.block, area);
    let list_height = (view.states.len() as u16).min(inner.height / 2).max(1);
    let [list, details] = Layout::vertical([Constraint::Length(list_height), Constraint::Min(0)]).areas(inner);
    let width = inner.width as usize;
    let id_width = view.states.iter().map(|s| s.id.len()).max().unwrap_or(0);
    let top = view.selected.saturating_sub(list_height as usize - 1);
    let rows: Vec<Line> = view
        .states
        .iter()
        .enumerate()
        .skip(top)
        .take(list_height as usize)
        .map(|(i, s)| {
            let style = status_style(&s.status, theme);
            let progress = match &s.status {
                Status::Watching { current, threshold, .. } => format!("{current}/{threshold}"),
                _ => String::new(),
            };
            let head = format!("{} {:<id_width$} ", if i == view.selected { "▸" } else { " " }, s.id);
            let badge = format!("{:<8}", format!("{} {progress}", s.status.label()).trim_end());
            let rest = width.saturating_sub(head.chars().count() + badge.chars().count() + 1);
            let mut line = Line::from(vec![
                Span::styled(head, if i == view.selected { theme.selected } else { theme.text }),
                Span::styled(badge, style),
                Span::raw(" "),
                Span::styled(label(&s.status.summary(), rest), theme.dim),
            ]);
            if i == view.selected {
                line = line.style(theme.selected);
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(rows), list);
    if let (Some(state), Some(conf)) = (view.states.get(view.selected), view.configured.get(view.selected)) {
        let text = details_lines(state, conf, view.detection, width, theme);
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), details);
    }
}

fn details_lines<'a>(
    state: &DetectorState,
    conf: &Configured,
    det: Option<&Detection>,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let mut out = vec![Line::from(Span::styled("─".repeat(width), theme.border))];
    let style = status_style(&state.status, theme);
    let head = |s: String| Line::from(Span::styled(s, style));
    match (&state.status, det) {
        (Status::Fired { event, .. } | Status::Latched { event, .. }, Some(d)) => {
            let mut where_ = format!("{} at event {event}", state.status.label());
            if let Some(cp) = d.checkpoint {
                where_ += &format!(" · checkpoint {cp}");
            }
            if let Some(c) = d.at_char {
                where_ += &format!(" · {}@{c}", d.channel.as_str());
            }
            if let Status::Latched { by, .. } = state.status {
                where_ += &format!(" · stopped by {by}");
            }
            out.push(head(where_));
            out.push(Line::from(sanitize(&d.reason)));
            let mut numbers = Vec::new();
            if let Some(p) = d.period {
                numbers.push(format!("period {p}"));
            }
            if let Some(m) = d.matches.or(d.repeats) {
                let word = if d.matches.is_some() { "matches" } else { "repeats" };
                let needs = d.threshold.map_or(String::new(), |t| format!(" (needs {t})"));
                numbers.push(format!("{word} {m}{needs}"));
            }
            if let Some(a) = d.avg_distance {
                numbers.push(format!("avg distance {a:.1}"));
            }
            if !d.spans.is_empty() {
                numbers.push(format!("{} spans highlighted", d.spans.len()));
            }
            if !d.events.is_empty() {
                numbers.push(format!("{} events in the timeline", d.events.len()));
            }
            out.push(Line::from(numbers.join(" · ")));
            if let Some(r) = &d.repeated {
                out.push(Line::from(format!("repeated: {}", label(r, 400))));
            }
            if let Some(w) = d.what_would_change() {
                out.push(Line::from(Span::styled(w, theme.dim)));
            }
        }
        (status, _) => out.push(head(format!("{}: {}", status.label(), status.summary()))),
    }
    let params: Vec<String> = conf.params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    out.push(Line::from(Span::styled(
        format!("params: {}", params.join(" ")),
        theme.dim,
    )));
    out.push(Line::from(Span::styled(format!("rule: {}", conf.info.rule), theme.dim)));
    out
}
