//! `loopscope record` under attack and faults (issue 43): Host names that
//! only look local, clients that trickle bytes or hold every slot, huge
//! request bodies, clients that half-close, answers that cannot be read
//! as sent (gzip despite identity, br, not SSE at all), session size, and
//! what an upstream timeout or a broken chunk is called.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/upstream.rs"]
mod upstream;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::json;

use proxy::{events, read_response, request, Proxy};

/// An upstream that answers every request with the same bytes, after
/// reading its head and body; it counts the body bytes as they arrive.
struct Raw {
    url: String,
    received: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

fn raw_upstream(answer: Vec<u8>) -> Raw {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (r, h) = (received.clone(), heads.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let (r, h, answer) = (r.clone(), h.clone(), answer.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|n| n.trim().parse::<usize>().ok());
                h.lock().unwrap().push(head.clone());
                let mut buf = vec![0u8; 64 * 1024];
                let mut got = 0;
                loop {
                    if length.is_some_and(|n| got >= n) {
                        break;
                    }
                    if length.is_none() && head.contains("chunked") {
                        // The test's chunked bodies are not read here.
                        break;
                    }
                    if length.is_none() {
                        break;
                    }
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            got += n;
                            r.fetch_add(n, Ordering::SeqCst);
                        }
                    }
                }
                let mut out = &stream;
                let _ = out.write_all(&answer);
            });
        }
    });
    Raw { url, received, heads }
}

/// A whole HTTP answer with these headers and body.
fn answer(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut a = format!(
        "HTTP/1.1 200 OK\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    a.extend_from_slice(body);
    a
}

fn chat(prompt: &str) -> Vec<u8> {
    json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": prompt}]})
        .to_string()
        .into_bytes()
}

/// One request on a new connection with this Host; the whole answer as text.
fn with_host(addr: &str, host: &str, target: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// A free port on 127.0.0.1 for `--metrics`.
fn free_metrics_addr() -> String {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("127.0.0.1:{port}")
}

const SSE_HELLO: &str = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hello from gzip 🎉\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn only_localhost_loopback_ips_and_allowed_names_are_answered() {
    let up = raw_upstream(answer("Content-Type: application/json\r\n", b"{}"));
    let dir = tempfile::tempdir().unwrap();
    let metrics = free_metrics_addr();
    let p = Proxy::start(
        dir.path(),
        &[
            "--upstream",
            &format!("openai={}/v1", up.url),
            "--metrics",
            &metrics,
            "--allow-host",
            "proxy.internal",
        ],
    );
    for addr in [p.addr.as_str(), metrics.as_str()] {
        let port = addr.rsplit(':').next().unwrap();
        let target = if addr == p.addr { "/openai/models" } else { "/metrics" };
        for evil in [
            "127.evil.example".to_string(),
            format!("127.0.0.1.nip.io:{port}"),
            "127.1".to_string(),
            "localhost.evil.example".to_string(),
        ] {
            let out = with_host(addr, &evil, target);
            assert!(out.starts_with("HTTP/1.1 403"), "{evil} at {addr}: {out}");
        }
        for good in [
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            "127.9.9.9".to_string(),
            format!("[::1]:{port}"),
            "Proxy.Internal".to_string(),
        ] {
            let out = with_host(addr, &good, target);
            assert!(out.starts_with("HTTP/1.1 200"), "{good} at {addr}: {out}");
        }
    }
    let help = common::loopscope_at_root().args(["record", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--allow-host <NAME>"));
}

#[test]
fn slow_clients_hold_no_slot_for_long_and_never_shut_out_requests_or_scrapers() {
    let up = raw_upstream(answer("Content-Type: application/json\r\n", b"{\"ok\":1}"));
    let dir = tempfile::tempdir().unwrap();
    let metrics = free_metrics_addr();
    let p = Proxy::start(
        dir.path(),
        &["--upstream", &format!("openai={}/v1", up.url), "--metrics", &metrics],
    );
    // More trickling connections than the proxy has slots (1,024), and
    // than --metrics has (64), each one byte into its head.
    let mut slow = Vec::new();
    for (addr, n) in [(p.addr.as_str(), 1100), (metrics.as_str(), 80)] {
        for _ in 0..n {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"G").unwrap();
            slow.push(s);
        }
    }
    // A real request still gets its answer, and a scraper its counters.
    let real = request(&p.addr, "GET", "/openai/models", &[], b"").unwrap();
    assert_eq!((real.status, real.body.as_slice()), (200, &b"{\"ok\":1}"[..]));
    let scrape = with_host(&metrics, "localhost", "/metrics");
    assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");

    // A head that does not arrive whole within 10 s is answered 408 (a
    // generous bound: the connection is not kept for minutes).
    let mut s = TcpStream::connect(&p.addr).unwrap();
    s.write_all(b"POST /openai/chat/completions HTTP/1.1\r\nHo").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    drop(slow);
}

#[test]
fn a_huge_body_is_forwarded_as_it_arrives_and_trailers_are_bounded() {
    let up = raw_upstream(answer("Content-Type: application/json\r\n", b"{\"id\":\"x\"}"));
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::start(dir.path(), &["--upstream", &format!("openai={}/v1", up.url)]);
    // 24 MB declared; 20 MB sent, then a pause: the upstream must have had
    // most of it already (the proxy used to wait for the whole body).
    let total = 24 << 20;
    let mut s = TcpStream::connect(&p.addr).unwrap();
    write!(
        s,
        "POST /openai/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: {total}\r\n\r\n"
    )
    .unwrap();
    let piece = vec![b' '; 1 << 20];
    for _ in 0..20 {
        s.write_all(&piece).unwrap();
    }
    let until = Instant::now() + Duration::from_secs(60);
    while up.received.load(Ordering::SeqCst) < 18 << 20 {
        assert!(
            Instant::now() < until,
            "the upstream had {} bytes while the client paused",
            up.received.load(Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..4 {
        s.write_all(&piece).unwrap();
    }
    let resp = read_response(&mut BufReader::new(s)).unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(up.received.load(Ordering::SeqCst), total);
    assert!(up.heads.lock().unwrap()[0].contains(&format!("Content-Length: {total}\r\n")));
    let said = p.printed().join("\n");
    assert!(said.contains("forwarded as it came, not recorded"), "{said}");

    // Trailers past a head's bound are refused, not read on and on.
    let mut s = TcpStream::connect(&p.addr).unwrap();
    write!(
        s,
        "POST /openai/models HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n"
    )
    .unwrap();
    let trailer = "X-Trailer: 0123456789\r\n".repeat(200);
    let _ = s.write_all(trailer.as_bytes());
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(
        out.starts_with("HTTP/1.1 400") && out.contains("trailers over"),
        "{out}"
    );

    // A broken chunk size is called that, not "not readable as text".
    let mut s = TcpStream::connect(&p.addr).unwrap();
    write!(
        s,
        "POST /openai/models HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(
        out.contains("bad chunked coding: a chunk size that is not hexadecimal") && !out.contains("readable as text"),
        "{out}"
    );
}

#[test]
fn a_client_that_half_closes_gets_its_whole_answer() {
    let up = upstream::Upstream::start();
    *up.pause.lock().unwrap() = Duration::from_millis(150);
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &[]);
    let mut s = TcpStream::connect(&p.addr).unwrap();
    let body = chat("clean half closed");
    write!(
        s,
        "POST /openai/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(&body).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.contains("data: [DONE]"), "the whole answer: {out}");
    assert!(up.wait_for("clean half closed").complete);
}

#[test]
fn compressed_and_unreadable_answers_reach_the_client_intact_and_are_said() {
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(SSE_HELLO.as_bytes()).unwrap();
    let gzipped = gz.finish().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("Content-Encoding: gzip\r\n", gzipped, "hello from gzip 🎉"),
        (
            "",
            b"this is no event stream\nat all\n\n".to_vec(),
            "held nothing loopscope could read",
        ),
        (
            "Content-Encoding: br\r\n",
            b"\x1b\x03\x00\xf8\xa5".to_vec(),
            "br-encoded",
        ),
        (
            "Content-Encoding: gzip\r\n",
            b"data: not gzip\n\n".to_vec(),
            "gzip-encoded but is not valid gzip data",
        ),
    ];
    for (i, (coding, body, said)) in cases.into_iter().enumerate() {
        let up = raw_upstream(answer(&format!("Content-Type: text/event-stream\r\n{coding}"), &body));
        let dir = tempfile::tempdir().unwrap();
        let p = Proxy::start(dir.path(), &["--upstream", &format!("openai={}/v1", up.url)]);
        let prompt = format!("case {i}");
        let resp = request(&p.addr, "POST", "/openai/chat/completions", &[], &chat(&prompt)).unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, body, "case {i}: the client gets the bytes as they came");
        let written = std::fs::read_to_string(p.session_of(&prompt)).unwrap();
        assert!(written.contains(said), "case {i}: {written}");
        if i == 0 {
            let kinds: Vec<String> = events(&p.session_of(&prompt))
                .iter()
                .map(|e| e["type"].as_str().unwrap_or_default().to_string())
                .collect();
            assert!(kinds.contains(&"content".to_string()), "{kinds:?}");
        }
    }
}

#[test]
fn an_upstream_timeout_says_it_timed_out_and_a_session_stops_at_max_session() {
    let up = upstream::Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &["--upstream-timeout", "1", "--max-session", "2K"]);
    let _ = request(&p.addr, "POST", "/openai/chat/completions", &[], &chat("hang please"));
    let note = events(&p.session_of("hang please")).pop().unwrap();
    let text = note["text"].as_str().unwrap();
    assert!(
        text.contains("timed out: nothing came for 1 s") && !text.contains("temporarily unavailable"),
        "{text}"
    );

    // One conversation whose answers pass 2 KiB: the file stops there, with a note.
    let mut messages = vec![json!({"role": "user", "content": "clean: tell me a story 📚"})];
    for turn in 0..12 {
        let body = json!({"model": "m", "stream": true, "messages": messages}).to_string();
        let resp = request(&p.addr, "POST", "/openai/chat/completions", &[], body.as_bytes()).unwrap();
        assert_eq!(
            resp.status, 200,
            "turn {turn}: the proxy passes on what it no longer writes"
        );
        messages.push(json!({"role": "assistant", "content": "a story"}));
        messages.push(json!({"role": "user", "content": format!("and then, part {turn}? 続けて")}));
    }
    let path = p.session_of("tell me a story");
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size <= 2048 + 400, "{size}");
    let last = events(&path).pop().unwrap();
    assert_eq!(last["kind"], "max-session", "{last}");
}

#[test]
fn the_guard_reads_a_compressed_stream_and_cuts_it_where_a_detector_fires() {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let c = json!({"id": "c9", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut sse = chunk(json!({"role": "assistant", "content": ""}), serde_json::Value::Null);
    for _ in 0..upstream::LOOP_REPEATS {
        for w in upstream::LOOP_WORDS {
            sse.push_str(&chunk(json!({"reasoning_content": w}), serde_json::Value::Null));
        }
    }
    sse.push_str(&chunk(json!({}), json!("stop")));
    sse.push_str("data: [DONE]\n\n");
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(sse.as_bytes()).unwrap();
    let body = gz.finish().unwrap();
    let up = raw_upstream(answer(
        "Content-Type: text/event-stream\r\nContent-Encoding: gzip\r\n",
        &body,
    ));
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::start(
        dir.path(),
        &["--upstream", &format!("openai={}/v1", up.url), "--guard", "extended"],
    );
    let got = request(
        &p.addr,
        "POST",
        "/openai/chat/completions",
        &[],
        &chat("loop compressed"),
    );
    assert!(
        got.as_ref().map_or(true, |r| r.body.len() < body.len()),
        "the answer was cut off: {got:?}"
    );
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let written = std::fs::read_to_string(p.session_of("loop compressed")).unwrap();
        if written.contains("came compressed") && written.contains("\"kind\":\"guard\"") {
            // The recorder read the stream decoded: its reasoning is there.
            assert!(written.contains("\"type\":\"reasoning\""), "{written}");
            break;
        }
        assert!(Instant::now() < until, "{written}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn max_session_takes_sizes_and_refuses_nonsense() {
    let dir = tempfile::tempdir().unwrap();
    for (size, said) in [
        ("12", "at least 1K"),
        ("lots", "is not a size"),
        ("99999999T", "too large"),
    ] {
        let out = common::loopscope_at_root()
            .args(["record", "-o"])
            .arg(dir.path())
            .args(["--max-session", size, "--upstream", "http://127.0.0.1:9"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{size}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{size}: {err}");
    }
}
