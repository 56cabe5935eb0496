//! Issue 23: inputs built to cost too much — quadratic paths, bombs and
//! floods. Work and memory are counted, never timed: an allocator that
//! counts what this test's thread allocates gives the bytes allocated in
//! all (work that copies) and the most held at once (memory).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

use loopscope::scan::{self, Transform};
use loopscope_core::formats::{self, Decoder, FormatChoice, Item};
use loopscope_core::{Event, Profile, Setup};

struct Counting;

/// Bytes allocated in all, held now, and held at most (since the last reset).
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
/// Every test here holds this while it runs, so the counts are its own
/// (report runs its scans on worker threads, so they are process-wide).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn note(grow: i64) {
    let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
    PEAK.fetch_max(now, Ordering::Relaxed);
    if grow > 0 {
        ALLOCATED.fetch_add(grow as u64, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as i64);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// What running `f` cost.
#[derive(Clone, Copy, Debug)]
struct Cost {
    /// Bytes allocated in all.
    allocated: u64,
    /// The most bytes held at once, above what was held before.
    peak: i64,
}

fn cost<T>(f: impl FnOnce() -> T) -> (T, Cost) {
    let (allocated, live) = (ALLOCATED.load(Ordering::SeqCst), LIVE.load(Ordering::SeqCst));
    PEAK.store(live, Ordering::SeqCst);
    let out = f();
    let c = Cost {
        allocated: ALLOCATED.load(Ordering::SeqCst) - allocated,
        peak: PEAK.load(Ordering::SeqCst) - live,
    };
    (out, c)
}

/// Taken first by every test.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Asserts that `work` is linear in the input size: what a doubled input
/// adds is about twice what the input before it added (fixed costs, such
/// as a detector's tables, drop out; a quadratic path adds four times).
fn assert_linear(what: &str, n: usize, work: impl Fn(usize) -> u64) {
    let _warm_up = work(n);
    let [a, b, c] = [n, 2 * n, 4 * n].map(&work);
    let (first, second) = (b as f64 - a as f64, c as f64 - b as f64);
    let ratio = second / first;
    assert!(
        first > 0.0 && (1.5..2.7).contains(&ratio),
        "{what}: {a}, {b}, {c} for inputs of {n}, {}, {} (the doubling added x{ratio:.2})",
        2 * n,
        4 * n
    );
}

fn native(events: &[Event]) -> Vec<u8> {
    events
        .iter()
        .map(|e| e.to_json().to_string() + "\n")
        .collect::<String>()
        .into_bytes()
}

/// `scan_one` over native bytes; the detections found.
fn scan_bytes(bytes: &[u8], setups: &[Setup], transform: &Transform) -> usize {
    let mut decoder = formats::detect::AutoDecoder::new(FormatChoice::Auto, None);
    let scanned = scan::scan_one(bytes, &mut decoder, setups, transform, |_, _, _| {}, |_| {}).unwrap();
    scanned.detections.len()
}

/// Text of `len` chars with no repeats a detector would see (CJK and
/// emoji among the letters: offsets are chars).
fn varied_text(len: usize) -> String {
    let mut rng = common::Rng::new(23);
    let words = ["alpha", "思考", "beta", "🙂", "gamma", "检查", "delta", "epsilon"];
    let mut s = String::new();
    let mut n = 0;
    while n < len {
        let w = words[(rng.next() % words.len() as u64) as usize];
        let k = rng.next() % 1000;
        let piece = format!("{w}{k} ");
        n += piece.chars().count();
        s.push_str(&piece);
    }
    s.chars().take(len).collect()
}

#[test]
fn rechunking_a_long_delta_costs_linear_work() {
    let _alone = alone();
    // --rechunk 64 over one 400,000-char delta took 9.6 s: every char
    // cloned the whole recorded event. The bytes allocated now double
    // with the delta.
    let setups = vec![Setup::profile(Profile::Seed)];
    let transform = Transform {
        rechunk: Some(64),
        ..Transform::default()
    };
    assert_linear("rechunk 64: bytes allocated", 100_000, |len| {
        let bytes = native(&[Event::request(), Event::content(&varied_text(len))]);
        cost(|| scan_bytes(&bytes, &setups, &transform)).1.allocated
    });
    // Cut into single chars, a 1 MB delta is never held as a list of pieces.
    let one = Transform {
        rechunk: Some(1),
        ..Transform::default()
    };
    let bytes = native(&[Event::request(), Event::content(&"x".repeat(1 << 20))]);
    let (_, c) = cost(|| scan_bytes(&bytes, &setups, &one));
    assert!(c.peak < 64 << 20, "{c:?}");
}

#[test]
fn one_huge_delta_costs_chunk_chant_its_history_not_36_bytes_a_char() {
    let _alone = alone();
    // A 2 KB zstd file holding one 60 MB line took 2.35 GB: chunk-chant
    // stored ~37 bytes per char of the delta before cutting all but the
    // last 5000. Now only what can stay in the history is stored; the
    // engine's copy of the content buffer is the one per-char cost left.
    for profile in [Profile::Seed, Profile::GeminiCli] {
        let setup = common::setup(profile, &["chunk-chant"]);
        let text = varied_text(8 << 20);
        let event = Event::content(&text);
        let mut engine = loopscope_core::Engine::new(&setup);
        engine.push(&Event::request());
        let (_, c) = cost(|| engine.push(&event));
        assert!(
            c.peak < 3 * text.len() as i64,
            "{profile:?}: {} MB held for an {} MB delta",
            c.peak >> 20,
            text.len() >> 20
        );
    }
}

#[test]
fn nested_zstd_frames_are_refused_past_one_level() {
    let _alone = alone();
    // 2,000 nested frames (10 KB) took 379 MB here, 72 KB took 3.3 GB in
    // the issue: each level held a decoder, its window and a read buffer.
    let mut bytes = native(&[Event::request(), Event::content("packed")]);
    for level in 1..=3 {
        bytes = zstd::encode_all(&bytes[..], 1).unwrap();
        let opened =
            formats::detect::open_reader(Box::new(std::io::Cursor::new(bytes.clone())), FormatChoice::Auto, None);
        match level {
            1 => assert_eq!(opened.map(|o| o.format.name()).unwrap(), "native"),
            _ => {
                let err = opened.err().expect("refused");
                assert_eq!(err.kind(), loopscope_core::ErrorKind::Malformed { line: None });
                assert!(err.to_string().contains("a zstd file inside a zstd file"), "{err}");
            }
        }
    }
    // A frame asking for a 2 GiB window is refused by zstd's own limit (128 MiB).
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.long_distance_matching(true).unwrap();
    enc.window_log(31).unwrap();
    std::io::Write::write_all(&mut enc, &native(&[Event::request()])).unwrap();
    let big = enc.finish().unwrap();
    let mut opened =
        formats::detect::open_reader(Box::new(std::io::Cursor::new(big)), FormatChoice::Auto, None).map(|o| o.reader);
    let read = opened.as_mut().map_err(|e| e.to_string()).and_then(|r| {
        let mut sink = Vec::new();
        r.read_to_end(&mut sink).map_err(|e| e.to_string())
    });
    assert!(read.is_err_and(|e| e.contains("too much memory")));
}

#[test]
fn a_yaml_alias_bomb_is_a_bad_input_not_a_gigabyte() {
    let _alone = alone();
    // 364 bytes of nested aliases took 1.2 GB; 412 bytes aborted under a
    // 4 GB limit (in scan, report and the viewer).
    let laughs = |levels: usize| {
        let mut s = "interactions:\n- request: {}\n  a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n".to_string();
        for i in 1..levels {
            s += &format!("  a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 9].join(","));
        }
        s
    };
    // A fat anchor aliased many times: few aliases, much text.
    let fat = format!(
        "interactions:\n- big: &big \"{}\"\n  copies: [{}]\n",
        "x".repeat(1 << 20),
        vec!["*big"; 200].join(",")
    );
    for (what, text) in [("laughs", laughs(6)), ("fat", fat)] {
        let mut decoder = formats::detect::Kind::Cassette.build();
        let (items, c) = cost(|| decode_all(&mut *decoder, text.as_bytes()));
        assert!(c.peak < 16 << 20, "{what}: {} MB", c.peak >> 20);
        let problems: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                Item::Problem(p) => Some(p.to_string()),
                Item::Event(..) | Item::Unknown(_) => None,
            })
            .collect();
        assert_eq!(problems.len(), 1, "{what}: {problems:?}");
        assert!(problems[0].contains("an alias bomb?"), "{what}: {problems:?}");
    }
}

/// A native log of `n` bad lines between two good ones.
fn bad_lines(n: usize) -> Vec<u8> {
    let mut b = native(&[Event::request()]);
    for _ in 0..n {
        b.extend_from_slice(b"not json\n");
    }
    b.extend(native(&[Event::content("end")]));
    b
}

#[test]
fn a_report_on_a_flood_of_bad_lines_keeps_a_few_warnings_not_all() {
    // A report on 10 million bad lines kept every warning: 2.1 GB, 56 s.
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let opts = loopscope::report::ReportOptions {
        setups: vec![Setup::profile(Profile::Seed)],
        format: FormatChoice::Auto,
        size: (80, 24),
        max_sections: 5,
    };
    let run = |n: usize| {
        let path = dir.path().join(format!("bad{n}.jsonl"));
        std::fs::write(&path, bad_lines(n)).unwrap();
        let inputs = vec![scan::Input::Path(path)];
        let mut err = Vec::new();
        let (_, c) = cost(|| loopscope::report::build(&inputs, &opts, &mut err).unwrap());
        (String::from_utf8(err).unwrap(), c)
    };
    let (small, once) = run(100_000);
    let (big, twice) = run(400_000);
    assert!(twice.peak < once.peak + (1 << 20), "{once:?} then {twice:?}");
    for (text, more) in [(small, "99,990"), (big, "399,990")] {
        assert_eq!(text.lines().count(), 11, "{text}");
        assert!(
            text.lines().last().unwrap().ends_with(&format!(
                "… and {more} more bad lines; `loopscope scan --bad-lines` lists them"
            )),
            "{text}"
        );
    }
}

#[test]
fn scan_prints_the_first_bad_lines_and_a_count_or_all_with_bad_lines() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("flood.jsonl"), bad_lines(100_000)).unwrap();
    let run = |extra: &[&str]| {
        let out = common::loopscope_at_root()
            .current_dir(dir.path())
            .args(["scan", "flood.jsonl"])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stderr).unwrap()
    };
    let err = run(&[]);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 11, "{err}");
    assert!(
        lines[0].starts_with("loopscope: warning: flood.jsonl: line 2: not valid JSON"),
        "{err}"
    );
    assert_eq!(
        lines[10],
        "loopscope: warning: flood.jsonl: … and 99,990 more bad lines; --bad-lines lists them"
    );
    let all = run(&["--bad-lines"]);
    assert_eq!(all.lines().count(), 100_000);
    assert!(
        all.lines().last().unwrap().contains("line 100001: not valid JSON"),
        "{all}"
    );
}

fn decode_all(decoder: &mut dyn Decoder, bytes: &[u8]) -> Vec<Item> {
    let mut items = Vec::new();
    decoder.feed(bytes, &mut items);
    decoder.finish(&mut items);
    items
}

#[test]
fn a_zstd_file_that_expands_past_the_spool_limit_is_drawn_up_to_the_cut_and_said() {
    let _alone = alone();
    // Issue 31: a 91 KB zstd file spooled 966 MB to the temporary folder.
    // Here 40 MB of events in a file of a few KB, and a 2 MB spool limit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.jsonl.zst");
    let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(&path).unwrap(), 19).unwrap();
    use std::io::Write;
    for i in 0..60_000 {
        let text = format!(
            "step {} of the plan: {}",
            i % 7,
            "read the file and think again ".repeat(17)
        );
        writeln!(enc, "{}", serde_json::json!({"type": "content", "text": text})).unwrap();
    }
    enc.finish().unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 100_000);
    let out = dir.path().join("shot.txt");
    let o = common::loopscope_at_root()
        .args(["screenshot", "--max-spool", "2M", "-o"])
        .arg(&out)
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("spool reached its limit of 2 MiB (--max-spool)"), "{err}");
    let at: usize = err
        .split("drawn up to event ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((40_000..60_000).contains(&at), "cut at {at}");
    let screen = std::fs::read_to_string(&out).unwrap();
    assert!(screen.contains(&format!("event {at} (0–{at})")), "{screen}");
    assert!(screen.contains("kept up to event"), "the timeline says where: {screen}");
}
