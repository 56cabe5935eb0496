//! Renderers that need no terminal: the real TUI drawn into ratatui's
//! TestBackend and written as an SVG (`loopscope screenshot`).

pub mod svg;

/// The monospace font stack of the pictures (SVG) and the report's code:
/// programming fonts first, then fonts that have CJK glyphs (Noto/Source
/// Han, Sarasa, WenQuanYi on Linux; PingFang and Hiragino on macOS; Microsoft
/// YaHei and MS Gothic on Windows) and colour emoji, so that Chinese or
/// Japanese text falls back to a font that has it instead of boxes.
#[macro_export]
#[doc(hidden)]
macro_rules! mono_fonts {
    () => {
        "'JetBrains Mono', 'DejaVu Sans Mono', Menlo, Consolas, 'Noto Sans Mono CJK SC', 'Noto Sans CJK SC', 'Source Han Mono SC', 'Sarasa Mono SC', 'WenQuanYi Zen Hei Mono', 'PingFang SC', 'Hiragino Sans', 'Microsoft YaHei', 'MS Gothic', 'Noto Color Emoji', 'Apple Color Emoji', 'Segoe UI Emoji', monospace"
    };
}

/// The stack as a value (see [`mono_fonts!`]).
pub const MONO_FONTS: &str = mono_fonts!();

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui::Terminal;

use crate::replay::feed::Feed;
/// The picture as plain text (see [`crate::tui::cells::to_text`]).
pub use crate::tui::cells::to_text;
use crate::tui::cells::wrap_text;
use crate::tui::keymap::Command;
use crate::tui::layout::Pane;
use crate::tui::{theme::Theme, ui, Action, App, LiveOptions, ViewOptions};
use loopscope_core::config::Setup;
use loopscope_core::event::Event;
use loopscope_core::formats::Format;

/// Text for SVG and HTML: markup escaped; newlines and tabs kept; control
/// and direction-changing chars as the terminal's placeholders (XML cannot
/// hold controls, and a log must not reorder or hide what a reader sees).
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in loopscope_core::sanitize::text(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Where the picture is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// After this event (it is shown).
    Event(usize),
    End,
}

impl At {
    pub fn parse(text: &str) -> Result<At, String> {
        if text == "end" {
            return Ok(At::End);
        }
        text.parse()
            .map(At::Event)
            .map_err(|_| format!("--at takes an event index or `end`, not {text:?}"))
    }
}

/// What to draw.
pub struct Shot {
    pub name: String,
    pub at: At,
    pub size: (u16, u16),
    /// Select this detector (and show its evidence).
    pub select: Option<String>,
    /// Keys pressed before the picture is taken, one char each ("?" opens the help).
    pub keys: String,
    /// Draw it as `tail` shows a live stream.
    pub live: bool,
    pub theme: Theme,
    /// Add the selected detection's reason and parameters under the screen.
    pub caption: bool,
    /// Profiles compared with the shown one.
    pub compare: Vec<Setup>,
}

/// Events per batch handed to the app while a stream is read.
const BATCH: usize = 4096;

/// The TUI's screen for `events` as `shot` describes, drawn by the same
/// code the terminal app uses.
pub fn screenshot(events: Vec<Event>, format: Format, setup: Setup, shot: &Shot) -> Result<Buffer, String> {
    screenshot_streamed(
        |sink| {
            events.into_iter().for_each(sink);
            Ok(())
        },
        format,
        setup,
        shot,
    )
}

/// Like [`screenshot`], with the events handed over by `read` as it
/// decodes them: the app keeps them in its store (recent ones in memory,
/// the rest on disk), so a log of any size can be drawn.
pub fn screenshot_streamed(
    read: impl FnOnce(&mut dyn FnMut(Event)) -> Result<(), String>,
    format: Format,
    setup: Setup,
    shot: &Shot,
) -> Result<Buffer, String> {
    let now = Instant::now();
    let mut app = load(read, format, setup, shot, now)?;
    if let Some(cut) = app.tape.cut() {
        eprintln!(
            "loopscope: warning: {}: drawn up to event {} (--max-spool SIZE keeps more)",
            loopscope_core::sanitize::text(&cut.why),
            cut.at.saturating_sub(1),
        );
    }
    match shot.at {
        At::End if shot.live => {}
        At::End => app.command(Command::End, now),
        At::Event(i) if i >= app.tape.len() => {
            return Err(format!(
                "--at {i}: the stream has {}",
                crate::output::count(app.tape.len(), "event")
            ));
        }
        At::Event(i) => {
            app.stop_following();
            app.jump_to(i + 1, now);
        }
    }
    if let Some(id) = &shot.select {
        let Some(index) = app.states.iter().position(|s| s.id == id) else {
            let ids: Vec<&str> = app.states.iter().map(|s| s.id).collect();
            return Err(format!(
                "--select {id}: not a detector of this run ({})",
                ids.join(", ")
            ));
        };
        app.focus = Pane::Detectors;
        app.select_detector(index);
    }
    for key in parse_keys(&shot.keys)? {
        app.update(Action::Key(key), now);
    }
    draw(&app, shot.caption)
}

/// The viewer as the terminal app shows it, `caption`ed or not.
pub fn draw(app: &App, caption: bool) -> Result<Buffer, String> {
    let size = (app.size.width.max(10), app.size.height.max(10));
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1)).map_err(|e| e.to_string())?;
    terminal.draw(|f| ui::render(f, app)).map_err(|e| e.to_string())?;
    let screen = terminal.backend().buffer().clone();
    Ok(if caption { with_caption(screen, app) } else { screen })
}

/// A paused viewer of `shot.size` holding the whole stream `read` hands over.
pub fn load(
    read: impl FnOnce(&mut dyn FnMut(Event)) -> Result<(), String>,
    format: Format,
    setup: Setup,
    shot: &Shot,
    now: Instant,
) -> Result<App, String> {
    let opts = ViewOptions {
        paused: true,
        theme: shot.theme.clone(),
        live: shot.live.then(LiveOptions::default),
        compare: shot.compare.clone(),
        ..ViewOptions::default()
    };
    let mut app = App::new(&shot.name, setup, &opts, now);
    app.update(Action::Resize(shot.size.0, shot.size.1), now);
    app.update(Action::Feed(Feed::Format(format)), now);
    let mut batch = Vec::with_capacity(BATCH);
    read(&mut |e| {
        batch.push(e);
        if batch.len() == BATCH {
            app.update(Action::Feed(Feed::Events(std::mem::take(&mut batch))), now);
        }
    })?;
    app.update(Action::Feed(Feed::Events(batch)), now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    if !shot.live {
        app.update(Action::Feed(Feed::Ended), now);
    }
    Ok(app)
}

/// `--keys`: one char per key, and named keys in angle brackets
/// (`<Tab>`, `<Enter>`, `<Esc>`, `<Up>`, `<Down>`, `<PgUp>`, `<PgDn>`,
/// `<Home>`, `<End>`, `<BackTab>`, `<lt>` for a literal `<`).
pub fn parse_keys(keys: &str) -> Result<Vec<KeyEvent>, String> {
    let mut out = Vec::new();
    let mut rest = keys;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            if let Some(end) = rest.find('>') {
                let name = &rest[1..end];
                let code = match name {
                    "Tab" => KeyCode::Tab,
                    "BackTab" => KeyCode::BackTab,
                    "Enter" => KeyCode::Enter,
                    "Esc" => KeyCode::Esc,
                    "Up" => KeyCode::Up,
                    "Down" => KeyCode::Down,
                    "PgUp" => KeyCode::PageUp,
                    "PgDn" => KeyCode::PageDown,
                    "Home" => KeyCode::Home,
                    "End" => KeyCode::End,
                    "lt" => KeyCode::Char('<'),
                    other => return Err(format!("--keys: unknown key <{other}>")),
                };
                out.push(KeyEvent::new(code, KeyModifiers::NONE));
                rest = &rest[end + 1..];
                continue;
            }
        }
        out.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// The caption's rows: the selected detection, its reason, what would
/// have to change, and the detector's parameters.
fn caption_rows(app: &App, width: usize) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut rows = Vec::new();
    let selected = app.panes.detectors.selected;
    let conf = app.configured.get(selected);
    match app.selected_detection() {
        Some(d) => {
            let head = format!(
                "{} fired at event {} (profile {}){}",
                d.detector,
                d.event,
                app.profile_label(),
                d.onset.map_or(String::new(), |o| format!(" · onset {o}"))
            );
            wrap_text(&head, theme.title, width, &mut rows);
            wrap_text(&d.readable_reason(), theme.text, width, &mut rows);
            if let Some(w) = d.what_would_change() {
                wrap_text(&w, theme.dim, width, &mut rows);
            }
        }
        None => {
            let id = app.states.get(selected).map_or("no detector", |s| s.id);
            let head = format!("{id}: nothing fired up to event {}", app.cursor.saturating_sub(1));
            wrap_text(&head, theme.title, width, &mut rows);
        }
    }
    if let Some(conf) = conf {
        let params: Vec<String> = conf.params.iter().map(|(n, v)| format!("{n}={v}")).collect();
        wrap_text(&format!("params: {}", params.join(" ")), theme.dim, width, &mut rows);
    }
    rows
}

/// `screen` with the caption drawn in rows added under it.
fn with_caption(screen: Buffer, app: &App) -> Buffer {
    let area = screen.area;
    let rows = caption_rows(app, area.width.saturating_sub(2) as usize);
    let extra = (rows.len() as u16).saturating_add(2).min(u16::MAX - area.height);
    let mut out = Buffer::empty(Rect::new(0, 0, area.width, area.height + extra));
    out.merge(&screen);
    let rule = Rect::new(0, area.height, area.width, 1);
    Line::styled("─".repeat(area.width as usize), app.theme.border).render(rule, &mut out);
    for (i, row) in rows.into_iter().enumerate() {
        let r = Rect::new(1, area.height + 1 + i as u16, area.width.saturating_sub(2), 1);
        row.render(r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_chars_or_names_in_brackets() {
        let codes: Vec<KeyCode> = parse_keys("a<Tab><lt>b<Enter>")
            .unwrap()
            .iter()
            .map(|k| k.code)
            .collect();
        assert_eq!(
            codes,
            vec![
                KeyCode::Char('a'),
                KeyCode::Tab,
                KeyCode::Char('<'),
                KeyCode::Char('b'),
                KeyCode::Enter
            ]
        );
        assert!(parse_keys("<Nope>").unwrap_err().contains("unknown key <Nope>"));
        assert_eq!(parse_keys("<").unwrap()[0].code, KeyCode::Char('<'));
    }
}
