#![no_main]
// The native importer, fed in pieces (loopscope_core::fuzzing::decode).
// Generated from its row in formats/registry.rs (tests/fuzz_stable.rs).
use libfuzzer_sys::fuzz_target;
use loopscope_core::formats::detect::Kind;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::decode(Kind::Native, data));
