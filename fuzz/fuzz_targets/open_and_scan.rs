#![no_main]
// A whole input opened as scan opens a file: detection, zstd (one level),
// decoding and every profile's detectors (loopscope_core::fuzzing::open_and_scan).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::open_and_scan(data));
