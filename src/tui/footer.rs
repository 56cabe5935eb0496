//! The footer: key hints from the keymap, or the search prompt while typing.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::cells::sanitize;
use super::keymap::{keys_label, KEYMAP};
use super::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, search_input: Option<&str>, theme: &Theme) {
    let line = match search_input {
        Some(text) => Line::from(vec![
            Span::styled("/", theme.key),
            Span::raw(sanitize(text)),
            Span::styled("▏", theme.key),
            Span::styled("   Enter search · Esc cancel", theme.dim),
        ]),
        None => hints(area.width as usize, theme),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// As many hints as fit, in keymap order.
fn hints(width: usize, theme: &Theme) -> Line<'static> {
    let mut spans = Vec::new();
    let mut used = 0;
    for b in KEYMAP.iter().filter(|b| b.hint.is_some()) {
        let keys = keys_label(b);
        let hint = b.hint.unwrap_or_default();
        let w = keys.chars().count() + hint.chars().count() + 3;
        if used + w > width {
            break;
        }
        spans.push(Span::styled(keys, theme.key));
        spans.push(Span::styled(format!(" {hint}  "), theme.dim));
        used += w;
    }
    Line::from(spans)
}
