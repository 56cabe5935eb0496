//! Compressed answers. The proxy asks every upstream for `identity`, but
//! some send gzip anyway (a CDN in front, a framework's middleware): the
//! client gets those bytes unchanged (it asked for them), and the recorder
//! and the guard read them decompressed here, piece by piece as they come.
//! gzip and deflate (zlib-wrapped, as HTTP says, or raw, as some servers
//! send) are decoded with flate2, already in the tree; there is no brotli
//! decoder among the crates this project builds from, so a `br` answer is
//! passed on and noted as not recorded.

use std::io::Write;

use super::Header;

/// How an answer's body is encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    Deflate,
    /// One loopscope cannot decode (br, zstd, several at once): its name.
    Unknown(String),
}

impl Coding {
    /// From the answer's Content-Encoding.
    pub fn of(headers: &[Header]) -> Coding {
        let codings: Vec<String> = headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("content-encoding"))
            .filter_map(|h| std::str::from_utf8(&h.value).ok())
            .flat_map(|v| v.split(','))
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        match codings.as_slice() {
            [] => Coding::Identity,
            [one] if one == "gzip" || one == "x-gzip" => Coding::Gzip,
            [one] if one == "deflate" => Coding::Deflate,
            _ => Coding::Unknown(loopscope_core::sanitize::line(&codings.join(", "))),
        }
    }

    /// Whether the answer is compressed at all (so its bytes are not what is read).
    pub fn is_identity(&self) -> bool {
        *self == Coding::Identity
    }
}

/// The most decompressed bytes one piece of input may give at once: input
/// is fed in slices this small so that a compression bomb (deflate packs
/// up to ~1,000 to 1) never makes more than a few MB at a time.
const SLICE: usize = 2048;

enum State {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    Raw(flate2::write::DeflateDecoder<Vec<u8>>),
    /// `deflate` before its first two bytes say zlib or raw.
    Sniffing(Vec<u8>),
    Failed,
}

/// A compressed body decoded as it arrives.
pub struct Inflater {
    state: State,
    coding: Coding,
}

impl Inflater {
    /// A decoder for `coding`; None for identity and for codings loopscope cannot decode.
    pub fn new(coding: &Coding) -> Option<Inflater> {
        let state = match coding {
            Coding::Gzip => State::Gzip(flate2::write::MultiGzDecoder::new(Vec::new())),
            Coding::Deflate => State::Sniffing(Vec::new()),
            _ => return None,
        };
        Some(Inflater {
            state,
            coding: coding.clone(),
        })
    }

    /// The decoded bytes of the next piece; Err(why) once the body turns
    /// out not to be what its coding says (then nothing more is decoded).
    pub fn feed(&mut self, data: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        for slice in data.chunks(SLICE) {
            out.extend(self.feed_slice(slice)?);
        }
        Ok(out)
    }

    fn feed_slice(&mut self, data: &[u8]) -> Result<Vec<u8>, String> {
        if let State::Sniffing(first) = &mut self.state {
            first.extend_from_slice(data);
            if first.len() < 2 {
                return Ok(Vec::new());
            }
            let first = std::mem::take(first);
            // RFC 1950: CM 8 and a header checksum that divides by 31.
            let zlib = first[0] & 0x0f == 8 && ((u16::from(first[0]) << 8) | u16::from(first[1])) % 31 == 0;
            self.state = if zlib {
                State::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
            } else {
                State::Raw(flate2::write::DeflateDecoder::new(Vec::new()))
            };
            return self.feed_slice(&first);
        }
        let wrote = match &mut self.state {
            State::Gzip(d) => d.write_all(data).map(|()| std::mem::take(d.get_mut())),
            State::Zlib(d) => d.write_all(data).map(|()| std::mem::take(d.get_mut())),
            State::Raw(d) => d.write_all(data).map(|()| std::mem::take(d.get_mut())),
            State::Sniffing(_) => unreachable!("handled above"),
            State::Failed => return Ok(Vec::new()),
        };
        wrote.map_err(|e| self.failed(&e))
    }

    /// The end of the body: what the decoder still held.
    pub fn finish(&mut self) -> Result<Vec<u8>, String> {
        let done = match std::mem::replace(&mut self.state, State::Failed) {
            State::Gzip(d) => d.finish(),
            State::Zlib(d) => d.finish(),
            State::Raw(d) => d.finish(),
            State::Sniffing(first) if first.is_empty() => Ok(Vec::new()),
            State::Sniffing(_) => Err(std::io::Error::other("a body of one byte")),
            State::Failed => return Ok(Vec::new()),
        };
        done.map_err(|e| self.failed(&e))
    }

    fn failed(&mut self, e: &std::io::Error) -> String {
        self.state = State::Failed;
        format!("not valid {} data ({e})", self.name())
    }

    pub fn name(&self) -> &'static str {
        match self.coding {
            Coding::Gzip => "gzip",
            _ => "deflate",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn decode(coding: Coding, wire: &[u8]) -> Result<Vec<u8>, String> {
        let mut inf = Inflater::new(&coding).unwrap();
        let mut out = Vec::new();
        // One byte at a time: nothing depends on how the bytes arrive.
        for b in wire.chunks(1) {
            out.extend(inf.feed(b)?);
        }
        out.extend(inf.finish()?);
        Ok(out)
    }

    #[test]
    fn gzip_zlib_and_raw_deflate_decode_piece_by_piece() {
        let text = "data: {\"x\":\"読み込み 🔁\"}\n\n".repeat(200);
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(text.as_bytes()).unwrap();
        assert_eq!(decode(Coding::Gzip, &gz.finish().unwrap()).unwrap(), text.as_bytes());
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(text.as_bytes()).unwrap();
        assert_eq!(decode(Coding::Deflate, &z.finish().unwrap()).unwrap(), text.as_bytes());
        let mut raw = DeflateEncoder::new(Vec::new(), Compression::default());
        raw.write_all(text.as_bytes()).unwrap();
        assert_eq!(
            decode(Coding::Deflate, &raw.finish().unwrap()).unwrap(),
            text.as_bytes()
        );
        let why = decode(Coding::Gzip, b"data: not gzip at all\n\n").unwrap_err();
        assert!(why.starts_with("not valid gzip data"), "{why}");
    }

    #[test]
    fn codings_are_read_from_the_header() {
        let h = crate::http::headers;
        assert_eq!(Coding::of(&h(&[])), Coding::Identity);
        assert_eq!(Coding::of(&h(&[("Content-Encoding", "identity")])), Coding::Identity);
        assert_eq!(Coding::of(&h(&[("content-encoding", " GZIP ")])), Coding::Gzip);
        assert_eq!(Coding::of(&h(&[("Content-Encoding", "deflate")])), Coding::Deflate);
        assert_eq!(
            Coding::of(&h(&[("Content-Encoding", "br")])),
            Coding::Unknown("br".into())
        );
        assert_eq!(
            Coding::of(&h(&[("Content-Encoding", "gzip, br")])),
            Coding::Unknown("gzip, br".into())
        );
    }
}
