//! Datasets of trajectories, one per row: JSONL whose every line is a whole
//! trajectory (a message list, a `messages`/`trajectory` document, an ATIF
//! trajectory…), and Parquet files read row group by row group. Each row is
//! a stream of its own, named `FILE#LINE` (the 1-based line or row), or by
//! an id field. A row's document is the row itself or one of its fields
//! (`--column`), read by whichever importer its shape calls for.
//!
//! `scan` walks every row once ([`each_jsonl`], [`each_parquet`]); `view`
//! and `convert` read one (`decoder`, [`parquet_row`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use serde_json::Value;

use super::detect::{classify, Kind};
use super::lines::{is_blank, parse_json, Lines};
use super::{report_overlong, Decoder, Format, Item, Out, Problem};
#[cfg(feature = "parquet")]
use crate::contain::contain;
use crate::error::{Error, ErrorKind};

/// How a dataset's rows are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowOptions {
    /// The field holding the trajectory (`--column`); None: the whole row.
    pub column: Option<String>,
    /// The field naming a row (`--id-field`); None: its line or row number.
    pub id_field: Option<String>,
    /// The longest JSONL line held (`--max-record`); a longer one is a
    /// problem on its line, skipped.
    pub max_record: usize,
}

impl Default for RowOptions {
    fn default() -> RowOptions {
        RowOptions {
            column: None,
            id_field: None,
            max_record: super::DEFAULT_MAX_RECORD,
        }
    }
}

/// One row of a dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Its 1-based line (JSONL) or row (Parquet) number.
    pub number: u64,
    /// Its id, when an id field was named and the row has it.
    pub id: Option<String>,
    /// The trajectory as JSON text.
    pub document: Vec<u8>,
}

impl Row {
    /// The row's name after its container: its id, else its number.
    pub fn part(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.number.to_string())
    }
}

/// The fields a dataset's row is usually named by: a row named `FILE#ID`
/// is looked for by these when no id field is given.
pub(crate) const ID_FIELDS: [&str; 5] = ["instance_id", "trajectory_id", "session_id", "task_id", "id"];

/// Whether a row is the one `part` names: its number, or its id in one of
/// the usual id fields.
fn is_part(row: &Value, number: u64, part: &str) -> bool {
    part == number.to_string() || ID_FIELDS.iter().any(|f| id_of(row, f).as_deref() == Some(part))
}

/// A row's id field as text (a string as it is, a number or other value as JSON).
fn id_of(row: &Value, field: &str) -> Option<String> {
    match row.get(field)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A row's trajectory when no column is named: the row itself when it is
/// one (a `messages` document…), else its first field that holds one — a
/// message list, or its JSON text.
fn trajectory_in(row: &Value) -> Option<Vec<u8>> {
    let whole = serde_json::to_vec(row).ok()?;
    if document_kind(&whole).is_ok() {
        return Some(whole);
    }
    row.as_object()?.values().find_map(|v| match v {
        Value::String(text) => document_kind(text.as_bytes()).is_ok().then(|| text.as_bytes().to_vec()),
        Value::Array(_) | Value::Object(_) => {
            let bytes = serde_json::to_vec(v).ok()?;
            document_kind(&bytes).is_ok().then_some(bytes)
        }
        _ => None,
    })
}

/// The document of a parsed row: its `column`, else its trajectory.
fn document_of(row: Value, number: u64, opts: &RowOptions) -> Result<Row, Problem> {
    let id = opts.id_field.as_deref().and_then(|f| id_of(&row, f));
    let document = match &opts.column {
        None => Ok(trajectory_in(&row).unwrap_or_else(|| serde_json::to_vec(&row).unwrap_or_default())),
        Some(c) => match row.get(c) {
            // A column of JSON text holds the document as text.
            Some(Value::String(text)) => Ok(text.as_bytes().to_vec()),
            Some(v) if !v.is_null() => serde_json::to_vec(v),
            _ => {
                return Err(Problem {
                    line: number,
                    reason: format!("no {c:?} in this row"),
                    skipped: true,
                })
            }
        },
    }
    .map_err(|e| Problem {
        line: number,
        reason: e.to_string(),
        skipped: true,
    })?;
    Ok(Row { number, id, document })
}

/// Calls `f` with every row of a JSONL dataset (or the problem of a line
/// that is not one), reading `input` once, one line at a time.
pub fn each_jsonl(mut input: impl Read, opts: &RowOptions, mut f: impl FnMut(Result<Row, Problem>)) -> io::Result<()> {
    let mut lines = Lines::default();
    lines.set_max_record(opts.max_record);
    let mut buf = vec![0u8; 64 * 1024];
    let overlong = |lines: &mut Lines, f: &mut dyn FnMut(Result<Row, Problem>)| {
        for line in lines.take_overlong() {
            f(Err(Problem {
                line,
                reason: super::overlong_reason(opts.max_record),
                skipped: true,
            }));
        }
    };
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        lines.feed(&buf[..n], |number, raw| jsonl_row(number, raw, opts).map_or((), &mut f));
        overlong(&mut lines, &mut f);
    }
    lines.finish(|number, raw| jsonl_row(number, raw, opts).map_or((), &mut f));
    overlong(&mut lines, &mut f);
    Ok(())
}

/// One line of a JSONL dataset as a row (or why it is none); nothing for a blank line.
fn jsonl_row(number: u64, raw: &[u8], opts: &RowOptions) -> Option<Result<Row, Problem>> {
    if is_blank(raw) {
        return None;
    }
    // Without a column or id field, a line that is a trajectory is
    // the document as it is (not parsed twice).
    if opts.column.is_none() && opts.id_field.is_none() && document_kind(raw).is_ok() {
        return Some(Ok(Row {
            number,
            id: None,
            document: raw.to_vec(),
        }));
    }
    Some(match parse_json(raw) {
        Ok(row) => document_of(row, number, opts),
        Err(reason) => Err(Problem {
            line: number,
            reason,
            skipped: true,
        }),
    })
}

/// Whether the first bytes are a Parquet file's.
pub(crate) fn is_parquet(head: &[u8]) -> bool {
    head.starts_with(b"PAR1")
}

/// Whether `path` is a Parquet file (by its first bytes). Only a regular
/// file is looked at: Parquet is read by seeking, and the bytes looked at
/// in a FIFO or a process substitution (`<(…)`) would be gone from it.
pub fn is_parquet_file(path: &Path) -> bool {
    let mut head = [0u8; 4];
    path.metadata().is_ok_and(|m| m.is_file())
        && File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok()
        && is_parquet(&head)
}

/// Calls `f` with every row of a Parquet dataset, row group by row group
/// (only the column and id field are read when they are named).
///
/// Every call into the parquet crate is `contain`ed: a damaged file can
/// make it panic (an index out of bounds on a mutated page header), and a
/// damaged file is a bad input like any other — its rows read so far are
/// kept, the rest is said to be skipped.
#[cfg(feature = "parquet")]
///
/// The error keeps its kind: the file's I/O error, a damaged file
/// ([`ErrorKind::Malformed`]), a `--column` it does not have
/// ([`ErrorKind::InvalidValue`]).
pub fn each_parquet(path: &Path, opts: &RowOptions, mut f: impl FnMut(Result<Row, Problem>)) -> Result<(), Error> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let shown = crate::sanitize::path(path);
    let file = File::open(path).map_err(|e| Error::io(&shown, &e))?;
    let unreadable = |e: String| {
        Error::new(
            ErrorKind::Malformed { line: None },
            format!("{shown}: not a readable Parquet file ({e})"),
        )
    };
    let reader = contain(|| SerializedFileReader::new(file).map_err(|e| e.to_string()))
        .and_then(|r| r)
        .map_err(unreadable)?;
    let projection = contain(|| projection(&reader, opts))
        .map_err(unreadable)?
        .map_err(|e| Error::new(ErrorKind::InvalidValue, format!("{shown}: {e}")))?;
    let mut rows = contain(|| reader.get_row_iter(projection).map_err(|e| e.to_string()))
        .and_then(|r| r)
        .map_err(unreadable)?;
    let mut number = 0u64;
    loop {
        number += 1;
        let row = match contain(|| rows.next().map(|r| r.map(|row| row.to_json_value()))) {
            Ok(None) => break,
            Ok(Some(Ok(row))) => row,
            // Not one row could be read: the file is unreadable, said once.
            Ok(Some(Err(e))) if number == 1 => return Err(unreadable(format!("row 1: {e}"))),
            Err(panicked) if number == 1 => return Err(unreadable(format!("row 1: {panicked}"))),
            // A row group that cannot be read ends the file: what follows
            // would be read from the same broken pages.
            Ok(Some(Err(e))) => {
                f(Err(unreadable_row(number, &e.to_string())));
                break;
            }
            Err(panicked) => {
                f(Err(unreadable_row(number, &panicked)));
                break;
            }
        };
        f(document_of(row, number, opts));
    }
    Ok(())
}

/// Without the `parquet` feature a Parquet dataset is refused, saying why.
#[cfg(not(feature = "parquet"))]
pub fn each_parquet(_: &Path, _: &RowOptions, _: impl FnMut(Result<Row, Problem>)) -> Result<(), Error> {
    Err(Error::new(
        ErrorKind::UnsupportedFormat,
        super::feature_off("parquet", "a Parquet dataset"),
    ))
}

/// A row that could not be read, and with it the rest of the file.
#[cfg(feature = "parquet")]
fn unreadable_row(number: u64, why: &str) -> Problem {
    Problem {
        line: number,
        reason: format!("not readable ({why}); the rest of the file is skipped"),
        skipped: true,
    }
}

/// The columns to read: the named column and id field, else every column.
#[cfg(feature = "parquet")]
fn projection(
    reader: &parquet::file::reader::SerializedFileReader<File>,
    opts: &RowOptions,
) -> Result<Option<parquet::schema::types::Type>, String> {
    use parquet::file::reader::FileReader;
    let Some(column) = &opts.column else {
        return Ok(None);
    };
    let schema = reader.metadata().file_metadata().schema();
    let fields = schema.get_fields();
    let pick = |name: &str| fields.iter().find(|f| f.name() == name).cloned();
    let mut chosen = vec![pick(column).ok_or_else(|| {
        let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
        format!("no column {column:?} (columns: {})", names.join(", "))
    })?];
    if let Some(id) = opts.id_field.as_deref().filter(|id| id != column) {
        chosen.extend(pick(id));
    }
    parquet::schema::types::Type::group_type_builder(schema.name())
        .with_fields(chosen)
        .build()
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The row of a Parquet dataset named `part` (its 1-based number, or its
/// id in one of the usual id fields), or the first row.
#[cfg(feature = "parquet")]
///
/// The error keeps its kind as [`each_parquet`]'s does, and a row that is
/// not there is [`ErrorKind::NotFound`].
pub fn parquet_row(path: &Path, part: Option<&str>, opts: &RowOptions) -> Result<Row, Error> {
    use parquet::file::reader::SerializedFileReader;
    let shown = crate::sanitize::path(path);
    let file = File::open(path).map_err(|e| Error::io(&shown, &e))?;
    // Contained as in [`each_parquet`]: a damaged file is an input error.
    let unreadable = |e: String| {
        Error::new(
            ErrorKind::Malformed { line: None },
            format!("{shown}: not a readable Parquet file ({e})"),
        )
    };
    let reader = contain(|| SerializedFileReader::new(file).map_err(|e| e.to_string()))
        .and_then(|r| r)
        .map_err(unreadable)?;
    let mut rows = contain(|| {
        use parquet::file::reader::FileReader;
        reader.get_row_iter(None).map_err(|e| e.to_string())
    })
    .and_then(|r| r)
    .map_err(unreadable)?;
    let mut number = 0u64;
    loop {
        number += 1;
        let row = match contain(|| rows.next().map(|r| r.map(|row| row.to_json_value()))) {
            Ok(None) => break,
            Ok(Some(Ok(row))) => row,
            Ok(Some(Err(e))) => return Err(unreadable_at(&shown, number, &e.to_string())),
            Err(e) => return Err(unreadable_at(&shown, number, &e)),
        };
        if part.is_none_or(|p| is_part(&row, number, p)) {
            return document_of(row, number, opts).map_err(|p| {
                Error::new(
                    ErrorKind::Malformed {
                        line: usize::try_from(p.line).ok(),
                    },
                    format!("{shown}: row {}: {}", p.line, p.reason),
                )
            });
        }
    }
    Err(Error::new(
        ErrorKind::NotFound,
        match part {
            Some(p) => format!("{shown}: no row {}", crate::sanitize::line(p)),
            None => format!("{shown}: no rows"),
        },
    ))
}

/// Row `number` of a Parquet file could not be read.
#[cfg(feature = "parquet")]
fn unreadable_at(shown: &str, number: u64, why: &str) -> Error {
    Error::new(
        ErrorKind::Malformed {
            line: usize::try_from(number).ok(),
        },
        format!("{shown}: row {number} is not readable ({why})"),
    )
}

/// Without the `parquet` feature a Parquet dataset is refused, saying why.
#[cfg(not(feature = "parquet"))]
pub fn parquet_row(_: &Path, _: Option<&str>, _: &RowOptions) -> Result<Row, Error> {
    Err(Error::new(
        ErrorKind::UnsupportedFormat,
        super::feature_off("parquet", "a Parquet dataset"),
    ))
}

/// The importer for a row's document, as its shape calls for.
pub(crate) fn document_kind(document: &[u8]) -> Result<Kind, String> {
    match classify(document, true, None)? {
        Some(Kind::Rows | Kind::Parquet) | None => Err("not a trajectory".to_string()),
        Some(k) => Ok(k),
    }
}

/// Reads one row of a JSONL dataset as a stream: the line numbered `part`
/// (or whose id field is `part`), or the first row, said in a note.
pub(crate) struct RowsDecoder {
    lines: Lines,
    part: Option<String>,
    opts: RowOptions,
    /// The chosen row's importer, once the row is read.
    inner: Option<Box<dyn Decoder>>,
    rows: u64,
}

/// A decoder for one row of a JSONL dataset (`part`: its line or id).
pub(crate) fn decoder(part: Option<&str>) -> RowsDecoder {
    RowsDecoder {
        lines: Lines::default(),
        part: part.map(str::to_string),
        opts: RowOptions::default(),
        inner: None,
        rows: 0,
    }
}

impl RowsDecoder {
    fn line(&mut self, number: u64, raw: &[u8], out: &mut Vec<Item>) {
        if self.inner.is_some() || is_blank(raw) {
            return;
        }
        self.rows += 1;
        let numbered = self.part.as_deref().is_some_and(|p| p == number.to_string());
        if self.part.is_some() && !numbered && !raw.windows(2).any(|w| w == b"id") {
            return; // neither its number nor an id field: not the row named
        }
        if self.part.is_none() && self.rows > 1 {
            return;
        }
        let value = match parse_json(raw) {
            Ok(v) => v,
            Err(reason) if numbered || self.part.is_none() => return Out::new(out, number).problem(reason),
            Err(_) => return,
        };
        if let Some(p) = &self.part {
            if !is_part(&value, number, p) {
                return;
            }
        }
        let row = match document_of(value, number, &self.opts) {
            Ok(row) => row,
            Err(p) => return Out::new(out, number).problem(p.reason),
        };
        match document_kind(&row.document) {
            Ok(kind) => {
                if self.part.is_none() {
                    Out::new(out, number).note(format!(
                        "a dataset of one trajectory per line: showing line {number}; name another as FILE#LINE"
                    ));
                }
                let mut inner = kind.build();
                inner.set_max_record(self.opts.max_record);
                inner.feed(&row.document, out);
                inner.finish(out);
                self.inner = Some(inner);
            }
            Err(reason) => Out::new(out, number).problem(reason),
        }
    }
}

impl Decoder for RowsDecoder {
    fn set_max_record(&mut self, bytes: usize) {
        self.lines.set_max_record(bytes);
        self.opts.max_record = self.lines.max_record();
        if let Some(inner) = &mut self.inner {
            inner.set_max_record(bytes);
        }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |n, raw| self.line(n, raw, out));
        report_overlong(lines.take_overlong(), lines.max_record(), out);
        self.lines = lines;
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|n, raw| self.line(n, raw, out));
        report_overlong(lines.take_overlong(), lines.max_record(), out);
        self.lines = lines;
        if self.inner.is_none() {
            let what = self
                .part
                .as_deref()
                .map_or("no row".to_string(), |p| format!("no row {p}"));
            Out::new(out, 1).problem(format!("{what} in this dataset ({} rows)", self.rows));
        }
    }

    fn format(&self) -> Option<Format> {
        Some(Format::Rows)
    }
}

/// A Parquet file met as bytes (standard input, a pipe): its rows need the
/// file itself, so this says so once.
pub(crate) struct ParquetBytes;

impl Decoder for ParquetBytes {
    /// Nothing is held: the bytes are not read.
    fn set_max_record(&mut self, _: usize) {}

    fn feed(&mut self, _: &[u8], _: &mut Vec<Item>) {}

    fn finish(&mut self, out: &mut Vec<Item>) {
        Out::new(out, 1).problem("a Parquet file is read from its path (scan FILE, view FILE#ROW), not from a stream");
    }

    fn format(&self) -> Option<Format> {
        Some(Format::Parquet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    const DATASET: &str = concat!(
        r#"{"instance_id": "a-1", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]}"#,
        "\n\n",
        r#"{"instance_id": "b-2", "messages": [{"role": "user", "content": "思考"}]}"#,
        "\n",
        "not json\n",
        r#"{"instance_id": 7, "trajectory": "[{\"role\": \"user\", \"content\": \"x\"}]"}"#,
        "\n"
    );

    #[test]
    fn a_row_over_the_record_limit_is_a_problem_on_its_line_and_the_next_rows_are_read() {
        let long = format!(
            "{{\"messages\":[{{\"role\":\"user\",\"content\":\"{}\"}}]}}",
            "字".repeat(4000)
        );
        let short = r#"{"messages":[{"role":"user","content":"hi 🧪"}]}"#;
        let text = format!("{short}\n{long}\n{short}\n");
        let opts = RowOptions {
            max_record: 1024,
            ..RowOptions::default()
        };
        let mut got = Vec::new();
        each_jsonl(text.as_bytes(), &opts, |r| got.push(r)).unwrap();
        // (A skipped line is said once the bytes read with it are handed out.)
        let mut lines: Vec<(u64, Option<bool>)> = got
            .iter()
            .map(|r| match r {
                Ok(row) => (row.number, None),
                Err(p) => (p.line, Some(p.reason.contains("1 KiB"))),
            })
            .collect();
        lines.sort();
        assert_eq!(lines, vec![(1, None), (2, Some(true)), (3, None)]);
        // The one-row decoder says the same of a line it skips.
        let mut d = decoder(Some("3"));
        d.set_max_record(1024);
        let decoded = crate::formats::Decoded::from_bytes(text.as_bytes(), &mut d);
        assert_eq!(decoded.problems.iter().map(|p| p.line).collect::<Vec<_>>(), vec![2]);
        assert_eq!(decoded.events.len(), 1);
    }

    #[test]
    fn every_row_once_with_its_number_id_and_document() {
        let mut got = Vec::new();
        let opts = RowOptions {
            column: None,
            id_field: Some("instance_id".into()),
            ..RowOptions::default()
        };
        each_jsonl(DATASET.as_bytes(), &opts, |r| got.push(r)).unwrap();
        assert_eq!(got.len(), 4);
        let first = got[0].as_ref().unwrap();
        assert_eq!((first.number, first.id.as_deref()), (1, Some("a-1")));
        assert_eq!(document_kind(&first.document), Ok(Kind::Messages));
        assert_eq!(got[1].as_ref().unwrap().number, 3);
        assert_eq!(got[2].as_ref().unwrap_err().line, 4);
        assert_eq!(got[3].as_ref().unwrap().id.as_deref(), Some("7"));
    }

    #[test]
    fn a_column_of_json_text_or_values_is_the_document() {
        let opts = RowOptions {
            column: Some("trajectory".into()),
            id_field: None,
            ..RowOptions::default()
        };
        let mut got = Vec::new();
        each_jsonl(DATASET.as_bytes(), &opts, |r| got.push(r)).unwrap();
        // Rows without the column are problems of their own line.
        assert_eq!(got.iter().filter(|r| r.is_err()).count(), 3);
        let row = got.iter().find_map(|r| r.as_ref().ok()).unwrap();
        assert_eq!(row.number, 5);
        assert_eq!(document_kind(&row.document), Ok(Kind::Messages));
    }

    #[test]
    fn a_named_row_or_the_first_is_one_stream() {
        let d = Decoded::from_bytes(DATASET.as_bytes(), &mut decoder(Some("3")));
        let kinds: Vec<&str> = d.events.iter().map(|e| e.type_name()).collect();
        assert_eq!(kinds, ["prompt"]);
        let d = Decoded::from_bytes(DATASET.as_bytes(), &mut decoder(None));
        assert_eq!(d.events[0].type_name(), "note");
        assert_eq!(d.events.iter().filter(|e| e.type_name() == "request").count(), 1);
        let d = Decoded::from_bytes(DATASET.as_bytes(), &mut decoder(Some("99")));
        assert!(d.events.is_empty() && d.problems[0].reason.contains("no row 99"));
    }
}
