#![no_main]
// A Parquet dataset, damaged any way: every row read as scan reads them,
// and one row as view opens it (loopscope_core::fuzzing::parquet_rows). Seed it
// with tests/fixtures/rows/*.parquet.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::parquet_rows(data));
