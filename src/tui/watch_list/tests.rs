//! The watch list's state, keys and rendering.

use super::*;
use crate::tui::theme::Theme;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::time::Duration;

fn row(path: &str, secs: u64, parent: Option<&str>) -> SessionRow {
    SessionRow {
        path: PathBuf::from(path),
        agent: "claude-code".into(),
        project: "shop".into(),
        parent: parent.map(PathBuf::from),
        events: 10,
        bad_lines: 0,
        bytes: 100,
        last_activity: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
        idle: false,
        detections: 0,
        fired: None,
        problem: None,
    }
}

fn screen(list: &WatchList, now: u64) -> String {
    screen_sized(list, now, (100, 12))
}

fn screen_sized(list: &WatchList, now: u64, size: (u16, u16)) -> String {
    let mut t = Terminal::new(TestBackend::new(size.0, size.1)).unwrap();
    t.draw(|f| list.render(f, &Theme::dark(), SystemTime::UNIX_EPOCH + Duration::from_secs(now)))
        .unwrap();
    crate::tui::cells::to_text(t.backend().buffer())
}

#[test]
fn newest_first_with_sub_agents_under_their_parent() {
    let mut list = WatchList::default();
    list.apply(WatchNews::Row(row("/p/old.jsonl", 100, None)));
    list.apply(WatchNews::Row(row("/p/new.jsonl", 200, None)));
    list.apply(WatchNews::Row(row(
        "/p/new/subagents/agent-a.jsonl",
        150,
        Some("/p/new.jsonl"),
    )));
    let order: Vec<(bool, String)> = list
        .ordered()
        .iter()
        .map(|(child, r)| (*child, r.path.display().to_string()))
        .collect();
    assert_eq!(
        order,
        vec![
            (false, "/p/new.jsonl".to_string()),
            (true, "/p/new/subagents/agent-a.jsonl".to_string()),
            (false, "/p/old.jsonl".to_string()),
        ]
    );
    let text = screen(&list, 260);
    assert!(text.contains("↳ agent-a.jsonl"), "{text}");
    assert!(text.contains("1m ago") && text.contains("2m ago"), "{text}");
}

#[test]
fn a_detection_marks_the_session_and_enter_opens_it() {
    let mut list = WatchList::default();
    list.apply(WatchNews::CaughtUp);
    list.apply(WatchNews::Row(row("/p/a.jsonl", 100, None)));
    list.apply(WatchNews::Row(row("/p/b.jsonl", 200, None)));
    let mut fired = row("/p/a.jsonl", 300, None);
    fired.fired = Some(("tool-repeat", 19));
    let mut d = Detection::new("tool-repeat", 19, loopscope_core::event::Channel::Tools, None);
    d.reason = "Bash called 5 times".into();
    let announced = list.apply(WatchNews::Detection {
        row: fired,
        detection: Box::new(d),
    });
    assert!(announced.is_some());
    let text = screen(&list, 301);
    assert!(
        text.contains("⚠ 1 new") && text.contains("NEW ⚠ FIRED tool-repeat"),
        "{text}"
    );
    // The fired session became the newest; `n` finds it, Enter opens it and it is seen.
    list.key(KeyEvent::from(KeyCode::End), 10);
    assert_eq!(list.key(KeyEvent::from(KeyCode::Char('n')), 10), ListAction::None);
    assert_eq!(
        list.key(KeyEvent::from(KeyCode::Enter), 10),
        ListAction::Open {
            path: PathBuf::from("/p/a.jsonl"),
            at: Some(19)
        }
    );
    assert!(list.unseen.is_empty());
    assert_eq!(list.key(KeyEvent::from(KeyCode::Char('q')), 10), ListAction::Quit);
}

#[test]
fn the_help_lists_every_key() {
    let mut list = WatchList::default();
    list.key(KeyEvent::from(KeyCode::Char('?')), 10);
    // (Rows for the descriptions wrapped under themselves.)
    let mut t = Terminal::new(TestBackend::new(100, 24)).unwrap();
    t.draw(|f| list.render(f, &Theme::dark(), SystemTime::UNIX_EPOCH))
        .unwrap();
    let text = crate::tui::cells::to_text(t.backend().buffer());
    for (keys, _) in KEYS {
        assert!(text.contains(keys), "{keys} missing:\n{text}");
    }
}

#[test]
fn log_text_in_names_is_sanitized() {
    let mut list = WatchList::default();
    let mut r = row("/p/\u{1b}[31mred.jsonl", 100, None);
    r.project = "a\u{7}b".into();
    list.apply(WatchNews::Row(r));
    let text = screen(&list, 100);
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text}");
}

fn press(list: &mut WatchList, code: KeyCode) -> ListAction {
    list.key(KeyEvent::from(code), 10)
}

fn typed(list: &mut WatchList, text: &str) {
    for c in text.chars() {
        press(list, KeyCode::Char(c));
    }
}

fn names(list: &WatchList) -> Vec<String> {
    list.ordered().iter().map(|(_, r)| file_name(&r.path)).collect()
}

/// `/` keeps the sessions whose agent, project, file or state match; Esc
/// clears it. `s` sorts by the next column, `S` reverses.
#[test]
fn the_list_filters_and_sorts() {
    let mut list = WatchList::default();
    list.apply(WatchNews::CaughtUp);
    let mut a = row("/p/a.jsonl", 100, None);
    a.agent = "codex".into();
    a.events = 50;
    let mut b = row("/p/b.jsonl", 300, None);
    b.fired = Some(("tool-repeat", 9));
    b.events = 5;
    let c = row("/p/c.jsonl", 200, None);
    for r in [a, b, c] {
        list.apply(WatchNews::Row(r));
    }
    assert_eq!(names(&list), ["b.jsonl", "c.jsonl", "a.jsonl"], "newest first");
    press(&mut list, KeyCode::Char('/'));
    typed(&mut list, "codex");
    let text = screen(&list, 400);
    assert!(
        text.contains("filter: codex"),
        "the filter is typed on the bottom line:\n{text}"
    );
    press(&mut list, KeyCode::Enter);
    assert_eq!(names(&list), ["a.jsonl"]);
    assert!(screen(&list, 400).contains("1 of 3 match /codex/"));
    // The state is matched too; Esc clears.
    press(&mut list, KeyCode::Char('/'));
    typed(&mut list, "FIRED");
    press(&mut list, KeyCode::Enter);
    assert_eq!(names(&list), ["b.jsonl"]);
    press(&mut list, KeyCode::Esc);
    assert_eq!(list.len(), 3);
    // Sort: state (fired first), agent, project, session, events, activity.
    press(&mut list, KeyCode::Char('s'));
    assert_eq!(list.sort, SortBy::State);
    assert_eq!(names(&list)[0], "b.jsonl");
    press(&mut list, KeyCode::Char('s'));
    assert_eq!(
        names(&list),
        ["b.jsonl", "c.jsonl", "a.jsonl"],
        "agent: claude-code, then codex"
    );
    press(&mut list, KeyCode::Char('S'));
    assert_eq!(names(&list)[0], "a.jsonl", "reversed");
    for _ in 0..3 {
        press(&mut list, KeyCode::Char('s'));
    }
    assert_eq!(list.sort, SortBy::Events);
    assert!(
        screen(&list, 400).contains("by events ▲ reversed"),
        "{}",
        screen(&list, 400)
    );
    assert_eq!(
        names(&list),
        ["b.jsonl", "c.jsonl", "a.jsonl"],
        "fewest events first, reversed"
    );
}

/// At 80 columns a long session name keeps its end (the session id).
#[test]
fn names_keep_their_end_at_80_columns() {
    let mut list = WatchList::default();
    list.apply(WatchNews::CaughtUp);
    let mut r = row(
        "/p/rollout-2026-11-20T10-00-00-0199abcd-ef01-2345-6789-abcdef012345.jsonl",
        100,
        None,
    );
    r.project = "-home-dev-work-clients-acme-backend".into();
    list.apply(WatchNews::Row(r));
    let text = screen_sized(&list, 200, (80, 12));
    let row = text.lines().find(|l| l.contains("● streaming")).unwrap();
    assert!(row.contains('…') && row.contains("abcdef012345.jsonl "), "{text}");
    assert!(text.contains("…backend"), "{text}");
}

/// Issue 44, item 13: at 80 columns the help's lines were cut at the
/// screen's edge; they wrap under themselves.
#[test]
fn the_help_wraps_at_80_columns() {
    let mut list = WatchList::default();
    list.key(KeyEvent::from(KeyCode::Char('?')), 10);
    let text = screen_sized(&list, 0, (80, 30));
    let joined: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for (_, what) in KEYS {
        assert!(joined.contains(what), "{what:?} whole in:\n{text}");
    }
    assert!(joined.contains("⚠ FIRED DETECTOR (its first detection)."), "{text}");
}

/// Issue 44, item 13: at 80 columns session names were cut to 14 chars
/// while the state column kept 26 for states of 11. The state column is
/// as wide as the longest state shown; the name gets the rest.
#[test]
fn at_80_columns_the_name_gets_what_the_states_leave() {
    let mut list = WatchList::default();
    list.apply(WatchNews::CaughtUp);
    list.apply(WatchNews::Row(row(
        "/p/5f0c1d2e-0000-1111-2222-333344445555.jsonl",
        100,
        None,
    )));
    let text = screen_sized(&list, 200, (80, 12));
    let row = text.lines().find(|l| l.contains("● streaming")).unwrap();
    assert!(
        row.contains("-2222-333344445555.jsonl "),
        "at least 24 chars of the name: {text}"
    );
}
