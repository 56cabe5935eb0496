//! The SDK's events as its detector compares them (`_event_eq`), and the
//! window's items: each event with its equality class among the window's.

use std::collections::VecDeque;
use std::sync::Arc;

use super::WINDOW;

/// One event of the SDK's log, as the detector compares it.
#[derive(Clone, Debug)]
pub(super) enum Ev {
    /// An agent `MessageEvent` (a response without a tool call).
    Agent,
    /// The nudge: an environment `MessageEvent`.
    Environment,
    /// A `Condensation` (it holds a window slot and ends a monologue).
    Condensation,
    /// `key`: the tool's name and its arguments with keys sorted and
    /// numbers by value (the validated action compares as a dict).
    Action {
        key: Arc<str>,
        tool: Arc<str>,
        thought: Arc<str>,
    },
    Observation {
        tool: Arc<str>,
        output: Arc<str>,
    },
    Error {
        error: Arc<str>,
    },
}

impl Ev {
    pub(super) fn is_action(&self) -> bool {
        matches!(self, Ev::Action { .. })
    }

    pub(super) fn is_observation(&self) -> bool {
        matches!(self, Ev::Observation { .. } | Ev::Error { .. })
    }

    /// A hash of what `event_eq` compares: equal events hash alike (a
    /// collision only costs a comparison: classes come from `event_eq`).
    /// A word-at-a-time multiply-rotate fold, not SipHash: nothing here is
    /// a table an adversary could flood, and SipHash was 3 % of a scan.
    pub(super) fn hash(&self) -> u64 {
        match self {
            Ev::Action { key, thought, .. } => fold(fold(1, key.as_bytes()), thought.as_bytes()),
            Ev::Observation { tool, output } => fold(fold(2, tool.as_bytes()), output.as_bytes()),
            Ev::Error { error } => fold(3, error.as_bytes()),
            // Messages and condensations are never compared.
            _ => 4,
        }
    }
}

/// Folds `bytes` (and their length, so field boundaries count) into `h`.
pub(super) fn fold(mut h: u64, bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K).rotate_left(29);
    (h ^ bytes.len() as u64).wrapping_mul(K)
}

/// `_event_eq`: the same type and the fields the SDK compares.
pub(super) fn event_eq(a: &Ev, b: &Ev) -> bool {
    match (a, b) {
        (
            Ev::Action {
                key: k1, thought: h1, ..
            },
            Ev::Action {
                key: k2, thought: h2, ..
            },
        ) => k1 == k2 && h1 == h2,
        (Ev::Observation { tool: t1, output: o1 }, Ev::Observation { tool: t2, output: o2 }) => t1 == t2 && o1 == o2,
        (Ev::Error { error: e1 }, Ev::Error { error: e2 }) => e1 == e2,
        _ => false,
    }
}

/// Up to a window's worth of its items, newest first.
pub(super) struct Picks<'a> {
    pub(super) buf: [&'a Item; WINDOW],
    pub(super) len: usize,
}

impl<'a> Picks<'a> {
    pub(super) fn new(window: &'a VecDeque<Item>) -> Picks<'a> {
        // Filled with any item of the window; only `..len` is read.
        let filler = window.front().unwrap_or(&NO_ITEM);
        Picks {
            buf: [filler; WINDOW],
            len: 0,
        }
    }

    pub(super) fn push(&mut self, item: &'a Item) {
        self.buf[self.len] = item;
        self.len += 1;
    }
}

impl<'a> std::ops::Deref for Picks<'a> {
    type Target = [&'a Item];

    fn deref(&self) -> &[&'a Item] {
        &self.buf[..self.len]
    }
}

pub(super) static NO_ITEM: Item = Item {
    ev: Ev::Agent,
    class: 0,
    hash: 0,
    event: 0,
    seq: 0,
};

#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) ev: Ev,
    /// Its equality class among the window's events: two items are
    /// `_event_eq` exactly when their classes are equal, so a check compares
    /// numbers (each event is compared with the window once, when it comes).
    pub(super) class: u64,
    pub(super) hash: u64,
    /// The loopscope event it came from.
    pub(super) event: usize,
    /// Its place in the SDK's log (ids the nudge remembers).
    pub(super) seq: u64,
}
