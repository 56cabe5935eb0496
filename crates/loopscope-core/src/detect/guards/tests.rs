//! The guards on short made-up streams.
use super::*;
use crate::detect::{Buffers, Detector};
use crate::event::Event;
use serde_json::json;

fn feed(det: &mut Box<dyn Detector>, events: &[Event]) -> Vec<Detection> {
    let buffers = Buffers::default();
    let mut out = Vec::new();
    for (index, event) in events.iter().enumerate() {
        let obs = Observation::new(index, event, &buffers, 0, 0);
        det.observe(&obs, &mut out);
    }
    out
}

fn build(info: &DetectorInfo, set: &[(&str, usize)]) -> Box<dyn Detector> {
    let mut p = crate::detect::Params::defaults(info.params, crate::detect::Profile::Seed);
    for (k, v) in set {
        p.set(k, crate::detect::params::Value::Count(*v));
    }
    (info.build)(&p)
}

fn call(path: &str) -> Event {
    Event::tool_call("read_file", json!({ "path": path }))
}

#[test]
fn max_turns_fires_on_the_request_past_the_limit_and_prompt_resets() {
    let mut d = build(&MAX_TURNS, &[("max_turns", 3)]);
    let mut evs = vec![Event::request(); 3];
    assert!(feed(&mut d, &evs).is_empty());
    evs.push(Event::request());
    let got = feed(&mut build(&MAX_TURNS, &[("max_turns", 3)]), &evs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event, 3);
    assert_eq!(got[0].events, vec![0, 1, 2, 3]);
    let mut with_prompt = vec![Event::request(); 3];
    with_prompt.push(Event::prompt("again"));
    with_prompt.extend(vec![Event::request(); 3]);
    assert!(feed(&mut build(&MAX_TURNS, &[("max_turns", 3)]), &with_prompt).is_empty());
}

#[test]
fn action_window_counts_one_key_in_the_window() {
    let evs = vec![call("a"), call("b"), call("a"), call("c"), call("a")];
    let got = feed(&mut build(&ACTION_WINDOW, &[]), &evs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].events, vec![0, 2, 4]);
    // Spread beyond the window: a, then 9 others, then a, a -> only 2 in any 10.
    let mut evs = vec![call("a")];
    evs.extend((0..9).map(|i| call(&format!("f{i}"))));
    evs.extend([call("a"), call("x"), call("a")]);
    assert!(feed(&mut build(&ACTION_WINDOW, &[]), &evs).is_empty());
}

#[test]
fn action_cycle_needs_the_same_sequence_twice() {
    let evs: Vec<Event> = ["a", "b", "c", "a", "b", "c"].iter().map(|p| call(p)).collect();
    let got = feed(&mut build(&ACTION_CYCLE, &[]), &evs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event, 5);
    assert_eq!(got[0].events, vec![0, 1, 2, 3, 4, 5]);
    let evs: Vec<Event> = ["a", "b", "c", "a", "c", "b"].iter().map(|p| call(p)).collect();
    assert!(feed(&mut build(&ACTION_CYCLE, &[]), &evs).is_empty());
}

#[test]
fn canonical_keys_ignore_argument_order() {
    let a = Event::tool_call("t", json!({"a":1,"b":2}));
    let b = Event::tool_call("t", serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap());
    let got = feed(&mut build(&ACTION_WINDOW, &[]), &[a.clone(), b, a]);
    assert_eq!(got.len(), 1);
}

#[test]
fn error_streak_is_broken_by_a_success_and_error_total_is_not() {
    let mut evs: Vec<Event> = (0..4).map(|_| Event::tool_result(false)).collect();
    evs.push(Event::tool_result(true));
    evs.extend((0..4).map(|_| Event::tool_result(false)));
    assert!(feed(&mut build(&ERROR_STREAK, &[]), &evs).is_empty());
    let got = feed(&mut build(&ERROR_TOTAL, &[("max_total", 7)]), &evs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event, 8);
    assert_eq!(got[0].repeats, Some(8));
    evs.push(Event::tool_result(false));
    let got = feed(&mut build(&ERROR_STREAK, &[]), &evs);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].events, vec![5, 6, 7, 8, 9]);
}

#[test]
fn a_fired_guard_stays_fired_until_the_prompt() {
    let mut evs: Vec<Event> = (0..12).map(|_| Event::tool_result(false)).collect();
    let mut det = build(&ERROR_STREAK, &[]);
    assert_eq!(feed(&mut det, &evs).len(), 1, "latched after the first");
    evs.push(Event::prompt("p"));
    evs.extend((0..5).map(|_| Event::tool_result(false)));
    assert_eq!(feed(&mut build(&ERROR_STREAK, &[]), &evs).len(), 2);
}
