//! Issue 9: inputs that once crashed, hung or exhausted loopscope. Each is a
//! regression test for one reported case.

mod common;

use loopscope::{Event, Profile};

/// The char text of the spans of a detection, from the content buffer.
fn spanned(buffer: &str, d: &loopscope::Detection) -> Vec<String> {
    let chars: Vec<char> = buffer.chars().collect();
    d.spans
        .iter()
        .map(|s| {
            assert!(s.start < s.end && s.end <= chars.len(), "span {s:?} outside {} chars", chars.len());
            chars[s.start..s.end].iter().collect()
        })
        .collect()
}

#[test]
fn one_content_event_longer_than_the_history_fires_without_a_panic() {
    // 50,000 `A` in one delta: the history keeps the last 5000 and sweeps
    // the rest. (gemini-cli's divider class `[+-_=*]` spans A-Z, so a line
    // of capitals is a divider there: lowercase for both profiles.)
    for (profile, text) in [
        (Profile::Seed, "A".repeat(50_000)),
        (Profile::Seed, "a".repeat(50_000)),
        (Profile::GeminiCli, "a".repeat(50_000)),
    ] {
        let setup = common::setup(profile, &["chunk-chant"]);
        let found = common::run(&setup, &[Event::request(), Event::content(&text)]);
        assert_eq!(found.len(), 1, "{profile:?}");
        for s in spanned(&text, &found[0]) {
            assert_eq!(s, text[..50], "{profile:?}");
        }
    }
}

#[test]
fn a_sentence_repeated_a_thousand_times_in_one_block_is_found_at_its_true_offsets() {
    // A Claude Code assistant block: one event, with CJK and emoji so UTF-16
    // units and chars differ (gemini-cli counts UTF-16).
    let sentence = "我再检查一下这个函数 🙂 and then I check it again. ";
    let text = format!("Intro line.\n{}", sentence.repeat(1000));
    for profile in [Profile::Seed, Profile::GeminiCli] {
        let setup = common::setup(profile, &["chunk-chant"]);
        let found = common::run(&setup, &[Event::request(), Event::content(&text)]);
        assert_eq!(found.len(), 1, "{profile:?}");
        let d = &found[0];
        let chunk = d.repeated.clone().unwrap();
        let chunk = chunk.trim_end_matches('\u{FFFD}');
        let texts = spanned(&text, d);
        assert!(!texts.is_empty());
        // Every span is the repeated chunk itself, wherever it is in the buffer.
        for t in texts {
            assert!(t.starts_with(chunk), "{profile:?}: {t:?} is not {chunk:?}");
        }
    }
}

#[test]
fn long_deltas_through_a_small_history_after_many_sweeps() {
    // Many deltas each longer than the history: storage is swept again and
    // again while segments straddle the cut; then a chant, whose spans must
    // still map to the right chars of the content buffer.
    let setup = loopscope::Setup::resolve_with(
        &loopscope::Choices {
            profile: Some(Profile::GeminiCli),
            detectors: Some(vec!["chunk-chant".into()]),
            sets: vec!["chunk-chant.max_history=300".into()],
            ..loopscope::Choices::default()
        },
        "",
    )
    .unwrap();
    let mut engine = loopscope::Engine::new(&setup);
    engine.push(&Event::request());
    let mut rng = common::Rng::new(7);
    let mut buffer = String::new();
    for _ in 0..200 {
        let text = rng.text(common::LOWER, 700);
        buffer.push_str(&text);
        assert!(engine.push(&Event::content(&text)).is_empty());
    }
    let chant = "思🙂x".repeat(400);
    buffer.push_str(&chant);
    let found = engine.push(&Event::content(&chant));
    assert_eq!(found.len(), 1);
    // A 50-unit chunk can end inside a surrogate pair: its text ends in U+FFFD
    // and its span covers the whole char.
    let chunk = found[0].repeated.clone().unwrap();
    let chunk = chunk.trim_end_matches('\u{FFFD}');
    for t in spanned(&buffer, &found[0]) {
        assert!(t.starts_with(chunk), "{t:?} is not {chunk:?}");
    }
}
