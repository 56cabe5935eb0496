//! Renderers that need no terminal: the real TUI drawn into ratatui's
//! TestBackend and written as an SVG (`loopscope screenshot`).

pub mod svg;

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use crate::config::Setup;
use crate::event::Event;
use crate::formats::Format;
use crate::replay::feed::Feed;
use crate::tui::keymap::Command;
use crate::tui::layout::Pane;
use crate::tui::{theme::Theme, ui, Action, App, LiveOptions, ViewOptions};

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
    let opts = ViewOptions {
        paused: true,
        theme: shot.theme.clone(),
        live: shot.live.then(LiveOptions::default),
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
    match shot.at {
        At::End if shot.live => {}
        At::End => app.command(Command::End, now),
        At::Event(i) if i >= app.tape.len() => {
            return Err(format!("--at {i}: the stream has {} events", app.tape.len()));
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
    for c in shot.keys.chars() {
        app.update(Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)), now);
    }
    let mut terminal = Terminal::new(TestBackend::new(shot.size.0, shot.size.1)).map_err(|e| e.to_string())?;
    terminal.draw(|f| ui::render(f, &app)).map_err(|e| e.to_string())?;
    Ok(terminal.backend().buffer().clone())
}
