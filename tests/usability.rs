//! What a careful user still tripped over (issue 22), checked on the
//! viewer's state and its drawn screen: the selection reads in every
//! theme, messages have a line of their own at every width, prompts edit
//! like a shell, playback announces detections, search hits are shown,
//! numbering and state stay consistent.

mod common;

use std::time::Instant;

use common::viewer::*;
use crossterm::event::KeyCode;
use loopscope::tui::colors::{contrast, drawn_colors};
use loopscope::tui::theme::Theme;
use loopscope::tui::ViewOptions;
use loopscope_core::Profile;

/// The issue's own reproduction: after the position, the selected
/// timeline row was grey on grey. In every theme its text now reads.
#[test]
fn the_selected_timeline_row_reads_after_the_position_in_every_theme() {
    let now = Instant::now();
    for theme in [Theme::dark(), Theme::light(), Theme::mono()] {
        let opts = ViewOptions {
            paused: true,
            start_at: Some(100),
            theme: theme.clone(),
            ..ViewOptions::default()
        };
        let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (80, 24), opts, now);
        for k in [KeyCode::Tab, KeyCode::Tab, KeyCode::Down, KeyCode::Down, KeyCode::Down] {
            key(&mut app, k, now);
        }
        let selected = app.timeline.selected_entry().expect("a selected row").first;
        assert!(selected > 100, "the row is after the position: {selected}");
        let t = draw(&app);
        let buf = t.backend().buffer();
        let row = (0..buf.area.height)
            .find(|&y| {
                let text: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                text.contains(&format!("{selected:>6} "))
            })
            .expect("the selected row is drawn");
        let mut letters = 0;
        for x in 0..buf.area.width {
            let cell = &buf[(x, row)];
            if cell.bg != theme.selected.bg.unwrap_or_default() && theme.name != "mono" {
                continue;
            }
            let (fg, bg) = drawn_colors(cell, theme.canvas);
            if cell.symbol().trim().is_empty() {
                continue;
            }
            letters += 1;
            let c = contrast(&fg, &bg);
            assert!(
                c >= 4.5,
                "{} theme: {:?} is {fg} on {bg} ({c:.2})",
                theme.name,
                cell.symbol()
            );
        }
        assert!(letters > 10, "{} theme: the selected row shows its text", theme.name);
    }
}

fn bottom_line(app: &loopscope::tui::App) -> String {
    screen(app).lines().last().unwrap().trim_end().to_string()
}

fn status_line(app: &loopscope::tui::App) -> String {
    screen(app).lines().next().unwrap().trim_end().to_string()
}

/// Messages have the bottom line at every width, whole; the next key makes
/// them stale.
#[test]
fn messages_have_the_bottom_line_at_every_width() {
    let now = Instant::now();
    for size in [(80, 24), (100, 30), (140, 40), (200, 50)] {
        let mut app = app_with(demo_events(), Profile::Seed, size, paused(), now);
        chars(&mut app, "G", now);
        // `e` past the last detection says so, whole.
        chars(&mut app, "e", now);
        chars(&mut app, "e", now);
        assert_eq!(bottom_line(&app), "no detection that way", "{size:?}");
        // A `:set` result.
        chars(&mut app, ":set block-cycle.min_matches=9", now);
        key(&mut app, KeyCode::Enter, now);
        assert_eq!(bottom_line(&app), "block-cycle.min_matches=9: 0 detections", "{size:?}");
        // An error.
        chars(&mut app, ":set nope.x=1", now);
        key(&mut app, KeyCode::Enter, now);
        let line = bottom_line(&app);
        assert!(line.starts_with("✗ unknown detector \"nope\""), "{size:?}: {line}");
        assert!(line.chars().count() <= size.0 as usize, "{size:?}: {line}");
        // The inspector's copy.
        chars(&mut app, ":reset", now);
        key(&mut app, KeyCode::Enter, now);
        chars(&mut app, "E", now);
        focus_timeline(&mut app, now);
        chars(&mut app, "o", now);
        chars(&mut app, "y", now);
        assert_eq!(bottom_line(&app), "copied to the clipboard (OSC 52)", "{size:?}");
        key(&mut app, KeyCode::Esc, now);
        // A stale message goes with the next key: a failed `[` then a good `]`.
        chars(&mut app, "0", now);
        chars(&mut app, "[", now);
        assert_eq!(bottom_line(&app), "no checkpoint run that way", "{size:?}");
        chars(&mut app, "]", now);
        let line = bottom_line(&app);
        assert!(!line.contains("no checkpoint"), "{size:?}: {line}");
        assert!(line.ends_with("? help"), "the hints are back: {line}");
    }
}

fn focus_timeline(app: &mut loopscope::tui::App, now: Instant) {
    while app.focus != loopscope::tui::layout::Pane::Timeline {
        key(app, KeyCode::Tab, now);
    }
}

/// A long path in the status line keeps its end (the session id), and the
/// position stays in view at 80 columns.
#[test]
fn a_shortened_name_keeps_its_end() {
    let now = Instant::now();
    let name = "/home/dev/.claude/projects/-home-dev-shop/5f0c1d2e-0000-4000-8000-000000000001.jsonl";
    let mut app = loopscope::tui::App::new(name, loopscope_core::Setup::profile(Profile::Seed), &paused(), now);
    app.update(loopscope::tui::Action::Resize(80, 24), now);
    app.update(
        loopscope::tui::Action::Feed(loopscope::replay::feed::Feed::Events(demo_events())),
        now,
    );
    app.update(loopscope::tui::Action::Feed(loopscope::replay::feed::Feed::Ended), now);
    chars(&mut app, "G", now);
    let status = status_line(&app);
    assert!(status.contains("…"), "{status}");
    assert!(status.contains("000000000001.jsonl"), "{status}");
    assert!(status.contains("event 313 (0–313)"), "{status}");
    assert!(!status.contains("/home/dev"), "{status}");
}

fn ctrl(app: &mut loopscope::tui::App, c: char, now: Instant) {
    let k = crossterm::event::KeyEvent::new(KeyCode::Char(c), crossterm::event::KeyModifiers::CONTROL);
    app.update(loopscope::tui::Action::Key(k), now);
}

fn prompt_text(app: &loopscope::tui::App) -> String {
    app.prompt.as_ref().expect("a prompt is open").text.clone()
}

fn min_matches(app: &loopscope::tui::App) -> usize {
    let c = app.setup.detectors.iter().find(|c| c.info.id == "block-cycle").unwrap();
    c.params.count("min_matches")
}

/// `=` then `21` sets 21 (it ran 921: the value was typed after the old one).
#[test]
fn the_parameter_prompt_opens_empty_with_the_value_as_its_hint() {
    let now = Instant::now();
    let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (80, 24), paused(), now);
    chars(&mut app, "G", now);
    while app.focus != loopscope::tui::layout::Pane::Detectors {
        key(&mut app, KeyCode::Tab, now);
    }
    chars(&mut app, "g", now);
    for _ in 0..app.states.len() {
        if app.states[app.detectors.selected].id == "block-cycle" {
            break;
        }
        chars(&mut app, "j", now);
    }
    chars(&mut app, "ll", now);
    chars(&mut app, "=", now);
    let bottom = bottom_line(&app);
    assert!(bottom.starts_with("block-cycle.min_matches="), "{bottom}");
    assert!(bottom.contains(" 6  (Tab or ↑: this value)"), "{bottom}");
    chars(&mut app, "21", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(min_matches(&app), 21);
    // ↑ brings back the value typed, Tab the current one.
    chars(&mut app, "=", now);
    key(&mut app, KeyCode::Up, now);
    assert_eq!(prompt_text(&app), "21");
    ctrl(&mut app, 'u', now);
    key(&mut app, KeyCode::Tab, now);
    assert_eq!(prompt_text(&app), "21", "the current value is 21 now");
    key(&mut app, KeyCode::Esc, now);
    assert!(app.prompt.is_none());
}

/// `:` completes commands, profiles, detector ids and parameter names, and
/// keeps its own history; `:q` quits.
#[test]
fn the_command_line_completes_and_remembers() {
    let now = Instant::now();
    let mut app = demo(now);
    let tab = |app: &mut loopscope::tui::App| {
        key(app, KeyCode::Tab, now);
        prompt_text(app)
    };
    chars(&mut app, ":pro", now);
    assert_eq!(tab(&mut app), "profile ");
    chars(&mut app, "gem", now);
    assert_eq!(tab(&mut app), "profile gemini-cli");
    ctrl(&mut app, 'u', now);
    chars(&mut app, "set block-c", now);
    assert_eq!(tab(&mut app), "set block-cycle.");
    chars(&mut app, "min", now);
    assert_eq!(tab(&mut app), "set block-cycle.min_matches=");
    chars(&mut app, "7", now);
    // Editing in the middle: ← twice, a char, End.
    key(&mut app, KeyCode::Left, now);
    key(&mut app, KeyCode::Left, now);
    chars(&mut app, "x", now);
    assert_eq!(prompt_text(&app), "set block-cycle.min_matchesx=7");
    key(&mut app, KeyCode::Left, now);
    key(&mut app, KeyCode::Delete, now);
    key(&mut app, KeyCode::End, now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(min_matches(&app), 7);
    // Several candidates: the common part, then each in turn.
    chars(&mut app, ":detectors ", now);
    assert_eq!(tab(&mut app), "detectors ");
    let listed = app.prompt.as_ref().unwrap().cycle.clone().unwrap().candidates;
    assert!(
        listed.contains(&"block-cycle".to_string()) && listed.contains(&"all".to_string()),
        "{listed:?}"
    );
    assert!(bottom_line(&app).contains("block-cycle"), "the candidates are shown");
    chars(&mut app, "li", now);
    assert_eq!(tab(&mut app), "detectors list-cycle");
    key(&mut app, KeyCode::Esc, now);
    // The history is the command line's own: ↑ gives the last command run.
    chars(&mut app, ":", now);
    key(&mut app, KeyCode::Up, now);
    assert_eq!(prompt_text(&app), "set block-cycle.min_matches=7");
    key(&mut app, KeyCode::Esc, now);
    chars(&mut app, "/locale", now);
    key(&mut app, KeyCode::Enter, now);
    chars(&mut app, "/", now);
    key(&mut app, KeyCode::Up, now);
    assert_eq!(prompt_text(&app), "locale", "the search's own history");
    key(&mut app, KeyCode::Esc, now);
    chars(&mut app, ":q", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(app.quit);
}

/// In view playback (the bundled demo too) a detection reached by playing
/// is announced as `tail` announces a live one: a badge in the status line,
/// and selected (its detail shown) unless the user is browsing.
#[test]
fn playback_announces_each_detection_it_reaches() {
    let t0 = Instant::now();
    let playing = || ViewOptions {
        paused: false,
        ..ViewOptions::default()
    };
    let mut app = app_with(demo_events(), Profile::Seed, (80, 24), playing(), t0);
    assert!(app.badge.is_none() && app.chosen.is_none());
    let later = t0 + std::time::Duration::from_secs(60);
    app.update(loopscope::tui::Action::Tick, later);
    assert_eq!(app.cursor, app.tape.len(), "played to the end");
    assert_eq!(app.badge.as_ref().unwrap().text, "⚠ block-cycle at 278");
    assert!(
        status_line(&app).contains("⚠ block-cycle at 278"),
        "{}",
        status_line(&app)
    );
    assert_eq!(app.chosen, Some(0), "the detection is selected");
    assert_eq!(app.states[app.detectors.selected].id, "block-cycle");
    assert!(screen(&app).contains("FIRED at event 278"), "its detail is shown");
    // The badge stands out for a while, then goes.
    app.update(loopscope::tui::Action::Tick, later + std::time::Duration::from_secs(9));
    assert!(app.badge.is_none());
    // Browsing (a timeline row selected): announced, not selected.
    let mut app = app_with(demo_events(), Profile::Seed, (80, 24), playing(), t0);
    focus_timeline(&mut app, t0);
    chars(&mut app, "k", t0);
    app.update(loopscope::tui::Action::Tick, later);
    assert_eq!(app.badge.as_ref().unwrap().text, "⚠ block-cycle at 278");
    assert_eq!(app.chosen, None, "a browsing user keeps what they look at");
    // Seeking is not playing: no announcement.
    let mut app = app_with(demo_events(), Profile::Seed, (80, 24), paused(), t0);
    chars(&mut app, "G", t0);
    assert!(app.badge.is_none());
}

fn live_app(now: Instant) -> loopscope::tui::App {
    use loopscope::replay::feed::Feed;
    use loopscope::tui::{Action, LiveOptions};
    let opts = ViewOptions {
        live: Some(LiveOptions::default()),
        ..ViewOptions::default()
    };
    let mut app = loopscope::tui::App::new("live.jsonl", loopscope_core::Setup::profile(Profile::Seed), &opts, now);
    app.update(Action::Resize(80, 24), now);
    app.update(Action::Feed(Feed::CaughtUp), now);
    app
}

fn same_reads() -> Vec<loopscope_core::Event> {
    let mut events = vec![loopscope_core::Event::prompt("go"), loopscope_core::Event::request()];
    for _ in 0..5 {
        events.push(loopscope_core::Event::tool_call(
            "read_file",
            serde_json::json!({"path": "a.rs"}),
        ));
        events.push(loopscope_core::Event::tool_result(true));
    }
    events
}

/// After the followed file starts over, nothing of the old stream stands:
/// not its FIRED count, its badge nor its bad lines.
#[test]
fn a_truncated_file_starts_over_with_no_old_count_standing() {
    use loopscope::replay::feed::Feed;
    use loopscope::replay::follow::FileNews;
    use loopscope::tui::Action;
    use loopscope_core::formats::Problem;
    let now = Instant::now();
    let mut app = live_app(now);
    // Wide enough for the badge, the count and the bad lines at once.
    app.update(Action::Resize(140, 40), now);
    app.update(Action::Feed(Feed::Events(same_reads())), now);
    let bad = Problem {
        line: 3,
        reason: "expected a JSON object".into(),
        skipped: true,
    };
    app.update(Action::Feed(Feed::Problems(vec![bad])), now);
    let status = status_line(&app);
    assert!(
        status.contains("FIRED ") && status.contains("1 bad line (:bad)"),
        "{status}"
    );
    app.update(Action::Feed(Feed::File(FileNews::Truncated)), now);
    let status = status_line(&app);
    assert!(!status.contains("FIRED") && !status.contains("bad lines"), "{status}");
    assert!(!status.contains('⚠'), "{status}");
    assert!(bottom_line(&app).contains("live.jsonl was truncated; starting over"));
    // The new stream counts from nothing.
    app.update(Action::Feed(Feed::Events(same_reads())), now);
    let fired = app.tape.detections().len();
    assert!(
        status_line(&app).contains(&format!("FIRED {fired} ")),
        "{}",
        status_line(&app)
    );
}

/// `:bad` lists the unreadable lines, each with its number and why.
#[test]
fn bad_lines_are_listed_with_their_numbers_and_reasons() {
    use loopscope::replay::feed::Feed;
    use loopscope::tui::Action;
    use loopscope_core::formats::Problem;
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, ":bad", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(screen(&app).contains("none: every line of the source was read"));
    key(&mut app, KeyCode::Esc, now);
    let problems: Vec<Problem> = (1..=12_000)
        .map(|line| Problem {
            line,
            reason: format!("unexpected end of JSON {line}"),
            skipped: true,
        })
        .collect();
    app.update(Action::Feed(Feed::Problems(problems)), now);
    assert!(
        status_line(&app).contains("12000 bad lines (:bad)"),
        "{}",
        status_line(&app)
    );
    chars(&mut app, ":bad", now);
    key(&mut app, KeyCode::Enter, now);
    let text = screen(&app);
    assert!(text.contains("12000 bad lines skipped"), "{text}");
    assert!(
        text.contains("line 1: unexpected end of JSON 1; line skipped"),
        "{text}"
    );
    chars(&mut app, "G", now);
    let text = screen(&app);
    assert!(text.contains("line 10000: unexpected end of JSON 10000"), "{text}");
    assert!(text.contains("… and 2000 more"), "at most 10,000 kept: {text}");
}

/// `n` onto a match outside the text shows it where it is whole, marked:
/// a tool result in the big pane's calls, a prompt or a note in the
/// inspector; a request with little text shows its calls under it.
#[test]
fn a_search_hit_is_shown_where_it_is_with_the_match_marked() {
    use loopscope::tui::app::Overlay;
    let now = Instant::now();
    let theme = Theme::dark();
    let mut app = app_with(demo_events(), Profile::Seed, (80, 24), paused(), now);
    // Only the failed test's output says "right: Err".
    chars(&mut app, "/right: Err", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(app.cursor, 71, "the position is the result's event");
    let calls = app.buffer.calls.as_ref().expect("the big pane shows the calls");
    assert!(calls.title.contains("search match at event 70"), "{}", calls.title);
    let t = draw(&app);
    let buf = t.backend().buffer();
    let text = screen(&app);
    assert!(text.contains("◂ ✗ error"), "{text}");
    // The match is drawn in the search style.
    let marked: String = (0..buf.area.height)
        .flat_map(|y| (0..buf.area.width).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].bg == theme.search.bg.unwrap())
        .map(|(x, y)| buf[(x, y)].symbol().to_string())
        .collect();
    assert!(marked.contains("right: Err"), "marked: {marked:?}\n{text}");
    // The note is in the inspector, its match marked; `n` there goes on.
    chars(&mut app, "/user pressed", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(matches!(app.overlay, Some(Overlay::Inspector(_))), "{:?}", app.overlay);
    let text = screen(&app);
    assert!(text.contains("note") && text.contains("user pressed stop"), "{text}");
    chars(&mut app, "/fails on CI", now);
    key(&mut app, KeyCode::Enter, now);
    let text = screen(&app);
    assert!(
        text.contains("prompt") && text.contains("The test parser::tests::empty_input fails"),
        "{text}"
    );
    // `n` in the inspector steps to the next match, whatever shows it.
    let (at, hits) = (app.search.current.unwrap(), app.search.hits.len());
    chars(&mut app, "n", now);
    assert_eq!(app.search.current, Some((at + 1) % hits));
    key(&mut app, KeyCode::Esc, now);
    assert!(app.overlay.is_none());
}

/// A request whose text fills under half the pane shows its calls under it.
#[test]
fn a_request_with_little_text_shows_its_calls_under_it() {
    use loopscope_core::Event;
    let now = Instant::now();
    let events = vec![
        Event::prompt("go"),
        Event::request(),
        Event::reasoning("Let me read the config."),
        Event::tool_call("read_file", serde_json::json!({"path": "cfg.toml"})),
        Event::tool_result_with(true, serde_json::json!("port = 8080")),
    ];
    let app = app_with(events, Profile::Seed, (80, 24), paused(), now);
    let mut app = app;
    chars(&mut app, "G", now);
    assert!(app.buffer.calls.is_none(), "the text is shown");
    assert!(app.buffer.below.is_some(), "and the calls under it");
    let text = screen(&app);
    assert!(
        text.contains("Let me read the config.") && text.contains("▸ read_file"),
        "{text}"
    );
    assert!(text.contains("port = 8080"), "{text}");
}

/// Tool arguments in reasons read as text in the viewer (detail, timeline,
/// detections list); `--json` keeps the exact reason.
#[test]
fn reasons_show_tool_arguments_as_readable_text() {
    let now = Instant::now();
    let mut app = app_with(
        sample("ab-tool-cycle.jsonl"),
        Profile::GeminiCli,
        (200, 50),
        paused(),
        now,
    );
    chars(&mut app, "G", now);
    chars(&mut app, "E", now);
    // The detail zoomed to the whole screen, its rows joined.
    while app.focus != loopscope::tui::layout::Pane::Detectors {
        key(&mut app, KeyCode::Tab, now);
    }
    chars(&mut app, "z", now);
    let text = screen(&app);
    let detail: String = text
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        detail.contains("a cycle of 2 calls (edit_file {path: src/date.rs, old: format!("),
        "{detail}"
    );
    assert!(detail.contains("-> run_tests {filter: date})"), "{detail}");
    assert!(detail.contains("repeated: edit_file {path: src/date.rs"), "{detail}");
    assert!(!detail.contains("\\\""), "no escaped quotes in the detail:\n{text}");
    chars(&mut app, "d", now);
    let text = screen(&app);
    assert!(
        text.contains("a cycle of 2 calls (edit_file {path: src/date.rs"),
        "{text}"
    );
    // The detection itself is exact.
    let d = &app.tape.detections()[0];
    assert!(
        d.reason.contains(r#"edit_file "{\"path\":\"src/date.rs\""#),
        "{}",
        d.reason
    );
}

/// A schedule change in the viewer marks recorded verdicts it would not
/// have asked for, and keeps them: the loop is still replayed.
#[test]
fn a_changed_schedule_marks_recorded_verdicts_and_keeps_them() {
    let now = Instant::now();
    let mut app = app_with(
        sample("judge-recorded-verdicts.jsonl"),
        Profile::GeminiCli,
        (120, 40),
        paused(),
        now,
    );
    chars(&mut app, "G", now);
    let judge = |app: &loopscope::tui::App| {
        app.tape
            .detections()
            .iter()
            .filter(|d| d.detector == "llm-judge")
            .map(|d| d.event)
            .collect::<Vec<_>>()
    };
    let before = judge(&app);
    assert_eq!(before.len(), 1);
    // After 0.55 at turn 30 this schedule asks again at round(5 + 4 x 0.45)
    // = 7 turns, at 37; the loop was recorded at 40.
    chars(&mut app, ":set llm-judge.interval_max=9", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(
        judge(&app),
        before,
        "the recorded loop is replayed where it was recorded"
    );
    let reason = &app
        .tape
        .detections()
        .iter()
        .find(|d| d.detector == "llm-judge")
        .unwrap()
        .reason;
    assert!(reason.contains("would not have checked"), "{reason}");
    let rows: Vec<String> = app
        .timeline
        .timeline
        .entries()
        .iter()
        .map(loopscope::tui::timeline::describe)
        .filter(|r| r.starts_with('✦'))
        .collect();
    assert!(rows[0].starts_with("✦ turn 30 · 0.55 → next at 37"), "{rows:?}");
    assert!(
        rows[1].starts_with("✦ turn 40") && rows[1].ends_with("not on this schedule"),
        "{rows:?}"
    );
}
