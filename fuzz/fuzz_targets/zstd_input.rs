#![no_main]
// A zstd input (a compressed rollout): decompressed (one level), detected,
// decoded and scanned (loopscope_core::fuzzing::zstd_input).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::zstd_input(data));
