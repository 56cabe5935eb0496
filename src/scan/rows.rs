//! Datasets in `scan`: a JSONL file of one trajectory per line, or a
//! Parquet file, gives one stream per row — named `FILE#LINE` (or by an id
//! field), printed and summed up as files are — read once, a row at a time,
//! so memory holds one row whatever the dataset's size.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;

use super::{row_of, scan_opened, BadLines, Input, Named, Outcome, Row, ScanOptions};
use loopscope_core::formats::rows::{self, RowOptions};
use loopscope_core::formats::{self, FormatChoice, Problem};

/// How `scan` reads datasets.
#[derive(Clone, Debug, Default)]
pub struct RowsMode {
    /// `--rows`: a JSONL file is a dataset even when its rows were not
    /// recognised as trajectories.
    pub force: bool,
    /// `--column` and `--id-field`.
    pub options: RowOptions,
}

impl RowsMode {
    /// Whether every JSONL input is read as a dataset (`--rows`, or a column named).
    pub fn forced(&self) -> bool {
        self.force || self.options.column.is_some()
    }
}

/// The rows of a dataset, each scanned as a stream of its own.
struct Fanout<'a> {
    input: &'a Input,
    opts: &'a ScanOptions,
    outcome: Outcome,
    rows: Vec<Row>,
    bad: BadLines,
    /// Rows that were not trajectories.
    problems: usize,
}

impl Fanout<'_> {
    fn row(&mut self, row: Result<rows::Row, Problem>, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
        let row = match row {
            Ok(r) => r,
            Err(p) => {
                self.problems += 1;
                return self.bad.warn(&p, err);
            }
        };
        let part = row.part();
        let named = Named {
            name: format!("{}#{}", self.input.name(), loopscope_core::sanitize::line(&part)),
            file: format!("{}#{part}", self.input.file()),
            parent: None,
            found: false,
            agent: self.input.agent(),
        };
        let document: Arc<[u8]> = row.document.into();
        let opened = match formats::detect::open_reader(
            Box::new(io::Cursor::new(document)),
            crate::reading::options(FormatChoice::Auto),
            None,
        ) {
            Ok(o) => o,
            Err(reason) => {
                self.problems += 1;
                let p = Problem {
                    line: row.number,
                    reason: format!("not a trajectory ({reason})"),
                    skipped: true,
                };
                return self.bad.warn(&p, err);
            }
        };
        let (outcome, scanned) = scan_opened(&named, opened, self.opts, &Default::default(), out, err)?;
        self.outcome = worse(self.outcome, outcome);
        if let Some((scanned, format)) = scanned {
            let mut r = row_of(self.input, format, &scanned);
            r.name = named.name;
            r.file = named.file;
            self.rows.push(r);
        }
        Ok(())
    }
}

/// The outcome of a file from its rows': any detection, else clean; a row
/// that failed fails the file.
fn worse(a: Outcome, b: Outcome) -> Outcome {
    use Outcome::*;
    match (a, b) {
        (Failed, _) | (_, Failed) => Failed,
        (Detected, _) | (_, Detected) => Detected,
        _ => Clean,
    }
}

fn fanout<'a>(input: &'a Input, opts: &'a ScanOptions) -> Fanout<'a> {
    Fanout {
        input,
        opts,
        outcome: Outcome::Clean,
        rows: Vec::new(),
        bad: BadLines::for_scan(&input.name(), opts.bad_lines),
        problems: 0,
    }
}

impl Fanout<'_> {
    /// The file's outcome once every row was read: a dataset none of whose
    /// rows was a trajectory is an error, not a clean file.
    fn finish(mut self, err: &mut dyn Write) -> io::Result<(Outcome, Vec<Row>)> {
        self.bad.finish(err)?;
        if self.rows.is_empty() && self.problems > 0 {
            writeln!(
                err,
                "loopscope: {}: no row holds a trajectory ({} rows tried)",
                self.input.name(),
                super::thousands(self.problems)
            )?;
            return Ok((Outcome::Failed, self.rows));
        }
        Ok((self.outcome, self.rows))
    }
}

/// A JSONL dataset: every line's trajectory.
pub(super) fn scan_jsonl(
    input: &Input,
    reader: Box<dyn Read + Send>,
    opts: &ScanOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<(Outcome, Vec<Row>)> {
    let mut f = fanout(input, opts);
    let mut failed = None;
    let read = rows::each_jsonl(reader, &opts.rows.options, |row| {
        if failed.is_none() {
            failed = f.row(row, out, err).err();
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if let Err(e) = read {
        writeln!(err, "loopscope: {}: {}", input.name(), loopscope_core::io_reason(&e))?;
        return Ok((Outcome::Failed, f.rows));
    }
    f.finish(err)
}

/// A Parquet dataset: every row's trajectory, row group by row group.
pub(super) fn scan_parquet(
    input: &Input,
    path: &Path,
    opts: &ScanOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<(Outcome, Vec<Row>)> {
    let mut f = fanout(input, opts);
    let mut failed = None;
    let read = rows::each_parquet(path, &opts.rows.options, |row| {
        if failed.is_none() {
            failed = f.row(row, out, err).err();
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if let Err(msg) = read {
        writeln!(err, "loopscope: {}", loopscope_core::sanitize::line(&msg.to_string()))?;
        return Ok((Outcome::Failed, f.rows));
    }
    f.finish(err)
}

/// For the report: each input that is a dataset becomes its rows, held in
/// memory (one input per trajectory, `FILE#ROW`); other inputs stay. The
/// rows that could not be read are returned as warnings.
pub fn expand(inputs: Vec<Input>, mode: &RowsMode) -> Result<(Vec<Input>, Vec<String>), String> {
    let (mut out, mut warnings) = (Vec::with_capacity(inputs.len()), Vec::new());
    for input in inputs {
        let Some(path) = input.path().map(Path::to_path_buf) else {
            // A stream read into memory (`report -`): its rows, if it is a dataset.
            if let Input::Bytes { name, bytes } = &input {
                let rows = mode.forced()
                    || input
                        .open(FormatChoice::Auto)
                        .is_ok_and(|o| o.kind == Some(formats::detect::Kind::Rows));
                if rows {
                    let (file, shown) = (name.clone(), input.name());
                    rows::each_jsonl(std::io::Cursor::new(bytes.clone()), &mode.options, |row| match row {
                        Ok(row) => out.push(Input::Bytes {
                            name: format!("{file}#{}", row.part()),
                            bytes: row.document.into(),
                        }),
                        Err(p) => warnings.push(format!("{shown}: {p}")),
                    })
                    .map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e)))?;
                    continue;
                }
            }
            out.push(input);
            continue;
        };
        let parquet = rows::is_parquet_file(&path);
        let jsonl = !parquet
            && formats::source::split(&path).1.is_none()
            && (mode.forced()
                || input
                    .open(FormatChoice::Auto)
                    .is_ok_and(|o| o.kind == Some(formats::detect::Kind::Rows)));
        if !parquet && !jsonl {
            out.push(input);
            continue;
        }
        let (file, name) = (input.file(), input.name());
        let mut push = |row: Result<rows::Row, Problem>| match row {
            Ok(row) => out.push(Input::Bytes {
                name: format!("{file}#{}", row.part()),
                bytes: row.document.into(),
            }),
            Err(p) => warnings.push(format!("{name}: {p}")),
        };
        if parquet {
            rows::each_parquet(&path, &mode.options, &mut push)?;
        } else {
            let reader = formats::open(&path)?;
            rows::each_jsonl(reader, &mode.options, &mut push).map_err(|e| {
                format!(
                    "{}: {}",
                    loopscope_core::sanitize::path(&path),
                    loopscope_core::io_reason(&e)
                )
            })?;
        }
    }
    Ok((out, warnings))
}
