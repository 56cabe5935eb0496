//! The engine as the TUI and tail will use it: state at any point, and seek.

mod common;

use common::{setup, tool};
use loopscope_core::detect::Status;
use loopscope_core::{Engine, Event, Profile, Setup, Tape};
use proptest::prelude::*;

fn fresh_states(setup: &Setup, events: &[Event]) -> (Vec<loopscope_core::DetectorState>, usize, usize) {
    let mut e = Engine::new(setup);
    for ev in events {
        e.push(ev);
    }
    (e.states(), e.buffers().reasoning.len(), e.checkpoint_runs().len())
}

fn snapshot(e: &Engine) -> (Vec<loopscope_core::DetectorState>, usize, usize) {
    (e.states(), e.buffers().reasoning.len(), e.checkpoint_runs().len())
}

/// Events drawn from a small vocabulary, so loops actually happen.
fn event_strategy() -> impl Strategy<Value = Event> {
    prop_oneof![
        1 => Just(Event::prompt("p")),
        3 => Just(Event::request()),
        20 => prop::sample::select(vec!["Check the file. ", "Run it again. ", "思考", "1. a\n", "2. b\n", "x"])
            .prop_map(Event::reasoning),
        8 => prop::sample::select(vec!["This is a unique sentence, id=1. This is a unique ", "ok ", "```\n", "- item\n"])
            .prop_map(Event::content),
        4 => prop::sample::select(vec!["a", "b"]).prop_map(|p| tool("read", &format!(r#"{{"p":"{p}"}}"#))),
        3 => any::<bool>().prop_map(Event::tool_result),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn seeking_anywhere_equals_replaying_from_the_start(
        events in prop::collection::vec(event_strategy(), 1..600),
        targets in prop::collection::vec(0usize..600, 1..8),
        gemini in any::<bool>(),
    ) {
        let profile = if gemini { Profile::GeminiCli } else { Profile::Seed };
        let set = Setup::profile(profile);
        let mut tape = Tape::with_events(&set, events.clone());
        let mut engine = Engine::new(&set);
        let all: Vec<_> = events.iter().flat_map(|e| engine.push(e)).collect();
        prop_assert_eq!(tape.detections(), &all[..]);
        for t in targets {
            let t = t.min(events.len());
            let got = snapshot(tape.seek(t));
            prop_assert_eq!(got, fresh_states(&set, &events[..t]));
            prop_assert!(tape.detections_before(t).iter().all(|d| d.event < t));
        }
    }
}

#[test]
fn seek_uses_snapshots_on_long_streams() {
    let set = Setup::profile(Profile::Seed);
    let mut events = Vec::new();
    for r in 0..200 {
        events.push(Event::request());
        for i in 0..100 {
            events.push(Event::reasoning(&format!(
                "Request {r} sentence {i} says something new. "
            )));
        }
    }
    let mut tape = Tape::with_events(&set, events.clone());
    for t in [20_000, 5, 12_345, 12_346, 19_999, 0, 7_000] {
        assert_eq!(snapshot(tape.seek(t)), fresh_states(&set, &events[..t]), "at {t}");
    }
}

#[test]
fn tool_repeat_reports_progress_toward_its_threshold() {
    let set = setup(Profile::Seed, &["tool-repeat"]);
    let mut e = Engine::new(&set);
    for _ in 0..3 {
        e.push(&tool("read_file", r#"{"path":"a"}"#));
    }
    assert_eq!(
        e.states()[0].status,
        Status::Watching {
            current: 3,
            threshold: 5,
            detail: "3 of 5 identical calls in a row".into()
        }
    );
    let set = setup(Profile::GeminiCli, &["tool-repeat"]);
    let mut e = Engine::new(&set);
    for p in ["a", "b", "a", "b", "a", "b"] {
        e.push(&tool("read_file", &format!(r#"{{"path":"{p}"}}"#)));
    }
    match &e.states()[0].status {
        Status::Watching { current, detail, .. } => {
            assert_eq!(*current, 3);
            assert_eq!(detail, "a cycle of 2 calls: 3 of 5 repeats");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn chunk_chant_counts_a_chunk_seen_far_apart_in_its_status() {
    // Two occurrences 2,400 units apart can never fire (the filter leaves
    // them unrecorded), yet the status counts them as gemini-cli's would.
    let mut e = Engine::new(&Setup::profile(Profile::GeminiCli));
    e.push(&Event::prompt("p"));
    let phrase = "Checking the configuration of the parser 思考🙂 once again now.";
    e.push(&Event::content(phrase));
    let filler: String = (0..600).map(|i| format!("w{i} ")).collect();
    e.push(&Event::content(&filler[..2400]));
    e.push(&Event::content(phrase));
    match &e.states()[1].status {
        Status::Watching { current, detail, .. } => {
            assert_eq!(*current, 2, "{detail}");
            assert!(detail.contains("seen 2 of 10 times"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let other: String = (0..40).map(|i| format!("q{i} ")).collect();
    e.push(&Event::content(&other));
    match &e.states()[1].status {
        Status::Watching { current, detail, .. } => assert_eq!(*current, 0, "{detail}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn chunk_chant_reports_its_best_chunk_and_the_shared_latch() {
    let set = Setup::profile(Profile::GeminiCli);
    let mut e = Engine::new(&set);
    e.push(&Event::prompt("p"));
    for _ in 0..5 {
        e.push(&Event::content("This is a unique sentence, id=1. This is a unique "));
    }
    match &e.states()[1].status {
        Status::Watching {
            current,
            threshold,
            detail,
        } => {
            assert_eq!((*current, *threshold), (5, 10));
            assert!(detail.contains("seen 5 of 10 times"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    for _ in 0..5 {
        e.push(&tool("t", "{}"));
    }
    let states = e.states();
    assert!(matches!(states[0].status, Status::Fired { event: 10, .. }));
    assert_eq!(
        states[1].status,
        Status::Latched {
            by: "tool-repeat",
            event: 10
        }
    );
    assert!(states[1].status.summary().contains("tool-repeat fired at event 10"));
}

#[test]
fn guards_report_progress() {
    let set = setup(Profile::Seed, &["max-turns", "error-streak"]);
    let mut e = Engine::new(&set);
    e.push(&Event::request());
    e.push(&Event::tool_result(false));
    e.push(&Event::tool_result(false));
    let s: Vec<String> = e.states().iter().map(|s| s.status.summary()).collect();
    assert_eq!(s, vec!["1 of 100 requests", "2 of 5 failed results in a row"]);
}

#[test]
fn a_long_stream_spools_its_events_and_thins_its_snapshots_yet_seeks_exactly() {
    // ~45 MB of events: past the store's memory budget (older events go to
    // a temporary file) and past 128 snapshots (they are thinned).
    let setup = setup(
        Profile::Seed,
        &["short-repeat", "block-cycle", "tool-repeat", "chunk-chant"],
    );
    let mut rng = common::Rng::new(5);
    let mut events = Vec::new();
    for i in 0..60_000 {
        events.push(match i % 50 {
            0 => Event::request(),
            1 => tool("read", r#"{"p":"a"}"#),
            2 => Event::content(&rng.text(common::LOWER, 200)),
            _ => Event::reasoning(&(rng.text(common::LOWER, 600) + " ")),
        });
    }
    let mut tape = Tape::new(&setup);
    for e in events.iter().cloned() {
        tape.push(e);
    }
    let (spooled, snapshots) = tape.storage();
    assert!(
        spooled > 0 && snapshots <= 129,
        "spooled {spooled} blocks, {snapshots} snapshots"
    );
    assert_eq!(tape.event(7).as_ref(), Some(&events[7]), "read back from the spool");
    for at in [3, 12_345, 30_000, 59_999, 60_000] {
        let got = snapshot(tape.seek(at));
        assert_eq!(got, fresh_states(&setup, &events[..at]), "seek to {at}");
    }
}
