//! The checkpoint detectors through the engine, covering the seed design's
//! own test list: type 3/1/2, the periodic tail, checkpoint boundaries,
//! empty and very long text, "哈哈哈", code blocks, normal enumerations, and
//! char (not byte) offsets for CJK and emoji.

mod common;

use common::{run, setup, Rng, LOWER};
use loopscope_core::{Engine, Event, Profile, Status};

const CHECKPOINT_DETECTORS: [&str; 3] = ["short-repeat", "block-cycle", "list-cycle"];

/// prompt, request, then `text` as reasoning deltas of `step` chars.
fn stream(text: &str, step: usize) -> Vec<Event> {
    let chars: Vec<char> = text.chars().collect();
    let mut events = vec![Event::prompt("fix it"), Event::request()];
    events.extend(
        chars
            .chunks(step)
            .map(|c| Event::reasoning(&c.iter().collect::<String>())),
    );
    events
}

/// Prose of distinct sentences, `n` chars long.
fn prose(n: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut s = String::new();
    while s.chars().count() < n {
        let words: Vec<String> = (0..6)
            .map(|_| {
                let len = 3 + (rng.next() % 6) as usize;
                rng.text(LOWER, len)
            })
            .collect();
        s += &format!("The {} is {}. ", words.join(" "), rng.next() % 1000);
    }
    s.chars().take(n).collect()
}

fn fire(text: &str, step: usize) -> Vec<loopscope_core::Detection> {
    run(&setup(Profile::Seed, &CHECKPOINT_DETECTORS), &stream(text, step))
}

fn slice(text: &str, span: loopscope_core::detect::Span) -> String {
    text.chars().skip(span.start).take(span.len()).collect()
}

#[test]
fn type3_a_stutter_before_the_first_checkpoint_is_short_repeat() {
    let text = prose(1900, 1) + &"思考".repeat(60);
    let found = fire(&text, 10);
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!(d.detector, "short-repeat");
    assert_eq!((d.checkpoint, d.at_char, d.period), (Some(2000), Some(2000), Some(2)));
    // The run starts where the stutter starts, and each span is one "思考".
    assert_eq!(d.spans[0].start, 1900);
    assert!(d.spans.iter().all(|s| slice(&text, *s) == "思考"));
    assert_eq!(d.event, 2 + 2000 / 10 - 1);
}

#[test]
fn type3_a_stutter_that_starts_after_2000_is_missed_by_design() {
    let text = prose(2100, 2) + &"思考".repeat(400);
    let found = fire(&text, 10);
    assert!(found.iter().all(|d| d.detector != "short-repeat"), "{found:?}");
}

#[test]
fn type1_a_sentence_loop_is_found_at_3000() {
    let unit = "Let me re-read the config. The value looks fine. ";
    let text = prose(2200, 3) + &unit.repeat(40);
    let found = fire(&text, 17);
    let d = found
        .iter()
        .find(|d| d.detector == "block-cycle")
        .expect("block-cycle fires");
    assert_eq!((d.checkpoint, d.period), (Some(3000), Some(2)));
    assert!(d.at_char.unwrap() >= 3000 && d.at_char.unwrap() < 3017);
    assert!(d.matches.unwrap() >= 6);
    // The run holds matches + period blocks; the first copy is the first `period` spans.
    assert_eq!(d.spans.len(), d.matches.unwrap() + 2);
    assert_eq!(slice(&text, d.spans[0]).trim(), slice(&text, d.spans[2]).trim());
    let blocks: Vec<String> = d.spans.iter().map(|s| slice(&text, *s)).collect();
    assert!(blocks.contains(&" The value looks fine".to_string()), "{blocks:?}");
}

#[test]
fn type1_a_loop_starting_after_3000_is_found_at_5000_and_after_5000_missed() {
    let unit = "I should check the cache again. ";
    let late = prose(3300, 4) + &unit.repeat(80);
    let d = fire(&late, 13)
        .into_iter()
        .find(|d| d.detector == "block-cycle")
        .unwrap();
    assert_eq!(d.checkpoint, Some(5000));
    let too_late = prose(5200, 5) + &unit.repeat(200);
    assert!(fire(&too_late, 13).is_empty());
}

#[test]
fn type2_a_numbered_list_whose_numbers_grow_is_list_cycle() {
    let mut text = prose(2100, 6) + "\n";
    let mut i = 1;
    while text.chars().count() < 3300 {
        text += &format!("{i}. 检查配置文件是否存在\n{}. 重新运行失败的测试\n", i + 1);
        i += 2;
    }
    let found = fire(&text, 11);
    assert_eq!(found.len(), 1, "only list-cycle: the numbers make blocks differ");
    let d = &found[0];
    assert_eq!(
        (d.detector, d.checkpoint, d.period),
        ("list-cycle", Some(3000), Some(2))
    );
    assert_eq!(slice(&text, d.spans[0]), "检查配置文件是否存在");
}

#[test]
fn normal_enumerations_and_prose_are_clear() {
    let mut text = String::new();
    for i in 1..200 {
        text += &format!("{i}. Step {i}: open module_{i}.rs and check function f{i} for the bug.\n");
    }
    assert!(fire(&text, 25).is_empty());
    assert!(fire(&prose(6000, 7), 20).is_empty());
}

#[test]
fn single_character_laughter_and_dots_are_left_alone() {
    assert!(fire(&"哈".repeat(6000), 10).is_empty());
    assert!(fire(&(prose(1900, 8) + &".".repeat(300)), 10).is_empty());
    assert!(fire(&(prose(1900, 9) + &" ".repeat(300)), 10).is_empty());
}

#[test]
fn a_code_block_fires_only_when_its_lines_really_repeat_six_times() {
    let code = "```rust\nfn area(r: f64) -> f64 {\n    let pi = 3.14159;\n    pi * r * r\n}\n\nfn main() {\n    println!(\"{}\", area(1.0));\n    println!(\"{}\", area(2.0));\n}\n```\n";
    let mut text = prose(2050, 10);
    while text.chars().count() < 3100 {
        text += code;
        text += &prose(120, text.len() as u64);
        text += "\n";
    }
    assert!(fire(&text, 20).is_empty(), "distinct code lines are not a loop");
    // The same assertion line eight times at the end of the segment is, by the rule, a cycle.
    let text = prose(2650, 11) + "\n" + &"    assert_eq!(parse(\"\"), Err(Empty));\n".repeat(12);
    let found = fire(&text, 20);
    assert!(
        found.iter().any(|d| d.detector == "list-cycle" && d.period == Some(1)),
        "{found:?}"
    );
}

#[test]
fn checkpoints_run_when_the_buffer_first_reaches_them() {
    // Exactly 2000 chars: the checkpoint runs on the event that reaches it.
    let mut events = stream(&prose(1999, 12), 1999);
    let set = setup(Profile::Seed, &CHECKPOINT_DETECTORS);
    let mut engine = Engine::new(&set);
    for e in &events {
        engine.push(e);
    }
    assert!(engine.checkpoint_runs().is_empty(), "1999 chars: nothing ran");
    events.push(Event::reasoning("x"));
    engine.push(events.last().unwrap());
    let runs = engine.checkpoint_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].detector, runs[0].checkpoint, runs[0].at_char),
        ("short-repeat", 2000, 2000)
    );
}

#[test]
fn one_event_crossing_several_checkpoints_runs_each_in_order() {
    let set = setup(Profile::Seed, &CHECKPOINT_DETECTORS);
    let mut engine = Engine::new(&set);
    let text = prose(6000, 13);
    for e in stream(&text, 6000) {
        engine.push(&e);
    }
    let runs: Vec<(usize, &str, usize)> = engine
        .checkpoint_runs()
        .iter()
        .map(|r| (r.checkpoint, r.detector, r.at_char))
        .collect();
    assert_eq!(
        runs,
        vec![
            (2000, "short-repeat", 6000),
            (3000, "block-cycle", 6000),
            (3000, "list-cycle", 6000),
            (5000, "block-cycle", 6000),
            (5000, "list-cycle", 6000),
        ]
    );
    // One huge event that is all loop fires at 3000 on [2000, 6000), then stays fired.
    let found = fire(&"Check the file again. ".repeat(300), 100_000);
    assert_eq!(found.iter().filter(|d| d.detector == "block-cycle").count(), 1);
    let d = found.iter().find(|d| d.detector == "block-cycle").unwrap();
    assert_eq!((d.checkpoint, d.at_char, d.event), (Some(3000), Some(6600), 2));
}

#[test]
fn a_request_starts_the_buffer_and_the_checkpoints_over() {
    // Too long to repeat 4 times in short-repeat's 200-char window.
    let unit = "Retry the download and compare the checksum file once more. ";
    // 2000 chars in the first request and 1500 in the second: the loop never
    // has 3000 chars of one request, so block-cycle never runs on it.
    let mut events = stream(&(prose(1000, 14) + &unit.repeat(17)), 20);
    assert!(
        events
            .iter()
            .filter_map(|e| match &e.kind {
                loopscope_core::EventKind::Reasoning { text } => Some(text.chars().count()),
                _ => None,
            })
            .sum::<usize>()
            < 3000
    );
    events.push(Event::request());
    events.extend(stream(&unit.repeat(25), 20).into_iter().skip(2));
    assert!(run(&setup(Profile::Seed, &CHECKPOINT_DETECTORS), &events).is_empty());
    // Offsets restart after a request: the loop is found in request-relative chars.
    let mut events = vec![
        Event::prompt("p"),
        Event::request(),
        Event::reasoning(&prose(500, 15)),
        Event::request(),
    ];
    events.extend(stream(&(prose(2100, 16) + &unit.repeat(30)), 20).into_iter().skip(2));
    let found = run(&setup(Profile::Seed, &CHECKPOINT_DETECTORS), &events);
    let d = found.iter().find(|d| d.detector == "block-cycle").unwrap();
    assert!(d.spans[0].start >= 2000 && d.spans[0].start < 2200, "{:?}", d.spans[0]);
    assert_eq!(d.at_char, Some(3000));
}

#[test]
fn empty_and_very_long_text() {
    let mut events = vec![Event::prompt("p"), Event::request()];
    events.extend(std::iter::repeat_n(Event::reasoning(""), 100));
    assert!(run(&setup(Profile::Seed, &CHECKPOINT_DETECTORS), &events).is_empty());
    // A megabyte of distinct prose in big and small pieces: clear, no panic.
    let long = prose(1_000_000, 17);
    assert!(fire(&long, 997).is_empty());
}

#[test]
fn cjk_and_emoji_offsets_are_chars() {
    let unit = "我再检查一下配置🙂。然后运行测试🔁。";
    let text = prose(2100, 18) + &unit.repeat(60);
    let found = fire(&text, 7);
    let d = found.iter().find(|d| d.detector == "block-cycle").unwrap();
    let blocks: Vec<String> = d.spans.iter().map(|s| slice(&text, *s)).collect();
    assert!(
        blocks
            .iter()
            .all(|b| b == "我再检查一下配置🙂" || b == "然后运行测试🔁"),
        "{blocks:?}"
    );
    // 7-char deltas: the event that reaches 3000 ends at the next multiple of 7.
    assert_eq!(d.at_char, Some(3003));
    assert_eq!(d.event, 1 + 3003 / 7);
}

#[test]
fn states_report_idle_clear_with_near_miss_and_fired() {
    let set = setup(Profile::Seed, &CHECKPOINT_DETECTORS);
    let mut engine = Engine::new(&set);
    let unit = "Check it. Check that. ";
    let text = prose(1000, 19) + &prose(1500, 20) + &unit.repeat(60);
    let events = stream(&text, 10);
    let status_of = |e: &Engine, id: &str| e.states().into_iter().find(|s| s.id == id).unwrap().status;
    for e in &events[..50] {
        engine.push(e);
    }
    match status_of(&engine, "block-cycle") {
        Status::Idle { detail } => assert!(detail.starts_with("runs at 3000 chars of reasoning"), "{detail}"),
        other => panic!("{other:?}"),
    }
    for e in &events[50..2 + 210] {
        engine.push(e);
    }
    match status_of(&engine, "short-repeat") {
        Status::Clear {
            checkpoint,
            near_miss,
            next,
        } => {
            assert_eq!((checkpoint, next), (2000, None));
            assert!(!near_miss.is_empty());
        }
        other => panic!("{other:?}"),
    }
    for e in &events[212..] {
        engine.push(e);
    }
    assert!(matches!(status_of(&engine, "block-cycle"), Status::Fired { .. }));
    match status_of(&engine, "list-cycle") {
        Status::Clear {
            checkpoint,
            near_miss,
            next,
        } => {
            assert_eq!((checkpoint, next), (3000, Some(5000)));
            assert!(near_miss.contains("complete lines"), "{near_miss}");
        }
        other => panic!("{other:?}"),
    }
}
