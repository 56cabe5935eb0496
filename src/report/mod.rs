//! `loopscope report`: what reviewers get instead of terminal output — the
//! sessions scanned (as `scan --summary` does), and for each detection its
//! reason, numbers, parameters, the evidence with the viewer's highlights
//! and the viewer's screen at that moment. [`html`] writes it.

pub mod html;

use std::io::{self, Read, Write};
use std::time::Instant;

use crate::render::{self, At, Shot};
use crate::scan::{self, Input, Row};
use crate::tui::buffer_pane::{Highlight, Mark};
use crate::tui::theme::Theme;
use crate::whatif::RunSummary;
use loopscope_core::config::Setup;
use loopscope_core::detect::{Detection, Evidence};
use loopscope_core::event::{Channel, EventKind};
use loopscope_core::formats::{self, FormatChoice};

pub struct ReportOptions {
    /// The first is the report's profile; more add a comparison per file.
    pub setups: Vec<Setup>,
    pub format: FormatChoice,
    /// The viewer's size in the pictures.
    pub size: (u16, u16),
    /// Detections shown in full (with a picture) in the whole report; the
    /// rest are listed in the table only, so a fleet's report stays small.
    pub max_sections: usize,
}

/// Reads each input that is a stream (standard input, a FIFO, a process
/// substitution `<(…)`) into memory once: a report reads every input twice
/// (the scan, then the viewer for the pictures), and a stream cannot be
/// read again. Files and folders are left to be read where they are. At
/// most `limit` bytes per stream (a longer one is an error that says to
/// save it to a file).
pub fn read_streams_once(inputs: Vec<Input>, limit: u64) -> Result<Vec<Input>, String> {
    inputs
        .into_iter()
        .map(|input| {
            let Input::Path(path) = &input else {
                return Ok(input);
            };
            if !formats::is_stdin(path) && !crate::tail::is_stream(path) {
                return Ok(input);
            }
            let name = input.name();
            let mut bytes = Vec::new();
            formats::open(path)?
                .take(limit.saturating_add(1))
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{name}: {}", loopscope_core::io_reason(&e)))?;
            if bytes.len() as u64 > limit {
                return Err(format!(
                    "{name}: more than {} bytes; a report reads its input twice, so save a stream this long to a \
                     file and report on the file",
                    scan::thousands(limit as usize)
                ));
            }
            Ok(Input::Bytes {
                name: input.file(),
                bytes: bytes.into(),
            })
        })
        .collect()
}

/// Chars of evidence text shown around a detection at most.
const EXCERPT_CHARS: usize = 6000;
/// Chars before the evidence shown for context.
const CONTEXT_CHARS: usize = 160;
/// Calls listed for a detection about calls, at most.
const MAX_CALLS: usize = 40;
/// Chars of a call's arguments or a result shown, at most.
const MAX_LINE: usize = 400;

pub struct Report {
    pub profiles: Vec<String>,
    pub files: Vec<FileReport>,
    /// Files found in folders that are not agent sessions.
    pub skipped: usize,
    /// Inputs that could not be read, with why.
    pub failed: Vec<String>,
    /// Detections beyond `max_sections`, listed in the table only.
    pub not_shown: usize,
}

impl Report {
    /// For each profile: how many sessions it fired on and its detections
    /// in all (the headline's "seed: 2 fired, 5 detections"). Fired, not
    /// looped: whether a detection is a loop is the reviewer's call.
    pub fn fired_by_profile(&self) -> Vec<(String, usize, usize)> {
        self.profiles
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let counts = self.files.iter().map(|f| match f.runs.get(k) {
                    Some(run) => run.detections,
                    None if k == 0 => f.row.detectors.len(),
                    None => 0,
                });
                let (fired, detections) = counts.fold((0, 0), |(s, d), n| (s + usize::from(n > 0), d + n));
                (name.clone(), fired, detections)
            })
            .collect()
    }

    /// The headline's counts: "1 fired, 4 detections", each profile's
    /// named when several ran.
    pub fn headline(&self) -> String {
        let per = self.fired_by_profile();
        let one = |(_, fired, detections): &(String, usize, usize)| {
            format!("{fired} fired, {}", crate::output::count(*detections, "detection"))
        };
        match per.as_slice() {
            [only] => one(only),
            many => many
                .iter()
                .map(|p| format!("{}: {}", p.0, one(p)))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

pub struct FileReport {
    pub row: Row,
    /// Every profile's first detection and what streamed after it.
    pub runs: Vec<RunSummary>,
    pub sections: Vec<Section>,
}

/// One detection shown in full.
pub struct Section {
    pub profile: String,
    pub detection: Detection,
    /// Its line in the input, where the input has lines.
    pub line: Option<u64>,
    pub params: Vec<(String, String)>,
    pub excerpt: Excerpt,
    /// The viewer at that moment, as SVG.
    pub svg: String,
}

/// The evidence as text: pieces of the channel with the viewer's marks.
pub enum Excerpt {
    Text {
        channel: &'static str,
        /// The char offset of the first piece.
        from: usize,
        pieces: Vec<(String, Option<Mark>)>,
        /// Chars of the evidence left out after the excerpt.
        cut: usize,
    },
    /// The calls involved, one line each.
    Calls(Vec<String>),
    None,
}

/// What scanning one input gave.
enum Scanned {
    Skipped,
    Failed(String),
    Done(Box<Done>),
}

struct Done {
    format: formats::Format,
    scan: scan::FileScan,
    row: Row,
    /// Its warnings as printed: the first few bad lines and a count
    /// (a file of 10 million bad lines once kept every one, 2.1 GB).
    warnings: Vec<u8>,
}

/// Detections of one input and setup shown in full: (input, setup, (index
/// among the setup's detections, line)).
type Plan = (usize, usize, Vec<(usize, Option<u64>)>);

fn scan_input(input: &Input, opts: &ReportOptions) -> Scanned {
    let name = input.name();
    if let Some(why) = input.unreadable() {
        return Scanned::Failed(why);
    }
    let mut opened = match input.open(opts.format) {
        Ok(o) => o,
        Err(_) if input.found() => return Scanned::Skipped,
        Err(msg) => return Scanned::Failed(msg),
    };
    // An empty file found in a folder is no session yet (as `scan` has it).
    if input.found() && opened.looks_like.is_none() {
        return Scanned::Skipped;
    }
    let format = opened.format;
    let forced = opened.forced_check();
    let (mut warnings, mut bad) = (Vec::new(), scan::BadLines::new(&name));
    let scanned = scan::scan_one(
        opened.reader,
        &mut *opened.decoder,
        &opts.setups,
        &Default::default(),
        |_, _, _| {},
        |p| {
            let _ = bad.warn(p, &mut warnings);
        },
    );
    let _ = bad.finish(&mut warnings);
    let scan = match scanned {
        Ok(s) => s,
        Err(e) => return Scanned::Failed(format!("{name}: {}", loopscope_core::io_reason(&e))),
    };
    if let Err(msg) = forced.check(scan.stream_events) {
        return match input {
            _ if input.found() => Scanned::Skipped,
            _ => Scanned::Failed(format!("{name}: {msg}")),
        };
    }
    let row = scan::row_of(input, format.name(), &scan);
    Scanned::Done(Box::new(Done {
        format,
        scan,
        row,
        warnings,
    }))
}

/// `f` of 0..n on every core, the results in order.
pub(crate) fn in_parallel<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |c| c.get())
        .clamp(1, n.max(1));
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= n {
                            break mine;
                        }
                        mine.push((i, f(i)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// Scans `inputs` (on every core) and gathers the report; warnings go to
/// `err`. The first `max_sections` detections, in input order, get their
/// pictures (drawn on every core too).
pub fn build(inputs: &[Input], opts: &ReportOptions, err: &mut dyn Write) -> io::Result<Report> {
    let mut report = Report {
        profiles: opts.setups.iter().map(|s| s.profile.name().to_string()).collect(),
        files: Vec::new(),
        skipped: 0,
        failed: Vec::new(),
        not_shown: 0,
    };
    let scanned = in_parallel(inputs.len(), |i| scan_input(&inputs[i], opts));
    // Which detections are shown in full: (input, setup, wanted), in order.
    let mut plans: Vec<Plan> = Vec::new();
    let mut budget = opts.max_sections;
    for (i, s) in scanned.iter().enumerate() {
        let Scanned::Done(done) = s else {
            continue;
        };
        let Done { scan, warnings, .. } = done.as_ref();
        err.write_all(warnings)?;
        for k in 0..opts.setups.len() {
            let wanted: Vec<(usize, Option<u64>)> = scan
                .detections
                .iter()
                .zip(&scan.lines)
                .filter(|(d, _)| d.run == k)
                .map(|(_, line)| *line)
                .enumerate()
                .collect();
            let shown = wanted.len().min(budget);
            report.not_shown += wanted.len() - shown;
            budget -= shown;
            if shown > 0 {
                plans.push((i, k, wanted[..shown].to_vec()));
            }
        }
    }
    let pictures = in_parallel(plans.len(), |j| {
        let (i, k, wanted) = &plans[j];
        let Scanned::Done(done) = &scanned[*i] else {
            return Ok(Vec::new());
        };
        moments(&inputs[*i], done.format, &opts.setups[*k], opts, wanted)
    });
    let mut pictures = plans.iter().map(|(i, _, _)| *i).zip(pictures).peekable();
    for (i, s) in scanned.into_iter().enumerate() {
        match s {
            Scanned::Skipped => report.skipped += 1,
            // Said by the caller too (a warning beside a report, an error
            // where nothing could be read): the report lists it.
            Scanned::Failed(msg) => report.failed.push(msg),
            Scanned::Done(done) => {
                let Done { scan, row, .. } = *done;
                let mut sections = Vec::new();
                while let Some((_, drawn)) = pictures.next_if(|(p, _)| *p == i) {
                    match drawn {
                        Ok(mut s) => sections.append(&mut s),
                        Err(msg) => writeln!(err, "loopscope: {}: no pictures: {msg}", row.name)?,
                    }
                }
                report.files.push(FileReport {
                    row,
                    runs: scan.summaries,
                    sections,
                });
            }
        }
    }
    Ok(report)
}

/// The viewer loaded with the whole stream once, then shown at each wanted
/// detection (index among this setup's detections, and its line).
fn moments(
    input: &Input,
    format: formats::Format,
    setup: &Setup,
    opts: &ReportOptions,
    wanted: &[(usize, Option<u64>)],
) -> Result<Vec<Section>, String> {
    let opened = input.open(FormatChoice::Fixed(format))?;
    let shot = Shot {
        name: input.name(),
        at: At::End,
        size: opts.size,
        select: None,
        keys: String::new(),
        live: false,
        theme: Theme::dark(),
        caption: false,
        compare: Vec::new(),
    };
    let read = |sink: &mut dyn FnMut(loopscope_core::Event)| {
        let mut decoder = opened.decoder;
        formats::decode_all(opened.reader, &mut *decoder, |item| {
            if let formats::Item::Event(e, _) = item {
                sink(e);
            }
        })
        .map_err(|e| loopscope_core::io_reason(&e))
    };
    let now = Instant::now();
    let mut app = render::load(read, format, setup.clone(), &shot, now)?;
    let title = format!("loopscope {}", input.name());
    let mut out = Vec::new();
    for &(i, line) in wanted {
        app.choose_detection(i, now);
        let Some(d) = app.tape.detections().get(i).cloned() else {
            continue;
        };
        let params = app
            .configured
            .iter()
            .find(|c| c.info.id == d.detector)
            .map(|c| c.params.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect())
            .unwrap_or_default();
        let excerpt = excerpt(&app, &d);
        let buffer = render::draw(&app, false)?;
        out.push(Section {
            profile: setup.profile.name().to_string(),
            svg: render::svg::to_svg(&buffer, &title, app.theme.canvas),
            detection: d,
            line,
            params,
            excerpt,
        });
    }
    Ok(out)
}

/// The evidence of `d` as the viewer marks it, from the engine at its event.
fn excerpt(app: &crate::tui::App, d: &Detection) -> Excerpt {
    if d.evidence == Evidence::Calls || matches!(d.channel, Channel::Tools | Channel::Turns) {
        let calls: Vec<String> = d
            .events
            .iter()
            .take(MAX_CALLS)
            .filter_map(|&i| app.tape.event(i).map(|e| (i, e)))
            .map(|(i, e)| match e.kind.clone() {
                EventKind::ToolCall { name, args, .. } => {
                    let args: String = args.to_string().chars().take(MAX_LINE).collect();
                    format!("event {i}: {name} {args}")
                }
                EventKind::ToolResult { ok, output, .. } => {
                    let text = output.map_or(String::new(), |o| o.to_string());
                    let text: String = text.chars().take(MAX_LINE).collect();
                    format!("event {i}: result ({}) {text}", if ok { "ok" } else { "failed" })
                }
                _ => format!("event {i}: {}", e.type_name()),
            })
            .collect();
        return if calls.is_empty() {
            Excerpt::None
        } else {
            Excerpt::Calls(calls)
        };
    }
    let Some(buffer) = app.tape.cursor().buffers().channel(d.channel) else {
        return Excerpt::None;
    };
    let len = buffer.len();
    let Some(first) = d.spans.iter().map(|s| s.start).min() else {
        return Excerpt::None;
    };
    let start = d.onset.unwrap_or(first).min(first).saturating_sub(CONTEXT_CHARS);
    let last = d.spans.iter().map(|s| s.end).max().unwrap_or(first).min(len);
    let end = last.min(start + EXCERPT_CHARS);
    if end <= start {
        return Excerpt::None;
    }
    let text: Vec<char> = buffer.slice(start..end).chars().collect();
    let mut marks = Vec::new();
    crate::tui::app::evidence_marks(d, len, &mut marks);
    let mark_at = |at: usize| -> Option<Mark> {
        // The strongest mark wins where they overlap (a chunk's start over its extent).
        marks
            .iter()
            .filter(|h: &&Highlight| h.span.start <= at && at < h.span.end)
            .map(|h| h.mark)
            .max_by_key(|m| match m {
                Mark::ChunkStart => 3,
                Mark::CopyFirst => 2,
                _ => 1,
            })
    };
    let mut pieces: Vec<(String, Option<Mark>)> = Vec::new();
    for (k, c) in text.iter().enumerate() {
        let m = mark_at(start + k);
        match pieces.last_mut() {
            Some((s, last)) if *last == m => s.push(*c),
            _ => pieces.push((c.to_string(), m)),
        }
    }
    Excerpt::Text {
        channel: d.channel.as_str(),
        from: start,
        pieces,
        cut: last - end,
    }
}
