//! `loopscope tune`: one parameter tried at many values over a team's own
//! logs. The inputs are found as `scan` finds them (files, directories,
//! globs, agents' folders); each file is read once and every value runs as
//! its own engine over it. Only the varied detector's detections count as
//! "fires"; other detectors of the profile that fired on a file are shown
//! apart. With the list of files that really loop, it prints recall and
//! false positives per value, so a threshold can be chosen on real data.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::config::{Choices, Setup};
use crate::formats::FormatChoice;
use crate::scan::{scan_one, Input};
use crate::whatif::vary_values;

pub struct TuneOptions {
    /// As `scan` collects them; a named file that cannot be read is an error.
    pub inputs: Vec<Input>,
    /// `ID.PARAM=SPEC` (see [`vary_values`]).
    pub vary: String,
    /// The profile, detectors, config and other `--set`s, as for scan.
    pub choices: Choices,
    /// Files that are real loops; every other file is clean work.
    pub expect: Option<PathBuf>,
    pub format: FormatChoice,
    pub json: bool,
}

/// One value's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub value: String,
    /// Per file (in the order tried): the event of the varied detector's
    /// first detection.
    pub first: Vec<Option<usize>>,
    /// Per file: the other detectors that fired on it (not counted).
    pub others: Vec<BTreeSet<&'static str>>,
}

/// The trials over the files that were tried (in order; files found in
/// folders that are not agent sessions are left out and counted).
#[derive(Debug, Clone, PartialEq)]
pub struct Trials {
    /// `ID.PARAM`.
    pub target: String,
    pub files: Vec<PathBuf>,
    pub names: Vec<String>,
    pub trials: Vec<Trial>,
    /// Files found in folders or globs that were not agent sessions.
    pub skipped: usize,
}

/// The most read of an `--expect` file (some 200,000 paths): `/dev/zero`
/// is refused after this much, not read until memory runs out.
pub const MAX_EXPECT_FILE: usize = 16 << 20;

/// The `--expect` file: one path per line, `#` comments; paths relative to
/// the file's folder or as given on the command line both match.
pub fn read_expect(path: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let text = crate::config::read_capped(path, MAX_EXPECT_FILE).map_err(|e| format!("--expect {e}"))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let l = line.split('#').next().unwrap_or_default().trim();
        if !l.is_empty() {
            out.insert(PathBuf::from(l));
            out.insert(base.join(l));
        }
    }
    Ok(out)
}

fn expected(set: &BTreeSet<PathBuf>, file: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    set.contains(file) || canon(file).is_some_and(|c| set.iter().any(|e| canon(e).as_deref() == Some(c.as_path())))
}

/// What one input gave: (first detection of the varied detector, other
/// detectors that fired) per value, or why it was not tried.
enum Tried {
    Done(Vec<(Option<usize>, BTreeSet<&'static str>)>),
    /// Found in a folder and not an agent session.
    Skipped,
}

/// Runs the trials. Any input that cannot be read (a missing file, one
/// that is not a stream, a read error) is an error: `tune` never counts an
/// unread file as a file that did not fire. Bad lines inside a file are
/// warnings on `err`.
pub fn trials(opts: &TuneOptions, err: &mut dyn Write) -> Result<Trials, String> {
    let (target, spec) = opts
        .vary
        .split_once('=')
        .ok_or_else(|| format!("--vary expects ID.PARAM=VALUES, got {:?}", opts.vary))?;
    let target = target.trim().to_string();
    let detector = target.split_once('.').map_or(target.as_str(), |(id, _)| id).to_string();
    let values = vary_values(spec)?;
    let setups: Vec<Setup> = values
        .iter()
        .map(|v| {
            let mut c = opts.choices.clone();
            c.sets.push(format!("{target}={v}"));
            Setup::resolve(&c)
        })
        .collect::<Result<_, _>>()?;
    let tried = crate::report::in_parallel(opts.inputs.len(), |i| {
        try_one(&opts.inputs[i], opts.format, &setups, &detector)
    });
    let mut out = Trials {
        target,
        files: Vec::new(),
        names: Vec::new(),
        trials: values
            .into_iter()
            .map(|value| Trial {
                value,
                first: Vec::new(),
                others: Vec::new(),
            })
            .collect(),
        skipped: 0,
    };
    for (input, result) in opts.inputs.iter().zip(tried) {
        let (per_value, warnings) = result?;
        for w in warnings {
            let _ = writeln!(err, "loopscope: warning: {}: {w}", input.name());
        }
        match per_value {
            Tried::Skipped => out.skipped += 1,
            Tried::Done(per_value) => {
                out.files.push(
                    input
                        .path()
                        .map_or_else(|| PathBuf::from(input.name()), Path::to_path_buf),
                );
                out.names.push(crate::sanitize::text(&input.name()).into_owned());
                for (t, (first, others)) in out.trials.iter_mut().zip(per_value) {
                    t.first.push(first);
                    t.others.push(others);
                }
            }
        }
    }
    if out.files.is_empty() {
        return Err(match out.skipped {
            0 => "nothing to tune on: no input".to_string(),
            n => format!("nothing to tune on: none of the {n} files found is an agent session"),
        });
    }
    Ok(out)
}

/// One input through every value's setup; its warnings (bad lines) apart.
fn try_one(
    input: &Input,
    format: FormatChoice,
    setups: &[Setup],
    detector: &str,
) -> Result<(Tried, Vec<String>), String> {
    let name = input.name();
    let mut opened = match input.open(format) {
        Ok(o) => o,
        Err(_) if matches!(input, Input::Found(_)) => return Ok((Tried::Skipped, Vec::new())),
        Err(msg) => return Err(msg),
    };
    let forced = opened.forced_check();
    let mut warnings = Vec::new();
    let scanned = scan_one(
        opened.reader,
        &mut *opened.decoder,
        setups,
        &Default::default(),
        |_, _, _| {},
        |p| warnings.push(p.to_string()),
    )
    .map_err(|e| format!("{name}: {}", crate::io_reason(&e)))?;
    if let Err(msg) = forced.check(scanned.stream_events) {
        if matches!(input, Input::Found(_)) {
            return Ok((Tried::Skipped, Vec::new()));
        }
        return Err(format!("{name}: {msg}"));
    }
    let mut per_value = vec![(None, BTreeSet::new()); setups.len()];
    for d in &scanned.detections {
        let (first, others) = &mut per_value[d.run];
        if d.detector == detector {
            first.get_or_insert(d.event);
        } else {
            others.insert(d.detector);
        }
    }
    Ok((Tried::Done(per_value), warnings))
}

/// `tune`: prints a table (or JSON lines) of the trials; exit 0, or 2 when
/// it cannot run.
pub fn run(opts: &TuneOptions, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), String> {
    let expect = opts.expect.as_deref().map(read_expect).transpose()?;
    let t = trials(opts, err)?;
    if t.skipped > 0 {
        let _ = writeln!(err, "loopscope: {} files skipped (not agent sessions)", t.skipped);
    }
    let is_loop: Vec<bool> = t
        .files
        .iter()
        .map(|f| expect.as_ref().is_some_and(|e| expected(e, f)))
        .collect();
    let loops = is_loop.iter().filter(|l| **l).count();
    let clean = is_loop.len() - loops;
    let io = |e: io::Error| crate::io_reason(&e);
    for trial in &t.trials {
        let fired = trial.first.iter().filter(|f| f.is_some()).count();
        let caught = trial
            .first
            .iter()
            .zip(&is_loop)
            .filter(|(f, l)| f.is_some() && **l)
            .count();
        let false_pos = trial
            .first
            .iter()
            .zip(&is_loop)
            .filter(|(f, l)| f.is_some() && !**l)
            .count();
        if opts.json {
            let files: Vec<serde_json::Value> = t
                .names
                .iter()
                .zip(&trial.first)
                .zip(&trial.others)
                .map(|((n, f), o)| serde_json::json!({"file": n, "first_event": f, "other_detectors": o}))
                .collect();
            let mut rec = serde_json::json!({
                "type": "trial",
                "schema": crate::scan::SCHEMA,
                "param": t.target,
                "value": trial.value,
                "fired": fired,
                "files": files,
            });
            if expect.is_some() {
                rec["recall"] = serde_json::json!({"caught": caught, "loops": loops});
                rec["false_positives"] = serde_json::json!({"fired": false_pos, "clean": clean});
            }
            writeln!(out, "{}", crate::sanitize::json(&rec.to_string())).map_err(io)?;
            continue;
        }
        let mut line = format!("{}={:<6} fires in {fired}/{}", t.target, trial.value, t.names.len());
        if expect.is_some() {
            line += &format!("  recall {caught}/{loops}  false positives {false_pos}/{clean}");
        }
        let which: Vec<String> = t
            .names
            .iter()
            .zip(&trial.first)
            .filter_map(|(n, f)| f.map(|e| format!("{n}@{e}")))
            .collect();
        if !which.is_empty() {
            line += &format!("  {}", which.join(" "));
        }
        writeln!(out, "{line}").map_err(io)?;
    }
    if !opts.json {
        for line in others_apart(&t) {
            writeln!(out, "{line}").map_err(io)?;
        }
    }
    Ok(())
}

/// The other detectors that fired, per file, under the table: not counted
/// in "fires", but a reader choosing a value should know the file is not
/// quiet ("(at 5, 6)" when only some values saw them).
fn others_apart(t: &Trials) -> Vec<String> {
    let mut lines = Vec::new();
    for (k, name) in t.names.iter().enumerate() {
        let all: BTreeSet<&str> = t.trials.iter().flat_map(|tr| tr.others[k].iter().copied()).collect();
        if all.is_empty() {
            continue;
        }
        let said: Vec<String> = all
            .iter()
            .map(|d| {
                let at: Vec<&str> = t
                    .trials
                    .iter()
                    .filter(|tr| tr.others[k].contains(d))
                    .map(|tr| tr.value.as_str())
                    .collect();
                if at.len() == t.trials.len() {
                    d.to_string()
                } else {
                    format!("{d} (at {})", at.join(", "))
                }
            })
            .collect();
        if lines.is_empty() {
            let id = t.target.split('.').next().unwrap_or_default();
            lines.push(format!("not counted (detectors other than {id}):"));
        }
        lines.push(format!("  {name}: {}", said.join(", ")));
    }
    lines
}
