//! Profile `extended` (issue 10): its verdicts never depend on how text was
//! cut into deltas, and the shapes extended.md names fire or stay quiet.

mod common;
/// The texts the benchmarks run on (the engine bench times this one).
#[path = "../benches/common/mod.rs"]
mod texts;

use loopscope_core::{Detection, Engine, Event, Profile, Setup};
use proptest::prelude::*;
use serde_json::json;

fn run(events: &[Event]) -> Vec<Detection> {
    let mut engine = Engine::new(&Setup::profile(Profile::Extended));
    events.iter().flat_map(|e| engine.push(e)).collect()
}

/// What must not depend on the cutting: who fired, on which channel, where
/// the repetition began and where its evidence completes.
fn signature(found: &[Detection]) -> Vec<(String, String, Option<usize>, Option<usize>)> {
    // Sorted: two detectors firing on one event may come in either order.
    let mut sig: Vec<_> = found
        .iter()
        .map(|d| {
            (
                d.detector.to_string(),
                d.channel.as_str().to_string(),
                // A tool onset is an event index: more text deltas move it.
                d.onset.filter(|_| d.channel != loopscope_core::Channel::Tools),
                d.spans.last().map(|s| s.end),
            )
        })
        .collect();
    sig.sort();
    sig
}

/// Text cut at the given sizes (cycled), as reasoning deltas of one request.
fn cut(text: &str, sizes: &[usize]) -> Vec<Event> {
    let chars: Vec<char> = text.chars().collect();
    let mut events = vec![Event::prompt("go"), Event::request()];
    let (mut at, mut k) = (0, 0);
    while at < chars.len() {
        let n = sizes[k % sizes.len()].max(1);
        k += 1;
        let end = (at + n).min(chars.len());
        events.push(Event::reasoning(&chars[at..end].iter().collect::<String>()));
        at = end;
    }
    events
}

fn text_strategy() -> impl Strategy<Value = String> {
    let sentence = prop::sample::select(vec![
        "The parser returns early on empty input. ",
        "Check the config again. ",
        "思考一下这个问题。",
        "1. Run the migration\n",
        "| a | b |\n",
        "ny",
        "```\ncode();\n```\n",
        "Item 42 is done; item 43 is next. ",
        "   ",
        "🙂",
    ]);
    let piece = (sentence, 1usize..9).prop_map(|(s, n)| s.repeat(n));
    prop::collection::vec(piece, 1..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn any_rechunking_gives_the_same_detections(
        text in text_strategy(),
        a in prop::collection::vec(1usize..40, 1..8),
        b in prop::collection::vec(1usize..300, 1..8),
    ) {
        let whole = signature(&run(&cut(&text, &[usize::MAX])));
        prop_assert_eq!(&signature(&run(&cut(&text, &a))), &whole, "cut {:?}", a);
        prop_assert_eq!(&signature(&run(&cut(&text, &b))), &whole, "cut {:?}", b);
        prop_assert_eq!(&signature(&run(&cut(&text, &[1]))), &whole, "1-char deltas");
    }
}

fn fires(text: &str) -> Option<Detection> {
    run(&cut(text, &[7])).into_iter().next()
}

#[test]
fn text_loops_fire_with_their_onset_and_copies() {
    // (The lead ends unlike the unit, so the periodic text starts exactly
    // at the first copy; otherwise it would start a char or two earlier.)
    let lead = "I will look at the parser first, then the tests:";
    // A sentence chant: three copies; the onset is where the first begins.
    let unit = "Let me check whether the cache was cleared. ";
    let d = fires(&format!("{lead}{}", unit.repeat(3))).expect("a chant fires");
    assert_eq!(d.detector, "text-loop");
    assert_eq!(d.onset, Some(lead.chars().count()));
    assert_eq!(d.repeats, Some(3));
    assert_eq!(d.spans.len(), 3);
    // A two-char stutter needs five copies; four stay quiet.
    assert!(fires(&format!("{lead}{}", "思考".repeat(4))).is_none());
    assert_eq!(fires(&format!("{lead}{}", "思考".repeat(5))).unwrap().period, Some(2));
    // A numbered list whose numbers keep growing, and a counter.
    let list: String = (1..=9).map(|i| format!("{i}. Check the old config file\n")).collect();
    assert!(fires(&format!("{lead}{list}")).is_some());
    let counter: String = (57..63).map(|i| format!("assistant{i} says hello again. ")).collect();
    assert!(fires(&format!("{lead}{counter}")).is_some());
    // A late, long paragraph loop (period over 1000 chars, after 20,000 chars).
    let mut rng = common::Rng::new(3);
    let clean: String = (0..2500).map(|_| rng.text(common::LOWER, 7) + " ").collect();
    let para: String = (0..150).map(|_| rng.text(common::LOWER, 6) + " ").collect();
    let d = fires(&format!("{clean}{}", para.repeat(3))).expect("a late paragraph loop fires");
    assert!(d.period.unwrap() >= 1000, "{:?}", d.period);
}

#[test]
fn clean_shapes_stay_quiet() {
    // Items that differ by more than a counter, tables, dividers, code.
    let images: String = [320, 640, 960, 1280, 1600, 1920, 2240]
        .iter()
        .map(|w| format!("- image-{w}w.avif\n"))
        .collect();
    assert!(fires(&images).is_none(), "{:?}", fires(&images));
    let table = "| --- | --- | --- |\n".repeat(6);
    assert!(fires(&table).is_none());
    assert!(fires(&"-".repeat(200)).is_none());
    let code = format!("```rust\n{}```\n", "    buf.push(0);\n".repeat(8));
    assert!(fires(&code).is_none());
    assert!(fires(&"哈".repeat(50)).is_none());
    assert!(fires("object, object, object and more prose after it.").is_none());
}

fn call(id: &str, name: &str, args: serde_json::Value) -> Event {
    let mut e = Event::tool_call(name, args);
    if let loopscope_core::EventKind::ToolCall { id: i, .. } = &mut e.kind {
        *i = Some(id.to_string());
    }
    e
}

fn result(id: &str, ok: bool, output: &str) -> Event {
    let mut e = Event::tool_result(ok);
    if let loopscope_core::EventKind::ToolResult { id: i, output: o, .. } = &mut e.kind {
        *i = Some(id.to_string());
        *o = Some(json!(output));
    }
    e
}

/// The steps of one prompt, each in its own request, with ids.
fn steps<S: AsRef<str>>(list: &[(&str, serde_json::Value, bool, S)]) -> Vec<Event> {
    let mut events = vec![Event::prompt("go")];
    for (k, (name, args, ok, out)) in list.iter().enumerate() {
        let id = format!("c{k}");
        events.push(Event::request());
        events.push(call(&id, name, args.clone()));
        events.push(result(&id, *ok, out.as_ref()));
    }
    events
}

#[test]
fn tool_loops_need_the_same_results_and_nothing_new() {
    let read = |p: &str| ("read_file", json!({"path": p}), true, "fn main() {}");
    // The same call, the same result, three times.
    let found = run(&steps(&[read("a.rs"), read("a.rs"), read("a.rs")]));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].detector, "tool-loop");
    assert_eq!(found[0].onset, Some(2));
    // Polling whose output changes is progress.
    let poll = |out: &'static str| ("shell", json!({"command": "sleep 60 && tail build.log"}), true, out);
    assert!(run(&steps(&[poll("10%"), poll("20%"), poll("30%"), poll("40%")])).is_empty());
    // A cycle A B A B A fires; the same failing test after different edits does not.
    let edit = |n: &str| ("edit", json!({"path": "a.rs", "new": n}), true, "ok");
    let test = ("run_tests", json!({}), false, "1 failed");
    assert_eq!(
        run(&steps(&[edit("x"), test.clone(), edit("x"), test.clone(), edit("x")])).len(),
        1
    );
    assert!(run(&steps(&[
        test.clone(),
        edit("x"),
        test.clone(),
        edit("y"),
        test.clone(),
        edit("z"),
        test.clone()
    ]))
    .is_empty());
    // A batch over different files.
    assert!(run(&steps(&[read("a.rs"), read("b.rs"), read("c.rs"), read("d.rs")])).is_empty());
}

#[test]
fn a_paraphrase_cycle_fires_where_exact_repetition_does_not() {
    let lead = "The nightly build fails at the migration step, so I read the log first. ";
    let copies = [
        "I should check the cache config before anything else. Then I will rerun the failing migration test. ",
        "I should check the cache configuration before anything else. Then I'll rerun the failing migration test. ",
        "I should check the cache config before anything else. Then I will rerun the failing migration test now. ",
        "So I should check the cache config before anything else. Then I will rerun that failing migration test. ",
    ];
    let text = format!("{lead}{}", copies.concat());
    let found = run(&cut(&text, &[9]));
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!(d.detector, "paraphrase-loop");
    assert_eq!(d.period, Some(2), "a cycle of two sentences");
    assert_eq!(d.onset, Some(lead.chars().count()));
    assert!(d.reason.contains('%'), "{}", d.reason);
    // The same under any cutting.
    assert_eq!(signature(&run(&cut(&text, &[1]))), signature(&found));
    // Sentences that share words but say different things stay quiet.
    let clean = "I should check the cache config first. Then the migration logs show a lock timeout. \
                 The scheduler retries the job twice before it gives up. I will look at the retry policy next. \
                 The retry policy has a cap of three attempts per job. That cap explains the second failure. ";
    assert!(run(&cut(clean, &[9])).is_empty());
}

#[test]
fn a_turn_whose_index_counts_is_a_loop_and_chat_markers_are_no_table() {
    let lead = "Hello! How can I help you today?\n";
    // llama.cpp #19585: the role tag's index grows by one per copy.
    let turn = |i: usize| format!("tell me something about you?<|im_end|>\n<|im_start|>assistant{i}\n");
    let text: String = std::iter::once(lead.to_string()).chain((57..70).map(turn)).collect();
    let d = fires(&text).expect("a counting turn fires");
    assert_eq!((d.detector, d.repeats), ("text-loop", Some(3)), "{}", d.reason);
    // The same index written twice in each copy is one counter.
    let tagged = |i: usize| format!("<turn {i}>\nUser: hello\nAssistant: Hello! How can I help?\n</turn {i}>\n");
    let text: String = std::iter::once(lead.to_string()).chain((57..70).map(tagged)).collect();
    assert_eq!(fires(&text).expect("a turn tagged twice fires").repeats, Some(3));
    // A table row still needs three times the copies, and its numbers may not change.
    let row = "| 0017_add_index | pending | done |\n";
    assert!(fires(&format!("{lead}{}", row.repeat(8))).is_none());
    assert_eq!(fires(&format!("{lead}{}", row.repeat(9))).unwrap().repeats, Some(9));
    let rows: String = (1..20).map(|i| format!("| {i} | pending | done |\n")).collect();
    assert!(fires(&format!("{lead}{rows}")).is_none());
}

#[test]
fn a_handful_of_sentences_in_any_order_is_a_chant() {
    let lead = "I read the five files and the plan is clear: a parser, the CLI flag, then tests. ";
    let said = [0, 2, 1, 0, 3, 1, 2, 2, 0, 3, 1, 0, 2, 3, 1, 0, 1, 3];
    let vocab = ["I'll do it. ", "I'll start. ", "Let me begin. ", "Doing it now. "];
    let text: String = std::iter::once(lead).chain(said.iter().map(|&k| vocab[k])).collect();
    let d = fires(&text).expect("a chant fires");
    assert_eq!(d.detector, "paraphrase-loop");
    assert_eq!(d.period, Some(4), "{}", d.reason);
    assert_eq!(d.onset, Some(lead.chars().count()));
    assert_eq!(signature(&run(&cut(&text, &[1]))), signature(&run(&cut(&text, &[7]))));
    // Short sentences of real work say something new each time.
    let work = "Yes. The build passed. Now the tests. They pass too. Good. Next the docs. Okay. The README needs a \
                line. Added. Commit it. Push. Done. Yes. Now the changelog. Okay. One entry. Good. Done.";
    assert!(fires(work).is_none(), "{:?}", fires(work));
    // Lines in a code block repeat legitimately.
    let code = format!("Here:\n```\n{}```\n", "pass\nelse:\n".repeat(12));
    assert!(run(&cut(&code, &[5])).iter().all(|d| d.detector != "paraphrase-loop"));
}

#[test]
fn a_paraphrase_with_two_words_changed_per_sentence_fires() {
    let lead = "The nightly job failed again near the end of the run, so I read the stack trace first. ";
    // Each copy changes two words of each sentence of the one before.
    let copies = [
        "I should check the cache config before anything else today. Then I will rerun the failing migration test. ",
        "I must verify the cache config before anything else today. Then I can rerun the broken migration test. ",
        "I should verify the cache settings before anything else today. Then I will rerun the broken migration test. ",
        "I must check the cache settings before anything else today. Then I will rerun the failing migration test. ",
    ];
    let text = format!("{lead}{}", copies.concat());
    let d = run(&cut(&text, &[9]))
        .into_iter()
        .next()
        .expect("a paraphrase with two changes fires");
    assert_eq!((d.detector, d.period), ("paraphrase-loop", Some(2)), "{}", d.reason);
    assert_eq!(d.onset, Some(lead.chars().count()));
}

#[test]
fn rows_and_clauses_that_share_their_formula_are_not_copies() {
    // Files with their sizes: the rows share most words, their cells differ.
    let mut table = String::from("| file | lines | size |\n| --- | ---: | ---: |\n");
    for (i, name) in [
        "checkpoint",
        "chunk_chant",
        "cline",
        "cycles",
        "evidence",
        "guards",
        "judge",
    ]
    .iter()
    .enumerate()
    {
        table += &format!(
            "| crates/loopscope-core/src/detect/{name}.rs | {} | {}.{} KB |\n",
            130 + 37 * i,
            4 + i,
            i
        );
    }
    assert!(run(&cut(&table, &[7])).is_empty(), "{:?}", run(&cut(&table, &[7])));
    // Claims that differ in the one word that matters, after claims that
    // said the formula before them, are in
    // tests/fixtures/clean/patent-claims-coder-variants.jsonl.
}

#[test]
fn a_file_re_read_between_steps_that_change_nothing_is_a_loop() {
    let plan = (
        "read_file",
        json!({"path": "PLAN.md"}),
        true,
        "1. parser 2. cli 3. tests",
    );
    let look = |p: &str| ("grep", json!({"pattern": "fn parse", "path": p}), true, "no matches");
    let list = [
        plan.clone(),
        look("src/a.rs"),
        plan.clone(),
        look("src/b.rs"),
        plan.clone(),
        look("src/c.rs"),
    ];
    // Three reads of the plan with new searches between: not yet.
    assert!(run(&steps(&list)).is_empty());
    // The fourth fires, with the reads as its evidence.
    let mut four = list.to_vec();
    four.push(plan.clone());
    let found = run(&steps(&four));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].detector, found[0].repeats), ("tool-loop", Some(4)));
    assert_eq!(found[0].onset, Some(2));
    assert_eq!(found[0].events.len(), 8, "the reads and their results");
    // Between edits that land, the agent advances.
    let edit = |p: &str| {
        (
            "edit_file",
            json!({"path": p, "old": "TODO", "new": "done"}),
            true,
            "1 edit applied",
        )
    };
    let advancing = [
        plan.clone(),
        edit("a.rs"),
        plan.clone(),
        edit("b.rs"),
        plan.clone(),
        edit("c.rs"),
        plan.clone(),
        edit("d.rs"),
        plan.clone(),
    ];
    assert!(run(&steps(&advancing)).is_empty());
    // Edits that fail change nothing.
    let fail = |p: &str| {
        (
            "edit_file",
            json!({"path": p, "old": "TODO", "new": "done"}),
            false,
            "old text not found",
        )
    };
    let stuck = [
        plan.clone(),
        fail("a.rs"),
        plan.clone(),
        fail("b.rs"),
        plan.clone(),
        fail("c.rs"),
        plan.clone(),
    ];
    assert_eq!(run(&steps(&stuck)).len(), 1);
}

/// A fixture's events, with every run of one text channel re-cut into
/// `size`-char deltas (as ../shared/checks/extended does); `None`: as recorded.
fn fixture(path: &std::path::Path, size: Option<usize>) -> Vec<Event> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut decoder = loopscope_core::formats::detect::Kind::Native.build();
    let decoded = loopscope_core::formats::Decoded::from_bytes(text.as_bytes(), &mut *decoder);
    let Some(size) = size else { return decoded.events };
    let mut out = Vec::new();
    let mut run: Option<(bool, String)> = None;
    let flush = |run: &mut Option<(bool, String)>, out: &mut Vec<Event>| {
        if let Some((reasoning, text)) = run.take() {
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                let s: String = piece.iter().collect();
                out.push(if reasoning {
                    Event::reasoning(&s)
                } else {
                    Event::content(&s)
                });
            }
        }
    };
    for e in decoded.events {
        let (reasoning, text) = match &e.kind {
            loopscope_core::EventKind::Reasoning { text } => (true, text.clone()),
            loopscope_core::EventKind::Content { text } => (false, text.clone()),
            _ => {
                flush(&mut run, &mut out);
                out.push(e);
                continue;
            }
        };
        match &mut run {
            Some((r, t)) if *r == reasoning => t.push_str(&text),
            _ => {
                flush(&mut run, &mut out);
                run = Some((reasoning, text));
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

fn fixtures(kind: &str) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(kind);
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

/// How late a fixture's loop was caught, in periods, when its meta line
/// says where the loop begins and its period (chars of its channel, or
/// tool calls): from the onset to where the first detection's evidence
/// completes (as ../shared/checks/extended measures it).
fn latency(path: &std::path::Path, events: &[Event], found: &[Detection]) -> Option<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let meta: serde_json::Value = serde_json::from_str(text.lines().next()?).ok()?;
    let first = found.first()?;
    if let (Some(onset), Some(period)) = (meta["onset_char"].as_u64(), meta["period_chars"].as_u64()) {
        let end = first.spans.iter().map(|s| s.end).max()?;
        return Some((end as f64 - onset as f64) / period as f64);
    }
    let (onset, period) = (meta["onset_event"].as_u64()?, meta["period_calls"].as_u64()?);
    // Events here are the file's lines less the meta line.
    let calls = |upto: usize| {
        events[..upto]
            .iter()
            .filter(|e| matches!(e.kind, loopscope_core::EventKind::ToolCall { .. }))
            .count()
    };
    let before = calls(onset as usize - 1);
    Some((calls(first.event + 1) - before) as f64 / period as f64)
}

#[test]
fn real_loop_shapes_fire_and_clean_ones_do_not_at_any_cutting() {
    for (kind, loops) in [("loops", true), ("clean", false)] {
        for path in fixtures(kind) {
            let events = fixture(&path, None);
            let found = run(&events);
            if let Some(periods) = latency(&path, &events, &found) {
                // The bar is 6 periods; a short unit sits at 5 copies.
                assert!(
                    (0.0..=6.0).contains(&periods),
                    "{}: caught {periods:.1} periods late",
                    path.display()
                );
            }
            let first = signature(&found);
            assert_eq!(!first.is_empty(), loops, "{}: {first:?}", path.display());
            for size in [1, 5, 64] {
                assert_eq!(
                    signature(&run(&fixture(&path, Some(size)))),
                    first,
                    "{} cut {size}",
                    path.display()
                );
            }
        }
    }
}

/// Issue 41's known misses, each a fixture from a public report: caught by
/// the rule meant for it, within 5 periods of the loop's onset, and missed
/// by nothing else first (the rest of the loops and clean fixtures are
/// checked with all the others above).
#[test]
fn the_known_misses_are_caught_within_five_periods() {
    for (name, detector, reason) in [
        // A cycle of steps spanning requests, re-planned in other words.
        (
            "codex-replan-status-push",
            "tool-loop",
            "plans or thoughts rewritten between",
        ),
        // Three words of each short sentence changed.
        (
            "hermes-rederive-three-words",
            "paraphrase-loop",
            "with its words changed",
        ),
        // A chant of twelve distinct sentences.
        (
            "ohmypi-dozen-sentence-chant",
            "paraphrase-loop",
            "keeps re-saying 12 sentences",
        ),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/loops")
            .join(format!("{name}.jsonl"));
        let meta = std::fs::read_to_string(&path).unwrap();
        let meta: serde_json::Value = serde_json::from_str(meta.lines().next().unwrap()).unwrap();
        assert!(
            meta["source"]
                .as_str()
                .is_some_and(|s| s.starts_with("https://github.com/")),
            "{name}: {meta}"
        );
        let events = fixture(&path, None);
        let found = run(&events);
        let first = found.first().unwrap_or_else(|| panic!("{name}: missed"));
        assert_eq!(first.detector, detector, "{name}: {}", first.reason);
        assert!(first.reason.contains(reason), "{name}: {}", first.reason);
        let periods = latency(&path, &events, &found).expect("the meta line gives onset and period");
        assert!(
            (0.0..=5.0).contains(&periods),
            "{name}: caught {periods:.2} periods late"
        );
    }
}

/// A unit that repeats but whose numbers jump (`image-320w`, `image-640w`,
/// …) is judged no loop, however long its copies. (What it costs — once per
/// copy, not once per char — is measured by `cargo bench --bench engine`,
/// "extended 120KB of a repeating unit whose numbers jump"; a test never
/// times itself.)
#[test]
fn a_long_run_whose_numbers_jump_is_no_loop() {
    for unit_words in [1, 300] {
        let text = texts::jumping_numbers(unit_words, 120_000);
        let found = fires(&text);
        assert!(found.is_none(), "sizes that jump by 320 are no counter: {found:?}");
    }
}

#[test]
fn lines_of_one_shape_are_no_paraphrase_and_a_stray_bar_is_no_table() {
    // Issue 41, from /work/shared/wild: a list of paths that differ in a
    // folder or two (aider mozgoslav), dataclass fields inside a fence
    // (aider luvatrix), and a model's doubled fence opening, ```` ```ts ````
    // then ```` ```python ```` (aider supplychaintracker2), before lines of code.
    let paths: String = ["jobs", "obsidian", "onboarding", "profiles", "recording"]
        .iter()
        .map(|s| format!("- `frontend/src/store/slices/{s}/types.ts`\n"))
        .collect();
    assert!(
        fires(&format!("Files to change:\n{paths}")).is_none(),
        "{:?}",
        fires(&paths)
    );
    let fields: String = ["enc", "txt", "ovl", "cmt"]
        .iter()
        .map(|s| format!("    _last_{s}_ms: float = field(default=0.0, init=False, repr=False)\n"))
        .collect();
    assert!(fires(&format!("```python\n{fields}```\n")).is_none());
    let doubled = "```solidity\nsc/src/Counter.sol\n```python\n<<<<<<< SEARCH\n\
                   require(msg.sender == admin, \"Only admin can set the stored number\");\n\
                   require(msg.sender == admin, \"Only admin can increment the stored number\");\n\
                   =======\n\
                   require(msg.sender == admin, \"Only admin can set the stored number\");\n\
                   require(msg.sender == admin, \"Only admin can increment the stored number\");\n\
                   >>>>>>> REPLACE\n```\n";
    assert!(fires(doubled).is_none(), "{:?}", fires(doubled));
    // A one-word drift still fires once a word comes back.
    let drift = "I think I should write the summary for the user now. I believe I should write the summary \
                 for the user now. I guess I should write the summary for the user now. I think I should write \
                 the summary for the user now. I believe I should write the summary for the user now.";
    assert!(fires(drift).is_some());
    // A long paragraph that holds a `||` is no table row: three copies, its list numbers counting.
    let para: String = (0..3)
        .map(|i| {
            format!(
                "### Step {}: check the guard again\nThe guard reads `if (this.phase !== \"recording\" || !this.sessionId) return;` \
                 and it looks correct, but the bug must be somewhere in how the release handler is called, so I will \
                 read the orchestrator once more and then the main process, where the hotkey is registered, and \
                 compare both with the helper that emits the events before I write any fix at all.\n",
                i + 6
            )
        })
        .collect();
    let d = fires(&format!("Let me think.\n{para}")).expect("a loop with a bar in it fires at three copies");
    assert_eq!((d.detector, d.repeats), ("text-loop", Some(3)), "{d:?}");
}

#[test]
fn loops_without_letters_fire_once_they_cover_the_letterless_limit() {
    // Issue 46, item 3: what a runaway or a random model writes: newlines,
    // digits, table dashes, dots, replacement chars, an emoji stutter.
    let lead = "The answer follows:";
    for (unit, period) in [
        ("\n", 1),
        ("1", 1),
        ("|---", 4),
        (".", 1),
        ("\u{FFFD}", 1),
        ("😂", 1),
        ("0 ", 2),
    ] {
        let text = format!("{lead}{}", unit.repeat(600));
        let mut seen = Vec::new();
        for sizes in [&[1][..], &[3, 17], &[7], &[64], &[100_000]] {
            seen.push(signature(&run(&cut(&text, sizes))));
        }
        assert!(seen.iter().all(|s| *s == seen[0]), "{unit:?}: {seen:?}");
        let d = fires(&text).unwrap_or_else(|| panic!("{unit:?} fires"));
        assert_eq!(
            (d.detector, d.period),
            ("text-loop", Some(period)),
            "{unit:?}: {}",
            d.reason
        );
        // It fires where the run reaches 256 chars, not at its end.
        let lead_chars = lead.chars().count();
        assert_eq!(d.at_char, Some(lead_chars + 256), "{unit:?}: {}", d.reason);
        assert_eq!(d.onset, Some(lead_chars), "{unit:?}: {}", d.reason);
        assert!(d.reason.contains("with no letter in it"), "{}", d.reason);
    }
}

#[test]
fn tables_dividers_lists_and_long_numbers_are_no_letterless_loop() {
    let rows: String = (1..60).map(|i| format!("| {i} | {} | {} |\n", i * 3, i * i)).collect();
    let table = format!("| n | 3n | n² |\n|---|---|---|\n{rows}");
    let divider = format!("Results\n{}\nDone.\n", "=".repeat(120));
    let list: String = (1..200).map(|i| format!("{i}. step {i}\n")).collect();
    let digits =
        "31415926535897932384626433832795028841971693993751058209749445923078164062862089986280348253421170679"
            .repeat(3);
    let toc: String = ["Introduction", "Methods", "Results", "Discussion", "Appendix"]
        .iter()
        .enumerate()
        .map(|(i, title)| format!("{title} {} {}\n", ".".repeat(60 - title.len()), 1 + i * 7))
        .collect();
    for text in [table, divider, list, digits, toc] {
        for sizes in [&[1][..], &[7], &[100_000]] {
            assert!(run(&cut(&text, sizes)).is_empty(), "{:?}", run(&cut(&text, sizes)));
        }
    }
}

#[test]
fn a_cycle_re_planned_in_other_words_between_requests_is_a_loop() {
    // Issue 41 (openai/codex#7049): the plan is rewritten in other words
    // before every round, then the same `git status` and `git push` give
    // the same answers. The plan is bookkeeping: it changes nothing the
    // other steps see, so the cycle is found at its third round.
    let plan = |words: &str| {
        (
            "update_plan",
            json!({"plan": [{"step": words, "status": "in_progress"}]}),
            true,
            "Plan updated".to_string(),
        )
    };
    let status = (
        "shell",
        json!({"command": "git status -sb"}),
        true,
        "## main...origin/main".to_string(),
    );
    let push = (
        "shell",
        json!({"command": "git push origin main"}),
        true,
        "Everything up-to-date".to_string(),
    );
    let mut rounds = Vec::new();
    for words in [
        "Verify the push",
        "Confirm origin is in sync",
        "Check the remote again",
        "Make sure it landed",
    ] {
        rounds.extend([plan(words), status.clone(), push.clone()]);
    }
    let found = run(&steps(&rounds));
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!(
        (d.detector, d.repeats, d.period),
        ("tool-loop", Some(3), Some(2)),
        "{}",
        d.reason
    );
    // Fired at the third status's result: the eighth step of the rounds.
    assert_eq!(d.event, 3 * 8, "{}", d.reason);
    assert!(
        d.reason.contains("2 plans or thoughts rewritten between"),
        "{}",
        d.reason
    );
    // Re-planned in the reasoning instead (no plan tool): text is no step,
    // so the same cycle is found at the same call.
    let mut said = vec![Event::prompt("go")];
    for (round, words) in ["Verify the push", "Confirm origin is in sync", "Check the remote again"]
        .iter()
        .enumerate()
    {
        for (k, (name, args, ok, out)) in [status.clone(), push.clone()].into_iter().enumerate() {
            let id = format!("r{round}c{k}");
            said.push(Event::request());
            said.push(Event::reasoning(&format!("{words}: step {k}.")));
            said.push(call(&id, name, args));
            said.push(result(&id, ok, &out));
        }
    }
    let found = run(&said);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].detector, found[0].repeats),
        ("tool-loop", Some(3)),
        "{}",
        found[0].reason
    );
    // A plan rewritten before every round of real progress is no loop: each
    // round edits another file, and the test run that follows may well say
    // the same thing each time.
    let edit = |p: &str| {
        (
            "edit_file",
            json!({"path": p, "old": "TODO", "new": "done"}),
            true,
            "1 edit applied".to_string(),
        )
    };
    let test = ("run_tests", json!({}), true, "12 passed".to_string());
    let mut progress = Vec::new();
    for (words, file) in [
        ("Fix the parser", "src/parser.rs"),
        ("Fix the lexer next", "src/lexer.rs"),
        ("Then the printer", "src/printer.rs"),
        ("Last, the checker", "src/checker.rs"),
        ("Finish with the loader", "src/loader.rs"),
    ] {
        progress.extend([plan(words), edit(file), test.clone()]);
    }
    assert!(run(&steps(&progress)).is_empty(), "{:?}", run(&steps(&progress)));
    // Polling whose output changes, with the plan rewritten between polls.
    let mut polls = Vec::new();
    for (words, pct) in [("wait", 10), ("wait more", 40), ("still waiting", 70), ("almost", 90)] {
        let out = format!("build {pct}%");
        polls.extend([plan(words), ("shell", json!({"command": "tail build.log"}), true, out)]);
    }
    assert!(run(&steps(&polls)).is_empty());
}

#[test]
fn a_paraphrase_with_three_words_changed_per_short_sentence_fires() {
    // Issue 41 (NousResearch/hermes-agent#78807): two short conclusions
    // re-derived over and over, three of their words changed each time
    // (under 55 % alike), until a copy says nothing the loop had not said.
    let lead = "The user wants one row appended to runs.csv, so I read the file before I append anything. ";
    let copies = [
        "Wait, the last row has 51 columns. So the file is corrupt already. ",
        "Wait, the final line has 51 cells. Then the table is malformed already. ",
        "Actually, the bottom record has 51 cells. So the table is corrupt now. ",
        "Actually, the final row has 51 columns. Then the file is malformed now. ",
    ];
    let text = format!("{lead}{}", copies.concat());
    let found = run(&cut(&text, &[9]));
    assert_eq!(found.len(), 1, "{found:?}");
    let d = &found[0];
    assert_eq!((d.detector, d.period), ("paraphrase-loop", Some(2)), "{}", d.reason);
    assert_eq!(d.onset, Some(lead.chars().count()), "{}", d.reason);
    assert!(d.reason.contains("with its words changed"), "{}", d.reason);
    // The last copy completes the evidence (its words all said before).
    assert_eq!(d.spans.last().unwrap().end, text.trim_end().chars().count());
    assert_eq!(signature(&run(&cut(&text, &[1]))), signature(&found));
    // Without the fourth copy (its third brings new words) it waits.
    let three = format!("{lead}{}", copies[..3].concat());
    assert!(run(&cut(&three, &[9])).is_empty());
    // A list of claims that share their formula: every item brings words
    // of its own, however alike the rest.
    let claims = "The parser rejects empty input with a clear error. The lexer rejects long input with a short \
                  error. The printer rejects nested input with a helpful error. The checker rejects cyclic input \
                  with a precise error. The loader rejects missing input with a typed error. The writer rejects \
                  binary input with a plain error. ";
    assert!(run(&cut(claims, &[9])).is_empty(), "{:?}", run(&cut(claims, &[9])));
    // A form letter, one per customer.
    let letters: String = [
        ("Alvarez", "1182", "Lisbon"),
        ("Chen", "1190", "Taipei"),
        ("Okafor", "1204", "Lagos"),
        ("Novak", "1211", "Prague"),
        ("Haddad", "1217", "Beirut"),
    ]
    .iter()
    .map(|(name, order, city)| format!("Dear {name}, your order {order} left our {city} depot today. "))
    .collect();
    assert!(run(&cut(&letters, &[9])).is_empty(), "{:?}", run(&cut(&letters, &[9])));
    // Paths built from the same parts, in backticks: names, not thoughts
    // (a claude-code agent's list of relevant files, /work/shared/wild:
    // each path, cut at the dot of its extension, says only words the
    // list had said, and is no copy of a thought).
    let paths: String = [
        ("lib/spotter_web/live/session_live.ex", 776),
        ("lib/spotter_web/live/subagent_live.ex", 293),
        ("lib/spotter_web/live/pane_list_live.ex", 713),
        ("lib/spotter/services/transcript_renderer.ex", 477),
        ("assets/js/app.js", 373),
        ("test/spotter/services/transcript_renderer_test.exs", 781),
        ("test/spotter_web/live/session_live_test.exs", 367),
        ("test/spotter_web/live/subagent_live_test.exs", 188),
    ]
    .iter()
    .map(|(p, n)| format!("- `/home/USER/projects/spotter-worktrees/spotter-dov/{p}` ({n} lines)\n"))
    .collect();
    assert!(run(&cut(&paths, &[9])).is_empty(), "{:?}", run(&cut(&paths, &[9])));
}

#[test]
fn a_chant_of_a_dozen_sentences_fires_and_stock_sentences_do_not() {
    // Issue 41 (can1357/oh-my-pi#8701, read at its length): twelve
    // variations said in any order, more than the handful of eight a
    // chant could have before.
    let lead = "I read the five files and the plan is clear: a parser, the CLI flag, then tests. ";
    let vocab = [
        "I'll do it. ",
        "I'll implement it. ",
        "I'll start. ",
        "I'll begin coding. ",
        "I'll write the code. ",
        "Let me begin. ",
        "Starting now. ",
        "I'll make the change. ",
        "Doing it now. ",
        "I'll get going. ",
        "Here goes. ",
        "I'll proceed. ",
    ];
    let mut said = String::new();
    for round in 0..3 {
        for i in 0..12 {
            said += vocab[(i * 5 + round * 7) % 12];
        }
    }
    let text = format!("{lead}{said}");
    let d = fires(&text).expect("a chant of twelve fires");
    assert_eq!((d.detector, d.period), ("paraphrase-loop", Some(12)), "{}", d.reason);
    assert_eq!(d.onset, Some(lead.chars().count()));
    assert_eq!(signature(&run(&cut(&text, &[1]))), signature(&run(&cut(&text, &[7]))));
    // An agent's own stock sentences come back between sentences that
    // each say something new: no chant, however long the answer.
    let mut work = String::new();
    for (i, part) in [
        "parser", "lexer", "printer", "checker", "loader", "writer", "config", "cli", "docs", "cache", "index",
        "server",
    ]
    .iter()
    .enumerate()
    {
        work += &format!("Let me check the {part}. ");
        work += ["Done. ", "Good. ", "Okay. "][i % 3];
        work += &format!("The {part} tests pass with {} cases. ", 10 + i);
        work += "Next. ";
    }
    assert!(fires(&work).is_none(), "{:?}", fires(&work));
}
