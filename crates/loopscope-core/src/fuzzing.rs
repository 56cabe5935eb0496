//! The bodies of the fuzz targets, shared by `fuzz/` (cargo-fuzz, nightly)
//! and `tests/fuzz_stable.rs` (a bounded run under stable in every CI run),
//! so both exercise exactly the same code. Each body must never panic,
//! hang or allocate without bound, whatever the bytes.

use crate::config::Setup;
use crate::detect::Profile;
use crate::engine::Engine;
use crate::formats::detect::{AutoDecoder, Kind};
use crate::formats::{Decoder, FormatChoice, Item};

/// Every importer by the name of its fuzz target.
pub const DECODERS: [(&str, Kind); 33] = [
    ("native", Kind::Native),
    ("openai_chat", Kind::OpenaiChat),
    ("openai_responses", Kind::OpenaiResponses),
    ("anthropic", Kind::Anthropic),
    ("gemini", Kind::Gemini),
    ("gemini_array", Kind::GeminiArray),
    ("claude_code", Kind::ClaudeCode),
    ("qwen_code", Kind::QwenCode),
    ("codex", Kind::Codex),
    ("gemini_cli_jsonl", Kind::GeminiCliJsonl),
    ("gemini_cli_legacy", Kind::GeminiCliLegacy),
    ("gemini_contents", Kind::GeminiContents),
    ("cline_ui", Kind::ClineUi),
    ("cline_api", Kind::ClineApi),
    ("cassette", Kind::Cassette),
    ("messages", Kind::Messages),
    ("rows", Kind::Rows),
    ("pi_session", Kind::PiSession),
    ("pi_stream", Kind::PiStream),
    ("opencode_lines", Kind::OpencodeLines),
    ("opencode_export", Kind::OpencodeExport),
    ("copilot_events", Kind::CopilotEvents),
    ("openhands_events", Kind::OpenhandsEvents),
    ("openhands_v0", Kind::OpenhandsV0),
    ("goose_rows", Kind::GooseRows),
    ("crush_rows", Kind::CrushRows),
    ("openclaw_rows", Kind::OpenclawRows),
    ("claude_trace", Kind::ClaudeTrace),
    ("mini_swe", Kind::MiniSwe),
    ("swe_agent", Kind::SweAgent),
    ("atif", Kind::Atif),
    ("aider", Kind::Aider),
    ("otel", Kind::Otel),
];

/// The cargo-fuzz target (a file in `fuzz/fuzz_targets`) that reads each
/// kind of input. The match has no catch-all: a new kind does not build
/// until it names its target (tests/fuzz_stable.rs checks the file exists).
pub fn target_for(kind: Kind) -> &'static str {
    match kind {
        Kind::Native => "decode_native",
        Kind::OpenaiChat => "decode_openai_chat",
        Kind::OpenaiResponses => "decode_openai_responses",
        Kind::Anthropic => "decode_anthropic",
        Kind::Gemini => "decode_gemini",
        Kind::GeminiArray => "decode_gemini_array",
        Kind::ClaudeCode => "decode_claude_code",
        Kind::QwenCode => "decode_qwen_code",
        Kind::Codex => "decode_codex",
        Kind::GeminiCliJsonl => "decode_gemini_cli_jsonl",
        Kind::GeminiCliLegacy => "decode_gemini_cli_legacy",
        Kind::GeminiContents => "decode_gemini_contents",
        Kind::ClineUi => "decode_cline_ui",
        Kind::ClineApi => "decode_cline_api",
        Kind::PiSession => "decode_pi_session",
        Kind::PiStream => "decode_pi_stream",
        Kind::OpencodeLines => "decode_opencode_lines",
        Kind::OpencodeExport => "decode_opencode_export",
        Kind::CopilotEvents => "decode_copilot_events",
        Kind::OpenhandsEvents => "decode_openhands_events",
        Kind::OpenhandsV0 => "decode_openhands_v0",
        Kind::GooseRows => "decode_goose_rows",
        Kind::CrushRows => "decode_crush_rows",
        Kind::OpenclawRows => "decode_openclaw_rows",
        Kind::ClaudeTrace => "decode_claude_trace",
        Kind::MiniSwe => "decode_mini_swe",
        Kind::SweAgent => "decode_swe_agent",
        Kind::Atif => "decode_atif",
        Kind::Aider => "decode_aider",
        Kind::Otel => "decode_otel",
        Kind::Cassette => "decode_cassette",
        Kind::Zstd => "zstd_input",
        Kind::Messages => "decode_messages",
        Kind::Rows => "decode_rows",
        Kind::Parquet => "parquet_rows",
    }
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
