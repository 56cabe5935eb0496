//! How the app reads its inputs: `--format` with `--max-record`, as the
//! core's [`ReadOptions`]. The core takes the record limit as an option on
//! every call; the command line gives it once (`main` sets it before a
//! command runs), so every part of the app that opens an input, follows a
//! file or builds an importer takes it from here rather than passing the
//! flag through each of its option structs.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use loopscope_core::formats::detect::AutoDecoder;
use loopscope_core::formats::{Decoder, FormatChoice, DEFAULT_MAX_RECORD};
use loopscope_core::ReadOptions;

static MAX_RECORD: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_RECORD);

/// Sets the longest record read (`--max-record`), once, before a command runs.
pub fn set_max_record(bytes: usize) {
    MAX_RECORD.store(bytes.max(1), Ordering::Relaxed);
}

/// The longest record read (`--max-record`).
pub fn max_record() -> usize {
    MAX_RECORD.load(Ordering::Relaxed)
}

/// The core's options for reading with `format` and the command line's record limit.
pub fn options(format: FormatChoice) -> ReadOptions {
    ReadOptions::from(format).with_max_record(max_record())
}

/// Opens `path` as an input ([`loopscope_core::formats::open_input`]) with
/// the command line's record limit.
pub fn open_input(path: &Path, format: FormatChoice) -> Result<loopscope_core::formats::Opened, String> {
    loopscope_core::formats::open_input(path, options(format)).map_err(String::from)
}

/// An importer that detects the format of a growing input (or uses
/// `format`), reading `part` of a file that holds several streams.
pub fn auto_decoder(format: FormatChoice, hint: Option<&str>, part: Option<&str>) -> AutoDecoder {
    let mut d = AutoDecoder::with_part(format, hint, part);
    d.set_max_record(max_record());
    d
}
