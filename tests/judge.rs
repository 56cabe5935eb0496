//! The LLM judge against a real HTTP server on 127.0.0.1 that answers like
//! an OpenAI-compatible endpoint with scripted confidences (issue 14): the
//! schedule, both stages, every failure mode, the request bodies, and the
//! written file replaying to the same detections.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::loopscope_at_root as loopscope;
use serde_json::{json, Value};

/// What the server does for one request.
#[derive(Clone)]
enum Reply {
    Confidence(f64),
    Status(u16),
    Text(&'static str),
    NoConfidence,
    Slow,
    /// A 401 whose long body echoes the Authorization header it got.
    EchoKey,
    /// A redirect (status, Location).
    Redirect(u16, String),
}

/// Serves `script` in order (then 500s); returns the base URL and the bodies received.
fn server(script: Vec<Reply>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&bodies);
    thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut len, mut auth) = (0, String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                if line.to_ascii_lowercase().starts_with("authorization:") {
                    auth = line["authorization:".len()..].trim().to_string();
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
            seen.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            let reply = script.next().unwrap_or(Reply::Status(500));
            if let Reply::Redirect(status, location) = &reply {
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                continue;
            }
            let (status, text) = match reply {
                Reply::Redirect(..) => unreachable!("answered above"),
                Reply::Confidence(c) => {
                    let content = json!({"analysis": format!("scripted {c}"), "confidence": c}).to_string();
                    (
                        200,
                        json!({"choices": [{"message": {"role": "assistant", "content": content}}]}).to_string(),
                    )
                }
                Reply::Status(s) => (s, "{\"error\":\"scripted\"}".to_string()),
                Reply::Text(t) => (200, t.to_string()),
                Reply::NoConfidence => (
                    200,
                    json!({"choices": [{"message": {"content": "{\"analysis\":\"hmm\"}"}}]}).to_string(),
                ),
                Reply::Slow => {
                    thread::sleep(Duration::from_secs(3));
                    (200, "{}".to_string())
                }
                Reply::EchoKey => (
                    401,
                    format!(
                        "{{\"error\":{{\"message\":\"Incorrect API key provided: {auth}. {}\",\"again\":\"{auth}\"}}}}",
                        "You can find your API key at https://example.com/keys. ".repeat(40)
                    ),
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (url, bodies)
}

/// A prompt and `turns` turns, each a bit of text and one failing test run.
fn stream(dir: &std::path::Path, turns: usize) -> std::path::PathBuf {
    let mut lines = vec![json!({"type": "prompt", "text": "make the test pass"})];
    for i in 0..turns {
        lines.push(json!({"type": "request"}));
        lines.push(json!({"type": "content", "text": format!("attempt {i}: retry the test")}));
        lines.push(json!({"type": "tool_call", "id": format!("c{i}"), "name": "run_tests", "args": {"filter": "it"}}));
        lines.push(json!({"type": "tool_result", "id": format!("c{i}"), "ok": false, "output": "1 failed"}));
    }
    let path = dir.join("in.jsonl");
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn judge(input: &std::path::Path, out: &std::path::Path, url: &str, extra: &[&str]) -> (i32, String) {
    let o = judge_command(input, out, url, extra).output().unwrap();
    (o.status.code().unwrap(), String::from_utf8(o.stderr).unwrap())
}

/// `judge` of `input` into `out` against `url`, one attempt, a 1 s timeout.
fn judge_command(input: &std::path::Path, out: &std::path::Path, url: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = loopscope();
    cmd.args([
        "judge",
        "--profile",
        "gemini-cli",
        "--model",
        "flash",
        "--timeout",
        "1",
        "--attempts",
        "1",
    ])
    .arg("--endpoint")
    .arg(url)
    .arg("-o")
    .arg(out)
    .arg(input)
    .args(extra);
    cmd
}

fn verdicts(path: &std::path::Path) -> Vec<(Option<f64>, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "loop_check")
        .map(|v| (v["confidence"].as_f64(), v["stage"].as_u64().unwrap()))
        .collect()
}

fn scan(path: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    let o = loopscope()
        .args(["scan", "--json", "--profile", "gemini-cli", "--detectors", "llm-judge"])
        .args(extra)
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn checks_at_30_then_by_the_interval_and_a_double_checked_loop() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 45);
    let out = dir.path().join("out.jsonl");
    let (url, bodies) = server(vec![
        Reply::Confidence(0.5),
        Reply::Confidence(0.95),
        Reply::Confidence(0.97),
    ]);
    let (code, err) = judge(&input, &out, &url, &["--double-check-model", "pro"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("at most"), "the count of checks comes first: {err}");
    // Turn 30: 0.5, so round(5 + 10 x 0.5) = 10 turns to the next, at 40:
    // 0.95 asks the double check, 0.97 confirms.
    assert_eq!(verdicts(&out), vec![(Some(0.5), 1), (Some(0.95), 1), (Some(0.97), 2)]);
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["model"], "flash");
    assert_eq!(bodies[2]["model"], "pro");
    assert_eq!(
        bodies[0]["response_format"]["json_schema"]["schema"]["required"],
        json!(["analysis", "confidence"])
    );
    let messages = bodies[0]["messages"].as_array().unwrap();
    assert!(messages[1]["content"].as_str().unwrap().contains("<original_request>"));
    assert!(messages.len() <= 20 + 3, "the 20-entry window: {}", messages.len());
    // Replaying the written file gives the loop at the confirming verdict.
    let found = scan(&out, &[]);
    assert_eq!(found.len(), 1);
    assert!(found[0]["reason"].as_str().unwrap().contains("turn 40"), "{}", found[0]);
    // The input is untouched.
    assert!(verdicts(&input).is_empty());
}

#[test]
fn without_a_double_check_model_the_first_model_decides() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 35);
    let out = dir.path().join("out.jsonl");
    let (url, _) = server(vec![Reply::Confidence(0.92)]);
    let (code, err) = judge(&input, &out, &url, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(verdicts(&out), vec![(Some(0.92), 1)]);
    assert!(err.contains("the judge called a loop at turn 30"), "{err}");
    assert!(
        err.contains("no --double-check-model, so the first model decided"),
        "{err}"
    );
    // The verdict says no double check followed it; replayed with
    // gemini-cli's defaults (which ask for one), it decides alone, as live.
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.contains("\"double_check\":false"), "{written}");
    let found = scan(&out, &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["reason"].as_str().unwrap().contains("at turn 30"),
        "{}",
        found[0]
    );
    assert_eq!(scan(&out, &["--set", "llm-judge.double_check=false"]).len(), 1);
}

/// Verdicts recorded with another schedule are replayed at the turns they
/// were recorded: a live run that checked every 3 turns from turn 5 replays
/// to its loop under gemini-cli's schedule (30, then every 10), which marks
/// the verdict as one it would not have asked for.
#[test]
fn verdicts_are_replayed_where_they_were_recorded_whatever_the_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 12);
    let out = dir.path().join("out.jsonl");
    let (url, _) = server(vec![
        Reply::Confidence(0.2),
        Reply::Confidence(0.3),
        Reply::Confidence(0.95),
        Reply::Confidence(0.96),
    ]);
    let schedule = [
        "--set",
        "llm-judge.after_turns=5",
        "--set",
        "llm-judge.initial_interval=3",
        "--set",
        "llm-judge.interval_min=3",
        "--set",
        "llm-judge.interval_max=3",
    ];
    let (code, err) = judge(
        &input,
        &out,
        &url,
        &[&schedule[..], &["--double-check-model", "pro"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    // Turn 5: 0.2; turn 8: 0.3; turn 11: 0.95 confirmed at 0.96.
    assert_eq!(
        verdicts(&out),
        vec![(Some(0.2), 1), (Some(0.3), 1), (Some(0.95), 1), (Some(0.96), 2)]
    );
    assert!(err.contains("the judge called a loop at turn 11"), "{err}");
    // The live run's schedule: the same loop.
    let live = scan(&out, &schedule);
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(!live[0]["reason"].as_str().unwrap().contains("would not have checked"));
    // gemini-cli's own schedule would check at turn 30 only: the verdicts
    // are applied where they were recorded, the loop marked as unasked.
    let replayed = scan(&out, &[]);
    assert_eq!(replayed.len(), 1, "{replayed:?}");
    assert_eq!(replayed[0]["event"], live[0]["event"]);
    let reason = replayed[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("at turn 11") && reason.contains("would not have checked"),
        "{reason}"
    );
}

#[test]
fn bad_answers_are_warnings_and_count_as_no_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Turns 30, 40, 50, 60, 70, 80: each check fails in another way, so the
    // interval stays 10 throughout.
    let input = stream(dir.path(), 85);
    let out = dir.path().join("out.jsonl");
    let (url, _) = server(vec![
        Reply::Status(500),
        Reply::Status(404),
        Reply::Text("not json at all"),
        Reply::NoConfidence,
        Reply::Text("{\"choices\":[{\"message\":{\"content\":\"{\\\"confidence\\\": 3}\"}}]}"),
        Reply::Slow,
    ]);
    let (code, err) = judge(&input, &out, &url, &[]);
    assert_eq!(code, 0, "{err}");
    let v = verdicts(&out);
    assert_eq!(v.len(), 6, "{v:?}");
    assert!(v.iter().all(|(c, _)| c.is_none()));
    for needle in [
        "HTTP 500",
        "HTTP 404",
        "not JSON",
        "no numeric confidence",
        "outside 0..1",
        "request failed",
    ] {
        assert!(err.contains(needle), "{needle} in {err}");
    }
    assert!(scan(&out, &[]).is_empty());
    // Connection refused: the server is gone.
    let gone = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", l.local_addr().unwrap())
    };
    let (code, err) = judge(&input, &out, &gone, &[]);
    assert_eq!(code, 0);
    assert!(err.contains("refused") || err.contains("request failed"), "{err}");
}

#[test]
fn a_redirect_to_another_origin_is_a_failure_and_nothing_goes_there() {
    // Issue 31: the 302 was followed (without the key) and the other
    // host's answer recorded as the verdict.
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 31);
    let out = dir.path().join("out.jsonl");
    let (elsewhere, asked_there) = server(vec![Reply::Confidence(0.99), Reply::Confidence(0.99)]);
    let target = format!("{elsewhere}/chat/completions");
    let (url, asked) = server(vec![Reply::Redirect(302, target.clone()), Reply::Redirect(307, target)]);
    let (code, err) = judge(&input, &out, &url, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("HTTP 302: the endpoint redirects to another origin"),
        "{err}"
    );
    assert!(
        err.contains(elsewhere.trim_start_matches("http://").split('/').next().unwrap()),
        "{err}"
    );
    assert!(err.contains("1 checks, 1 of them with no usable answer"), "{err}");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(asked_there.lock().unwrap().is_empty(), "the other origin was asked");
    assert_eq!(verdicts(&out), vec![(None, 1)], "recorded as no answer");
    // Within the endpoint's origin a redirect is followed, key and body kept.
    let (url, asked) = server(vec![
        Reply::Redirect(307, "/v2/chat/completions".into()),
        Reply::Confidence(0.2),
    ]);
    let (code, err) = judge(&input, &out, &url, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(verdicts(&out), vec![(Some(0.2), 1)], "{err}");
    let bodies = asked.lock().unwrap();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the same request again");
}

#[test]
fn an_endpoint_that_echoes_the_api_key_never_gets_it_written() {
    // A 401 that echoes the key put it in 4 places (each warning, each
    // verdict's analysis in -o): now redacted, and the body cut short.
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 45);
    let out = dir.path().join("out.jsonl");
    let key = "sk-test-0123456789abcdefSECRETSECRET";
    let (url, _) = server(vec![Reply::EchoKey, Reply::EchoKey]);
    let o = judge_command(&input, &out, &url, &["--api-key-env", "LOOPSCOPE_TEST_JUDGE_KEY"])
        .env("LOOPSCOPE_TEST_JUDGE_KEY", key)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8(o.stderr).unwrap();
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(err.contains("HTTP 401") && err.contains("[API key redacted]"), "{err}");
    assert!(written.contains("[API key redacted]"), "{written}");
    for (what, text) in [
        ("stderr", &err),
        ("stdout", &String::from_utf8(o.stdout).unwrap()),
        ("-o", &written),
    ] {
        // Not the key, nor any long piece of it.
        assert!(!text.contains(&key[..12]), "{what}: {text}");
    }
    for line in err.lines().filter(|l| l.contains("HTTP 401")) {
        assert!(line.chars().count() < 300, "{} chars: {line}", line.chars().count());
    }
}

#[test]
fn dry_run_prints_requests_and_sends_none() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 31);
    let o = loopscope()
        .args([
            "judge",
            "--dry-run",
            "--profile",
            "gemini-cli",
            "--model",
            "flash",
            "--endpoint",
            "http://127.0.0.1:9/v1",
        ])
        .arg(&input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 1, "one check at turn 30");
    assert_eq!(
        (&records[0]["type"], &records[0]["schema"], &records[0]["stage"]),
        (&json!("judge_request"), &json!(1), &json!(1))
    );
    assert_eq!(records[0]["request"]["model"], "flash");
    // Writing into the input is refused.
    let (code, err) = judge(&input, &input, "http://127.0.0.1:9/v1", &[]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn scan_asks_a_live_judge_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 35);
    let (url, bodies) = server(vec![Reply::Confidence(0.92)]);
    let o = loopscope()
        .args([
            "scan",
            "--json",
            "--profile",
            "gemini-cli",
            "--detectors",
            "llm-judge",
            "--judge",
            "live",
        ])
        .args(["--judge-endpoint", &url, "--judge-model", "flash"])
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let d: Value = serde_json::from_slice(o.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(d["detector"], "llm-judge");
    assert_eq!(bodies.lock().unwrap().len(), 1);
    // Off: recorded verdicts are ignored.
    let o = loopscope()
        .args([
            "scan",
            "--profile",
            "gemini-cli",
            "--judge",
            "off",
            "sample-logs/judge-recorded-verdicts.jsonl",
        ])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&o.stdout).contains("llm-judge"));
    let o = loopscope()
        .args(["scan", "--judge", "live", "sample-logs/demo.jsonl"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--judge-endpoint"));
}

#[test]
fn the_endpoint_can_come_from_the_config_file_and_keys_stay_out_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 35);
    let out = dir.path().join("out.jsonl");
    let (url, bodies) = server(vec![Reply::Confidence(0.4)]);
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("profile = \"gemini-cli\"\n[judge]\nbase_url = \"{url}\"\nmodel = \"from-config\"\ntimeout = 5\n"),
    )
    .unwrap();
    let o = loopscope()
        .arg("judge")
        .arg("--config")
        .arg(&config)
        .arg("-o")
        .arg(&out)
        .arg(&input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(bodies.lock().unwrap()[0]["model"], "from-config");
    std::fs::write(&config, "[judge]\napi_key = \"sk-secret\"\n").unwrap();
    let o = loopscope()
        .args(["scan", "--config"])
        .arg(&config)
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("api_key_env") && !err.contains("sk-secret"), "{err}");
}

#[test]
fn tail_asks_a_live_judge_as_the_file_grows() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream(dir.path(), 35);
    let (url, _) = server(vec![Reply::Confidence(0.95)]);
    let mut child = loopscope()
        .args([
            "tail",
            "--no-tui",
            "--from-start",
            "--profile",
            "gemini-cli",
            "--detectors",
            "llm-judge",
        ])
        .args(["--judge", "live", "--judge-endpoint", &url, "--judge-model", "flash"])
        .arg(&input)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = common::lines_of(child.stdout.take().unwrap());
    let line = lines.recv_timeout(Duration::from_secs(20)).expect("a detection line");
    assert!(line.contains("llm-judge"), "{line}");
    let _ = child.kill();
    let _ = child.wait();
}
