//! `loopscope record` with real clients (issue 27): the `openai` and
//! `anthropic` Python SDKs (from PyPI; `.ci/run` installs them into its
//! virtual environment and names its python in LOOPSCOPE_TEST_PYTHON)
//! streaming through the proxy from the scripted upstream: a clean answer,
//! a tool call, a reasoning loop and an error. Without --guard the SDK
//! reads the upstream's very bytes and the sessions scan to the upstream's
//! detections; with --guard extended the loop ends at the detection and
//! the SDK sees an ordinary end of its stream.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/upstream.rs"]
mod upstream;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use proxy::{detections, events, scan, Proxy};
use serde_json::{json, Value};
use upstream::{Upstream, LOOP_REPEATS, LOOP_WORDS};

const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/record_clients.py");

/// A python with both SDKs (none: the test is skipped, except in CI).
fn python_with_sdks() -> Option<String> {
    let candidates = [std::env::var("LOOPSCOPE_TEST_PYTHON").ok(), Some("python3".to_string())];
    let found = candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import openai, anthropic"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the openai and anthropic SDKs (see .ci/run)"
        );
        eprintln!("skipped: no python with the openai and anthropic packages here");
    }
    found
}

/// Runs the jobs in one python process; one result per job.
fn run_clients(python: &str, jobs: &[Value]) -> Vec<Value> {
    let mut child = Command::new(python)
        .arg(CLIENTS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::from(jobs.to_vec()).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn job(p: &Proxy, api: &str, mode: &str, prompt: &str) -> Value {
    let base = match api {
        "anthropic" => format!("http://{}/anthropic", p.addr),
        _ => format!("http://{}/openai", p.addr),
    };
    json!({"api": api, "mode": mode, "prompt": prompt, "base": base, "key": "sk-sdk-SECRET-42"})
}

fn proxy_to(up: &Upstream, dir: &std::path::Path, extra: &[&str]) -> Proxy {
    let openai = format!("openai={}/v1", up.url);
    let anthropic = format!("anthropic={}", up.url);
    let mut args = vec!["--upstream", openai.as_str(), "--upstream", anthropic.as_str()];
    args.extend(extra);
    Proxy::start(dir, &args)
}

const ANSWER: &str = "The answer is 42 — 答案是四十二 🎉.";

#[test]
fn the_sdks_get_the_upstreams_bytes_and_the_sessions_scan_like_the_upstream() {
    let Some(python) = python_with_sdks() else { return };
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = proxy_to(&up, dir.path(), &[]);
    let mut jobs = Vec::new();
    for api in ["chat", "responses", "anthropic"] {
        for scenario in ["clean", "tool", "loop", "error"] {
            for mode in ["raw", "sdk", "whole"] {
                if scenario == "error" && mode == "raw" {
                    continue;
                }
                jobs.push(job(&p, api, mode, &format!("{scenario} via {api} {mode}")));
            }
        }
    }
    let results = run_clients(&python, &jobs);
    let scratch = tempfile::tempdir().unwrap();
    for (job, result) in jobs.iter().zip(&results) {
        let prompt = job["prompt"].as_str().unwrap();
        let (api, mode) = (job["api"].as_str().unwrap(), job["mode"].as_str().unwrap());
        let scenario = prompt.split(' ').next().unwrap();
        let served = up.wait_for(prompt);
        assert!(served.complete, "{prompt}");
        if mode == "raw" {
            let raw = unhex(result["raw"].as_str().unwrap());
            assert!(
                raw == served.script(),
                "{prompt}: the SDK did not get the upstream's bytes"
            );
            // The session replays in scan to what the upstream's stream gives.
            let file = scratch.path().join(format!("{api}-{scenario}.sse"));
            std::fs::write(&file, served.script()).unwrap();
            let session = p.session_of(prompt);
            for profile in ["seed", "extended"] {
                let (want, want_at) = detections(&scan(profile, &file));
                let (have, have_at) = detections(&scan(profile, &session));
                assert_eq!(have, want, "{prompt} {profile}");
                assert_eq!(
                    have_at,
                    want_at.iter().map(|e| e + 2).collect::<Vec<_>>(),
                    "{prompt} {profile}"
                );
                assert_eq!(want.is_empty(), scenario != "loop", "{prompt} {profile}");
            }
            continue;
        }
        match scenario {
            "error" => {
                assert_eq!(result["error"]["status"], 429, "{prompt}: {result}");
                assert_eq!(result["error"]["class"], "RateLimitError", "{prompt}");
                let note = events(&p.session_of(prompt)).pop().unwrap();
                assert!(
                    note["text"].as_str().unwrap().contains("Rate limit reached"),
                    "{prompt}: {note}"
                );
            }
            "clean" => {
                assert!(result["text"].as_str().unwrap().ends_with(ANSWER), "{prompt}: {result}");
                let content: String = events(&p.session_of(prompt))
                    .iter()
                    .filter(|e| e["type"] == "content")
                    .map(|e| e["text"].as_str().unwrap().to_string())
                    .collect();
                assert_eq!(content, result["text"].as_str().unwrap(), "{prompt}");
            }
            "tool" => {
                let calls = result["tool_calls"].as_array().unwrap();
                assert_eq!(calls.len(), 1, "{prompt}: {result}");
                assert_eq!(calls[0]["name"], "read_file");
                assert_eq!(calls[0]["args"]["note"], "ファイル");
                let recorded = events(&p.session_of(prompt));
                let call = recorded.iter().find(|e| e["type"] == "tool_call").unwrap();
                assert_eq!(call["args"], calls[0]["args"], "{prompt}");
            }
            _ => {
                if mode == "sdk" {
                    let full = LOOP_WORDS.concat().repeat(LOOP_REPEATS);
                    assert_eq!(result["reasoning"].as_str().unwrap(), full, "{prompt}");
                }
            }
        }
    }
    assert!(!p.written().contains("SECRET"));
}

#[test]
fn with_the_guard_a_looping_stream_ends_at_the_detection_and_the_sdk_sees_a_normal_end() {
    let Some(python) = python_with_sdks() else { return };
    let up = Upstream::start();
    *up.pause.lock().unwrap() = Duration::from_millis(1);
    let dir = tempfile::tempdir().unwrap();
    let p = proxy_to(&up, dir.path(), &["--guard", "extended"]);
    let jobs: Vec<Value> = ["chat", "responses", "anthropic"]
        .iter()
        .flat_map(|api| {
            [
                job(&p, api, "sdk", &format!("loop guarded via {api}")),
                job(&p, api, "sdk", &format!("clean guarded via {api}")),
            ]
        })
        .collect();
    let results = run_clients(&python, &jobs);
    let full = LOOP_WORDS.concat().repeat(LOOP_REPEATS);
    for (job, result) in jobs.iter().zip(&results) {
        let prompt = job["prompt"].as_str().unwrap();
        assert!(result.get("error").is_none(), "{prompt}: the SDK raised {result}");
        let finish = result["finish"].as_str().unwrap();
        let normal = match job["api"].as_str().unwrap() {
            "chat" => "stop",
            "responses" => "completed",
            _ => "end_turn",
        };
        assert_eq!(finish, normal, "{prompt}: {result}");
        let served = up.wait_for(prompt);
        if prompt.starts_with("clean") {
            assert!(
                served.complete && result["text"].as_str().unwrap().ends_with(ANSWER),
                "{prompt}"
            );
            continue;
        }
        let reasoning = result["reasoning"].as_str().unwrap();
        assert!(
            full.starts_with(reasoning) && reasoning.len() < full.len() / 2,
            "{prompt}: {} chars",
            reasoning.len()
        );
        assert!(!served.complete, "{prompt}: the upstream request was closed");
        // The SDK saw exactly the reasoning the session recorded up to the detection.
        let recorded = events(&p.session_of(prompt));
        let thought: String = recorded
            .iter()
            .filter(|e| e["type"] == "reasoning")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        assert_eq!(thought, reasoning, "{prompt}");
        assert_eq!(recorded.last().unwrap()["kind"], "guard", "{prompt}");
    }
}

#[test]
fn with_the_guard_an_sdks_tool_loop_ends_with_loopscopes_words_and_no_call_to_run() {
    let Some(python) = python_with_sdks() else { return };
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = proxy_to(&up, dir.path(), &["--guard", "extended"]);
    let jobs: Vec<Value> = ["chat", "responses", "anthropic"]
        .iter()
        .map(|api| job(&p, api, "tools", &format!("tool calls via {api}")))
        .collect();
    let results = run_clients(&python, &jobs);
    for (job, result) in jobs.iter().zip(&results) {
        let prompt = job["prompt"].as_str().unwrap();
        assert!(result.get("error").is_none(), "{prompt}: the SDK raised {result}");
        // Two rounds ran; the third call would repeat the step a third
        // time, and the SDK got no call to run, only an ordinary end.
        assert_eq!(result["ran"], 2, "{prompt}: {result}");
        let normal = match job["api"].as_str().unwrap() {
            "chat" => "stop",
            "responses" => "completed",
            _ => "end_turn",
        };
        assert_eq!(result["finish"], normal, "{prompt}: {result}");
        let text = result["text"].as_str().unwrap();
        assert!(
            text.ends_with(
                "called 3 times with the same arguments and the same result (tool-loop); this call was not run."
            ),
            "{prompt}: {text}"
        );
        assert!(
            text.contains("loopscope stopped a loop: read_file {"),
            "{prompt}: {text}"
        );
        up.wait_for_asks(prompt, 3);
        assert_eq!(up.served().iter().filter(|s| s.prompt == prompt).count(), 3, "{prompt}");
    }
}
