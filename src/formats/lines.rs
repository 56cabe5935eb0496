//! Splitting input into lines as bytes arrive. A line without its newline
//! is held back until the newline comes (or the input ends); line numbers
//! count every line, blank ones included, like an editor's.

#[derive(Debug, Default)]
pub struct Lines {
    pending: Vec<u8>,
    line: u64,
}

impl Lines {
    /// Calls `f(line_number, line)` for every complete line in `bytes`
    /// (plus what earlier calls held back); `\r\n` and a leading BOM are removed.
    pub fn feed(&mut self, bytes: &[u8], mut f: impl FnMut(u64, &[u8])) {
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            if self.pending.is_empty() {
                self.emit(&rest[..nl], &mut f);
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&rest[..nl]);
                self.emit(&line, &mut f);
            }
            rest = &rest[nl + 1..];
        }
        self.pending.extend_from_slice(rest);
    }

    /// The input ended: a last line without a newline is a line too.
    pub fn finish(&mut self, mut f: impl FnMut(u64, &[u8])) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line, &mut f);
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
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
