#![no_main]
// format detection, decoding and every profile's detectors (loopscope::fuzzing::detect_and_scan).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope::fuzzing::detect_and_scan(data));
