#![no_main]
// native JSONL through every profile's detectors (loopscope_core::fuzzing::engine).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::engine(data));
