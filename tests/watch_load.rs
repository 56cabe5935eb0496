//! `watch` under load (issue 31): many sessions written at once, most
//! lines cut across two writes, sessions created in new folders, renamed
//! into place, replacing a file that was no session, created empty or with
//! half a first line, rewritten whole as they grow, hidden, and a SQLite
//! store gaining sessions while it runs; the folder named relatively.
//! `watch --no-tui --json --from-start` must print exactly the records that
//! `scan --json` prints for the final files.
//!
//! Bounded by counting, never by timing: it waits until watch has printed
//! as many records as scan found, then for a sentinel session written
//! after everything else, then compares the two lists.
//! `LOOPSCOPE_LOAD_SESSIONS` and `LOOPSCOPE_LOAD_ROUNDS` make it bigger.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::{Rng, Running};
use rusqlite::Connection;
use serde_json::json;

/// The samples the sessions are made of (each loops at least once).
const SAMPLES: &[&str] = &[
    "identical-tool-calls.jsonl",
    "formats/claude-code-session.jsonl",
    "formats/codex-rollout-errors.jsonl",
    "three-step-cycle.jsonl",
    "formats/gemini-cli-session.jsonl",
    "stutter-zh.jsonl",
    "formats/pi-session.jsonl",
    "ab-tool-cycle.jsonl",
    "formats/openai-responses-tool-repeat.sse",
    "error-streak.jsonl",
    "chanting-content-en.jsonl",
    "formats/gemini-chanting.sse",
];

/// How a session comes to be.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// Appended in place, lines often cut in two writes.
    Append,
    /// In a folder made just before it.
    NewFolder,
    /// Written as a scratch file, renamed into place whole.
    Renamed,
    /// Its name first holds text that is no session; the session is
    /// renamed over it.
    ReplacesJunk,
    /// Created empty, then given half a first line, then the rest.
    EmptyFirst,
    /// Written whole again as it grows: aside, then renamed over itself.
    Rewritten,
    /// A hidden file (named like a scratch file) that stays.
    Hidden,
}

const WAYS: &[Way] = &[
    Way::Append,
    Way::NewFolder,
    Way::Append,
    Way::Renamed,
    Way::ReplacesJunk,
    Way::EmptyFirst,
    Way::Rewritten,
    Way::Append,
    Way::Hidden,
];

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn sample(name: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-logs").join(name)).unwrap();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    bytes
}

/// Writes `bytes` line by line, about half the lines in two writes cut at
/// a random byte (inside a UTF-8 char too), letting the others run between.
fn write_lines(f: &mut std::fs::File, bytes: &[u8], rng: &mut Rng) {
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        LINES.fetch_add(1, Ordering::Relaxed);
        if line.len() > 1 && rng.next().is_multiple_of(2) {
            SPLIT.fetch_add(1, Ordering::Relaxed);
            let cut = 1 + (rng.next() % (line.len() as u64 - 1)) as usize;
            f.write_all(&line[..cut]).unwrap();
            pause(rng);
            f.write_all(&line[cut..]).unwrap();
        } else {
            f.write_all(line).unwrap();
        }
        pause(rng);
    }
}

/// Lines written, and those written in two pieces.
static LINES: AtomicUsize = AtomicUsize::new(0);
static SPLIT: AtomicUsize = AtomicUsize::new(0);

fn pause(rng: &mut Rng) {
    match rng.next() % 8 {
        0 => thread::sleep(Duration::from_millis(2)),
        1..=3 => thread::yield_now(),
        _ => {}
    }
}

/// One session's writer. An `early` one writes half of it (ending inside a
/// line) before watch starts, the rest once `start` lets it go.
fn write_session(root: &Path, i: usize, rounds: usize, early: bool, ready: mpsc::Sender<()>, start: Arc<Barrier>) {
    let name = SAMPLES[i % SAMPLES.len()];
    let way = WAYS[i % WAYS.len()];
    let base = Path::new(name).file_name().unwrap().to_string_lossy().into_owned();
    // A pi session is a tree read along the branch that ends at its last
    // entry: repeated, its entries would make a second branch, which only
    // the end of the file decides (followed, it is read in file order).
    let bytes = sample(name).repeat(if name.contains("pi-session") { 1 } else { rounds });
    let mut rng = Rng::new(0x5EED + i as u64);
    let dir = match way {
        Way::NewFolder => root.join(format!("proj-{i:02}")),
        _ => root.to_path_buf(),
    };
    let hidden = if matches!(way, Way::Hidden) { "." } else { "" };
    let path = dir.join(format!("{hidden}s{i:02}-{base}"));
    // The early ones hold half their lines and half a line when watch starts.
    let cut = if early && matches!(way, Way::Append | Way::NewFolder | Way::EmptyFirst) {
        let half = bytes.len() / 2;
        half + bytes[half..].iter().position(|b| *b == b'\n').unwrap_or(0) / 2
    } else {
        0
    };
    if cut > 0 {
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        write_lines(&mut f, &bytes[..cut], &mut rng);
        ready.send(()).unwrap();
        start.wait();
        write_lines(&mut f, &bytes[cut..], &mut rng);
        return;
    }
    start.wait();
    // Later sessions start a moment after one another.
    thread::sleep(Duration::from_millis(5 * (i as u64 % 16)));
    std::fs::create_dir_all(&dir).unwrap();
    match way {
        Way::Append | Way::NewFolder | Way::Hidden => {
            write_lines(&mut std::fs::File::create(&path).unwrap(), &bytes, &mut rng)
        }
        Way::Rewritten => {
            let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
            let scratch = dir.join(format!(".s{i:02}-{base}.tmp"));
            let mut upto = 0;
            while upto < lines.len() {
                let was = upto;
                upto = (upto + 1 + (rng.next() % 12) as usize).min(lines.len());
                LINES.fetch_add(upto - was, Ordering::Relaxed);
                std::fs::write(&scratch, lines[..upto].concat()).unwrap();
                std::fs::rename(&scratch, &path).unwrap();
                pause(&mut rng);
            }
        }
        Way::EmptyFirst => {
            let mut f = std::fs::File::create(&path).unwrap();
            pause(&mut rng);
            let first = bytes.iter().position(|b| *b == b'\n').unwrap() / 2;
            f.write_all(&bytes[..first]).unwrap();
            thread::sleep(Duration::from_millis(20));
            write_lines(&mut f, &bytes[first..], &mut rng);
        }
        Way::Renamed | Way::ReplacesJunk => {
            if matches!(way, Way::ReplacesJunk) {
                let mut junk = std::fs::File::create(&path).unwrap();
                write_lines(&mut junk, "not a session\njust notes\n".repeat(3).as_bytes(), &mut rng);
                thread::sleep(Duration::from_millis(20));
            }
            let scratch = dir.join(format!("s{i:02}-{base}.tmp"));
            write_lines(&mut std::fs::File::create(&scratch).unwrap(), &bytes, &mut rng);
            std::fs::rename(&scratch, &path).unwrap();
        }
    }
}

/// An opencode store made while watch runs, gaining `sessions` sessions
/// (a child among them) of five failing `npm test` calls each.
fn write_store(root: &Path, sessions: usize, start: Arc<Barrier>) {
    start.wait();
    let db = root.join("opencode.db");
    let c = Connection::open(&db).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, parent_id text, title text NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);",
    )
    .unwrap();
    for s in 0..sessions {
        let id = format!("ses_{s}");
        let parent = (s % 3 == 2).then(|| format!("ses_{}", s - 1));
        c.execute(
            "INSERT INTO session VALUES (?1, ?2, ?3, ?4)",
            (&id, &parent, format!("load {s}"), s as i64),
        )
        .unwrap();
        c.execute(
            "INSERT INTO message VALUES (?1, ?2, 1, 1, '{\"role\":\"user\"}')",
            (format!("{id}-m0"), &id),
        )
        .unwrap();
        for i in 0..6 {
            let t = 10 + i;
            let m = format!("{id}-m{}", i + 1);
            c.execute(
                "INSERT INTO message VALUES (?1, ?2, ?3, ?3, '{\"role\":\"assistant\"}')",
                (&m, &id, t),
            )
            .unwrap();
            let failed = json!({"type": "tool", "callID": format!("{id}-c{i}"), "tool": "bash", "state": {"status": "error", "input": {"command": "npm test"}, "error": "FAIL"}});
            c.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                (format!("{m}-p"), &m, &id, t, failed.to_string()),
            )
            .unwrap();
            thread::sleep(Duration::from_millis(3));
        }
    }
}

#[test]
fn watch_reports_what_scan_of_the_final_files_reports_under_concurrent_writers() {
    let sessions = env_count("LOOPSCOPE_LOAD_SESSIONS", 30);
    let rounds = env_count("LOOPSCOPE_LOAD_ROUNDS", 6);
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().canonicalize().unwrap();
    let early = sessions / 3;
    let start = Arc::new(Barrier::new(sessions + 2));
    let (ready, early_written) = mpsc::channel();
    let writers: Vec<_> = (0..sessions)
        .map(|i| {
            let (root, start, ready) = (root.clone(), start.clone(), ready.clone());
            thread::spawn(move || write_session(&root, i, rounds, i < early, ready, start))
        })
        .chain(std::iter::once({
            let (root, start) = (root.clone(), start.clone());
            thread::spawn(move || write_store(&root, 4, start))
        }))
        .collect();
    // The early sessions hold half of their lines (and half a line) when watch starts.
    let early_sessions =
        (0..early).filter(|i| matches!(WAYS[i % WAYS.len()], Way::Append | Way::NewFolder | Way::EmptyFirst));
    for _ in early_sessions {
        early_written.recv().unwrap();
    }
    // Named relatively, as `watch runs` is typed.
    let (parent, name) = (root.parent().unwrap(), root.file_name().unwrap());
    let mut cmd = common::loopscope_at_root();
    cmd.current_dir(parent)
        .args(["watch", "--no-tui", "--json", "--from-start"])
        .arg(name);
    let run = Running::start(cmd);
    Running::wait(&run.err, "watching", &mut Vec::new());
    start.wait();
    for w in writers {
        w.join().unwrap();
    }
    let expected = common::scan_records(parent, name);
    assert!(
        expected.len() >= sessions,
        "{} records for {sessions} sessions",
        expected.len()
    );

    // Watch catches up: as many records as scan's, then the sentinel's.
    let mut printed: Vec<String> = Vec::new();
    let failsafe = Instant::now() + Duration::from_secs(300);
    while printed.len() < expected.len() && Instant::now() < failsafe {
        printed.extend(run.out.recv_timeout(Duration::from_millis(200)));
    }
    std::fs::write(root.join("zz-sentinel.jsonl"), sample("identical-tool-calls.jsonl")).unwrap();
    while !printed.iter().any(|l| l.contains("zz-sentinel")) && Instant::now() < failsafe {
        printed.extend(run.out.recv_timeout(Duration::from_millis(200)));
    }
    let notes: Vec<String> = run.err.try_iter().collect();
    run.stop();
    let mut watched: Vec<String> = printed.into_iter().filter(|l| !l.contains("zz-sentinel")).collect();
    watched.sort();
    let missing: Vec<&String> = expected.iter().filter(|l| !watched.contains(l)).collect();
    let extra: Vec<&String> = watched.iter().filter(|l| !expected.contains(l)).collect();
    eprintln!(
        "{sessions} sessions x {rounds} rounds and a store ({} lines, {} of them in two writes): scan {} records, watch {} ({} missing, {} extra)",
        LINES.load(Ordering::Relaxed),
        SPLIT.load(Ordering::Relaxed),
        expected.len(),
        watched.len(),
        missing.len(),
        extra.len()
    );
    assert!(
        missing.is_empty() && extra.is_empty() && watched.len() == expected.len(),
        "missing: {missing:#?}\nextra: {extra:#?}\nnotes: {notes:#?}"
    );
}
