//! The viewer as a debugger (issue 11): the inspector, detections that
//! can all be reached, the detail at any size, loud live detections,
//! stream-wide search, the timeline filter and the mouse.

mod common;

use std::time::{Duration, Instant};

use common::viewer::*;
use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use loopscope::replay::feed::Feed;
use loopscope::tui::app::Overlay;
use loopscope::tui::buffer_pane::Mark;
use loopscope::tui::layout::Pane;
use loopscope::tui::{Action, App, LiveOptions, ViewOptions};
use loopscope_core::{Channel, Event, Profile};
use serde_json::json;

fn focus(app: &mut App, pane: Pane, now: Instant) {
    while app.focus != pane {
        key(app, KeyCode::Tab, now);
    }
}

fn inspected(app: &App) -> String {
    match &app.overlay {
        Some(Overlay::Inspector(i)) => i.plain(),
        other => panic!("no inspector open: {other:?}"),
    }
}

fn click(app: &mut App, column: u16, row: u16, now: Instant) {
    let m = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    app.update(Action::Mouse(m), now);
}

#[test]
fn the_inspector_shows_a_calls_arguments_and_its_failed_result() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G", now);
    focus(&mut app, Pane::Timeline, now);
    // The run_command row (event 69) failed; find it by moving up.
    for _ in 0..20 {
        if app.timeline.selected_entry().is_some_and(|e| e.first == 69) {
            break;
        }
        chars(&mut app, "k", now);
    }
    chars(&mut app, "o", now);
    let text = inspected(&app);
    assert!(text.contains("call run_command"), "{text}");
    assert!(text.contains("\"command\": \"cargo test"), "pretty arguments: {text}");
    assert!(text.contains("✗ error"), "{text}");
    assert_eq!(app.cursor, 314, "o inspects without moving");
    chars(&mut app, "y", now);
    assert_eq!(app.clipboard.as_deref(), Some(text.as_str()), "y copies what is shown");
    // The inspector takes the keys: space scrolls it, playback stays paused.
    chars(&mut app, " j", now);
    assert!(!app.clock.playing());
    key(&mut app, KeyCode::Esc, now);
    assert!(app.overlay.is_none());
}

#[test]
fn a_tool_detection_shows_its_calls_beside_their_results() {
    let now = Instant::now();
    let mut app = app_with(
        sample("identical-tool-calls.jsonl"),
        Profile::Seed,
        (120, 40),
        paused(),
        now,
    );
    chars(&mut app, "ee", now);
    let d = app.selected_detection().unwrap().clone();
    assert_eq!(d.detector, "tool-repeat");
    let calls = app.buffer.calls.as_ref().expect("the big pane shows calls");
    assert_eq!(calls.calls.len(), d.events.len());
    let text = screen(&app);
    assert!(text.contains("tool-repeat at event 42: the calls involved"), "{text}");
    assert!(text.contains("▸ read_file") && text.contains("◂ ✓ ok"), "{text}");
    assert!(text.contains("\"path\": \"config/server.toml\""), "{text}");
}

#[test]
fn a_stream_of_tool_calls_only_fills_the_big_pane_with_them() {
    let now = Instant::now();
    let events = vec![
        Event::prompt("list the files"),
        Event::request(),
        Event::tool_call("ls", json!({"dir": "src"})),
        Event::tool_result_with(true, json!("main.rs\nlib.rs")),
    ];
    let mut app = app_with(events, Profile::Seed, (100, 30), paused(), now);
    chars(&mut app, "G", now);
    let text = screen(&app);
    assert!(text.contains("tool calls of this request"), "{text}");
    assert!(text.contains("main.rs"), "{text}");
}

#[test]
fn e_steps_through_two_detections_at_one_event_and_the_list_reaches_any() {
    let now = Instant::now();
    let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (120, 40), paused(), now);
    chars(&mut app, "e", now);
    assert_eq!(app.selected_detection().unwrap().detector, "block-cycle");
    chars(&mut app, "e", now);
    let d = app.selected_detection().unwrap();
    assert_eq!(
        (d.detector, d.event),
        ("list-cycle", 220),
        "the second at the same event"
    );
    chars(&mut app, "e", now);
    assert!(app.flash.as_ref().unwrap().text.contains("no detection that way"));
    chars(&mut app, "E", now);
    assert_eq!(app.selected_detection().unwrap().detector, "block-cycle");
    // The list: both, and Enter selects the chosen one.
    chars(&mut app, "g", now);
    assert_eq!(app.cursor, 0);
    chars(&mut app, "d", now);
    assert!(matches!(app.overlay, Some(Overlay::Detections(_))));
    assert!(screen(&app).contains("2 detections"));
    chars(&mut app, "G", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(app.overlay.is_none());
    assert_eq!(app.cursor, 221);
    assert_eq!(app.selected_detection().unwrap().detector, "list-cycle");
    assert_eq!(app.states[app.detectors.selected].id, "list-cycle");
}

#[test]
fn start_at_a_detection_selects_it_and_e_goes_on_from_there() {
    let now = Instant::now();
    let opts = ViewOptions {
        start_at: Some(220),
        ..paused()
    };
    let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (120, 40), opts, now);
    assert_eq!(app.cursor, 221);
    assert_eq!(app.selected_detection().unwrap().detector, "block-cycle");
    chars(&mut app, "e", now);
    assert_eq!(app.selected_detection().unwrap().detector, "list-cycle");
    chars(&mut app, "E", now);
    assert_eq!(app.selected_detection().unwrap().detector, "block-cycle");
}

#[test]
fn enter_on_a_warning_row_selects_that_detection() {
    let now = Instant::now();
    let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (120, 40), paused(), now);
    focus(&mut app, Pane::Timeline, now);
    chars(&mut app, "G", now);
    assert_eq!(app.cursor, 0, "G in a list pane moves the list, not playback");
    // The last ⚠ row is list-cycle's.
    while !matches!(
        app.timeline.selected_entry().map(|e| &e.kind),
        Some(loopscope::tui::timeline::EntryKind::Detection { .. })
    ) {
        chars(&mut app, "k", now);
    }
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(app.selected_detection().unwrap().detector, "list-cycle");
    assert!(app.overlay.is_none());
    chars(&mut app, "g", now);
    assert_eq!(app.timeline.selected, Some(0));
    assert_eq!(app.cursor, 221, "g in a list pane leaves playback alone");
    key(&mut app, KeyCode::Home, now);
    assert_eq!(app.cursor, 0, "Home still goes to the start");
}

#[test]
fn the_detail_scrolls_and_zooms() {
    let now = Instant::now();
    let mut app = app_with(demo_events(), Profile::Seed, (80, 24), paused(), now);
    chars(&mut app, "e", now);
    let text = screen(&app);
    assert!(text.contains("more rows (Tab, then PgDn)"), "unfocused: {text}");
    assert!(!text.contains("rule:"), "{text}");
    focus(&mut app, Pane::Detectors, now);
    for _ in 0..5 {
        key(&mut app, KeyCode::PageDown, now);
    }
    let text = screen(&app);
    assert!(text.contains("rule:"), "the end of the detail: {text}");
    key(&mut app, KeyCode::PageUp, now);
    assert!(screen(&app).contains("more rows (PgUp)"));
    chars(&mut app, "z", now);
    let text = screen(&app);
    assert!(text.contains("zoomed"), "{text}");
    assert!(!text.contains("timeline ·"), "one pane fills the screen: {text}");
    chars(&mut app, "z", now);
    assert!(screen(&app).contains("timeline ·"));
}

#[test]
fn the_footer_always_ends_with_help_and_the_help_scrolls() {
    let now = Instant::now();
    for size in [(60, 16), (80, 24), (120, 40)] {
        let mut app = app_with(demo_events(), Profile::Seed, size, paused(), now);
        let text = screen(&app);
        let footer = text.lines().last().unwrap().trim_end().to_string();
        assert!(footer.ends_with("q quit  ? help"), "{size:?}: {footer:?}");
        chars(&mut app, "?", now);
        chars(&mut app, "G", now);
        let text = screen(&app);
        // The last section's last row is reachable.
        let sections = loopscope::tui::help::sections();
        let last = sections[sections.len() - 1].bindings.last().unwrap();
        let keys = loopscope::tui::keymap::keys_label(last);
        let shown = text.lines().flat_map(|l| l.split('│')).any(|cell| {
            let row = cell.trim();
            row.starts_with(&format!("{keys} ")) && row.ends_with(last.description)
        });
        assert!(shown, "the last keys reachable at {size:?}:\n{text}");
    }
}

#[test]
fn one_numbering_everywhere() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "e", now);
    let text = screen(&app);
    let status = text.lines().next().unwrap();
    assert!(status.contains("event 278 (0–313)"), "{status}");
    assert!(text.contains("FIRED at event 278"));
    assert!(text.contains("▶   278 ⚠ block-cycle"));
}

fn live_app(now: Instant) -> App {
    let opts = ViewOptions {
        live: Some(LiveOptions::default()),
        ..ViewOptions::default()
    };
    let mut app = App::new("live.jsonl", loopscope_core::Setup::profile(Profile::Seed), &opts, now);
    app.update(Action::Resize(80, 24), now);
    app.update(
        Action::Feed(Feed::Events(vec![Event::prompt("go"), Event::request()])),
        now,
    );
    app.update(Action::Feed(Feed::CaughtUp), now);
    app
}

fn same_read() -> Vec<Event> {
    (0..5)
        .flat_map(|_| {
            [
                Event::tool_call("read_file", json!({"path": "a.rs"})),
                Event::tool_result(true),
            ]
        })
        .collect()
}

#[test]
fn a_live_detection_flashes_a_badge_counts_and_is_selected() {
    let now = Instant::now();
    let mut app = live_app(now);
    app.update(Action::Feed(Feed::Events(same_read())), now);
    let text = screen(&app);
    let status = text.lines().next().unwrap();
    assert!(status.contains("⚠ tool-repeat at 10"), "{status}");
    let fired = app.tape.detections().len();
    assert!(status.contains(&format!("FIRED {fired}")), "{status}");
    assert!(!text.contains("idle"), "the detectors pane says it fired: {text}");
    assert_eq!(app.selected_detection().unwrap().detector, "tool-repeat");
    // The badge goes after a while; the count stays.
    app.update(Action::Tick, now + Duration::from_secs(30));
    let status = screen(&app).lines().next().unwrap().to_string();
    assert!(
        !status.contains("⚠ tool-repeat") && status.contains(&format!("FIRED {fired}")),
        "{status}"
    );
    // Browsing: a new detection is counted but the selection stays.
    chars(&mut app, ",", now);
    focus(&mut app, Pane::Detectors, now);
    chars(&mut app, "g", now);
    let before = app.detectors.selected;
    app.update(Action::Feed(Feed::Events(same_read())), now);
    assert_eq!(app.detectors.selected, before);
    let status = screen(&app).lines().next().unwrap().to_string();
    assert!(app.tape.detections().len() > fired);
    assert!(
        status.contains(&format!("FIRED {}", app.tape.detections().len())),
        "{status}"
    );
}

#[test]
fn search_covers_the_whole_stream_and_moves_the_position() {
    let now = Instant::now();
    let mut app = demo(now);
    // A tool argument, from the start: the position moves to that call.
    chars(&mut app, "/parser.RS", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(
        app.flash.as_ref().unwrap().text.contains("no match"),
        "upper case: exact case"
    );
    chars(&mut app, "/PARSER.rs", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(app.flash.as_ref().unwrap().text.contains("no match"));
    chars(&mut app, "/src/parser", now);
    key(&mut app, KeyCode::Enter, now);
    // First in the reasoning, cut across two deltas ("open src/pa" "rser.rs"):
    // shown once the second (event 32) is.
    assert_eq!(app.cursor, 33);
    assert!(app.buffer.highlights.iter().any(|h| h.mark == Mark::Search));
    chars(&mut app, "n", now);
    assert_eq!(app.cursor, 34, "then the read_file call at event 33");
    assert_eq!(app.timeline.selected_entry().unwrap().first, 33);
    // Text in another request, found across deltas.
    chars(&mut app, "/ci runner sets", now);
    key(&mut app, KeyCode::Enter, now);
    let first = app.cursor;
    assert!(first > 72, "{first}");
    assert_eq!(app.buffer.channel, Channel::Reasoning);
    chars(&mut app, "n", now);
    assert!(app.cursor >= first);
    assert!(app.search.hits.len() > 5);
}

#[test]
fn the_timeline_filter_keeps_only_failed_results() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "G", now);
    chars(&mut app, "f", now);
    chars(&mut app, "failed", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(app.timeline.rows(), 1);
    let text = screen(&app);
    assert!(text.contains("only failed"), "{text}");
    assert!(text.contains("✗ run_command"));
    assert!(!text.contains("✓ read_file"));
    // `f` opens empty (the filter in force is its hint); Enter on it clears.
    chars(&mut app, "f", now);
    assert_eq!(app.prompt.as_ref().unwrap().hint.as_deref(), Some("failed"));
    key(&mut app, KeyCode::Enter, now);
    assert!(app.timeline.rows() > 10);
}

#[test]
fn clicks_seek_on_the_scrubber_and_select_timeline_rows() {
    let now = Instant::now();
    let mut app = demo(now);
    let areas = app.areas().unwrap();
    // The middle of the scrubber: about half the stream.
    click(&mut app, areas.scrubber.width / 2, areas.scrubber.y, now);
    assert!((100..220).contains(&app.cursor), "{}", app.cursor);
    let top = areas.timeline.y + 1;
    click(&mut app, areas.timeline.x + 5, top, now);
    assert_eq!(app.focus, Pane::Timeline);
    let selected = app.timeline.selected.expect("a row selected");
    let expect = app
        .timeline
        .top_row(app.cursor, loopscope::tui::layout::Areas::inner(areas.timeline).1);
    assert_eq!(selected, app.timeline.entry(expect));
}

#[test]
fn snapshots_at_three_sizes_with_a_detection_selected() {
    let now = Instant::now();
    for (w, h) in [(80, 24), (120, 40), (200, 50)] {
        let mut app = app_with(demo_events(), Profile::Seed, (w, h), paused(), now);
        chars(&mut app, "e", now);
        insta::assert_snapshot!(format!("detection_{w}x{h}"), screen(&app));
    }
}
