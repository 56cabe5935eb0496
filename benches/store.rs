//! A SQLite store of 10,000 sessions (opencode's schema), scanned session by
//! session as `scan opencode.db` does (`cargo bench --bench store`). Each
//! session is read in pages of rows, so memory holds one page, not the
//! store: the bench prints the process's peak resident memory after the
//! scans next to the store's size.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loopscope_core::formats::{self, FormatChoice};

const SESSIONS: usize = 10_000;

fn build(db: &Path) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE session (id text PRIMARY KEY, parent_id text, title text NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
         CREATE INDEX part_message_id_id_idx ON part (message_id, id);
         CREATE INDEX part_session_idx ON part (session_id);
         BEGIN;",
    )
    .unwrap();
    let text = "the parser returns early on empty input so check the config ".repeat(8);
    for s in 0..SESSIONS {
        let sid = format!("ses_{s:06}");
        c.execute("INSERT INTO session VALUES (?1, NULL, 'title', ?2)", (&sid, s as i64))
            .unwrap();
        for m in 0..4 {
            let mid = format!("msg_{s:06}_{m}");
            c.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, '{\"role\":\"assistant\"}')",
                (&mid, &sid, m),
            )
            .unwrap();
            for p in 0..3 {
                let data = serde_json::json!({"type": "text", "text": text}).to_string();
                c.execute(
                    "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    (format!("{mid}_{p}"), &mid, &sid, p, data),
                )
                .unwrap();
            }
        }
    }
    c.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn store(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    build(&db);
    let bytes = std::fs::metadata(&db).unwrap().len();
    let streams = formats::source::streams(&db).unwrap().unwrap();
    assert_eq!(streams.len(), SESSIONS);
    let mut g = c.benchmark_group("store");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("opencode.db, 10,000 sessions scanned one by one", |b| {
        b.iter(|| {
            let mut events = 0usize;
            for s in &streams {
                let opened = formats::open_input(&s.path, FormatChoice::Auto).unwrap();
                let mut decoder = opened.decoder;
                formats::decode_all(opened.reader, &mut *decoder, |_| events += 1).unwrap();
            }
            black_box(events)
        })
    });
    g.finish();
    eprintln!(
        "store: {} sessions, {:.1} MB on disk; peak resident memory of the bench process {:.1} MB",
        SESSIONS,
        bytes as f64 / 1e6,
        peak_rss_kb() as f64 / 1e3
    );
}

criterion_group!(benches, store);
criterion_main!(benches);
