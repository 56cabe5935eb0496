//! What importers build events with: [`Out`], which gives every event
//! the time and position of the record being read, and [`Args`].

use serde_json::{Map, Value};

use super::{drift, Item, Problem};
use crate::event::{Event, EventKind, Ts};

/// Builds events for an importer: the time and position of the record
/// being read are set once, and every event gets them.
pub struct Out<'a> {
    items: &'a mut Vec<Item>,
    /// The record's 1-based line.
    pub line: u64,
    /// The record's time, given to every event built from it.
    pub ts: Option<Ts>,
    /// Fields every event built from here on gets (an OpenTelemetry
    /// span's `trace_id` and `span_id`, so an evaluation of the event can
    /// be parented to the span it came from).
    pub context: Map<String, Value>,
}

impl<'a> Out<'a> {
    /// A builder of events for the record at `line`.
    pub fn new(items: &'a mut Vec<Item>, line: u64) -> Out<'a> {
        Out {
            items,
            line,
            ts: None,
            context: Map::new(),
        }
    }

    /// A new event of this kind, with the record's time and context.
    fn event(&self, kind: EventKind) -> Event {
        let mut e = Event::new(kind);
        e.ts = self.ts.clone();
        if !self.context.is_empty() {
            e.extra = self.context.clone().into();
        }
        e
    }

    /// Emits an event of this kind.
    pub fn push(&mut self, kind: EventKind) {
        let e = self.event(kind);
        self.items.push(Item::Event(e, self.line));
    }

    /// Output tokens the log records for what was just emitted: added to
    /// the `usage` of the last event (so a stream's tokens can be counted
    /// from where a loop began), or of a meta event of its own when none is
    /// at hand.
    pub fn usage(&mut self, output_tokens: u64) {
        if output_tokens == 0 {
            return;
        }
        let add = |e: &mut Event| {
            let usage = e
                .extra
                .entry("usage")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(u) = usage {
                let before = u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0);
                u.insert(
                    "output_tokens".into(),
                    Value::from(before.saturating_add(output_tokens)),
                );
            }
        };
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            if e.extra.get("usage").is_none_or(Value::is_object) {
                add(e);
                return;
            }
        }
        self.usage_event(output_tokens);
    }

    /// Output tokens an API stream reports for one response (at its end):
    /// a meta event of its own, so the events never depend on how the
    /// stream's bytes were cut.
    pub fn usage_event(&mut self, output_tokens: u64) {
        if output_tokens == 0 {
            return;
        }
        let mut e = self.event(EventKind::Meta);
        e.extra.insert(
            "title".into(),
            Value::String(format!("usage: {output_tokens} output tokens")),
        );
        e.extra
            .insert("usage".into(), serde_json::json!({ "output_tokens": output_tokens }));
        self.items.push(Item::Event(e, self.line));
    }

    /// The item emitted last, to add a field to it.
    pub fn last_mut(&mut self) -> Option<&mut Item> {
        self.items.last_mut()
    }

    /// An item another decoder produced (cassette interactions).
    pub fn item(&mut self, item: Item) {
        self.items.push(item);
    }

    /// Emits a `prompt`.
    pub fn prompt(&mut self, text: &str) {
        self.push(EventKind::Prompt {
            text: Some(text.to_string()),
        });
    }

    /// Emits a `request`.
    pub fn request(&mut self, id: Option<&str>) {
        self.push(EventKind::Request {
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
        });
    }

    /// Emits a `reasoning` delta (nothing for empty text).
    pub fn reasoning(&mut self, text: &str) {
        if !text.is_empty() {
            self.push(EventKind::Reasoning { text: text.to_string() });
        }
    }

    /// Emits a `content` delta (nothing for empty text).
    pub fn content(&mut self, text: &str) {
        if !text.is_empty() {
            self.push(EventKind::Content { text: text.to_string() });
        }
    }

    /// Emits a `note`.
    pub fn note(&mut self, text: impl Into<String>) {
        self.push(EventKind::Note { text: text.into() });
    }

    /// A request to the model, with the model's name when the log has it.
    pub fn request_by(&mut self, id: Option<&str>, model: Option<&str>) {
        self.request(id);
        if let (Some(model), Some(Item::Event(e, _))) = (model.filter(|m| !m.is_empty()), self.items.last_mut()) {
            e.extra.insert("model".into(), Value::String(model.to_string()));
        }
    }

    /// An error the model's API returned (the house style: a note).
    pub fn api_error(&mut self, text: &str) {
        self.note(format!("API error: {}", text.trim()));
    }

    /// The context was compacted (a note of kind `condensation`, which
    /// OpenHands' stuck detector counts).
    pub fn condensation(&mut self, text: impl Into<String>) {
        self.note(text);
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert("kind".into(), Value::String("condensation".into()));
        }
    }

    /// A complete tool call. Arguments given as text are parsed; text that
    /// is not JSON is kept as a string and reported, never dropped.
    pub fn tool_call(&mut self, id: Option<&str>, name: &str, args: Args) {
        let args = match args {
            Args::Json(v) => v,
            Args::Text(t) if t.trim().is_empty() => Value::Object(Map::new()),
            Args::Text(t) => match serde_json::from_str(t) {
                Ok(v) => v,
                Err(e) => {
                    self.warn(format!(
                        "tool call {name}: arguments are not valid JSON ({e}); kept as a string"
                    ));
                    Value::String(t.to_string())
                }
            },
        };
        self.push(EventKind::ToolCall {
            name: name.to_string(),
            args,
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
        });
    }

    /// Emits a `tool_result`.
    pub fn tool_result(&mut self, id: Option<&str>, ok: bool, output: Option<Value>) {
        self.push(EventKind::ToolResult {
            id: id.filter(|s| !s.is_empty()).map(str::to_string),
            ok,
            output,
        });
    }

    /// Emits a `tool_result` whose output holds parts that change on every
    /// call whatever the call did (a chunk id, a wall time): detectors
    /// compare `stable` instead ([`Event::compared_output`]); the exact
    /// output is kept for display.
    pub fn tool_result_varying(&mut self, id: Option<&str>, ok: bool, output: Value, stable: Value) {
        self.tool_result(id, ok, Some(output));
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert(crate::event::STABLE_OUTPUT.into(), stable);
        }
    }

    /// How many items are out so far: [`Out::token_ids`] marks the ones after it.
    pub fn mark(&self) -> usize {
        self.items.len()
    }

    /// The token ids a server sent with the text emitted since `from` (one
    /// streamed chunk): they go to the first text event, as `token_ids`, and
    /// the chunk's other text events (a `<think>` split) get none (`[]`), so
    /// every id is counted once. Ids of a chunk without text (a tool call's
    /// arguments) wait in `held` (the decoder's, per response) for the next
    /// text event, so the sequence keeps every token up to there in order.
    pub fn token_ids(&mut self, from: usize, ids: &[Value], held: &mut Vec<Value>) {
        let mut ids = Some(ids);
        for item in self.items.iter_mut().skip(from) {
            let Item::Event(e, _) = item else { continue };
            if !matches!(e.kind, EventKind::Reasoning { .. } | EventKind::Content { .. }) {
                continue;
            }
            let mine = match ids.take() {
                Some(list) => {
                    let mut all = std::mem::take(held);
                    all.extend_from_slice(list);
                    all
                }
                None => Vec::new(),
            };
            e.extra.insert(crate::event::TOKEN_IDS.into(), Value::Array(mine));
        }
        if let Some(list) = ids {
            held.extend_from_slice(list);
        }
    }

    /// The failed result just emitted came back as the tool's output (the
    /// OpenHands SDK's `ObservationEvent` with `is_error`), not as an error
    /// the tool raised (`AgentErrorEvent`): `error_returned: true`, which
    /// profile `openhands` compares as an observation.
    pub fn error_returned(&mut self) {
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert(crate::event::ERROR_RETURNED.into(), Value::Bool(true));
        }
    }

    /// What the agent's own loop detection did (a warning, a refused call,
    /// a run it stopped), as its session records it: a `note` of kind
    /// `agent_loop_detection`, with the agent and the level, so a profile
    /// that reproduces the agent's detector can be held against it.
    pub fn agent_detection(&mut self, agent: &str, level: &str, text: String) {
        self.note(text);
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra
                .insert("kind".into(), Value::String("agent_loop_detection".into()));
            e.extra.insert("agent".into(), Value::String(agent.into()));
            e.extra.insert("level".into(), Value::String(level.into()));
        }
    }

    /// A tool call that was not run (cancelled, or not started because a
    /// call beside it failed): a `note` of kind `cancelled`, not a failed
    /// result, since nothing ran.
    pub fn cancelled(&mut self, id: Option<&str>, why: &str) {
        self.note(why.to_string());
        if let Some(Item::Event(e, _)) = self.items.last_mut() {
            e.extra.insert("kind".into(), Value::String("cancelled".into()));
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                e.extra.insert("tool_call_id".into(), Value::String(id.to_string()));
            }
        }
    }

    /// A record that could not be read: skipped.
    pub fn problem(&mut self, reason: impl Into<String>) {
        self.items.push(Item::Problem(Problem {
            line: self.line,
            reason: reason.into(),
            skipped: true,
        }));
    }

    /// A well-formed record of a kind this importer does not know: skipped,
    /// and counted by kind ([`Item::Unknown`]).
    pub fn unknown(&mut self, kind: &str) {
        self.items.push(Item::Unknown(drift::Unknown::new(self.line, kind)));
    }

    /// Something only partly readable: kept, and said.
    pub fn warn(&mut self, reason: impl Into<String>) {
        self.items.push(Item::Problem(Problem {
            line: self.line,
            reason: reason.into(),
            skipped: false,
        }));
    }
}

/// Tool-call arguments as a source has them.
pub enum Args<'a> {
    /// Already parsed.
    Json(Value),
    /// A JSON text, parsed when the call is emitted.
    Text(&'a str),
}

impl<'a> Args<'a> {
    /// A field that holds the arguments as JSON text or as JSON.
    pub fn of(v: Option<&'a Value>) -> Args<'a> {
        match v {
            Some(Value::String(s)) => Args::Text(s),
            other => Args::Json(other.cloned().unwrap_or(Value::Null)),
        }
    }
}
