#![no_main]
// The native importer, fed in pieces (loopscope_core::fuzzing::decode).
use libfuzzer_sys::fuzz_target;
use loopscope_core::formats::detect::Kind;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::decode(Kind::Native, data));
