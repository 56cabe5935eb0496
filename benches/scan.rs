//! `scan` end to end from bytes (`cargo bench --bench scan`): native JSONL
//! of three shapes — reasoning-heavy, content-heavy, tool-heavy — decoded
//! and run through every detector of each profile, as `loopscope scan`
//! does. Target (issue 9): at least 100 MB per CPU second for each.

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Words;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loopscope::scan::{run, scan_one, Input, ScanOptions};
use loopscope::sessions::Session;
use loopscope_core::formats::detect::Kind;
use loopscope_core::formats::FormatChoice;
use loopscope_core::{Profile, Setup};

const BYTES: usize = 8 << 20;

/// `n` words and a space, as a model streams a few tokens per delta.
fn delta(w: &mut Words, n: usize) -> String {
    (0..n).map(|_| w.word()).collect::<Vec<_>>().join(" ") + " "
}

/// A log of `BYTES` in one of the three shapes, deterministic.
fn log(shape: &str) -> Vec<u8> {
    let mut w = Words::new();
    let mut out = String::from("{\"type\":\"prompt\",\"text\":\"fix the failing test\"}\n");
    let mut t = 0.0;
    let mut call = 0;
    while out.len() < BYTES {
        t += 0.05;
        let line = match shape {
            "reasoning" if w.next().is_multiple_of(300) => "{\"type\":\"request\"}".to_string(),
            "reasoning" => serde_json::json!({"type": "reasoning", "text": delta(&mut w, 4), "ts": t}).to_string(),
            "content" if w.next().is_multiple_of(300) => "{\"type\":\"request\"}".to_string(),
            "content" => serde_json::json!({"type": "content", "text": delta(&mut w, 4), "ts": t}).to_string(),
            _ => {
                call += 1;
                let name = ["read_file", "shell", "grep"][(w.next() % 3) as usize];
                let args =
                    serde_json::json!({"path": format!("src/f{}.rs", w.next() % 500), "pattern": delta(&mut w, 3)});
                let ok = !w.next().is_multiple_of(10);
                format!(
                    "{}\n{}",
                    serde_json::json!({"type": "tool_call", "id": format!("c{call}"), "name": name, "args": args, "ts": t}),
                    serde_json::json!({"type": "tool_result", "id": format!("c{call}"), "ok": ok, "output": delta(&mut w, 30)})
                )
            }
        };
        out.push_str(&line);
        out.push('\n');
    }
    out.into_bytes()
}

fn scan(c: &mut Criterion) {
    for shape in ["reasoning", "content", "tools"] {
        let bytes = log(shape);
        let mut g = c.benchmark_group(format!("scan_{shape}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(8));
        for profile in Profile::ALL {
            let setup = Setup::profile(profile);
            g.bench_function(profile.to_string(), |b| {
                b.iter(|| {
                    let mut decoder = Kind::Native.build();
                    let found = scan_one(
                        &bytes[..],
                        &mut *decoder,
                        std::slice::from_ref(&setup),
                        &Default::default(),
                        |_, _, _| {},
                        |_| {},
                    )
                    .unwrap();
                    black_box(found.events)
                })
            });
        }
        g.finish();
    }
}

/// `scan DIR` over 1,000 session files (issue 15): the three shapes cut
/// into 28 KB sessions, each its own file, scanned by one worker and by two.
/// Target: two cores at least 1.7x one.
fn scan_many(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    let mut total = 0;
    for shape in ["reasoning", "content", "tools"] {
        let bytes = log(shape);
        let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
        let per_file = lines.len() / 300;
        for (k, chunk) in lines.chunks(per_file.max(1)).take(334).enumerate() {
            if inputs.len() == 1000 {
                break;
            }
            let path = dir.path().join(format!("{shape}-{k:04}.jsonl"));
            let mut body = chunk.join(&b'\n');
            body.push(b'\n');
            total += body.len();
            std::fs::write(&path, body).unwrap();
            inputs.push(Input::Found(Session {
                path,
                found: true,
                agent: None,
                parent: None,
                unreadable: None,
                title: None,
            }));
        }
    }
    let mut g = c.benchmark_group("scan_1000_files");
    g.throughput(Throughput::Bytes(total as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    for jobs in [1, 2] {
        let opts = ScanOptions {
            setups: vec![Setup::profile(Profile::Extended)],
            format: FormatChoice::Auto,
            json: true,
            transform: Default::default(),
            jobs: Some(jobs),
            summary: false,
            progress: false,
            bad_lines: false,
            rows: Default::default(),
            telemetry: Default::default(),
        };
        g.bench_function(format!("jobs_{jobs}"), |b| {
            b.iter(|| {
                let (mut out, mut err) = (Vec::new(), Vec::new());
                black_box(run(&inputs, &opts, &mut out, &mut err).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, scan, scan_many);
criterion_main!(benches);
