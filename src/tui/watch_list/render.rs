//! Drawing `watch`'s list: a header with the counts and the latest
//! detection, the table (sorted column marked, names cut keeping their
//! end), and a bottom line of hints, or the filter being typed.

use crate::output::count;
use std::time::SystemTime;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::{ago, file_name, short, SortBy, WatchList, KEYS};
use crate::tui::cells::{label_end, sanitize};
use crate::tui::theme::Theme;

/// The columns: (title, width at 110 columns or more, width below; 0 fills).
const COLUMNS: [(&str, u16, u16); 6] = [
    ("state", 26, 26),
    ("agent", 12, 11),
    ("project", 18, 8),
    ("session", 0, 0),
    ("active", 9, 8),
    ("events", 8, 6),
];
/// How a session's state is drawn.
enum StateLook {
    Fired,
    Problem,
    Idle,
    Streaming,
}

/// A session's state as its column says it ("NEW ⚠ FIRED tool-repeat").
fn state_of(r: &crate::watch::SessionRow, unseen: bool) -> (String, StateLook) {
    let (state, look) = match (r.fired, &r.problem) {
        (Some((d, _)), _) => (format!("⚠ FIRED {d}"), StateLook::Fired),
        (None, Some(p)) => (format!("✗ {p}"), StateLook::Problem),
        (None, None) if r.idle => ("○ idle".to_string(), StateLook::Idle),
        (None, None) => ("● streaming".to_string(), StateLook::Streaming),
    };
    let new = if unseen { "NEW " } else { "" };
    (format!("{new}{state}"), look)
}

/// The selection's symbol before each row.
const SYMBOL: &str = "▶ ";

impl WatchList {
    pub fn render(&self, f: &mut Frame, theme: &Theme, now: SystemTime) {
        let area = f.area();
        let [head, body, foot] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(area);
        f.render_widget(Paragraph::new(self.header(theme)), head);
        if self.help {
            self.render_help(f, body, theme);
        } else {
            self.render_table(f, body, theme, now);
        }
        let line = match &self.prompt {
            Some(p) => crate::tui::footer::prompt_line(
                p,
                "filter: ",
                "only the sessions that match",
                area.width as usize,
                theme,
            ),
            None => {
                let hints: Vec<Span> = [
                    ("↑↓", "select"),
                    ("Enter", "open"),
                    ("/", "filter"),
                    ("s", "sort"),
                    ("n", "next new"),
                    ("?", "help"),
                    ("q", "quit"),
                ]
                .iter()
                .flat_map(|(k, what)| {
                    [
                        Span::styled(*k, theme.key),
                        Span::styled(format!(" {what}  "), theme.dim),
                    ]
                })
                .collect();
                Line::from(hints)
            }
        };
        f.render_widget(Paragraph::new(line), foot);
    }

    fn header(&self, theme: &Theme) -> Line<'static> {
        let rows = self.rows.values();
        let (mut streaming, mut fired) = (0, 0);
        for r in rows {
            fired += usize::from(r.fired.is_some());
            streaming += usize::from(r.fired.is_none() && !r.idle && r.problem.is_none());
        }
        let mut spans = vec![
            Span::styled(" loopscope watch ", theme.badge_live),
            Span::styled(
                format!(
                    " {} · {streaming} streaming · {fired} fired{}",
                    count(self.rows.len(), "session"),
                    if self.caught_up { "" } else { " · reading…" }
                ),
                theme.text,
            ),
        ];
        if !self.unseen.is_empty() {
            spans.push(Span::raw("  "));
            spans.push(Span::styled(
                format!(" ⚠ {} new ", self.unseen.len()),
                theme.badge_alert,
            ));
            if let Some((label, reason)) = &self.last {
                spans.push(Span::styled(
                    format!(" {}: {}", sanitize(&short(label)), sanitize(reason)),
                    theme.fired,
                ));
            }
        } else if let Some(note) = &self.note {
            spans.push(Span::styled(format!("  {}", sanitize(note)), theme.dim));
        }
        Line::from(spans)
    }

    fn render_table(&self, f: &mut Frame, area: Rect, theme: &Theme, now: SystemTime) {
        let shown = match &self.filter {
            Some(re) => format!(
                " · {} of {} match /{}/",
                self.len(),
                self.total(),
                sanitize(re.as_str())
            ),
            None => String::new(),
        };
        let order = if self.reverse { " ▲ reversed" } else { " ▼" };
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(theme.border)
            .title(Span::styled(
                format!(" sessions · by {}{order}{shown} ", self.sort.name()),
                theme.title,
            ));
        if self.order.is_empty() {
            let text = match (&self.filter, self.caught_up) {
                (Some(_), _) => "no session matches the filter (Esc clears it)",
                (None, true) => "no session yet: waiting for one to appear",
                (None, false) => "looking for sessions…",
            };
            // The header's note (a folder that does not exist yet) is cut
            // there at 80 columns: the empty list says it whole, wrapped.
            let mut lines = vec![Line::styled(text, theme.dim)];
            if let Some(note) = &self.note {
                let mut rows = Vec::new();
                crate::tui::cells::wrap_text(note, theme.dim, area.width.max(1) as usize, &mut rows);
                lines.extend(rows);
            }
            f.render_widget(Paragraph::new(lines).block(block), area);
            return;
        }
        let wide = area.width >= 110;
        let mut widths: Vec<u16> = COLUMNS.iter().map(|c| if wide { c.1 } else { c.2 }).collect();
        // The state column is as wide as the longest state shown (a FIRED
        // one names its detector; "● streaming" is 11): the rest is the name's.
        let longest_state = self
            .ordered()
            .into_iter()
            .map(|(_, r)| unicode_width::UnicodeWidthStr::width(state_of(r, self.unseen.contains(&r.path)).0.as_str()))
            .max()
            .unwrap_or(0);
        widths[0] = widths[0].min((longest_state.max(COLUMNS[0].0.len()) + 1) as u16);
        // What the session column gets: the rest of the row.
        let fixed: u16 = widths.iter().sum::<u16>() + (COLUMNS.len() as u16 - 1) + SYMBOL.chars().count() as u16;
        let session_w = area.width.saturating_sub(fixed).max(8) as usize;
        let project_w = widths[2] as usize;
        let rows: Vec<Row> = self
            .ordered()
            .into_iter()
            .map(|(child, r)| {
                let (state, look) = state_of(r, self.unseen.contains(&r.path));
                let style = match look {
                    StateLook::Fired => theme.fired,
                    StateLook::Problem => theme.error,
                    StateLook::Idle => theme.idle,
                    StateLook::Streaming => theme.clear,
                };
                // Names keep their end: a session id, a project's own folder.
                let name = if child {
                    format!("  ↳ {}", label_end(&file_name(&r.path), session_w.saturating_sub(4)))
                } else {
                    label_end(&file_name(&r.path), session_w)
                };
                Row::new(vec![
                    Cell::from(Span::styled(state, style)),
                    Cell::from(sanitize(&r.agent)),
                    Cell::from(label_end(&r.project, project_w)),
                    Cell::from(name),
                    Cell::from(ago(now, r.last_activity)),
                    Cell::from(r.events.to_string()),
                ])
            })
            .collect();
        let sorted_column = match self.sort {
            SortBy::State => 0,
            SortBy::Agent => 1,
            SortBy::Project => 2,
            SortBy::Session => 3,
            SortBy::Activity => 4,
            SortBy::Events => 5,
        };
        // The sorted column is underlined (the title says which way).
        let header = Row::new(COLUMNS.iter().enumerate().map(|(i, c)| {
            if i == sorted_column {
                Cell::from(Span::styled(c.0, theme.title.add_modifier(Modifier::UNDERLINED)))
            } else {
                Cell::from(c.0)
            }
        }))
        .style(theme.title);
        let constraints = widths.iter().map(|&w| {
            if w == 0 {
                Constraint::Fill(1)
            } else {
                Constraint::Length(w)
            }
        });
        let table = Table::new(rows, constraints)
            .header(header)
            .block(block)
            .row_highlight_style(theme.selected)
            .highlight_symbol(SYMBOL);
        let mut state = TableState::default().with_selected(Some(self.selected));
        f.render_stateful_widget(table, area, &mut state);
    }

    /// The keys, each description wrapped under itself rather than cut at
    /// the screen's edge (80 columns cut four of them).
    fn render_help(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        const KEY_COLUMN: usize = 22;
        let width = area.width as usize;
        let mut lines = vec![Line::styled("watch: keys", theme.title), Line::raw("")];
        for (keys, what) in KEYS {
            let mut rows = Vec::new();
            crate::tui::cells::wrap_text(what, theme.text, width.saturating_sub(KEY_COLUMN).max(20), &mut rows);
            for (k, mut row) in rows.into_iter().enumerate() {
                let head = if k == 0 {
                    format!("  {keys:<20}")
                } else {
                    " ".repeat(KEY_COLUMN)
                };
                row.spans.insert(0, Span::styled(head, theme.key));
                lines.push(row);
            }
        }
        lines.push(Line::raw(""));
        crate::tui::cells::wrap_text(
            "States: ● streaming (grew lately), ○ idle (quiet for --idle-after), ⚠ FIRED DETECTOR (its first detection).",
            Style::default(),
            width.max(20),
            &mut lines,
        );
        f.render_widget(Paragraph::new(lines), area);
    }
}
