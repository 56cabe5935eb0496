//! A guarded stream on its way to the client: cut into payloads, each
//! decoded and recorded (so the detectors see it) before the client gets
//! it. The payloads of a tool call are held back until the call is
//! complete and the detectors have judged it: a call that would make one
//! fire never reaches the agent, which would run it. When the guard stops
//! the response, the API's own end follows what the client has.

use std::time::Instant;

use serde_json::Value;

use super::conversations::Exchange;
use super::guard::{Found, Stop};
use super::payloads::{payload_of, Units};
use super::protocol::{CallTracker, Protocol, Shape, Terminator};
use loopscope_core::event::{Event, EventKind};
use loopscope_core::formats::{Decoder, Item};

/// One guarded response's state.
pub struct Guarded {
    units: Units,
    shape: Shape,
    /// Bytes of a payload not complete yet.
    pending: Vec<u8>,
    /// The payloads of a tool call not yet judged: their bytes, their
    /// data, and what they decoded to.
    held: Vec<u8>,
    held_payloads: Vec<(Option<String>, Value)>,
    held_items: Vec<Item>,
    calls: Box<dyn CallTracker>,
    end: Box<dyn Terminator>,
    /// Why the response must stop at the model's first word (a detection on
    /// the results its request brought back); looked up once it begins.
    first_word_stop: Option<Option<Stop>>,
}

/// What came of the bytes that arrived.
pub struct Passed {
    /// The bytes to pass on.
    pub ready: Vec<u8>,
    /// Why to stop after them.
    pub stop: Option<Stop>,
}

/// Writes decoded events into the conversation; returns what fired.
fn record(
    exchange: &mut Option<&mut Exchange<'_>>,
    items: &mut Vec<Item>,
    at: Instant,
) -> Vec<loopscope_core::Detection> {
    match exchange.as_mut() {
        Some(x) => x.items(items, at),
        None => {
            items.clear();
            Vec::new()
        }
    }
}

/// Whether the model says something in these items (not only the
/// response's start or its counts).
fn speaks(items: &[Item]) -> bool {
    items.iter().any(|i| {
        matches!(
            i,
            Item::Event(e, _) if matches!(e.kind, EventKind::Reasoning { .. } | EventKind::Content { .. } | EventKind::ToolCall { .. })
        )
    })
}

fn calls_in(items: &[Item]) -> bool {
    items
        .iter()
        .any(|i| matches!(i, Item::Event(e, _) if matches!(e.kind, EventKind::ToolCall { .. })))
}

impl Guarded {
    pub fn new(protocol: Protocol, shape: Shape) -> Guarded {
        Guarded {
            units: Units::new(shape),
            shape,
            pending: Vec::new(),
            held: Vec::new(),
            held_payloads: Vec::new(),
            held_items: Vec::new(),
            calls: protocol.call_tracker(),
            end: protocol.terminator(),
            first_word_stop: None,
        }
    }

    /// Takes the bytes that arrived: the complete payloads among them are
    /// decoded, recorded and judged in turn. Returns the bytes to pass on
    /// and, if the guard stops the response, why (the payload that made a
    /// detector fire on the stream is passed on; a held call is not).
    pub fn take(
        &mut self,
        data: &[u8],
        decoder: &mut dyn Decoder,
        exchange: &mut Option<&mut Exchange<'_>>,
        at: Instant,
    ) -> Passed {
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(data);
        let mut ready = Vec::new();
        let mut used = 0;
        let mut stop = None;
        while let Some(len) = self.units.next_end(&pending[used..]) {
            let unit = &pending[used..used + len];
            used += len;
            if let Some(s) = self.unit(unit, decoder, exchange, at, &mut ready) {
                stop = Some(s);
                break;
            }
        }
        pending.drain(..used);
        self.pending = pending;
        Passed { ready, stop }
    }

    /// One complete payload: passed on (into `ready`), held, or the reason
    /// to stop.
    fn unit(
        &mut self,
        unit: &[u8],
        decoder: &mut dyn Decoder,
        exchange: &mut Option<&mut Exchange<'_>>,
        at: Instant,
        ready: &mut Vec<u8>,
    ) -> Option<Stop> {
        let payload = payload_of(unit, self.shape);
        if let Some((event, data)) = &payload {
            self.calls.saw(event.as_deref(), data);
        }
        let mut items = Vec::new();
        decoder.feed(unit, &mut items);
        if self.first_word_stop.is_none() {
            let x = exchange.as_mut();
            self.first_word_stop = Some(x.and_then(|x| {
                x.response_begins();
                x.pending_stop()
            }));
        }
        let holding = !self.held.is_empty() || self.calls.open() || calls_in(&items);
        if !holding {
            if speaks(&items) {
                if let Some(Some(stop)) = &self.first_word_stop {
                    return Some(stop.clone());
                }
            }
            if let Some((event, data)) = &payload {
                self.end.saw(event.as_deref(), data);
            }
            ready.extend_from_slice(unit);
            let fired = record(exchange, &mut items, at).into_iter().next();
            return fired.map(|d| Stop::new(d, Found::Stream, None));
        }
        let parsed = payload.is_some();
        self.held.extend_from_slice(unit);
        self.held_payloads.extend(payload);
        self.held_items.append(&mut items);
        // A payload that is not the API's data (`[DONE]`) ends what is open.
        if self.calls.open() && parsed {
            return None;
        }
        self.judge_held(exchange, at, ready)
    }

    /// The held call is complete: the agent gets it, or the reason to stop.
    fn judge_held(
        &mut self,
        exchange: &mut Option<&mut Exchange<'_>>,
        at: Instant,
        ready: &mut Vec<u8>,
    ) -> Option<Stop> {
        if let Some(Some(stop)) = &self.first_word_stop {
            return Some(stop.clone());
        }
        let events: Vec<Event> = self
            .held_items
            .iter()
            .filter_map(|i| match i {
                Item::Event(e, _) => Some(e.clone()),
                _ => None,
            })
            .collect();
        if let Some(stop) = exchange.as_ref().and_then(|x| x.judge(&events)) {
            self.held.clear();
            self.held_payloads.clear();
            self.held_items.clear();
            return Some(stop);
        }
        for (event, data) in self.held_payloads.drain(..) {
            self.end.saw(event.as_deref(), &data);
        }
        ready.append(&mut self.held);
        let fired = record(exchange, &mut self.held_items, at).into_iter().next();
        fired.map(|d| Stop::new(d, Found::Stream, None))
    }

    /// The bytes that end the response for `stop`, after what the client has.
    pub fn end(&mut self, stop: &Stop) -> Vec<u8> {
        self.end.end(self.shape, &stop.message())
    }

    /// What is held back (a payload not complete, a call not judged),
    /// decoded into `items`, to pass on as it is: the stream ended or
    /// broke, or it cannot be cut into payloads after all.
    pub fn release(&mut self, decoder: &mut dyn Decoder, items: &mut Vec<Item>) -> Vec<u8> {
        items.append(&mut self.held_items);
        self.held_payloads.clear();
        let mut out = std::mem::take(&mut self.held);
        decoder.feed(&self.pending, items);
        out.append(&mut self.pending);
        out
    }

    /// More is held than a record may be long: the stream is not the
    /// API's framing, or a call's arguments are past all reason.
    pub fn overlong(&self) -> bool {
        self.pending.len() + self.held.len() > loopscope_core::formats::DEFAULT_MAX_RECORD
    }
}
