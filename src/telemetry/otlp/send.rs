//! The exporter's thread: batches taken from the queue, encoded, posted,
//! retried with backoff while the collector cannot take them, dropped
//! (counted, said once per outage) when it will not.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use prost::Message;

use super::proto::{
    ExportLogsServiceRequest, ExportResponse, ExportTraceServiceRequest, InstrumentationScope, LogRecord, Resource,
    ResourceLogs, ResourceSpans, ScopeLogs, ScopeSpans, Span,
};
use super::{batch_due, json, Item, Protocol, Shared, Stats};

/// Attempts per batch before it is dropped (waits 0.5, 1, 2, 4, 8 s between).
pub const ATTEMPTS: u32 = 6;
const FIRST_WAIT: Duration = Duration::from_millis(500);
/// The longest wait between attempts, `Retry-After` included.
const MAX_WAIT: Duration = Duration::from_secs(30);
/// The most of an answer read (a partial success's message).
const MAX_ANSWER: u64 = 64 * 1024;

/// What one request came to.
#[derive(Debug)]
enum Outcome {
    Sent(Option<(i64, String)>),
    /// Worth trying again: the collector is down, slow, busy or failing.
    Retry(String, Option<Duration>),
    /// It will not take this request as it is.
    Refused(Option<u16>, String),
}

/// Which signal a request carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
}

/// Whether the collector is answering, so a failure is said once.
#[derive(Default)]
struct Health {
    failing: Option<String>,
    /// Dropped when the outage began (to say how many it cost).
    dropped_before: u64,
}

pub(super) fn run(shared: &Shared) {
    // Redirects are followed within the receiver's origin only (post_within_origin).
    let agent = crate::http::endpoint::agent(
        shared.config.timeout,
        Some(concat!("loopscope/", env!("CARGO_PKG_VERSION"))),
    );
    let mut health = Health::default();
    while let Some(batch) = take(shared) {
        let (mut spans, mut logs) = (Vec::new(), Vec::new());
        for item in batch {
            match item {
                Item::Span(s) => spans.push(s),
                Item::Log(l) => logs.push(l),
            }
        }
        if !spans.is_empty() {
            let count = spans.len();
            let body = encode_spans(shared, spans);
            deliver(shared, &agent, &mut health, Signal::Traces, &body, count);
        }
        if !logs.is_empty() {
            let count = logs.len();
            if shared.logs_off.load(Ordering::Relaxed) {
                // Refused by the endpoint earlier: the spans carry the same.
                shared.settle(count, || {});
            } else {
                let body = encode_logs(shared, logs);
                deliver(shared, &agent, &mut health, Signal::Logs, &body, count);
            }
        }
    }
    if let Ok(mut st) = shared.state.lock() {
        st.done = true;
    }
    shared.finished.notify_all();
}

/// The next batch: up to `batch` items, once that many wait, or the
/// oldest has waited `delay`, or the command is ending. None: all sent
/// and the command ended.
fn take(shared: &Shared) -> Option<Vec<Item>> {
    let (batch, delay) = (shared.config.batch, shared.config.delay);
    let mut st = shared.state.lock().ok()?;
    loop {
        if st.queue.is_empty() {
            if st.closing {
                return None;
            }
            st = shared.wake.wait(st).ok()?;
            continue;
        }
        let due = batch_due(&st, delay).unwrap_or_else(Instant::now);
        let now = Instant::now();
        if st.queue.len() >= batch || now >= due || st.closing {
            let n = st.queue.len().min(batch);
            let items: Vec<Item> = st.queue.drain(..n).collect();
            // What is left has waited already: it goes next, at once.
            if st.queue.is_empty() {
                st.since = None;
            }
            st.in_flight += n;
            shared.room.notify_all();
            return Some(items);
        }
        st = shared.wake.wait_timeout(st, due - now).ok()?.0;
    }
}

fn scope() -> Option<InstrumentationScope> {
    Some(InstrumentationScope {
        name: "loopscope".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

fn encode_spans(shared: &Shared, spans: Vec<Span>) -> Vec<u8> {
    traces_body(&shared.config, spans)
}

/// One `ExportTraceServiceRequest` body of these spans, encoded as configured.
pub fn traces_body(config: &super::Config, spans: Vec<Span>) -> Vec<u8> {
    let req = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: config.resource.clone(),
            }),
            scope_spans: vec![ScopeSpans { scope: scope(), spans }],
        }],
    };
    match config.protocol {
        Protocol::Protobuf => req.encode_to_vec(),
        Protocol::Json => json::traces(&req),
    }
}

fn encode_logs(shared: &Shared, log_records: Vec<LogRecord>) -> Vec<u8> {
    let req = ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: shared.config.resource.clone(),
            }),
            scope_logs: vec![ScopeLogs {
                scope: scope(),
                log_records,
            }],
        }],
    };
    match shared.config.protocol {
        Protocol::Protobuf => req.encode_to_vec(),
        Protocol::Json => json::logs(&req),
    }
}

/// The wait before attempt `n + 1` (n ≥ 1): doubling from half a second,
/// with jitter so that many loopscopes do not retry in step.
pub fn backoff(n: u32) -> Duration {
    let base = FIRST_WAIT.saturating_mul(1 << (n - 1).min(6)).min(MAX_WAIT);
    let jitter = f64::from(super::spans::random_id::<1>()[0]) / 255.0;
    base.mul_f64(0.75 + jitter / 2.0).min(MAX_WAIT)
}

/// Sends one request, again while that is worth it, and counts the outcome.
fn deliver(shared: &Shared, agent: &ureq::Agent, health: &mut Health, signal: Signal, body: &[u8], count: usize) {
    let config = &shared.config;
    let url = match signal {
        Signal::Traces => config.traces_url.as_str(),
        Signal::Logs => config.logs_url.as_deref().unwrap_or_default(),
    };
    let (sent, what) = match signal {
        Signal::Traces => (&shared.stats.spans_sent, "spans"),
        Signal::Logs => (&shared.stats.events_sent, "evaluation events"),
    };
    let mut attempt = 1;
    loop {
        match post(agent, url, config.protocol, &config.headers, body, config.timeout) {
            Outcome::Sent(partial) => {
                shared.failing.store(false, Ordering::Relaxed);
                if let Some(was) = health.failing.take() {
                    let lost = shared.stats.dropped().saturating_sub(health.dropped_before);
                    let lost = match lost {
                        0 => String::new(),
                        n => format!("; {n} spans and events were dropped meanwhile"),
                    };
                    shared.note(format!(
                        "{} answers again (after: {was}){lost}",
                        loopscope_core::sanitize::line(url)
                    ));
                }
                let rejected = partial.as_ref().map_or(0, |p| p.0.clamp(0, count as i64) as usize);
                shared.settle(count, || {
                    Stats::add(sent, count - rejected);
                    Stats::add(&shared.stats.rejected, rejected);
                });
                if rejected > 0 {
                    let why = partial.map(|p| p.1).unwrap_or_default();
                    shared.warn(format!(
                        "{} rejected {rejected} of {count} {what}: {}",
                        loopscope_core::sanitize::line(url),
                        loopscope_core::sanitize::line(&why)
                    ));
                }
                return;
            }
            Outcome::Refused(status, why) => {
                if signal == Signal::Logs && matches!(status, Some(404 | 405 | 415 | 501)) {
                    // Phoenix and Langfuse take traces only; the evaluation
                    // is on each detection's span too.
                    if !shared.logs_off.swap(true, Ordering::Relaxed) {
                        shared.note(format!(
                            "{} answered {}: this endpoint takes no OTLP logs; the evaluations go as spans only",
                            loopscope_core::sanitize::line(url),
                            status.unwrap_or_default()
                        ));
                    }
                    shared.settle(count, || {});
                    return;
                }
                shared.settle(count, || Stats::add(&shared.stats.dropped_failed, count));
                shared.warn(format!(
                    "{} refused {count} {what}: {}{}",
                    loopscope_core::sanitize::line(url),
                    loopscope_core::sanitize::line(&why),
                    hint(status, config.protocol)
                ));
                return;
            }
            Outcome::Retry(why, after) => {
                shared.failing.store(true, Ordering::Relaxed);
                shared.room.notify_all();
                if health.failing.is_none() {
                    health.dropped_before = shared.stats.dropped();
                    shared.warn(format!(
                        "cannot send to {}: {}; retrying (up to {ATTEMPTS} attempts a batch), keeping up to {} spans and events meanwhile",
                        loopscope_core::sanitize::line(url),
                        loopscope_core::sanitize::line(&why),
                        config.queue
                    ));
                }
                health.failing = Some(why.clone());
                let wait = after.unwrap_or_else(|| backoff(attempt)).min(MAX_WAIT);
                if attempt >= ATTEMPTS || !pause(shared, wait) {
                    shared.settle(count, || Stats::add(&shared.stats.dropped_failed, count));
                    return;
                }
                attempt += 1;
                Stats::add(&shared.stats.retries, 1);
            }
        }
    }
}

/// Waits before another attempt; false when the command is ending and
/// the wait would go past its deadline (what is left is dropped then).
fn pause(shared: &Shared, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    let Ok(mut st) = shared.state.lock() else { return false };
    loop {
        if st.closing && st.deadline.is_none_or(|d| until > d) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        st = match shared.wake.wait_timeout(st, until - now) {
            Ok((st, _)) => st,
            Err(_) => return false,
        };
    }
}

/// What the user can do about a refusal.
fn hint(status: Option<u16>, protocol: Protocol) -> &'static str {
    match (status, protocol) {
        (Some(401 | 403), _) => " (check the credentials in OTEL_EXPORTER_OTLP_HEADERS)",
        (Some(415), Protocol::Json) => " (this endpoint does not take http/json: use http/protobuf)",
        (Some(404), _) => " (is this the OTLP/HTTP endpoint? loopscope adds /v1/traces to a base URL)",
        _ => "",
    }
}

fn post(
    agent: &ureq::Agent,
    url: &str,
    protocol: Protocol,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> Outcome {
    let mut all = vec![("Content-Type", protocol.content_type())];
    all.extend(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut resp = match crate::http::endpoint::post_within_origin(agent, url, &all, body) {
        Ok(r) => r,
        Err(crate::http::endpoint::PostError::Redirect(why)) => return Outcome::Refused(None, why),
        Err(crate::http::endpoint::PostError::Request(ureq::Error::Timeout(_))) => {
            // ureq's words ("timeout: global") say less than this.
            return Outcome::Retry(
                format!(
                    "timed out: no answer within {} s (OTEL_EXPORTER_OTLP_TIMEOUT)",
                    timeout.as_secs_f64()
                ),
                None,
            );
        }
        Err(crate::http::endpoint::PostError::Request(e)) => {
            return match e {
                ureq::Error::Io(_)
                | ureq::Error::Timeout(_)
                | ureq::Error::HostNotFound
                | ureq::Error::ConnectionFailed
                | ureq::Error::Protocol(_)
                | ureq::Error::BodyStalled => Outcome::Retry(e.to_string(), None),
                other => Outcome::Refused(None, other.to_string()),
            }
        }
    };
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let answer = resp
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .unwrap_or_default();
    match status {
        200..=299 => Outcome::Sent(partial_success(protocol, &answer)),
        408 | 429 | 500..=599 => Outcome::Retry(format!("HTTP {status}"), retry_after),
        _ => {
            let text = String::from_utf8_lossy(&answer);
            let excerpt: String = text.trim().chars().take(200).collect();
            Outcome::Refused(Some(status), format!("HTTP {status} {excerpt}").trim().to_string())
        }
    }
}

fn partial_success(protocol: Protocol, answer: &[u8]) -> Option<(i64, String)> {
    let partial = match protocol {
        Protocol::Protobuf => ExportResponse::decode(answer)
            .ok()?
            .partial_success
            .map(|p| (p.rejected, p.error_message)),
        // Some receivers answer JSON whatever was sent.
        Protocol::Json => json::partial_success(answer),
    };
    partial.filter(|(rejected, message)| *rejected > 0 || !message.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        for n in 1..12 {
            let b = backoff(n);
            let base = FIRST_WAIT.saturating_mul(1 << (n - 1).min(6)).min(MAX_WAIT);
            assert!(
                b >= base.mul_f64(0.75) && b <= base.mul_f64(1.25).min(MAX_WAIT),
                "{n}: {b:?}"
            );
        }
    }
}
