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
use super::protocol::{Protocol, Shape};
use super::Context;
use crate::http::inflate::{Coding, Inflater};
use crate::http::upstream::Connection;
use crate::http::{self, BodyReader, BodyWriter, ResponseHead};
use loopscope_core::formats::detect::Kind;
use loopscope_core::formats::{Decoder, Item};

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
    /// Passed on, not recorded: why (a coding loopscope cannot decode,
    /// a compressed body that is not what its coding says).
    Unreadable(String),
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
    /// The guard fired on a compressed answer, which it cannot end in the
    /// API's terms: both connections are closed where it was.
    Cut,
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
    if let Coding::Unknown(name) = Coding::of(&resp.headers) {
        return Recording::Unreadable(format!(
            "the answer (HTTP {}) came {name}-encoded, which loopscope cannot decode: passed on unchanged, not recorded",
            resp.status
        ));
    }
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
    /// A compressed answer's decoder: the client gets the bytes as they
    /// came, the recorder and the guard what they decode to.
    pub inflate: Option<Inflater>,
    /// The answer's body bytes so far, as they came.
    pub bytes: u64,
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
            let raw = &buf[..n];
            self.bytes += n as u64;
            let last = n == 0 || self.reader.is_done();
            let plain = self.plain(raw, last);
            let compressed = self.inflate.is_some();
            let mut tail = Vec::new();
            if self.recording.is_guarded() {
                let Recording::Stream {
                    decoder,
                    guard: Some(g),
                } = &mut self.recording
                else {
                    unreachable!("checked above");
                };
                let mut passed = g.take(&plain, decoder.as_mut(), &mut self.exchange, at);
                if let Some(stop) = passed.stop {
                    if compressed {
                        return self.cut(&stop);
                    }
                    return self.stop(&mut out, passed.ready, &stop);
                }
                self.unguard_if_overlong(&mut passed.ready, &mut items);
                // A compressed answer is judged decoded but passed on as it came.
                let to_client = if compressed { raw.to_vec() } else { passed.ready };
                if !last {
                    if self.writer.write(&mut out, &to_client).is_err() {
                        return Ending::ClientGone;
                    }
                    continue;
                }
                tail = to_client;
            } else {
                // Passed on first, recorded after: the client never waits for the recording.
                if !last && self.writer.write(&mut out, raw).is_err() {
                    return Ending::ClientGone;
                }
                self.keep(&plain, at, &mut items);
                if last {
                    tail = raw.to_vec();
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

    /// What the recorder reads of these bytes: themselves, or (a compressed
    /// answer) what they decode to; a body that does not decode is passed
    /// on and noted, and nothing more of it is recorded.
    fn plain<'r>(&mut self, raw: &'r [u8], last: bool) -> std::borrow::Cow<'r, [u8]> {
        let Some(inflate) = self.inflate.as_mut() else {
            return std::borrow::Cow::Borrowed(raw);
        };
        if matches!(self.recording, Recording::Unreadable(_) | Recording::Off) {
            return std::borrow::Cow::Owned(Vec::new());
        }
        let decoded = inflate.feed(raw).and_then(|mut plain| {
            if last {
                plain.extend(inflate.finish()?);
            }
            Ok(plain)
        });
        match decoded {
            Ok(plain) => std::borrow::Cow::Owned(plain),
            Err(why) => {
                let name = inflate.name();
                self.recording = Recording::Unreadable(format!(
                    "the answer came {name}-encoded but is {why}: passed on unchanged, not recorded"
                ));
                std::borrow::Cow::Owned(Vec::new())
            }
        }
    }

    /// The guard fired on a compressed answer: the session is told, and
    /// the answer cut off after what the client has (loopscope cannot
    /// write the API's end into the encoder's stream).
    fn cut(&mut self, stop: &Stop) -> Ending {
        if let Some(x) = self.exchange.as_mut() {
            x.note(
                "the answer came compressed (Content-Encoding), so the guard cut it off here instead of ending it in the API's terms",
                None,
                &[],
            );
            x.stopped(stop);
        }
        Ending::Cut
    }

    /// Records a piece of an answer that is not guarded.
    fn keep(&mut self, data: &[u8], at: Instant, items: &mut Vec<Item>) {
        match &mut self.recording {
            Recording::Off | Recording::Unreadable(_) => {}
            Recording::Stream { decoder, .. } => {
                decoder.feed(data, items);
                record(&mut self.exchange, items, at);
            }
            Recording::Whole(b) | Recording::Error(b) => {
                let limit = loopscope_core::formats::DEFAULT_MAX_RECORD.max(MAX_ERROR_BODY);
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
        let held = match &mut self.recording {
            Recording::Stream {
                decoder,
                guard: Some(g),
            } => g.release(decoder.as_mut(), items),
            _ => Vec::new(),
        };
        // A compressed answer's held bytes are decoded ones: the client had the real ones.
        if self.inflate.is_some() {
            return Vec::new();
        }
        held
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
                let found = x.items(items, now);
                if x.answer_events == 0 && self.bytes > 0 {
                    // Something came that is not this API's stream: say so,
                    // or the session would just show no answer.
                    let content_type = http::header(&self.resp.headers, "content-type").unwrap_or("no type");
                    x.note(
                        &format!(
                            "the answer ({} bytes of {}) held nothing loopscope could read as this API's stream: passed on unchanged, not recorded",
                            self.bytes,
                            loopscope_core::sanitize::line(content_type)
                        ),
                        None,
                        &[("status", json!(self.resp.status))],
                    );
                }
                found
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
            Recording::Unreadable(why) => x.note(&why, None, &[("status", json!(self.resp.status))]),
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
    use crate::http::headers;

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
