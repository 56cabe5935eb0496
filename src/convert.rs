//! `loopscope convert`: any supported input as native JSONL.

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use loopscope_core::event::{Event, EventKind};
use loopscope_core::formats::{decode_all, Item, Opened};

/// Writes a `meta` line naming the source format (unless the input already
/// starts with loopscope's own), then every event, one per line. Problems
/// go to `err` with their line numbers.
pub fn convert(mut opened: Opened, name: &str, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
    let mut first = true;
    let mut result = Ok(());
    let forced = opened.forced_check();
    let mut events = 0;
    let mut bad = crate::scan::BadLines::new(name);
    decode_all(opened.reader, &mut *opened.decoder, |item| {
        if result.is_err() {
            return;
        }
        result = (|| match item {
            Item::Event(e, _) => {
                events += usize::from(loopscope_core::formats::carries_stream(&e));
                if first {
                    first = false;
                    if !is_native_meta(&e) {
                        writeln!(out, "{}", meta(opened.format.name()).to_json())?;
                    }
                }
                // Escaped so the output is safe on a terminal; the same data.
                writeln!(out, "{}", loopscope_core::sanitize::json(&e.to_json().to_string()))
            }
            Item::Problem(p) => bad.warn(&p, err),
            Item::Unknown(u) => {
                bad.unknown(&u);
                Ok(())
            }
        })();
    })?;
    bad.finish(err)?;
    if first && result.is_ok() {
        writeln!(out, "{}", meta(opened.format.name()).to_json())?;
    }
    result?;
    forced
        .check(events)
        .map_err(|msg| io::Error::other(format!("{}: {msg}", loopscope_core::sanitize::line(name))))?;
    out.flush()
}

fn is_native_meta(e: &Event) -> bool {
    e.kind == EventKind::Meta && e.extra.get("format") == Some(&Value::String("loopscope".into()))
}

/// `{"type":"meta","format":"loopscope","version":1,"source":…}`
pub fn meta(source: &str) -> Event {
    let mut e = Event::new(EventKind::Meta);
    let Value::Object(fields) = json!({"format": "loopscope", "version": 1, "source": source}) else {
        unreachable!("an object literal")
    };
    e.extra = fields.into_iter().collect::<Map<String, Value>>().into();
    e
}
