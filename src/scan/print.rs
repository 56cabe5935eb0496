//! What `scan` prints: the aligned lines, the `--json` records (schema in
//! the README), the comparison table and the summary.

use crate::output::count;
use std::io::{self, Write};
use unicode_width::UnicodeWidthStr;

use serde_json::{Map, Value};

use super::{FileScan, Row, Totals, SCHEMA};
use crate::whatif::RunSummary;
use loopscope_core::detect::Detection;

/// The summary after the files: a row per file, then totals per detector
/// and per format (agent).
pub(super) fn write_summary(out: &mut dyn Write, rows: &[Row], json: bool) -> io::Result<()> {
    use std::collections::BTreeMap;
    let totals = Totals::of(rows);
    let counts = |m: &BTreeMap<&str, (usize, usize)>| {
        m.iter()
            .map(|(k, v)| (k.to_string(), serde_json::json!({"files": v.0, "looped": v.1})))
            .collect::<serde_json::Map<_, _>>()
    };
    if json {
        for r in rows {
            let first = r.first.as_ref().map(
                |d| serde_json::json!({"detector": d.detector, "event": d.event, "evidence_from": d.evidence_from()}),
            );
            let rec = serde_json::json!({
                "type": "summary", "schema": SCHEMA, "file": r.file, "parent": r.parent, "title": r.title, "agent": r.agent, "format": r.format,
                "events": r.events, "bad_lines": r.bad_lines, "unknown_records": r.unknown.to_json(),
                "detections": r.detectors.len(), "first": first,
                "after_first": {"chars": r.after.chars, "tokens": r.after.tokens,
                                "tokens_estimated": !r.after.tokens_recorded, "tool_calls": r.after.tool_calls},
            });
            writeln!(out, "{}", loopscope_core::sanitize::json(&rec.to_string()))?;
        }
        let totals = serde_json::json!({"type": "totals", "schema": SCHEMA, "files": rows.len(),
            "per_detector": totals.per_detector, "per_agent": counts(&totals.per_agent), "per_format": counts(&totals.per_format)});
        return writeln!(out, "{}", loopscope_core::sanitize::json(&totals.to_string()));
    }
    writeln!(out)?;
    writeln!(out, "summary of {}", count(rows.len(), "file"))?;
    // A store's sessions are named by id: their titles say what they were.
    let names: Vec<String> = rows
        .iter()
        .map(|r| match &r.title {
            Some(t) => format!("{} \"{}\"", r.name, t.chars().take(40).collect::<String>()),
            None => r.name.clone(),
        })
        .collect();
    let w = names.iter().map(|n| n.chars().count()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "  {:<w$}  {:>7}  {:>4}  {:>10}  first detection (event, evidence from)  burnt after it",
        "file", "events", "bad", "detections"
    )?;
    for (r, name) in rows.iter().zip(&names) {
        let (first, burnt) = match &r.first {
            Some(d) => (
                format!(
                    "{} ({}, {})",
                    d.detector,
                    d.event,
                    d.evidence_from().unwrap_or_else(|| "-".into())
                ),
                r.after.describe(),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        writeln!(
            out,
            "  {:<w$}  {:>7}  {:>4}  {:>10}  {first}  {burnt}",
            name,
            r.events,
            r.bad_lines,
            r.detectors.len()
        )?;
    }
    writeln!(out, "  detections per detector: {}", totals.detectors_text())?;
    // A file not found through --agent counts under its format as its
    // agent: when no file was, the two lines would say the same.
    if totals.per_agent != totals.per_format {
        writeln!(out, "  files per agent: {}", Totals::looped_text(&totals.per_agent))?;
    }
    writeln!(out, "  files per format: {}", Totals::looped_text(&totals.per_format))?;
    let drifted: Vec<&Row> = rows.iter().filter(|r| !r.unknown.is_empty()).collect();
    if !drifted.is_empty() {
        let records: u64 = drifted.iter().map(|r| r.unknown.total()).sum();
        writeln!(
            out,
            "  records of unknown kinds skipped: {records} in {} of {} (loopscope may be older than the agents that wrote them; see the warnings)",
            drifted.len(),
            count(rows.len(), "file")
        )?;
    }
    out.flush()
}

/// `scan --json`'s detection record: `type` and `schema`, `file` (and a
/// sub-agent's `parent`), then the detection's fields as [`json_line`].
pub fn detection_record(file: &str, parent: Option<&str>, d: &Detection) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("detection".into()));
    m.insert("schema".into(), Value::from(SCHEMA));
    if let Value::Object(fields) = json_line(file, d) {
        m.extend(fields);
    }
    if let Some(p) = parent {
        m.insert("parent".into(), Value::String(p.to_string()));
    }
    Value::Object(m)
}

/// A detection's fields after `file` (the body of [`detection_record`],
/// which every command prints).
fn json_line(file: &str, d: &Detection) -> Value {
    let mut m = Map::new();
    m.insert("file".into(), Value::String(file.to_string()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(d) {
        m.extend(fields);
    }
    Value::Object(m)
}

/// The line of `d` (one of the scan's detections), where the input has lines.
fn line_of(scan: &FileScan, d: &Detection) -> Option<u64> {
    let i = scan.detections.iter().position(|x| std::ptr::eq(x, d))?;
    scan.lines.get(i).copied().flatten()
}

/// `scan --profile a,b --json`: one record per profile per file.
pub fn summary_json(file: &str, s: &RunSummary, scan: &FileScan) -> Value {
    let first = s.first.as_ref().map(|d| {
        let first = scan.detections.iter().find(|x| x.run == d.run);
        serde_json::json!({
            "detector": d.detector,
            "event": d.event,
            "line": first.and_then(|x| line_of(scan, x)),
            "channel": d.channel.as_str(),
            "at_char": d.at_char,
            "onset": d.onset,
            "evidence_from": d.evidence_from(),
            "reason": d.reason,
        })
    });
    serde_json::json!({
        "type": "profile",
        "schema": SCHEMA,
        "file": file,
        "profile": s.label,
        "detections": s.detections,
        "first": first,
        "after_first": {
            "chars": s.after.chars,
            "tokens": s.after.tokens,
            "tokens_estimated": !s.after.tokens_recorded,
            "tool_calls": s.after.tool_calls,
        },
    })
}

/// `scan --profile a,b`: a table per file — for each profile its first
/// detection and what streamed after it (saved, or lost if it was wrong).
pub(super) fn write_comparison(out: &mut dyn Write, name: &str, scan: &FileScan) -> io::Result<()> {
    writeln!(out, "{name}: {}", count(scan.events, "event"))?;
    let rows: Vec<[String; 6]> = scan
        .summaries
        .iter()
        .map(|s| match &s.first {
            Some(d) => [
                s.label.clone(),
                format!("{} ({} in all)", d.detector, s.detections),
                d.event.to_string(),
                d.evidence_from().unwrap_or_else(|| "-".to_string()),
                s.after.chars_and_tokens(),
                s.after.tool_calls.to_string(),
            ],
            None => [
                s.label.clone(),
                "no detection".to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ],
        })
        .collect();
    let head = [
        "profile",
        "first detection",
        "event",
        "evidence from",
        "streamed after it",
        "calls after",
    ];
    let widths: Vec<usize> = (0..6)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([head[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("  {}", parts.join("  ")).trim_end().to_string()
    };
    writeln!(out, "{}", line(&head.map(str::to_string)))?;
    for r in &rows {
        writeln!(out, "{}", line(r))?;
    }
    Ok(())
}

/// Where a detection is: the channel and, for text, the buffer length.
pub fn position(d: &Detection) -> String {
    match d.at_char {
        Some(c) => format!("{}@{c}", d.channel.as_str()),
        None => d.channel.as_str().to_string(),
    }
}

/// The least widths of the human lines' columns, the same for every file
/// of a run so that its lines line up across files (each file's own
/// widths may still be larger: a name past `NAME_MAX`, a large event).
#[derive(Clone, Copy, Debug, Default)]
pub struct Columns {
    pub location: usize,
    pub detector: usize,
    pub position: usize,
}

/// Names longer than this are not padded to: one long path would push
/// every other file's lines far to the right.
const NAME_MAX: usize = 60;

impl Columns {
    /// For files of these names under these detector ids: room for the
    /// name and an event and line of up to 5 and 6 digits, the longest id,
    /// a position such as `reasoning@12345`.
    pub fn new<'a>(names: impl Iterator<Item = String>, ids: impl Iterator<Item = &'a str>) -> Columns {
        let name = names.map(|n| n.width()).filter(|&w| w <= NAME_MAX).max().unwrap_or(0);
        Columns {
            location: name + " event 12345 line 123456".len(),
            detector: ids.map(str::len).max().unwrap_or(0),
            position: "reasoning@12345".len(),
        }
    }
}

pub(super) fn write_human(out: &mut dyn Write, name: &str, scan: &FileScan, least: &Columns) -> io::Result<()> {
    if scan.detections.is_empty() {
        let bad = match scan.bad_lines {
            0 => String::new(),
            n => format!(", {} skipped", count(n, "bad line")),
        };
        return writeln!(out, "{name}: no detections ({}{bad})", count(scan.events, "event"));
    }
    // Events are numbered from 0 as the log format does; the line is for
    // editors (1-based), where the input has lines.
    let loc = |i: usize| {
        let d = &scan.detections[i];
        match scan.lines.get(i).copied().flatten() {
            Some(line) => format!("{name} event {} line {line}", d.event),
            None => format!("{name} event {}", d.event),
        }
    };
    let n = scan.detections.len();
    let w_loc = (0..n).map(|i| loc(i).width()).max().unwrap_or(0).max(least.location);
    let w_det = scan
        .detections
        .iter()
        .map(|d| d.detector.len())
        .max()
        .unwrap_or(0)
        .max(least.detector);
    let w_pos = scan
        .detections
        .iter()
        .map(|d| position(d).len())
        .max()
        .unwrap_or(0)
        .max(least.position);
    for (i, d) in scan.detections.iter().enumerate() {
        // Padded by display width (a CJK file name is two columns a char).
        let here = loc(i);
        let pad = " ".repeat(w_loc.saturating_sub(here.width()));
        // One line each, whatever a tool name or argument in the reason holds.
        writeln!(
            out,
            "{here}{pad}  {:<w_det$}  {:<w_pos$}  {}",
            d.detector,
            position(d),
            loopscope_core::sanitize::line(&crate::output::distinguishing_first(&d.readable_reason()))
        )?;
    }
    Ok(())
}
