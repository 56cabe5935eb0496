#![no_main]
// A SQLite store (opencode, Goose, Crush), damaged any way: listed and read.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::store(data));
