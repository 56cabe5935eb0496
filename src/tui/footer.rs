//! The footer, the screen's bottom line, as in less, htop and vim: the line
//! being typed; else the latest message (what a key did, an error, the
//! followed file's condition), whole at any width; else key hints for the
//! focused pane and the app, generated from their bindings and always
//! ending in `? help`.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use ratatui::style::Modifier;
use unicode_width::UnicodeWidthStr;

use super::app::{App, Prompt};
use super::cells::{label_middle, sanitize};
use super::component::{Component, Context, Hint};
use super::keymap::{self, Binding, Command};
use super::theme::Theme;

/// Hints for what has the keys (the overlay, else the focused pane),
/// shown before the app's.
fn own_hints(app: &App) -> &'static [Hint] {
    match &app.overlay {
        Some(overlay) => overlay.hints(),
        None => app.focus.hints(),
    }
}

pub fn render(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if let Some(p) = &app.prompt {
        let cx = Context::new(app, area, true);
        p.render(frame, &cx);
        return;
    }
    let line = match message(app) {
        Some((text, style)) => Line::styled(label_middle(&text, area.width as usize), style),
        None => hints(app, area.width as usize, theme),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// A prompt's line after `sigil`, saying what Enter does.
pub(crate) fn prompt_line(p: &Prompt, sigil: &str, what: &str, width: usize, theme: &Theme) -> Line<'static> {
    let sigil = sigil.to_string();
    let chars: Vec<String> = p.text.chars().map(|c| sanitize(&c.to_string())).collect();
    let cell_width = |s: &String| s.width().max(1);
    // Scroll so the cursor (and a cell after it) fits.
    let room = width.saturating_sub(sigil.width() + 2).max(4);
    let mut first = 0;
    while chars[first..p.cursor.min(chars.len())]
        .iter()
        .map(cell_width)
        .sum::<usize>()
        + 1
        > room
    {
        first += 1;
    }
    let mut spans = vec![Span::styled(sigil, theme.key)];
    if first > 0 {
        spans.push(Span::styled("…", theme.dim));
    }
    let before: String = chars[first..p.cursor].concat();
    spans.push(Span::raw(before));
    let at = chars.get(p.cursor).cloned().unwrap_or_else(|| " ".to_string());
    spans.push(Span::styled(at, theme.key.add_modifier(Modifier::REVERSED)));
    if p.cursor + 1 < chars.len() {
        spans.push(Span::raw(chars[p.cursor + 1..].concat()));
    }
    let mut extra: Vec<Span> = Vec::new();
    if let Some(c) = &p.cycle {
        for (i, cand) in c.candidates.iter().enumerate() {
            let style = if c.at == Some(i) { theme.key } else { theme.dim };
            extra.push(Span::styled(format!("  {}", sanitize(cand)), style));
        }
    } else if let Some(h) = p.hint.as_ref().filter(|_| p.text.is_empty()) {
        extra.push(Span::styled(format!(" {}", sanitize(h)), theme.dim));
        extra.push(Span::styled("  (Tab or ↑: this value)", theme.dim));
    }
    extra.push(Span::styled(format!("   Enter {what} · Esc cancel"), theme.dim));
    // What follows the line is shown as far as it fits.
    let mut used: usize = spans.iter().map(|s| s.width()).sum();
    for s in extra {
        if used + s.width() > width {
            break;
        }
        used += s.width();
        spans.push(s);
    }
    Line::from(spans)
}

/// The message the bottom line shows: the latest one said, else a
/// standing condition: an input that showed nothing, the followed file's.
fn message(app: &App) -> Option<(String, ratatui::style::Style)> {
    if let Some(f) = &app.flash {
        let style = if f.text.starts_with('✗') {
            app.theme.error
        } else {
            app.theme.flash
        };
        return Some((f.text.clone(), style));
    }
    if let Some(e) = &app.read_error {
        return Some((format!("✗ {e}"), app.theme.error));
    }
    let news = app.live.as_ref()?.file.as_ref()?;
    Some((crate::tail::describe(news, &app.name), app.theme.watching))
}

/// The app's hinted keys the footer keeps first, in this order (the
/// others follow in keymap order).
const FIRST: &[Command] = &[
    Command::TogglePlay,
    Command::NextDetection,
    Command::FocusNext,
    Command::Detections,
    Command::Search,
    Command::CommandLine,
];

/// As many hints as fit; `q quit` and `? help` always close the line.
fn hints(app: &App, width: usize, theme: &Theme) -> Line<'static> {
    let hinted = |b: &'static Binding| b.hint.map(|h| (b.keys[0].label(), h));
    let tail: Vec<(String, &str)> = keymap::APP.iter().filter_map(hinted).collect();
    let mut body: Vec<(String, &str)> = own_hints(app).iter().map(|&(k, h)| (k.to_string(), h)).collect();
    if app.overlay.is_none() {
        let mut app_hints: Vec<&'static Binding> = [keymap::PLAYBACK, keymap::FINDINGS, keymap::VIEW]
            .iter()
            .flat_map(|s| s.iter())
            .filter(|b| b.hint.is_some())
            .collect();
        // The most needed first, so a narrow line keeps them (at 80
        // columns: play, the findings, and Tab, which reaches the panes).
        let rank = |b: &&Binding| FIRST.iter().position(|c| *c == b.command).unwrap_or(FIRST.len());
        app_hints.sort_by_key(rank);
        body.extend(app_hints.into_iter().filter_map(hinted));
    }
    let cost = |(k, h): &(String, &str)| k.chars().count() + h.chars().count() + 3;
    let mut room = width.saturating_sub(tail.iter().map(cost).sum());
    let mut spans = Vec::new();
    for hint in body.iter().chain(tail.iter()) {
        let is_tail = tail.contains(hint);
        if !is_tail {
            if cost(hint) > room {
                continue;
            }
            room -= cost(hint);
        }
        spans.push(Span::styled(hint.0.clone(), theme.key));
        spans.push(Span::styled(format!(" {}  ", hint.1), theme.dim));
    }
    Line::from(spans)
}
