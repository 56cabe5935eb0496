//! The detections list (`d`): every detection of the stream, in order,
//! with its event and reason; Enter goes to the selected one.

use crate::output::{count, distinguishing_first};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use super::cells::label;
use super::component::{scroll_delta, Component, Context, Handled, Hint, Intent};
use super::inspector;
use super::keymap::{bind, Binding, Command, Key};
use super::layout::Pane;
use super::theme::Theme;
use crossterm::event::KeyCode as K;
use loopscope_core::detect::Detection;

pub const KEYS: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "next detection"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], Command::Up, "previous detection"),
    bind(
        &[Key::Code(K::PageDown), Key::Ctrl('d')],
        Command::PageDown,
        "a page down",
    ),
    bind(&[Key::Code(K::PageUp), Key::Ctrl('u')], Command::PageUp, "a page up"),
    bind(&[Key::Char('g')], Command::Top, "first detection"),
    bind(&[Key::Char('G')], Command::Bottom, "last detection"),
    bind(
        &[Key::Code(K::Enter)],
        Command::Select,
        "go to the detection and select it",
    ),
];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DetectionsList {
    pub selected: usize,
}

impl DetectionsList {
    pub fn move_by(&mut self, delta: isize, count: usize) {
        self.selected = self.selected.saturating_add_signed(delta).min(count.saturating_sub(1));
    }
}

impl Component for DetectionsList {
    const TITLE: &'static str = "detections list (d)";
    const KEYS: &'static [Binding] = KEYS;
    const HINTS: &'static [Hint] = &[("j/k", "move"), ("Enter", "go"), ("Esc", "close")];

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        match cmd {
            Command::Select => {
                out.push(Intent::CloseOverlay);
                // Its details are what the user came for.
                out.push(Intent::Focus(Pane::Detectors));
                out.push(Intent::GoToDetection(self.selected));
            }
            cmd => {
                let page = page(cx.area) as isize;
                self.move_by(scroll_delta(cmd, page), cx.app.tape.detections().len());
            }
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        render(frame, cx.area, self, cx.app.tape.detections(), &cx.app.theme);
    }
}

/// Rows of the list inside the overlay for a screen this size.
pub fn page(screen: Rect) -> usize {
    inspector::area(screen).height.saturating_sub(2) as usize
}

pub fn render(frame: &mut Frame, screen: Rect, list: &DetectionsList, detections: &[Detection], theme: &Theme) {
    let popup = inspector::area(screen);
    let block = Block::bordered().border_style(theme.border_focus).title(Line::styled(
        format!(
            " {} · Enter goes to one · Esc closes ",
            count(detections.len(), "detection")
        ),
        theme.title,
    ));
    let inner = block.inner(popup);
    let (width, height) = (inner.width as usize, inner.height as usize);
    let top = list
        .selected
        .saturating_sub(height / 2)
        .min(detections.len().saturating_sub(height));
    let id_width = detections.iter().map(|d| d.detector.len()).max().unwrap_or(0);
    let mut lines: Vec<Line> = detections
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(i, d)| {
            let head = format!("{:>6}  {:<id_width$}  ", d.event, d.detector);
            let rest = width.saturating_sub(head.chars().count());
            let line = Line::from(vec![
                Span::styled(head, theme.fired),
                Span::styled(label(&distinguishing_first(&d.readable_reason()), rest), theme.text),
            ]);
            if i == list.selected {
                super::cells::selected_line(line, theme.selected)
            } else {
                line
            }
        })
        .collect();
    if detections.is_empty() {
        lines.push(Line::styled("no detector fired in the stream (yet)", theme.dim));
    }
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selection_stays_on_a_detection() {
        let mut l = DetectionsList { selected: 2 };
        l.move_by(5, 4);
        assert_eq!(l.selected, 3);
        l.move_by(-9, 4);
        assert_eq!(l.selected, 0);
        l.move_by(1, 0);
        assert_eq!(l.selected, 0, "an empty list keeps 0");
    }
}
