//! The SDK's events as its detector compares them (`_event_eq`), and the
//! window's items: each event with its equality class among the window's.

use std::sync::Arc;

use serde_json::Value;

use super::args::{hash_args, same_args};

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
    /// `args`: the call's arguments, compared as the validated action (a
    /// dict: keys in any order, numbers by value; see `args`).
    Action {
        tool: Arc<str>,
        args: Arc<Value>,
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
            Ev::Action { tool, args, thought } => [action_hash(tool, args), fold(ACTION, thought.as_bytes())],
            Ev::Observation { tool, output } => {
                [fold(OBSERVATION, tool.as_bytes()), fold(OBSERVATION, output.as_bytes())]
            }
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

/// The hash of an action's tool and arguments (its first field hash).
pub(super) fn action_hash(tool: &str, args: &Value) -> u64 {
    combine([fold(ACTION, tool.as_bytes()), hash_args(args)])
}

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
    h = (h ^ tail_word(chunks.remainder())).wrapping_mul(K).rotate_left(29);
    (h ^ bytes.len() as u64).wrapping_mul(K)
}

/// The last (under 8) bytes as one word, by two overlapping loads rather
/// than a copy of unknown length (most texts here are short, all tail).
/// Not the bytes' layout, but a function of them: equal tails, equal words.
fn tail_word(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 4 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]);
        u64::from(lo) | (u64::from(hi) << 32)
    } else if n > 0 {
        u64::from(b[0]) | (u64::from(b[n / 2]) << 8) | (u64::from(b[n - 1]) << 16)
    } else {
        0
    }
}

/// `a == b` for texts, short ones (most names, keys and outputs here)
/// compared in at most two pairs of words in place of a call to `memcmp`.
#[inline]
pub(super) fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |x: &[u8], at: usize| u64::from_le_bytes(x[at..at + 8].try_into().expect("8 bytes"));
    let half = |x: &[u8], at: usize| u32::from_le_bytes(x[at..at + 4].try_into().expect("4 bytes"));
    match n {
        // Overlapping loads: together they cover every byte.
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        9..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// [`same_text`] for shared texts: the same allocation needs no look.
#[inline]
fn same_arc(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || same_text(a, b)
}

/// The last few distinct texts (or calls) the detector made: an equal one
/// coming again is shared, not allocated again, even after the window let
/// it go. Bounded: `SLOTS` of them, the oldest made replaced first (any
/// of them may be looked up: a loop over a few calls keeps them all).
#[derive(Clone, Debug)]
pub(super) struct Recent<V> {
    hashes: [u64; SLOTS],
    values: [Option<V>; SLOTS],
    /// The slot the next new value takes.
    next: usize,
}

const SLOTS: usize = 8;

impl<V: Clone> Recent<V> {
    pub(super) fn new() -> Recent<V> {
        Recent {
            hashes: [0; SLOTS],
            values: std::array::from_fn(|_| None),
            next: 0,
        }
    }

    /// The kept value of hash `hash` that `same` accepts, else `make()`'s,
    /// kept from now on.
    pub(super) fn share(&mut self, hash: u64, same: impl Fn(&V) -> bool, make: impl FnOnce() -> V) -> V {
        for (h, v) in self.hashes.iter().zip(&self.values) {
            if let Some(v) = v.as_ref().filter(|v| *h == hash && same(v)) {
                return v.clone();
            }
        }
        let v = make();
        self.hashes[self.next] = hash;
        self.values[self.next] = Some(v.clone());
        self.next = (self.next + 1) % SLOTS;
        v
    }
}

/// `_event_eq`: the same type and the fields the SDK compares.
pub(super) fn event_eq(a: &Ev, b: &Ev) -> bool {
    match (a, b) {
        (
            Ev::Action {
                tool: t1,
                args: a1,
                thought: h1,
            },
            Ev::Action {
                tool: t2,
                args: a2,
                thought: h2,
            },
        ) => same_arc(h1, h2) && same_arc(t1, t2) && (Arc::ptr_eq(a1, a2) || same_args(a1, a2)),
        (Ev::Observation { tool: t1, output: o1 }, Ev::Observation { tool: t2, output: o2 }) => {
            same_arc(t1, t2) && same_arc(o1, o2)
        }
        (Ev::Error { error: e1 }, Ev::Error { error: e2 }) => same_arc(e1, e2),
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
