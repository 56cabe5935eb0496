//! The SQL that reads each store: a session's rows a page at a time, and
//! the rows added or updated since a look, as the JSON lines its importer
//! reads (built by SQLite's JSON functions).

use rusqlite::Connection;

use super::*;
use crate::formats;

/// The statements that read one kind of store.
#[derive(Clone, Debug)]
pub(super) struct Queries {
    /// Rows of a session in order, a page after (time, rowid) `?2, ?3`.
    pub(super) page: String,
    /// For opencode: a message's parts, in order.
    pub(super) parts: Option<String>,
    /// Rows of a session added (rowid > `?2`) or updated (time ≥ `?3`) since.
    pub(super) since: Vec<String>,
}

/// Each query gives: rowid, id, update time, the line (NULL when the
/// row is unusable), its size, whether its JSON is valid.
pub(super) fn queries(conn: &Connection, kind: StoreKind, max: usize) -> Result<Queries, Error> {
    let need = |table: &str, wanted: &[&str]| -> Result<Vec<String>, Error> {
        let cols = columns(conn, table);
        for w in wanted {
            if !cols.iter().any(|c| c == w) {
                return Err(Error::new(
                    ErrorKind::UnsupportedFormat,
                    format!("the store's {table} table has no {w} column (a schema this version does not know)"),
                ));
            }
        }
        Ok(cols)
    };
    let guarded = |data: &str, line: String| {
        format!("CASE WHEN json_valid({data}) AND length({data}) <= {max} THEN {line} END, length({data}), json_valid({data})")
    };
    Ok(match kind {
        StoreKind::Opencode => {
            let m = need("message", &["id", "session_id", "data"])?;
            let p = need("part", &["id", "message_id", "data"])?;
            let (mc, mu) = (col(&m, "time_created"), col(&m, "time_updated"));
            let (pc, pu) = (col(&p, "time_created"), col(&p, "time_updated"));
            let mline = guarded(
                "data",
                format!("json_object('row', 'message', 'time', {mc}, 'data', json_set(data, '$.id', id))"),
            );
            let pline = guarded(
                "data",
                format!("json_object('row', 'part', 'time', {pc}, 'data', json_set(data, '$.id', id, '$.messageID', message_id))"),
            );
            let psession = if p.iter().any(|c| c == "session_id") {
                "session_id = ?1".to_string()
            } else {
                "message_id IN (SELECT id FROM message WHERE session_id = ?1)".to_string()
            };
            Queries {
                page: format!(
                    "SELECT rowid, id, coalesce({mu}, 0), {mline}, coalesce({mc}, 0) FROM message \
                     WHERE session_id = ?1 AND (coalesce({mc}, 0) > ?2 OR (coalesce({mc}, 0) = ?2 AND rowid > ?3)) \
                     ORDER BY coalesce({mc}, 0), rowid LIMIT 256"
                ),
                parts: Some(format!(
                    "SELECT rowid, id, coalesce({pu}, 0), {pline}, 0 FROM part WHERE message_id = ?1 ORDER BY id"
                )),
                since: vec![
                    format!(
                        "SELECT rowid, id, coalesce({mu}, 0), {mline}, 0 FROM message \
                         WHERE session_id = ?1 AND (rowid > ?2 OR coalesce({mu}, 0) >= ?3) ORDER BY coalesce({mu}, 0), rowid"
                    ),
                    format!(
                        "SELECT rowid, id, coalesce({pu}, 0), {pline}, 0 FROM part \
                         WHERE {psession} AND (rowid > ?4 OR coalesce({pu}, 0) >= ?3) ORDER BY coalesce({pu}, 0), rowid"
                    ),
                ],
            }
        }
        StoreKind::Goose => {
            let c = need("messages", &["id", "session_id", "role", "content_json"])?;
            let t = millis(&col(&c, "created_timestamp"));
            let line = guarded(
                "content_json",
                format!(
                    "json_object('row', 'message', 'id', id, 'role', role, 'time', {t}, 'data', json(content_json), \
                     'metadata', CASE WHEN json_valid({md}) THEN json({md}) END)",
                    md = col(&c, "metadata_json")
                ),
            );
            let page = format!(
                "SELECT rowid, id, 0, {line}, rowid FROM messages WHERE session_id = ?1 AND rowid > ?3 ORDER BY rowid LIMIT 256"
            );
            Queries {
                since: vec![format!(
                    "SELECT rowid, id, 0, {line}, 0 FROM messages WHERE session_id = ?1 AND rowid > ?2 ORDER BY rowid"
                )],
                page,
                parts: None,
            }
        }
        StoreKind::Openclaw => {
            need(
                formats::openclaw::TRANSCRIPT,
                &["session_id", "seq", "event_json", "event_zstd", "created_at"],
            )?;
            Queries {
                page: formats::openclaw::page_sql(max),
                parts: None,
                since: vec![formats::openclaw::since_sql(max)],
            }
        }
        StoreKind::Crush => {
            let c = need("messages", &["id", "session_id", "role", "parts"])?;
            let created = millis(&format!("coalesce({}, 0)", col(&c, "created_at")));
            let updated = format!("coalesce({}, 0)", col(&c, "updated_at"));
            let line = guarded(
                "parts",
                format!(
                    "json_object('row', 'message', 'id', id, 'role', role, 'time', {created}, 'model', {model}, \
                     'finished', {fin}, 'summary', {sum}, 'data', json(parts))",
                    model = col(&c, "model"),
                    fin = col(&c, "finished_at"),
                    sum = col(&c, "is_summary_message"),
                ),
            );
            Queries {
                page: format!(
                    "SELECT rowid, id, {updated}, {line}, {created} FROM messages \
                     WHERE session_id = ?1 AND ({created} > ?2 OR ({created} = ?2 AND rowid > ?3)) \
                     ORDER BY {created}, rowid LIMIT 256"
                ),
                parts: None,
                since: vec![format!(
                    "SELECT rowid, id, {updated}, {line}, 0 FROM messages \
                     WHERE session_id = ?1 AND (rowid > ?2 OR {updated} >= ?3) ORDER BY {updated}, rowid"
                )],
            }
        }
    })
}
