//! The TUI without a terminal: snapshots of the main states on ratatui's
//! TestBackend, and key handling on the app state. Time is passed in, so
//! every run is the same.

mod common;

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use loopscope::replay::feed::Feed;
use loopscope::replay::follow::FileNews;
use loopscope::tui::app::Overlay;
use loopscope::tui::layout::Pane;
use loopscope::tui::status::Mode;
use loopscope::tui::theme::Theme;
use loopscope::tui::{Action, App, ViewOptions};
use loopscope_core::{Channel, Event, Profile, Setup};
use ratatui::style::Color;

use common::viewer::*;

/// A stream that chants in its content (gemini-cli's example 1).
fn chant_events() -> Vec<Event> {
    let mut ev = vec![Event::prompt("summarize the logs"), Event::request()];
    ev.push(Event::content("Here is what I found in the logs. "));
    for _ in 0..12 {
        ev.push(Event::content("This is a unique sentence, id=1. This is a unique "));
    }
    ev
}

#[test]
fn snapshot_start() {
    let now = Instant::now();
    let mut app = demo(now);
    app.update(Action::Key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE)), now);
    insta::assert_snapshot!("start", draw(&app).backend());
}

#[test]
fn snapshot_fired_block_cycle_with_highlights() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "e", now);
    assert_eq!(app.cursor, 279, "e jumps to just after the detection");
    let t = draw(&app);
    insta::assert_snapshot!("block_cycle_fired", t.backend());
    // The evidence is really highlighted: the first copy, then alternating copies.
    let buf = t.backend().buffer();
    let bgs: std::collections::BTreeSet<String> = (0..40)
        .flat_map(|y| (1..73).map(move |x| (x, y)))
        .map(|(x, y)| format!("{:?}", buf[(x as u16, y as u16)].bg))
        .collect();
    let theme = Theme::dark();
    for want in [theme.copy_first.bg, theme.copy_a.bg, theme.copy_b.bg] {
        assert!(bgs.contains(&format!("{:?}", want.unwrap())), "{want:?} not in {bgs:?}");
    }
}

#[test]
fn snapshot_styles_of_the_highlighted_evidence() {
    // A small terminal so the style snapshot stays readable.
    let now = Instant::now();
    let mut app = app_with(demo_events(), Profile::Seed, (100, 24), paused(), now);
    chars(&mut app, "e", now);
    insta::assert_debug_snapshot!("block_cycle_styles", draw(&app).backend().buffer());
}

#[test]
fn snapshot_chunk_chant_positions() {
    let now = Instant::now();
    let mut app = app_with(chant_events(), Profile::GeminiCli, (120, 32), paused(), now);
    chars(&mut app, "e", now);
    assert_eq!(
        app.buffer.channel,
        Channel::Content,
        "the jump shows the channel of the evidence"
    );
    let t = draw(&app);
    insta::assert_snapshot!("chunk_chant_fired", t.backend());
    // Each occurrence's first char is marked and its extent underlined.
    let buf = t.backend().buffer();
    let theme = Theme::dark();
    let starts = (0..32u16)
        .flat_map(|y| (0..74u16).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].bg == theme.chunk_start.bg.unwrap())
        .count();
    assert_eq!(starts, 10, "one start mark per occurrence");
}

#[test]
fn snapshot_help_overlay() {
    let now = Instant::now();
    let mut app = demo(now);
    key(&mut app, KeyCode::F(1), now);
    let text = screen(&app);
    insta::assert_snapshot!("help", draw(&app).backend());
    // The first sections are described there; the rest is a scroll away.
    for b in loopscope::tui::keymap::PLAYBACK {
        assert!(text.contains(b.description), "help lacks {:?}", b.description);
    }
}

#[test]
fn snapshot_too_small() {
    let now = Instant::now();
    let app = app_with(demo_events(), Profile::Seed, (50, 12), paused(), now);
    insta::assert_snapshot!("too_small", draw(&app).backend());
}

#[test]
fn play_pause_and_the_end_restart() {
    let t0 = Instant::now();
    let mut app = demo(t0);
    assert_eq!(app.mode(), Mode::Paused);
    key(&mut app, KeyCode::Char(' '), t0);
    assert_eq!(app.mode(), Mode::Playing);
    // Two seconds later everything due by then is shown at once.
    let t1 = t0 + Duration::from_secs(2);
    app.update(Action::Tick, t1);
    let due = app.pacing.due_at(2.0);
    assert_eq!(app.cursor, due);
    assert!(due > 10);
    // ×64 for a minute: to the end, where playback stops.
    chars(&mut app, ">>>>>>>>", t1);
    assert_eq!(app.clock.speed(), 64.0, "speed stops at ×64");
    app.update(Action::Tick, t1 + Duration::from_secs(60));
    assert_eq!((app.cursor, app.mode()), (app.tape.len(), Mode::End));
    // Space at the end plays again from the start.
    let t2 = t1 + Duration::from_secs(61);
    key(&mut app, KeyCode::Char(' '), t2);
    assert_eq!((app.cursor, app.mode()), (0, Mode::Playing));
    chars(&mut app, "<<<<<<<<<<", t2);
    assert_eq!(app.clock.speed(), 0.25);
    key(&mut app, KeyCode::Backspace, t2);
    assert_eq!(app.clock.speed(), 1.0);
}

#[test]
fn stepping_seeking_and_jumping() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "...", now);
    assert_eq!(app.cursor, 3);
    key(&mut app, KeyCode::Char(','), now);
    assert_eq!(app.cursor, 2);
    chars(&mut app, "5", now);
    let half = app.pacing.duration() / 2.0;
    assert_eq!(app.cursor, app.pacing.due_at(half));
    key(&mut app, KeyCode::Right, now);
    assert_eq!(app.cursor, app.pacing.due_at(half + 5.0));
    key(&mut app, KeyCode::Left, now);
    key(&mut app, KeyCode::Left, now);
    assert_eq!(app.cursor, app.pacing.due_at(half - 5.0));
    app.update(Action::Key(KeyEvent::new(KeyCode::Right, KeyModifiers::SHIFT)), now);
    assert_eq!(app.cursor, app.pacing.due_at(half - 5.0 + app.pacing.duration() / 10.0));
    chars(&mut app, "G", now);
    assert_eq!((app.cursor, app.mode()), (app.tape.len(), Mode::End));
    chars(&mut app, "g", now);
    assert_eq!(app.cursor, 0);
}

#[test]
fn detections_and_checkpoints_are_reachable_by_key() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "]", now);
    assert_eq!(app.cursor, 207, "the 2000 checkpoint ran at event 206");
    chars(&mut app, "]", now);
    assert_eq!(app.cursor, 279, "the 3000 checkpoint ran at event 278");
    chars(&mut app, "[", now);
    assert_eq!(app.cursor, 207);
    chars(&mut app, "e", now);
    assert_eq!(app.cursor, 279);
    assert_eq!(app.states[app.detectors.selected].id, "block-cycle");
    assert!(!app.buffer.scroll.follow, "the buffer scrolled to the evidence");
    chars(&mut app, "e", now);
    assert_eq!(app.cursor, 279, "no later detection");
    assert!(app.flash.as_ref().unwrap().text.contains("no detection"));
    chars(&mut app, "G", now);
    chars(&mut app, "E", now);
    assert_eq!(app.cursor, 279);
}

#[test]
fn pause_on_detect_stops_at_the_detection() {
    let t0 = Instant::now();
    let mut app = app_with(
        demo_events(),
        Profile::Seed,
        (120, 40),
        ViewOptions {
            speed: 64.0,
            ..ViewOptions::default()
        },
        t0,
    );
    chars(&mut app, "p", t0);
    assert!(app.pause_on_detect);
    app.update(Action::Tick, t0 + Duration::from_secs(60));
    assert_eq!(app.cursor, 279);
    assert_eq!(app.mode(), Mode::Paused);
    assert!(app
        .flash
        .as_ref()
        .unwrap()
        .text
        .contains("block-cycle fired at event 278"));
}

#[test]
fn search_highlights_and_steps_through_matches() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G/locale", now);
    assert_eq!(app.prompt.as_ref().unwrap().text, "locale");
    key(&mut app, KeyCode::Enter, now);
    let n = app.search.hits.len();
    assert!(n > 10, "{n}");
    assert_eq!(app.search.current, Some(0));
    chars(&mut app, "nn", now);
    assert_eq!(app.search.current, Some(2));
    chars(&mut app, "N", now);
    assert_eq!(app.search.current, Some(1));
    chars(&mut app, "/(", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(app.flash.as_ref().unwrap().text, "bad pattern: unclosed group");
    assert_eq!(app.search.hits.len(), n, "a bad pattern keeps the last search");
}

#[test]
fn panes_focus_scroll_and_select() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G", now);
    assert!(app.buffer.scroll.follow);
    chars(&mut app, "kk", now);
    assert!(!app.buffer.scroll.follow, "scrolling up leaves follow");
    chars(&mut app, "jj", now);
    assert!(app.buffer.scroll.follow, "back at the bottom follows again");
    key(&mut app, KeyCode::Tab, now);
    assert_eq!(app.focus, Pane::Detectors);
    assert_eq!(
        app.states[app.detectors.selected].id, "block-cycle",
        "at the end the pane follows the finding"
    );
    // Fired detectors come first: j leaves block-cycle, k is back on it.
    chars(&mut app, "j", now);
    assert_ne!(app.states[app.detectors.selected].id, "block-cycle");
    chars(&mut app, "k", now);
    assert_eq!(app.states[app.detectors.selected].id, "block-cycle");
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(app.cursor, 279, "Enter on a detector goes to its detection");
    key(&mut app, KeyCode::Tab, now);
    assert_eq!(app.focus, Pane::Timeline);
    chars(&mut app, "kk", now);
    let selected = app.timeline.selected.unwrap();
    key(&mut app, KeyCode::Enter, now);
    let entry = &app.timeline.timeline.entries()[selected];
    assert_eq!(app.cursor, entry.last + 1);
    assert!(matches!(app.overlay, Some(Overlay::Inspector(_))), "and inspects it");
    key(&mut app, KeyCode::Esc, now);
    app.update(Action::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)), now);
    assert_eq!(app.focus, Pane::Detectors);
    chars(&mut app, "w", now);
    assert!(!app.buffer.wrap);
    chars(&mut app, "c", now);
    assert_eq!(app.buffer.channel, Channel::Content);
}

#[test]
fn the_mouse_wheel_scrolls_the_pane_under_it() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G", now);
    let wheel = |kind, column, row| MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    app.update(Action::Mouse(wheel(MouseEventKind::ScrollUp, 10, 10)), now);
    assert!(!app.buffer.scroll.follow);
    app.update(Action::Mouse(wheel(MouseEventKind::ScrollDown, 100, 35)), now);
    assert!(app.timeline.selected.is_some(), "the timeline under the pointer moved");
    app.update(
        Action::Mouse(wheel(MouseEventKind::Down(MouseButton::Left), 100, 5)),
        now,
    );
    assert_eq!(app.focus, Pane::Detectors);
}

#[test]
fn q_closes_the_overlay_first_and_ctrl_c_always_quits() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "?", now);
    assert!(matches!(app.overlay, Some(Overlay::Help(_))));
    chars(&mut app, " ", now);
    assert_eq!(app.mode(), Mode::Paused, "keys under the overlay do nothing");
    chars(&mut app, "q", now);
    assert!(app.overlay.is_none() && !app.quit);
    chars(&mut app, "?", now);
    key(&mut app, KeyCode::Esc, now);
    assert!(app.overlay.is_none());
    chars(&mut app, "?", now);
    app.update(
        Action::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        now,
    );
    assert!(app.quit);
    let mut app = demo(now);
    chars(&mut app, "q", now);
    assert!(app.quit);
}

#[test]
fn start_at_shows_that_event_first() {
    let now = Instant::now();
    let opts = ViewOptions {
        start_at: Some(278),
        paused: true,
        ..ViewOptions::default()
    };
    let app = app_with(demo_events(), Profile::Seed, (120, 40), opts, now);
    assert_eq!(app.cursor, 279);
    assert!(screen(&app).contains("FIRED"));
}

#[test]
fn log_text_never_reaches_the_terminal_raw_and_wide_chars_align() {
    let now = Instant::now();
    let events = vec![
        Event::prompt("p\u{1b}[2J"),
        Event::request(),
        Event::reasoning("esc \u{1b}[31mred\u{1b}[0m bell\u{7} cr\r nul\u{0}\n"),
        Event::reasoning("\tab|\n思考思|\n🙂🙂🙂|\nabcdef|\n"),
        Event::tool_call("\u{1b}]0;title\u{7}", serde_json::json!({})),
    ];
    let mut app = app_with(events, Profile::Seed, (100, 24), paused(), now);
    chars(&mut app, "G", now);
    let text = screen(&app);
    assert!(!text.lines().any(|l| l.chars().any(char::is_control)), "{text}");
    assert!(text.contains("esc ␛[31mred␛[0m bell␇ cr␍ nul␀"), "{text}");
    // Each '|' lands in the same cell: a tab is 4 cells, CJK and emoji 2 (all lines are 6 wide).
    let t = draw(&app);
    let buf = t.backend().buffer();
    let cols: Vec<u16> = (0..24)
        .filter_map(|y| (1..60).find(|&x| buf[(x, y)].symbol() == "|"))
        .collect();
    assert_eq!(cols, vec![7, 7, 7, 7], "{text}");
}

#[test]
fn resizing_lays_the_buffer_out_again() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G", now);
    let rows_wide = screen(&app).lines().count();
    app.update(Action::Resize(70, 30), now);
    let narrow = screen(&app);
    assert_eq!(narrow.lines().count(), 30);
    assert!(narrow.lines().all(|l| unicode_width::UnicodeWidthStr::width(l) == 70));
    assert_eq!(rows_wide, 40);
    assert!(narrow.contains("reasoning"));
}

#[test]
fn colors_off_uses_modifiers_only() {
    let now = Instant::now();
    let opts = ViewOptions {
        theme: Theme::mono(),
        paused: true,
        ..ViewOptions::default()
    };
    let mut app = app_with(demo_events(), Profile::Seed, (120, 40), opts, now);
    chars(&mut app, "e", now);
    let t = draw(&app);
    let buf = t.backend().buffer();
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    assert!(buf
        .content()
        .iter()
        .any(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED)));
}

/// The README's key tables are the bindings, so the two cannot drift apart.
#[test]
fn the_readme_lists_every_key_binding() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut table = String::new();
    for section in loopscope::tui::help::sections() {
        table += &format!("| **{}** | |\n", section.title);
        for b in section.bindings {
            let keys = loopscope::tui::keymap::keys_label(b).replace('|', "\\|");
            table += &format!("| `{keys}` | {} |\n", b.description);
        }
    }
    let table = format!("| keys | what they do |\n| --- | --- |\n{table}");
    assert!(
        readme.contains(&table),
        "README.md should contain this table:\n\n{table}"
    );
}

fn live_app(from_start: bool, now: Instant) -> App {
    let opts = ViewOptions {
        live: Some(loopscope::tui::LiveOptions {
            from_start,
            ..Default::default()
        }),
        ..ViewOptions::default()
    };
    let mut app = App::new("live.jsonl", Setup::profile(Profile::GeminiCli), &opts, now);
    app.update(Action::Resize(120, 40), now);
    app
}

fn feed(app: &mut App, events: Vec<Event>, now: Instant) {
    app.update(Action::Feed(Feed::Events(events)), now);
}

fn tv() -> Event {
    common::tool("read_file", r#"{"path":"a"}"#)
}

#[test]
fn live_follows_the_end_and_pausing_keeps_reading() {
    let now = Instant::now();
    let mut app = live_app(false, now);
    feed(&mut app, vec![Event::prompt("p"), tv(), tv()], now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    assert_eq!((app.cursor, app.mode()), (3, Mode::Live));
    assert!(app.announcements.is_empty(), "the backlog is fed silently");
    feed(&mut app, vec![tv()], now);
    assert_eq!(app.cursor, 4);
    chars(&mut app, " ", now);
    assert_eq!(app.mode(), Mode::Paused);
    feed(&mut app, vec![tv(), tv()], now);
    assert_eq!(
        (app.cursor, app.tape.len()),
        (4, 6),
        "the view stays, the reading goes on"
    );
    assert_eq!(
        app.announcements.len(),
        1,
        "the new detection is announced while paused"
    );
    assert!(screen(&app).contains("LIVE +2 new"));
    chars(&mut app, "G", now);
    assert_eq!((app.cursor, app.mode()), (6, Mode::Live));
    chars(&mut app, "k", now);
    assert_eq!(app.mode(), Mode::Paused, "scrolling up leaves follow mode");
    chars(&mut app, "F", now);
    assert_eq!(app.mode(), Mode::Live);
}

#[test]
fn live_pause_on_detect_freezes_at_the_detection() {
    let now = Instant::now();
    let mut app = live_app(false, now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    chars(&mut app, "p", now);
    let mut events = vec![Event::prompt("p")];
    events.extend(std::iter::repeat_n(tv(), 8));
    feed(&mut app, events, now);
    assert_eq!(app.cursor, 6, "stopped just after the fifth call");
    assert_eq!(app.tape.len(), 9);
    assert_eq!(app.mode(), Mode::Paused);
}

#[test]
fn live_truncation_starts_over_and_idle_is_said() {
    let t0 = Instant::now();
    let mut app = live_app(false, t0);
    app.update(Action::Feed(Feed::CaughtUp), t0);
    feed(&mut app, vec![Event::prompt("p"), tv(), tv(), tv()], t0);
    app.update(
        Action::Feed(Feed::File(loopscope::replay::follow::FileNews::Truncated)),
        t0,
    );
    assert_eq!((app.cursor, app.tape.len()), (0, 0));
    assert!(app.flash.as_ref().unwrap().text.contains("truncated"));
    feed(&mut app, vec![tv(), tv()], t0);
    assert_eq!(app.states[0].status.summary(), "2 of 5 identical calls in a row");
    let later = t0 + Duration::from_secs(4);
    // The clock is the test's: the app asks to be woken within 3 s of t0.
    let by = t0 + Duration::from_secs(3);
    assert!(app.next_wakeup(t0).unwrap() <= by);
    app.update(Action::Tick, later);
    assert!(screen(&app).contains("waiting for data…"));
    app.update(
        Action::Feed(Feed::File(loopscope::replay::follow::FileNews::Deleted)),
        later,
    );
    // A standing condition of the file has the bottom line.
    let last = screen(&app).lines().last().unwrap().to_string();
    assert!(last.contains("live.jsonl was deleted; keeping what was read"), "{last}");
}

#[test]
fn from_start_replays_the_backlog_then_follows() {
    let t0 = Instant::now();
    let mut app = live_app(true, t0);
    let events: Vec<Event> = (0..10).map(|i| Event::note(&format!("n{i}")).at(i as f64)).collect();
    feed(&mut app, events, t0);
    app.update(Action::Feed(Feed::CaughtUp), t0);
    assert_eq!(app.mode(), Mode::Playing);
    app.update(Action::Tick, t0 + Duration::from_millis(4500));
    assert_eq!(app.cursor, 5, "replaying at the log's pace");
    app.update(Action::Tick, t0 + Duration::from_secs(20));
    assert_eq!((app.cursor, app.mode()), (10, Mode::Live), "caught up: following");
}

#[test]
fn the_status_line_says_when_a_source_holds_whole_blocks() {
    let now = Instant::now();
    let mut app = demo(now);
    app.update(
        Action::Feed(Feed::Format(loopscope_core::formats::Format::ClaudeCode)),
        now,
    );
    assert!(screen(&app).contains("claude-code · whole blocks"));
    app.update(
        Action::Feed(Feed::Format(loopscope_core::formats::Format::Anthropic)),
        now,
    );
    let text = screen(&app);
    assert!(text.contains("anthropic") && !text.contains("whole blocks"));
}

#[test]
fn live_switch_to_a_new_session_restarts_names_it_and_announces_it() {
    let now = Instant::now();
    let mut app = live_app(false, now);
    feed(&mut app, vec![Event::prompt("p"), tv(), tv(), tv(), tv(), tv()], now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    assert!(
        app.announcements.is_empty(),
        "the first session's backlog is fed silently"
    );
    let new = std::path::PathBuf::from("/home/dev/.claude/projects/x/next.jsonl");
    app.update(Action::Feed(Feed::File(FileNews::Switched(new.clone()))), now);
    assert_eq!(app.tape.len(), 0, "a new stream");
    assert_eq!(app.name, new.display().to_string());
    feed(&mut app, vec![Event::prompt("q"), tv(), tv(), tv(), tv(), tv()], now);
    assert_eq!(app.announcements.len(), 1, "the new session's loop is live");
    assert_eq!(app.announcements[0].event, 5, "numbered from the new session's start");
    let text = screen(&app);
    assert!(
        text.contains("now following /home/dev"),
        "the timeline notes the switch: {text}"
    );
}
