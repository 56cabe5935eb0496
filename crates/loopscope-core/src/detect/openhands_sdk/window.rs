//! The SDK's events as its detector compares them (`_event_eq`), and the
//! window's items: each event with its equality class among the window's.

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

    /// Hashes of the fields `event_eq` compares, one each (0 where there
    /// is none), seeded by the type: equal events hash alike (a collision
    /// only costs a comparison: classes come from `event_eq`), and the
    /// window finds a text it holds by its hash before comparing it.
    /// A word-at-a-time multiply-rotate fold, not SipHash: nothing here is
    /// a table an adversary could flood, and SipHash was 3 % of a scan.
    pub(super) fn field_hashes(&self) -> [u64; 2] {
        match self {
            Ev::Action { key, thought, .. } => [fold(ACTION, key.as_bytes()), fold(ACTION, thought.as_bytes())],
            Ev::Observation { tool, output } => [fold(OBSERVATION, tool.as_bytes()), fold(OBSERVATION, output.as_bytes())],
            Ev::Error { error } => [fold(ERROR, error.as_bytes()), 0],
            // Messages and condensations are never compared.
            _ => [4, 4],
        }
    }
}

/// Seeds of the field hashes, one per type of event.
pub(super) const ACTION: u64 = 1;
pub(super) const OBSERVATION: u64 = 2;
pub(super) const ERROR: u64 = 3;

/// The event's hash from its field hashes.
pub(super) fn combine(fields: [u64; 2]) -> u64 {
    (fields[0].rotate_left(23) ^ fields[1]).wrapping_mul(0x9e37_79b9_7f4a_7c15)
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

/// One action or observation of the window, as the checks read it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slot {
    pub(super) class: u64,
    pub(super) event: usize,
    pub(super) seq: u64,
    /// An `AgentErrorEvent` (observations only).
    pub(super) error: bool,
}

/// The window's actions (or its observations), oldest first, in a fixed
/// ring: the checks before each LLM call read the newest few as numbers
/// without walking the window's events.
#[derive(Clone, Debug)]
pub(super) struct Ring {
    slots: [Slot; RING],
    head: usize,
    len: usize,
}

/// Room for a full window and the event that is about to push its oldest out.
const RING: usize = 32;
const _: () = assert!(RING > WINDOW && RING.is_power_of_two());

impl Ring {
    pub(super) fn new() -> Ring {
        Ring {
            slots: [Slot::default(); RING],
            head: 0,
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    pub(super) fn push_back(&mut self, slot: Slot) {
        // The window holds at most WINDOW + 1 events at any time.
        debug_assert!(self.len < RING);
        self.slots[(self.head + self.len) & (RING - 1)] = slot;
        self.len += 1;
    }

    pub(super) fn pop_front(&mut self) {
        if self.len > 0 {
            self.head = (self.head + 1) & (RING - 1);
            self.len -= 1;
        }
    }

    /// The `i`th newest (0 is the newest); `i < len`.
    pub(super) fn newest(&self, i: usize) -> &Slot {
        &self.slots[(self.head + self.len - 1 - i) & (RING - 1)]
    }

    /// The slot of the event `seq`, newest first.
    pub(super) fn find_mut(&mut self, seq: u64) -> Option<&mut Slot> {
        let (head, len) = (self.head, self.len);
        (0..len)
            .rev()
            .map(|i| (head + i) & (RING - 1))
            .find(|&at| self.slots[at].seq == seq)
            .map(|at| &mut self.slots[at])
    }
}

#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) ev: Ev,
    /// Its equality class among the window's events: two items are
    /// `_event_eq` exactly when their classes are equal, so a check compares
    /// numbers (each event is compared with the window once, when it comes).
    pub(super) class: u64,
    /// `Ev::field_hashes`, and the event's hash from them.
    pub(super) fields: [u64; 2],
    pub(super) hash: u64,
    /// The loopscope event it came from.
    pub(super) event: usize,
    /// Its place in the SDK's log (ids the nudge remembers).
    pub(super) seq: u64,
}
