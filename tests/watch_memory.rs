//! What `watch` keeps per session (issue 31): a fleet of 10,000 sessions
//! must fit in 100 MB, so each session may hold its detectors' state and a
//! little more, never a preallocated table or its events. The
//! heap is counted by a global allocator that adds up what is live, in this
//! process, where the watching thread runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use loopscope::watch::{self, WatchNews, WatchOptions};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SAMPLES: &[&str] = &[
    "formats/claude-code-session.jsonl",
    "formats/codex-rollout-errors.jsonl",
    "formats/gemini-cli-session.jsonl",
    "identical-tool-calls.jsonl",
    "three-step-cycle.jsonl",
    "chanting-content-en.jsonl",
];

/// Heap held per session once `n` sessions are caught up, in bytes.
fn heap_per_session(dir: &Path, n: usize) -> isize {
    for i in 0..n {
        let name = SAMPLES[i % SAMPLES.len()];
        let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs").join(name)).unwrap();
        let base = Path::new(name).file_name().unwrap().to_string_lossy().into_owned();
        std::fs::write(dir.join(format!("s{i:05}-{base}")), bytes).unwrap();
    }
    let before = LIVE.load(Ordering::Relaxed);
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = WatchOptions {
        roots: watch::roots(&[PathBuf::from(dir)], &[], &|_| None),
        setup: loopscope_core::Setup::profile(loopscope_core::Profile::Seed),
        format: loopscope_core::formats::FormatChoice::Auto,
        idle_after: Duration::from_secs(3600),
        from_start: false,
        telemetry: Default::default(),
    };
    watch::spawn(
        opts,
        Box::new(move |news| {
            if matches!(news, WatchNews::CaughtUp) {
                let _ = tx.send(());
            }
            true
        }),
    );
    rx.recv().unwrap();
    (LIVE.load(Ordering::Relaxed) - before) / n as isize
}

#[test]
fn a_watched_session_holds_its_detectors_state_not_tables_or_events() {
    let dir = tempfile::tempdir().unwrap();
    let per = heap_per_session(dir.path(), 1200);
    eprintln!("{per} bytes of heap per watched session");
    // 100 MB for 10,000 sessions, with the allocator's overhead and the
    // process's own 10 MB: 8 KB of heap each at most (before issue 31,
    // 138 KB; benches/e2e/watch_fleet.py measures the resident size).
    assert!(per <= 8_000, "{per} bytes per session");
}
