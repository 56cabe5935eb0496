//! The peer profiles' detection alone, on a native JSONL file, for
//! benches/peers/peer_speed.py (the originals' loops are timed alone too):
//! `cargo bench --bench peers -- FILE PROFILE [REPEAT]` prints
//! `{"ms": per pass, "detections": [event, ...]}`. The events are parsed
//! once, outside the timing; each pass runs a fresh engine over all of them.

use std::time::Instant;

use loopscope_core::event::Event;
use loopscope_core::{Engine, Profile, Setup};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let [file, profile, rest @ ..] = &args[..] else {
        eprintln!("usage: cargo bench --bench peers -- FILE PROFILE [REPEAT]");
        return;
    };
    let repeat: usize = rest.first().and_then(|r| r.parse().ok()).unwrap_or(5);
    let text = std::fs::read_to_string(file).expect("the events file");
    let events: Vec<Event> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            Event::from_json(serde_json::from_str(l).expect("JSON"))
                .expect("an event")
                .event
        })
        .collect();
    let setup = Setup::profile(Profile::from_name(profile).expect("a profile"));
    let mut best = f64::MAX;
    let mut found = Vec::new();
    for _ in 0..repeat {
        let start = Instant::now();
        let mut engine = Engine::new(&setup);
        let mut seen = Vec::new();
        for e in &events {
            seen.extend(engine.push(e).into_iter().map(|d| d.event));
        }
        best = best.min(start.elapsed().as_secs_f64() * 1000.0);
        found = seen;
    }
    println!("{}", serde_json::json!({"ms": best, "detections": found}));
}
