//! `loopscope record` as the tests run it: the built binary, its address
//! read from what it prints, a plain HTTP/1.1 client to talk to it, and
//! the session files it writes.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;

pub struct Proxy {
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub dir: PathBuf,
    pub stderr: Receiver<String>,
}

impl Proxy {
    /// `loopscope record -o DIR --listen 127.0.0.1:0 ARGS…`, once it listens.
    pub fn start(dir: &Path, args: &[&str]) -> Proxy {
        Proxy::start_with(dir, args, &[])
    }

    pub fn start_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Proxy {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loopscope"));
        cmd.args(["record", "-o"])
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env_remove("LOOPSCOPE_CONFIG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = crate::common::lines_of(child.stderr.take().unwrap());
        let addr = loop {
            let line = stderr
                .recv_timeout(Duration::from_secs(30))
                .expect("loopscope record printed where it listens");
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split('/').next().unwrap().to_string();
            }
        };
        Proxy {
            child,
            addr,
            dir: dir.to_path_buf(),
            stderr,
        }
    }

    /// `record` with a route per API to the upstream at `url`: `/openai`
    /// (to its `/v1`), `/anthropic` and `/gemini`.
    pub fn to_apis(url: &str, dir: &Path, extra: &[&str]) -> Proxy {
        let routes = [
            format!("openai={url}/v1"),
            format!("anthropic={url}"),
            format!("gemini={url}"),
        ];
        let mut args: Vec<&str> = Vec::new();
        for r in &routes {
            args.extend(["--upstream", r.as_str()]);
        }
        args.extend(extra);
        Proxy::start(dir, &args)
    }

    /// What it printed on stderr so far.
    pub fn printed(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }

    /// What it printed on stderr, waiting (30 s at most) until `done` says
    /// all of it is there: a line is printed after the response it is
    /// about, so it can come a moment after the client has its answer.
    pub fn printed_until(&self, done: impl Fn(&[String]) -> bool) -> Vec<String> {
        let mut lines: Vec<String> = self.stderr.try_iter().collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !done(&lines) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => break,
            }
        }
        lines
    }

    /// The session files, oldest name first.
    pub fn sessions(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        files
    }

    /// Everything the session files hold.
    pub fn written(&self) -> String {
        self.sessions()
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect()
    }

    /// The session whose prompt contains `text` (waiting up to 30 s for it).
    pub fn session_of(&self, text: &str) -> PathBuf {
        let until = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            for f in self.sessions() {
                if events(&f)
                    .iter()
                    .any(|e| e["type"] == "prompt" && e["text"].as_str().unwrap_or("").contains(text))
                {
                    return f;
                }
            }
            assert!(std::time::Instant::now() < until, "no session with the prompt {text:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A session file's events.
pub fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// An HTTP response as a client reads it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request on a new connection and reads the whole answer;
/// Err when the connection ends without one.
pub fn request(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    s.write_all(body).map_err(|e| e.to_string())?;
    read_response(&mut BufReader::new(s))
}

pub fn read_response(r: &mut impl BufRead) -> Result<Response, String> {
    let mut line = String::new();
    if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
        return Err("the connection ended without an answer".into());
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(format!("not a status line: {line:?}"))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).map_err(|e| e.to_string())?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (n, v) = h.split_once(':').ok_or("bad header")?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).map_err(|e| e.to_string())?;
            let n = usize::from_str_radix(size.trim(), 16).map_err(|_| format!("bad chunk size {size:?}"))?;
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end).map_err(|e| e.to_string())?;
                break;
            }
            let mut chunk = vec![0u8; n + 2];
            r.read_exact(&mut chunk).map_err(|e| e.to_string())?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(|e| e.to_string())?;
    } else {
        r.read_to_end(&mut body).map_err(|e| e.to_string())?;
    }
    Ok(Response { status, headers, body })
}

/// `loopscope scan --json --profile PROFILE FILE`'s detections.
pub fn scan(profile: &str, file: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args(["scan", "--json", "--profile", profile])
        .arg(file)
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env_remove("LOOPSCOPE_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.code().unwrap() < 2,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Detections without the file and event index (compared across files
/// whose events are numbered from different starts), and the indexes.
pub fn detections(scanned: &[Value]) -> (Vec<Value>, Vec<u64>) {
    let events = scanned.iter().map(|d| d["event"].as_u64().unwrap()).collect();
    let rest = scanned
        .iter()
        .map(|d| {
            let mut d = d.clone();
            let m = d.as_object_mut().unwrap();
            m.remove("file");
            m.remove("event");
            m.remove("events");
            d
        })
        .collect();
    (rest, events)
}
