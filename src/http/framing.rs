//! HTTP/1.1 framing, shared by both sides of the proxy: heads read with
//! httparse, bodies delimited by Content-Length, chunked coding or the end
//! of the connection, hop-by-hop headers, and chunks written toward the client.

use std::io::{self, BufRead, Write};

/// The longest request or response head read (status line and headers).
pub const MAX_HEAD: usize = 64 * 1024;
/// The most headers a head may have.
const MAX_HEADERS: usize = 128;
/// The longest chunk-size or trailer line.
const MAX_LINE: usize = 4096;

/// One header as it came: its name's spelling and its raw value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: Vec<u8>,
}

/// Why a head could not be read.
#[derive(Debug)]
pub enum HeadError {
    Io(io::Error),
    /// Not HTTP, or a head over [`MAX_HEAD`] or [`MAX_HEADERS`]: the status to answer with.
    Bad(u16, String),
}

impl From<io::Error> for HeadError {
    fn from(e: io::Error) -> HeadError {
        HeadError::Io(e)
    }
}

/// A request line and its headers.
#[derive(Debug)]
pub struct RequestHead {
    pub method: String,
    /// The request target as sent (origin form: path and query).
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub headers: Vec<Header>,
}

/// A status line and its headers.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: u16,
    pub reason: String,
    pub version: u8,
    pub headers: Vec<Header>,
}

/// Headers from name and value pairs (for tests).
#[cfg(test)]
pub fn headers(pairs: &[(&str, &str)]) -> Vec<Header> {
    pairs
        .iter()
        .map(|(n, v)| Header {
            name: n.to_string(),
            value: v.as_bytes().to_vec(),
        })
        .collect()
}

fn headers_of(parsed: &[httparse::Header<'_>]) -> Vec<Header> {
    parsed
        .iter()
        .map(|h| Header {
            name: h.name.to_string(),
            value: h.value.to_vec(),
        })
        .collect()
}

/// Reads one head, consuming exactly its bytes. `parse` gets the bytes so
/// far and says `Some(len)` once they hold a complete head. `Ok(None)`: the
/// connection ended cleanly before any byte.
fn read_head_with<T>(
    r: &mut impl BufRead,
    mut parse: impl FnMut(&[u8]) -> Result<Option<(usize, T)>, HeadError>,
) -> Result<Option<T>, HeadError> {
    let mut head: Vec<u8> = Vec::new();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            if head.is_empty() {
                return Ok(None);
            }
            return Err(HeadError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection ended inside a head",
            )));
        }
        let before = head.len();
        let take = buf.len().min(MAX_HEAD + 1 - before);
        head.extend_from_slice(&buf[..take]);
        // Only a new line break can complete a head.
        if head[before..].contains(&b'\n') {
            if let Some((len, value)) = parse(&head)? {
                r.consume(len - before);
                return Ok(Some(value));
            }
        }
        r.consume(take);
        if head.len() > MAX_HEAD {
            return Err(HeadError::Bad(431, format!("a head longer than {MAX_HEAD} bytes")));
        }
    }
}

fn parse_error(e: httparse::Error) -> HeadError {
    match e {
        httparse::Error::TooManyHeaders => HeadError::Bad(431, format!("more than {MAX_HEADERS} headers")),
        other => HeadError::Bad(400, format!("not an HTTP/1.1 head ({other})")),
    }
}

/// Reads a request head; `Ok(None)` when the client closed the connection between requests.
pub fn read_request_head(r: &mut impl BufRead) -> Result<Option<RequestHead>, HeadError> {
    read_head_with(r, |bytes| {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(bytes).map_err(parse_error)? {
            httparse::Status::Partial => Ok(None),
            httparse::Status::Complete(len) => Ok(Some((
                len,
                RequestHead {
                    method: req.method.unwrap_or_default().to_string(),
                    target: req.path.unwrap_or_default().to_string(),
                    version: req.version.unwrap_or(1),
                    headers: headers_of(req.headers),
                },
            ))),
        }
    })
}

/// Reads a response head (informational 1xx heads are skipped).
pub fn read_response_head(r: &mut impl BufRead) -> Result<Option<ResponseHead>, HeadError> {
    loop {
        let head = read_head_with(r, |bytes| {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(bytes).map_err(parse_error)? {
                httparse::Status::Partial => Ok(None),
                httparse::Status::Complete(len) => Ok(Some((
                    len,
                    ResponseHead {
                        status: resp.code.unwrap_or(0),
                        reason: resp.reason.unwrap_or_default().to_string(),
                        version: resp.version.unwrap_or(1),
                        headers: headers_of(resp.headers),
                    },
                ))),
            }
        })?;
        match head {
            Some(h) if (100..200).contains(&h.status) && h.status != 101 => continue,
            other => return Ok(other),
        }
    }
}

/// The value of a header (the first of that name), as text.
pub fn header<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .and_then(|h| std::str::from_utf8(&h.value).ok())
        .map(str::trim)
}

/// Whether a comma-separated header (Connection, Transfer-Encoding) holds `token`.
pub fn has_token(headers: &[Header], name: &str, token: &str) -> bool {
    headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .filter_map(|h| std::str::from_utf8(&h.value).ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// Headers that belong to one connection, not to the message: a proxy
/// never passes them on (RFC 9110 §7.6.1), nor those the Connection header names.
pub fn is_hop_by_hop(name: &str, headers: &[Header]) -> bool {
    const HOP: [&str; 9] = [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ];
    HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) || has_token(headers, "connection", name)
}

/// How a message body is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    Empty,
    Length(u64),
    Chunked,
    /// Until the connection ends (a response only).
    Close,
}

/// A request's body framing; a message with both Content-Length and
/// Transfer-Encoding, or several lengths, is refused (request smuggling).
pub fn request_framing(headers: &[Header]) -> Result<Framing, String> {
    let chunked = headers.iter().any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"));
    let lengths: Vec<&Header> = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .collect();
    match (chunked, lengths.as_slice()) {
        (true, []) if has_token(headers, "transfer-encoding", "chunked") => Ok(Framing::Chunked),
        (true, []) => Err("a transfer coding other than chunked".into()),
        (true, _) => Err("both Content-Length and Transfer-Encoding".into()),
        (false, []) => Ok(Framing::Empty),
        (false, [one]) => parse_length(&one.value)
            .map(|n| if n == 0 { Framing::Empty } else { Framing::Length(n) })
            .ok_or_else(|| "an invalid Content-Length".into()),
        (false, _) => Err("several Content-Length headers".into()),
    }
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A response's body framing (RFC 9112 §6.3), given the request's method.
pub fn response_framing(head: &ResponseHead, method: &str) -> Framing {
    if method.eq_ignore_ascii_case("HEAD") || (100..200).contains(&head.status) || matches!(head.status, 204 | 304) {
        return Framing::Empty;
    }
    if has_token(&head.headers, "transfer-encoding", "chunked") {
        return Framing::Chunked;
    }
    if head
        .headers
        .iter()
        .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
    {
        return Framing::Close;
    }
    match header(&head.headers, "content-length").and_then(|v| parse_length(v.as_bytes())) {
        Some(0) => Framing::Empty,
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    }
}

/// Reads one body as it arrives: each `read` returns what one read of
/// the connection gave (decoded from chunks), never waiting to fill `buf`.
#[derive(Debug)]
pub struct BodyReader {
    framing: Framing,
    /// Bytes left in the body (Length) or in the current chunk (Chunked).
    left: u64,
    /// A chunk's data ended and its CRLF is still to read.
    chunk_crlf: bool,
    done: bool,
}

impl BodyReader {
    pub fn new(framing: Framing) -> BodyReader {
        BodyReader {
            framing,
            left: match framing {
                Framing::Length(n) => n,
                _ => 0,
            },
            chunk_crlf: false,
            done: framing == Framing::Empty,
        }
    }

    /// How the body is delimited; a length is what is left of it.
    pub fn framing(&self) -> Framing {
        match self.framing {
            Framing::Length(_) => Framing::Length(self.left),
            other => other,
        }
    }

    /// The whole body was read to its delimiter.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Decoded body bytes; 0 at the end of the body.
    pub fn read(&mut self, r: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        match self.framing {
            Framing::Empty => Ok(0),
            Framing::Close => {
                let n = read_some(r, buf)?;
                self.done = n == 0;
                Ok(n)
            }
            Framing::Length(_) => {
                let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = read_some(r, &mut buf[..want])?;
                if n == 0 {
                    return Err(cut_short());
                }
                self.left -= n as u64;
                self.done = self.left == 0;
                Ok(n)
            }
            Framing::Chunked => {
                if self.left == 0 {
                    if self.chunk_crlf {
                        self.chunk_crlf = false;
                        if !read_line(r)?.is_empty() {
                            return Err(bad_chunk("no CRLF after a chunk's data"));
                        }
                    }
                    let line = read_line(r)?;
                    let size = line.split(|&b| b == b';').next().unwrap_or_default();
                    let size = std::str::from_utf8(size)
                        .ok()
                        .map(str::trim)
                        .filter(|s| !s.is_empty() && s.len() <= 15)
                        .and_then(|s| u64::from_str_radix(s, 16).ok())
                        .ok_or_else(|| bad_chunk("a chunk size that is not hexadecimal"))?;
                    if size == 0 {
                        // Trailers, up to the blank line: no more than a head may hold.
                        let (mut bytes, mut lines) = (0, 0);
                        loop {
                            let line = read_line(r)?;
                            if line.is_empty() {
                                break;
                            }
                            bytes += line.len() + 2;
                            lines += 1;
                            if bytes > MAX_HEAD || lines > MAX_HEADERS {
                                return Err(bad_chunk(&format!(
                                    "trailers over {MAX_HEAD} bytes or {MAX_HEADERS} lines"
                                )));
                            }
                        }
                        self.done = true;
                        return Ok(0);
                    }
                    self.left = size;
                }
                let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = read_some(r, &mut buf[..want])?;
                if n == 0 {
                    return Err(cut_short());
                }
                self.left -= n as u64;
                self.chunk_crlf = self.left == 0;
                Ok(n)
            }
        }
    }

    /// Reads the whole body, refusing one over `limit` bytes.
    pub fn read_all(&mut self, r: &mut impl BufRead, limit: usize) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = self.read(r, &mut buf)?;
            if n == 0 {
                return Ok(body);
            }
            if body.len() + n > limit {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a body over {}", loopscope_bytes(limit)),
                ));
            }
            body.extend_from_slice(&buf[..n]);
        }
    }
}

fn loopscope_bytes(n: usize) -> String {
    loopscope_core::formats::human_bytes(n)
}

fn read_some(r: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn cut_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "the connection ended inside a body")
}

fn bad_chunk(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad chunked coding: {why}"))
}

/// One line without its CRLF, at most [`MAX_LINE`] bytes.
fn read_line(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Err(cut_short());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                line.extend_from_slice(&buf[..i]);
                r.consume(i + 1);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
            None => {
                let n = buf.len();
                line.extend_from_slice(buf);
                r.consume(n);
            }
        }
        if line.len() > MAX_LINE {
            return Err(bad_chunk("a line too long"));
        }
    }
}

/// Writes body bytes toward the client in the framing chosen for it: one
/// write per piece (with its chunk header), so nothing waits in a buffer.
pub struct BodyWriter {
    framing: Framing,
    scratch: Vec<u8>,
}

impl BodyWriter {
    pub fn new(framing: Framing) -> BodyWriter {
        BodyWriter {
            framing,
            scratch: Vec::new(),
        }
    }

    pub fn write(&mut self, w: &mut impl Write, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        match self.framing {
            Framing::Chunked => {
                self.scratch.clear();
                write!(self.scratch, "{:x}\r\n", data.len())?;
                self.scratch.extend_from_slice(data);
                self.scratch.extend_from_slice(b"\r\n");
                w.write_all(&self.scratch)
            }
            _ => w.write_all(data),
        }
    }

    /// Ends the body (the last chunk of a chunked one).
    pub fn finish(&mut self, w: &mut impl Write) -> io::Result<()> {
        if self.framing == Framing::Chunked {
            w.write_all(b"0\r\n\r\n")?;
        }
        w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn body(framing: Framing, wire: &[u8]) -> io::Result<Vec<u8>> {
        // One byte at a time: framing never depends on how bytes arrive.
        let mut r = io::BufReader::with_capacity(1, wire);
        BodyReader::new(framing).read_all(&mut r, 1 << 20)
    }

    #[test]
    fn chunked_bodies_decode_with_extensions_and_trailers() {
        let wire = b"5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        assert_eq!(body(Framing::Chunked, wire).unwrap(), b"hello, world");
        let mut r = io::BufReader::new(&wire[..]);
        let mut b = BodyReader::new(Framing::Chunked);
        b.read_all(&mut r, 100).unwrap();
        assert!(b.is_done());
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "NEXT");
    }

    #[test]
    fn broken_bodies_are_errors_not_hangs() {
        assert!(body(Framing::Chunked, b"zz\r\nhello\r\n").is_err());
        assert!(body(Framing::Chunked, b"5\r\nhel").is_err());
        assert!(body(Framing::Chunked, b"5\r\nhelloXX0\r\n\r\n").is_err());
        assert!(body(Framing::Length(10), b"short").is_err());
        assert!(body(Framing::Chunked, b"fffffffffffffffffff\r\n").is_err());
        assert_eq!(body(Framing::Close, b"all of it").unwrap(), b"all of it");
        let mut r = io::BufReader::new(&b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"[..]);
        assert!(BodyReader::new(Framing::Chunked).read_all(&mut r, 8).is_err());
    }

    #[test]
    fn trailers_are_bounded_like_a_head() {
        let many = format!("5\r\nhello\r\n0\r\n{}\r\n", "X-T: 1\r\n".repeat(MAX_HEADERS + 1));
        let e = body(Framing::Chunked, many.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("trailers over"), "{e}");
        let long = format!("0\r\n{}\r\n", format!("X-T: {}\r\n", "a".repeat(4000)).repeat(20));
        assert!(body(Framing::Chunked, long.as_bytes()).is_err());
        let few = format!("5\r\nhello\r\n0\r\n{}\r\n", "X-T: 1\r\n".repeat(10));
        assert_eq!(body(Framing::Chunked, few.as_bytes()).unwrap(), b"hello");
    }

    #[test]
    fn heads_parse_byte_by_byte_and_leave_the_body() {
        let wire = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        let mut r = io::BufReader::with_capacity(1, &wire[..]);
        let head = read_request_head(&mut r).unwrap().unwrap();
        assert_eq!(
            (head.method.as_str(), head.target.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(request_framing(&head.headers).unwrap(), Framing::Length(2));
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"{}");
        assert!(read_request_head(&mut io::BufReader::new(&b""[..])).unwrap().is_none());
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(
            read_request_head(&mut io::BufReader::new(huge.as_bytes())),
            Err(HeadError::Bad(431, _))
        ));
        assert!(matches!(
            read_request_head(&mut io::BufReader::new(&b"\x00\x01 garbage\r\n\r\n"[..])),
            Err(HeadError::Bad(400, _))
        ));
    }

    #[test]
    fn smuggling_shapes_are_refused() {
        let h = headers;
        assert!(request_framing(&h(&[("Content-Length", "3"), ("Transfer-Encoding", "chunked")])).is_err());
        assert!(request_framing(&h(&[("Content-Length", "3"), ("content-length", "4")])).is_err());
        assert!(request_framing(&h(&[("Content-Length", "-1")])).is_err());
        assert!(request_framing(&h(&[("Transfer-Encoding", "gzip")])).is_err());
        assert_eq!(request_framing(&h(&[])).unwrap(), Framing::Empty);
    }

    #[test]
    fn a_response_head_skips_100_continue() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\n\r\n";
        let head = read_response_head(&mut io::BufReader::new(&wire[..])).unwrap().unwrap();
        assert_eq!((head.status, head.reason.as_str()), (429, "Too Many Requests"));
        assert_eq!(header(&head.headers, "retry-after"), Some("3"));
        assert_eq!(response_framing(&head, "POST"), Framing::Close);
    }
}
