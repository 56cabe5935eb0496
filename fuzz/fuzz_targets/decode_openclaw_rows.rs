#![no_main]
// The openclaw_rows importer, fed in pieces (loopscope::fuzzing::decode).
use libfuzzer_sys::fuzz_target;
use loopscope::formats::detect::Kind;

fuzz_target!(|data: &[u8]| loopscope::fuzzing::decode(Kind::OpenclawRows, data));
