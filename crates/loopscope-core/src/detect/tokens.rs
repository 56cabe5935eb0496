//! A tokenizer handed to the detectors that count tokens (profile `vllm`):
//! the app loads it (`--tokenizer FILE`, a Hugging Face `tokenizer.json`);
//! the core only calls it, so it stays free of the tokenizer's
//! dependencies and does no I/O.

use std::fmt;
use std::sync::Arc;

/// The function that turns text into token ids.
type EncodeFn = dyn Fn(&str) -> Vec<u32> + Send + Sync;

/// Text to token ids, and a name for listings.
#[derive(Clone)]
pub struct Encoder {
    name: Arc<str>,
    encode: Arc<EncodeFn>,
}

impl Encoder {
    /// An encoder called `name` (the tokenizer file) running `encode`.
    pub fn new(name: impl Into<Arc<str>>, encode: impl Fn(&str) -> Vec<u32> + Send + Sync + 'static) -> Encoder {
        Encoder {
            name: name.into(),
            encode: Arc::new(encode),
        }
    }

    /// The token ids of `text` (no special tokens added).
    pub(crate) fn encode(&self, text: &str) -> Vec<u32> {
        (self.encode)(text)
    }

    /// What it was loaded from.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Encoder({})", self.name)
    }
}

/// Setups compare by what they run: two encoders are the same when they
/// were loaded from the same file.
impl PartialEq for Encoder {
    fn eq(&self, other: &Encoder) -> bool {
        self.name == other.name
    }
}
