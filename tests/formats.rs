//! The importers on the project's own fixtures (tests/fixtures/formats),
//! written to cover the shapes of the real files in shared/formats: what
//! each converts to, detection of every shape, robustness, round trips.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use loopscope::replay::feed::{self, Feed};
use loopscope_core::formats::detect::{classify, Kind};
use loopscope_core::formats::{self, Decoded, Decoder, Format, FormatChoice, Item};
use proptest::prelude::*;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/formats");

/// Every fixture with the importer it must be detected as.
const FIXTURES: &[(&str, Format)] = &[
    ("openai-chat.sse", Format::OpenaiChat),
    ("openai-chat.chunks.jsonl", Format::OpenaiChat),
    ("openai-chat-openrouter.sse", Format::OpenaiChat),
    ("openai-chat.cassette.yaml", Format::OpenaiChat),
    ("openai-responses.sse", Format::OpenaiResponses),
    ("anthropic.sse", Format::Anthropic),
    ("gemini.sse", Format::Gemini),
    ("gemini-array.json", Format::Gemini),
    ("gemini-vertex.chunks.jsonl", Format::Gemini),
    ("claude-code.jsonl", Format::ClaudeCode),
    ("claude-code.stream.jsonl", Format::ClaudeCode),
    ("qwen-code-session.jsonl", Format::QwenCode),
    ("rollout-2026-03-04T05-06-00-codex.jsonl", Format::Codex),
    ("codex-exec.jsonl", Format::Codex),
    ("codex-legacy.jsonl", Format::Codex),
    ("session-2026-04-01T00-00-g1.jsonl", Format::GeminiCli),
    ("session-legacy.json", Format::GeminiCli),
    ("checkpoint-contents.json", Format::GeminiCli),
    ("cline-task", Format::Cline),
    ("cline-task/api_conversation_history.json", Format::Cline),
    ("messages-trajectory.json", Format::Messages),
    ("swe-gym-row.json", Format::Messages),
    ("../rows/dataset.jsonl", Format::Rows),
];

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

/// The native JSONL `convert` writes for an input.
fn convert(name: &str) -> (String, String) {
    let out = Command::cargo_bin("loopscope")
        .unwrap()
        .arg("convert")
        .arg(name)
        // Relative, so that messages naming the file do not depend on the checkout.
        .current_dir(DIR)
        .assert()
        .success();
    let o = out.get_output();
    (
        String::from_utf8(o.stdout.clone()).unwrap(),
        String::from_utf8(o.stderr.clone()).unwrap(),
    )
}

fn decode(name: &str) -> (Format, Decoded) {
    let opened = formats::open_input(&path(name), FormatChoice::Auto).unwrap();
    let mut d = Decoded::default();
    let mut decoder = opened.decoder;
    formats::decode_all(opened.reader, &mut *decoder, |i| d.push(i)).unwrap();
    (opened.format, d)
}

#[test]
fn every_shape_is_detected_as_its_format() {
    for (name, want) in FIXTURES {
        let (format, _) = decode(name);
        assert_eq!(format, *want, "{name}");
    }
}

#[test]
fn conversions_of_every_fixture() {
    for (name, _) in FIXTURES {
        let (out, err) = convert(name);
        let snapshot = name.replace(['/', '.'], "_");
        insta::assert_snapshot!(snapshot, format!("{out}---- stderr\n{err}"));
    }
}

#[test]
fn the_quirks_that_matter() {
    // Tool-call fragments: index 1, repeated name, "" id on continuation → one call.
    let (_, d) = decode("openai-chat.sse");
    let calls: Vec<String> = d
        .events
        .iter()
        .filter(|e| e.type_name() == "tool_call")
        .map(|e| e.to_json().to_string())
        .collect();
    assert_eq!(
        calls,
        vec![r#"{"type":"tool_call","id":"call_a","name":"read_file","args":{"path":"cfg.toml"}}"#]
    );
    // OpenRouter repeats reasoning in reasoning_details: counted once.
    let (_, d) = decode("openai-chat-openrouter.sse");
    let reasoning: String = d
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            loopscope_core::EventKind::Reasoning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Think once.");
    // Arguments that are not JSON are kept as a string, and said.
    let (_, d) = decode("rollout-2026-03-04T05-06-00-codex.jsonl");
    assert!(d.events.iter().any(|e| e.to_json()["args"] == "not json"));
    assert_eq!(d.problems.len(), 1);
    assert!(!d.problems[0].skipped && d.problems[0].line == 12, "{:?}", d.problems);
    // Session files keep their timestamps.
    let (_, d) = decode("claude-code.jsonl");
    assert!(d
        .events
        .iter()
        .filter(|e| e.type_name() != "note")
        .all(|e| e.ts.is_some()));
}

#[test]
fn detection_needs_only_the_first_bytes_and_says_what_it_tried() {
    for (name, want) in FIXTURES {
        if name.contains("cline-task") || name.ends_with(".json") && !name.contains("array") {
            continue; // whole documents need the whole document
        }
        let bytes = std::fs::read(path(name)).unwrap();
        let head = &bytes[..bytes.len().min(4096)];
        let kind = classify(head, bytes.len() <= 4096, None)
            .unwrap()
            .expect("detected from the head");
        assert_eq!(kind.format(), *want, "{name}");
    }
    let err = classify(b"just some text\n", true, None).unwrap_err();
    assert_eq!(err.kind(), loopscope_core::ErrorKind::UnsupportedFormat);
    let err = err.to_string();
    assert!(
        err.contains("tried native, openai-chat") && err.contains("VCR cassettes"),
        "{err}"
    );
    assert_eq!(
        classify(b"{\"type\":\"reas", false, None),
        Ok(None),
        "waits for the first line"
    );
    assert_eq!(
        classify(&[0x28, 0xB5, 0x2F, 0xFD, 1], false, None),
        Ok(Some(Kind::Zstd))
    );
    assert_eq!(classify(b"[]", true, Some("ui_messages.json")), Ok(Some(Kind::ClineUi)));
}

#[test]
fn an_unrecognized_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "hello\nworld\n").unwrap();
    for cmd in ["scan", "convert"] {
        let out = Command::cargo_bin("loopscope")
            .unwrap()
            .arg(cmd)
            .arg(&p)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        // One clear line (issue 44): the list of every format tried was
        // ~500 chars, cut in its middle; `--help` lists them.
        assert_eq!(
            err.trim_end(),
            format!(
                "loopscope: {}: not a format loopscope reads (`--help` lists the formats `--format` takes)",
                p.display()
            ),
        );
        assert_eq!(err.lines().count(), 1);
    }
}

#[test]
fn converting_the_output_again_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _) in FIXTURES {
        let (first, _) = convert(name);
        let p = dir.path().join("first.jsonl");
        std::fs::write(&p, &first).unwrap();
        let again = Command::cargo_bin("loopscope")
            .unwrap()
            .arg("convert")
            .arg(&p)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        assert_eq!(String::from_utf8(again).unwrap(), first, "{name}");
        let out = dir.path().join("out.jsonl");
        Command::cargo_bin("loopscope")
            .unwrap()
            .args(["convert", "-o"])
            .arg(&out)
            .arg(&p)
            .assert()
            .success();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
    }
    // The input is never the output.
    let p = dir.path().join("first.jsonl");
    let out = Command::cargo_bin("loopscope")
        .unwrap()
        .args(["convert", "-o"])
        .arg(&p)
        .arg(&p)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to write over it"));
}

#[test]
fn zstd_rollouts_are_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let name = "rollout-2026-03-04T05-06-00-codex.jsonl";
    let plain = std::fs::read(path(name)).unwrap();
    let zst = dir.path().join(format!("{name}.zst"));
    std::fs::write(&zst, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let out = Command::cargo_bin("loopscope")
        .unwrap()
        .arg("convert")
        .arg(&zst)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(String::from_utf8(out).unwrap(), convert(name).0);
}

#[test]
fn a_forced_format_is_used_as_asked() {
    let out = Command::cargo_bin("loopscope")
        .unwrap()
        .args(["scan", "--format", "native"])
        .arg(path("anthropic.sse"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    // Every line is reported, and a format that read nothing is an error (issue 9).
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("line 1: not valid JSON"), "{err}");
    assert!(
        err.contains("--format native read no events from it (it looks like anthropic)"),
        "{err}"
    );
    let out = Command::cargo_bin("loopscope")
        .unwrap()
        .args(["scan", "--format", "yaml"])
        .arg(path("anthropic.sse"))
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown format \"yaml\""));
}

/// Items from feeding `bytes` in pieces cut at `cuts`.
fn feed_pieces(kind: Kind, bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut d = kind.build();
    let mut items = Vec::new();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut at = 0;
    for c in cuts {
        d.feed(&bytes[at..c.max(at)], &mut items);
        at = c.max(at);
    }
    d.feed(&bytes[at..], &mut items);
    d.finish(&mut items);
    items
}

fn kind_of(name: &str) -> Kind {
    let bytes = std::fs::read(path(name)).unwrap();
    classify(&bytes, true, Some(name)).unwrap().unwrap()
}

/// Every importer, from the format table.
const KINDS: [Kind; Kind::ALL.len()] = Kind::ALL;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn splitting_the_input_anywhere_gives_the_same_events(
        which in 0..FIXTURES.len(),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        let name = FIXTURES[which].0;
        let Ok(bytes) = std::fs::read(path(name)) else { return Ok(()) }; // the folder
        let kind = kind_of(name);
        prop_assert_eq!(feed_pieces(kind, &bytes, &cuts), feed_pieces(kind, &bytes, &[]), "{}", name);
    }

    #[test]
    fn arbitrary_bytes_never_panic_any_importer(bytes in prop::collection::vec(any::<u8>(), 0..600), which in 0..KINDS.len()) {
        let _ = feed_pieces(KINDS[which], &bytes, &[bytes.len() / 3]);
    }

    #[test]
    fn truncated_real_shaped_files_never_panic_and_keep_what_came_before(which in 0..FIXTURES.len(), cut in any::<usize>()) {
        let name = FIXTURES[which].0;
        let Ok(bytes) = std::fs::read(path(name)) else { return Ok(()) };
        let cut = cut % (bytes.len() + 1);
        for kind in KINDS {
            let _ = feed_pieces(kind, &bytes[..cut], &[]);
        }
        // Line formats keep every event of the lines before the cut.
        let kind = kind_of(name);
        if matches!(kind, Kind::ClaudeCode | Kind::Codex | Kind::GeminiCliJsonl | Kind::Native) {
            let whole_lines = bytes[..cut].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let before = Decoded::from_bytes(&bytes[..whole_lines], &mut *kind.build()).events;
            let cut_events = Decoded::from_bytes(&bytes[..cut], &mut *kind.build()).events;
            prop_assert!(cut_events.len() >= before.len());
            prop_assert_eq!(&cut_events[..before.len()], &before[..]);
        }
    }
}

#[test]
fn a_rewritten_file_yields_only_what_is_new() {
    // Cline saves ui_messages.json whole; a partial message grows in place.
    let v1 = r#"[{"ts":1,"type":"say","say":"text","text":"Do it"},{"ts":2,"type":"say","say":"reasoning","text":"I should","partial":true}]"#;
    let v2 = r#"[{"ts":1,"type":"say","say":"text","text":"Do it"},{"ts":2,"type":"say","say":"reasoning","text":"I should look","partial":false},{"ts":3,"type":"say","say":"command","text":"ls"}]"#;
    let mut d = Kind::ClineUi.build();
    let mut items = Vec::new();
    d.feed(v1.as_bytes(), &mut items);
    d.reread(v2.as_bytes(), &mut items);
    d.reread(v2.as_bytes(), &mut items);
    let got: Vec<String> = items
        .iter()
        .map(|i| match i {
            Item::Event(e, _) => e.to_json().to_string(),
            Item::Problem(p) => p.to_string(),
            Item::Unknown(u) => format!("unknown {}", u.kind),
        })
        .map(|s| s.split(",\"ts\"").next().unwrap().to_string())
        .collect();
    assert_eq!(
        got,
        vec![
            r#"{"type":"prompt","text":"Do it""#,
            r#"{"type":"reasoning","text":"I should""#,
            r#"{"type":"reasoning","text":" look""#,
            r#"{"type":"tool_call","id":"3","name":"execute_command","args":{"command":"ls"}"#,
        ]
    );
}

#[test]
fn following_a_rewritten_file_and_a_growing_sse_capture() {
    // A followed Cline file, saved whole by rename each time.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ui_messages.json");
    let save = |text: &str| {
        let tmp = dir.path().join("tmp.json");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
    };
    save(r#"[{"ts":1,"type":"say","say":"text","text":"Do it"}]"#);
    let (tx, rx) = std::sync::mpsc::channel();
    let hint = "ui_messages.json".to_string();
    feed::follow(
        &p,
        std::sync::Arc::new(move || {
            Box::new(formats::detect::AutoDecoder::new(FormatChoice::Auto, Some(&hint))) as Box<dyn Decoder>
        }),
        Box::new(move |f| tx.send(f).is_ok()),
    );
    let mut events = Vec::new();
    let mut wait_for = |n: usize| {
        while events.len() < n {
            match rx.recv_timeout(Duration::from_secs(5)).expect("feed") {
                Feed::Events(e) => events.extend(e.into_iter().map(|e| e.type_name().to_string())),
                Feed::File(news) => panic!("a rewrite of this format is not news: {news:?}"),
                _ => {}
            }
        }
    };
    wait_for(1);
    save(
        r#"[{"ts":1,"type":"say","say":"text","text":"Do it"},{"ts":2,"type":"say","say":"api_req_started","text":"{}"}]"#,
    );
    wait_for(2);
    assert_eq!(events, vec!["prompt", "request"]);
}

#[test]
fn tail_reads_a_raw_sse_capture_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("capture.sse");
    std::fs::write(&p, "").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args(["tail", "--no-tui", "--json", "--detectors", "tool-repeat"])
        .arg(&p)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    // Five responses that each call the same tool: one SSE exchange after another.
    for i in 0..5 {
        let chunk = |d: &str| {
            format!("data: {{\"id\":\"r{i}\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{d}}}]}}\n\n")
        };
        let text = chunk(r#"{"tool_calls":[{"index":0,"id":"c","function":{"name":"ls","arguments":"{}"}}]}"#)
            + &chunk(r#"{},"finish_reason":"tool_calls""#);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        std::io::Write::write_all(&mut f, b"data: [DONE]\n\n").unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("a detection");
    let _ = child.kill();
    let _ = child.wait();
    let d: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(d["detector"], "tool-repeat");
}

/// Output tokens of every decoded event, as `scan --summary` counts them.
fn recorded_tokens(text: &str) -> (u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, text).unwrap();
    let opened = formats::open_input(&file, FormatChoice::Auto).unwrap();
    let mut decoder = opened.decoder;
    let (mut tokens, mut events) = (0, 0);
    formats::decode_all(opened.reader, &mut *decoder, |i| {
        if let Item::Event(e, _) = i {
            events += 1;
            tokens += loopscope::whatif::usage_tokens(&e).unwrap_or(0);
        }
    })
    .unwrap();
    (tokens, events)
}

#[test]
fn session_importers_keep_the_output_tokens_their_logs_record() {
    // Claude Code: one API message over two lines, each repeating the usage so far.
    let claude = [
        r#"{"type":"user","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}"#,
        r#"{"type":"assistant","sessionId":"s","requestId":"r1","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm"}],"usage":{"input_tokens":10,"output_tokens":7}}}"#,
        r#"{"type":"assistant","sessionId":"s","requestId":"r1","timestamp":"2026-01-01T00:00:02Z","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":10,"output_tokens":12}}}"#,
        r#"{"type":"assistant","sessionId":"s","requestId":"r2","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"again"}],"usage":{"input_tokens":10,"output_tokens":5}}}"#,
    ]
    .join("\n");
    assert_eq!(recorded_tokens(&claude).0, 12 + 5);
    // Codex: token_count events after each response.
    let codex = [
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"x","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.46.0"}}"#,
        r#"{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"output_tokens":30},"last_token_usage":{"output_tokens":30}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"more"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:00:04Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"output_tokens":42},"last_token_usage":{"output_tokens":12}}}}"#,
        r#"{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"token_count","info":null}}"#,
    ]
    .join("\n");
    assert_eq!(recorded_tokens(&codex).0, 42);
    // gemini-cli: a message re-appended with more in it counts once.
    let gemini = [
        r#"{"sessionId":"g","projectHash":"p","startTime":"2026-01-01T00:00:00Z","lastUpdated":"2026-01-01T00:00:00Z","kind":"main"}"#,
        r#"{"id":"u1","timestamp":"2026-01-01T00:00:00Z","type":"user","content":[{"text":"go"}]}"#,
        r#"{"id":"a1","timestamp":"2026-01-01T00:00:01Z","type":"gemini","content":"part","tokens":{"input":100,"output":20,"thoughts":5}}"#,
        r#"{"id":"a1","timestamp":"2026-01-01T00:00:02Z","type":"gemini","content":"part and more","tokens":{"input":100,"output":30,"thoughts":5}}"#,
    ]
    .join("\n");
    assert_eq!(recorded_tokens(&gemini).0, 35);
}

/// Times an agent writes without an offset (OpenHands': Python's
/// `isoformat()`) are read as UTC; `convert` writes them as the RFC 3339
/// times they were read as, so its output reads back without a warning
/// and keeps its timing.
#[test]
fn times_without_an_offset_convert_to_times_that_read_back() {
    let conversation = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agents/openhands/conversations/4c1d2e3f4a5b4c6d8e9f0a1b2c3d4e5f"
    );
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.jsonl");
    Command::cargo_bin("loopscope")
        .unwrap()
        .args(["convert", conversation, "-o"])
        .arg(&first)
        .assert()
        .success();
    let text = std::fs::read_to_string(&first).unwrap();
    let times: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            l.split_once("\"ts\":\"")
                .map(|(_, rest)| rest.split('"').next().unwrap())
        })
        .collect();
    assert!(times.len() > 3, "{text}");
    for t in &times {
        assert!(chrono::DateTime::parse_from_rfc3339(t).is_ok(), "{t} is not RFC 3339");
    }
    let again = Command::cargo_bin("loopscope")
        .unwrap()
        .arg("convert")
        .arg(&first)
        .assert()
        .success()
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "",
        "the converted file has warnings"
    );
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}
