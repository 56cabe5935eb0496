//! chunk-chant equals a literal transcription of gemini-cli's algorithm
//! (shift every position on truncation, chunk text as the key) on random
//! streams, with small parameters so truncation and clean-up run often.

mod common;

use std::collections::HashMap;

use loopscope_core::{Choices, Engine, Event, Profile, Setup};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Params {
    chunk: usize,
    threshold: usize,
    max_history: usize,
    max_avg_distance: usize,
    max_periods: usize,
    utf16: bool,
}

/// gemini-cli's LoopDetectionService content check, as written there.
struct Reference {
    p: Params,
    history: Vec<u32>,
    stats: HashMap<Vec<u32>, Vec<usize>>,
    index: usize,
    in_code_block: bool,
}

impl Reference {
    fn reset(&mut self) {
        self.history.clear();
        self.stats.clear();
        self.index = 0;
    }

    /// Returns (count of positions, average distance) when it fires.
    fn content(&mut self, text: &str) -> Option<(usize, f64)> {
        let fences = text.matches("```").count();
        let structural = text.starts_with("\n* ");
        if fences > 0 || structural {
            self.reset();
        }
        let was = self.in_code_block;
        if fences % 2 == 1 {
            self.in_code_block = !self.in_code_block;
        }
        if was || self.in_code_block {
            return None;
        }
        if self.p.utf16 {
            self.history.extend(text.encode_utf16().map(u32::from));
        } else {
            self.history.extend(text.chars().map(u32::from));
        }
        if self.history.len() > self.p.max_history {
            let t = self.history.len() - self.p.max_history;
            self.history.drain(..t);
            self.index = self.index.saturating_sub(t);
            self.stats.retain(|_, v| {
                *v = v.iter().filter(|&&i| i >= t).map(|i| i - t).collect();
                !v.is_empty()
            });
        }
        while self.index + self.p.chunk <= self.history.len() {
            let c = self.history[self.index..self.index + self.p.chunk].to_vec();
            let v = self.stats.entry(c).or_default();
            v.push(self.index);
            if v.len() >= self.p.threshold {
                let recent = &v[v.len() - self.p.threshold..];
                let avg = (recent[recent.len() - 1] - recent[0]) as f64 / (self.p.threshold - 1) as f64;
                let mut periods: Vec<&[u32]> = Vec::new();
                for w in recent.windows(2) {
                    let between = &self.history[w[0]..w[1]];
                    if !periods.contains(&between) {
                        periods.push(between);
                    }
                }
                let periods_ok = self.p.max_periods == 0 || periods.len() <= self.p.max_periods;
                if avg <= self.p.max_avg_distance as f64 && periods_ok {
                    return Some((v.len(), avg));
                }
            }
            self.index += 1;
        }
        None
    }
}

fn engine_for(p: &Params) -> Engine {
    let sets = vec![
        format!("chunk-chant.chunk={}", p.chunk),
        format!("chunk-chant.threshold={}", p.threshold),
        format!("chunk-chant.max_history={}", p.max_history),
        format!("chunk-chant.max_avg_distance={}", p.max_avg_distance),
        format!("chunk-chant.max_periods={}", p.max_periods),
        format!("chunk-chant.units={}", if p.utf16 { "utf16" } else { "chars" }),
    ];
    let setup = Setup::resolve_with(
        &Choices {
            profile: Some(Profile::Seed),
            detectors: Some(vec!["chunk-chant".into()]),
            sets,
            ..Choices::default()
        },
        "",
    )
    .unwrap();
    Engine::new(&setup)
}

fn params() -> impl Strategy<Value = Params> {
    (
        // Small chunks, and chunks long enough that the k-gram filter
        // skips most positions (a k-gram of two thirds of the chunk).
        prop_oneof![2usize..9, 9usize..60],
        2usize..12,
        20usize..300,
        5usize..120,
        0usize..4,
        any::<bool>(),
    )
        .prop_map(
            |(chunk, threshold, max_history, max_avg_distance, max_periods, utf16)| Params {
                chunk,
                threshold,
                max_history,
                max_avg_distance,
                max_periods,
                utf16,
            },
        )
}

fn stream() -> impl Strategy<Value = Vec<Event>> {
    let text = prop::collection::vec(prop::sample::select(vec!['a', 'b', ' ', '.', '🙂', '思']), 0..40)
        .prop_map(|cs| Event::content(&cs.into_iter().collect::<String>()));
    let unit =
        prop::sample::select(vec!["ab ab ", "xyz.", "思考🙂", "abcdefgh"]).prop_map(|u| Event::content(&u.repeat(3)));
    // Deltas longer than the whole history (up to 700 units through 20 to
    // 300): only their tail is stored, the rest is skipped unseen.
    let long = prop::collection::vec(prop::sample::select(vec!['a', 'b', ' ', '🙂', '思']), 250..700)
        .prop_map(|cs| Event::content(&cs.into_iter().collect::<String>()));
    let long_unit =
        prop::sample::select(vec!["ab ab ", "思考🙂", "abcdefgh"]).prop_map(|u| Event::content(&u.repeat(60)));
    // Phrases from a few words: multi-word repeats at irregular distances,
    // longer than the chunk, among text that does not repeat.
    let phrases = prop::collection::vec(
        prop::sample::select(vec!["alpha ", "beta ", "思考 ", "🙂", "gamma. ", "delta, "]),
        0..30,
    )
    .prop_map(|ws| Event::content(&ws.concat()));
    // One phrase among filler of random length: a chunk that repeats at
    // irregular distances near the largest average distance, so it fires
    // (or not) with its first and last occurrences far apart.
    let spaced = prop::collection::vec(prop::sample::select(vec!['a', 'b', ' ', '🙂', '思']), 0..90).prop_map(|cs| {
        Event::content(&format!(
            "the same words 思考🙂 again {}",
            cs.into_iter().collect::<String>()
        ))
    });
    let event = prop_oneof![
        10 => text,
        6 => spaced,
        6 => phrases,
        6 => unit,
        1 => long,
        1 => long_unit,
        1 => Just(Event::content("```")),
        1 => Just(Event::content("\n* item")),
        1 => Just(Event::tool_call("t", serde_json::json!({}))),
        1 => Just(Event::request()),
    ];
    prop::collection::vec(event, 1..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn equals_gemini_clis_algorithm(p in params(), events in stream(), compact_at in prop::collection::vec(any::<bool>(), 400)) {
        let mut reference = Reference { p: p.clone(), history: vec![], stats: HashMap::new(), index: 0, in_code_block: false };
        let mut engine = engine_for(&p);
        let mut want = None;
        for (i, e) in events.iter().enumerate() {
            let hit = match &e.kind {
                loopscope_core::EventKind::Content { text } => reference.content(text),
                loopscope_core::EventKind::ToolCall { .. } => { reference.reset(); None }
                _ => None,
            };
            if let Some((count, avg)) = hit {
                want = Some((i, count, avg));
                break;
            }
        }
        // A session gone quiet (watch) compacts its detectors between events.
        let got = events.iter().enumerate().find_map(|(i, e)| {
            let d = engine.push(e).into_iter().next().map(|d| (i, d.repeats.unwrap(), d.avg_distance.unwrap()));
            if compact_at[i] {
                engine.compact();
            }
            d
        });
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_long_chant_free_stream_stays_clear_through_many_clean_ups() {
    // 200k units through a 100-unit history: compaction and sweeps run many times.
    let p = Params {
        chunk: 5,
        threshold: 4,
        max_history: 100,
        max_avg_distance: 30,
        max_periods: 0,
        utf16: false,
    };
    let mut reference = Reference {
        p: p.clone(),
        history: vec![],
        stats: HashMap::new(),
        index: 0,
        in_code_block: false,
    };
    let mut engine = engine_for(&p);
    let mut rng = common::Rng::new(99);
    for i in 0..20_000 {
        let text = rng.text(b"abcdefghijklmnopqrstuvwxyz", 10);
        let want = reference.content(&text).is_some();
        let got = !engine.push(&Event::content(&text)).is_empty();
        assert_eq!(got, want, "event {i}");
        if got {
            break;
        }
    }
}
