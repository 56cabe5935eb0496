#![no_main]
// format detection, decoding and every profile's detectors (loopscope_core::fuzzing::detect_and_scan).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::detect_and_scan(data));
