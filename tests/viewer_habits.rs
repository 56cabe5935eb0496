//! Issue 44, the viewer as a lazygit or k9s user expects it: the finding
//! first, one meaning per key, nothing the user changed lost, habits
//! (Ctrl-Z, `/` in the help, unbound keys said), all on ratatui's
//! TestBackend with time passed in.

mod common;

use std::time::Instant;

use common::viewer::*;
use crossterm::event::KeyCode;
use loopscope::tui::layout::Pane;
use loopscope::tui::App;
use loopscope_core::{Profile, Status};

fn focus(app: &mut App, pane: Pane, now: Instant) {
    while app.focus != pane {
        key(app, KeyCode::Tab, now);
    }
}

/// The detectors pane's list as drawn (its rows above the details' rule).
fn detector_rows(text: &str) -> Vec<String> {
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let top = lines
        .iter()
        .position(|l| l.iter().collect::<String>().contains("┌ detectors ·"))
        .expect("a detectors pane");
    let left = lines[top].iter().position(|&c| c == '┌').unwrap();
    let left = (left..lines[top].len())
        .find(|&x| lines[top][x..].iter().collect::<String>().starts_with("┌ detectors"))
        .unwrap();
    let right = (left + 1..lines[top].len()).find(|&x| lines[top][x] == '┐').unwrap();
    lines[top + 1..]
        .iter()
        .take_while(|l| l[left] == '│')
        .map(|l| l[left + 1..right].iter().collect::<String>().trim_end().to_string())
        .take_while(|r| !r.starts_with('─'))
        .collect()
}

/// Issue 44, item 1: at 80x24 the pane had room for one row and showed the
/// selected, idle short-repeat, the three detections under "▼ 6 more rows
/// (PgDn, z zooms)" while PgDn went to the focused buffer, and the footer
/// had no Tab. The pane now follows the finding and its hint names Tab.
#[test]
fn at_80x24_the_detectors_pane_shows_the_finding_and_its_hint_names_tab() {
    let now = Instant::now();
    let events = sample_in_its_format("formats/claude-code-session.jsonl");
    let mut app = app_with(events, Profile::Seed, (80, 24), paused(), now);
    chars(&mut app, "G", now);
    let text = screen(&app);
    let rows = detector_rows(&text);
    assert!(
        rows[0].starts_with("▸ ") && rows[0].contains("FIRED"),
        "the selected row is a fired detector:\n{text}"
    );
    let selected = &app.states[app.detectors.selected];
    assert!(matches!(selected.status, Status::Fired { .. }), "{selected:?}");
    assert!(text.contains("FIRED at event 20"), "its detail is shown:\n{text}");
    // PgDn scrolls the focused pane: unfocused, the hint says how to get there.
    assert_eq!(app.focus, Pane::Buffer);
    assert!(text.contains("more rows (Tab, then PgDn)"), "{text}");
    let footer = text.lines().last().unwrap();
    assert!(
        footer.contains("Tab pane"),
        "Tab is in the 80-column footer: {footer:?}"
    );
    focus(&mut app, Pane::Detectors, now);
    assert!(screen(&app).contains("more rows (PgDn, z zooms)"));
}

/// Fired detectors are listed first; a detector the user picks stays
/// selected as the position moves, until a detection is chosen.
#[test]
fn fired_detectors_come_first_and_a_pick_is_kept() {
    let now = Instant::now();
    let events = sample_in_its_format("formats/claude-code-session.jsonl");
    let mut app = app_with(events, Profile::Seed, (120, 40), paused(), now);
    chars(&mut app, "G", now);
    let rows = detector_rows(&screen(&app));
    let fired = rows.iter().take_while(|r| r.contains("FIRED")).count();
    assert!(fired >= 2, "{rows:#?}");
    assert!(
        rows[fired..].iter().all(|r| !r.contains("FIRED")),
        "no fired row after an idle one: {rows:#?}"
    );
    // The newest detection's detector is selected (error-streak at 20).
    assert_eq!(app.states[app.detectors.selected].id, "error-streak");
    // j/k move over the rows as drawn; the pick stays as the position moves.
    focus(&mut app, Pane::Detectors, now);
    chars(&mut app, "gjjj", now);
    let picked = app.states[app.detectors.selected].id;
    assert!(rows[3].contains(&format!(" {picked} ")), "{picked} {rows:#?}");
    chars(&mut app, ",,", now);
    assert_eq!(app.states[app.detectors.selected].id, picked);
    // `E` chooses a detection: the pane follows findings again.
    chars(&mut app, "E", now);
    let d = app.selected_detection().expect("a detection shown").clone();
    assert_eq!(app.states[app.detectors.selected].id, d.detector);
}

/// The calls' "… more rows (o …)" is a key of the pane it is in: `o` in
/// the big pane shows the first call shown, whole.
#[test]
fn o_in_the_big_pane_inspects_the_first_call_shown() {
    let now = Instant::now();
    let events = sample_in_its_format("formats/claude-code-session.jsonl");
    let mut app = app_with(events, Profile::Seed, (120, 40), paused(), now);
    chars(&mut app, "G", now);
    assert!(screen(&app).contains("error-streak at event 20: the calls involved"));
    assert_eq!(app.focus, Pane::Buffer);
    chars(&mut app, "o", now);
    match &app.overlay {
        Some(loopscope::tui::app::Overlay::Inspector(i)) => {
            let text = i.plain();
            assert!(text.contains("npm run dev") && text.contains("EADDRINUSE"), "{text}");
            assert!(
                i.title.contains('3'),
                "the first call involved, at event 3: {}",
                i.title
            );
        }
        other => panic!("no inspector: {other:?}"),
    }
    assert_eq!(app.cursor, 21, "the position stays");
}

/// Issue 44, item 2: `+`, `-` and `=` were speed anywhere and the
/// parameter editor in the detectors pane. One meaning per key: speed is
/// on `<`/`>` (and Backspace for ×1, as in mpv), the editor keeps `+ - =`.
#[test]
fn one_meaning_per_key_speed_is_on_angle_brackets() {
    use loopscope::tui::help::sections;
    use loopscope::tui::keymap::{keys_label, Command};
    // No key of the app's own sections is also a pane's, but g/G (which
    // in a list pane move within the list, said in their descriptions).
    let global: Vec<String> = sections()
        .iter()
        .take(4)
        .flat_map(|s| s.bindings.iter())
        .flat_map(|b| b.keys.iter().map(|k| k.label()))
        .collect();
    for pane in Pane::ALL {
        for b in pane.section().bindings {
            for k in b.keys.iter().map(|k| k.label()) {
                assert!(
                    k == "g" || k == "G" || !global.contains(&k),
                    "{k} means two things: {} in the {:?} pane, and a key of the app",
                    b.description,
                    pane
                );
            }
        }
    }
    let speed: Vec<String> = sections()[0]
        .bindings
        .iter()
        .filter(|b| matches!(b.command, Command::Faster | Command::Slower | Command::NormalSpeed))
        .map(keys_label)
        .collect();
    assert_eq!(speed, [">", "<", "Backspace"]);
    let now = Instant::now();
    let mut app = demo(now);
    focus(&mut app, Pane::Detectors, now);
    chars(&mut app, ">>", now);
    assert_eq!(app.clock.speed(), 4.0, "> is speed in the detectors pane too");
    chars(&mut app, "<", now);
    assert_eq!(app.clock.speed(), 2.0);
    key(&mut app, KeyCode::Backspace, now);
    assert_eq!(app.clock.speed(), 1.0);
    let footer = screen(&app).lines().last().unwrap().to_string();
    assert!(!footer.contains("+ speed"), "{footer}");
}

/// The flash message on the bottom line.
fn said(app: &App) -> String {
    app.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default()
}

fn threshold_of(setup: &loopscope_core::Setup) -> usize {
    let c = setup.detectors.iter().find(|c| c.info.id == "chunk-chant").unwrap();
    c.params.count("threshold")
}

/// Issue 44, item 3: `:set chunk-chant.threshold=30` under gemini-cli, then
/// `:compare seed,gemini-cli` compared gemini-cli at its defaults, and
/// `:compare off` went back to defaults without a word. Edited profiles
/// are compared as edited (`gemini-cli*`); nothing is dropped unsaid.
#[test]
fn compare_keeps_each_profiles_what_if_changes() {
    let now = Instant::now();
    let mut app = app_with(demo_events(), Profile::GeminiCli, (120, 40), paused(), now);
    app.run_command("set chunk-chant.threshold=30", now);
    app.run_command("compare seed,gemini-cli", now);
    let setups = app.tape.setups().to_vec();
    assert_eq!(setups.len(), 2);
    assert_eq!(setups[1].profile, Profile::GeminiCli);
    assert_eq!(threshold_of(&setups[1]), 30, "compared as edited");
    assert_eq!(threshold_of(&setups[0]), 10, "seed was not edited");
    assert!(
        app.profile_label().contains("vs gemini-cli*"),
        "{}",
        app.profile_label()
    );
    assert!(said(&app).contains("gemini-cli*"), "{}", said(&app));
    // Off: back to the profile shown before comparing, as it was left.
    app.run_command("compare off", now);
    assert_eq!(app.setup.profile, Profile::GeminiCli);
    assert_eq!(threshold_of(&app.setup), 30);
    assert!(said(&app).contains("gemini-cli*"), "{}", said(&app));
    // Another profile and back: the changes come back, and say so.
    app.run_command("profile seed", now);
    assert!(
        said(&app).contains("gemini-cli"),
        "the edited profile left is named: {}",
        said(&app)
    );
    app.run_command("profile gemini-cli", now);
    assert_eq!(threshold_of(&app.setup), 30);
    assert!(said(&app).contains("chunk-chant.threshold"), "{}", said(&app));
    // :reset drops them, and says what it dropped.
    app.run_command("reset", now);
    assert_eq!(threshold_of(&app.setup), 10);
    assert!(said(&app).contains("chunk-chant.threshold"), "{}", said(&app));
}

/// Issue 44, item 4: `view demo.jsonl --format claude-code` was a silent
/// empty screen and `:bad` said every line was read; `scan` exits 2 with a
/// hint. The viewer says the same, on the bottom line, until it is fixed.
#[test]
fn a_wrong_format_is_said_as_scan_says_it() {
    let (mut tmux_free_app, now) = {
        use loopscope_core::formats::{open_input, Format, FormatChoice};
        let now = Instant::now();
        let path = format!("{}/sample-logs/demo.jsonl", env!("CARGO_MANIFEST_DIR"));
        let opened = open_input(std::path::Path::new(&path), FormatChoice::Fixed(Format::ClaudeCode)).unwrap();
        let opts = loopscope::tui::ViewOptions {
            forced_format: Some(opened.forced_check()),
            ..paused()
        };
        // What the claude-code importer makes of a native file: nothing.
        (app_with(Vec::new(), Profile::Seed, (100, 30), opts, now), now)
    };
    let app = &mut tmux_free_app;
    let want = "--format claude-code read no events from it (it looks like native); try --format auto";
    let bottom = screen(app).lines().last().unwrap().to_string();
    assert!(bottom.contains(want), "{bottom}");
    // It stands: a key does not make it stale, as a passing message is.
    chars(app, ".", now);
    let bottom = screen(app).lines().last().unwrap().to_string();
    assert!(bottom.contains(want), "{bottom}");
    app.run_command("bad", now);
    match &app.overlay {
        Some(loopscope::tui::app::Overlay::Inspector(i)) => assert!(i.plain().contains(want), "{}", i.plain()),
        other => panic!("{other:?}"),
    }
}

/// Issue 44, item 5: CJK text behind an overlay ate its left border (in
/// the terminal and the SVG), and `screenshot -o X.txt` wrote a space
/// after every wide glyph (rows of 89–91 columns in an 80-column frame).
#[test]
fn wide_glyphs_leave_an_overlays_border_and_text_rows_their_width() {
    use unicode_width::UnicodeWidthStr;
    let now = Instant::now();
    let mut app = app_with(sample("error-total-zh.jsonl"), Profile::Seed, (80, 24), paused(), now);
    app.jump_to(161, now);
    key(&mut app, KeyCode::Tab, now);
    key(&mut app, KeyCode::Tab, now);
    chars(&mut app, "o", now);
    let t = draw(&app);
    let text = loopscope::render::to_text(t.backend().buffer());
    let row = text.lines().nth(2).unwrap();
    assert!(
        row.starts_with("│运 │reasoning · 21 chars"),
        "the border stands: {row:?}"
    );
    for line in text.lines() {
        assert!(line.width() <= 80, "{} columns: {line:?}", line.width());
    }
    // The same through `screenshot -o X.txt`.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("zh.txt");
    let ok = common::loopscope_at_root()
        .args(["screenshot", "sample-logs/error-total-zh.jsonl", "--at", "160"])
        .args(["--size", "80x24", "--keys", "<Tab><Tab>o", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(ok.success());
    let text = std::fs::read_to_string(&out).unwrap();
    for line in text.lines() {
        assert!(line.width() <= 80, "{} columns: {line:?}", line.width());
    }
    assert!(text.contains("运行缓存模块的集成测试"), "{text}");
}

/// Issue 44, item 6: a key bound to nothing did nothing, though the README
/// promises that what a key did, or why it could not, is said on the
/// bottom line; over an overlay `:` and `z` did nothing while `d` opened
/// the list. Now a key an overlay does not take is one of the few that
/// work over any overlay (Esc/q, ?, d, :), listed in the help, or said.
#[test]
fn an_unbound_key_is_said_and_overlays_pass_on_the_same_keys() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "x", now);
    assert_eq!(said(&app), "x does nothing here · ? lists the keys");
    let bottom = screen(&app).lines().last().unwrap().trim_end().to_string();
    assert_eq!(bottom, "x does nothing here · ? lists the keys");
    // Over the inspector (:diff): z is said, : opens the command line.
    app.run_command("diff", now);
    assert!(matches!(app.overlay, Some(loopscope::tui::app::Overlay::Inspector(_))));
    chars(&mut app, "z", now);
    assert_eq!(
        said(&app),
        "z does nothing in the inspector · Esc closes it, ? lists the keys"
    );
    assert!(!app.zoom);
    chars(&mut app, ":", now);
    assert!(app.prompt.is_some(), "`:` works over an overlay, as `d` does");
    key(&mut app, KeyCode::Esc, now);
    chars(&mut app, "d", now);
    assert!(matches!(app.overlay, Some(loopscope::tui::app::Overlay::Detections(_))));
    // The keys that work over any overlay are in the help.
    let titles: Vec<&str> = loopscope::tui::help::sections().iter().map(|s| s.title).collect();
    assert!(titles.contains(&"over any overlay"), "{titles:?}");
}

/// Issue 44, item 6: `/` in the help searches it (k9s, lazygit): the help
/// shows only the keys that hold the text as it is typed; Enter keeps the
/// search, Esc clears it, a second Esc closes the help.
#[test]
fn slash_searches_the_help() {
    let now = Instant::now();
    let mut app = demo(now);
    chars(&mut app, "?/spe", now);
    let text = screen(&app);
    assert!(text.contains("speed ×2 (up to ×64)"), "{text}");
    assert!(!text.contains("next detection"), "only the keys holding it: {text}");
    chars(&mut app, "ed", now);
    key(&mut app, KeyCode::Enter, now);
    assert!(app.prompt.is_none());
    let text = screen(&app);
    assert!(text.contains("keys holding “speed”"), "{text}");
    assert!(text.contains("speed ÷2") && !text.contains("next detection"), "{text}");
    chars(&mut app, "/", now);
    chars(&mut app, "zzzq", now);
    assert!(screen(&app).contains("no key holds “zzzq”"));
    key(&mut app, KeyCode::Esc, now);
    key(&mut app, KeyCode::Esc, now);
    // (Esc leaves the line; the next clears the search.)
    assert!(matches!(app.overlay, Some(loopscope::tui::app::Overlay::Help(_))));
    assert!(screen(&app).contains("next detection"));
    key(&mut app, KeyCode::Esc, now);
    assert!(app.overlay.is_none(), "the next closes");
}

/// Issue 44, item 7: in the mono theme (NO_COLOR) the selected ⚠ row was
/// reverse video, as every ⚠ row is: the cursor did not show. It has an
/// attribute of its own now (reverse + bold + underline, no other row
/// style has reverse and underline together).
#[test]
fn in_mono_the_selected_warning_row_stands_out() {
    use ratatui::style::Modifier;
    let now = Instant::now();
    let events = sample_in_its_format("formats/claude-code-session.jsonl");
    let opts = loopscope::tui::ViewOptions {
        theme: loopscope::tui::theme::Theme::mono(),
        ..paused()
    };
    let mut app = app_with(events, Profile::Seed, (120, 40), opts, now);
    chars(&mut app, "G", now);
    focus(&mut app, Pane::Timeline, now);
    chars(&mut app, "fdetections", now);
    key(&mut app, KeyCode::Enter, now);
    chars(&mut app, "g", now);
    let t = draw(&app);
    let buf = t.backend().buffer();
    let text = screen(&app);
    // The ⚠ rows of the timeline, their text's look (after the ▶ column).
    let rows: Vec<(u16, u16)> = text
        .lines()
        .enumerate()
        .filter_map(|(y, l)| {
            let x = l.chars().position(|c| c == '⚠')?;
            Some((x as u16, y as u16))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    let look = |(x, y): (u16, u16)| buf[(x, y)].modifier;
    let (selected, others) = (look(rows[0]), [look(rows[1]), look(rows[2])]);
    for other in others {
        assert_ne!(selected, other, "the selected ⚠ row looks like another:\n{text}");
    }
    assert!(
        selected.contains(Modifier::REVERSED | Modifier::UNDERLINED),
        "{selected:?}"
    );
}

/// Issue 44, item 9: "1 detections" in the timeline's title, "1 calls" in
/// the calls pane, "1 detections so far" after `:set`, "1 sessions" in
/// `report`. A count of one takes the singular everywhere.
#[test]
fn a_count_of_one_is_singular() {
    let now = Instant::now();
    let mut app = app_with(sample("error-total-zh.jsonl"), Profile::Seed, (120, 40), paused(), now);
    chars(&mut app, "G", now);
    let text = screen(&app);
    assert!(text.contains("timeline · 165 events · 1 detection "), "{text}");
    // A request with one call, its calls shown under a short text.
    app.jump_to(10, now);
    let text = screen(&app);
    assert!(text.contains("tool calls of this request · 1 call "), "{text}");
    chars(&mut app, "G", now);
    app.run_command("set error-total.max_total=10", now);
    assert_eq!(said(&app), "error-total.max_total=10: 1 detection");
    chars(&mut app, "d", now);
    assert!(screen(&app).contains(" 1 detection · Enter goes to one"));
    for (word, plural) in [(" 1 detections", ""), (" 1 calls", ""), (" 1 events", "")] {
        assert!(!screen(&app).contains(word), "{word}{plural}");
    }
}

/// Issue 44, item 10: under qwen-code every reason starts with the agent's
/// halt message in quotes, so at 80 columns the `d` list showed 9 rows
/// that said the same. The distinguishing part comes first.
#[test]
fn the_detections_list_shows_what_differs_first() {
    let now = Instant::now();
    let mut app = app_with(sample("qwen-tour.jsonl"), Profile::QwenCode, (80, 24), paused(), now);
    chars(&mut app, "d", now);
    let text = screen(&app);
    // The list's rows: "event  detector  reason", inside the overlay.
    let rows: Vec<String> = text
        .lines()
        .filter_map(|l| l.split('│').nth(2))
        .filter(|inner| inner.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|inner| inner.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows.len(), 9, "{text}");
    for r in &rows {
        assert!(!r.starts_with('"'), "the agent's words come after: {r:?}\n{text}");
    }
    let distinct: std::collections::BTreeSet<&String> = rows.iter().collect();
    assert_eq!(distinct.len(), rows.len(), "rows that say the same: {rows:#?}");
}

fn click(app: &mut App, column: u16, row: u16, now: Instant) {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let m = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    };
    app.update(loopscope::tui::Action::Mouse(m), now);
}

/// Issue 44, item 12: a click on a timeline row recentred the list on it,
/// so the row left the pointer. A click selects the row under it and the
/// list stays where it is (as in lazygit and gitui); keys scroll it only
/// when the selection leaves the view.
#[test]
fn a_click_selects_the_row_under_the_pointer_without_scrolling() {
    let now = Instant::now();
    let mut app = app_with(demo_events(), Profile::Seed, (120, 40), paused(), now);
    chars(&mut app, "G", now);
    let area = app.areas().unwrap().timeline;
    let before = screen(&app);
    // The third row from the top of the timeline.
    let y = area.y + 3;
    let row_text = |text: &str| {
        text.lines()
            .nth(y as usize)
            .unwrap()
            .chars()
            .skip(area.x as usize + 2)
            .take(30)
            .collect::<String>()
    };
    let clicked = row_text(&before);
    click(&mut app, area.x + 10, y, now);
    assert!(app.timeline.selected.is_some());
    let after = screen(&app);
    assert_eq!(row_text(&after), clicked, "the row stays under the pointer:\n{after}");
    // j moves the selection down a row; the list does not move while it shows it.
    let first_row = |text: &str| text.lines().nth(area.y as usize + 1).unwrap().to_string();
    let top = first_row(&after);
    chars(&mut app, "j", now);
    assert_eq!(first_row(&screen(&app)), top);
}

/// Issue 44, item 12: at 200x60 the side column (detectors, timeline) was
/// 38 % (76 columns) and cut its rows with "…" while the text column had
/// 124. The text column keeps a reading width; the side takes the rest.
#[test]
fn a_wide_terminal_gives_the_side_column_the_room() {
    let now = Instant::now();
    let events = sample_in_its_format("formats/claude-code-session.jsonl");
    let mut app = app_with(events, Profile::Seed, (200, 60), paused(), now);
    chars(&mut app, "G", now);
    let areas = app.areas().unwrap();
    assert!(areas.buffer.width <= 110, "{areas:?}");
    assert!(areas.timeline.width >= 90, "{areas:?}");
    let text = screen(&app);
    let row = text
        .lines()
        .find(|l| l.contains("⚠ error-streak"))
        .expect("the detection's row");
    // What 76 columns cut away is shown (a reason longer than the column
    // still ends in "…").
    assert!(row.contains("(max_consecutive 5), events 4..20"), "{row}");
    // At 120 columns the split is as it was (62 % / 38 %).
    app.update(loopscope::tui::Action::Resize(120, 40), now);
    assert_eq!(app.areas().unwrap().buffer.width, 74);
}

/// Issue 44, item 13: an empty file was a blank viewer, and `/zzz` said
/// "no match in the stream" without the pattern (less and vim echo it).
#[test]
fn empty_states_say_what_is_missing() {
    let now = Instant::now();
    let app = app_with(Vec::new(), Profile::Seed, (80, 24), paused(), now);
    let text = screen(&app);
    assert!(text.contains("no events: the input is empty"), "{text}");
    // At 100 columns the pane is narrower than the sentence: it wraps
    // rather than being cut.
    let wide = app_with(Vec::new(), Profile::Seed, (100, 30), paused(), now);
    let text = screen(&wide);
    assert!(text.contains("│shows)"), "{text}");
    let mut app = demo(now);
    chars(&mut app, "/zzz", now);
    key(&mut app, KeyCode::Enter, now);
    assert_eq!(said(&app), "no match for /zzz/ in the stream");
}

/// At a turn guard's detection (101 requests, no text) the big pane was
/// blank, titled "reasoning · 0 chars": it says there is no text there, and
/// where to look.
#[test]
fn a_guard_detection_with_no_text_says_so() {
    let now = Instant::now();
    let mut events = vec![loopscope_core::Event::prompt("go on")];
    events.extend((0..101).map(|_| loopscope_core::Event::request()));
    let mut app = app_with(events, Profile::Seed, (100, 30), paused(), now);
    assert!(
        !screen(&app).contains("no reasoning text"),
        "only at the guard's detection"
    );
    chars(&mut app, "e", now);
    let text = screen(&app);
    assert!(text.contains("max-turns"), "{text}");
    assert!(
        text.contains("no reasoning text in this request (c shows content;"),
        "{text}"
    );
}
