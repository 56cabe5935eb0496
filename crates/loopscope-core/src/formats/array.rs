//! A JSON array streamed element by element (Gemini without `alt=sse`:
//! `[` then objects separated by commas, then `]`): complete top-level
//! elements are handed out as soon as their closing brace arrives.

#[derive(Debug)]
pub struct ArraySplitter {
    /// The longest element held (see [`super::Decoder::set_max_record`]).
    pub max_record: usize,
    /// Bytes of the element being read.
    element: Vec<u8>,
    started: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Line of the input, for problem reports.
    line: u64,
    element_line: u64,
    /// The element passed the record limit: its bytes are dropped.
    dropping: bool,
    /// Lines of elements skipped for their length.
    pub overlong: Vec<u64>,
}

impl Default for ArraySplitter {
    fn default() -> ArraySplitter {
        ArraySplitter {
            max_record: super::DEFAULT_MAX_RECORD,
            element: Vec::new(),
            started: false,
            depth: 0,
            in_string: false,
            escaped: false,
            line: 0,
            element_line: 0,
            dropping: false,
            overlong: Vec::new(),
        }
    }
}

impl ArraySplitter {
    /// Calls `f(line, element)` for every element completed by `bytes`.
    pub fn feed(&mut self, bytes: &[u8], mut f: impl FnMut(u64, &[u8])) {
        for &b in bytes {
            if b == b'\n' {
                self.line += 1;
            }
            if !self.started {
                if b == b'[' {
                    self.started = true;
                }
                continue;
            }
            if self.depth == 0 && !self.in_string {
                match b {
                    b'{' | b'[' => {
                        self.element.clear();
                        self.element_line = self.line + 1;
                    }
                    b'"' => {
                        self.element.clear();
                        self.element_line = self.line + 1;
                    }
                    // Separators, whitespace and the closing bracket are between elements.
                    _ => continue,
                }
            }
            if !self.dropping {
                if self.element.len() >= self.max_record {
                    self.dropping = true;
                    self.element = Vec::new();
                } else {
                    self.element.push(b);
                }
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        self.complete(&mut f);
                    }
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.complete(&mut f);
                    }
                }
                _ => {}
            }
        }
    }
}

impl ArraySplitter {
    fn complete(&mut self, f: &mut impl FnMut(u64, &[u8])) {
        if std::mem::take(&mut self.dropping) {
            self.overlong.push(self.element_line);
        } else {
            f(self.element_line, &self.element);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_come_out_whole_however_the_input_is_split() {
        let input = b"[{\"a\":\"}],{\",\"b\":[1,2]}\n,\n{\"c\":{}}\n]";
        let mut whole = Vec::new();
        ArraySplitter::default().feed(input, |_, e| whole.push(String::from_utf8_lossy(e).into_owned()));
        assert_eq!(whole, vec!["{\"a\":\"}],{\",\"b\":[1,2]}", "{\"c\":{}}"]);
        let mut split = Vec::new();
        let mut s = ArraySplitter::default();
        for b in input {
            s.feed(std::slice::from_ref(b), |_, e| {
                split.push(String::from_utf8_lossy(e).into_owned())
            });
        }
        assert_eq!(split, whole);
    }
}
