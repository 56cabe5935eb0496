//! A scripted model API on 127.0.0.1 (plain or TLS) for the `record`
//! tests and bench. It answers OpenAI Chat Completions, Responses,
//! Anthropic Messages and Gemini requests, streamed or whole, with a clean
//! answer, a tool call, a reasoning loop, an error or no answer at all,
//! chosen by a word in the last user message (`clean`, `tool`, `loop`,
//! `error`, `hang`); each event is its own write, and it logs what it
//! scripted, what it sent and whether the client stayed to the end.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "wire.rs"]
mod wire;
use wire::{anthropic_stream, anthropic_whole, chat_stream, chat_whole, gemini_chunks, responses_stream, Step};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Clean,
    Tool,
    Loop,
    Error,
    Hang,
    /// The deltas set in [`Upstream::long`], as content (the bench's streams).
    Long,
}

/// The seven deltas the looping stream repeats.
pub const LOOP_WORDS: [&str; 7] = ["Hmm, ", "wait, ", "let me ", "recount ", "the ", "rows ", "again. "];
/// How often it repeats them if nobody stops it.
pub const LOOP_REPEATS: usize = 600;

/// One request the upstream answered.
#[derive(Clone, Debug)]
pub struct Served {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub prompt: String,
    pub scenario: Scenario,
    pub status: u16,
    /// The answer's body as scripted (each event's bytes).
    pub events: Vec<Vec<u8>>,
    /// How many events were written before the end or the client's leaving.
    pub sent_events: usize,
    /// The client read the answer to its end.
    pub complete: bool,
}

impl Served {
    /// The whole scripted body.
    pub fn script(&self) -> Vec<u8> {
        self.events.concat()
    }

    /// The body as far as it was sent.
    pub fn sent(&self) -> Vec<u8> {
        self.events[..self.sent_events].concat()
    }
}

type Tls = Arc<rustls::ServerConfig>;

pub struct Upstream {
    pub addr: SocketAddr,
    pub url: String,
    pub served: Arc<Mutex<Vec<Served>>>,
    /// Each event is written after this pause (the bench's pacing).
    pub pause: Arc<Mutex<Duration>>,
    /// What a `long` answer streams, one content delta each.
    pub long: Arc<Mutex<Arc<Vec<String>>>>,
}

impl Upstream {
    pub fn start() -> Upstream {
        Upstream::serve(None)
    }

    /// An https upstream with this certificate chain and key (PEM files).
    pub fn start_tls(cert: &std::path::Path, key: &std::path::Path) -> Upstream {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .unwrap()
            .map(|c| c.unwrap())
            .collect();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        Upstream::serve(Some(Arc::new(config)))
    }

    fn serve(tls: Option<Tls>) -> Upstream {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let served = Arc::new(Mutex::new(Vec::new()));
        let pause = Arc::new(Mutex::new(Duration::ZERO));
        let long = Arc::new(Mutex::new(Arc::new(Vec::new())));
        let (log, pacing, deltas) = (served.clone(), pause.clone(), long.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, tls, pacing) = (log.clone(), tls.clone(), pacing.clone());
                let long = deltas.lock().unwrap().clone();
                std::thread::spawn(move || {
                    let _ = stream.set_nodelay(true);
                    match tls {
                        Some(config) => {
                            let conn = rustls::ServerConnection::new(config).unwrap();
                            let probe = stream.try_clone().unwrap();
                            connection(rustls::StreamOwned::new(conn, stream), probe, &log, &pacing, &long)
                        }
                        None => {
                            let probe = stream.try_clone().unwrap();
                            connection(stream, probe, &log, &pacing, &long)
                        }
                    }
                });
            }
        });
        Upstream {
            addr,
            url: format!(
                "{scheme}://{}",
                if scheme == "https" {
                    format!("localhost:{}", addr.port())
                } else {
                    addr.to_string()
                }
            ),
            served,
            pause,
            long,
        }
    }

    /// The requests answered so far.
    pub fn served(&self) -> Vec<Served> {
        self.served.lock().unwrap().clone()
    }

    /// The request whose prompt contains `text`, once it has been answered (at most 30 s).
    pub fn wait_for(&self, text: &str) -> Served {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.served().into_iter().find(|s| s.prompt.contains(text)) {
                return s;
            }
            assert!(
                Instant::now() < until,
                "the upstream never finished a request with {text:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn connection<S: Read + Write>(
    stream: S,
    probe: TcpStream,
    log: &Mutex<Vec<Served>>,
    pause: &Mutex<Duration>,
    long: &[String],
) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((n, v)) = h.split_once(':') {
                headers.push((n.trim().to_string(), v.trim().to_string()));
            }
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if method == "GET" {
            let out = br#"{"object":"list","data":[]}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                out.len()
            );
            let w = reader.get_mut();
            if w.write_all(head.as_bytes())
                .and_then(|()| w.write_all(out))
                .and_then(|()| w.flush())
                .is_err()
            {
                return;
            }
            continue;
        }
        let prompt = last_user_text(&body);
        let scenario = scenario_of(&prompt);
        let api = api_of(&path);
        let mut served = Served {
            path: path.clone(),
            headers,
            body: body.clone(),
            prompt,
            scenario,
            status: 200,
            events: Vec::new(),
            sent_events: 0,
            complete: false,
        };
        if scenario == Scenario::Hang {
            // No answer: wait (at most 60 s) for the client side to go away.
            let _ = probe.set_read_timeout(Some(Duration::from_millis(50)));
            let until = Instant::now() + Duration::from_secs(60);
            let mut byte = [0u8; 1];
            while Instant::now() < until {
                match probe.peek(&mut byte) {
                    Ok(0) => break,
                    Ok(_) => std::thread::sleep(Duration::from_millis(50)),
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                    Err(_) => break,
                }
            }
            log.lock().unwrap().push(served);
            return;
        }
        let stream = streamed(api, &path, &body);
        let (status, content_type, events) = answer(api, scenario, stream, &path, &body, &served.prompt, long);
        served.status = status;
        served.events = events;
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nx-request-id: req_scripted\r\nTransfer-Encoding: chunked\r\n\r\n",
            if status == 200 { "OK" } else { "Too Many Requests" }
        );
        let w = reader.get_mut();
        let mut ok = w.write_all(head.as_bytes()).and_then(|()| w.flush()).is_ok();
        let delay = *pause.lock().unwrap();
        for e in &served.events {
            if !ok {
                break;
            }
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            let chunk = [format!("{:x}\r\n", e.len()).as_bytes(), e, b"\r\n"].concat();
            ok = w.write_all(&chunk).and_then(|()| w.flush()).is_ok();
            if ok {
                served.sent_events += 1;
            }
        }
        ok = ok && w.write_all(b"0\r\n\r\n").and_then(|()| w.flush()).is_ok();
        served.complete = ok;
        log.lock().unwrap().push(served);
        if !ok {
            return;
        }
    }
}

pub fn api_of(path: &str) -> Api {
    let p = path.split('?').next().unwrap_or_default();
    if p.ends_with("/chat/completions") {
        Api::Chat
    } else if p.ends_with("/responses") {
        Api::Responses
    } else if p.ends_with("/messages") {
        Api::Anthropic
    } else {
        Api::Gemini
    }
}

fn streamed(api: Api, path: &str, body: &Value) -> Option<bool> {
    // Some(sse) for a stream, None for a whole answer.
    match api {
        Api::Gemini if path.contains(":streamGenerateContent") => Some(path.contains("alt=sse")),
        Api::Gemini => None,
        _ if body["stream"] == json!(true) => Some(true),
        _ => None,
    }
}

fn scenario_of(prompt: &str) -> Scenario {
    let p = prompt.to_lowercase();
    for (word, s) in [
        ("long", Scenario::Long),
        ("hang", Scenario::Hang),
        ("error", Scenario::Error),
        ("loop", Scenario::Loop),
        ("tool", Scenario::Tool),
    ] {
        if p.contains(word) {
            return s;
        }
    }
    Scenario::Clean
}

/// The key the record tests' clients send.
pub const KEY: &str = "sk-test-SECRET-0123456789";

impl Upstream {
    /// Waits until `n` requests with `prompt` have been answered (at most 30 s).
    pub fn wait_for_asks(&self, prompt: &str, n: usize) {
        let until = Instant::now() + Duration::from_secs(30);
        while self.served().iter().filter(|s| s.prompt == prompt).count() < n {
            assert!(
                Instant::now() < until,
                "the upstream never answered {prompt:?} {n} times"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The path (under a proxy's routes `/openai`, `/anthropic`, `/gemini`; see
/// `Proxy::to_apis`), headers and body an SDK of `api` sends for `prompt`.
pub fn call(api: Api, prompt: &str, stream: bool) -> (String, Vec<(&'static str, String)>, Value) {
    let auth = vec![
        ("Authorization", format!("Bearer {KEY}")),
        ("Content-Type", "application/json".to_string()),
    ];
    match api {
        Api::Chat => (
            "/openai/chat/completions".into(),
            auth,
            json!({"model": "gpt-test", "stream": stream, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}]}),
        ),
        Api::Responses => (
            "/openai/responses".into(),
            auth,
            json!({"model": "gpt-5-test", "stream": stream, "instructions": "Be brief.", "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]}),
        ),
        Api::Anthropic => (
            "/anthropic/v1/messages".into(),
            vec![
                ("x-api-key", KEY.to_string()),
                ("anthropic-version", "2023-06-01".into()),
                ("Content-Type", "application/json".into()),
            ],
            json!({"model": "claude-test", "max_tokens": 1024, "stream": stream, "system": "Be brief.", "messages": [{"role": "user", "content": prompt}]}),
        ),
        Api::Gemini => (
            if stream {
                format!("/gemini/v1beta/models/gemini-test:streamGenerateContent?alt=sse&key={KEY}")
            } else {
                format!("/gemini/v1beta/models/gemini-test:generateContent?key={KEY}")
            },
            vec![
                ("x-goog-api-key", KEY.to_string()),
                ("Content-Type", "application/json".into()),
            ],
            json!({"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": [{"role": "user", "parts": [{"text": prompt}]}]}),
        ),
    }
}

/// The last user message's text, in any of the four APIs.
pub fn last_user_text(body: &Value) -> String {
    let text = |c: &Value| -> String {
        match c {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    };
    if let Some(s) = body["input"].as_str() {
        return s.to_string();
    }
    for key in ["messages", "input", "contents"] {
        for m in body[key].as_array().into_iter().flatten().rev() {
            if m["role"] != "user" {
                continue;
            }
            let t = if m["parts"].is_array() {
                text(&m["parts"])
            } else {
                text(&m["content"])
            };
            if !t.is_empty() {
                return t;
            }
        }
    }
    String::new()
}

fn steps(scenario: Scenario, prompt: &str, long: &[String]) -> Vec<Step> {
    match scenario {
        Scenario::Long => long.iter().map(|t| Step::Content(t.clone())).collect(),
        Scenario::Clean => {
            let mut s = vec![
                Step::Reasoning("Six times seven ".into()),
                Step::Reasoning("is forty-two.".into()),
            ];
            let answer = format!("You said: {prompt}. The answer is 42 — 答案是四十二 🎉.");
            s.extend(answer.split_inclusive(' ').map(|w| Step::Content(w.to_string())));
            s
        }
        Scenario::Tool => vec![
            Step::Reasoning("I should read ".into()),
            Step::Reasoning("the file first.".into()),
            Step::Content("Reading it.".into()),
            Step::Call(
                "call_1".into(),
                "read_file".into(),
                json!({"path": "src/main.rs", "note": "ファイル"}),
            ),
        ],
        Scenario::Loop => {
            let mut s: Vec<Step> = (0..LOOP_REPEATS * LOOP_WORDS.len())
                .map(|i| Step::Reasoning(LOOP_WORDS[i % LOOP_WORDS.len()].into()))
                .collect();
            s.push(Step::Content("Done.".into()));
            s
        }
        Scenario::Error | Scenario::Hang => Vec::new(),
    }
}

fn error_body(api: Api) -> Value {
    let message = "Rate limit reached for scripted-model; try again in 1s";
    match api {
        Api::Anthropic => json!({"type": "error", "error": {"type": "rate_limit_error", "message": message}}),
        Api::Gemini => json!({"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}),
        _ => json!({"error": {"message": message, "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
    }
}

/// Status, content type and the body's events.
fn answer(
    api: Api,
    scenario: Scenario,
    stream: Option<bool>,
    path: &str,
    body: &Value,
    prompt: &str,
    long: &[String],
) -> (u16, String, Vec<Vec<u8>>) {
    if scenario == Scenario::Error {
        return (
            429,
            "application/json".into(),
            vec![error_body(api).to_string().into_bytes()],
        );
    }
    let model = body["model"].as_str().unwrap_or("gemini-scripted").to_string();
    let steps = steps(scenario, prompt, long);
    let json_type = "application/json".to_string();
    let sse_type = "text/event-stream; charset=utf-8".to_string();
    match (api, stream) {
        (Api::Chat, Some(_)) => (200, sse_type, chat_stream("chatcmpl-scripted", &model, &steps)),
        (Api::Chat, None) => (
            200,
            json_type,
            vec![chat_whole("chatcmpl-scripted", &model, &steps).to_string().into_bytes()],
        ),
        (Api::Responses, Some(_)) => (200, sse_type, responses_stream("resp_scripted", &model, &steps)),
        (Api::Responses, None) => {
            let events = responses_stream("resp_scripted", &model, &steps);
            let last = String::from_utf8(events.last().unwrap().clone()).unwrap();
            let completed: Value =
                serde_json::from_str(last.lines().nth(1).unwrap().trim_start_matches("data: ")).unwrap();
            (200, json_type, vec![completed["response"].to_string().into_bytes()])
        }
        (Api::Anthropic, Some(_)) => (200, sse_type, anthropic_stream("msg_scripted", &model, &steps)),
        (Api::Anthropic, None) => (
            200,
            json_type,
            vec![anthropic_whole("msg_scripted", &model, &steps).to_string().into_bytes()],
        ),
        (Api::Gemini, Some(true)) => {
            let chunks = gemini_chunks("gem_scripted", path, &steps);
            (
                200,
                sse_type,
                chunks
                    .iter()
                    .map(|c| format!("data: {c}\r\n\r\n").into_bytes())
                    .collect(),
            )
        }
        (Api::Gemini, Some(false)) => {
            let chunks = gemini_chunks("gem_scripted", path, &steps);
            let n = chunks.len();
            let events = chunks
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let lead = if i == 0 { "[" } else { ",\r\n" };
                    let tail = if i + 1 == n { "]" } else { "" };
                    format!("{lead}{c}{tail}").into_bytes()
                })
                .collect();
            (200, json_type, events)
        }
        (Api::Gemini, None) => {
            let chunks = gemini_chunks("gem_scripted", path, &steps);
            let mut parts = Vec::new();
            for c in &chunks {
                parts.extend(
                    c["candidates"][0]["content"]["parts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            let mut whole = chunks.last().unwrap().clone();
            whole["candidates"][0]["content"]["parts"] = Value::Array(parts);
            (200, json_type, vec![whole.to_string().into_bytes()])
        }
    }
}
