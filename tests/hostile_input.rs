//! Issue 9: inputs that once crashed, hung or exhausted loopscope. Each is a
//! regression test for one reported case.

mod common;

use loopscope_core::{Event, Profile};

/// The char text of the spans of a detection, from the content buffer.
fn spanned(buffer: &str, d: &loopscope_core::Detection) -> Vec<String> {
    let chars: Vec<char> = buffer.chars().collect();
    d.spans
        .iter()
        .map(|s| {
            assert!(
                s.start < s.end && s.end <= chars.len(),
                "span {s:?} outside {} chars",
                chars.len()
            );
            chars[s.start..s.end].iter().collect()
        })
        .collect()
}

#[test]
fn one_content_event_longer_than_the_history_fires_without_a_panic() {
    // 50,000 `A` in one delta: the history keeps the last 5000 and sweeps
    // the rest. (gemini-cli's divider class `[+-_=*]` spans A-Z, so a line
    // of capitals is a divider there: lowercase for both profiles.)
    for (profile, text) in [
        (Profile::Seed, "A".repeat(50_000)),
        (Profile::Seed, "a".repeat(50_000)),
        (Profile::GeminiCli, "a".repeat(50_000)),
    ] {
        let setup = common::setup(profile, &["chunk-chant"]);
        let found = common::run(&setup, &[Event::request(), Event::content(&text)]);
        assert_eq!(found.len(), 1, "{profile:?}");
        for s in spanned(&text, &found[0]) {
            assert_eq!(s, text[..50], "{profile:?}");
        }
    }
}

#[test]
fn a_sentence_repeated_a_thousand_times_in_one_block_is_found_at_its_true_offsets() {
    // A Claude Code assistant block: one event, with CJK and emoji so UTF-16
    // units and chars differ (gemini-cli counts UTF-16).
    let sentence = "我再检查一下这个函数 🙂 and then I check it again. ";
    let text = format!("Intro line.\n{}", sentence.repeat(1000));
    for profile in [Profile::Seed, Profile::GeminiCli] {
        let setup = common::setup(profile, &["chunk-chant"]);
        let found = common::run(&setup, &[Event::request(), Event::content(&text)]);
        assert_eq!(found.len(), 1, "{profile:?}");
        let d = &found[0];
        let chunk = d.repeated.clone().unwrap();
        let chunk = chunk.trim_end_matches('\u{FFFD}');
        let texts = spanned(&text, d);
        assert!(!texts.is_empty());
        // Every span is the repeated chunk itself, wherever it is in the buffer.
        for t in texts {
            assert!(t.starts_with(chunk), "{profile:?}: {t:?} is not {chunk:?}");
        }
    }
}

#[test]
fn long_deltas_through_a_small_history_after_many_sweeps() {
    // Many deltas each longer than the history: storage is swept again and
    // again while segments straddle the cut; then a chant, whose spans must
    // still map to the right chars of the content buffer.
    let setup = loopscope_core::Setup::resolve_with(
        &loopscope_core::Choices {
            profile: Some(Profile::GeminiCli),
            detectors: Some(vec!["chunk-chant".into()]),
            sets: vec!["chunk-chant.max_history=300".into()],
            ..loopscope_core::Choices::default()
        },
        "",
    )
    .unwrap();
    let mut engine = loopscope_core::Engine::new(&setup);
    engine.push(&Event::request());
    let mut rng = common::Rng::new(7);
    let mut buffer = String::new();
    for _ in 0..200 {
        let text = rng.text(common::LOWER, 700);
        buffer.push_str(&text);
        assert!(engine.push(&Event::content(&text)).is_empty());
    }
    let chant = "思🙂x".repeat(400);
    buffer.push_str(&chant);
    let found = engine.push(&Event::content(&chant));
    assert_eq!(found.len(), 1);
    // A 50-unit chunk can end inside a surrogate pair: its text ends in U+FFFD
    // and its span covers the whole char.
    let chunk = found[0].repeated.clone().unwrap();
    let chunk = chunk.trim_end_matches('\u{FFFD}');
    for t in spanned(&buffer, &found[0]) {
        assert!(t.starts_with(chunk), "{t:?} is not {chunk:?}");
    }
}

// ---- loopscope never writes to a file it reads ----

fn lines(events: &[Event]) -> String {
    events.iter().map(|e| e.to_json().to_string() + "\n").collect()
}

fn clean_stream() -> String {
    lines(&[
        Event::prompt("hi"),
        Event::request(),
        Event::reasoning("thinking about it"),
    ])
}

/// Runs a command in `dir` and asserts it refused (exit 2, one line) and
/// left `kept` byte-identical.
fn assert_refused(dir: &std::path::Path, args: &[&str], kept: &std::path::Path) {
    let before = std::fs::read(kept).unwrap();
    let out = common::loopscope_at_root()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains("refusing to write"), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        std::fs::read(kept).unwrap(),
        before,
        "{args:?} changed {}",
        kept.display()
    );
}

#[test]
fn outputs_that_are_inputs_by_hard_link_symlink_or_task_folder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.jsonl");
    std::fs::write(&input, clean_stream()).unwrap();
    std::fs::hard_link(&input, d.join("hard.jsonl")).unwrap();
    std::os::unix::fs::symlink(&input, d.join("soft.jsonl")).unwrap();
    for out in ["hard.jsonl", "soft.jsonl", "in.jsonl", "./in.jsonl"] {
        assert_refused(d, &["convert", "in.jsonl", "-o", out], &input);
        assert_refused(d, &["screenshot", "in.jsonl", "-o", out], &input);
        assert_refused(d, &["replay-into", "in.jsonl", out], &input);
    }
    // A Cline task folder: its own files, and new files inside it.
    let task = d.join("task");
    std::fs::create_dir(&task).unwrap();
    let ui = task.join("ui_messages.json");
    std::fs::write(
        &ui,
        r#"[{"ts":1,"type":"say","say":"task","text":"do it"},{"ts":2,"type":"say","say":"text","text":"ok"}]"#,
    )
    .unwrap();
    assert_refused(d, &["convert", "task", "-o", "task/ui_messages.json"], &ui);
    assert_refused(d, &["replay-into", "task", "task/ui_messages.json"], &ui);
    assert_refused(d, &["convert", "task", "-o", "task/out.jsonl"], &ui);
    assert!(!task.join("out.jsonl").exists());
}

#[test]
fn standard_output_appended_to_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, clean_stream()).unwrap();
    for args in [&["scan", "in.jsonl"][..], &["convert", "in.jsonl"][..]] {
        let before = std::fs::read(&input).unwrap();
        let append = std::fs::OpenOptions::new().append(true).open(&input).unwrap();
        let out = common::loopscope_at_root()
            .current_dir(dir.path())
            .args(args)
            .stdout(append)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("standard output is"));
        assert_eq!(std::fs::read(&input).unwrap(), before);
    }
}

#[test]
fn a_successful_output_is_complete_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.jsonl"), clean_stream()).unwrap();
    std::fs::write(dir.path().join("out.jsonl"), "old contents\n").unwrap();
    let out = common::loopscope_at_root()
        .current_dir(dir.path())
        .args(["convert", "in.jsonl", "-o", "out.jsonl"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let written = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    assert!(written.starts_with("{\"type\":\"meta\"") && written.contains("thinking about it"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

// ---- nothing from a log reaches a terminal raw ----

const OSC52: &str = "\u{1b}]52;c;aGVsbG8=\u{7}";
const TITLE: &str = "\u{1b}]0;pwned\u{1b}\\";
const C1_CSI: &str = "\u{9b}2J";
const BIDI: &str = "\u{202e}gnp.exe";

fn hostile_tool_loop() -> String {
    let name = format!("read{OSC52}{TITLE}{C1_CSI}{BIDI}");
    let mut events = vec![Event::prompt(&format!("go{OSC52}")), Event::request()];
    for _ in 0..6 {
        events.push(Event::tool_call(
            &name,
            serde_json::json!({"path": format!("a{TITLE}")}),
        ));
    }
    lines(&events)
}

fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for c in text.chars() {
        assert!(
            c == '\n' || !loopscope_core::sanitize::is_unsafe(c),
            "{what} printed {:?} raw: {text:?}",
            c
        );
    }
}

#[test]
fn scan_prints_no_escape_from_a_log_or_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("x{TITLE}{C1_CSI}.jsonl");
    std::fs::write(dir.path().join(&name), hostile_tool_loop()).unwrap();
    std::fs::write(
        dir.path().join("bad.jsonl"),
        format!("{{\"type\":\"{OSC52}\"\nnot json {TITLE}\n"),
    )
    .unwrap();
    for json in [false, true] {
        let mut cmd = common::loopscope_at_root();
        cmd.current_dir(dir.path())
            .args(["scan", &name, "bad.jsonl", "missing{OSC52}.jsonl"]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_terminal_safe("scan stdout", &out.stdout);
        assert_terminal_safe("scan stderr", &out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("tool-repeat"), "{stdout}");
        if json {
            // The JSON still carries the exact name, escaped.
            let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
            assert_eq!(first["file"], serde_json::Value::String(name.clone()));
            assert!(first["reason"].as_str().unwrap().contains("read"));
        }
    }
}

#[test]
fn tail_no_tui_prints_no_escape_from_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, hostile_tool_loop()).unwrap();
    for json in [false, true] {
        let mut cmd = common::loopscope_at_root();
        cmd.args(["tail", "--no-tui", "--from-start", "-"])
            .stdin(std::fs::File::open(&file).unwrap());
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert_terminal_safe("tail stdout", &out.stdout);
        assert_terminal_safe("tail stderr", &out.stderr);
        assert!(String::from_utf8_lossy(&out.stdout).contains("tool-repeat"));
    }
}

// ---- tiny inputs that once exhausted the machine ----

fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    common::loopscope_at_root()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_cassette_nested_20000_deep_is_refused_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!(
        "interactions:\n- request: {}1{}\n",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    std::fs::write(dir.path().join("deep.yaml"), &deep).unwrap();
    let out = run_in(dir.path(), &["scan", "deep.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(2), "{err}");
    // The YAML scanner's own limit on flow nesting, or ours on any nesting.
    assert!(
        err.contains("nested deeper than 64") || err.contains("recursion limit"),
        "{err}"
    );
    // Block-style nesting too.
    let block: String = (0..5000).map(|i| format!("{}- \n", "  ".repeat(i))).collect();
    std::fs::write(dir.path().join("block.yaml"), format!("interactions:\n{block}")).unwrap();
    let out = run_in(dir.path(), &["scan", "block.yaml"]);
    assert!(out.status.code().is_some(), "killed by a signal");
    assert_ne!(out.status.code(), Some(101));
}

#[test]
fn a_partial_args_index_of_a_billion_is_a_warning_not_2_gb() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","partialArgs":[{"jsonPath":"$.a[1000000000]","numberValue":1}],"willContinue":true}}]}}],"responseId":"r"}"#;
    std::fs::write(dir.path().join("g.sse"), format!("{line}\n\n")).unwrap();
    let out = run_in(dir.path(), &["scan", "g.sse"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("partialArgs path index"), "{err}");
}

#[test]
fn a_zstd_bomb_line_is_skipped_as_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    // 64 MB of one line, compressed to a few KB; the limit is lowered to 1M.
    let mut raw = b"{\"type\":\"request\"}\n{\"type\":\"content\",\"text\":\"".to_vec();
    raw.extend(std::iter::repeat_n(b'a', 64 << 20));
    raw.extend_from_slice(b"\"}\n{\"type\":\"content\",\"text\":\"after\"}\n");
    let packed = zstd::encode_all(&raw[..], 19).unwrap();
    assert!(packed.len() < 100_000);
    std::fs::write(dir.path().join("bomb.jsonl.zst"), packed).unwrap();
    let out = run_in(dir.path(), &["scan", "--max-record", "1M", "bomb.jsonl.zst"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("line 2: longer than the record limit of 1 MiB"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 events, 1 bad line skipped"));
}

#[test]
fn parameter_values_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.jsonl"), clean_stream()).unwrap();
    for set in [
        "chunk-chant.chunk=18446744073709551615",
        "chunk-chant.chunk=1000001",
        "short-repeat.checkpoints=1,99999999999",
    ] {
        let out = run_in(dir.path(), &["scan", "--set", set, "a.jsonl"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains("at most"), "{set}: {err}");
    }
    let out = run_in(dir.path(), &["scan", "--max-record", "12", "a.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_forced_format_that_reads_nothing_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.jsonl"), clean_stream()).unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    for fmt in [
        "anthropic",
        "openai-chat",
        "gemini",
        "claude-code",
        "codex",
        "gemini-cli",
        "cline",
        "openai-responses",
    ] {
        let out = run_in(dir.path(), &["scan", "--format", fmt, "a.jsonl"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{fmt}: {err}");
        assert!(
            err.contains("read no events") && err.contains("looks like native"),
            "{err}"
        );
        let out = run_in(dir.path(), &["convert", "--format", fmt, "a.jsonl"]);
        assert_eq!(out.status.code(), Some(2), "convert {fmt}");
    }
    // An empty file is fine under any format; the right format is fine.
    assert_eq!(
        run_in(dir.path(), &["scan", "--format", "anthropic", "empty.jsonl"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run_in(dir.path(), &["scan", "--format", "native", "a.jsonl"])
            .status
            .code(),
        Some(0)
    );
}

// ---- pipes and unreadable paths in tail ----

fn tool_loop_lines(n: usize) -> String {
    let mut events = vec![Event::prompt("go"), Event::request()];
    for _ in 0..n {
        events.push(Event::tool_call("read_file", serde_json::json!({"path": "a.rs"})));
    }
    lines(&events)
}

#[test]
fn tail_reads_a_fifo_as_a_stream() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let child = common::loopscope_at_root()
        .args(["tail", "--no-tui", "--json"])
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Written in small pieces: a first read of a few bytes must not decide the format.
    let text = tool_loop_lines(6);
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    for piece in text.as_bytes().chunks(5) {
        w.write_all(piece).unwrap();
        w.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    drop(w);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("seek"), "{stderr}");
    assert!(stderr.lines().count() <= 2, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"detector\":\"tool-repeat\""), "{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn an_unreadable_path_is_said_once_and_retried_with_backoff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "x").unwrap();
    // A path under a regular file: "not a directory" on every try (root can
    // read anything, so this stands for permission denied too).
    let child = common::loopscope_at_root()
        .args(["tail", "--no-tui"])
        .arg(dir.path().join("file/session.jsonl"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    common::interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
}

#[test]
fn scan_of_a_slow_pipe_waits_for_a_whole_first_line() {
    use std::io::Write;
    let mut child = common::loopscope_at_root()
        .args(["scan", "--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for piece in tool_loop_lines(6).as_bytes().chunks(3) {
        stdin.write_all(piece).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_big_pretty_printed_gemini_cli_session_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let messages: Vec<serde_json::Value> = (0..4000)
        .map(|i| {
            serde_json::json!({"id": format!("m{i}"), "type": if i % 2 == 0 {"user"} else {"gemini"},
                "content": format!("message number {i} with some text to make it longer")})
        })
        .collect();
    let doc = serde_json::json!({"sessionId": "s", "projectHash": "p", "startTime": "2025-01-01T00:00:00Z",
        "lastUpdated": "2025-01-01T00:00:00Z", "messages": messages});
    let text = serde_json::to_string_pretty(&doc).unwrap();
    assert!(text.len() > 300_000);
    std::fs::write(dir.path().join("session.json"), &text).unwrap();
    let out = run_in(dir.path(), &["scan", "session.json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no detections (6000 events)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Through a pipe, in small reads, too.
    let out = common::loopscope_at_root()
        .args(["scan", "-"])
        .stdin(std::fs::File::open(dir.path().join("session.json")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn following_a_stream_of_unclassifiable_lines_costs_linear_time() {
    use loopscope_core::formats::detect::AutoDecoder;
    use loopscope_core::formats::{Decoder, FormatChoice, Item};
    // 16 MB of lines that start like JSON but never parse, in 4 KB writes:
    // classification is retried only as the head doubles, not on every write.
    let line = "{\"half\": [1, 2, \"not closed\n";
    let piece = line.repeat(4096 / line.len());
    let mut decoder = AutoDecoder::new(FormatChoice::Auto, None);
    let mut out = Vec::new();
    let mut fed = 0;
    for _ in 0..(16 << 20) / piece.len() + 1 {
        decoder.feed(piece.as_bytes(), &mut out);
        fed += piece.len();
    }
    decoder.finish(&mut out);
    // The work counted, not timed: the head is classified as it doubles
    // (about twice the bytes fed in all), not on every 4 KB write (which
    // would be about 4096 x 8 MB).
    let looked = decoder.bytes_classified();
    assert!(looked <= 3 * fed, "classified {looked} bytes for {fed} fed");
    // Said once, as a problem on line 1, not once per write.
    let problems: Vec<_> = out.iter().filter(|i| matches!(i, Item::Problem(_))).collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
}

#[test]
fn invisible_unicode_is_shown_in_the_viewer_and_the_report_emoji_sequences_kept() {
    // Issue 31: zero-width chars, tag characters and the soft hyphen passed
    // into the viewer and the report unmarked.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hidden.jsonl");
    let chant = "repeat\u{200b}me now, ".repeat(40);
    let lines = [
        serde_json::json!({"type": "prompt", "text": "go"}),
        serde_json::json!({"type": "request"}),
        serde_json::json!({"type": "reasoning", "text": "hidden\u{200b}word \u{e0068}\u{e0069} soft\u{ad}hyphen 👩\u{200d}💻 done"}),
        serde_json::json!({"type": "content", "text": chant}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&log, text).unwrap();
    let invisible = ['\u{200b}', '\u{e0068}', '\u{e0069}', '\u{ad}'];
    let shot = dir.path().join("shot.txt");
    let o = common::loopscope_at_root()
        .args(["screenshot", "--at", "2", "-o"])
        .arg(&shot)
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let screen = std::fs::read_to_string(&shot).unwrap();
    assert!(screen.contains("hidden�word �� soft�hyphen 👩\u{200d}💻"), "{screen}");
    assert!(!screen.chars().any(|c| invisible.contains(&c)), "{screen}");
    let report = dir.path().join("report.html");
    let o = common::loopscope_at_root()
        .args(["report", "-o"])
        .arg(&report)
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("repeat�me"), "the chant's evidence is in the report");
    assert!(!html.chars().any(|c| invisible.contains(&c)));
}
