#![no_main]
// native JSONL through every profile's detectors (loopscope::fuzzing::engine).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope::fuzzing::engine(data));
