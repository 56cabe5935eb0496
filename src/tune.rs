//! `loopscope tune`: one parameter tried at many values over a team's own
//! logs. Each file is read once; every value runs as its own engine over it.
//! With the list of files that really loop, it prints recall and false
//! positives per value, so a threshold can be chosen on real data.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::config::{Choices, Setup};
use crate::formats::FormatChoice;
use crate::scan::{scan_one, Input};
use crate::whatif::vary_values;

pub struct TuneOptions {
    pub files: Vec<PathBuf>,
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
    /// Per file (in the order given): the event of its first detection.
    pub first: Vec<Option<usize>>,
}

/// The `--expect` file: one path per line, `#` comments; paths relative to
/// the file's folder or as given on the command line both match.
pub fn read_expect(path: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--expect {}: {}", path.display(), crate::io_reason(&e)))?;
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

/// Runs the trials; problems reading a file go to `err` and the file counts
/// as not firing.
pub fn trials(opts: &TuneOptions, err: &mut dyn Write) -> Result<(String, Vec<Trial>), String> {
    let (target, spec) = opts
        .vary
        .split_once('=')
        .ok_or_else(|| format!("--vary expects ID.PARAM=VALUES, got {:?}", opts.vary))?;
    let values = vary_values(spec)?;
    let setups: Vec<Setup> = values
        .iter()
        .map(|v| {
            let mut c = opts.choices.clone();
            c.sets.push(format!("{}={v}", target.trim()));
            Setup::resolve(&c)
        })
        .collect::<Result<_, _>>()?;
    let mut trials: Vec<Trial> = values
        .into_iter()
        .map(|value| Trial {
            value,
            first: Vec::new(),
        })
        .collect();
    for file in &opts.files {
        let input = Input::Path(file.clone());
        let name = input.name();
        let mut firsts = vec![None; setups.len()];
        match input.open(opts.format) {
            Ok(mut opened) => {
                let scanned = scan_one(
                    opened.reader,
                    &mut *opened.decoder,
                    &setups,
                    &Default::default(),
                    |_| {},
                    |_| {},
                );
                match scanned {
                    Ok(s) => {
                        for d in &s.detections {
                            firsts[d.run].get_or_insert(d.event);
                        }
                    }
                    Err(e) => {
                        let _ = writeln!(err, "loopscope: {name}: {}", crate::io_reason(&e));
                    }
                }
            }
            Err(msg) => {
                let _ = writeln!(err, "loopscope: {msg}");
            }
        }
        for (t, f) in trials.iter_mut().zip(firsts) {
            t.first.push(f);
        }
    }
    Ok((target.trim().to_string(), trials))
}

/// `tune`: prints a table (or JSON lines) of the trials; exit 0, or 2 when
/// it cannot run.
pub fn run(opts: &TuneOptions, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), String> {
    let expect = opts.expect.as_deref().map(read_expect).transpose()?;
    let (target, trials) = trials(opts, err)?;
    let names: Vec<String> = opts.files.iter().map(|f| crate::sanitize::path(f)).collect();
    let is_loop: Vec<bool> = opts
        .files
        .iter()
        .map(|f| expect.as_ref().is_some_and(|e| expected(e, f)))
        .collect();
    let loops = is_loop.iter().filter(|l| **l).count();
    let clean = is_loop.len() - loops;
    let io = |e: io::Error| crate::io_reason(&e);
    for t in &trials {
        let fired = t.first.iter().filter(|f| f.is_some()).count();
        let caught = t.first.iter().zip(&is_loop).filter(|(f, l)| f.is_some() && **l).count();
        let false_pos = t
            .first
            .iter()
            .zip(&is_loop)
            .filter(|(f, l)| f.is_some() && !**l)
            .count();
        if opts.json {
            let files: Vec<serde_json::Value> = names
                .iter()
                .zip(&t.first)
                .map(|(n, f)| serde_json::json!({"file": n, "first_event": f}))
                .collect();
            let mut rec = serde_json::json!({
                "type": "trial",
                "param": target,
                "value": t.value,
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
        let mut line = format!("{target}={:<6} fires in {fired}/{}", t.value, names.len());
        if expect.is_some() {
            line += &format!("  recall {caught}/{loops}  false positives {false_pos}/{clean}");
        }
        let which: Vec<String> = names
            .iter()
            .zip(&t.first)
            .filter_map(|(n, f)| f.map(|e| format!("{n}@{e}")))
            .collect();
        if !which.is_empty() {
            line += &format!("  {}", which.join(" "));
        }
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(())
}
