//! The normalized event model: one `Event` per line of the native format
//! (`shared/design/log-format.md`). Every importer produces these.

use serde_json::{Map, Value};

mod extra;
mod fields;

pub(crate) use extra::Extra;
use fields::{json_kind, read_kind};

/// Which stream a detection or a buffer belongs to.
///
/// ```
/// use loopscope_core::{setup, Channel, Event, Monitor};
///
/// let s = setup("extended", &[], &[("text-loop.copies", "4")]).unwrap();
/// let mut monitor = Monitor::new(&s);
/// monitor.push(&Event::request());
/// for _ in 0..40 {
///     monitor.push(&Event::reasoning("Wait, let me check the tests again. "));
/// }
/// assert_eq!(monitor.detections()[0].channel, Channel::Reasoning);
/// assert_eq!(Channel::Reasoning.as_str(), "reasoning");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// The model's thinking text.
    Reasoning,
    /// The model's visible answer text.
    Content,
    /// Tool calls and their results.
    Tools,
    /// Requests and prompts, counted by the turn guards.
    Turns,
}

impl Channel {
    /// The name scan's JSON uses (`reasoning`, `content`, `tools`, `turns`).
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Reasoning => "reasoning",
            Channel::Content => "content",
            Channel::Tools => "tools",
            Channel::Turns => "turns",
        }
    }
}

/// When an event happened. Logs write either seconds since the stream start
/// or an RFC 3339 time; both are kept as written so a conversion round-trips.
#[derive(Clone, Debug, PartialEq)]
pub enum Ts {
    /// Seconds since the start of the stream.
    Seconds(f64),
    /// A clock time.
    Clock {
        /// The RFC 3339 text as the log wrote it.
        text: String,
        /// The same time as Unix seconds.
        unix: f64,
    },
}

impl Ts {
    /// Seconds on a common axis: relative seconds as they are, clock times as
    /// Unix seconds. Only differences between two values of the same stream
    /// are meaningful.
    pub fn seconds(&self) -> f64 {
        match self {
            Ts::Seconds(s) => *s,
            Ts::Clock { unix, .. } => *unix,
        }
    }

    /// An RFC 3339 time, kept as written.
    pub(crate) fn from_rfc3339(text: &str) -> Option<Ts> {
        let t = chrono::DateTime::parse_from_rfc3339(text).ok()?;
        Some(Ts::Clock {
            text: text.to_string(),
            unix: t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9,
        })
    }

    /// Milliseconds since the Unix epoch, as an RFC 3339 time.
    pub fn from_unix_millis(ms: i64) -> Option<Ts> {
        let t = chrono::DateTime::from_timestamp_millis(ms)?;
        Some(Ts::Clock {
            text: t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            unix: ms as f64 / 1000.0,
        })
    }

    fn parse(v: &Value) -> Result<Ts, String> {
        match v {
            Value::Number(n) => n
                .as_f64()
                .filter(|s| s.is_finite())
                .map(Ts::Seconds)
                .ok_or_else(|| format!("`ts` {n} is not a finite number")),
            Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
                .map(|t| Ts::Clock {
                    text: s.clone(),
                    unix: t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9,
                })
                .map_err(|e| format!("`ts` {s:?} is not an RFC 3339 time ({e})")),
            other => Err(format!(
                "`ts` must be a number or an RFC 3339 string, not {}",
                json_kind(other)
            )),
        }
    }

    /// The value as the native format writes it.
    pub fn to_json(&self) -> Value {
        match self {
            Ts::Seconds(s) => serde_json::Number::from_f64(*s).map_or(Value::Null, Value::Number),
            Ts::Clock { text, .. } => Value::String(text.clone()),
        }
    }
}

/// What an event is. Field names follow the native format.
///
/// ```
/// use loopscope_core::{Event, EventKind};
///
/// let e = Event::reasoning("Let me think.");
/// assert!(matches!(&e.kind, EventKind::Reasoning { text } if text == "Let me think."));
/// let call = Event::new(EventKind::ToolCall {
///     id: None,
///     name: "read_file".into(),
///     args: serde_json::json!({"path": "a.rs"}),
/// });
/// assert_eq!(call.type_name(), "tool_call");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// The optional first line: the stream's format, model and source.
    Meta,
    /// A new user prompt: resets every detector.
    Prompt {
        /// The prompt's text, when the log has it.
        text: Option<String>,
    },
    /// A new model request (turn): clears the per-request buffers.
    Request {
        /// The request's id, when the log has one.
        id: Option<String>,
    },
    /// A delta of the model's thinking text.
    Reasoning {
        /// The delta's text.
        text: String,
    },
    /// A delta of the model's visible answer text.
    Content {
        /// The delta's text.
        text: String,
    },
    /// The model asks for a tool.
    ToolCall {
        /// The tool's name.
        name: String,
        /// Its arguments (any JSON value, usually an object).
        args: Value,
        /// The call's id, which its result names.
        id: Option<String>,
    },
    /// A tool's answer.
    ToolResult {
        /// The id of the call it answers.
        id: Option<String>,
        /// `false` when the tool failed.
        ok: bool,
        /// What the tool returned (a string or JSON).
        output: Option<Value>,
    },
    /// A recorded LLM-judge verdict; `confidence` is `None` when the judge
    /// gave no usable answer. `stage` 1 is the first model, 2 the double check.
    LoopCheck {
        /// How sure the judge was that the agent loops (0..1).
        confidence: Option<f64>,
        /// The judge's explanation.
        analysis: Option<String>,
        /// The detector the verdict was recorded for.
        detector: Option<String>,
        /// The model that answered.
        model: Option<String>,
        /// 1 for the first model, 2 for the double check.
        stage: Option<u8>,
    },
    /// A free annotation (`kind: condensation` when the agent compacted its context).
    Note {
        /// The note's text.
        text: String,
    },
    /// A `type` this version does not know: kept and shown, ignored by detectors.
    Other {
        /// The `type` as written.
        type_name: String,
    },
}

/// The extra field of a `tool_result` that holds its output less what
/// changes on every call (see [`Event::compared_output`]).
pub const STABLE_OUTPUT: &str = "stable_output";

/// The extra field of a failed `tool_result` whose failure the tool returned
/// as its output rather than raised (`true`; see
/// [`crate::formats::Out::error_returned`]).
pub(crate) const ERROR_RETURNED: &str = "error_returned";

/// The extra field of a `reasoning` or `content` event holding the token ids
/// the server generated for its text (vLLM's `token_ids` with
/// `return_token_ids`), which profile `vllm` compares.
pub const TOKEN_IDS: &str = "token_ids";

#[derive(Clone, Debug, PartialEq)]
/// One event of a stream: what it is, when, and whatever else its line held.
///
/// ```
/// use loopscope_core::Event;
///
/// // A native JSONL line, parsed; or built directly.
/// let parsed = Event::from_json(serde_json::json!({"type": "reasoning", "text": "hm"})).unwrap();
/// assert_eq!(parsed.event, Event::reasoning("hm"));
/// assert_eq!(Event::request().to_json()["type"], "request");
/// ```
pub struct Event {
    /// What the event is.
    pub kind: EventKind,
    /// When it happened, if the log says.
    pub ts: Option<Ts>,
    /// Every field the kind does not model (meta keys, unknown fields), in
    /// file order, so nothing the log said is lost.
    pub extra: Extra,
}

impl Event {
    /// An event of this kind with no time and no extra fields.
    pub fn new(kind: EventKind) -> Event {
        Event {
            kind,
            ts: None,
            extra: Extra::default(),
        }
    }

    /// The same event at `seconds` since the stream start.
    pub fn at(mut self, seconds: f64) -> Event {
        self.ts = Some(Ts::Seconds(seconds));
        self
    }

    /// A `prompt` with its text.
    pub fn prompt(text: &str) -> Event {
        Event::new(EventKind::Prompt {
            text: Some(text.to_string()),
        })
    }

    /// A `request` without an id.
    pub fn request() -> Event {
        Event::new(EventKind::Request { id: None })
    }

    /// A `reasoning` delta.
    pub fn reasoning(text: &str) -> Event {
        Event::new(EventKind::Reasoning { text: text.to_string() })
    }

    /// A `content` delta.
    pub fn content(text: &str) -> Event {
        Event::new(EventKind::Content { text: text.to_string() })
    }

    /// A `tool_call` without an id.
    pub fn tool_call(name: &str, args: Value) -> Event {
        Event::new(EventKind::ToolCall {
            name: name.to_string(),
            args,
            id: None,
        })
    }

    /// A `tool_result` without output.
    pub fn tool_result(ok: bool) -> Event {
        Event::new(EventKind::ToolResult {
            id: None,
            ok,
            output: None,
        })
    }

    /// A tool result with its output.
    pub fn tool_result_with(ok: bool, output: Value) -> Event {
        Event::new(EventKind::ToolResult {
            id: None,
            ok,
            output: Some(output),
        })
    }

    /// A `note`.
    pub fn note(text: &str) -> Event {
        Event::new(EventKind::Note { text: text.to_string() })
    }

    /// What detectors compare a tool result's output by: its `stable_output`
    /// when the importer recorded one (the output less what changes on every
    /// call whatever the call did, such as Codex's chunk id and wall time),
    /// else its `output`. The exact output stays in `output` for display.
    pub fn compared_output(&self) -> Option<&Value> {
        match &self.kind {
            EventKind::ToolResult { output, .. } => self.extra.get(STABLE_OUTPUT).or(output.as_ref()),
            _ => None,
        }
    }

    /// The native `type` string.
    pub fn type_name(&self) -> &str {
        match &self.kind {
            EventKind::Meta => "meta",
            EventKind::Prompt { .. } => "prompt",
            EventKind::Request { .. } => "request",
            EventKind::Reasoning { .. } => "reasoning",
            EventKind::Content { .. } => "content",
            EventKind::ToolCall { .. } => "tool_call",
            EventKind::ToolResult { .. } => "tool_result",
            EventKind::LoopCheck { .. } => "loop_check",
            EventKind::Note { .. } => "note",
            EventKind::Other { type_name } => type_name,
        }
    }

    /// Reads one native event from a parsed JSON line. `Err` means the line
    /// is not an event at all (not an object, or no string `type`); an event
    /// whose fields are wrong is still an event — it keeps its index, is kept
    /// as an unreadable event, and comes with a warning.
    /// The error is an [`ErrorKind::Malformed`](crate::ErrorKind::Malformed)
    /// (no line: the caller knows where the value came from).
    pub fn from_json(value: Value) -> Result<Parsed, crate::Error> {
        let not_an_event = |m: String| crate::Error::new(crate::ErrorKind::Malformed { line: None }, m);
        let Value::Object(mut fields) = value else {
            return Err(not_an_event(format!(
                "expected a JSON object, found {}",
                json_kind(&value)
            )));
        };
        let type_name = match fields.shift_remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => {
                return Err(not_an_event(format!(
                    "`type` must be a string, not {}",
                    json_kind(&other)
                )))
            }
            None => return Err(not_an_event("missing `type`".to_string())),
        };
        let mut warnings = Vec::new();
        let ts = match fields.get("ts") {
            None | Some(Value::Null) => None,
            Some(v) => match Ts::parse(v) {
                Ok(ts) => {
                    fields.shift_remove("ts");
                    Some(ts)
                }
                Err(e) => {
                    warnings.push(format!("{e}; time ignored"));
                    None
                }
            },
        };
        let kind = match read_kind(&type_name, &fields) {
            Ok((kind, used)) => {
                for key in used {
                    fields.shift_remove(*key);
                }
                kind
            }
            Err(e) => {
                warnings.push(format!("{e}; kept as an unreadable `{type_name}` event"));
                EventKind::Other { type_name }
            }
        };
        Ok(Parsed {
            event: Event {
                kind,
                ts,
                extra: fields.into(),
            },
            warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
        })
    }

    /// The native JSON object of this event: `type` first, then its fields,
    /// `ts`, and the extra fields in their original order.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.type_name().to_string()));
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        let s = |t: &str| Value::String(t.to_string());
        match &self.kind {
            EventKind::Meta | EventKind::Other { .. } => {}
            EventKind::Prompt { text } => {
                if let Some(t) = text {
                    put("text", s(t));
                }
            }
            EventKind::Request { id } => {
                if let Some(id) = id {
                    put("id", s(id));
                }
            }
            EventKind::Reasoning { text } | EventKind::Content { text } | EventKind::Note { text } => {
                put("text", s(text))
            }
            EventKind::ToolCall { name, args, id } => {
                if let Some(id) = id {
                    put("id", s(id));
                }
                put("name", s(name));
                put("args", args.clone());
            }
            EventKind::ToolResult { id, ok, output } => {
                if let Some(id) = id {
                    put("id", s(id));
                }
                put("ok", Value::Bool(*ok));
                if let Some(o) = output {
                    put("output", o.clone());
                }
            }
            EventKind::LoopCheck {
                confidence,
                analysis,
                detector,
                model,
                stage,
            } => {
                put(
                    "confidence",
                    confidence
                        .and_then(serde_json::Number::from_f64)
                        .map_or(Value::Null, Value::Number),
                );
                if let Some(m) = model {
                    put("model", s(m));
                }
                if let Some(st) = stage {
                    put("stage", Value::from(*st));
                }
                if let Some(a) = analysis {
                    put("analysis", s(a));
                }
                if let Some(d) = detector {
                    put("detector", s(d));
                }
            }
        }
        if let Some(ts) = &self.ts {
            m.insert("ts".into(), ts.to_json());
        }
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(m)
    }
}

/// An event read from JSON, and what was wrong with it if it was only partly readable.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    /// The event.
    pub event: Event,
    /// What was wrong with the line, when it was only partly readable.
    pub warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Event {
        let p = Event::from_json(v).unwrap();
        assert_eq!(p.warning, None);
        p.event
    }

    #[test]
    fn reads_every_documented_type() {
        let e = read(json!({"ts":0.4,"type":"tool_call","id":"c1","name":"read_file","args":{"path":"a"}}));
        assert_eq!(
            e.kind,
            EventKind::ToolCall {
                name: "read_file".into(),
                args: json!({"path":"a"}),
                id: Some("c1".into())
            }
        );
        assert_eq!(e.ts, Some(Ts::Seconds(0.4)));
        assert!(e.extra.is_empty());
        let r = read(json!({"type":"tool_result","ok":false}));
        assert!(matches!(r.kind, EventKind::ToolResult { ok: false, .. }));
        let c = read(json!({"type":"loop_check","confidence":0.95,"analysis":"x"}));
        assert!(matches!(c.kind, EventKind::LoopCheck { confidence, .. } if confidence == Some(0.95)));
    }

    #[test]
    fn keeps_unknown_types_and_fields() {
        let e = read(json!({"type":"usage","tokens":12,"x":[1]}));
        assert_eq!(e.type_name(), "usage");
        assert_eq!(e.extra.get("tokens"), Some(&json!(12)));
        assert_eq!(e.to_json(), json!({"type":"usage","tokens":12,"x":[1]}));
        // Field order survives too (Value equality would not notice).
        let line = r#"{"z":1,"type":"note","text":"t","b":2,"a":3}"#;
        let e = read(serde_json::from_str(line).unwrap());
        assert_eq!(
            e.to_json().to_string(),
            r#"{"type":"note","text":"t","z":1,"b":2,"a":3}"#
        );
    }

    #[test]
    fn rfc3339_ts_is_parsed_and_kept_as_written() {
        let e = read(json!({"type":"note","text":"hi","ts":"2025-01-02T03:04:05.5Z"}));
        assert_eq!(e.ts.clone().unwrap().seconds(), 1_735_787_045.5);
        assert_eq!(e.to_json()["ts"], json!("2025-01-02T03:04:05.5Z"));
    }

    #[test]
    fn lines_that_are_not_events_say_why() {
        assert_eq!(
            Event::from_json(json!([1])).unwrap_err().to_string(),
            "expected a JSON object, found an array"
        );
        assert_eq!(
            Event::from_json(json!({"text":"a"})).unwrap_err().to_string(),
            "missing `type`"
        );
        assert_eq!(
            Event::from_json(json!({"type":3})).unwrap_err().to_string(),
            "`type` must be a string, not a number"
        );
    }

    #[test]
    fn a_typed_event_with_bad_fields_is_kept_with_a_warning() {
        let p = Event::from_json(json!({"type":"reasoning","text":5})).unwrap();
        assert_eq!(
            p.warning.as_deref(),
            Some("`reasoning` event: `text` must be a string, not a number; kept as an unreadable `reasoning` event")
        );
        assert_eq!(
            p.event.kind,
            EventKind::Other {
                type_name: "reasoning".into()
            }
        );
        assert_eq!(
            p.event.to_json(),
            json!({"type":"reasoning","text":5}),
            "nothing is lost"
        );
        let p = Event::from_json(json!({"type":"note","text":"a","ts":"yesterday"})).unwrap();
        assert!(p.warning.unwrap().contains("RFC 3339"));
        assert_eq!(p.event.kind, EventKind::Note { text: "a".into() });
        assert_eq!(p.event.to_json()["ts"], json!("yesterday"));
    }
}
