//! The agents' sources followed while they are written (`tail --no-tui`):
//! lines appended to a JSONL session, event files added to an OpenHands
//! conversation, rows inserted into a SQLite store — the detection arrives.
//! And hostile stores and folders: a clear message, no panic, nothing written.

mod common;

use std::path::Path;
use std::process::Command;

use common::Running;
use rusqlite::Connection;
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");
const AGENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

fn tail(target: &Path) -> Running {
    let mut cmd = Command::new(BIN);
    cmd.args(["tail", "--no-tui", "--json", "--detectors", "tool-repeat"])
        .arg(target)
        .env_remove("LOOPSCOPE_CONFIG")
        .env("XDG_CONFIG_HOME", target.parent().unwrap());
    Running::start(cmd)
}

fn wait(run: &Running, out: bool, text: &str) -> String {
    let mut seen = Vec::new();
    Running::wait(if out { &run.out } else { &run.err }, text, &mut seen)
}

fn append(p: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_pi_session_growing_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    append(
        &p,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/w\"}\n",
    );
    let run = tail(&p);
    wait(&run, false, "following");
    let mut parent = String::from("null");
    for i in 0..5 {
        let a = json!({"type": "message", "id": format!("a{i}"), "parentId": serde_json::from_str::<serde_json::Value>(&parent).unwrap(), "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": format!("c{i}"), "name": "bash", "arguments": {"command": "npm test"}}], "stopReason": "toolUse"}});
        let r = json!({"type": "message", "id": format!("r{i}"), "parentId": format!("a{i}"), "timestamp": "2026-01-01T00:00:02Z",
            "message": {"role": "toolResult", "toolCallId": format!("c{i}"), "content": [{"type": "text", "text": "FAIL"}], "isError": true}});
        append(&p, &format!("{a}\n{r}\n"));
        parent = format!("\"r{i}\"");
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    let line = wait(&run, true, "tool-repeat");
    assert!(line.contains("\"event\":13"), "{line}");
}

#[test]
fn an_openhands_conversation_gaining_event_files() {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("4c1d2e3f4a5b4c6d8e9f0a1b2c3d4e5f");
    std::fs::create_dir_all(conv.join("events")).unwrap();
    std::fs::write(conv.join("base_state.json"), "{}").unwrap();
    let event = |i: usize, v: serde_json::Value| {
        // Written beside, then renamed in: a reader never sees half a file.
        let tmp = conv.join(format!(".tmp{i}"));
        std::fs::write(&tmp, v.to_string()).unwrap();
        std::fs::rename(&tmp, conv.join("events").join(format!("event-{i:05}-{i}.json"))).unwrap();
    };
    event(
        0,
        json!({"id": "u", "timestamp": "2026-01-01T00:00:00", "source": "user", "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix"}]}, "kind": "MessageEvent"}),
    );
    let run = tail(&conv);
    wait(&run, false, "following");
    for k in 0..5 {
        event(
            1 + 2 * k,
            json!({"id": format!("a{k}"), "timestamp": "2026-01-01T00:00:01", "source": "agent", "tool_call": {"id": format!("c{k}"), "name": "terminal", "arguments": "{\"command\":\"npm test\"}"}, "llm_response_id": format!("r{k}"), "kind": "ActionEvent"}),
        );
        event(
            2 + 2 * k,
            json!({"id": format!("o{k}"), "timestamp": "2026-01-01T00:00:02", "source": "environment", "tool_call_id": format!("c{k}"), "observation": {"content": [{"type": "text", "text": "FAIL"}], "is_error": true}, "kind": "ObservationEvent"}),
        );
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    wait(&run, true, "tool-repeat");
}

#[test]
fn a_sqlite_store_gaining_rows_while_its_writer_holds_it_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let c = Connection::open(&db).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, parent_id text, title text NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         INSERT INTO session VALUES ('ses_1', NULL, 'live', 1);
         INSERT INTO message VALUES ('m0', 'ses_1', 1, 1, '{\"role\":\"user\"}');
         INSERT INTO part VALUES ('p0', 'm0', 'ses_1', 1, 1, '{\"type\":\"text\",\"text\":\"fix\"}');",
    )
    .unwrap();
    let run = tail(&db);
    wait(&run, false, "following");
    for i in 0..5 {
        let t = 10 + i;
        c.execute(
            "INSERT INTO message VALUES (?1, 'ses_1', ?2, ?2, '{\"role\":\"assistant\"}')",
            (format!("m{}", i + 1), t),
        )
        .unwrap();
        // A tool part appears running, then is updated in place when it fails.
        let running = json!({"type": "tool", "callID": format!("c{i}"), "tool": "bash", "state": {"status": "running", "input": {"command": "npm test"}}});
        c.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_1', ?3, ?3, ?4)",
            (format!("p{}", i + 1), format!("m{}", i + 1), t, running.to_string()),
        )
        .unwrap();
        let failed = json!({"type": "tool", "callID": format!("c{i}"), "tool": "bash", "state": {"status": "error", "input": {"command": "npm test"}, "error": "FAIL"}});
        c.execute(
            "UPDATE part SET data = ?1, time_updated = ?2 WHERE id = ?3",
            (failed.to_string(), t + 1, format!("p{}", i + 1)),
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    let line = wait(&run, true, "tool-repeat");
    assert!(line.contains("opencode.db"), "{line}");
    drop(c);
}

/// An opencode store with its schema and one session `ses_1` holding a
/// prompt, in WAL mode as opencode keeps it; the writer's connection.
fn opencode_store(db: &Path) -> Connection {
    let c = Connection::open(db).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch(
        "CREATE TABLE session (id text PRIMARY KEY, parent_id text, title text NOT NULL, time_updated integer NOT NULL);
         CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
         INSERT INTO session VALUES ('ses_1', NULL, 'live', 1);
         INSERT INTO message VALUES ('m0', 'ses_1', 1, 1, '{\"role\":\"user\"}');
         INSERT INTO part VALUES ('p0', 'm0', 'ses_1', 1, 1, '{\"type\":\"text\",\"text\":\"fix\"}');",
    )
    .unwrap();
    c
}

/// Five failed runs of the same command, each a message and a tool part.
fn failing_calls(c: &Connection, from: i64) {
    for i in 0..5 {
        let t = from + i;
        c.execute(
            "INSERT INTO message VALUES (?1, 'ses_1', ?2, ?2, '{\"role\":\"assistant\"}')",
            (format!("m{t}"), t),
        )
        .unwrap();
        let failed = json!({"type": "tool", "callID": format!("c{t}"), "tool": "bash", "state": {"status": "error", "input": {"command": "npm test"}, "error": "FAIL"}});
        c.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_1', ?3, ?3, ?4)",
            (format!("p{t}"), format!("m{t}"), t, failed.to_string()),
        )
        .unwrap();
    }
}

/// Issue 43, item 7: a store deleted and created again while followed
/// ("attempt to write a readonly database", and the detection `scan`
/// finds in the new store never came). The new store is read from its
/// start; nothing is written beside either.
#[test]
fn a_store_deleted_and_created_again_is_followed_into_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    let old = opencode_store(&db);
    let run = tail(&db);
    wait(&run, false, "following");
    drop(old);
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(&p);
    }
    wait(&run, false, "deleted");
    // The agent starts over: a new store at the same path, and a loop in it.
    let new = opencode_store(&db);
    failing_calls(&new, 100);
    let (code, out, err) = scan(&["--json", "--detectors", "tool-repeat", db.to_str().unwrap()]);
    assert_eq!(code, 1, "scan finds the loop: {out}{err}");
    wait(&run, false, "replaced");
    let line = wait(&run, true, "tool-repeat");
    assert!(line.contains("opencode.db"), "{line}");
    let mut rest = Vec::new();
    while let Ok(l) = run.err.recv_timeout(std::time::Duration::from_millis(300)) {
        rest.push(l);
    }
    assert!(
        !rest.iter().any(|l| l.contains("readonly") || l.contains("read-only")),
        "{rest:#?}"
    );
    drop(new);
}

/// Issue 43, item 7: a rollback journal left by a writer that crashed
/// mid-transaction (a hot journal). Reading would roll it back, a write:
/// loopscope says what it is, that it leaves it alone and how to recover,
/// not SQLite's "attempt to write a readonly database" — and touches nothing.
#[test]
fn a_hot_journal_is_explained_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap();
    std::fs::copy(Path::new(AGENTS).join("opencode/opencode.db"), live.join("opencode.db")).unwrap();
    let c = Connection::open(live.join("opencode.db")).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    c.pragma_update(None, "cache_size", 2).unwrap();
    let pad = "x".repeat(4000);
    c.execute_batch("BEGIN;").unwrap();
    for i in 0..64 {
        c.execute(
            "INSERT INTO part VALUES (?1, 'msg_0004', 'ses_main0001', 1, 1, ?2)",
            (format!("prt_pad{i}"), json!({"type": "text", "text": pad}).to_string()),
        )
        .unwrap();
    }
    c.execute_batch("UPDATE part SET data = data;").unwrap();
    // The files as a crash leaves them: the database half-written, its journal beside it.
    std::fs::copy(live.join("opencode.db"), crashed.join("opencode.db")).unwrap();
    std::fs::copy(live.join("opencode.db-journal"), crashed.join("opencode.db-journal")).unwrap();
    c.execute_batch("ROLLBACK;").unwrap();
    drop(c);
    let before = listing(&crashed);
    let (code, _, err) = scan(&[crashed.join("opencode.db").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("hot journal") && err.contains("will not touch it") && err.contains("never delete the -journal"),
        "{err}"
    );
    assert!(!err.contains("attempt to write"), "{err}");
    assert_eq!(listing(&crashed), before, "the journal and the database are untouched");
}

/// The files of a folder, with their sizes and times: nothing was written.
fn listing(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut v: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap();
            (p.display().to_string(), m.len(), m.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn scan(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .arg("scan")
        .args(args)
        .env_remove("LOOPSCOPE_CONFIG")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hostile_stores_give_a_clear_message_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(Path::new(AGENTS).join("opencode/opencode.db")).unwrap();
    // Truncated: the header promises pages that are not there.
    std::fs::write(dir.path().join("truncated.db"), &good[..good.len() / 3]).unwrap();
    // Corrupt: the header survives, the pages are noise.
    let mut corrupt = good.clone();
    for (i, b) in corrupt.iter_mut().enumerate().skip(100) {
        *b = (i * 31 % 251) as u8;
    }
    std::fs::write(dir.path().join("corrupt.db"), &corrupt).unwrap();
    std::fs::write(dir.path().join("tiny.db"), b"SQLite format 3\0").unwrap();
    let other = Connection::open(dir.path().join("other.db")).unwrap();
    other
        .execute_batch("CREATE TABLE invoices (id integer, total real); INSERT INTO invoices VALUES (1, 2.5);")
        .unwrap();
    drop(other);
    // A schema this version does not know: the part table lost its data column.
    let newer = Connection::open(dir.path().join("newer.db")).unwrap();
    newer
        .execute_batch(
            "CREATE TABLE session (id text, title text, time_updated integer);
             CREATE TABLE message (id text, session_id text, data text);
             CREATE TABLE part (id text, message_id text, session_id text, payload blob);
             INSERT INTO session VALUES ('s', 't', 1);",
        )
        .unwrap();
    drop(newer);
    let before = listing(dir.path());
    for (name, says) in [
        ("truncated.db", "damaged"),
        ("corrupt.db", "damaged"),
        ("tiny.db", "truncated"),
        ("other.db", "not an agent's session store"),
        ("newer.db", "a schema this version does not know"),
    ] {
        let (code, _, err) = scan(&[dir.path().join(name).to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
    }
    assert_eq!(
        listing(dir.path()),
        before,
        "a store read is never written, nothing is created beside it"
    );
}

#[test]
fn a_locked_store_is_said_and_a_huge_row_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("opencode.db");
    std::fs::copy(Path::new(AGENTS).join("opencode/opencode.db"), &db).unwrap();
    let c = Connection::open(&db).unwrap();
    let huge = json!({"type": "text", "text": "x".repeat(2 << 20)});
    c.execute(
        "INSERT INTO part VALUES ('prt_9999', 'msg_0004', 'ses_main0001', 1767225700000, 1767225700000, ?1)",
        [huge.to_string()],
    )
    .unwrap();
    let (code, _, err) = scan(&["--max-record", "1M", db.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("part row prt_9999: it is 2.0 MiB, longer than the record limit"),
        "{err}"
    );
    // A writer holding an exclusive lock (rollback journal): said, not waited on forever.
    c.execute_batch("BEGIN EXCLUSIVE; UPDATE session SET title = 'x';")
        .unwrap();
    let (code, _, err) = scan(&[db.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("locked"), "{err}");
    c.execute_batch("ROLLBACK;").unwrap();
}

#[test]
fn a_conversation_of_thousands_of_event_files() {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("c");
    std::fs::create_dir_all(conv.join("events")).unwrap();
    std::fs::write(conv.join("base_state.json"), "{}").unwrap();
    for i in 0..3000 {
        let v = json!({"id": i, "timestamp": "2026-01-01T00:00:00", "source": "agent", "tool_call": {"id": format!("c{i}"), "name": "read", "arguments": format!("{{\"path\":\"f{i}\"}}")}, "llm_response_id": format!("r{i}"), "kind": "ActionEvent"});
        std::fs::write(conv.join("events").join(format!("event-{i:05}-x.json")), v.to_string()).unwrap();
    }
    std::fs::write(conv.join("events").join("event-03000-bad.json"), "{not json").unwrap();
    let before = listing(&conv);
    let (code, out, err) = scan(&["--summary", "--json", conv.to_str().unwrap()]);
    assert!(matches!(code, 0 | 1), "{err}");
    let row: serde_json::Value = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|v: &serde_json::Value| v["type"] == "summary")
        .unwrap();
    assert_eq!(row["events"], 6000, "a request and a call per file, in index order");
    assert_eq!(row["bad_lines"], 1);
    assert!(err.contains("line 3001: not valid JSON"), "{err}");
    assert_eq!(listing(&conv), before);
}
