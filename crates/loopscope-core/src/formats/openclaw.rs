//! OpenClaw (`openclaw` on npm, read at 2026.9.6) keeps each agent's
//! sessions in a SQLite store, `~/.openclaw/agents/<agent>/agent/
//! openclaw-agent.sqlite`: `transcript_events` holds a session's entries in
//! order (`seq`), each one JSON text of pi's session format (version 4,
//! with OpenClaw's own fields), stored as text or, from 1 KiB, as a zstd
//! frame (`event_zstd`, with `event_json` NULL). The rows are read through
//! [`super::sqlite`] like the other stores and their entries by pi's
//! importer, which knows OpenClaw's loop-guard records.

use super::pi;
use super::sse::JsonLinesDecoder;
use super::Format;

/// The importer of a session's rows (pi's entries).
pub fn decoder() -> JsonLinesDecoder<pi::Session> {
    JsonLinesDecoder::new(pi::Session::default(), Format::Openclaw)
}

#[cfg(feature = "sqlite")]
/// The table that makes a database OpenClaw's store.
pub const TRANSCRIPT: &str = "transcript_events";

#[cfg(feature = "sqlite")]
/// The store's sessions: each transcript of `session_windows` (one per
/// session id), titled by its session key's label.
pub fn sessions_sql(nodes: bool, one: &str) -> String {
    let title = if nodes {
        "coalesce((SELECT coalesce(n.display_name, n.label) FROM session_nodes n WHERE n.session_key = w.session_key), w.session_key)"
    } else {
        "w.session_key"
    };
    format!(
        "SELECT w.session_id, {title}, NULL, coalesce(w.transcript_updated_at, w.updated_at) FROM session_windows w \
         WHERE EXISTS (SELECT 1 FROM {TRANSCRIPT} t WHERE t.session_id = w.session_id){one}"
    )
}

#[cfg(feature = "sqlite")]
/// A page of a session's entries after `seq` `?2` (the cursor's first
/// part; its second is `?3`): rowid, seq, time, the entry when it is
/// stored as valid text within the record limit, its size, whether it is
/// valid, its order, and the zstd frame when it is stored compressed.
pub fn page_sql(max: usize) -> String {
    format!(
        "SELECT rowid, seq, created_at, \
         CASE WHEN event_json IS NOT NULL AND json_valid(event_json) AND length(event_json) <= {max} THEN event_json END, \
         coalesce(length(event_json), event_utf8_bytes, 0), \
         CASE WHEN event_json IS NULL THEN 1 ELSE json_valid(event_json) END, seq, \
         CASE WHEN event_json IS NULL THEN event_zstd END \
         FROM {TRANSCRIPT} WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT 256"
    )
}

#[cfg(feature = "sqlite")]
/// The entries appended since rowid `?2` (a transcript is only appended to).
pub fn since_sql(max: usize) -> String {
    page_sql(max).replace("AND seq > ?2 ORDER BY seq LIMIT 256", "AND rowid > ?2 ORDER BY seq")
}

/// An entry stored compressed, as its text: at most `max` bytes are
/// unpacked (OpenClaw compresses entries of up to 4 MiB; a frame that
/// says more is refused, not held).
#[cfg(all(feature = "sqlite", feature = "zstd"))]
pub fn unpack(frame: &[u8], max: usize) -> Result<String, String> {
    use std::io::Read;
    let decoder =
        zstd::stream::read::Decoder::new(frame).map_err(|e| format!("its zstd frame cannot be read ({e})"))?;
    let mut text = Vec::new();
    decoder
        .take(max as u64 + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("its zstd frame cannot be read ({e})"))?;
    if text.len() > max {
        return Err(format!(
            "it unpacks to more than {max} bytes, {}",
            super::overlong_reason(max)
        ));
    }
    let text = String::from_utf8(text).map_err(|_| "it unpacks to text that is not UTF-8".to_string())?;
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| format!("it unpacks to text that is not JSON ({e})"))?;
    Ok(text)
}

/// Without the `zstd` feature a compressed entry is a bad record, saying why.
#[cfg(all(feature = "sqlite", not(feature = "zstd")))]
pub fn unpack(_: &[u8], _: usize) -> Result<String, String> {
    Err(super::feature_off("zstd", "OpenClaw's compressed entries"))
}

#[cfg(all(test, feature = "sqlite", feature = "zstd"))]
mod tests {
    use super::*;

    #[test]
    fn a_frame_unpacks_to_its_entry_and_a_bomb_is_refused() {
        let entry = r#"{"type":"message","id":"a","message":{"role":"user","content":"hi"}}"#;
        let frame = zstd::stream::encode_all(entry.as_bytes(), 1).unwrap();
        assert_eq!(unpack(&frame, 1 << 20).unwrap(), entry);
        let big = zstd::stream::encode_all(&vec![b' '; 8 << 20][..], 19).unwrap();
        assert!(big.len() < 4096, "a small frame that unpacks to 8 MiB");
        assert!(unpack(&big, 1 << 20).unwrap_err().contains("record limit"));
        assert!(unpack(b"not zstd", 1 << 20).is_err());
        let text = zstd::stream::encode_all(&b"not json"[..], 1).unwrap();
        assert!(unpack(&text, 1 << 20).unwrap_err().contains("not JSON"));
    }
}
