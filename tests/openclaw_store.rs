//! OpenClaw's session store (`~/.openclaw/agents/<agent>/agent/
//! openclaw-agent.sqlite`, 2026.9.6), written here in the shape the real
//! agent writes it (its tables, pi's entries as text or as zstd frames,
//! OpenClaw's loop-guard records): read as a store of sessions, every
//! entry in order, the agent's own warning, block and stop said as such,
//! found by `--agent openclaw`, and followed while it grows.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::{params, Connection};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");
const SESSION: &str = "5695cdf4-123c-499e-9555-0ccd79a600aa";

/// The tables OpenClaw keeps a session in (the columns loopscope reads,
/// and the constraint that makes an entry text or a frame, never both).
const SCHEMA: &str = "
CREATE TABLE session_nodes (session_key TEXT NOT NULL PRIMARY KEY, current_session_id TEXT NOT NULL,
  entry_json TEXT NOT NULL, updated_at INTEGER NOT NULL, label TEXT, display_name TEXT);
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, transcript_updated_at INTEGER DEFAULT NULL);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT,
  created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
  PRIMARY KEY (session_id, seq),
  CHECK ((event_json IS NOT NULL AND event_zstd IS NULL) OR (event_json IS NULL AND event_zstd IS NOT NULL)));
CREATE TABLE trajectory_runtime_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT, event_json TEXT, created_at INTEGER);
";

struct Store {
    db: PathBuf,
    conn: Connection,
    seq: i64,
    parent: Option<String>,
}

impl Store {
    fn create(home: &Path) -> Store {
        let dir = home.join(".openclaw/agents/main/agent");
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("openclaw-agent.sqlite");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        conn.execute(
            "INSERT INTO session_nodes VALUES ('agent:main:main', ?1, '{}', 1795848180000, NULL, 'Read the notes')",
            params![SESSION],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO session_windows VALUES (?1, 'agent:main:main', 1795848180000, 1795848190000, NULL)",
            params![SESSION],
        )
        .unwrap();
        let mut s = Store {
            db,
            conn,
            seq: 0,
            parent: None,
        };
        s.row(json!({"type": "session", "version": 4, "id": SESSION, "timestamp": "2026-11-28T06:43:00.440Z", "cwd": "/work"}), false);
        s.entry(
            json!({"type": "model_change", "provider": "scripted", "modelId": "scripted"}),
            false,
        );
        s.entry(
            json!({"type": "custom", "customType": "model-snapshot", "data": {"provider": "scripted"}}),
            false,
        );
        s
    }

    /// An entry of the tree (id and parent set), as text or as a zstd frame.
    fn entry(&mut self, mut e: Value, packed: bool) {
        let id = format!("e{:04}", self.seq);
        e["id"] = json!(id);
        e["parentId"] = json!(self.parent);
        e["timestamp"] = json!(format!("2026-11-28T06:43:{:02}.000Z", (self.seq % 60)));
        self.parent = Some(id);
        self.row(e, packed);
    }

    fn row(&mut self, e: Value, packed: bool) {
        let text = e.to_string();
        if packed {
            let frame = zstd::stream::encode_all(text.as_bytes(), 1).unwrap();
            self.conn
                .execute(
                    "INSERT INTO transcript_events VALUES (?1, ?2, NULL, ?3, ?4, ?5, '{\"version\":1}')",
                    params![SESSION, self.seq, 1795848180000i64 + self.seq, frame, text.len() as i64],
                )
                .unwrap();
        } else {
            self.conn
                .execute(
                    "INSERT INTO transcript_events VALUES (?1, ?2, ?3, ?4, NULL, NULL, NULL)",
                    params![SESSION, self.seq, text, 1795848180000i64 + self.seq],
                )
                .unwrap();
        }
        self.seq += 1;
    }

    fn message(&mut self, m: Value, packed: bool) {
        self.entry(json!({"type": "message", "message": m}), packed);
    }

    /// One model turn calling `read` and its result, as OpenClaw stores them.
    fn read_call(&mut self, n: usize, result: Value) {
        let id = format!("call_{n:04}");
        self.message(
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I will read notes.txt again.", "thinkingSignature": "reasoning_content"},
                {"type": "toolCall", "id": id, "name": "read", "arguments": {"path": "/work/notes.txt"}}],
                "stopReason": "toolUse", "usage": {"output": 16}}),
            false,
        );
        let mut r = json!({"role": "toolResult", "toolCallId": id, "toolName": "read", "isError": false,
            "content": [{"type": "text", "text": "hello from the scripted test\n"}],
            "details": {"kind": "text", "content": "hello from the scripted test\n"}});
        if let Value::Object(extra) = result {
            for (k, v) in extra {
                r[k] = v;
            }
        }
        // Results past the first few are long enough to be stored packed.
        self.message(r, n.is_multiple_of(3));
        self.entry(
            json!({"type": "custom", "customType": "openclaw.cache-ttl", "data": {"frozenToolResults": []}}),
            n.is_multiple_of(2),
        );
    }
}

fn events(db: &Path) -> Vec<Value> {
    let out = Command::new(BIN).arg("convert").arg(db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.stderr.is_empty(),
        "a well-formed store reads without a warning: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The run OpenClaw's tool-loop detection stopped (warning at 10, block at
/// 20, a second critical at 21 stops the run).
fn guarded_run(home: &Path) -> Store {
    let mut s = Store::create(home);
    s.message(
        json!({"role": "user", "content": "Read notes.txt and tell me what it says.", "idempotencyKey": "k:user"}),
        false,
    );
    for n in 1..=22 {
        let result = match n {
            11 => json!({"content": [{"type": "text", "text": "hello from the scripted test\n"},
                {"type": "text", "text": "[System note: Tool-loop warning after 10 repeated calls. Change your approach or stop if you are not making progress.]"}]}),
            21 | 22 => {
                json!({"isError": true, "content": [{"type": "text", "text": "CRITICAL: Called read with identical outcomes 20 times. Session execution blocked to prevent runaway loops."}],
                "details": {"status": "blocked", "deniedReason": "tool-loop",
                    "intervention": {"kind": "critical-tool-loop", "toolName": "read", "detector": "generic_repeat", "count": n - 1}}})
            }
            _ => json!({}),
        };
        s.read_call(n, result);
    }
    let stop = "OpenClaw stopped this run because tool-loop recovery encountered another critical loop. No blocked tool action was executed.";
    s.message(
        json!({"role": "assistant", "content": [{"type": "text", "text": stop}], "stopReason": "error", "errorMessage": stop}),
        false,
    );
    s
}

#[test]
fn every_entry_is_read_in_order_text_or_packed_and_the_agents_own_guard_is_said() {
    let home = tempfile::tempdir().unwrap();
    let store = guarded_run(home.path());
    let packed: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM transcript_events WHERE event_json IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(packed >= 10, "the store holds packed entries: {packed}");
    let ev = events(&store.db);
    assert_eq!(ev[0]["source"], "openclaw");
    let of = |t: &str| ev.iter().filter(|e| e["type"] == t).collect::<Vec<_>>();
    let prompts = of("prompt");
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0]["text"], "Read notes.txt and tell me what it says.");
    let calls = of("tool_call");
    assert_eq!(calls.len(), 22, "every call, packed results or not");
    assert!(calls
        .iter()
        .all(|c| c["name"] == "read" && c["args"] == json!({"path": "/work/notes.txt"})));
    let results = of("tool_result");
    let oks: Vec<bool> = results.iter().map(|r| r["ok"].as_bool().unwrap()).collect();
    assert_eq!(oks.iter().filter(|ok| !**ok).count(), 2);
    assert!(!oks[20] && !oks[21]);
    assert_eq!(results[20]["denied"], "tool-loop");
    // The warning is OpenClaw's, not the tool's: the 11th output is the file's text.
    assert_eq!(results[10]["output"], "hello from the scripted test\n");
    let said: Vec<(&str, &str)> = ev
        .iter()
        .filter(|e| e["kind"] == "agent_loop_detection")
        .map(|e| (e["agent"].as_str().unwrap(), e["level"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("openclaw", "warning"),
            ("openclaw", "block"),
            ("openclaw", "block"),
            ("openclaw", "stop")
        ]
    );
    // The warning follows the 11th result, the blocks their results.
    let at = |pred: &dyn Fn(&Value) -> bool| ev.iter().position(pred).unwrap();
    let warning = at(&|e| e["level"] == "warning");
    assert_eq!(ev[warning - 1]["id"], "call_0011");
    // The same calls, whatever their results: seed and extended see the loop.
    for profile in ["seed", "extended"] {
        let out = Command::new(BIN)
            .args(["scan", "--json", "--profile", profile])
            .arg(&store.db)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{profile}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_store_is_found_by_agent_and_its_sessions_are_listed_with_their_titles() {
    let home = tempfile::tempdir().unwrap();
    let _store = guarded_run(home.path());
    let out = Command::new(BIN)
        .args(["scan", "--summary", "--json", "--agent", "openclaw"])
        .env("HOME", home.path())
        .env_remove("OPENCLAW_STATE_DIR")
        .env_remove("OPENCLAW_HOME")
        .env_remove("OPENCLAW_AGENT_DIR")
        .env_remove("OPENCLAW_PROFILE")
        .env_remove("LOOPSCOPE_OPENCLAW_DIR")
        .output()
        .unwrap();
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v["type"] == "summary")
        .collect();
    assert_eq!(rows.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(rows[0]["agent"], "openclaw");
    assert_eq!(rows[0]["format"], "openclaw");
    assert_eq!(rows[0]["title"], "Read the notes");
    assert!(rows[0]["file"]
        .as_str()
        .unwrap()
        .ends_with(&format!("openclaw-agent.sqlite#{SESSION}")));
    assert_eq!(rows[0]["bad_lines"], 0);
    // OPENCLAW_STATE_DIR moves the whole state folder.
    let state = tempfile::tempdir().unwrap();
    std::fs::rename(home.path().join(".openclaw"), state.path().join("s")).unwrap();
    let out = Command::new(BIN)
        .args(["scan", "--summary", "--json", "--agent", "openclaw"])
        .env("HOME", home.path())
        .env("OPENCLAW_STATE_DIR", state.path().join("s"))
        .env_remove("LOOPSCOPE_OPENCLAW_DIR")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"agent\":\"openclaw\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_damaged_frame_is_a_bad_line_and_the_rest_is_read() {
    let home = tempfile::tempdir().unwrap();
    let mut s = Store::create(home.path());
    s.message(json!({"role": "user", "content": "go"}), false);
    s.conn
        .execute(
            "INSERT INTO transcript_events VALUES (?1, ?2, NULL, 0, X'28B52FFD00DEADBEEF', 9, '{}')",
            params![SESSION, s.seq],
        )
        .unwrap();
    s.seq += 1;
    s.read_call(1, json!({}));
    let out = Command::new(BIN).arg("convert").arg(&s.db).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("zstd frame cannot be read"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"tool_call\""), "the rows after it are read: {text}");
}

#[test]
fn a_growing_store_is_followed_and_its_loop_arrives() {
    let home = tempfile::tempdir().unwrap();
    let mut s = Store::create(home.path());
    s.message(json!({"role": "user", "content": "go"}), false);
    let mut tail = Command::new(BIN);
    tail.args(["tail", "--no-tui", "--json", "--detectors", "tool-repeat"])
        .arg(format!("{}#{SESSION}", s.db.display()))
        .env_remove("LOOPSCOPE_CONFIG");
    let run = common::Running::start(tail);
    let mut seen = Vec::new();
    common::Running::wait(&run.err, "following", &mut seen);
    for n in 1..=6 {
        s.read_call(n, json!({}));
    }
    let mut seen = Vec::new();
    let line = common::Running::wait(&run.out, "tool-repeat", &mut seen);
    assert!(line.contains("\"detector\":\"tool-repeat\""), "{line}");
    run.stop();
}
