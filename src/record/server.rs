//! The proxy's server side: a hand-written HTTP/1.1 server on std threads,
//! one thread per client connection (agents keep a few open; 64 streams
//! at once are 64 threads), keep-alive, and what it refuses: requests that
//! would make it an open proxy, hosts other than its own (DNS rebinding),
//! heads and bodies past their limits.

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::exchange::Body;
use super::Context;
use crate::http::listener::{accept, read_head_in_time, Limits, Served, Slot};
use crate::http::respond::respond;
use crate::http::{self, BodyReader, Framing, HeadError, RequestHead};

/// How long an idle client connection is kept open between requests.
pub const KEEP_ALIVE: Duration = Duration::from_secs(120);
/// Client connections served at once, and from one address; past that
/// the longest-waiting idle one is closed, or (all busy) the newcomer is
/// answered 503. Half the slots for one address: all agents here come
/// from 127.0.0.1, and a stray loop of connections cannot take them all.
const LIMITS: Limits = Limits {
    max: 1024,
    per_address: 512,
};
/// The longest wait for the next piece of a request body (nginx's
/// `client_body_timeout` is 60 s).
const BODY_IDLE: Duration = Duration::from_secs(60);
/// The largest request body forwarded (a long conversation with images).
pub(crate) const MAX_BODY: usize = 256 << 20;
/// The most of a request body held to be read by the recorder; a longer
/// one is forwarded as it arrives, not recorded (its conversation would
/// need the whole JSON), so eight clients sending 250 MB cost 8 × this.
pub(crate) const HELD_BODY: usize = 16 << 20;

/// Accepts connections until the process ends.
pub fn serve(listener: TcpListener, ctx: Arc<Context>) {
    accept(listener, "record-client", LIMITS, move |stream| match stream {
        Served::One(stream, slot) => connection(stream, slot, &ctx),
        Served::TooMany(stream, why) => {
            let _ = local(stream, 503, &format!("loopscope record: {why}"), true);
        }
    });
}

/// Serves one client connection, request after request.
fn connection(stream: &TcpStream, slot: &Slot, ctx: &Context) {
    let _ = stream.set_nodelay(true);
    // A client that stops reading its answer for this long is gone.
    let _ = stream.set_write_timeout(Some(KEEP_ALIVE));
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::with_capacity(64 * 1024, read_half);
    loop {
        let head = match read_head_in_time(&mut reader, slot, KEEP_ALIVE) {
            Ok(Some(head)) => head,
            Ok(None) | Err(HeadError::Io(_)) => return,
            Err(HeadError::Bad(status, why)) => {
                let _ = local(stream, status, &why, true);
                return;
            }
        };
        if let Some((status, why)) = refusal(ctx, &head) {
            let _ = local(stream, status, &why, true);
            return;
        }
        let _ = stream.set_read_timeout(Some(BODY_IDLE));
        let (held, rest) = match read_body(stream, &mut reader, &head) {
            Ok(body) => body,
            Err((status, why)) => {
                let _ = local(stream, status, &why, true);
                return;
            }
        };
        let Some((route, rest_of_target)) = ctx.route(&head.target) else {
            let known: Vec<String> = ctx.routes.iter().map(|r| format!("{}/", r.prefix)).collect();
            let why = format!(
                "loopscope record has no upstream for {}; it forwards {}",
                head.target.split('?').next().unwrap_or_default(),
                known.join(", ")
            );
            // A body not read to its end leaves nothing to read the next request from.
            if local(stream, 404, &why, rest.is_some()).is_err() || rest.is_some() {
                return;
            }
            continue;
        };
        let body = match rest {
            None => Body::Held(held),
            Some(rest) => Body::Streamed {
                first: held,
                rest,
                from: &mut reader,
            },
        };
        if !super::exchange::forward(ctx, stream, &head, body, route, rest_of_target) {
            return;
        }
        if head.version == 0 || http::has_token(&head.headers, "connection", "close") {
            return;
        }
    }
}

/// Why a request is refused before anything is forwarded.
fn refusal(ctx: &Context, head: &RequestHead) -> Option<(u16, String)> {
    if head.method.eq_ignore_ascii_case("CONNECT") || !head.target.starts_with('/') {
        return Some((
            400,
            "loopscope record forwards to its configured upstreams only; it is not an open proxy".into(),
        ));
    }
    if !ctx.hosts.admits(http::header(&head.headers, "host")) {
        return Some((403, ctx.hosts.refusal("loopscope record", "--allow-remote")));
    }
    None
}

/// The request's body: whole when it is at most [`HELD_BODY`] long (the
/// recorder reads it), else its first [`HELD_BODY`] bytes and the reader
/// of the rest, which is forwarded as it arrives (see `exchange::Body`).
fn read_body(
    stream: &TcpStream,
    reader: &mut BufReader<TcpStream>,
    head: &RequestHead,
) -> Result<(Vec<u8>, Option<BodyReader>), (u16, String)> {
    let framing = http::request_framing(&head.headers).map_err(|why| (400, format!("a request with {why}")))?;
    if let Framing::Length(n) = framing {
        if n > MAX_BODY as u64 {
            return Err(too_large());
        }
    }
    if http::header(&head.headers, "expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        let mut out = stream;
        out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .map_err(|e| (400, e.to_string()))?;
    }
    let mut body = BodyReader::new(framing);
    let mut held = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while held.len() < HELD_BODY && !body.is_done() {
        let want = buf.len().min(HELD_BODY - held.len());
        let n = body
            .read(reader, &mut buf[..want])
            .map_err(|e| (400, format!("the request body could not be read: {}", body_reason(&e))))?;
        if n == 0 {
            break;
        }
        held.extend_from_slice(&buf[..n]);
    }
    if body.is_done() {
        return Ok((held, None));
    }
    Ok((held, Some(body)))
}

/// The 413 of a body over [`MAX_BODY`].
pub(crate) fn too_large() -> (u16, String) {
    (
        413,
        format!(
            "loopscope record takes request bodies up to {}",
            loopscope_core::formats::human_bytes(MAX_BODY)
        ),
    )
}

/// Why a request body could not be read: the framing's own words ("bad
/// chunked coding: a chunk size that is not hexadecimal"), or that the
/// client went quiet.
pub(crate) fn body_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            format!("timed out: nothing came for {} s", BODY_IDLE.as_secs())
        }
        _ if e.get_ref().is_some() => e.to_string(),
        _ => loopscope_core::io_reason(e),
    }
}

/// An answer of loopscope's own, in the JSON error shape the APIs use.
fn local(stream: &TcpStream, status: u16, message: &str, close: bool) -> io::Result<()> {
    let body = json!({"error": {"message": message, "type": "loopscope_record"}}).to_string();
    respond(stream, status, "application/json", body.as_bytes(), close)
}
