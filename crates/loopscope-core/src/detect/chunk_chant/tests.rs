//! The history's buckets and its compaction, against what they replace.
use super::*;

/// What `record` answers for every position of `units` (hashes folded
/// to a few values, so different chunks collide), the history window
/// moving on as it goes; and the buckets it ended with.
fn record_all(units: &[u32], buckets: Buckets) -> (Vec<String>, usize) {
    let chunk = 4;
    let top = (1..chunk).fold(1u64, |acc, _| acc.wrapping_mul(BASE));
    let mut h = History {
        buckets,
        ..History::default()
    };
    h.units.extend_from_slice(units);
    let seen = (0..=units.len() - chunk)
        .map(|pos| {
            h.start = pos.saturating_sub(700);
            let hash = h.hash(pos, chunk, top) % 13;
            match h.record(pos, hash, chunk) {
                Seen::New => "new".to_string(),
                Seen::At(q) => format!("at {q}"),
                Seen::Collision => "collision".to_string(),
            }
        })
        .collect();
    (seen, h.buckets.head.len())
}

#[test]
fn a_compacted_history_finds_what_a_kept_one_finds_and_costs_its_units() {
    use crate::config::Setup;
    use crate::engine::Engine;
    use crate::event::Event;
    for profile in [crate::detect::Profile::Seed, crate::detect::Profile::GeminiCli] {
        // Every detector of the profile compacts (tool-repeat's calls too).
        let setup = Setup::profile(profile);
        let (mut kept, mut compacted) = (Engine::new(&setup), Engine::new(&setup));
        let mut seed = 7u64;
        let mut found = (Vec::new(), Vec::new());
        for i in 0..400 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let event = match seed >> 60 {
                // Now and then the same call six times (tool-repeat fires).
                _ if i % 40 < 6 => Event::tool_call("ls", serde_json::json!({"path": "src/思考"})),
                0 => Event::prompt("go on"),
                1 => Event::request(),
                2 if i % 3 == 0 => Event::tool_call("ls", serde_json::json!({"path": (seed >> 58) % 2})),
                3..=7 => Event::content(&"I will check it once more 思考🙂, ".repeat(1 + (seed >> 50) as usize % 4)),
                _ => {
                    // Text from few words (思考 and 🙂 among them), so chunks repeat and chant.
                    let words = ["loop ", "again ", "思考 ", "🙂 ", "and ", "then "];
                    let text: String = (0..(seed >> 40) % 90)
                        .map(|k| words[((seed >> (k % 50)) % words.len() as u64) as usize])
                        .collect();
                    Event::content(&text)
                }
            };
            found.0.extend(kept.push(&event));
            found.1.extend(compacted.push(&event));
            compacted.compact();
            let status = |e: &Engine| format!("{:?}", e.states());
            assert_eq!(status(&kept), status(&compacted), "event {i}");
        }
        assert_eq!(found.0, found.1, "{profile:?}");
        for id in ["chunk-chant", "tool-repeat"] {
            assert!(found.0.iter().any(|d| d.detector == id), "{profile:?}: {id} fires");
        }
    }
}

#[test]
fn buckets_grow_with_the_history_and_find_what_presized_ones_find() {
    // A few chunks repeating irregularly, CJK and emoji among them.
    let text: Vec<u32> = (0..3000u32)
        .map(|i| ['a', 'b', '思', '🙂', 'c'][((i * i + i / 7) % 5) as usize] as u32)
        .collect();
    let (grown, size) = record_all(&text, Buckets::default());
    let (presized, _) = record_all(&text, Buckets::new(5000));
    assert_eq!(grown, presized);
    assert!(grown.iter().any(|s| s == "collision") && grown.iter().any(|s| s.starts_with("at")));
    // The window holds about 700 positions: the buckets follow it, not max_history.
    assert!((1024..=4096).contains(&size), "{size} buckets");
    assert_eq!(record_all(&text[..40], Buckets::default()).1, 128);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// The filter's promise, checked directly (the detector's own test
    /// cannot see a filter that marks too little while its history stays
    /// hot for other reasons): every position whose chunk occurs
    /// `threshold` times within the distance that fires is marked.
    #[test]
    fn every_position_that_can_fire_is_marked(
        chunk in proptest::prop_oneof![2usize..30, 60usize..140],
        threshold in proptest::prop_oneof![2usize..5, 5usize..12],
        max_avg_distance in 0usize..80,
        max_history in 20usize..400,
        pieces in proptest::collection::vec((0usize..4, 0usize..60), 1..120),
    ) {
        use super::filter::KgramFilter;
        let mut filter = KgramFilter::new(chunk, threshold, max_avg_distance, max_history);
        let phrase: Vec<u32> = "the same 思考🙂 words again".chars().map(u32::from).collect();
        let mut units: Vec<u32> = Vec::new();
        let mut next = 0usize;
        let mut seed = (chunk * 31 + threshold) as u64;
        for (kind, len) in pieces {
            // Random filler, the phrase, or a short unit over and over.
            match kind {
                0 | 1 => units.extend((0..len).map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // Many symbols: only the phrase and the unit repeat.
                    0x4E00 + (seed >> 50) as u32
                })),
                2 => units.extend_from_slice(&phrase),
                _ => units.extend([97u32, 98, 32].iter().cycle().take(len)),
            }
            let start = units.len().saturating_sub(max_history);
            filter.feed(&units[start..], start, start);
            let limit = (threshold - 1) * max_avg_distance;
            while next + chunk <= units.len() {
                if next >= start {
                    let mine = &units[next..next + chunk];
                    let earlier: Vec<usize> = (start..=next).filter(|&q| &units[q..q + chunk] == mine).collect();
                    let can_fire = earlier.len() >= threshold && next - earlier[earlier.len() - threshold] <= limit;
                    let marked = filter.suspect(next);
                    proptest::prop_assert!(!can_fire || marked, "position {} of {}", next, units.len());
                }
                next += 1;
            }
        }
    }
}
