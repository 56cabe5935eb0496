//! The bodies of the fuzz targets, shared by `fuzz/` (cargo-fuzz, nightly)
//! and `tests/fuzz_stable.rs` (a bounded run under stable in every CI run),
//! so both exercise exactly the same code. Each body must never panic,
//! hang or allocate without bound, whatever the bytes.

use crate::config::Setup;
use crate::detect::Profile;
use crate::engine::Engine;
use crate::formats::detect::{AutoDecoder, Kind};
use crate::formats::registry::KINDS;
use crate::formats::{Decoder, FormatChoice, Item};

/// Every importer fuzzed through [`decode`], by its fuzz target's name
/// without `decode_`: the kinds whose target in the format table
/// (formats/registry.rs) is a `decode_*` one.
pub fn decoders() -> Vec<(&'static str, Kind)> {
    KINDS
        .iter()
        .filter_map(|k| Some((k.fuzz.strip_prefix(DECODE)?, k.kind)))
        .collect()
}

/// The prefix of the fuzz targets generated from the format table.
pub const DECODE: &str = "decode_";

/// The cargo-fuzz target (a file in `fuzz/fuzz_targets`) that reads each
/// kind of input, as its row in the format table names it
/// (tests/fuzz_stable.rs checks the file exists).
pub fn target_for(kind: Kind) -> &'static str {
    kind.entry().fuzz
}

/// The source of the cargo-fuzz target of a kind fuzzed through
/// [`decode`]: tests/fuzz_stable.rs checks each file holds it (and writes
/// the missing ones when asked), so a new row needs no hand-written target.
pub fn decode_target_source(name: &str, kind: Kind) -> String {
    format!(
        "#![no_main]\n\
         // The {name} importer, fed in pieces (loopscope_core::fuzzing::decode).\n\
         // Generated from its row in formats/registry.rs (tests/fuzz_stable.rs).\n\
         use libfuzzer_sys::fuzz_target;\n\
         use loopscope_core::formats::detect::Kind;\n\
         \n\
         fuzz_target!(|data: &[u8]| loopscope_core::fuzzing::decode(Kind::{kind:?}, data));\n"
    )
}

/// The `[[bin]]` section of fuzz/Cargo.toml for a fuzz target.
pub fn fuzz_manifest_entry(target: &str) -> String {
    format!(
        "[[bin]]\nname = \"{target}\"\npath = \"fuzz_targets/{target}.rs\"\ntest = false\ndoc = false\nbench = false\n"
    )
}

/// The magic number every zstd frame starts with.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// A zstd input (a compressed Codex rollout, any compressed log): the
/// bytes as a frame (the magic number put in front when missing, so every
/// input reaches the decompressor), opened and scanned as `scan` does.
pub fn zstd_input(data: &[u8]) {
    if data.starts_with(&ZSTD_MAGIC) {
        open_and_scan(data);
    } else {
        let mut framed = ZSTD_MAGIC.to_vec();
        framed.extend_from_slice(data);
        open_and_scan(&framed);
    }
}

/// A Parquet dataset, damaged any way: written to a temporary file (Parquet
/// is read by seeking), every row read as `scan` reads them (whole rows,
/// then a named column and id field), and one row as `view FILE#ROW` opens
/// it. The file is removed afterwards.
pub fn parquet_rows(data: &[u8]) {
    use crate::formats::rows::{each_parquet, parquet_row, RowOptions};
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "loopscope-fuzz-rows-{}-{}.parquet",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let named = RowOptions {
        column: Some("messages".to_string()),
        id_field: Some("instance_id".to_string()),
        ..RowOptions::default()
    };
    for opts in [RowOptions::default(), named] {
        let _ = each_parquet(&path, &opts, |_| {});
    }
    let _ = parquet_row(&path, Some("2"), &RowOptions::default());
    let _ = std::fs::remove_file(&path);
}

/// Splits `data` at points taken from its own first bytes, so the fuzzer
/// also explores how input arrives (a record cut anywhere).
fn pieces(data: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let (cuts, body) = match data.split_first() {
        Some((&n, rest)) => {
            let n = usize::from(n % 8).min(rest.len());
            rest.split_at(n)
        }
        None => return (Vec::new(), data),
    };
    let mut out = Vec::new();
    let mut rest = body;
    for &c in cuts {
        let at = usize::from(c).min(rest.len());
        let (a, b) = rest.split_at(at);
        out.push(a);
        rest = b;
    }
    out.push(rest);
    (out, body)
}

fn drain(decoder: &mut dyn Decoder, pieces: &[&[u8]]) -> Vec<Item> {
    let mut items = Vec::new();
    for p in pieces {
        decoder.feed(p, &mut items);
    }
    decoder.finish(&mut items);
    items
}

/// One importer over the bytes, fed in pieces; then the whole file again
/// as a rewrite (the path `tail` takes for whole-document formats).
pub fn decode(kind: Kind, data: &[u8]) {
    let (pieces, body) = pieces(data);
    let mut decoder = kind.build();
    let _ = drain(&mut *decoder, &pieces);
    if decoder.rewrites_whole_file() {
        let mut items = Vec::new();
        decoder.reread(body, &mut items);
        decoder.reread(body, &mut items);
    }
}

/// Format detection from the first bytes (as `tail` does), then decoding,
/// then every event through the engine under every profile.
pub fn detect_and_scan(data: &[u8]) {
    let (pieces, _) = pieces(data);
    let mut decoder = AutoDecoder::new(FormatChoice::Auto, None);
    let items = drain(&mut decoder, &pieces);
    run_every_profile(&items);
}

/// A whole input opened as `scan` and `view` open a file: detection from
/// its head, zstd decompression (one level; deeper is refused), then
/// decoding and every profile's detectors.
pub fn open_and_scan(data: &[u8]) {
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(opened) = crate::formats::detect::open_reader(reader, FormatChoice::Auto, None) else {
        return;
    };
    let mut decoder = opened.decoder;
    let mut items = Vec::new();
    // A read error (a corrupt frame) ends the input, as it does in scan.
    let _ = crate::formats::decode_all(opened.reader, &mut *decoder, |item| items.push(item));
    run_every_profile(&items);
}

/// Native JSONL straight into the engine: the detectors see arbitrary
/// text, calls and results, in any order.
pub fn engine(data: &[u8]) {
    let (pieces, _) = pieces(data);
    let mut decoder = Kind::Native.build();
    let items = drain(&mut *decoder, &pieces);
    run_every_profile(&items);
}

/// Every decoded event through a fresh engine of each profile.
fn run_every_profile(items: &[Item]) {
    for profile in Profile::ALL {
        let mut engine = Engine::new(&Setup::profile(profile));
        for item in items {
            if let Item::Event(e, _) = item {
                let _ = engine.push(e);
            }
        }
        let _ = engine.states();
    }
}

/// A store read from bytes that may be a (damaged) SQLite database: written
/// to a temporary file, listed, and each session read to its end. The file
/// is removed afterwards.
pub fn store(data: &[u8]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "loopscope-fuzz-store-{}-{}.db",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    if let Ok(Some(streams)) = crate::formats::source::streams(&path) {
        for s in streams.iter().take(8) {
            if let Ok(opened) = crate::formats::open_input(&s.path, FormatChoice::Auto) {
                let mut decoder = opened.decoder;
                let _ = crate::formats::decode_all(opened.reader, &mut *decoder, |_| {});
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}
