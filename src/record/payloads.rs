//! A stream cut into its payloads (an SSE event, a line, an array
//! element): a guarded response is passed on payload by payload, so that
//! when the guard ends it the client has received whole payloads only and
//! the API's own end can follow.

use serde_json::Value;

use super::protocol::Shape;

/// Finds where each payload of a stream ends, across reads.
#[derive(Debug)]
pub struct Units {
    shape: Shape,
    /// Bytes of the buffer already looked at.
    scanned: usize,
    /// SSE: non-blank bytes in the current line.
    line_len: usize,
    /// Array: JSON nesting depth, and string state.
    depth: u32,
    in_string: bool,
    escaped: bool,
}

impl Units {
    pub fn new(shape: Shape) -> Units {
        Units {
            shape,
            scanned: 0,
            line_len: 0,
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// The end (exclusive) of the first complete payload in `buf`, which
    /// starts where the previous payload ended; the caller then drops those
    /// bytes. `None`: more bytes are needed.
    pub fn next_end(&mut self, buf: &[u8]) -> Option<usize> {
        for (i, &b) in buf.iter().enumerate().skip(self.scanned) {
            if self.boundary_after(b) {
                self.scanned = 0;
                return Some(i + 1);
            }
        }
        self.scanned = buf.len();
        None
    }

    fn boundary_after(&mut self, b: u8) -> bool {
        match self.shape {
            Shape::Sse => match b {
                b'\n' => std::mem::replace(&mut self.line_len, 0) == 0,
                b'\r' => false,
                _ => {
                    self.line_len += 1;
                    false
                }
            },
            Shape::Lines => b == b'\n',
            Shape::Array => {
                if self.in_string {
                    match (self.escaped, b) {
                        (true, _) => self.escaped = false,
                        (false, b'\\') => self.escaped = true,
                        (false, b'"') => self.in_string = false,
                        _ => {}
                    }
                    return false;
                }
                match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        return self.depth <= 1;
                    }
                    _ => {}
                }
                false
            }
        }
    }
}

/// The payload a unit carries: its SSE event name and its JSON data.
pub fn payload_of(unit: &[u8], shape: Shape) -> Option<(Option<String>, Value)> {
    let text = String::from_utf8_lossy(unit);
    match shape {
        Shape::Sse => {
            let mut event = None;
            let mut data = String::new();
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            let value = serde_json::from_str(&data).ok()?;
            Some((event, value))
        }
        Shape::Lines | Shape::Array => {
            let t = text.trim().trim_start_matches(['[', ',']).trim_end_matches(']').trim();
            serde_json::from_str(t).ok().map(|v| (None, v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(shape: Shape, input: &[u8], step: usize) -> Vec<String> {
        let mut units = Units::new(shape);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            buf.extend_from_slice(piece);
            while let Some(end) = units.next_end(&buf) {
                out.push(String::from_utf8(buf.drain(..end).collect()).unwrap());
            }
        }
        out
    }

    #[test]
    fn sse_events_split_at_blank_lines_however_the_bytes_come() {
        let input = b"event: a\r\ndata: {\"x\":1}\r\n\r\ndata: {\"y\":\"\\n\\n\"}\n\ndata: [DONE]\n\n";
        for step in [1, 3, 100] {
            let got = split(Shape::Sse, input, step);
            assert_eq!(got.len(), 3, "{got:?}");
            assert_eq!(
                payload_of(got[0].as_bytes(), Shape::Sse).unwrap().0.as_deref(),
                Some("a")
            );
            assert!(payload_of(got[2].as_bytes(), Shape::Sse).is_none());
        }
    }

    #[test]
    fn array_elements_split_after_each_closing_brace() {
        let input = b"[{\"a\":\"}{\\\"\",\"b\":[1,{\"c\":2}]}\r\n,\r\n{\"d\":\"\xe6\x80\x9d\"}\r\n]";
        for step in [1, 4, 1000] {
            let got = split(Shape::Array, input, step);
            assert_eq!(got.len(), 3, "{got:?}");
            assert_eq!(payload_of(got[0].as_bytes(), Shape::Array).unwrap().1["b"][1]["c"], 2);
            assert_eq!(payload_of(got[1].as_bytes(), Shape::Array).unwrap().1["d"], "思");
            assert!(payload_of(got[2].as_bytes(), Shape::Array).is_none());
        }
    }
}
