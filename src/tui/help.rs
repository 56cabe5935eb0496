//! The help overlay, generated from the keymap.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use super::keymap::{keys_label, KEYMAP};
use super::theme::Theme;

pub fn render(frame: &mut Frame, area: Rect, theme: &Theme) {
    let mut lines: Vec<Line> = Vec::new();
    let mut group = "";
    let key_width = KEYMAP.iter().map(|b| keys_label(b).chars().count()).max().unwrap_or(0);
    for b in KEYMAP {
        if b.group != group {
            if !lines.is_empty() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::from(Span::styled(b.group.to_uppercase(), theme.title)));
            group = b.group;
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<key_width$}  ", keys_label(b)), theme.key),
            Span::raw(b.description),
        ]));
    }
    let col_width = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 2;
    // Two columns when one does not fit the height.
    let inner_height = area.height.saturating_sub(4);
    let columns: Vec<Vec<Line>> = if lines.len() as u16 > inner_height && area.width >= 2 * col_width + 4 {
        let half = lines.len().div_ceil(2);
        let split = (half..lines.len()).find(|&i| lines[i].width() == 0).unwrap_or(half);
        let right = lines.split_off(split + 1);
        vec![lines, right]
    } else {
        vec![lines]
    };
    let height = columns.iter().map(Vec::len).max().unwrap_or(0) as u16 + 2;
    let width = col_width * columns.len() as u16 + 2;
    let [popup] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(popup);
    let block = Block::bordered()
        .title(" loopscope keys — q / Esc / ? to close ")
        .border_style(theme.border_focus);
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let cols = Layout::horizontal(vec![Constraint::Length(col_width); columns.len()]).split(inner);
    for (lines, area) in columns.into_iter().zip(cols.iter()) {
        frame.render_widget(Paragraph::new(lines), *area);
    }
}
