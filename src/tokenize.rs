//! `--tokenizer FILE`: a Hugging Face `tokenizer.json` (the file every model
//! repository ships) loaded with Hugging Face's `tokenizers`, handed to the
//! detectors that compare token ids (profile `vllm`) for text events whose
//! log carries no `token_ids`.
//!
//! Each delta is tokenised on its own, without special tokens: a vLLM
//! stream's deltas are the detokenised text of its tokens, so a one-token
//! delta gives that token back (a merge across two deltas is the one way
//! the ids can differ from the server's; logs with `token_ids` are exact).

use loopscope_core::detect::Encoder;
use std::path::Path;

/// The most read of a tokenizer file: the largest in common use (Gemma's,
/// 256k entries) is about 35 MB.
pub const MAX_TOKENIZER_FILE: u64 = 256 << 20;

/// Loads `path`; the error is one line naming the file.
pub fn load(path: &Path) -> Result<Encoder, String> {
    use std::io::Read;
    let name = loopscope_core::sanitize::path(path);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TOKENIZER_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("--tokenizer {name}: {}", loopscope_core::io_reason(&e)))?;
    if bytes.len() as u64 > MAX_TOKENIZER_FILE {
        return Err(format!("--tokenizer {name}: longer than 256 MB, not a tokenizer.json"));
    }
    let tokenizer = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().next().unwrap_or_default();
        format!(
            "--tokenizer {name}: not a Hugging Face tokenizer.json ({})",
            loopscope_core::detect::quote(why, 160).trim_matches('"')
        )
    })?;
    Ok(Encoder::new(path.display().to_string(), move |text: &str| {
        // Encoding fails only on input the model cannot hold; then the
        // delta counts as no token rather than stopping the run.
        tokenizer
            .encode_fast(text, false)
            .map(|e| e.get_ids().to_vec())
            .unwrap_or_default()
    }))
}
