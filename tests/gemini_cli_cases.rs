//! Every content and tool case of shared/design/gemini-cli-cases.md, with the
//! event at which profile `gemini-cli` must first fire (or not), and what
//! profile `seed` does with the same stream. Indices are 0-based over the
//! listed events; each stream starts with one `prompt`, as the native
//! acceptance files do.

mod common;

use common::{run, setup, tool, Rng, ALNUM, LOWER};
use loopscope_core::{Event, Profile};

/// `createRepetitiveContent(k, n)`: "This is a unique sentence, id=k. " repeated, cut to n chars.
fn r(k: u32, n: usize) -> String {
    format!("This is a unique sentence, id={k}. ")
        .repeat(n)
        .chars()
        .take(n)
        .collect()
}

fn r1() -> String {
    r(1, 50)
}

fn c(text: &str) -> Event {
    Event::content(text)
}

fn tv() -> Event {
    tool("testTool", r#"{"param":"value"}"#)
}

fn times(n: usize, e: Event) -> Vec<Event> {
    vec![e; n]
}

fn r1s(n: usize) -> Vec<Event> {
    times(n, c(&r1()))
}

struct Case {
    name: &'static str,
    events: Vec<Event>,
    gemini: Option<usize>,
    seed: Option<usize>,
    /// gemini-cli's trigger_char: end of the last chunk occurrence, for content loops.
    trig: Option<usize>,
}

fn case(name: &'static str, events: Vec<Event>, gemini: Option<usize>, seed: Option<usize>) -> Case {
    Case {
        name,
        events,
        gemini,
        seed,
        trig: None,
    }
}

fn with_trig(mut c: Case, trig: usize) -> Case {
    c.trig = Some(trig);
    c
}

fn cat(parts: Vec<Vec<Event>>) -> Vec<Event> {
    parts.into_iter().flatten().collect()
}

fn cyclic(n: usize, calls: &[Event]) -> Vec<Event> {
    calls.iter().cycle().take(n).cloned().collect()
}

fn file(name: &str) -> Event {
    tool("read_file", &format!(r#"{{"file_path":"{name}"}}"#))
}

fn cases() -> Vec<Case> {
    let mut rng = Rng::new(20250821);
    let user1 = "I will not output any text.\n  I will just end the turn.\n  I am done.\n  I will not do anything else.\n  I will wait for the user's next command.\n";
    let user2 =
        "I have added all the requested logs and verified the test file. I will now mark the task as complete.\n  ";
    let thought = "I need to check the file. The file does not exist. I will create the file. ";
    let shared_prefix: String = (0..15)
        .map(|i| format!("- projects/my-google-cloud-project-12345/locations/us-central1/services/{i}\n"))
        .collect();
    let unit250 = rng.text(LOWER, 250);
    let unit251 = rng.text(LOWER, 251);
    let lines = |letters: &str| -> Vec<Event> {
        let l: Vec<char> = letters.chars().collect();
        (0..12)
            .map(|i| {
                c(&format!(
                    "Line {} says this is a repeated long sentence of text ok. ",
                    l[i % l.len()]
                ))
            })
            .collect()
    };
    let reset_formats = |fmts: &[&str], base: u32| -> Vec<Event> {
        let mut ev = Vec::new();
        for (i, f) in fmts.iter().enumerate() {
            ev.push(Event::prompt("reset"));
            ev.extend(r1s(9));
            ev.push(c(&format!("\n{f}")));
            ev.extend(times(9, c(&r(base + i as u32, 50))));
        }
        ev
    };
    let word_tokens: Vec<Event> = ["I", " will", " check", " the", " file", " again", ".", " "]
        .iter()
        .cycle()
        .take(8 * 40)
        .map(|t| c(t))
        .collect();
    vec![
        // Tool call loop detection (tests 1-12)
        case("tool_lt_threshold", times(4, tv()), None, None),
        case("tool_at_threshold", times(5, tv()), Some(4), Some(4)),
        case("tool_subsequent", times(6, tv()), Some(4), Some(4)),
        case(
            "tool_different",
            cyclic(
                9,
                &[
                    tool("testTool", r#"{"param":"value1"}"#),
                    tool("testTool", r#"{"param":"value2"}"#),
                    tool("anotherTool", r#"{"param":"value1"}"#),
                ],
            ),
            None,
            None,
        ),
        case(
            "tool_other_event_between",
            cat(vec![times(4, tv()), vec![Event::reasoning("thinking")], vec![tv()]]),
            Some(5),
            Some(5),
        ),
        case("tool_disabled_after_detection", times(7, tv()), Some(4), Some(4)),
        case(
            "tool_cycle2",
            cyclic(30, &[file("loop_a.txt"), file("loop_b.txt")]),
            Some(9),
            None,
        ),
        case(
            "tool_cycle3",
            cyclic(20, &[file("loop_a.txt"), file("loop_b.txt"), file("loop_c.txt")]),
            Some(14),
            None,
        ),
        case(
            "tool_cycle5",
            cyclic(
                30,
                &(1..=5)
                    .map(|i| tool("t", &format!(r#"{{"id":{i}}}"#)))
                    .collect::<Vec<_>>(),
            ),
            Some(24),
            None,
        ),
        case(
            "tool_alternating_broken",
            ["a", "b", "a", "b", "c", "a", "b", "a", "b"]
                .iter()
                .map(|x| file(&format!("loop_{x}.txt")))
                .collect(),
            None,
            None,
        ),
        // Content loop detection (tests 13-21)
        case(
            "content_random",
            (0..1000).map(|_| c(&rng.text(ALNUM, 10))).collect(),
            None,
            None,
        ),
        with_trig(case("content_repeat_consecutive", r1s(10), Some(9), Some(9)), 500),
        case("content_list_shared_prefix", vec![c(&shared_prefix)], None, Some(0)),
        case(
            "content_far_apart",
            (0..10).flat_map(|_| [c(&r1()), c(&rng.text(ALNUM, 500))]).collect(),
            None,
            None,
        ),
        with_trig(
            case("content_150_pattern", times(12, c(&r(1, 150))), Some(2), Some(2)),
            383,
        ),
        with_trig(
            case("content_user_example_1", times(15, c(user1)), Some(9), Some(9)),
            1337,
        ),
        with_trig(
            case("content_user_example_2", times(15, c(user2)), Some(9), Some(9)),
            986,
        ),
        with_trig(
            case(
                "content_alternating_short",
                times(30, c("Thinking... Done. ")),
                Some(11),
                Some(11),
            ),
            212,
        ),
        with_trig(
            case("content_thought_pattern", times(15, c(thought)), Some(9), Some(9)),
            725,
        ),
        // Code blocks (tests 22-30)
        case(
            "cb_inside",
            cat(vec![vec![c("```\n")], r1s(10), vec![c("\n```")]]),
            None,
            None,
        ),
        case(
            "cb_transition_into",
            cat(vec![r1s(8), vec![c("```javascript\n")], r1s(10)]),
            None,
            None,
        ),
        case(
            "cb_already_inside",
            cat(vec![vec![c("Here is some code:\n```\n")], r1s(15)]),
            None,
            None,
        ),
        case(
            "cb_multiple_fences",
            cat(vec![
                vec![c("Normal text "), c("```\n")],
                r1s(5),
                vec![c("```\n"), c("```python\n")],
            ]),
            None,
            None,
        ),
        with_trig(
            case(
                "cb_loop_outside",
                cat(vec![vec![c("```"), c("\nsome code\n"), c("```")], r1s(10)]),
                Some(12),
                Some(12),
            ),
            517,
        ),
        case(
            "cb_multiple_blocks_no_loop",
            vec![c("```\ncode1\n```"), c("\nsome text\n"), c("```\ncode2\n```")],
            None,
            None,
        ),
        with_trig(
            case(
                "cb_mixed_code_and_loop",
                cat(vec![vec![c("```"), c("\ncode1\n"), c("```")], r1s(10)]),
                Some(12),
                Some(12),
            ),
            513,
        ),
        case(
            "cb_long_code_repeating_tokens",
            cat(vec![
                vec![c("```\n")],
                times(20, c("for (let i = 0; i < 10; i++) { console.log(i); }")),
                vec![c("\n```")],
            ]),
            None,
            None,
        ),
        case(
            "cb_fence_resets",
            cat(vec![r1s(9), vec![c("```")], r1s(10)]),
            None,
            None,
        ),
        // Structural resets (tests 31-37)
        case(
            "reset_on_table",
            cat(vec![r1s(9), vec![c("| Column 1 | Column 2 |")], r1s(9)]),
            None,
            None,
        ),
        case(
            "reset_on_list_item",
            cat(vec![r1s(9), vec![c("* List item")], r1s(9)]),
            None,
            None,
        ),
        case(
            "reset_on_heading",
            cat(vec![r1s(9), vec![c("## Heading")], r1s(9)]),
            None,
            None,
        ),
        case(
            "reset_on_blockquote",
            cat(vec![r1s(9), vec![c("> Quote text")], r1s(9)]),
            None,
            None,
        ),
        case(
            "reset_list_formats",
            reset_formats(
                &[
                    "* Bullet item",
                    "- Dash item",
                    "+ Plus item",
                    "1. Numbered item",
                    "42. Another numbered item",
                ],
                100,
            ),
            None,
            None,
        ),
        case(
            "reset_table_formats",
            reset_formats(&["| Column 1 | Column 2 |", "|---|---|", "|++|++|", "+---+---+"], 200),
            None,
            None,
        ),
        case(
            "reset_heading_levels",
            reset_formats(
                &[
                    "# H1 Heading",
                    "## H2 Heading",
                    "### H3 Heading",
                    "#### H4 Heading",
                    "##### H5 Heading",
                    "###### H6 Heading",
                ],
                300,
            ),
            None,
            None,
        ),
        // Other (tests 38-44)
        case("edge_empty_content", vec![c("")], None, None),
        case("divider_dashes", times(15, c(&"-".repeat(50))), None, None),
        case("divider_box_drawing", times(15, c(&"╭─".repeat(25))), None, None),
        case("strike_two_detections", times(7, tv()), Some(4), Some(4)),
        case(
            "reset_tool_resets_content",
            cat(vec![times(9, c("Some content.")), vec![tv(), c("Fresh content.")]]),
            None,
            None,
        ),
        case(
            "general_unhandled",
            times(2, Event::note("unhandled_event")),
            None,
            None,
        ),
        // Extra probes: where the quirks, units and periods check show
        case(
            "quirk_dash_list_not_reset_same_content",
            cat(vec![r1s(9), vec![c("\n- Dash item")], r1s(9)]),
            Some(10),
            None,
        ),
        case(
            "quirk_star_list_reset_same_content",
            cat(vec![r1s(9), vec![c("\n* Star item")], r1s(9)]),
            None,
            None,
        ),
        case(
            "quirk_uppercase_chant_is_divider",
            times(20, c(&"ABCDE".repeat(10))),
            None,
            Some(1),
        ),
        case(
            "quirk_digits_chant_is_divider",
            times(20, c(&"0123456789".repeat(5))),
            None,
            Some(2),
        ),
        case(
            "quirk_lowercase_chant",
            times(20, c(&"abcde".repeat(10))),
            Some(1),
            Some(1),
        ),
        case(
            "quirk_chant_single_event",
            vec![c(&"This is a repeating sentence. ".repeat(40))],
            Some(0),
            Some(0),
        ),
        case(
            "quirk_chant_one_char_events",
            "This is a repeating sentence. "
                .repeat(20)
                .chars()
                .map(|ch| c(&ch.to_string()))
                .collect(),
            None,
            Some(319),
        ),
        case("quirk_word_tokens_chant", word_tokens, None, Some(84)),
        case("quirk_period_250", times(12, c(&unit250)), Some(9), Some(9)),
        case("quirk_period_251", times(12, c(&unit251)), None, None),
        case("quirk_5_distinct_periods", lines("ABCDE"), Some(9), Some(9)),
        case("quirk_6_distinct_periods", lines("ABCDEF"), None, Some(9)),
        case(
            "quirk_unclosed_fence_survives_reset",
            cat(vec![vec![c("```\n"), Event::prompt("reset")], r1s(20)]),
            None,
            Some(11),
        ),
        case("quirk_table_row_chant", times(20, c("| a | b |\n")), None, None),
        case(
            "quirk_tool_args_key_order",
            cat(vec![
                times(4, tool("t", r#"{"a":1,"b":2}"#)),
                vec![tool("t", r#"{"b":2,"a":1}"#)],
            ]),
            None,
            Some(4),
        ),
        case(
            "quirk_tool_args_int_key_order",
            cat(vec![
                times(4, tool("t", r#"{"b":1,"2":2}"#)),
                vec![tool("t", r#"{"2":2,"b":1}"#)],
            ]),
            Some(4),
            Some(4),
        ),
        case(
            "quirk_tool_args_num_format",
            cat(vec![times(4, tool("t", r#"{"a":1}"#)), vec![tool("t", r#"{"a":1.0}"#)]]),
            Some(4),
            Some(4),
        ),
        case(
            "quirk_content_between_tools",
            (0..5).flat_map(|_| [tv(), c("some text")]).collect(),
            Some(8),
            Some(8),
        ),
        case(
            "quirk_turns_between_tools",
            (0..5).flat_map(|_| [Event::request(), tv()]).collect(),
            Some(9),
            Some(9),
        ),
    ]
}

fn first_detection(profile: Profile, events: &[Event]) -> (Option<usize>, Vec<loopscope_core::Detection>) {
    let mut stream = vec![Event::prompt("case")];
    stream.extend_from_slice(events);
    let found = run(&setup(profile, &["tool-repeat", "chunk-chant"]), &stream);
    (found.first().map(|d| d.event - 1), found)
}

#[test]
fn gemini_cli_profile_fires_where_gemini_cli_does() {
    let mut wrong = Vec::new();
    for case in cases() {
        let (got, found) = first_detection(Profile::GeminiCli, &case.events);
        if got != case.gemini {
            wrong.push(format!("{}: want {:?}, got {got:?}", case.name, case.gemini));
        }
        if let (Some(trig), Some(d)) = (case.trig, found.first()) {
            let end = d.spans.last().map(|s| s.end);
            if end != Some(trig) {
                wrong.push(format!("{}: last chunk should end at {trig}, got {end:?}", case.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn seed_profile_differs_only_by_its_parameters() {
    let mut wrong = Vec::new();
    for case in cases() {
        let (got, _) = first_detection(Profile::Seed, &case.events);
        if got != case.seed {
            wrong.push(format!("{}: want {:?}, got {got:?}", case.name, case.seed));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn gemini_cli_detections_are_sticky_until_the_next_prompt() {
    // tool_subsequent and strike tests: one detection, then nothing until reset.
    let mut events = vec![Event::prompt("a")];
    events.extend(times(8, tv()));
    events.extend(r1s(12)); // would chant, but the shared latch holds
    let found = run(&setup(Profile::GeminiCli, &["tool-repeat", "chunk-chant"]), &events);
    assert_eq!(found.len(), 1);
    events.push(Event::prompt("b"));
    events.extend(times(5, tv()));
    let found = run(&setup(Profile::GeminiCli, &["tool-repeat", "chunk-chant"]), &events);
    assert_eq!(found.len(), 2, "a prompt re-arms the service");
    assert_eq!(found[1].event, events.len() - 1);
}

#[test]
fn seed_latches_each_detector_on_its_own() {
    // In seed, tool-repeat firing does not stop chunk-chant.
    let mut events = vec![Event::prompt("a")];
    events.extend(times(5, tv()));
    events.extend(r1s(10));
    let found = run(&setup(Profile::Seed, &["tool-repeat", "chunk-chant"]), &events);
    let ids: Vec<&str> = found.iter().map(|d| d.detector).collect();
    assert_eq!(ids, vec!["tool-repeat", "chunk-chant"]);
}

#[test]
fn tool_evidence_names_the_calls_of_the_cycle() {
    let mut events = vec![Event::prompt("a")];
    events.extend(cyclic(30, &[file("loop_a.txt"), file("loop_b.txt")]));
    let found = run(&setup(Profile::GeminiCli, &["tool-repeat"]), &events);
    let d = &found[0];
    assert_eq!(d.period, Some(2));
    assert_eq!(d.repeats, Some(5));
    assert_eq!(d.events, (1..=10).collect::<Vec<_>>());
    assert!(d.reason.contains("a cycle of 2 calls"), "{}", d.reason);
    assert!(
        d.reason.contains("loop_a.txt") && d.reason.contains("loop_b.txt"),
        "{}",
        d.reason
    );
}

#[test]
fn utf16_units_count_an_emoji_twice() {
    // 25 emoji = 50 UTF-16 units = one gemini-cli chunk; in chars it is half a chunk.
    let unit = "🙂".repeat(24) + "ab";
    let mut events = vec![Event::prompt("a")];
    events.extend(times(12, c(&unit)));
    let g = run(&setup(Profile::GeminiCli, &["chunk-chant"]), &events);
    let s = run(&setup(Profile::Seed, &["chunk-chant"]), &events);
    let (g, s) = (&g[0], &s[0]);
    // Spans are always chars of the content buffer, whatever the units.
    for d in [g, s] {
        for span in &d.spans {
            assert_eq!(span.start % 26, 0, "{:?} in {}", span, d.detector);
        }
        assert_eq!(d.at_char, Some(26 * (d.event)));
    }
    assert!(g.reason.contains("50-unit chunk"), "{}", g.reason);
    assert!(s.reason.contains("50-char chunk"), "{}", s.reason);
}
