//! Splitting input into lines as bytes arrive. A line without its newline
//! is held back until the newline comes (or the input ends); line numbers
//! count every line, blank ones included, like an editor's.

#[derive(Debug)]
pub struct Lines {
    /// The longest line held (see [`super::Decoder::set_max_record`]).
    max_record: usize,
    pending: Vec<u8>,
    line: u64,
    /// The line being read passed the record limit: its bytes are dropped.
    dropping: bool,
    /// Lines dropped for their length, to be reported by the decoder.
    overlong: Vec<u64>,
}

impl Default for Lines {
    fn default() -> Lines {
        Lines {
            max_record: super::DEFAULT_MAX_RECORD,
            pending: Vec::new(),
            line: 0,
            dropping: false,
            overlong: Vec::new(),
        }
    }
}

impl Lines {
    /// Sets the longest line held; a longer one is dropped as it arrives.
    pub fn set_max_record(&mut self, bytes: usize) {
        self.max_record = bytes.max(1);
    }

    /// The longest line held.
    pub fn max_record(&self) -> usize {
        self.max_record
    }

    /// Calls `f(line_number, line)` for every complete line in `bytes`
    /// (plus what earlier calls held back); `\r\n` and a leading BOM are removed.
    pub fn feed(&mut self, bytes: &[u8], mut f: impl FnMut(u64, &[u8])) {
        let mut rest = bytes;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            if self.dropping || self.pending.len() + nl > self.max_record {
                self.dropping = false;
                self.pending = Vec::new();
                self.line += 1;
                self.overlong.push(self.line);
            } else if self.pending.is_empty() {
                self.emit(&rest[..nl], &mut f);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&rest[..nl]);
                self.emit(&line, &mut f);
            }
            rest = &rest[nl + 1..];
        }
        if !self.dropping && self.pending.len() + rest.len() > self.max_record {
            // Held no longer: a line this long is reported and skipped.
            self.dropping = true;
            self.pending = Vec::new();
        }
        if !self.dropping {
            self.pending.extend_from_slice(rest);
        }
    }

    /// Line numbers of lines skipped for passing the record limit since
    /// the last call.
    pub fn take_overlong(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.overlong)
    }

    /// The input ended: a last line without a newline is a line too.
    pub fn finish(&mut self, mut f: impl FnMut(u64, &[u8])) {
        if self.dropping {
            self.dropping = false;
            self.line += 1;
            self.overlong.push(self.line);
        } else if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line, &mut f);
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty() || self.dropping
    }

    fn emit(&mut self, raw: &[u8], f: &mut impl FnMut(u64, &[u8])) {
        self.line += 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let raw = if self.line == 1 {
            raw.strip_prefix("\u{feff}".as_bytes()).unwrap_or(raw)
        } else {
            raw
        };
        f(self.line, raw);
    }
}

/// Parses one line as JSON, with a reason fit for a bad-line report.
pub fn parse_json(raw: &[u8]) -> Result<serde_json::Value, String> {
    let text =
        std::str::from_utf8(raw).map_err(|e| format!("not valid UTF-8 (bad byte at byte {})", e.valid_up_to() + 1))?;
    serde_json::from_str(text).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]);
        format!("not valid JSON ({msg} at column {})", e.column())
    })
}

/// Whether a line has nothing but whitespace.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_over_the_limit_is_dropped_as_it_arrives_and_counted() {
        let limit = 3 << 20;
        let mut lines = Lines::default();
        lines.set_max_record(limit);
        let mut got = Vec::new();
        lines.feed(b"ok\n", |n, l| got.push((n, l.len())));
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..=(limit >> 20) {
            lines.feed(&chunk, |n, l| got.push((n, l.len())));
            assert!(lines.pending.len() <= limit);
        }
        lines.feed(b"\nnext\n", |n, l| got.push((n, l.len())));
        assert_eq!(got, vec![(1, 2), (3, 4)]);
        assert_eq!(lines.take_overlong(), vec![2]);
    }
}
