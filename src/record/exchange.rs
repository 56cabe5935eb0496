//! One request through the proxy: sent upstream, its answer passed to the
//! client piece by piece as it arrives (see [`super::answer`]), recorded
//! into its conversation, and, under `--guard`, ended in the API's own
//! terms when a detector fires.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::answer::{recording_for, Ending, Pass};
use super::conversations::Exchange;
use crate::http::inflate::{Coding, Inflater};
use std::io::BufReader;

use super::protocol::Protocol;
use super::{Context, Route};
use crate::http::upstream::{Connection, Upstream};
use crate::http::{self, BodyReader, BodyWriter, Framing, RequestHead, ResponseHead};

/// Watches the client while its request is answered: if it goes away,
/// the upstream connection is shut down, so the upstream stops too.
///
/// The end of what the client sends is no sign that it left: a client may
/// shut down its sending side once its request is out and wait for the
/// answer (a half-close, which hyper serves with `half_close(true)`). Only
/// a write can tell a closed connection from a half-closed one, so the
/// watcher sends an HTTP/1.1 client the one thing it may always get before
/// an answer, an interim `100 Continue` (RFC 9110 §15.2: clients must
/// take 1xx they did not ask for): a client that is gone answers it with a
/// reset, one that is waiting reads past it. Once the answer's head is out,
/// its own writes tell.
struct Watcher {
    done: Arc<AtomicBool>,
    gone: Arc<AtomicBool>,
    /// The answer's head was written: the watcher writes nothing more.
    answering: Arc<Mutex<bool>>,
}

/// How often the watcher looks (the longest an abandoned upstream request lives on).
const WATCH_EVERY: Duration = Duration::from_millis(100);

impl Watcher {
    fn start(client: &TcpStream, upstream: io::Result<TcpStream>, http11: bool) -> Watcher {
        let done = Arc::new(AtomicBool::new(false));
        let gone = Arc::new(AtomicBool::new(false));
        let answering = Arc::new(Mutex::new(false));
        let watcher = Watcher {
            done: done.clone(),
            gone: gone.clone(),
            answering: answering.clone(),
        };
        let (Ok(client), Ok(upstream)) = (client.try_clone(), upstream) else {
            return watcher;
        };
        // The client sends nothing while it waits for its answer: a read
        // that fails (a reset) means it left. The timeout lets the watcher
        // see that the answer is done; it is reset after.
        if client.set_read_timeout(Some(WATCH_EVERY)).is_err() {
            return watcher;
        }
        std::thread::spawn(move || {
            let mut byte = [0u8; 1];
            let mut probed = false;
            while !done.load(Ordering::Acquire) {
                match client.peek(&mut byte) {
                    // The next request, pipelined: the client is there.
                    Ok(1..) => return,
                    // The probe was answered with a reset (the socket's
                    // pending error; reads say only "end" once it closed).
                    Ok(0) if probed && !matches!(client.take_error(), Ok(None)) => {}
                    Ok(0) if probed => {
                        // Half-closed and still there: look again later.
                        std::thread::sleep(WATCH_EVERY);
                        continue;
                    }
                    Ok(0) => {
                        let answering = answering.lock().unwrap_or_else(|e| e.into_inner());
                        if *answering || !http11 {
                            // The answer's writes (or an HTTP/1.0 client's) tell from here.
                            return;
                        }
                        probed = true;
                        let mut out = &client;
                        if out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").is_ok() {
                            // A reset comes back at once from a closed socket.
                            drop(answering);
                            std::thread::sleep(WATCH_EVERY / 10);
                            continue;
                        }
                    }
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {}
                }
                gone.store(true, Ordering::Release);
                // A client that closes as soon as it has the API's last event
                // is done, not gone: the answer's own end gets a moment to come.
                for _ in 0..10 {
                    if done.load(Ordering::Acquire) {
                        return;
                    }
                    std::thread::sleep(WATCH_EVERY / 10);
                }
                let _ = upstream.shutdown(Shutdown::Both);
                return;
            }
        });
        watcher
    }

    fn gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }

    /// The answer's head is about to be written: the watcher writes no more.
    fn answering(&self) {
        *self.answering.lock().unwrap_or_else(|e| e.into_inner()) = true;
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
    }
}

/// A request's body on its way upstream.
pub enum Body<'r> {
    /// All of it, read (at most `server::HELD_BODY`).
    Held(Vec<u8>),
    /// Its first bytes and the rest still on the client connection: sent
    /// upstream as they arrive, so a huge body never sits in memory.
    Streamed {
        first: Vec<u8>,
        rest: BodyReader,
        from: &'r mut BufReader<TcpStream>,
    },
}

impl Body<'_> {
    /// How it is framed upstream: its length, when the client said it.
    fn framing(&self) -> Framing {
        match self {
            Body::Held(b) => Framing::Length(b.len() as u64),
            Body::Streamed { first, rest, .. } => match rest.framing() {
                Framing::Length(left) => Framing::Length(first.len() as u64 + left),
                _ => Framing::Chunked,
            },
        }
    }
}

/// The request head sent upstream: the client's headers (its key among
/// them) less the hop-by-hop ones, the upstream's Host, an identity
/// encoding (the recording reads the bytes), and the body's length (or,
/// a streamed body of no stated length, chunked).
fn upstream_head(req: &RequestHead, up: &Upstream, rest: &str, framing: Framing) -> Vec<u8> {
    let mut h = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\n",
        req.method,
        up.target(rest),
        up.host_header()
    )
    .into_bytes();
    for header in &req.headers {
        let skip = ["host", "content-length", "accept-encoding", "expect"]
            .iter()
            .any(|n| header.name.eq_ignore_ascii_case(n))
            || http::is_hop_by_hop(&header.name, &req.headers);
        if !skip {
            put_header(&mut h, &header.name, &header.value);
        }
    }
    h.extend_from_slice(b"Accept-Encoding: identity\r\n");
    match framing {
        Framing::Length(n) if n > 0 || matches!(req.method.as_str(), "POST" | "PUT" | "PATCH") => {
            h.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes());
        }
        Framing::Chunked => h.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        _ => {}
    }
    h.extend_from_slice(b"\r\n");
    h
}

fn put_header(h: &mut Vec<u8>, name: &str, value: &[u8]) {
    h.extend_from_slice(name.as_bytes());
    h.extend_from_slice(b": ");
    h.extend_from_slice(value);
    h.extend_from_slice(b"\r\n");
}

/// The response head toward the client: the upstream's status and headers,
/// with the framing chosen for this connection.
fn client_head(resp: &ResponseHead, framing: Framing, close: bool) -> Vec<u8> {
    let mut h = format!("HTTP/1.1 {} {}\r\n", resp.status, resp.reason).into_bytes();
    for header in &resp.headers {
        let length = header.name.eq_ignore_ascii_case("content-length");
        // A body-less answer (HEAD, 304) keeps the length it describes.
        if http::is_hop_by_hop(&header.name, &resp.headers) || (length && framing != Framing::Empty) {
            continue;
        }
        put_header(&mut h, &header.name, &header.value);
    }
    match framing {
        Framing::Length(n) => h.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes()),
        Framing::Chunked => h.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Close | Framing::Empty => {}
    }
    if close || framing == Framing::Close {
        h.extend_from_slice(b"Connection: close\r\n");
    }
    h.extend_from_slice(b"\r\n");
    h
}

/// A short reason for an upstream failure: TLS errors say what was wrong
/// with the certificate or the handshake, framing errors what was wrong
/// with the HTTP, and a read that timed out that it did (the OS's words
/// for it, "resource temporarily unavailable", say nothing).
fn reason(e: &io::Error, read_timeout: Duration) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut if e.get_ref().is_none() => format!(
            "timed out: nothing came for {} s (--upstream-timeout)",
            read_timeout.as_secs_f64()
        ),
        // Errors of loopscope's own making and rustls' say what they are.
        _ if e.get_ref().is_some() => e.to_string(),
        _ => loopscope_core::io_reason(e),
    }
}

/// Forwards one request and its answer; false when the client connection
/// must close (it went away, or the answer could not be delimited).
pub fn forward(
    ctx: &Context,
    client: &TcpStream,
    req: &RequestHead,
    mut body: Body<'_>,
    route: &Route,
    rest: &str,
) -> bool {
    let path = rest.split('?').next().unwrap_or_default();
    let protocol = Protocol::of_path(path).filter(|_| req.method == "POST");
    let upstream_url = route.upstream.url();
    let parsed = match &body {
        Body::Held(bytes) => protocol.and_then(|p| {
            let v: Value = serde_json::from_slice(bytes).ok().filter(Value::is_object)?;
            Some((p, p.parse_request(path, &v)))
        }),
        Body::Streamed { .. } => {
            if protocol.is_some() {
                eprintln!(
                    "loopscope: {}",
                    loopscope_core::sanitize::text(&format!(
                        "a request to {upstream_url}{path} with a body over {} was forwarded as it came, not recorded",
                        loopscope_core::formats::human_bytes(super::server::HELD_BODY)
                    ))
                );
            }
            None
        }
    };
    let mut exchange = parsed.as_ref().map(|(p, r)| ctx.recorder.begin(*p, r, &upstream_url));
    let head = upstream_head(req, &route.upstream, rest, body.framing());
    let (mut conn, resp, watcher) = match send(ctx, &route.upstream, &head, &mut body, client, req.version == 1) {
        Ok(sent) => sent,
        Err((e, gone)) => {
            let why = if gone {
                "the client went away before the answer came; the upstream request was closed".to_string()
            } else {
                let why = format!(
                    "API error: no answer from the upstream {upstream_url}: {}",
                    reason(&e, ctx.client.read_timeout)
                );
                eprintln!("loopscope: {}", loopscope_core::sanitize::text(&why));
                why
            };
            if let Some(x) = exchange.as_mut() {
                x.note(&why, None, &[]);
            }
            // The client gets what it would have got from the upstream: a
            // connection that ends without an answer.
            let _ = client.shutdown(Shutdown::Both);
            return false;
        }
    };
    let up_framing = http::response_framing(&resp, &req.method);
    let recording = recording_for(ctx, protocol, exchange.is_some(), &resp, path);
    let guarded = recording.is_guarded();
    let framing = match up_framing {
        Framing::Empty => Framing::Empty,
        _ if req.version == 0 => Framing::Close,
        Framing::Length(n) if !guarded => Framing::Length(n),
        _ => Framing::Chunked,
    };
    let client_close = req.version == 0 || http::has_token(&req.headers, "connection", "close");
    let mut out = client;
    watcher.answering();
    if out.write_all(&client_head(&resp, framing, client_close)).is_err() {
        note_client_gone(exchange.as_mut());
        return false;
    }
    let mut pass = Pass {
        ctx,
        resp: &resp,
        protocol,
        reader: BodyReader::new(up_framing),
        writer: BodyWriter::new(framing),
        recording,
        exchange: exchange.as_mut(),
        inflate: Inflater::new(&Coding::of(&resp.headers)),
        bytes: 0,
    };
    let ending = pass.run(&mut conn, client, || watcher.gone());
    let reader_done = pass.reader.is_done();
    drop(pass);
    drop(watcher);
    let _ = client.set_read_timeout(Some(super::server::KEEP_ALIVE));
    match ending {
        Ending::Complete => {
            let upstream_close = http::has_token(&resp.headers, "connection", "close") || up_framing == Framing::Close;
            if reader_done && !upstream_close {
                ctx.client.give_back(&route.upstream, conn);
            }
            !client_close && framing != Framing::Close
        }
        Ending::Guarded => {
            conn.shutdown();
            !client_close && framing != Framing::Close
        }
        Ending::Cut => {
            conn.shutdown();
            let _ = client.shutdown(Shutdown::Both);
            false
        }
        Ending::ClientGone => {
            conn.shutdown();
            note_client_gone(exchange.as_mut());
            false
        }
        Ending::UpstreamBroke(e) => {
            conn.shutdown();
            let why = format!(
                "API error: the upstream's answer broke off: {}",
                reason(&e, ctx.client.read_timeout)
            );
            eprintln!(
                "loopscope: {}",
                loopscope_core::sanitize::text(&format!("{upstream_url}: {why}"))
            );
            if let Some(x) = exchange.as_mut() {
                x.note(&why, None, &[]);
            }
            // The client sees the same: an answer cut short, then no connection.
            let _ = client.shutdown(Shutdown::Both);
            false
        }
    }
}

fn note_client_gone(x: Option<&mut Exchange<'_>>) {
    if let Some(x) = x {
        x.note(
            "the client closed the connection; the upstream request was closed",
            None,
            &[],
        );
    }
}

/// Sends the request on a pooled connection (once more on a new one if a
/// kept connection turned out stale), watching the client meanwhile. The
/// error says whether the client had gone.
fn send(
    ctx: &Context,
    up: &Upstream,
    head: &[u8],
    body: &mut Body<'_>,
    client: &TcpStream,
    http11: bool,
) -> Result<(Connection, ResponseHead, Watcher), (io::Error, bool)> {
    let body = match body {
        Body::Held(bytes) => bytes.as_slice(),
        Body::Streamed { first, rest, from } => {
            // Sent once, on a new connection: a streamed body cannot be sent again.
            let mut conn = ctx.client.open(up).map_err(|e| (e, false))?;
            pump(&mut conn, head, first, rest, from).map_err(|e| (e, false))?;
            let watcher = Watcher::start(client, conn.abort_handle(), http11);
            return match conn.response_head() {
                Ok(Some(resp)) => Ok((conn, resp, watcher)),
                _ if watcher.gone() => Err((io::Error::new(io::ErrorKind::ConnectionAborted, "client gone"), true)),
                Ok(None) => Err((
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the upstream closed the connection without an answer",
                    ),
                    false,
                )),
                Err(e) => Err((e, false)),
            };
        }
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let conn = if attempt == 1 {
            ctx.client.connect(up)
        } else {
            ctx.client.open(up)
        };
        let mut conn = conn.map_err(|e| (e, false))?;
        let watcher = Watcher::start(client, conn.abort_handle(), http11);
        let result = conn.send(head, body).and_then(|()| conn.response_head());
        match result {
            Ok(Some(resp)) => return Ok((conn, resp, watcher)),
            _ if watcher.gone() => {
                return Err((io::Error::new(io::ErrorKind::ConnectionAborted, "client gone"), true));
            }
            // A kept connection the upstream had closed meanwhile.
            Ok(None) | Err(_) if conn.reused && attempt == 1 => continue,
            Ok(None) => {
                return Err((
                    io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the upstream closed the connection without an answer",
                    ),
                    false,
                ))
            }
            Err(e) => return Err((e, false)),
        }
    }
}

/// Sends the head, the body's first bytes and the rest as it arrives from
/// the client (chunked when the client gave no length), up to
/// `server::MAX_BODY` in all.
fn pump(
    conn: &mut Connection,
    head: &[u8],
    first: &[u8],
    rest: &mut BodyReader,
    from: &mut BufReader<TcpStream>,
) -> io::Result<()> {
    let chunked = rest.framing() == Framing::Chunked;
    let mut writer = BodyWriter::new(if chunked { Framing::Chunked } else { Framing::Close });
    let mut to = conn.writer();
    to.write_all(head)?;
    writer.write(&mut to, first)?;
    let mut total = first.len();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = rest.read(from, &mut buf).map_err(|e| {
            io::Error::other(format!(
                "the client's request body broke off: {}",
                super::server::body_reason(&e)
            ))
        })?;
        if n == 0 {
            break;
        }
        total += n;
        if total > super::server::MAX_BODY {
            return Err(io::Error::other(super::server::too_large().1));
        }
        writer.write(&mut to, &buf[..n])?;
    }
    writer.finish(&mut to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::headers;

    #[test]
    fn the_upstream_gets_the_key_but_not_the_hop_by_hop_headers() {
        let req = RequestHead {
            method: "POST".into(),
            target: "/openai/chat/completions".into(),
            version: 1,
            headers: headers(&[
                ("Host", "127.0.0.1:9"),
                ("Authorization", "Bearer sk-secret"),
                ("Connection", "keep-alive, X-Private"),
                ("X-Private", "1"),
                ("Accept-Encoding", "gzip, br"),
                ("Content-Length", "2"),
                ("Transfer-Encoding", "chunked"),
            ]),
        };
        let up = Upstream::parse("https://api.openai.com/v1").unwrap();
        let head = String::from_utf8(upstream_head(&req, &up, "/chat/completions", Framing::Length(2))).unwrap();
        assert!(
            head.starts_with("POST /v1/chat/completions HTTP/1.1\r\nHost: api.openai.com\r\n"),
            "{head}"
        );
        assert!(head.contains("Authorization: Bearer sk-secret\r\n"));
        assert!(head.contains("Accept-Encoding: identity\r\n") && !head.contains("gzip"));
        assert!(!head.contains("X-Private") && !head.contains("chunked") && !head.contains("keep-alive"));
        assert!(head.ends_with("Content-Length: 2\r\n\r\n"));
    }

    #[test]
    fn the_client_gets_the_status_and_headers_in_its_own_framing() {
        let resp = ResponseHead {
            status: 429,
            reason: "Too Many Requests".into(),
            version: 1,
            headers: headers(&[("Retry-After", "3"), ("Content-Length", "10"), ("x-request-id", "r1")]),
        };
        let head = String::from_utf8(client_head(&resp, Framing::Chunked, false)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nx-request-id: r1\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
    }
}
