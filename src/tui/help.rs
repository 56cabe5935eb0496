//! The help overlay, generated from every component's key bindings. It
//! scrolls; on a wide screen the sections flow into two columns.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use super::component::{scroll_delta, section, Component, Context, Handled, Hint, Intent};
use super::keymap::{self, bind, keys_label, Binding, Command, Key, Section};
use super::layout::Pane;
use super::prompt::{Prompt, PromptKind};
use super::theme::Theme;
use super::Overlay;
use crossterm::event::KeyCode as K;

/// The help's own commands.
const SEARCH: Command = Command::Own("help-search");
const CLEAR_SEARCH: Command = Command::Own("help-clear-search");

pub const KEYS: &[Binding] = &[
    bind(
        &[Key::Char('/')],
        SEARCH,
        "search the keys: only those whose key or description holds the text, as you type",
    ),
    bind(
        &[Key::Code(K::Esc)],
        CLEAR_SEARCH,
        "clear the search (without one: close)",
    ),
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "scroll down"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], Command::Up, "scroll up"),
    bind(
        &[Key::Code(K::PageDown), Key::Ctrl('d')],
        Command::PageDown,
        "a page down",
    ),
    bind(&[Key::Code(K::PageUp), Key::Ctrl('u')], Command::PageUp, "a page up"),
    bind(&[Key::Char('g')], Command::Top, "top"),
    bind(&[Key::Char('G')], Command::Bottom, "bottom"),
];

/// Every key of the app, by where it works: the app's own keys, each
/// pane's, each overlay's, the prompts', and last the help's own.
pub fn sections() -> Vec<Section> {
    let mut all = vec![
        Section {
            title: "playback (anywhere)",
            bindings: keymap::PLAYBACK,
        },
        Section {
            title: "findings (anywhere)",
            bindings: keymap::FINDINGS,
        },
        Section {
            title: "view (anywhere)",
            bindings: keymap::VIEW,
        },
        Section {
            title: "app",
            bindings: keymap::APP,
        },
        Section {
            title: "over any overlay",
            bindings: keymap::OVERLAY,
        },
    ];
    all.extend(Pane::ALL.iter().map(|p| p.section()));
    let help = section::<Help>();
    all.extend(Overlay::sections().into_iter().filter(|s| s.title != help.title));
    all.push(section::<Prompt>());
    all.push(help);
    all
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Help {
    pub scroll: usize,
    /// Only the keys that hold this text (`/`, as in k9s and lazygit).
    pub filter: String,
}

/// Whether binding `b` (of section `title`) holds `filter`, case ignored.
fn holds(title: &str, b: &Binding, filter: &str) -> bool {
    let f = filter.to_lowercase();
    [title, b.description, &keys_label(b)]
        .iter()
        .any(|t| t.to_lowercase().contains(&f))
}

/// The help's rows, section by section (a blank row between sections); a
/// description longer than `max_line` goes on under itself. With a
/// `filter`, only the bindings that hold it, in the sections that have some.
fn rows(theme: &Theme, max_line: usize, filter: &str) -> Vec<Vec<Line<'static>>> {
    let sections = sections();
    // The key column is as wide for every search, so rows do not jump.
    let key_width = sections
        .iter()
        .flat_map(|s| s.bindings.iter())
        .map(|b| keys_label(b).chars().count())
        .max()
        .unwrap_or(0);
    let indent = key_width + 4;
    let room = max_line.saturating_sub(indent).max(20);
    let mut out: Vec<Vec<Line<'static>>> = sections
        .iter()
        .filter_map(|s| {
            let kept: Vec<&Binding> = s.bindings.iter().filter(|b| holds(s.title, b, filter)).collect();
            if kept.is_empty() {
                return None;
            }
            let mut lines = vec![Line::from(Span::styled(s.title.to_uppercase(), theme.title))];
            for b in kept {
                let mut wrapped = Vec::new();
                super::cells::wrap_text(b.description, theme.text, room, &mut wrapped);
                for (k, mut line) in wrapped.into_iter().enumerate() {
                    let head = if k == 0 {
                        format!("  {:<key_width$}  ", keys_label(b))
                    } else {
                        " ".repeat(indent)
                    };
                    line.spans.insert(0, Span::styled(head, theme.key));
                    lines.push(line);
                }
            }
            Some(lines)
        })
        .collect();
    if out.is_empty() {
        let text = format!(
            "no key holds “{}” (Esc clears the search)",
            super::cells::sanitize(filter)
        );
        out.push(vec![Line::styled(text, theme.dim)]);
    }
    out
}

/// The popup and its columns for a screen this size.
fn geometry(area: Rect, theme: &Theme, filter: &str) -> (Rect, Vec<Vec<Line<'static>>>) {
    let sections = rows(theme, area.width.saturating_sub(4) as usize, filter);
    let col_width = sections.iter().flatten().map(Line::width).max().unwrap_or(0) as u16 + 2;
    let total: usize = sections.iter().map(|s| s.len() + 1).sum();
    let two = area.width >= 2 * col_width + 4 && total as u16 + 2 > area.height;
    let mut columns: Vec<Vec<Line>> = vec![Vec::new()];
    let half = total.div_ceil(2);
    for s in sections {
        let first = columns.len() == 1;
        let col = columns.last_mut().expect("a column");
        if two && first && !col.is_empty() && col.len() + s.len() / 2 >= half {
            columns.push(Vec::new());
        }
        let col = columns.last_mut().expect("a column");
        if !col.is_empty() {
            col.push(Line::raw(""));
        }
        col.extend(s);
    }
    let height = columns.iter().map(Vec::len).max().unwrap_or(0) as u16 + 2;
    let width = col_width * columns.len() as u16 + 2;
    let [popup] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(area);
    // The status line and the footer stay in view.
    let [popup] = Layout::vertical([Constraint::Length(height.min(area.height.saturating_sub(2)))])
        .flex(Flex::Center)
        .areas(popup);
    (popup, columns)
}

impl Help {
    /// Shows only the keys that hold `text` (empty: all), from the top.
    pub fn search(&mut self, text: String) {
        self.filter = text;
        self.scroll = 0;
    }

    /// Scrolls by `delta` rows on a screen of this size.
    pub fn scroll_by(&mut self, delta: isize, area: Rect, theme: &Theme) {
        let (popup, columns) = geometry(area, theme, &self.filter);
        let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
        let last = rows.saturating_sub(popup.height.saturating_sub(2) as usize);
        self.scroll = self.scroll.min(last).saturating_add_signed(delta).min(last);
    }

    /// Rows in a page on a screen of this size.
    pub fn page(&self, area: Rect, theme: &Theme) -> usize {
        (geometry(area, theme, &self.filter).0.height.saturating_sub(2) as usize).max(1)
    }
}

impl Component for Help {
    const TITLE: &'static str = "this help";
    const KEYS: &'static [Binding] = KEYS;
    const HINTS: &'static [Hint] = &[("j/k", "scroll"), ("Esc", "close")];

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        let theme = &cx.app.theme;
        match cmd {
            SEARCH => out.push(Intent::Prompt(Prompt::new(
                PromptKind::HelpSearch,
                Some(self.filter.clone()),
            ))),
            // Esc clears a search first, as in k9s; without one it closes.
            CLEAR_SEARCH if self.filter.is_empty() => return Handled::NotConsumed,
            CLEAR_SEARCH => self.search(String::new()),
            _ => {
                let page = self.page(cx.area, theme) as isize;
                self.scroll_by(scroll_delta(cmd, page), cx.area, theme);
            }
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        // While `/` is typed the help shows what the line holds so far.
        let typing = cx.app.prompt.as_ref().filter(|p| p.kind == PromptKind::HelpSearch);
        let filter = typing.map_or(self.filter.as_str(), |p| p.text.as_str());
        render(frame, cx.area, self, filter, &cx.app.theme);
    }
}

pub fn render(frame: &mut Frame, area: Rect, help: &Help, filter: &str, theme: &Theme) {
    let (popup, columns) = geometry(area, theme, filter);
    let rows = columns.iter().map(Vec::len).max().unwrap_or(0);
    let height = popup.height.saturating_sub(2) as usize;
    let first = help.scroll.min(rows.saturating_sub(height));
    let more = if rows > height {
        format!(
            " rows {}–{} of {rows} · j/k scroll ",
            first + 1,
            (first + height).min(rows)
        )
    } else {
        String::new()
    };
    let title = if filter.is_empty() {
        " loopscope keys — / searches · q / Esc / ? to close ".to_string()
    } else {
        format!(
            " keys holding “{}” — Esc clears · / searches again ",
            super::cells::label(filter, 30)
        )
    };
    let block = Block::bordered()
        .title(title)
        .title_bottom(Line::styled(more, theme.dim).right_aligned())
        .border_style(theme.border_focus);
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let width = inner.width / columns.len().max(1) as u16;
    let cols = Layout::horizontal(vec![Constraint::Length(width); columns.len()]).split(inner);
    for (lines, area) in columns.into_iter().zip(cols.iter()) {
        let shown: Vec<Line> = lines.into_iter().skip(first).take(height).collect();
        frame.render_widget(Paragraph::new(shown), *area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_is_bound_twice_where_it_works() {
        for s in sections() {
            let mut seen = std::collections::HashSet::new();
            for b in s.bindings {
                assert!(!b.description.is_empty());
                for k in b.keys {
                    assert!(seen.insert(k.label()), "{} bound twice in {}", k.label(), s.title);
                }
            }
        }
        // Global keys are not shadowed by a pane where they are meant to work.
        let global: Vec<String> = [keymap::PLAYBACK, keymap::FINDINGS, keymap::VIEW, keymap::APP]
            .iter()
            .flat_map(|s| s.iter())
            .flat_map(|b| b.keys.iter().map(|k| k.label()))
            .collect();
        // Only g/G (in a list pane they move within the list).
        let allowed = ["g", "G"];
        for pane in Pane::ALL {
            for b in pane.section().bindings {
                for k in b.keys.iter().filter(|k| !allowed.contains(&k.label().as_str())) {
                    assert!(!global.contains(&k.label()), "{} is global and a pane key", k.label());
                }
            }
        }
    }

    #[test]
    fn the_help_scrolls_to_its_last_row_at_80x24() {
        let theme = Theme::dark();
        let area = Rect::new(0, 0, 80, 24);
        let mut h = Help::default();
        h.scroll_by(1000, area, &theme);
        assert!(h.scroll > 0, "more keys than rows at 80x24");
        let last = h.scroll;
        h.scroll_by(1, area, &theme);
        assert_eq!(h.scroll, last);
    }
}
