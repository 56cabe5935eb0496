//! Engine throughput and per-event cost (`cargo bench --bench engine`).
//!
//! - gemini-cli on 1 MB of prose in 20-char content deltas (target <= 0.1 s)
//! - seed on 20 MB of reasoning in 20-char deltas (target >= 100 MB/s), and
//!   seed and extended on 20 MB of each mix: reasoning-, content- and
//!   tool-heavy (extended at most 1.3x seed's time)
//! - one event on a 10 KB versus a 10 MB buffer (must cost about the same)
//! - extended on a long repeating unit whose numbers jump: judged no loop
//!   once per copy, not once per char (tests/extended.rs checks the verdict)

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Words;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use loopscope_core::{Engine, Event, Profile, Setup};

/// Deterministic prose of distinct sentences (no loops, so nothing latches).
fn prose(bytes: usize) -> String {
    let mut w = Words::new();
    let mut s = String::with_capacity(bytes + 64);
    let mut n = 0u64;
    while s.len() < bytes {
        let len = 6 + w.next() % 10;
        for i in 0..len {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(w.word());
        }
        n += 1;
        s.push_str(&format!(" ({n}). "));
    }
    s.truncate(bytes);
    s
}

fn deltas(text: &str, size: usize, make: fn(&str) -> Event) -> Vec<Event> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size)
        .map(|c| make(&c.iter().collect::<String>()))
        .collect()
}

fn run(setup: &Setup, events: &[Event]) -> usize {
    let mut engine = Engine::new(setup);
    events.iter().map(|e| engine.push(e).len()).sum()
}

fn gemini_cli_1mb(c: &mut Criterion) {
    let setup = Setup::profile(Profile::GeminiCli);
    let mut events = vec![Event::prompt("bench"), Event::request()];
    events.extend(deltas(&prose(1 << 20), 20, Event::content));
    assert_eq!(run(&setup, &events), 0, "the bench prose must not loop");
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Bytes(1 << 20));
    g.sample_size(20);
    g.bench_function("gemini-cli 1MB content, 20-char deltas", |b| {
        b.iter(|| run(&setup, black_box(&events)))
    });
    g.finish();
}

/// A 20 MB stream of one mix, as the engine gets it: reasoning-heavy and
/// content-heavy are prose in 20-char deltas, requests of ~6 KB (so every
/// request passes all three of seed's checkpoints); tool-heavy is calls
/// (a path and a pattern) and their results (30 words, all ok), 20 to a
/// request. A prompt every 50 requests keeps max-turns quiet.
fn mix(name: &str, bytes: usize) -> Vec<Event> {
    let mut events = Vec::new();
    if name == "tools" {
        let mut w = Words::new();
        let (mut size, mut step) = (0, 0usize);
        while size < bytes {
            if step.is_multiple_of(20 * 50) {
                events.push(Event::prompt("bench"));
            }
            if step.is_multiple_of(20) {
                events.push(Event::request());
            }
            let tool = ["read_file", "shell", "grep"][(w.next() % 3) as usize];
            let pattern: Vec<&str> = (0..3).map(|_| w.word()).collect();
            let args = serde_json::json!({"path": format!("src/f{}.rs", w.next() % 500), "pattern": pattern.join(" ")});
            let output = (0..30).map(|_| w.word()).collect::<Vec<_>>().join(" ");
            size += args.to_string().len() + output.len();
            events.push(Event::tool_call(tool, args));
            events.push(Event::tool_result_with(true, serde_json::Value::String(output)));
            step += 1;
        }
        return events;
    }
    let make = if name == "reasoning" {
        Event::reasoning
    } else {
        Event::content
    };
    for (i, e) in deltas(&prose(bytes), 20, make).into_iter().enumerate() {
        if i.is_multiple_of(300 * 50) {
            events.push(Event::prompt("bench"));
        }
        if i.is_multiple_of(300) {
            events.push(Event::request());
        }
        events.push(e);
    }
    events
}

/// seed and extended on 20 MB of each mix (issue 29: extended at most 1.3x
/// seed's time on every mix).
fn profiles_by_mix(c: &mut Criterion) {
    let (seed, extended) = (Setup::profile(Profile::Seed), Setup::profile(Profile::Extended));
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Bytes(20 << 20));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    for name in ["reasoning", "content", "tools"] {
        let events = mix(name, 20 << 20);
        // A detector that fired would stop reading: the bench would measure less.
        assert_eq!(run(&seed, &events), 0, "seed must read the whole {name} stream");
        assert_eq!(run(&extended, &events), 0, "extended must read the whole {name} stream");
        for (profile, setup) in [("seed", &seed), ("extended", &extended)] {
            g.bench_function(format!("{profile} 20MB {name}"), |b| {
                b.iter(|| run(setup, black_box(&events)))
            });
        }
    }
    g.finish();
}

/// An engine whose current request already holds `bytes` of text in both
/// channels, with no detector fired (a fired one would stop reading, and
/// the per-event cost would be measured on an engine doing less).
fn engine_at(profile: Profile, bytes: usize) -> Engine {
    let setup = Setup::profile(profile);
    let mut engine = Engine::new(&setup);
    engine.push(&Event::prompt("bench"));
    engine.push(&Event::request());
    let text = prose(bytes);
    let mut fired = 0;
    for piece in deltas(&text, 4096, Event::reasoning) {
        fired += engine.push(&piece).len();
    }
    for piece in deltas(&text, 4096, Event::content) {
        fired += engine.push(&piece).len();
    }
    assert_eq!(fired, 0, "{profile} fired while filling the buffers");
    engine
}

/// Per-event cost: 1000 20-char deltas (20 KB) pushed onto an engine whose
/// buffers already hold 10 KB or 10 MB. Criterion reports the time per
/// batch; divide by 1000 for one event. The clone of the starting engine is
/// outside the measurement.
fn one_event(c: &mut Criterion) {
    let text = prose(20_000);
    let mut g = c.benchmark_group("1000 events");
    g.throughput(Throughput::Elements(1000));
    for (label, bytes) in [("10KB", 10 << 10), ("10MB", 10 << 20)] {
        for profile in [Profile::Seed, Profile::GeminiCli, Profile::Extended] {
            let base = engine_at(profile, bytes);
            for (kind, make) in [
                ("reasoning", Event::reasoning as fn(&str) -> Event),
                ("content", Event::content),
            ] {
                let batch = deltas(&text, 20, make);
                g.bench_function(format!("{profile} {kind} deltas on a {label} buffer"), |b| {
                    b.iter_batched_ref(
                        || base.clone(),
                        |e| batch.iter().map(|ev| e.push(black_box(ev)).len()).sum::<usize>(),
                        BatchSize::LargeInput,
                    )
                });
            }
        }
    }
    g.finish();
}

/// Seeking in a 100 000-event stream (reasoning, content and tool calls in
/// requests of ~6 KB): each iteration jumps to a far-away event, so the
/// cursor is restored from a snapshot and replayed, never just stepped.
fn seek(c: &mut Criterion) {
    let text = prose(2 << 20);
    let mut events = vec![Event::prompt("bench")];
    let mut pieces = deltas(&text, 20, Event::reasoning).into_iter();
    let mut i = 0usize;
    while events.len() < 100_000 {
        if i.is_multiple_of(300) {
            events.push(Event::request());
            events.push(Event::tool_call(
                "read_file",
                serde_json::json!({ "path": format!("src/f{}.rs", i % 7) }),
            ));
            events.push(Event::tool_result(!i.is_multiple_of(3)));
        }
        let piece = pieces.next().expect("enough prose");
        events.push(if i.is_multiple_of(4) {
            Event::content(&piece_text(&piece))
        } else {
            piece
        });
        i += 1;
    }
    for profile in [Profile::Seed, Profile::GeminiCli] {
        let mut tape = loopscope_core::Tape::with_events(&Setup::profile(profile), events.clone());
        let targets = [99_999usize, 3, 50_000, 77_777, 12_345, 99_000, 45_678, 1];
        let mut k = 0;
        c.bench_function(&format!("seek/{profile} 100k events, far jumps"), |b| {
            b.iter(|| {
                k = (k + 1) % targets.len();
                tape.seek(black_box(targets[k])).states().len()
            })
        });
    }
}

fn extended_jumping_numbers(c: &mut Criterion) {
    let setup = Setup::profile(Profile::Extended);
    let mut g = c.benchmark_group("engine");
    g.sample_size(10);
    for unit_words in [1, 300] {
        let text = common::jumping_numbers(unit_words, 120_000);
        let mut events = vec![Event::prompt("bench"), Event::request()];
        events.extend(deltas(&text, 7, Event::reasoning));
        assert_eq!(run(&setup, &events), 0, "jumping numbers are no loop");
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(
            format!("extended 120KB of a repeating unit whose numbers jump, {unit_words}-word copies"),
            |b| b.iter(|| run(&setup, black_box(&events))),
        );
    }
    g.finish();
}

fn piece_text(e: &Event) -> String {
    match &e.kind {
        loopscope_core::EventKind::Reasoning { text } => text.clone(),
        _ => String::new(),
    }
}

criterion_group!(
    benches,
    gemini_cli_1mb,
    profiles_by_mix,
    one_event,
    seek,
    extended_jumping_numbers
);
criterion_main!(benches);
