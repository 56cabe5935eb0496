//! The `--metrics` endpoint: `GET /metrics` on the record proxy's HTTP/1.1
//! pieces (its accept loop and httparse heads), one thread per connection.

use std::io::BufReader;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use super::metrics::Metrics;
use crate::http::host::HostCheck;
use crate::http::listener::{self, accept, read_head_in_time, Limits, Served, Slot};
use crate::http::respond::respond_to;
use crate::http::{self, HeadError};

/// Scrapers served at once, and from one address (see `http::listener`:
/// an idle one makes room for a newcomer).
const LIMITS: Limits = Limits {
    max: 64,
    per_address: 32,
};
/// An idle scraper's connection is closed after this long.
const IDLE: Duration = Duration::from_secs(30);
/// The Prometheus text format's type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Binds `addr` and serves the counters on a thread of its own; the
/// address bound (a port 0 made real) comes back. On a loopback address
/// only requests to localhost, a loopback IP or an `allow_hosts` name
/// are answered (DNS rebinding); an address chosen to be reached from
/// elsewhere answers any.
pub fn start(addr: SocketAddr, metrics: Arc<Metrics>, allow_hosts: &[String]) -> Result<SocketAddr, String> {
    let hosts = HostCheck::new(addr.ip().is_loopback(), allow_hosts);
    let (listener, bound) = listener::bind("--metrics", addr)?;
    std::thread::Builder::new()
        .name("metrics-accept".into())
        .spawn(move || {
            accept(listener, "metrics-client", LIMITS, move |s| match s {
                Served::One(stream, slot) => connection(stream, slot, &metrics, &hosts),
                Served::TooMany(stream, why) => {
                    let _ = respond_to(stream, "GET", 503, "text/plain", format!("{why}\n").as_bytes(), true);
                }
            })
        })
        .map_err(|e| format!("cannot serve --metrics: {e}"))?;
    Ok(bound)
}

fn connection(stream: &TcpStream, slot: &Slot, metrics: &Metrics, hosts: &HostCheck) {
    let _ = stream.set_write_timeout(Some(IDLE));
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    loop {
        let head = match read_head_in_time(&mut reader, slot, IDLE) {
            Ok(Some(head)) => head,
            Ok(None) | Err(HeadError::Io(_)) => return,
            Err(HeadError::Bad(status, why)) => {
                let _ = respond_to(stream, "GET", status, "text/plain", format!("{why}\n").as_bytes(), true);
                return;
            }
        };
        // A scrape has no body; one that says it has one is not a scrape.
        let close = head.version == 0
            || http::has_token(&head.headers, "connection", "close")
            || http::header(&head.headers, "content-length").is_some_and(|l| l.trim() != "0")
            || http::header(&head.headers, "transfer-encoding").is_some();
        if !hosts.admits(http::header(&head.headers, "host")) {
            let why = hosts.refusal(
                "loopscope --metrics",
                "--metrics ADDRESS:PORT on a non-loopback address",
            );
            let _ = respond_to(stream, "GET", 403, "text/plain", format!("{why}\n").as_bytes(), true);
            return;
        }
        let path = head.target.split('?').next().unwrap_or_default();
        let method = head.method.as_str();
        let sent = match (method, path) {
            ("GET" | "HEAD", "/metrics") => {
                respond_to(stream, method, 200, CONTENT_TYPE, metrics.render().as_bytes(), close)
            }
            ("GET" | "HEAD", "/") => respond_to(
                stream,
                method,
                200,
                "text/plain; charset=utf-8",
                b"loopscope: the counters are at /metrics\n",
                close,
            ),
            ("GET" | "HEAD", _) => respond_to(stream, method, 404, "text/plain", b"not found: try /metrics\n", close),
            _ => respond_to(stream, "GET", 405, "text/plain", b"GET /metrics\n", true),
        };
        if sent.is_err() || close || !matches!(method, "GET" | "HEAD") {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn ask(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn metrics_are_served_and_the_rest_refused() {
        let m = Arc::new(Metrics::new(super::super::metrics::IDLE_AFTER, None));
        m.session_seen("codex");
        let addr = start("127.0.0.1:0".parse().unwrap(), m, &[]).unwrap();
        let page = ask(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        );
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(page.contains("Content-Type: text/plain; version=0.0.4"));
        assert!(page.contains("loopscope_sessions_seen_total{agent=\"codex\"} 1\n"));
        let head = ask(
            addr,
            "HEAD /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        );
        assert!(head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"), "{head}");
        assert!(
            ask(addr, "GET /nope HTTP/1.1\r\nHost: [::1]:9\r\nConnection: close\r\n\r\n").starts_with("HTTP/1.1 404")
        );
        assert!(ask(
            addr,
            "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"
        )
        .starts_with("HTTP/1.1 405"));
        assert!(ask(addr, "\x16\x03\x01 not http\r\n\r\n").starts_with("HTTP/1.1 400"));
    }
}
