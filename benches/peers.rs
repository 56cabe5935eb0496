//! The peer profiles' detection alone, on a native JSONL file, for
//! benches/peers/peer_speed.py (the originals' loops are timed alone too):
//! `cargo bench --bench peers -- FILE PROFILE [REPEAT] [DETECTOR.PARAM=VALUE ...]`
//! prints `{"ms": best pass (wall), "cpu_ms": best pass (this thread's CPU
//! time, as bench.py times the Python originals), "detections": [event, ...]}`. The events are
//! parsed once, outside the timing; each pass runs a fresh engine (the
//! profile's detectors, nothing else) over all of them: what is timed is
//! detection alone, as the originals' loops are timed without their parsing.

use std::time::Instant;

use loopscope_core::event::Event;
use loopscope_core::Engine;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let [file, profile, rest @ ..] = &args[..] else {
        eprintln!("usage: cargo bench --bench peers -- FILE PROFILE [REPEAT] [DETECTOR.PARAM=VALUE ...]");
        return;
    };
    let repeat: usize = rest.iter().find_map(|r| r.parse().ok()).unwrap_or(5);
    let sets: Vec<(&str, &str)> = rest.iter().filter_map(|r| r.split_once('=')).collect();
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
    let setup = loopscope_core::setup(profile, &[], &sets).expect("a profile and its parameters");
    let (mut best, mut best_cpu) = (f64::MAX, f64::MAX);
    let mut found = Vec::new();
    for _ in 0..repeat {
        let cpu = thread_cpu_ms();
        let start = Instant::now();
        let mut engine = Engine::new(&setup);
        let mut seen = Vec::new();
        for e in &events {
            seen.extend(engine.push(e).into_iter().map(|d| d.event));
        }
        best = best.min(start.elapsed().as_secs_f64() * 1000.0);
        best_cpu = best_cpu.min(thread_cpu_ms() - cpu);
        found = seen;
    }
    println!(
        "{}",
        serde_json::json!({"ms": best, "cpu_ms": best_cpu, "detections": found})
    );
}

/// CPU time of this thread so far, in ms (wall time on a busy 2-core
/// machine counts other processes' turns too).
fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}
