//! `loopscope scan`: the engine run headless over files, detections printed
//! as aligned lines or JSONL (`shared/design/cli.md`).

use std::io::{self, Read, Write};
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::config::Setup;
use crate::detect::Detection;
use crate::engine::Engine;
use crate::formats::{self, Decoder, FormatChoice, Item};

/// Exit status: no detection.
pub const EXIT_CLEAN: i32 = 0;
/// Exit status: at least one detection.
pub const EXIT_DETECTED: i32 = 1;
/// Exit status: the command could not run (bad flag, unreadable input).
pub const EXIT_ERROR: i32 = 2;

pub struct ScanOptions {
    pub setup: Setup,
    pub format: FormatChoice,
    pub json: bool,
}

/// One input to scan: its name as given, and where its bytes come from.
pub enum Input {
    Path(PathBuf),
    /// Bytes already in memory (the bundled demo), with the name to show.
    Bytes {
        name: String,
        bytes: &'static [u8],
    },
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Bytes { name, .. } => name.clone(),
        }
    }

    fn open(&self, format: FormatChoice) -> Result<formats::Opened, String> {
        match self {
            Input::Path(p) => formats::open_input(p, format),
            Input::Bytes { bytes, .. } => formats::detect::open_reader(Box::new(*bytes), format, None),
        }
    }
}

/// What scanning one input found.
#[derive(Debug, Default)]
pub struct FileScan {
    pub events: usize,
    /// Events with text, calls, results or verdicts ([`formats::carries_stream`]).
    pub stream_events: usize,
    pub bad_lines: usize,
    pub detections: Vec<Detection>,
    /// The input line of each detection's event, where the input is read
    /// line by line (`None` for a whole document, where every event is on line 1).
    pub lines: Vec<Option<u64>>,
}

/// Runs the engine over one input. Each detection and problem is handed
/// over as soon as it is found, so JSON output streams.
pub fn scan_one(
    input: impl Read,
    decoder: &mut dyn Decoder,
    setup: &Setup,
    mut on_detection: impl FnMut(&Detection),
    mut on_problem: impl FnMut(&formats::Problem),
) -> io::Result<FileScan> {
    let mut engine = Engine::new(setup);
    let mut result = FileScan::default();
    let mut beyond_line_one = false;
    formats::decode_all(input, decoder, |item| match item {
        Item::Event(event, line) => {
            result.events += 1;
            result.stream_events += usize::from(formats::carries_stream(&event));
            beyond_line_one |= line > 1;
            for d in engine.push(&event) {
                on_detection(&d);
                result.detections.push(d);
                result.lines.push(Some(line));
            }
        }
        Item::Problem(p) => {
            result.bad_lines += usize::from(p.skipped);
            on_problem(&p);
        }
    })?;
    if !beyond_line_one {
        result.lines.iter_mut().for_each(|l| *l = None);
    }
    Ok(result)
}

/// Scans every input; returns the exit status.
pub fn run(inputs: &[Input], opts: &ScanOptions, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<i32> {
    let (mut failed, mut detected) = (false, false);
    for input in inputs {
        let name = input.name();
        let mut opened = match input.open(opts.format) {
            Ok(o) => o,
            Err(msg) => {
                writeln!(err, "loopscope: {msg}")?;
                failed = true;
                continue;
            }
        };
        let forced = opened.forced_check();
        let mut write_error = None;
        let scanned = scan_one(
            opened.reader,
            &mut *opened.decoder,
            &opts.setup,
            |d| {
                if opts.json && write_error.is_none() {
                    if let Err(e) = writeln!(out, "{}", crate::sanitize::json(&json_line(&name, d).to_string()))
                        .and_then(|_| out.flush())
                    {
                        write_error = Some(e);
                    }
                }
            },
            |p| {
                let _ = writeln!(err, "loopscope: warning: {name}: {p}");
            },
        );
        if let Some(e) = write_error {
            return Err(e);
        }
        let scanned = match scanned {
            Ok(s) => s,
            Err(e) => {
                writeln!(err, "loopscope: {name}: {}", crate::io_reason(&e))?;
                failed = true;
                continue;
            }
        };
        if let Err(msg) = forced.check(scanned.stream_events) {
            writeln!(err, "loopscope: {name}: {msg}")?;
            failed = true;
            continue;
        }
        detected |= !scanned.detections.is_empty();
        if !opts.json {
            write_human(out, &name, &scanned)?;
        }
    }
    Ok(if failed {
        EXIT_ERROR
    } else if detected {
        EXIT_DETECTED
    } else {
        EXIT_CLEAN
    })
}

/// The documented JSONL object: `file` first, then the detection's fields.
pub fn json_line(file: &str, d: &Detection) -> Value {
    let mut m = Map::new();
    m.insert("file".into(), Value::String(file.to_string()));
    if let Ok(Value::Object(fields)) = serde_json::to_value(d) {
        m.extend(fields);
    }
    Value::Object(m)
}

/// Where a detection is: the channel and, for text, the buffer length.
pub fn position(d: &Detection) -> String {
    match d.at_char {
        Some(c) => format!("{}@{c}", d.channel.as_str()),
        None => d.channel.as_str().to_string(),
    }
}

fn write_human(out: &mut dyn Write, name: &str, scan: &FileScan) -> io::Result<()> {
    if scan.detections.is_empty() {
        let bad = match scan.bad_lines {
            0 => String::new(),
            n => format!(", {n} bad lines skipped"),
        };
        return writeln!(out, "{name}: no detections ({} events{bad})", scan.events);
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
    let w_loc = (0..n).map(|i| loc(i).chars().count()).max().unwrap_or(0);
    let w_det = scan.detections.iter().map(|d| d.detector.len()).max().unwrap_or(0);
    let w_pos = scan.detections.iter().map(|d| position(d).len()).max().unwrap_or(0);
    for (i, d) in scan.detections.iter().enumerate() {
        writeln!(
            out,
            "{:<w_loc$}  {:<w_det$}  {:<w_pos$}  {}",
            loc(i),
            d.detector,
            position(d),
            d.reason
        )?;
    }
    Ok(())
}
