//! `loopscope record` end to end (issue 27): the built binary between a
//! plain HTTP client and a scripted upstream on 127.0.0.1, for each of the
//! four APIs, streamed and whole; what the client gets, what the session
//! files hold, the guard, concurrency, and what the proxy refuses.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/upstream.rs"]
mod upstream;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use proxy::{detections, events, request, scan, Proxy};
use serde_json::{json, Value};
use upstream::{call, Api, Upstream, KEY, LOOP_REPEATS, LOOP_WORDS};

fn send(p: &Proxy, api: Api, prompt: &str, stream: bool) -> proxy::Response {
    let (path, headers, body) = call(api, prompt, stream);
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    request(&p.addr, "POST", &path, &headers, body.to_string().as_bytes()).unwrap()
}

const APIS: [Api; 4] = [Api::Chat, Api::Responses, Api::Anthropic, Api::Gemini];

#[test]
fn every_api_passes_the_upstreams_bytes_and_the_session_replays_to_the_same_detections() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let scratch = tempfile::tempdir().unwrap();
    for api in APIS {
        for scenario in ["clean", "tool", "loop", "error"] {
            for stream in [true, false] {
                let prompt = format!("{scenario} {api:?} stream={stream} 思考 🎉");
                let got = send(&p, api, &prompt, stream);
                let served = up.wait_for(&prompt);
                let what = format!("{api:?} {scenario} stream={stream}");
                // The client gets the upstream's status, headers and bytes, unchanged.
                assert_eq!(got.status, served.status, "{what}");
                assert_eq!(got.header("x-request-id"), Some("req_scripted"), "{what}");
                assert!(
                    got.body == served.script(),
                    "{what}: the body differs from what the upstream sent"
                );
                assert!(served.complete, "{what}");
                // The upstream got the key; the key went nowhere else.
                let keyed = served.headers.iter().any(|(_, v)| v.contains(KEY));
                assert!(keyed, "{what}: the key was not forwarded");
                assert_eq!(
                    served
                        .headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
                        .map(|(_, v)| v.as_str()),
                    Some("identity")
                );
                let session = p.session_of(&prompt);
                let recorded = events(&session);
                assert_eq!(recorded[0]["type"], "meta");
                assert_eq!(recorded[1]["type"], "prompt", "{what}");
                assert!(
                    recorded.iter().all(|e| e["ts"].is_number()),
                    "{what}: every event has its time"
                );
                let kinds: Vec<&str> = recorded.iter().map(|e| e["type"].as_str().unwrap()).collect();
                match scenario {
                    "error" => {
                        let note = recorded.last().unwrap();
                        assert_eq!(note["type"], "note", "{what}: {kinds:?}");
                        assert!(
                            note["text"].as_str().unwrap().starts_with("API error (HTTP 429"),
                            "{what}: {note}"
                        );
                        assert!(note["text"].as_str().unwrap().contains("Rate limit reached"), "{what}");
                    }
                    "tool" => {
                        let call = recorded
                            .iter()
                            .find(|e| e["type"] == "tool_call")
                            .unwrap_or_else(|| panic!("{what}: {kinds:?}"));
                        assert_eq!(call["name"], "read_file");
                        assert_eq!(
                            call["args"],
                            json!({"path": "src/main.rs", "note": "ファイル"}),
                            "{what}"
                        );
                    }
                    _ => {
                        assert!(
                            kinds.contains(&"reasoning") && kinds.contains(&"content"),
                            "{what}: {kinds:?}"
                        );
                        let usage = recorded.iter().find(|e| e["usage"]["output_tokens"].is_u64());
                        assert!(usage.is_some(), "{what}: the usage was recorded");
                    }
                }
                if stream && scenario != "error" {
                    // Scanned, the session fires what a scan of the upstream's stream fires.
                    let raw = scratch.path().join(format!("{api:?}-{scenario}.sse"));
                    std::fs::write(&raw, served.script()).unwrap();
                    for profile in ["seed", "extended"] {
                        let (want, want_at) = detections(&scan(profile, &raw));
                        let (have, have_at) = detections(&scan(profile, &session));
                        assert_eq!(have, want, "{what} {profile}");
                        // Two events come first in the session: its meta line and the prompt.
                        let shifted: Vec<u64> = want_at.iter().map(|e| e + 2).collect();
                        assert_eq!(have_at, shifted, "{what} {profile}");
                        if scenario == "loop" {
                            assert!(!want.is_empty(), "{what} {profile}: the loop is found");
                        }
                    }
                }
            }
        }
    }
    let printed = p.printed().join("\n");
    assert!(
        !p.written().contains("SECRET") && !printed.contains("SECRET"),
        "a key was written or printed"
    );
}

/// A Gemini stream without `alt=sse`: a JSON array.
fn gemini_array(p: &Proxy, prompt: &str) -> proxy::Response {
    let body = json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}]});
    let path = "/gemini/v1beta/models/gemini-test:streamGenerateContent";
    let headers = [("Content-Type", "application/json")];
    request(&p.addr, "POST", path, &headers, body.to_string().as_bytes()).unwrap()
}

#[test]
fn gemini_json_array_streams_pass_and_record_too() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let got = gemini_array(&p, "tool call as an array");
    let served = up.wait_for("tool call as an array");
    assert_eq!(got.body, served.script());
    let recorded = events(&p.session_of("tool call as an array"));
    assert!(recorded
        .iter()
        .any(|e| e["type"] == "tool_call" && e["name"] == "read_file"));
    assert!(p
        .session_of("tool call as an array")
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .ends_with("-gemini-test.jsonl"));
}

/// The events of an SSE body, as JSON (`[DONE]` as a string).
#[test]
fn sixty_four_concurrent_streams_each_get_their_own_file() {
    let up = Upstream::start();
    // Slow enough that all 64 are streaming at once.
    *up.pause.lock().unwrap() = Duration::from_millis(5);
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let threads: Vec<_> = (0..64)
        .map(|i| {
            let addr = p.addr.clone();
            std::thread::spawn(move || {
                let api = APIS[i % 4];
                let (path, headers, body) = call(api, &format!("clean conversation #{i}#"), true);
                let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
                request(&addr, "POST", &path, &headers, body.to_string().as_bytes()).unwrap()
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().status, 200);
    }
    // Two sub-agents started alike, at once: two conversations.
    let twins: Vec<_> = (0..2)
        .map(|_| {
            let addr = p.addr.clone();
            std::thread::spawn(move || {
                let (path, headers, body) = call(Api::Chat, "clean twin", true);
                let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
                request(&addr, "POST", &path, &headers, body.to_string().as_bytes()).unwrap()
            })
        })
        .collect();
    for t in twins {
        t.join().unwrap();
    }
    assert_eq!(p.sessions().len(), 66);
    for i in 0..64 {
        let recorded = events(&p.session_of(&format!("#{i}#")));
        let content: String = recorded
            .iter()
            .filter(|e| e["type"] == "content")
            .map(|e| e["text"].as_str().unwrap())
            .collect();
        // Its own answer, whole, and nobody else's.
        assert_eq!(
            content,
            format!("You said: clean conversation #{i}#. The answer is 42 — 答案是四十二 🎉.")
        );
        assert_eq!(recorded.iter().filter(|e| e["type"] == "prompt").count(), 1);
    }
}

#[test]
fn a_conversation_goes_on_in_its_file_with_the_tool_results_of_its_next_request() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let first = json!({"model": "claude-test", "max_tokens": 100, "stream": true, "system": "sys",
        "messages": [{"role": "user", "content": "use a tool please"}]});
    let headers = [("Content-Type", "application/json")];
    request(
        &p.addr,
        "POST",
        "/anthropic/v1/messages",
        &headers,
        first.to_string().as_bytes(),
    )
    .unwrap();
    let next = json!({"model": "claude-test", "max_tokens": 100, "stream": true, "system": "sys", "messages": [
        {"role": "user", "content": "use a tool please"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "is_error": true, "content": "no such file"}]}
    ]});
    request(
        &p.addr,
        "POST",
        "/anthropic/v1/messages",
        &headers,
        next.to_string().as_bytes(),
    )
    .unwrap();
    assert_eq!(p.sessions().len(), 1);
    let recorded = events(&p.sessions()[0]);
    let kinds: Vec<&str> = recorded.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let result = kinds.iter().position(|k| *k == "tool_result").unwrap();
    assert_eq!(kinds.iter().filter(|k| **k == "request").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "prompt").count(), 1, "{kinds:?}");
    assert!(
        kinds[..result].contains(&"tool_call") && kinds[result + 1] == "request",
        "{kinds:?}"
    );
    assert_eq!(recorded[result]["ok"], false);
    assert_eq!(recorded[result]["id"], "call_1");
}

#[test]
fn it_is_not_an_open_proxy_and_listens_on_loopback_unless_told() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let refused = |head: &str| -> String {
        let mut s = TcpStream::connect(&p.addr).unwrap();
        s.write_all(head.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    let absolute = refused("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert!(
        absolute.starts_with("HTTP/1.1 400") && absolute.contains("not an open proxy"),
        "{absolute}"
    );
    let connect = refused("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    assert!(connect.starts_with("HTTP/1.1 400"), "{connect}");
    let rebound = refused("POST /openai/chat/completions HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    let elsewhere = request(&p.addr, "GET", "/somewhere/else", &[], b"").unwrap();
    assert_eq!(elsewhere.status, 404);
    assert!(up.served().is_empty(), "nothing reached the upstream");
    // Other paths of a route pass (and are not recorded).
    let models = request(&p.addr, "GET", "/openai/models", &[], b"").unwrap();
    assert_eq!(
        (models.status, models.body.as_slice()),
        (200, &br#"{"object":"list","data":[]}"#[..])
    );
    assert!(p.sessions().is_empty());

    let out = common::loopscope_at_root()
        .args(["record", "-o"])
        .arg(dir.path())
        .args(["--listen", "0.0.0.0:0", "--upstream", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
    // A guard that cannot be set up is one line and exit 2, before listening.
    let out = common::loopscope_at_root()
        .args(["record", "-o"])
        .arg(dir.path())
        .args([
            "--guard",
            "extended",
            "--set",
            "text-loop.nope=3",
            "--upstream",
            "http://127.0.0.1:9",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A streamed chat request on a raw connection, left open to read (or not).
fn open_chat_stream(p: &Proxy, prompt: &str) -> TcpStream {
    let mut s = TcpStream::connect(&p.addr).unwrap();
    let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": prompt}]}).to_string();
    let head = format!(
        "POST /openai/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(format!("{head}{body}").as_bytes()).unwrap();
    s
}

#[test]
fn a_down_upstream_a_silent_one_and_a_client_that_leaves() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    // Port 9 (discard) on loopback: nothing listens there.
    let p = Proxy::start(
        dir.path(),
        &[
            "--upstream",
            &format!("openai={}/v1", up.url),
            "--upstream",
            "down=http://127.0.0.1:9",
        ],
    );
    let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "clean but down"}]});
    let down = request(
        &p.addr,
        "POST",
        "/down/chat/completions",
        &[],
        body.to_string().as_bytes(),
    );
    assert!(
        down.is_err(),
        "the client sees the connection end, as it would have: {down:?}"
    );
    let note = events(&p.session_of("clean but down")).pop().unwrap();
    assert!(
        note["text"]
            .as_str()
            .unwrap()
            .starts_with("API error: no answer from the upstream http://127.0.0.1:9"),
        "{note}"
    );

    // An upstream that never answers: the client's own timeout ends it, and
    // the upstream request is closed with it.
    let mut s = open_chat_stream(&p, "hang please");
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut byte = [0u8; 1];
    assert!(s.read(&mut byte).is_err(), "no answer within the client's timeout");
    drop(s);
    let hung = up.wait_for("hang please");
    assert!(!hung.complete);

    // A client that leaves mid-stream: the upstream stops being read.
    *up.pause.lock().unwrap() = Duration::from_millis(2);
    let mut s = open_chat_stream(&p, "loop then leave");
    let mut some = [0u8; 4096];
    s.read_exact(&mut some).unwrap();
    drop(s);
    let left = up.wait_for("loop then leave");
    assert!(!left.complete && left.sent_events < LOOP_REPEATS * LOOP_WORDS.len());
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let recorded = events(&p.session_of("loop then leave"));
        if recorded.last().unwrap()["text"] == "the client closed the connection; the upstream request was closed" {
            break;
        }
        assert!(Instant::now() < until, "the session says the client left");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn https_upstreams_through_rustls_with_a_local_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).current_dir(d).output();
        match out {
            Ok(o) if o.status.success() => true,
            Ok(o) => panic!("openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr)),
            Err(_) => false,
        }
    };
    let ca = [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=loopscope test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ];
    if !openssl(&ca) {
        assert!(std::env::var_os("CI").is_none(), "CI has openssl");
        eprintln!("skipped: no openssl here");
        return;
    }
    assert!(openssl(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=localhost"
    ]));
    std::fs::write(
        d.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    assert!(openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf"
    ]));
    let up = Upstream::start_tls(&d.join("leaf.pem"), &d.join("leaf.key"));
    let sessions = d.join("sessions");
    let ca_file = d.join("ca.pem");
    let p = Proxy::start_with(
        &sessions,
        &["--upstream", &format!("{}/v1", up.url)],
        &[("SSL_CERT_FILE", ca_file.to_str().unwrap())],
    );
    let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "clean over tls"}]});
    let got = request(&p.addr, "POST", "/chat/completions", &[], body.to_string().as_bytes()).unwrap();
    assert_eq!(got.body, up.wait_for("clean over tls").script());
    assert!(events(&p.session_of("clean over tls"))
        .iter()
        .any(|e| e["type"] == "content"));
    // Without the CA, the certificate is refused: no answer, and a note.
    let untrusted = Proxy::start(&sessions, &["--upstream", &format!("{}/v1", up.url)]);
    let body = json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "clean untrusted"}]});
    assert!(request(
        &untrusted.addr,
        "POST",
        "/chat/completions",
        &[],
        body.to_string().as_bytes()
    )
    .is_err());
    let note = events(&untrusted.session_of("clean untrusted")).pop().unwrap();
    assert!(note["text"].as_str().unwrap().contains("certificate"), "{note}");
}

#[test]
fn record_runs_a_command_with_its_variables_and_its_exit_status() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let script = r#"printf '%s\n' "$OPENAI_BASE_URL" "$OPENAI_API_BASE" "$ANTHROPIC_BASE_URL" "$GOOGLE_GEMINI_BASE_URL" "$NO_PROXY" > vars.txt
curl -s -N -H 'Content-Type: application/json' -H 'Authorization: Bearer sk-child-SECRET' \
  -d '{"model":"gpt-child","stream":true,"messages":[{"role":"user","content":"clean from the child"}]}' \
  "$OPENAI_BASE_URL/chat/completions" > answer.txt
exit 3"#;
    let out = common::loopscope_at_root()
        .args(["record", "-o", "sessions", "--", "sh", "-c", script])
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", up.url))
        .env("NO_PROXY", "corp.example")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let vars = std::fs::read_to_string(dir.path().join("vars.txt")).unwrap();
    let lines: Vec<&str> = vars.lines().collect();
    assert!(
        lines[0].starts_with("http://127.0.0.1:") && lines[0].ends_with("/openai"),
        "{vars}"
    );
    assert_eq!(lines[0], lines[1], "OPENAI_API_BASE follows OPENAI_BASE_URL");
    assert!(
        lines[2].ends_with("/anthropic") && lines[3].ends_with("/gemini"),
        "{vars}"
    );
    assert_eq!(lines[4], "corp.example,127.0.0.1,localhost,::1");
    if which_curl() {
        let answer = std::fs::read(dir.path().join("answer.txt")).unwrap();
        assert_eq!(answer, up.wait_for("clean from the child").script());
        assert!(stderr.contains("recorded 1 conversation into sessions"), "{stderr}");
        let files: Vec<_> = std::fs::read_dir(dir.path().join("sessions"))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(files.len(), 1);
        assert!(files[0].file_name().to_str().unwrap().ends_with("-gpt-child.jsonl"));
    }
    assert!(!stderr.contains("SECRET"));
}

fn which_curl() -> bool {
    std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn watch_follows_a_recorded_folder_while_the_agent_streams() {
    let up = Upstream::start();
    *up.pause.lock().unwrap() = Duration::from_millis(1);
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let mut watch = std::process::Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args(["watch", "--no-tui", "--json", "--profile", "extended"])
        .arg(dir.path())
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lines = common::lines_of(watch.stdout.take().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    let addr = p.addr.clone();
    let streaming = std::thread::spawn(move || {
        let (path, headers, body) = call(Api::Anthropic, "loop while watched", true);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request(&addr, "POST", &path, &headers, body.to_string().as_bytes()).unwrap()
    });
    let line = lines
        .recv_timeout(Duration::from_secs(60))
        .expect("watch printed a detection");
    // Announced while the upstream was still streaming.
    assert!(
        up.served().iter().all(|s| !s.prompt.contains("loop while watched")),
        "the stream had already ended"
    );
    let d: Value = serde_json::from_str(&line).unwrap();
    assert!(d["file"].as_str().unwrap().ends_with("-claude-test.jsonl"), "{d}");
    streaming.join().unwrap();
    let _ = watch.kill();
    let _ = watch.wait();
}

#[test]
fn the_proxy_alone_stops_on_ctrl_c_and_a_missing_command_is_one_line() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let mut p = Proxy::to_apis(&up.url, dir.path(), &[]);
    send(&p, Api::Chat, "clean before stopping", true);
    common::interrupt(&p.child);
    let status = p.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // Its stderr, to its end (it exited), closes with the summary.
    let said: Vec<String> = p.stderr.iter().collect();
    assert!(
        said.last().is_some_and(|l| l.contains("recorded 1 conversation into")),
        "{said:?}"
    );

    let out = common::loopscope_at_root()
        .args(["record", "-o"])
        .arg(dir.path())
        .args(["--", "no-such-agent-here"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.trim_end()
            .ends_with("no-such-agent-here: no such file or directory"),
        "{err}"
    );
}

#[test]
fn the_guards_detections_go_to_otlp_and_the_counts_to_metrics() {
    use common::collector::{collector, Answer};
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let sink = collector(|_| Answer::Status(200, ""));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics = format!("127.0.0.1:{port}");
    let p = Proxy::to_apis(
        &up.url,
        dir.path(),
        &["--guard", "extended", "--otlp", &sink.url, "--metrics", &metrics],
    );
    send(&p, Api::Chat, "clean for the counters", true);
    let got = send(&p, Api::Chat, "loop for the collector", true);
    assert_eq!(got.status, 200);
    let page = request(&metrics, "GET", "/metrics", &[], b"").unwrap();
    let page = String::from_utf8_lossy(&page.body).to_string();
    assert!(
        page.contains("loopscope_sessions_seen_total{agent=\"openai-chat\"} 2\n"),
        "{page}"
    );
    assert!(page.contains("loopscope_detections_total{detector="), "{page}");
    assert!(page.contains("profile=\"extended\",agent=\"openai-chat\"}"), "{page}");
    common::interrupt(&p.child);
    let mut p = p;
    p.child.wait().unwrap();
    let bodies = sink.bodies.lock().unwrap();
    let (_, ct, body) = bodies.iter().find(|(t, _, _)| t == "/v1/traces").expect("spans sent");
    assert_eq!(ct, "application/x-protobuf");
    assert!(String::from_utf8_lossy(body).contains("gen_ai.evaluation.name"));
    let written = p.written();
    assert!(written.contains("loopscope stopped a loop"), "the guard still guards");
}

#[test]
fn record_otlp_needs_the_guard() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args([
            "record",
            "-o",
            "/tmp/never",
            "--upstream",
            "http://127.0.0.1:9",
            "--otlp",
            "http://127.0.0.1:4318",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --guard PROFILE"));
    assert!(!Path::new("/tmp/never").exists());
}
