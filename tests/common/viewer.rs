//! Driving the viewer without a terminal: an app fed a stream, keys, and
//! its screen drawn on ratatui's TestBackend.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use loopscope::replay::feed::Feed;
use loopscope::tui::{ui, Action, App, ViewOptions};
use loopscope_core::{Event, Profile, Setup};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// The events of a file in sample-logs/ (native format).
pub fn sample(name: &str) -> Vec<Event> {
    let path = format!("{}/sample-logs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| Event::from_json(serde_json::from_str(l).unwrap()).unwrap().event)
        .collect()
}

pub fn demo_events() -> Vec<Event> {
    sample("demo.jsonl")
}

pub fn app_with(events: Vec<Event>, profile: Profile, size: (u16, u16), opts: ViewOptions, now: Instant) -> App {
    let mut app = App::new("demo.jsonl", Setup::profile(profile), &opts, now);
    app.update(Action::Resize(size.0, size.1), now);
    app.update(Action::Feed(Feed::Events(events)), now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    app.update(Action::Feed(Feed::Ended), now);
    app
}

pub fn paused() -> ViewOptions {
    ViewOptions {
        paused: true,
        ..ViewOptions::default()
    }
}

pub fn demo(now: Instant) -> App {
    app_with(demo_events(), Profile::Seed, (120, 40), paused(), now)
}

pub fn draw(app: &App) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    t.draw(|f| ui::render(f, app)).unwrap();
    t
}

pub fn screen(app: &App) -> String {
    let t = draw(app);
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn key(app: &mut App, code: KeyCode, now: Instant) {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)), now);
}

pub fn chars(app: &mut App, s: &str, now: Instant) {
    for c in s.chars() {
        key(app, KeyCode::Char(c), now);
    }
}

/// The events of any file the importers read (sample-logs/formats/…),
/// its format detected as the viewer detects it.
pub fn sample_in_its_format(name: &str) -> Vec<Event> {
    use loopscope_core::formats::{open_input, FormatChoice, Item};
    use std::io::Read;
    let path = format!("{}/sample-logs/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut opened = open_input(std::path::Path::new(&path), FormatChoice::Auto).unwrap();
    let mut bytes = Vec::new();
    opened.reader.read_to_end(&mut bytes).unwrap();
    let mut items = Vec::new();
    opened.decoder.feed(&bytes, &mut items);
    opened.decoder.finish(&mut items);
    items
        .into_iter()
        .filter_map(|i| match i {
            Item::Event(e, _) => Some(e),
            _ => None,
        })
        .collect()
}
