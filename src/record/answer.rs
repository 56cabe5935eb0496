//! An answer on its way from the upstream to the client: passed on as it
//! arrives (a guarded stream payload by payload, see [`super::guarded`]),
//! recorded into its conversation, and an error's body kept for a note.

use std::io;
use std::net::TcpStream;
use std::time::Instant;

use serde_json::{json, Value};

use super::conversations::Exchange;
use super::guard::Stop;
use super::guarded::Guarded;
use super::http::{self, BodyReader, BodyWriter, ResponseHead};
use super::protocol::{Protocol, Shape};
use super::upstream::Connection;
use super::Context;
use crate::formats::detect::Kind;
use crate::formats::{Decoder, Item};

/// The most of an error body or a whole answer kept to record it.
const MAX_ERROR_BODY: usize = 1 << 20;

/// How an answer is recorded.
pub(super) enum Recording {
    Off,
    /// A stream: decoded as it passes; guarded if `guard` is set.
    Stream {
        decoder: Box<dyn Decoder>,
        guard: Option<Box<Guarded>>,
    },
    /// A whole JSON answer, decoded at its end.
    Whole(Vec<u8>),
    /// An error status: its body becomes a note.
    Error(Vec<u8>),
}

impl Recording {
    pub(super) fn is_guarded(&self) -> bool {
        matches!(self, Recording::Stream { guard: Some(_), .. })
    }
}

/// How the passing of an answer ended.
pub(super) enum Ending {
    /// The upstream's answer ended; the client has all of it.
    Complete,
    /// The guard ended it.
    Guarded,
    ClientGone,
    UpstreamBroke(io::Error),
}

/// How the answer is recorded.
pub(super) fn recording_for(
    ctx: &Context,
    protocol: Option<Protocol>,
    recorded: bool,
    resp: &ResponseHead,
    path: &str,
) -> Recording {
    let Some(protocol) = protocol.filter(|_| recorded) else {
        return Recording::Off;
    };
    if resp.status >= 400 {
        return Recording::Error(Vec::new());
    }
    if !(200..300).contains(&resp.status) {
        return Recording::Off;
    }
    let content_type = http::header(&resp.headers, "content-type")
        .unwrap_or_default()
        .to_ascii_lowercase();
    let json = content_type.contains("json") && !content_type.contains("ndjson") && !content_type.contains("jsonl");
    let (kind, shape) = if json && protocol == Protocol::Gemini && path.ends_with(":streamGenerateContent") {
        (Kind::GeminiArray, Shape::Array)
    } else if json {
        return Recording::Whole(Vec::new());
    } else if content_type.contains("event-stream") {
        (protocol.kind(), Shape::Sse)
    } else {
        (protocol.kind(), Shape::Lines)
    };
    let guard = ctx
        .recorder
        .guard
        .as_ref()
        .map(|_| Box::new(Guarded::new(protocol, shape)));
    Recording::Stream {
        decoder: kind.build(),
        guard,
    }
}

/// An answer on its way from the upstream to the client.
pub(super) struct Pass<'a, 'b> {
    pub ctx: &'a Context,
    pub resp: &'a ResponseHead,
    pub protocol: Option<Protocol>,
    pub reader: BodyReader,
    pub writer: BodyWriter,
    pub recording: Recording,
    pub exchange: Option<&'a mut Exchange<'b>>,
}

/// Writes decoded events into the conversation.
fn record(exchange: &mut Option<&mut Exchange<'_>>, items: &mut Vec<Item>, at: Instant) {
    match exchange.as_mut() {
        Some(x) => {
            x.items(items, at);
        }
        None => items.clear(),
    }
}

impl Pass<'_, '_> {
    /// Passes the answer on to its end (`gone`: the client has left).
    pub(super) fn run(&mut self, conn: &mut Connection, client: &TcpStream, gone: impl Fn() -> bool) -> Ending {
        let mut out = client;
        let mut buf = vec![0u8; 64 * 1024];
        let mut items = Vec::new();
        loop {
            let n = match conn.read_body(&mut self.reader, &mut buf) {
                Ok(n) => n,
                Err(_) if gone() => return Ending::ClientGone,
                Err(e) => {
                    // What was held back is passed on: the client sees the break where it was.
                    let held = self.take_held(&mut items);
                    record(&mut self.exchange, &mut items, Instant::now());
                    let _ = self.writer.write(&mut out, &held);
                    return Ending::UpstreamBroke(e);
                }
            };
            let at = Instant::now();
            let data = &buf[..n];
            let last = n == 0 || self.reader.is_done();
            let mut tail = Vec::new();
            if self.recording.is_guarded() {
                let Recording::Stream {
                    decoder,
                    guard: Some(g),
                } = &mut self.recording
                else {
                    unreachable!("checked above");
                };
                let mut passed = g.take(data, decoder.as_mut(), &mut self.exchange, at);
                if let Some(stop) = passed.stop {
                    return self.stop(&mut out, passed.ready, &stop);
                }
                self.unguard_if_overlong(&mut passed.ready, &mut items);
                if !last {
                    if self.writer.write(&mut out, &passed.ready).is_err() {
                        return Ending::ClientGone;
                    }
                    continue;
                }
                tail = passed.ready;
            } else {
                // Passed on first, recorded after: the client never waits for the recording.
                if !last && self.writer.write(&mut out, data).is_err() {
                    return Ending::ClientGone;
                }
                self.keep(data, at, &mut items);
                if last {
                    tail = data.to_vec();
                }
            }
            if last {
                // The conversation is recorded and free before the client has
                // the answer's last byte: its next request may come at once.
                tail.extend(self.take_held(&mut items));
                record(&mut self.exchange, &mut items, Instant::now());
                self.complete(&mut items);
                if let Some(x) = self.exchange.as_mut() {
                    x.release();
                }
                // A client that left after the last byte has the whole answer.
                let _ = self
                    .writer
                    .write(&mut out, &tail)
                    .and_then(|()| self.writer.finish(&mut out));
                return Ending::Complete;
            }
        }
    }

    /// Records a piece of an answer that is not guarded.
    fn keep(&mut self, data: &[u8], at: Instant, items: &mut Vec<Item>) {
        match &mut self.recording {
            Recording::Off => {}
            Recording::Stream { decoder, .. } => {
                decoder.feed(data, items);
                record(&mut self.exchange, items, at);
            }
            Recording::Whole(b) | Recording::Error(b) => {
                let limit = crate::formats::max_record().max(MAX_ERROR_BODY);
                if b.len() + data.len() <= limit {
                    b.extend_from_slice(data);
                }
            }
        }
    }

    /// A stream holding more than a record's length (no payload boundary:
    /// not the API's framing after all) is passed on unguarded from here,
    /// so nothing is held without bound.
    fn unguard_if_overlong(&mut self, ready: &mut Vec<u8>, items: &mut Vec<Item>) {
        if !matches!(&self.recording, Recording::Stream { guard: Some(g), .. } if g.overlong()) {
            return;
        }
        ready.extend(self.take_held(items));
        record(&mut self.exchange, items, Instant::now());
        if let Recording::Stream { guard, .. } = &mut self.recording {
            *guard = None;
        }
    }

    /// The guard stopped the answer: the session is told, then the client
    /// gets what came before and the API's own end of the answer, with
    /// loopscope's words last.
    fn stop(&mut self, out: &mut &TcpStream, ready: Vec<u8>, stop: &Stop) -> Ending {
        let Recording::Stream { guard: Some(g), .. } = &mut self.recording else {
            return Ending::Complete;
        };
        let end = g.end(stop);
        if let Some(x) = self.exchange.as_mut() {
            x.stopped(stop);
        }
        let wrote = self
            .writer
            .write(out, &ready)
            .and_then(|()| self.writer.write(out, &end))
            .and_then(|()| self.writer.finish(out));
        match wrote {
            Ok(()) => Ending::Guarded,
            Err(_) => Ending::ClientGone,
        }
    }

    /// What a guarded stream held back, decoded.
    fn take_held(&mut self, items: &mut Vec<Item>) -> Vec<u8> {
        match &mut self.recording {
            Recording::Stream {
                decoder,
                guard: Some(g),
            } => g.release(decoder.as_mut(), items),
            _ => Vec::new(),
        }
    }

    /// The answer is all in: the stream's decoder finished, a whole answer
    /// or an error recorded; detections this late are only said.
    fn complete(&mut self, items: &mut Vec<Item>) {
        let (Some(x), Some(protocol)) = (self.exchange.as_mut(), self.protocol) else {
            return;
        };
        let now = Instant::now();
        let detections = match std::mem::replace(&mut self.recording, Recording::Off) {
            Recording::Stream { mut decoder, .. } => {
                decoder.finish(items);
                x.items(items, now)
            }
            Recording::Whole(body) => match serde_json::from_slice::<Value>(&body) {
                Ok(value) => {
                    let mut decoder = protocol.kind().build();
                    for payload in protocol.whole_payloads(&value) {
                        decoder.feed(format!("data: {payload}\n\n").as_bytes(), items);
                    }
                    decoder.finish(items);
                    x.items(items, now)
                }
                Err(_) => x.note("the answer was not JSON loopscope could read; not recorded", None, &[]),
            },
            Recording::Error(body) => x.note(
                &error_note(self.resp, &body),
                None,
                &[("status", json!(self.resp.status))],
            ),
            Recording::Off => Vec::new(),
        };
        if let Some(g) = &self.ctx.recorder.guard {
            for d in &detections {
                g.announce(&x.shown(), d, None);
            }
        }
    }
}

/// `API error (HTTP 429 Too Many Requests): <the API's message>`.
fn error_note(resp: &ResponseHead, body: &[u8]) -> String {
    let value: Option<Value> = serde_json::from_slice(body).ok();
    let message = value.as_ref().and_then(|v| {
        let e = v.get("error").unwrap_or(v);
        e.get("message")
            .and_then(Value::as_str)
            .or_else(|| e.as_str())
            .map(str::to_string)
    });
    let message = message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let mut cut: String = text.chars().take(300).collect();
        if cut.len() < text.len() {
            cut.push('…');
        }
        cut
    });
    let status = format!("HTTP {} {}", resp.status, resp.reason);
    if message.is_empty() {
        format!("API error ({})", status.trim())
    } else {
        format!("API error ({}): {message}", status.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::http::headers;

    #[test]
    fn an_api_error_is_noted_with_the_apis_own_message() {
        let resp = ResponseHead {
            status: 429,
            reason: "Too Many Requests".into(),
            version: 1,
            headers: headers(&[("Retry-After", "3")]),
        };
        let body = br#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests"}}"#;
        assert_eq!(
            error_note(&resp, body),
            "API error (HTTP 429 Too Many Requests): Rate limit reached for gpt-4o"
        );
        assert_eq!(
            error_note(&resp, b"upstream connect error"),
            "API error (HTTP 429 Too Many Requests): upstream connect error"
        );
    }
}
