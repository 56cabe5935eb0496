//! Reading options are options, not process state: two readers with two
//! record limits in one process each keep their own, through every entry
//! point (a reader, a path, a monitor fed bytes). And opening an input
//! fails with an error of its kind, whatever the input is.

use std::path::Path;

use loopscope_core::formats::DEFAULT_MAX_RECORD;
use loopscope_core::{scan, scan_path, setup, ErrorKind, FormatChoice, Monitor, ReadOptions};

/// A native log with one 2 KiB reasoning line (CJK and emoji) between two short ones.
fn log() -> String {
    let long = "思考🧪".repeat(400);
    format!(
        "{{\"type\":\"request\"}}\n{{\"type\":\"reasoning\",\"text\":\"{long}\"}}\n{{\"type\":\"content\",\"text\":\"done\"}}\n"
    )
}

#[test]
fn each_reader_keeps_its_own_record_limit_at_the_same_time() {
    let seed = setup("seed", &[], &[]).unwrap();
    let small = ReadOptions::default().with_max_record(1024);
    // Both at once, on two threads: a global limit would leak between them.
    let (tight, loose) = std::thread::scope(|s| {
        let a = s.spawn(|| scan(std::io::Cursor::new(log()), small, None, &seed).unwrap());
        let b = s.spawn(|| scan(std::io::Cursor::new(log()), FormatChoice::Auto, None, &seed).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(tight.events, 2, "the long line is skipped");
    assert_eq!(tight.problems.len(), 1);
    assert_eq!(tight.problems[0].line, 2);
    assert!(
        tight.problems[0].reason.contains("1 KiB"),
        "{}",
        tight.problems[0].reason
    );
    assert_eq!(loose.events, 3);
    assert!(loose.problems.is_empty());
    assert_eq!(ReadOptions::default().max_record, DEFAULT_MAX_RECORD);
}

#[test]
fn a_path_and_a_monitor_take_the_limit_too() {
    let seed = setup("seed", &[], &[]).unwrap();
    let dir = tempfile_dir("limit");
    let path = dir.join("session.jsonl");
    std::fs::write(&path, log()).unwrap();
    let small = ReadOptions::default().with_max_record(1024);
    let found = scan_path(&path, small, &seed).unwrap();
    assert_eq!((found.events, found.problems.len()), (2, 1));
    // The limit holds however the bytes are split.
    let mut monitor = Monitor::new(&seed);
    for piece in log().as_bytes().chunks(100) {
        monitor.feed(piece, small);
    }
    monitor.finish();
    assert_eq!((monitor.events(), monitor.problems().len()), (2, 1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn opening_an_input_fails_with_an_error_of_its_kind() {
    let seed = setup("seed", &[], &[]).unwrap();
    let dir = tempfile_dir("kinds");
    let kind = |p: &Path| scan_path(p, FormatChoice::Auto, &seed).unwrap_err().kind();
    assert_eq!(kind(&dir.join("missing.jsonl")), ErrorKind::NotFound);
    assert_eq!(
        kind(&dir),
        ErrorKind::UnsupportedFormat,
        "a folder that holds no session"
    );
    let text = dir.join("notes.txt");
    std::fs::write(&text, "just some words, not a log\n").unwrap();
    assert_eq!(kind(&text), ErrorKind::UnsupportedFormat);
    // `FILE#ID` where the file holds one stream names nothing in it.
    let one = dir.join("one.jsonl");
    std::fs::write(&one, "{\"type\":\"request\"}\n").unwrap();
    assert_eq!(kind(&dir.join("one.jsonl#agent-7")), ErrorKind::NotFound);
    // A forced format the file is not.
    let e = scan_path(&one, FormatChoice::Fixed(loopscope_core::Format::Codex), &seed).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Malformed { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "sqlite")]
#[test]
fn a_store_without_the_session_named_is_not_found_and_a_foreign_database_unsupported() {
    let seed = setup("seed", &[], &[]).unwrap();
    let dir = tempfile_dir("store");
    let db = dir.join("opencode.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE session (id TEXT, title TEXT, parent_id TEXT, time_created INTEGER, time_updated INTEGER);
         CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
         CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);
         INSERT INTO session VALUES ('ses_1', '读 notes', NULL, 1, 2);",
    )
    .unwrap();
    drop(conn);
    let named = dir.join("opencode.db#ses_nope");
    let e = scan_path(&named, FormatChoice::Auto, &seed).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("no session ses_nope"), "{e}");
    let other = dir.join("other.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE recipes (name TEXT);").unwrap();
    drop(conn);
    assert_eq!(
        scan_path(&other, FormatChoice::Auto, &seed).unwrap_err().kind(),
        ErrorKind::UnsupportedFormat
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "parquet")]
#[test]
fn a_damaged_parquet_file_is_malformed_input() {
    let seed = setup("seed", &[], &[]).unwrap();
    let dir = tempfile_dir("parquet");
    let file = dir.join("rows.parquet");
    std::fs::write(&file, b"PAR1 this is no parquet footer PAR1").unwrap();
    let e = scan_path(&file, FormatChoice::Auto, &seed).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Malformed { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder of this test's own under the system's temporary folder.
fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("loopscope-read-options-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
