//! Format detection for inputs that grow (`tail`, `watch`, a monitor):
//! the first bytes that arrive pick the importer, then it decodes them.

use super::detect::{classify, for_choice, Kind, MAX_HEAD};
use super::{Decoder, Format, FormatChoice, Item, Out};

/// Detects the format from the first bytes that arrive, then decodes with
/// it: for inputs that grow (`tail`), where nothing can be read ahead.
pub struct AutoDecoder {
    choice: FormatChoice,
    hint: Option<String>,
    /// A sub-agent's stream in a file that holds several (`FILE#ID`).
    part: Option<String>,
    head: Vec<u8>,
    inner: Option<Box<dyn Decoder>>,
    /// What the input was detected as, once it was.
    kind: Option<Kind>,
    failed: bool,
    /// Head length at which classification is tried next (it doubles).
    next_try: usize,
    /// Bytes of head classified so far, over every try (the work done).
    classified: usize,
    /// The longest record the importer holds, once it is chosen.
    max_record: usize,
}

impl AutoDecoder {
    /// A decoder that detects the format (or uses `choice`); `hint` is the file name.
    pub fn new(choice: FormatChoice, hint: Option<&str>) -> AutoDecoder {
        AutoDecoder::with_part(choice, hint, None)
    }

    /// As [`AutoDecoder::new`], reading the sub-agent `part` of a file that holds several.
    pub fn with_part(choice: FormatChoice, hint: Option<&str>, part: Option<&str>) -> AutoDecoder {
        AutoDecoder {
            choice,
            hint: hint.map(str::to_string),
            part: part.map(str::to_string),
            head: Vec::new(),
            inner: None,
            kind: None,
            failed: false,
            next_try: 0,
            classified: 0,
            max_record: super::DEFAULT_MAX_RECORD,
        }
    }

    /// Bytes looked at to tell the format, over every try: at most about
    /// twice the head, however small the writes it came in.
    pub fn bytes_classified(&self) -> usize {
        self.classified
    }

    fn settle(&mut self, complete: bool, out: &mut Vec<Item>) {
        if self.inner.is_some() || self.failed {
            return;
        }
        let complete = complete || self.head.len() >= MAX_HEAD;
        if !complete && self.head.len() < self.next_try {
            return;
        }
        self.next_try = self.head.len() * 2;
        self.classified += self.head.len();
        let found = match (classify(&self.head, complete, self.hint.as_deref()), self.choice) {
            (Ok(Some(Kind::Zstd)), _) => {
                Err("a compressed file cannot be followed as it grows; read it with scan or view".to_string())
            }
            (Ok(Some(k)), FormatChoice::Auto) => Ok(Some(k)),
            (Ok(k), FormatChoice::Fixed(f)) if k.is_some() || complete => Ok(Some(for_choice(f, k))),
            (Err(_), FormatChoice::Fixed(f)) => Ok(Some(f.default_kind())),
            (other, _) => other.map_err(String::from),
        };
        let found = match found {
            Ok(Some(k)) if self.part.is_some() && !k.has_parts() => Err(format!(
                "{} holds one stream: #{} names none in it",
                k.format(),
                self.part.as_deref().unwrap_or_default()
            )),
            other => other,
        };
        match found {
            Ok(Some(kind)) => {
                let mut inner = kind.build_part(self.part.as_deref());
                inner.set_max_record(self.max_record);
                inner.feed(&std::mem::take(&mut self.head), out);
                self.inner = Some(inner);
                self.kind = Some(kind);
            }
            Ok(None) => {}
            Err(e) => {
                self.failed = true;
                Out::new(out, 1).problem(e);
            }
        }
    }
}

impl Decoder for AutoDecoder {
    fn set_max_record(&mut self, bytes: usize) {
        // The head read to tell the format is bounded on its own (MAX_HEAD).
        self.max_record = bytes.max(1);
        if let Some(inner) = &mut self.inner {
            inner.set_max_record(bytes);
        }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        match &mut self.inner {
            Some(inner) => inner.feed(bytes, out),
            None if !self.failed => {
                self.head.extend_from_slice(bytes);
                self.settle(false, out);
            }
            None => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.settle(true, out);
        if let Some(inner) = &mut self.inner {
            inner.finish(out);
        }
    }

    fn feed_to(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Item)) {
        match &mut self.inner {
            Some(inner) => inner.feed_to(bytes, sink),
            None => {
                let mut items = Vec::new();
                self.feed(bytes, &mut items);
                items.into_iter().for_each(sink);
            }
        }
    }

    fn rewrites_whole_file(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.rewrites_whole_file())
    }

    fn reread(&mut self, whole: &[u8], out: &mut Vec<Item>) {
        if let Some(inner) = &mut self.inner {
            inner.reread(whole, out);
        }
    }

    fn format(&self) -> Option<Format> {
        let inner = self.inner.as_ref().and_then(|i| i.format());
        inner.or(self.kind.map(Kind::format))
    }

    fn caught_up(&mut self, out: &mut Vec<Item>) {
        if let Some(inner) = &mut self.inner {
            inner.caught_up(out);
        }
    }
}
