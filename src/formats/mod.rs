//! Input formats. Every format is a [`Decoder`]: fed bytes as they arrive,
//! it emits events and problems. The same decoder serves a whole file
//! (`scan`, `view`: fed everything, then `finish`) and a growing one (`tail`:
//! fed each append; a half-written last record waits for its terminator).

pub mod native;

use std::fmt;
use std::io::{self, Read};

use crate::event::Event;

/// Something wrong in the input, reported once: a record that is not an
/// event (skipped), or an event that was only partly readable (kept).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line number in the input.
    pub line: u64,
    pub reason: String,
    /// The record was not an event and was skipped.
    pub skipped: bool,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.reason)?;
        if self.skipped {
            f.write_str("; line skipped")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Event(Event),
    Problem(Problem),
}

pub trait Decoder {
    /// Decodes every complete record in `bytes` (plus what earlier calls held back).
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>);
    /// The input ended: a last record without its terminator is decoded too.
    fn finish(&mut self, out: &mut Vec<Item>);
}

/// Runs `decoder` over a whole reader, handing each item to `sink` as soon
/// as it is decoded, so a large file is never held in memory twice.
pub fn decode_all(mut input: impl Read, decoder: &mut dyn Decoder, mut sink: impl FnMut(Item)) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut items = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        decoder.feed(&buf[..n], &mut items);
        items.drain(..).for_each(&mut sink);
    }
    decoder.finish(&mut items);
    items.drain(..).for_each(&mut sink);
    Ok(())
}

/// Everything a reader produced from one input.
#[derive(Debug, Default)]
pub struct Decoded {
    pub events: Vec<Event>,
    pub problems: Vec<Problem>,
}

impl Decoded {
    pub fn from_bytes(bytes: &[u8], decoder: &mut dyn Decoder) -> Decoded {
        let mut d = Decoded::default();
        decode_all(bytes, decoder, |item| d.push(item)).expect("reading from memory cannot fail");
        d
    }

    pub fn push(&mut self, item: Item) {
        match item {
            Item::Event(e) => self.events.push(e),
            Item::Problem(p) => self.problems.push(p),
        }
    }
}

/// Opens an input for reading ("-" is standard input). Files are only ever
/// opened read-only. The error is one line, fit for the user.
pub fn open(path: &std::path::Path) -> Result<Box<dyn Read + Send>, String> {
    if crate::config::is_stdin(path) {
        return Ok(Box::new(io::stdin()));
    }
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    if meta.is_dir() {
        return Err(format!("{shown}: is a directory"));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    Ok(Box::new(file))
}
