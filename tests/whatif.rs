//! What-if, headless: `scan --profile a,b` compares profiles on each file,
//! `scan --rechunk N` re-cuts the text first, and `tune` tries a parameter
//! at many values (issue 12; its own tests are in tests/tune.rs).

mod common;

use common::loopscope_at_root as loopscope;
use serde_json::Value;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = loopscope().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn scan_compares_profiles_in_one_table_per_file() {
    let (code, out, err) = run(&[
        "scan",
        "--profile",
        "seed,gemini-cli,extended",
        "sample-logs/identical-tool-calls.jsonl",
        "sample-logs/miss-paraphrase-loop-en.jsonl",
    ]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("sample-logs/identical-tool-calls.jsonl: 51 events"),
        "{out}"
    );
    assert!(
        lines[1].contains("first detection") && lines[1].contains("streamed after it"),
        "{out}"
    );
    let row = |profile: &str, from: usize| {
        lines[from..]
            .iter()
            .find(|l| l.trim_start().starts_with(profile))
            .unwrap()
            .to_string()
    };
    let gemini: Vec<String> = row("gemini-cli", 0)
        .split("  ")
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(gemini[1..4], ["tool-repeat (1 in all)", "42", "event 6"], "{out}");
    assert!(row("extended", 0).contains("tool-loop"), "{out}");
    let second = lines
        .iter()
        .position(|l| l.starts_with("sample-logs/miss-paraphrase"))
        .unwrap();
    assert!(row("seed", second).contains("no detection"), "{out}");
    assert!(row("extended", second).contains("paraphrase-loop"), "{out}");
}

#[test]
fn scan_compare_json_is_one_record_per_profile_per_file() {
    let (_, out, _) = run(&[
        "scan",
        "--json",
        "--profile",
        "seed,extended",
        "sample-logs/fp-code-block.jsonl",
    ]);
    let recs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["type"], "profile");
    assert_eq!(recs[0]["profile"], "seed");
    assert_eq!(recs[0]["first"]["detector"], "block-cycle");
    assert_eq!(recs[0]["first"]["event"], 220);
    assert_eq!(recs[0]["first"]["line"], 221);
    assert_eq!(recs[0]["first"]["evidence_from"], "char 2823");
    // 288 events; what streamed after event 220 is the answer's rest.
    let after = &recs[0]["after_first"];
    assert!(after["chars"].as_u64().unwrap() > 500, "{after}");
    assert_eq!(after["tokens_estimated"], true);
    assert_eq!(recs[1]["profile"], "extended");
    assert_eq!(
        recs[1]["first"],
        Value::Null,
        "extended leaves this false positive alone"
    );
}

#[test]
fn compare_applies_sets_and_detectors_where_they_run() {
    let (code, out, err) = run(&[
        "scan",
        "--profile",
        "seed,gemini-cli",
        "--set",
        "block-cycle.min_matches=30",
        "--set",
        "list-cycle.min_matches=30",
        "sample-logs/fp-code-block.jsonl",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("seed        no detection"), "{out}");
    let (code, _, err) = run(&[
        "scan",
        "--profile",
        "gemini-cli,extended",
        "--set",
        "block-cycle.min_matches=30",
        "sample-logs/fp-code-block.jsonl",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("runs in none of the profiles compared"), "{err}");
    let (code, _, err) = run(&["view", "--profile", "seed,seed,x", "a.jsonl"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn rechunking_shows_a_verdict_that_depends_on_delta_boundaries() {
    let file = "sample-logs/chanting-content-en.jsonl";
    let (code, out, _) = run(&["scan", "--profile", "gemini-cli", file]);
    assert_eq!(code, 1);
    assert!(out.contains("event 66 line 67  chunk-chant"), "{out}");
    // One char per delta: gemini-cli's content check sees no chunk repeat.
    let (code, out, _) = run(&["scan", "--profile", "gemini-cli", "--rechunk", "1", file]);
    assert_eq!(code, 0, "{out}");
    // Longer deltas: it fires later in the recorded stream. Events are
    // numbered as re-cut (as the viewer's :rechunk numbers them, and as the
    // reason's numbers are); `recorded_event` and the line name the
    // recorded delta that held the last char.
    let (_, out, _) = run(&["scan", "--profile", "gemini-cli", "--rechunk", "500", "--json", file]);
    let d: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(d["detector"], "chunk-chant");
    let recorded = d["recorded_event"].as_u64().unwrap();
    assert!(recorded > 66 && recorded < 85, "{d}");
    assert!(
        d["event"].as_u64().unwrap() < recorded,
        "500-char deltas are fewer events: {d}"
    );
    let (_, out, _) = run(&["scan", "--profile", "gemini-cli", "--rechunk", "500", file]);
    assert!(
        out.contains(&format!("event {} line {}  chunk-chant", d["event"], recorded + 1)),
        "{out}"
    );
    // A tool detection's event, its events and the numbers in its reason
    // are one numbering.
    let (_, out, _) = run(&[
        "scan",
        "--json",
        "--rechunk",
        "1",
        "--detectors",
        "tool-repeat",
        "sample-logs/identical-tool-calls.jsonl",
    ]);
    let d: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let events = d["events"].as_array().unwrap();
    let (first, last) = (&events[0], events.last().unwrap());
    assert_eq!(&d["event"], last, "{d}");
    assert!(
        d["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("events {first}..{last}")),
        "{d}"
    );
    assert_eq!(d["recorded_event"], 42, "{d}");
    let (code, _, err) = run(&["scan", "--rechunk", "0", file]);
    assert_eq!(code, 2, "{err}");
}

mod viewer_state {
    //! The same answers inside the viewer: `:` commands and the parameter
    //! editor change what fired, at once, and say so.

    use std::time::Instant;

    use super::common::viewer::*;
    use crossterm::event::KeyCode;
    use loopscope::tui::app::Overlay;
    use loopscope::tui::layout::Pane;
    use loopscope::tui::App;
    use loopscope_core::Profile;

    fn command(app: &mut App, text: &str, now: Instant) {
        chars(app, ":", now);
        chars(app, text, now);
        key(app, KeyCode::Enter, now);
    }

    fn fired(app: &App) -> Vec<(&'static str, usize, usize)> {
        app.tape
            .detections()
            .iter()
            .map(|d| (d.detector, d.event, d.run))
            .collect()
    }

    #[test]
    fn set_silences_a_false_positive_and_reset_brings_it_back() {
        let now = Instant::now();
        let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (120, 40), paused(), now);
        chars(&mut app, "G", now);
        assert_eq!(fired(&app), vec![("block-cycle", 220, 0), ("list-cycle", 220, 0)]);
        command(&mut app, "set block-cycle.min_matches=21", now);
        assert_eq!(fired(&app), vec![("list-cycle", 220, 0)]);
        let text = screen(&app);
        assert!(text.lines().next().unwrap().contains("seed*"), "{text}");
        assert!(
            app.flash.as_ref().unwrap().text.contains("1 detection"),
            "{:?}",
            app.flash
        );
        assert!(!text.contains("⚠ block-cycle"), "the timeline follows: {text}");
        command(&mut app, "diff", now);
        let Some(Overlay::Inspector(i)) = &app.overlay else {
            panic!("no diff shown")
        };
        assert!(i.plain().contains("block-cycle.min_matches: 6 -> 21"), "{}", i.plain());
        assert!(i.plain().contains("min_matches = 21"), "the config file to write");
        key(&mut app, KeyCode::Esc, now);
        command(&mut app, "reset", now);
        assert_eq!(fired(&app).len(), 2);
        assert!(!screen(&app).lines().next().unwrap().contains("seed*"));
        command(&mut app, "set nope.x=1", now);
        assert!(app.flash.as_ref().unwrap().text.starts_with("✗"), "{:?}", app.flash);
    }

    #[test]
    fn the_parameter_editor_steps_a_value_and_writes_a_config() {
        let now = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let mut app = app_with(sample("fp-code-block.jsonl"), Profile::Seed, (120, 40), paused(), now);
        chars(&mut app, "e", now);
        while app.focus != Pane::Detectors {
            key(&mut app, KeyCode::Tab, now);
        }
        assert_eq!(app.states[app.detectors.selected].id, "block-cycle");
        // checkpoints, max_period, min_matches: the third.
        chars(&mut app, "ll", now);
        let min_matches = |app: &App| {
            app.setup
                .detectors
                .iter()
                .find(|c| c.info.id == "block-cycle")
                .unwrap()
                .params
                .count("min_matches")
        };
        chars(&mut app, "+++", now);
        assert_eq!(min_matches(&app), 9);
        chars(&mut app, "-", now);
        assert_eq!(min_matches(&app), 8);
        // `=` opens empty, the value as its hint: typing replaces it.
        chars(&mut app, "=", now);
        let p = app.prompt.as_ref().unwrap();
        assert_eq!((p.text.as_str(), p.hint.as_deref()), ("", Some("8")));
        chars(&mut app, "30", now);
        key(&mut app, KeyCode::Enter, now);
        assert_eq!(min_matches(&app), 30);
        assert!(fired(&app).iter().all(|d| d.0 != "block-cycle"));
        let path = dir.path().join("tuned.toml");
        command(&mut app, &format!("write {}", path.display()), now);
        let written = std::fs::read_to_string(&path).unwrap();
        let setup = loopscope_core::Setup::resolve_with(&Default::default(), &written).unwrap();
        let c = setup.detectors.iter().find(|c| c.info.id == "block-cycle").unwrap();
        assert_eq!(c.params.count("min_matches"), 30, "--config reads what :write wrote");
    }

    #[test]
    fn a_change_at_the_start_of_a_long_stream_reruns_the_rest_as_time_passes() {
        let now = Instant::now();
        let mut events = sample("fp-code-block.jsonl");
        // Enough text that the part after the position needs more than one slice.
        let clean = sample("long-clean-session.jsonl");
        while events.len() < 40_000 {
            events.extend(clean.iter().cloned());
        }
        let mut app = app_with(events, Profile::Seed, (120, 40), paused(), now);
        let before = app.tape.detections().len();
        command(&mut app, "set max-turns.max_turns=5000", now);
        assert!(app.tape.pending(), "only the shown part (none) was re-run at once");
        let mut ticks = 0;
        while app.tape.pending() {
            app.update(loopscope::tui::Action::Tick, now);
            ticks += 1;
            assert!(ticks < 10_000);
        }
        assert!(ticks > 1, "{ticks} slices");
        assert_eq!(app.tape.detections().len(), before);
        assert!(app.timeline.timeline.entries().iter().any(|e| matches!(
            e.kind,
            loopscope::tui::timeline::EntryKind::Detection {
                detector: "block-cycle",
                ..
            }
        )));
    }

    #[test]
    fn profile_and_detectors_switch_what_runs() {
        let now = Instant::now();
        let mut app = app_with(
            sample("miss-paraphrase-loop-en.jsonl"),
            Profile::Seed,
            (120, 40),
            paused(),
            now,
        );
        chars(&mut app, "G", now);
        assert!(fired(&app).is_empty());
        command(&mut app, "profile extended", now);
        assert_eq!(app.setup.profile, Profile::Extended);
        assert_eq!(fired(&app)[0].0, "paraphrase-loop");
        command(&mut app, "detectors text-loop,tool-loop", now);
        assert!(fired(&app).is_empty(), "paraphrase-loop no longer runs");
        assert_eq!(app.setup.ids(), vec!["text-loop", "tool-loop"]);
    }

    #[test]
    fn compare_marks_each_profiles_detections_and_sums_them_up() {
        let now = Instant::now();
        let mut app = app_with(
            sample("identical-tool-calls.jsonl"),
            Profile::Seed,
            (140, 40),
            paused(),
            now,
        );
        chars(&mut app, "G", now);
        command(&mut app, "compare gemini-cli,extended", now);
        assert_eq!(app.setup.profile, Profile::GeminiCli);
        let runs: Vec<usize> = app.tape.detections().iter().map(|d| d.run).collect();
        assert!(runs.contains(&0) && runs.contains(&1), "{runs:?}");
        let heads = app.compare_headers();
        assert!(heads[0].starts_with("gemini-cli: tool-repeat at 42"), "{heads:?}");
        assert!(
            heads[1].starts_with("extended: tool-loop at 25 (from event 6)"),
            "{heads:?}"
        );
        let text = screen(&app);
        assert!(text.contains("⚠ [extended] tool-loop"), "{text}");
        assert!(text.contains("gemini-cli vs extended"), "{text}");
        insta::assert_snapshot!("compare_view", text);
        // e steps through both profiles' detections.
        chars(&mut app, "g", now);
        key(&mut app, KeyCode::Home, now);
        chars(&mut app, "e", now);
        assert_eq!(app.selected_detection().unwrap().run, 1, "extended fires first, at 25");
        command(&mut app, "compare off", now);
        assert_eq!(app.tape.setups().len(), 1);
    }

    #[test]
    fn rechunk_recuts_the_text_and_off_goes_back() {
        let now = Instant::now();
        let mut app = app_with(
            sample("chanting-content-en.jsonl"),
            Profile::GeminiCli,
            (120, 40),
            paused(),
            now,
        );
        chars(&mut app, "G", now);
        let recorded = app.tape.len();
        assert_eq!(fired(&app), vec![("chunk-chant", 66, 0)]);
        command(&mut app, "rechunk 1", now);
        assert!(app.tape.len() > recorded * 5, "one char per delta");
        assert!(
            fired(&app).is_empty(),
            "gemini-cli's chunk check sees no repeat in 1-char deltas"
        );
        let text = screen(&app);
        assert!(text.contains("re-cut into 1-char deltas"), "{text}");
        while app.focus != Pane::Detectors {
            key(&mut app, KeyCode::Tab, now);
        }
        chars(&mut app, "g", now);
        while app.states[app.detectors.selected].id != "chunk-chant" {
            chars(&mut app, "j", now);
        }
        let note = app.rechunk_note().unwrap();
        assert!(
            note.contains("disappears (as recorded it fired at event 66, char 775)"),
            "{note}"
        );
        assert!(screen(&app).contains("it disappears"));
        command(&mut app, "rechunk 500", now);
        assert_eq!(fired(&app).len(), 1);
        let note = app.rechunk_note().unwrap();
        assert!(note.contains("it moves: at recorded event 82"), "{note}");
        command(&mut app, "rechunk off", now);
        assert_eq!(app.tape.len(), recorded);
        assert_eq!(fired(&app), vec![("chunk-chant", 66, 0)]);
        assert_eq!(app.cursor, recorded, "the position is kept");
    }
}
