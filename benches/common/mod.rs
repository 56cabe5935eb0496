//! Deterministic text for the benchmarks: words a coding agent's reasoning
//! is made of, drawn by a xorshift generator (no loops by construction,
//! so no detector latches and the whole input is worked through).
#![allow(dead_code)]

pub const WORDS: &[&str] = &[
    "parser",
    "returns",
    "the",
    "cache",
    "layer",
    "retries",
    "a",
    "request",
    "when",
    "token",
    "expires",
    "config",
    "value",
    "looks",
    "fine",
    "but",
    "test",
    "fails",
    "on",
    "CI",
    "locale",
    "differs",
    "trim",
    "removes",
    "whitespace",
    "after",
    "refactor",
    "schema",
    "migration",
    "handles",
    "empty",
    "input",
    "socket",
    "closed",
];

pub struct Words(u64);

impl Words {
    pub fn new() -> Words {
        Words(0x9E37_79B9_7F4A_7C15)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn word(&mut self) -> &'static str {
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }
}
