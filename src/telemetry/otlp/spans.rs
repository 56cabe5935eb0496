//! Detections as OpenTelemetry, after the GenAI semantic conventions
//! (`shared/design/formats-3.md` §3(b)–(c)): each detection is a
//! `gen_ai.evaluation.result` — an event (log record) parented to the span
//! it judges, and a span of its own that every trace viewer shows (Phoenix
//! and Langfuse read spans only). An event that came from an OTel span
//! (the `otel` importer keeps `trace_id` and `span_id`) is judged on the
//! agent's own trace; any other session gets a trace of its own: an
//! `invoke_agent` span named after the session, the detections its children.

use std::time::{SystemTime, UNIX_EPOCH};

use super::proto::{KeyValue, LogRecord, Span, SpanEvent, Status, Value};
use loopscope_core::detect::Detection;
use loopscope_core::event::{Channel, Event, Ts};

/// `SpanKind` INTERNAL.
const INTERNAL: i32 = 1;
/// `StatusCode` ERROR: a loop is what went wrong in the agent's run.
const ERROR: i32 = 2;
/// `SeverityNumber` WARN.
const WARN: i32 = 13;
/// The longest attribute text sent (chars); a longer one is cut with "…".
const MAX_TEXT: usize = 4096;
/// The longest repeated unit sent (the evidence, not the point).
const MAX_REPEATED: usize = 1000;

/// A span or an event (log record) to send.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Span(Span),
    Log(LogRecord),
}

/// The session a detection belongs to, as its attributes name it.
#[derive(Clone, Debug, Default)]
pub struct SessionInfo {
    /// How the session is shown (its path, `PARENT ▸ agent-ID`).
    pub name: String,
    /// A stable id: the file's path (`db#id` for a stream in a store).
    pub id: String,
    /// The agent whose folder it is in, else its format.
    pub agent: String,
    /// The importer that read it.
    pub format: String,
    /// The detector profile.
    pub profile: String,
}

/// Trace and span ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
}

impl SpanContext {
    /// The span an event came from: its `trace_id` and `span_id` fields,
    /// hex as OTLP/JSON writes them (all-zero ids are invalid).
    pub fn of_event(e: &Event) -> Option<SpanContext> {
        let field = |k: &str| e.extra.get(k).and_then(serde_json::Value::as_str);
        let trace_id = hex_id::<16>(field("trace_id")?)?;
        let span_id = hex_id::<8>(field("span_id")?)?;
        Some(SpanContext { trace_id, span_id })
    }
}

fn hex_id<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.trim();
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    (out != [0u8; N]).then_some(out)
}

/// Fresh random ids: SipHash keyed from the OS's randomness (std's
/// `RandomState`) over a counter and the time. Unique ids, not secrets.
pub fn random_id<const N: usize>() -> [u8; N] {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut out = [0u8; N];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(i);
        h.write_u128(now_ns() as u128);
        let bytes = h.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    if out == [0u8; N] {
        out[0] = 1;
    }
    out
}

/// Now, in nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// An event's clock time in nanoseconds (relative `ts` seconds are no clock).
pub fn event_ns(e: &Event) -> Option<u64> {
    match &e.ts {
        Some(Ts::Clock { unix, .. }) if unix.is_finite() && *unix > 0.0 => Some((unix * 1e9) as u64),
        _ => None,
    }
}

/// Text cut to `max` chars.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The `gen_ai.evaluation.*` attributes of a detection.
fn evaluation(d: &Detection) -> Vec<KeyValue> {
    vec![
        KeyValue::string("gen_ai.evaluation.name", format!("loopscope.{}", d.detector)),
        // A detector that fired is sure: its rule held.
        KeyValue::double("gen_ai.evaluation.score.value", 1.0),
        KeyValue::string("gen_ai.evaluation.score.label", "loop"),
        KeyValue::string("gen_ai.evaluation.explanation", cut(&d.reason, MAX_TEXT)),
    ]
}

/// How many copies of the repeated unit the evidence holds: `repeats` where
/// the detector counts them, else a cycle's matching elements over its period.
fn copies(d: &Detection) -> Option<usize> {
    d.repeats.or_else(|| match (d.matches, d.period) {
        (Some(m), Some(p)) if p > 0 => Some(m / p + 1),
        _ => None,
    })
}

/// The evidence as a half-open range: chars of the channel (text) or
/// event indices (tools and turns).
fn evidence_range(d: &Detection) -> Option<(&'static str, usize, usize)> {
    let text = matches!(d.channel, Channel::Reasoning | Channel::Content);
    if text {
        let start = d.spans.iter().map(|s| s.start).min()?;
        let end = d.spans.iter().map(|s| s.end).max()?;
        Some(("char", d.onset.unwrap_or(start).min(start), end))
    } else {
        let first = d.events.iter().min()?;
        let last = d.events.iter().max()?;
        Some(("event", *first, last + 1))
    }
}

/// loopscope's own attributes of a detection: what fired, where, on what.
fn detection_attributes(d: &Detection, s: &SessionInfo, profile: &str) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::string("loopscope.detector", d.detector),
        KeyValue::string("loopscope.profile", profile),
        KeyValue::int("loopscope.event", d.event),
        KeyValue::string("loopscope.channel", d.channel.as_str()),
    ];
    let numbers = [
        ("loopscope.onset", d.onset),
        ("loopscope.period", d.period),
        ("loopscope.copies", copies(d)),
        ("loopscope.matches", d.matches),
        ("loopscope.repeats", d.repeats),
        ("loopscope.threshold", d.threshold),
        ("loopscope.at_char", d.at_char),
        ("loopscope.checkpoint", d.checkpoint),
    ];
    a.extend(numbers.into_iter().filter_map(|(k, v)| Some(KeyValue::int(k, v?))));
    if let Some((unit, start, end)) = evidence_range(d) {
        a.push(KeyValue::string("loopscope.evidence.unit", unit));
        a.push(KeyValue::int("loopscope.evidence.start", start));
        a.push(KeyValue::int("loopscope.evidence.end", end));
    }
    if let Some(r) = &d.repeated {
        a.push(KeyValue::string("loopscope.repeated", cut(r, MAX_REPEATED)));
    }
    a.extend(session_attributes(s));
    a
}

fn session_attributes(s: &SessionInfo) -> Vec<KeyValue> {
    vec![
        KeyValue::string("loopscope.session", cut(&s.name, MAX_TEXT)),
        KeyValue::string("loopscope.agent", s.agent.as_str()),
        KeyValue::string("loopscope.format", s.format.as_str()),
        // Langfuse and Phoenix group traces into sessions by this.
        KeyValue::string("session.id", cut(&s.id, MAX_TEXT)),
    ]
}

/// The span of one detection, a child of `parent`: the evaluation and
/// loopscope's attributes, a WARNING level Langfuse shows, the reason as
/// its status message, and the evaluation as a span event too.
pub fn detection_span(d: &Detection, s: &SessionInfo, profile: &str, parent: SpanContext, at: u64) -> Span {
    let eval = evaluation(d);
    let mut attributes = eval.clone();
    attributes.extend(detection_attributes(d, s, profile));
    attributes.extend([
        // Phoenix's and Langfuse's kind for a judgement of a run.
        KeyValue::string("openinference.span.kind", "EVALUATOR"),
        KeyValue::string("langfuse.observation.level", "WARNING"),
        KeyValue::string("langfuse.observation.status_message", cut(&d.reason, MAX_TEXT)),
        // What the viewers show as the span's output (and input).
        KeyValue::string("output.value", cut(&d.reason, MAX_TEXT)),
    ]);
    if let Some(r) = &d.repeated {
        attributes.push(KeyValue::string("input.value", cut(r, MAX_REPEATED)));
    }
    Span {
        trace_id: parent.trace_id.to_vec(),
        span_id: random_id::<8>().to_vec(),
        parent_span_id: parent.span_id.to_vec(),
        name: format!("loopscope.{}", d.detector),
        kind: INTERNAL,
        start_time_unix_nano: at,
        end_time_unix_nano: at,
        attributes,
        events: vec![SpanEvent {
            time_unix_nano: at,
            name: "gen_ai.evaluation.result".into(),
            attributes: eval,
        }],
        status: Some(Status {
            message: cut(&d.reason, MAX_TEXT),
            code: ERROR,
        }),
    }
}

/// The `gen_ai.evaluation.result` event of one detection, parented to the
/// span it judges.
pub fn evaluation_event(d: &Detection, s: &SessionInfo, profile: &str, judged: SpanContext, at: u64) -> LogRecord {
    let mut attributes = evaluation(d);
    attributes.extend(detection_attributes(d, s, profile));
    LogRecord {
        time_unix_nano: at,
        observed_time_unix_nano: now_ns(),
        severity_number: WARN,
        severity_text: "WARN".into(),
        body: None,
        attributes,
        trace_id: judged.trace_id.to_vec(),
        span_id: judged.span_id.to_vec(),
        event_name: "gen_ai.evaluation.result".into(),
    }
}

/// One session's trace, for the detections whose events did not come from
/// an OTel span: an `invoke_agent` span, sent once — with the session's
/// first detection while following, at its end for a whole file (`scan`),
/// so it spans what was read.
pub struct SessionTrace {
    pub info: SessionInfo,
    root: SpanContext,
    /// Send the root at [`SessionTrace::finish`], not with the first detection.
    at_end: bool,
    root_sent: bool,
    /// Detections sent on this trace.
    detections: usize,
    /// The first and last clock times seen (ns).
    first: Option<u64>,
    last: Option<u64>,
}

impl SessionTrace {
    pub fn new(info: SessionInfo, at_end: bool) -> SessionTrace {
        SessionTrace {
            info,
            root: SpanContext {
                trace_id: random_id(),
                span_id: random_id(),
            },
            at_end,
            root_sent: false,
            detections: 0,
            first: None,
            last: None,
        }
    }

    /// An event was read: its time bounds the session's span.
    pub fn saw(&mut self, e: &Event) {
        if let Some(t) = event_ns(e) {
            self.saw_time(t);
        }
    }

    /// A clock time (ns) of the session.
    pub fn saw_time(&mut self, t: u64) {
        self.first = Some(self.first.map_or(t, |f| f.min(t)));
        self.last = Some(self.last.map_or(t, |l| l.max(t)));
    }

    /// What to send for one detection at `event`: its span and event, on
    /// the agent's trace when the event came from an OTel span, else on
    /// the session's (whose root goes first, once, while following).
    pub fn detection(&mut self, d: &Detection, event: &Event, profile: &str) -> Vec<Item> {
        let at = event_ns(event).unwrap_or_else(now_ns);
        self.saw_time(at);
        let mut out = Vec::new();
        let judged = match SpanContext::of_event(event) {
            Some(span) => span,
            None => {
                self.detections += 1;
                if !self.at_end && !self.root_sent {
                    out.push(Item::Span(self.root_span()));
                }
                self.root
            }
        };
        out.push(Item::Span(detection_span(d, &self.info, profile, judged, at)));
        out.push(Item::Log(evaluation_event(d, &self.info, profile, judged, at)));
        out
    }

    /// The root, if it is owed: the session had detections on its own trace.
    pub fn finish(&mut self) -> Option<Item> {
        (self.detections > 0 && !self.root_sent).then(|| Item::Span(self.root_span()))
    }

    fn root_span(&mut self) -> Span {
        self.root_sent = true;
        let now = now_ns();
        let start = self.first.unwrap_or(now);
        let end = self.last.unwrap_or(now).max(start);
        let name = std::path::Path::new(&self.info.id)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.info.name.clone());
        let mut attributes = vec![
            KeyValue::string("gen_ai.operation.name", "invoke_agent"),
            KeyValue::string("gen_ai.agent.name", self.info.agent.as_str()),
            KeyValue::string("gen_ai.conversation.id", cut(&self.info.id, MAX_TEXT)),
            KeyValue::string("openinference.span.kind", "AGENT"),
            KeyValue::string("loopscope.profile", self.info.profile.as_str()),
            KeyValue::int("loopscope.detections", self.detections),
        ];
        attributes.extend(session_attributes(&self.info));
        Span {
            trace_id: self.root.trace_id.to_vec(),
            span_id: self.root.span_id.to_vec(),
            parent_span_id: Vec::new(),
            name: cut(&format!("invoke_agent {name}"), MAX_TEXT),
            kind: INTERNAL,
            start_time_unix_nano: start,
            end_time_unix_nano: end,
            attributes,
            events: Vec::new(),
            status: None,
        }
    }
}

/// An attribute's value, for tests and the JSON encoding.
pub fn attribute<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::event::EventKind;

    fn detection() -> Detection {
        let mut d = Detection::new("tool-repeat", 19, Channel::Tools, None);
        d.repeats = Some(5);
        d.threshold = Some(5);
        d.events = vec![3, 7, 11, 15, 19];
        d.repeated = Some("bash:{\"command\":\"npm test\"}".into());
        d.reason = "bash called 5 times in a row".into();
        d
    }

    fn info() -> SessionInfo {
        SessionInfo {
            name: "logs/a.jsonl".into(),
            id: "logs/a.jsonl".into(),
            agent: "claude-code".into(),
            format: "claude-code".into(),
            profile: "seed".into(),
        }
    }

    #[test]
    fn an_event_from_an_otel_span_is_judged_on_its_trace() {
        let mut e = Event::new(EventKind::Content { text: "x".into() });
        e.extra
            .insert("trace_id".into(), "4bf92f3577b34da6a3ce929d0e0e4736".into());
        e.extra.insert("span_id".into(), "a1b2c3d4e5f60001".into());
        let mut t = SessionTrace::new(info(), false);
        let items = t.detection(&detection(), &e, "seed");
        assert_eq!(items.len(), 2, "no root span for the agent's own trace");
        let Item::Span(span) = &items[0] else { panic!() };
        assert_eq!(hex(&span.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex(&span.parent_span_id), "a1b2c3d4e5f60001");
        let Item::Log(log) = &items[1] else { panic!() };
        assert_eq!(hex(&log.span_id), "a1b2c3d4e5f60001");
        assert_eq!(log.event_name, "gen_ai.evaluation.result");
        assert_eq!(t.finish(), None);
    }

    #[test]
    fn other_sessions_get_a_trace_of_their_own_with_one_root() {
        let mut e = Event::new(EventKind::Content { text: "x".into() });
        e.extra.insert("trace_id".into(), "0".repeat(32).into());
        e.extra.insert("span_id".into(), "a1b2".into());
        let mut t = SessionTrace::new(info(), false);
        let first = t.detection(&detection(), &e, "seed");
        let second = t.detection(&detection(), &e, "seed");
        assert_eq!((first.len(), second.len()), (3, 2), "the root once, with the first");
        let (Item::Span(root), Item::Span(child)) = (&first[0], &first[1]) else {
            panic!()
        };
        assert_eq!(root.name, "invoke_agent a.jsonl");
        assert!(root.parent_span_id.is_empty());
        assert_eq!(child.parent_span_id, root.span_id);
        assert_eq!(child.trace_id, root.trace_id);
        assert_eq!(
            attribute(&child.attributes, "gen_ai.evaluation.name"),
            Some(&Value::String("loopscope.tool-repeat".into()))
        );
        assert_eq!(attribute(&child.attributes, "loopscope.copies"), Some(&Value::Int(5)));
        assert_eq!(
            attribute(&child.attributes, "loopscope.evidence.end"),
            Some(&Value::Int(20))
        );
        assert_eq!(
            attribute(&child.attributes, "langfuse.observation.level"),
            Some(&Value::String("WARNING".into()))
        );
        assert_eq!(t.finish(), None, "already sent");
    }

    #[test]
    fn a_whole_file_sends_its_root_at_the_end_spanning_its_times() {
        let mut t = SessionTrace::new(info(), true);
        let mut e = Event::new(EventKind::Content { text: "x".into() });
        e.ts = Ts::from_unix_millis(1_700_000_000_000);
        t.saw(&e);
        let mut last = e.clone();
        last.ts = Ts::from_unix_millis(1_700_000_060_000);
        assert_eq!(t.detection(&detection(), &last, "seed").len(), 2);
        let Some(Item::Span(root)) = t.finish() else { panic!() };
        assert_eq!(root.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(root.end_time_unix_nano, 1_700_000_060_000_000_000);
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let long = "循环".repeat(3000);
        let c = cut(&long, MAX_TEXT);
        assert_eq!(c.chars().count(), MAX_TEXT + 1);
        assert!(c.ends_with('…'));
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
