//! The event inspector: the whole of one timeline row, over the panes —
//! a tool call's pretty-printed arguments with its result (ok or error and
//! the full output), a prompt's or note's text, a run of deltas as one
//! text, a detection's every field. Scrollable; `y` copies it (OSC 52).

use crate::output::count;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;
use serde_json::Value;

use super::cells::{label, wrap_text};
use super::component::{scroll_delta, Component, Context, Handled, Hint, Intent};
use super::keymap::{bind, Binding, Command, Key};
use super::layout::Areas;
use super::theme::Theme;
use super::timeline::{Entry, EntryKind};
use crossterm::event::KeyCode as K;
use loopscope_core::detect::Detection;
use loopscope_core::engine::Tape;
use loopscope_core::event::{Event, EventKind};

pub const KEYS: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], Command::Down, "scroll down"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], Command::Up, "scroll up"),
    bind(
        &[Key::Code(K::PageDown), Key::Char(' ')],
        Command::PageDown,
        "a page down",
    ),
    bind(&[Key::Code(K::PageUp)], Command::PageUp, "a page up"),
    bind(&[Key::Ctrl('d')], Command::HalfPageDown, "half a page down"),
    bind(&[Key::Ctrl('u')], Command::HalfPageUp, "half a page up"),
    bind(&[Key::Char('g')], Command::Top, "top"),
    bind(&[Key::Char('G')], Command::Bottom, "bottom"),
    bind(
        &[Key::Char('y')],
        Command::Copy,
        "copy the inspected text to the clipboard (OSC 52)",
    ),
    bind(
        &[Key::Char('/')],
        Command::Search,
        "search the whole stream (closes the inspector)",
    ),
    bind(&[Key::Char('n')], Command::SearchNext, "the search's next match"),
    bind(&[Key::Char('N')], Command::SearchPrev, "the search's previous match"),
];

/// The most text a run of deltas shows (the whole buffer is in the pane).
const MAX_TEXT: usize = 1 << 20;

/// One part of the inspected text: a heading and its body.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub heading: String,
    pub body: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Inspector {
    pub title: String,
    pub parts: Vec<Part>,
    pub scroll: usize,
}

fn part(heading: impl Into<String>, body: impl Into<String>) -> Part {
    Part {
        heading: heading.into(),
        body: body.into(),
    }
}

/// A JSON value as people read it: strings as their text, the rest pretty.
fn readable(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

fn result_part(index: usize, e: &Event) -> Option<Part> {
    let EventKind::ToolResult { ok, output, id } = &e.kind else {
        return None;
    };
    let status = if *ok { "✓ ok" } else { "✗ error" };
    let id = id.as_deref().map_or(String::new(), |i| format!(" · id {i}"));
    let body = match output {
        Some(v) => readable(v),
        None => "(the log records no output)".to_string(),
    };
    Some(part(format!("result · event {index} · {status}{id}"), body))
}

fn extra_part(e: &Event) -> Option<Part> {
    let mut fields = e.extra.clone().into_map();
    if let Some(ts) = &e.ts {
        fields.insert("ts".into(), ts.to_json());
    }
    (!fields.is_empty()).then(|| part("other fields", readable(&Value::Object(fields))))
}

impl Inspector {
    /// The inspector for timeline entry `entry`.
    pub fn open(entry: &Entry, tape: &Tape, detections: &[Detection]) -> Inspector {
        let mut parts = Vec::new();
        let first = tape.event(entry.first);
        let title = match (&entry.kind, &first) {
            (EntryKind::Detection { index, .. }, _) => {
                if let Some(d) = detections.get(*index) {
                    parts.push(part(format!("{} · event {}", d.detector, d.event), d.readable_reason()));
                    if let Some(w) = d.what_would_change() {
                        parts.push(part("what would have to change", w));
                    }
                    parts.push(part(
                        "evidence (as scan --json prints it)",
                        serde_json::to_string_pretty(d).unwrap_or_default(),
                    ));
                }
                format!("detection at event {}", entry.first)
            }
            (EntryKind::Text { channel, chars }, _) => {
                let mut text = String::new();
                for i in entry.first..=entry.last {
                    if let Some(Event {
                        kind: EventKind::Reasoning { text: t } | EventKind::Content { text: t },
                        ..
                    }) = tape.event(i)
                    {
                        text.push_str(&t);
                    }
                    if text.len() > MAX_TEXT {
                        let cut = (0..=MAX_TEXT).rev().find(|&b| text.is_char_boundary(b)).unwrap_or(0);
                        text.truncate(cut);
                        text.push_str("\n… (cut at 1 MB; the buffer pane shows all of it)");
                        break;
                    }
                }
                parts.push(part(
                    format!(
                        "{} · {} in {}",
                        channel.as_str(),
                        count(*chars, "char"),
                        count(entry.last - entry.first + 1, "delta")
                    ),
                    text,
                ));
                format!("events {}–{}", entry.first, entry.last)
            }
            (EntryKind::Call { result, .. }, Some(e)) => {
                if let EventKind::ToolCall { name, args, id } = &e.kind {
                    let id = id.as_deref().map_or(String::new(), |i| format!(" · id {i}"));
                    parts.push(part(format!("call {name}{id}"), readable(args)));
                }
                match result.and_then(|(r, _)| Some((r, tape.event(r)?))) {
                    Some((r, ev)) => parts.extend(result_part(r, &ev)),
                    None => parts.push(part("result", "none in the stream (yet)")),
                }
                parts.extend(extra_part(e));
                format!("event {} · tool call", entry.first)
            }
            (_, Some(e)) => {
                match &e.kind {
                    EventKind::Prompt { text } => {
                        parts.push(part("prompt", text.clone().unwrap_or_else(|| "(no text)".into())))
                    }
                    EventKind::Request { id } => parts.push(part("request", id.clone().unwrap_or_default())),
                    EventKind::Note { text } => parts.push(part("note", text.clone())),
                    EventKind::LoopCheck {
                        confidence,
                        analysis,
                        detector,
                        model,
                        stage,
                    } => parts.push(part(
                        format!(
                            "judge verdict · {}{}{}{}",
                            confidence.map_or("no usable answer".to_string(), |c| format!("confidence {c:.2}")),
                            stage.map_or(String::new(), |s| format!(" · stage {s}")),
                            model.as_deref().map_or(String::new(), |m| format!(" · {m}")),
                            detector.as_deref().map_or(String::new(), |d| format!(" · {d}"))
                        ),
                        analysis.clone().unwrap_or_default(),
                    )),
                    EventKind::ToolResult { .. } => {
                        parts.extend(result_part(entry.first, e));
                        parts.push(part("call", "none in the stream matches this result"));
                    }
                    _ => {}
                }
                parts.extend(extra_part(e));
                format!("event {} · {}", entry.first, e.type_name())
            }
            (_, None) => {
                parts.push(part("event", "no longer readable"));
                format!("event {}", entry.first)
            }
        };
        Inspector {
            title,
            parts,
            scroll: 0,
        }
    }

    /// The text `y` copies.
    pub fn plain(&self) -> String {
        self.parts
            .iter()
            .map(|p| format!("{}\n{}\n", p.heading, p.body))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The rows drawn at `width` cells.
    pub fn rows(&self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push(Line::raw(""));
            }
            wrap_text(&p.heading, theme.title, width, &mut out);
            wrap_text(&p.body, theme.text, width, &mut out);
        }
        out
    }

    /// Scrolls to the first row where `re` matches (two rows of context above).
    pub fn scroll_to_match(&mut self, re: &regex::Regex, width: usize, theme: &Theme) {
        let rows = self.rows(width, theme);
        if let Some(r) = rows.iter().position(|l| re.is_match(&l.to_string())) {
            self.scroll = r.saturating_sub(2);
        }
    }

    pub fn scroll_by(&mut self, delta: isize, rows: usize, height: usize) {
        let last = rows.saturating_sub(height);
        self.scroll = self.scroll.min(last).saturating_add_signed(delta).min(last);
    }
}

impl Component for Inspector {
    const TITLE: &'static str = "inspector (o)";
    const KEYS: &'static [Binding] = KEYS;
    const HINTS: &'static [Hint] = &[("j/k", "scroll"), ("y", "copy"), ("Esc", "close")];

    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        match cmd {
            // Searching goes on in the panes.
            Command::Search | Command::SearchNext | Command::SearchPrev => {
                out.push(Intent::CloseOverlay);
                out.push(Intent::Run(cmd));
            }
            Command::Copy => out.push(Intent::Copy(self.plain())),
            cmd => {
                let (width, height) = Areas::inner(area(cx.area));
                let rows = self.rows(width, &cx.app.theme).len();
                self.scroll_by(scroll_delta(cmd, height as isize), rows, height);
            }
        }
        Handled::Consumed
    }

    fn render(&self, frame: &mut Frame, cx: &Context) {
        render(frame, cx.area, self, cx.app.search.pattern.as_ref(), &cx.app.theme);
    }
}

/// The overlay's area: most of the screen.
pub fn area(screen: Rect) -> Rect {
    let w = (screen.width * 9 / 10).max(screen.width.min(60));
    let h = screen.height.saturating_sub(2).max(screen.height.min(10));
    let [a] = Layout::horizontal([Constraint::Length(w)])
        .flex(Flex::Center)
        .areas(screen);
    let [a] = Layout::vertical([Constraint::Length(h)]).flex(Flex::Center).areas(a);
    a
}

pub fn render(frame: &mut Frame, screen: Rect, inspector: &Inspector, search: Option<&regex::Regex>, theme: &Theme) {
    let popup = area(screen);
    let block = Block::bordered()
        .border_style(theme.border_focus)
        .title(Line::styled(format!(" {} ", label(&inspector.title, 60)), theme.title))
        .title_bottom(Line::styled(" j/k scroll · y copy · Esc close ", theme.dim).right_aligned());
    let inner = block.inner(popup);
    let mut rows = inspector.rows(inner.width as usize, theme);
    if let Some(re) = search {
        super::cells::mark_matches(&mut rows, re, theme.search);
    }
    let height = inner.height as usize;
    let first = inspector.scroll.min(rows.len().saturating_sub(height));
    let shown: Vec<Line> = rows.into_iter().skip(first).take(height).collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(shown).block(block), popup);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::timeline::Timeline;
    use loopscope_core::{Profile, Setup};
    use serde_json::json;

    #[test]
    fn a_call_shows_its_arguments_and_its_result() {
        let events = vec![
            Event::request(),
            Event::tool_call("shell", json!({"command": ["bash", "-lc", "cargo test --all"]})),
            Event::tool_result_with(false, json!("error[E0425]: cannot find value\n\u{1b}[31mfailed")),
            Event::reasoning("a"),
            Event::reasoning("b"),
        ];
        let mut t = Timeline::default();
        for (i, e) in events.iter().enumerate() {
            t.push(i, e);
        }
        let tape = Tape::with_events(&Setup::profile(Profile::Seed), events);
        let call = Inspector::open(&t.entries()[1], &tape, &[]);
        let text = call.plain();
        assert!(text.contains("call shell"), "{text}");
        assert!(
            text.contains("\"cargo test --all\""),
            "pretty-printed arguments: {text}"
        );
        assert!(text.contains("result · event 2 · ✗ error"), "{text}");
        assert!(text.contains("cannot find value\n"), "the output's own lines: {text}");
        let rows = call.rows(30, &Theme::dark());
        assert!(rows.iter().all(|r| r.width() <= 30));
        assert!(
            rows.iter().any(|r| r.to_string().contains("␛[31mfailed")),
            "escape codes are shown, never sent"
        );
        let run = Inspector::open(&t.entries()[2], &tape, &[]);
        assert_eq!(run.parts[0].body, "ab", "a run of deltas reads as one text");
        assert_eq!(run.title, "events 3–4");
    }
}
