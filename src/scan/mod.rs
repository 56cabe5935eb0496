//! `loopscope scan`: the engine run headless over files, detections printed
//! as aligned lines or JSONL (`shared/design/cli.md`).

use std::io::{self, Read, Write};
use std::path::PathBuf;

mod bad_lines;
mod input;
mod parallel;
mod print;
mod rows;

pub use input::Input;

pub use bad_lines::{thousands, BadLines};

pub use print::{detection_record, position, summary_json};
use print::{write_comparison, write_human, write_summary};
pub use rows::{expand as expand_rows, RowsMode};

use crate::whatif::{Rechunker, RunSummary, Summarizer};
use loopscope_core::config::Setup;
use loopscope_core::detect::Detection;
use loopscope_core::engine::Engine;
use loopscope_core::event::{Event, EventKind};
use loopscope_core::formats::{self, Decoder, FormatChoice, Item};

/// Exit status: no detection.
pub const EXIT_CLEAN: i32 = 0;
/// Exit status: at least one detection.
pub const EXIT_DETECTED: i32 = 1;
/// Exit status: the command could not run (bad flag, unreadable input).
pub const EXIT_ERROR: i32 = 2;

pub struct ScanOptions {
    /// One setup: the detections. Several (`--profile a,b`): a comparison.
    pub setups: Vec<Setup>,
    pub format: FormatChoice,
    pub json: bool,
    pub transform: Transform,
    /// Files scanned at once (None: one per core).
    pub jobs: Option<usize>,
    /// After the files, a summary: one row per file and totals per detector.
    pub summary: bool,
    /// A progress bar on stderr (files, bytes, detections, ETA); the caller
    /// asks for it only when stderr is a terminal.
    pub progress: bool,
    /// Print every bad line (`--bad-lines`), not each file's first few.
    pub bad_lines: bool,
    /// How datasets (one trajectory per row) are read.
    pub rows: RowsMode,
    /// Where detections are sent besides (`--otlp`).
    pub telemetry: crate::telemetry::Telemetry,
}

pub use crate::output::SCHEMA;

/// One file's line in the summary.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub file: String,
    pub parent: Option<String>,
    /// The session's title, where its store keeps one.
    pub title: Option<String>,
    pub format: &'static str,
    /// The agent whose folder it came from, else its format.
    pub agent: &'static str,
    pub events: usize,
    pub bad_lines: usize,
    /// Records of kinds the importer does not know, by kind.
    pub unknown: formats::drift::UnknownKinds,
    pub detectors: Vec<&'static str>,
    pub first: Option<Detection>,
    pub after: crate::whatif::After,
}

/// Totals over summary rows: detections per detector, and files (with
/// how many looped) per agent and per format.
#[derive(Debug, Default)]
pub struct Totals {
    pub per_detector: std::collections::BTreeMap<&'static str, usize>,
    pub per_agent: std::collections::BTreeMap<&'static str, (usize, usize)>,
    pub per_format: std::collections::BTreeMap<&'static str, (usize, usize)>,
}

impl Totals {
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Totals {
        let mut t = Totals::default();
        for r in rows {
            for d in &r.detectors {
                *t.per_detector.entry(d).or_default() += 1;
            }
            for (map, key) in [(&mut t.per_format, r.format), (&mut t.per_agent, r.agent)] {
                let f = map.entry(key).or_default();
                f.0 += 1;
                f.1 += usize::from(!r.detectors.is_empty());
            }
        }
        t
    }

    /// "block-cycle 2, tool-repeat 1", or "none".
    pub fn detectors_text(&self) -> String {
        if self.per_detector.is_empty() {
            return "none".to_string();
        }
        let v: Vec<String> = self.per_detector.iter().map(|(d, n)| format!("{d} {n}")).collect();
        v.join(", ")
    }

    /// "claude-code 3 of 4 looped, codex 1 of 1 looped" for `per_agent` or `per_format`.
    pub fn looped_text(counts: &std::collections::BTreeMap<&'static str, (usize, usize)>) -> String {
        let v: Vec<String> = counts
            .iter()
            .map(|(k, (n, l))| format!("{k} {l} of {n} looped"))
            .collect();
        v.join(", ")
    }
}

/// What is done to a stream before the detectors see it.
#[derive(Clone, Debug, Default)]
pub struct Transform {
    /// Re-cut the text into deltas of this many chars.
    pub rechunk: Option<usize>,
    /// Ask a live LLM judge at its checks and insert the verdicts.
    pub judge: Option<crate::judge::LiveJudge>,
}

impl ScanOptions {
    fn comparing(&self) -> bool {
        self.setups.len() > 1
    }
}

/// What scanning one input found.
#[derive(Debug, Default)]
pub struct FileScan {
    pub events: usize,
    /// Events with text, calls, results or verdicts ([`formats::carries_stream`]).
    pub stream_events: usize,
    pub bad_lines: usize,
    /// Records of kinds the importer does not know, by kind.
    pub unknown: formats::drift::UnknownKinds,
    pub detections: Vec<Detection>,
    /// The input line of each detection's event, where the input is read
    /// line by line (`None` for a whole document, where every event is on line 1).
    pub lines: Vec<Option<u64>>,
    /// What each setup found and what streamed after its first detection.
    pub summaries: Vec<RunSummary>,
    /// The first and last clock times of its events (Unix seconds).
    pub clock: Option<(f64, f64)>,
    /// What kept a detector from running exactly (one line each, e.g. vllm-repetition without token ids).
    pub caveats: Vec<String>,
}

/// Runs every setup's engine over one input (re-cut into `rechunk`-char
/// deltas first, if asked). Each detection and problem is handed over as
/// soon as it is found, so JSON output streams. A detection's `event` (and
/// `events`, a tool `onset`, the numbers in its reason) count the events
/// the engines saw: under re-chunking, the re-cut stream's, as the viewer's
/// `:rechunk` numbers them; the recorded event whose delta held its last
/// char is handed over beside it (`None` without re-chunking), and its
/// input line is in [`FileScan::lines`]. `run` is the index of its setup.
/// The event it fired at comes with it (as the engines saw it).
pub fn scan_one(
    input: impl Read,
    decoder: &mut dyn Decoder,
    setups: &[Setup],
    transform: &Transform,
    mut on_detection: impl FnMut(&Detection, Option<usize>, &Event),
    mut on_problem: impl FnMut(&formats::Problem),
) -> io::Result<FileScan> {
    let rechunk = transform.rechunk;
    let mut inserter = transform.judge.as_ref().map(crate::judge::LiveJudge::inserter);
    let mut engines: Vec<Engine> = setups.iter().map(Engine::new).collect();
    let labels: Vec<String> = setups.iter().map(|s| s.profile.name().to_string()).collect();
    let mut summary = Summarizer::new(&labels);
    let mut result = FileScan::default();
    let mut beyond_line_one = false;
    let mut rechunker = rechunk.map(Rechunker::new);
    let mut run = |event: &Event, origin: usize, line: u64, result: &mut FileScan| {
        let mut found = Vec::new();
        for (k, engine) in engines.iter_mut().enumerate() {
            for mut d in engine.push(event) {
                d.run = k;
                found.push(d);
            }
        }
        summary.push(event, &found);
        let recorded = rechunk.map(|_| origin);
        for d in found {
            on_detection(&d, recorded, event);
            result.detections.push(d);
            result.lines.push(Some(line));
        }
    };
    let mut index = 0;
    // The line of the latest text delta: a piece let go later came from it.
    let mut text_line = 0;
    // One recorded event, then as the engines see it (after re-cutting,
    // if asked). Borrowed: an event is read where it was decoded.
    let mut one = |event: &Event, line: u64, result: &mut FileScan| {
        result.events += 1;
        if let Some(loopscope_core::event::Ts::Clock { unix, .. }) = &event.ts {
            let (first, last) = result.clock.get_or_insert((*unix, *unix));
            *first = first.min(*unix);
            *last = last.max(*unix);
        }
        result.stream_events += usize::from(formats::carries_stream(event));
        beyond_line_one |= line > 1;
        match rechunker.as_mut() {
            Some(r) => {
                let text = matches!(event.kind, EventKind::Reasoning { .. } | EventKind::Content { .. });
                r.push_into(index, event, &mut |e, origin| {
                    let l = if origin == index { line } else { text_line };
                    run(&e, origin, l, result);
                });
                if text {
                    text_line = line;
                }
            }
            None => run(event, index, line, result),
        }
        index += 1;
    };
    formats::decode_all(input, decoder, |item| match item {
        // Read in its item: moving it out would copy it.
        Item::Event(ref event, line) if inserter.is_none() => one(event, line, &mut result),
        // A live judge inserts its verdicts after the turns it checks.
        Item::Event(event, line) => {
            let Some(ins) = inserter.as_mut() else { return };
            let mut out = Vec::new();
            ins.push(event, &mut out);
            for w in ins.warnings.drain(..) {
                on_problem(&formats::Problem {
                    line,
                    reason: format!("judge: {w}"),
                    skipped: false,
                });
            }
            for event in &out {
                one(event, line, &mut result);
            }
        }
        Item::Problem(p) => {
            result.bad_lines += usize::from(p.skipped);
            on_problem(&p);
        }
        Item::Unknown(u) => {
            result.unknown.add(&u);
        }
    })?;
    if let Some(r) = rechunker.as_mut() {
        r.flush_into(&mut |e, origin| run(&e, origin, text_line, &mut result));
    }
    // The checks some agents make once more after the last event (the
    // OpenHands SDK's before the next LLM call): reported at one past it.
    let mut at_end = Vec::new();
    for (k, engine) in engines.iter_mut().enumerate() {
        for mut d in engine.finish() {
            d.run = k;
            at_end.push(d);
        }
    }
    summary.found(&at_end);
    let end = Event::new(EventKind::Meta);
    for d in at_end {
        on_detection(&d, None, &end);
        result.detections.push(d);
        result.lines.push(None);
    }
    if !beyond_line_one {
        result.lines.iter_mut().for_each(|l| *l = None);
    }
    result.summaries = summary.finish();
    for c in engines.iter().flat_map(Engine::caveats) {
        if !result.caveats.contains(&c) {
            result.caveats.push(c);
        }
    }
    Ok(result)
}

/// Why a scan or report of inputs none of which is an agent session (or
/// a trajectory, for a dataset's rows) fails: exit 2, a job that checked
/// nothing must not pass. `forced`: they were read as `--format` said.
pub fn nothing_read(skipped: usize, forced: bool) -> String {
    match (skipped, forced) {
        (0, _) => "nothing read: no session among the inputs".to_string(),
        (n, false) => format!(
            "nothing read: {} found, none of them an agent session (`--format` reads one as that format)",
            crate::output::count(n, "file")
        ),
        (n, true) => format!(
            "nothing read: {} found, none of them read as --format says",
            crate::output::count(n, "file")
        ),
    }
}

/// How one input went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Clean,
    Detected,
    Failed,
    /// Found in a directory and not a session: counted, not an error.
    Skipped,
}

/// Scans every input; returns the exit status. Several inputs are scanned
/// in parallel on every core (each file streamed, its output kept until
/// its turn), and printed in the order given.
pub fn run(inputs: &[Input], opts: &ScanOptions, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
    // Several files' lines line up (one file's are aligned among themselves).
    let columns = match inputs.len() {
        0 | 1 => print::Columns::default(),
        _ => print::Columns::new(inputs.iter().map(Input::name), opts.setups[0].ids().into_iter()),
    };
    let results: Vec<(Outcome, Vec<Row>)> = if inputs.len() <= 1 && !opts.progress {
        let mut v = Vec::new();
        for input in inputs {
            v.push(scan_input(input, opts, &columns, out, err)?);
        }
        v
    } else {
        parallel::run_parallel(inputs, opts, &columns, out, err)?
    };
    let outcomes: Vec<Outcome> = results.iter().map(|r| r.0).collect();
    if opts.summary {
        let rows: Vec<Row> = results.into_iter().flat_map(|r| r.1).collect();
        write_summary(out, &rows, opts.json)?;
    }
    let skipped = outcomes.iter().filter(|o| **o == Outcome::Skipped).count();
    if skipped > 0 && skipped == outcomes.len() {
        let forced = matches!(opts.format, FormatChoice::Fixed(_));
        writeln!(err, "loopscope: {}", nothing_read(skipped, forced))?;
        return Ok(EXIT_ERROR);
    }
    if skipped > 0 {
        let files = crate::output::count(skipped, "file");
        writeln!(err, "loopscope: {files} skipped (not agent sessions)")?;
    }
    Ok(if outcomes.contains(&Outcome::Failed) {
        EXIT_ERROR
    } else if outcomes.contains(&Outcome::Detected) {
        EXIT_DETECTED
    } else {
        EXIT_CLEAN
    })
}

/// Scans one input, writing its detections to `out` and its problems to
/// `err`; a dataset (one trajectory per row) gives a row per trajectory.
pub(super) fn scan_input(
    input: &Input,
    opts: &ScanOptions,
    columns: &print::Columns,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<(Outcome, Vec<Row>)> {
    let name = input.name();
    if let Some(why) = input.unreadable() {
        say(err, &format!("loopscope: warning: {why}"))?;
        return Ok((Outcome::Failed, Vec::new()));
    }
    if let Some(path) = input.path().filter(|p| formats::rows::is_parquet_file(p)) {
        return rows::scan_parquet(input, path, opts, out, err);
    }
    let opened = match input.open(opts.format) {
        Ok(o) => o,
        Err(msg) => {
            if input.found() {
                return Ok((Outcome::Skipped, Vec::new()));
            }
            let msg = crate::output::clear_error(&msg);
            say(err, &format!("loopscope: {}", loopscope_core::sanitize::line(&msg)))?;
            return Ok((Outcome::Failed, Vec::new()));
        }
    };
    // An empty file found in a folder is no session yet (a file just
    // created, a stray `out.txt`): skipped, not listed with 0 events.
    if input.found() && opened.looks_like.is_none() {
        return Ok((Outcome::Skipped, Vec::new()));
    }
    let whole = input.path().is_none_or(|p| formats::source::split(p).1.is_none());
    if whole && (opened.kind == Some(formats::detect::Kind::Rows) || opts.rows.forced()) {
        return rows::scan_jsonl(input, opened.reader, opts, out, err);
    }
    let named = Named {
        name,
        file: input.file(),
        parent: input.parent().map(|p| p.display().to_string()),
        found: input.found(),
        agent: input.agent(),
    };
    let (outcome, row) = scan_opened(&named, opened, opts, columns, out, err)?;
    let row = row.map(|scanned| row_of(input, scanned.1, &scanned.0));
    Ok((outcome, row.into_iter().collect()))
}

/// How a stream is named in the output.
pub(crate) struct Named {
    /// Shown (one line, terminal-safe).
    name: String,
    /// JSON's `file`.
    file: String,
    parent: Option<String>,
    /// Found in a folder: not being a stream is no error.
    found: bool,
    /// The agent whose folder it came from.
    agent: Option<&'static str>,
}

/// Scans one opened stream; its scan and format when it was one.
fn scan_opened(
    named: &Named,
    mut opened: formats::Opened,
    opts: &ScanOptions,
    columns: &print::Columns,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<(Outcome, Option<(FileScan, &'static str)>)> {
    let Named { name, file, parent, .. } = named;
    let format = opened.format.name();
    let forced = opened.forced_check();
    let mut link = opts.telemetry.otlp.is_some().then(|| {
        opts.telemetry.session(
            crate::telemetry::SessionInfo {
                name: name.clone(),
                id: file.clone(),
                agent: named.agent.unwrap_or(format).to_string(),
                format: format.to_string(),
                profile: opts.setups[0].profile.name().to_string(),
            },
            true,
        )
    });
    let mut write_error = None;
    let (mut bad, mut warn_error) = (BadLines::for_scan(name, opts.bad_lines), None);
    // A forced `--format` that reads nothing of the stream says so first
    // (it looks like another format), then its bad lines: the first few
    // are held until that is known, so as not to bury it (more, with
    // `--bad-lines`, are said as they come).
    let mut hold = forced.check(0).is_err();
    let mut held: Vec<u8> = Vec::new();
    let scanned = scan_one(
        opened.reader,
        &mut *opened.decoder,
        &opts.setups,
        &opts.transform,
        |d, recorded, event| {
            if let Some(link) = link.as_mut() {
                link.detection(d, event, opts.setups[d.run].profile.name());
            }
            if opts.json && !opts.comparing() && write_error.is_none() {
                let mut record = detection_record(file, parent.as_deref(), d);
                if let Some(r) = recorded {
                    record["recorded_event"] = r.into();
                }
                if let Err(e) =
                    writeln!(out, "{}", loopscope_core::sanitize::json(&record.to_string())).and_then(|_| out.flush())
                {
                    write_error = Some(e);
                }
            }
        },
        |p| {
            if warn_error.is_none() {
                let to: &mut dyn Write = if hold { &mut held } else { &mut *err };
                warn_error = bad.warn(p, to).err();
                // `--bad-lines` prints every one: past the first few they
                // are said as they come, not held without bound.
                if hold && held.iter().filter(|&&b| b == b'\n').count() >= bad_lines::SHOWN {
                    hold = false;
                    if let Err(e) = err.write_all(&std::mem::take(&mut held)) {
                        warn_error.get_or_insert(e);
                    }
                }
            }
        },
    );
    if let Some(e) = write_error.or(warn_error) {
        return Err(e);
    }
    let read_nothing = scanned.as_ref().is_ok_and(|s| forced.check(s.stream_events).is_err());
    {
        let to: &mut dyn Write = if hold { &mut held } else { &mut *err };
        if let Ok(s) = &scanned {
            // Kinds unknown to a format that is not the file's say nothing.
            if !read_nothing {
                bad.unknown_kinds(&s.unknown);
            }
            for c in &s.caveats {
                say(to, &format!("loopscope: {name}: {c}"))?;
            }
        }
        bad.finish(to)?;
    }
    if !read_nothing {
        err.write_all(&held)?;
    }
    if let (Some(link), Ok(s)) = (link.as_mut(), &scanned) {
        if let Some((first, last)) = s.clock {
            link.span_times(first, last);
        }
        link.finish();
    }
    let scanned = match scanned {
        Ok(s) => s,
        Err(e) => {
            say(err, &format!("loopscope: {name}: {}", loopscope_core::io_reason(&e)))?;
            return Ok((Outcome::Failed, None));
        }
    };
    if let Err(msg) = forced.check(scanned.stream_events) {
        if named.found {
            return Ok((Outcome::Skipped, None));
        }
        say(err, &format!("loopscope: {name}: {msg}"))?;
        // Then the lines it could not read (the first few, and a count).
        err.write_all(&held)?;
        return Ok((Outcome::Failed, None));
    }
    let detected = !scanned.detections.is_empty();
    if opts.comparing() {
        if opts.json {
            for s in &scanned.summaries {
                writeln!(
                    out,
                    "{}",
                    loopscope_core::sanitize::json(&summary_json(file, s, &scanned).to_string())
                )?;
            }
        } else {
            write_comparison(out, name, &scanned)?;
        }
    } else if !opts.json {
        write_human(out, name, &scanned, columns)?;
    }
    let outcome = if detected { Outcome::Detected } else { Outcome::Clean };
    Ok((outcome, Some((scanned, format))))
}

/// The summary row of one scanned input (the first setup's numbers).
pub fn row_of(input: &Input, format: &'static str, scanned: &FileScan) -> Row {
    let first = scanned.summaries.first();
    Row {
        name: input.name(),
        file: input.file(),
        parent: input.parent().map(|p| p.display().to_string()),
        title: input.title().map(str::to_string),
        format,
        agent: input.agent().unwrap_or(format),
        events: scanned.events,
        bad_lines: scanned.bad_lines,
        unknown: scanned.unknown.clone(),
        detectors: scanned
            .detections
            .iter()
            .filter(|d| d.run == 0)
            .map(|d| d.detector)
            .collect(),
        first: first.and_then(|s| s.first.clone()),
        after: first.map(|s| s.after).unwrap_or_default(),
    }
}

/// A message about one input on standard error, each line cut to a
/// readable length (a path or a reason can be any length).
fn say(err: &mut dyn Write, msg: &str) -> io::Result<()> {
    write!(err, "{}", loopscope_core::sanitize::cut_lines(msg))
}
