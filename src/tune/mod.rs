//! `loopscope tune`: parameters tried at many values over a team's own
//! logs. The inputs are found as `scan` finds them (files, directories,
//! globs, agents' folders); each file is read once and every value of
//! every `--vary` runs as its own engine over it, the other parameters as
//! they are now (profile, config, `--set`). Only the varied detector's
//! detections count as "fires"; other detectors of the profile that fired
//! on a file are shown apart. With the list of the sessions that really
//! loop (`--expect`, see [`labels`]), each value gets recall, false
//! positives and latency, one value is suggested ([`table::suggest`]), and
//! `--write-config` puts the chosen values into a config file ([`write`]).

pub mod labels;
pub mod table;
pub mod write;

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::scan::{scan_one, Input};
use crate::whatif::vary_values;
use loopscope_core::config::{Choices, Setup};
use loopscope_core::detect::params::Value;
use loopscope_core::detect::Profile;
use loopscope_core::formats::FormatChoice;

pub use labels::{Labels, MAX_EXPECT_FILE};
use table::{Choice, Score, Truth};

pub struct TuneOptions {
    /// As `scan` collects them; a named file that cannot be read is an error.
    pub inputs: Vec<Input>,
    /// `ID.PARAM=SPEC` each (see [`vary_values`]): a table each.
    pub vary: Vec<String>,
    /// `ID.PARAM=VALUE`: the value chosen instead of the suggestion.
    pub pick: Vec<String>,
    /// The profile, detectors, config and other `--set`s, as for scan.
    pub choices: Choices,
    /// The sessions that really loop; every other one is clean work.
    pub expect: Option<PathBuf>,
    pub format: FormatChoice,
    pub json: bool,
    /// Where the chosen values are merged in.
    pub write_config: Option<PathBuf>,
    /// Say what `write_config` would change; write nothing.
    pub dry_run: bool,
}

/// One value's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// As given on the command line.
    pub value: String,
    /// As the detector reads it.
    pub typed: Value,
    /// Per file (in the order tried): the event of the varied detector's
    /// first detection.
    pub first: Vec<Option<usize>>,
    /// Per file: the other detectors that fired on it (not counted).
    pub others: Vec<BTreeSet<&'static str>>,
}

/// One `--vary`: a parameter and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Varied {
    /// `ID.PARAM`.
    pub target: String,
    pub detector: &'static str,
    pub param: &'static str,
    /// Its value without the `--vary` (profile, config, `--set`).
    pub current: Value,
    pub trials: Vec<Trial>,
    /// The trial `--pick` chose.
    pub picked: Option<usize>,
}

/// The trials over the files that were tried (in order; files found in
/// folders that are not agent sessions are left out and counted).
#[derive(Debug, Clone, PartialEq)]
pub struct Trials {
    pub profile: Profile,
    pub varied: Vec<Varied>,
    pub files: Vec<PathBuf>,
    pub names: Vec<String>,
    /// Files found in folders or globs that were not agent sessions.
    pub skipped: usize,
}

/// What one input gave: per setup, the first detection of its varied
/// detector and the other detectors that fired; or why it was not tried.
enum Tried {
    Done(Vec<(Option<usize>, BTreeSet<&'static str>)>),
    /// Found in a folder and not an agent session.
    Skipped,
}

/// `ID.PARAM=VALUE` applied to `base`: the setup, the detector and
/// parameter as the registry names them, and the value as the detector
/// reads it. `flag` names the option in an error.
fn typed(base: &Setup, set: &str, flag: &str) -> Result<(Setup, &'static str, &'static str, Value), String> {
    let mut s = base.clone();
    s.apply_set(set).map_err(|e| e.to_string().replacen("--set", flag, 1))?;
    let (target, _) = set.split_once('=').unwrap_or_default();
    let (id, name) = target.trim().split_once('.').unwrap_or_default();
    let c = s
        .detectors
        .iter()
        .find(|c| c.info.id == id)
        .expect("apply_set found it");
    let (name, value) = c.params.iter().find(|(n, _)| *n == name).expect("apply_set found it");
    let (id, value) = (c.info.id, value.clone());
    Ok((s, id, name, value))
}

/// The parameters to vary, each with its values (a `--pick` not among
/// them is tried too) and their setups, in the order given.
fn plan(opts: &TuneOptions, base: &Setup) -> Result<(Vec<Varied>, Vec<Setup>), String> {
    let mut varied: Vec<Varied> = Vec::new();
    let mut setups = Vec::new();
    for vary in &opts.vary {
        let (target, spec) = vary
            .split_once('=')
            .ok_or_else(|| format!("--vary expects ID.PARAM=VALUES, got {vary:?}"))?;
        let target = target.trim().to_string();
        let mut values = vary_values(spec)?;
        let (_, detector, param, _) = typed(base, &format!("{target}={}", values[0]), "--vary")?;
        if varied.iter().any(|v| v.detector == detector && v.param == param) {
            return Err(format!("--vary {target} is given twice; give its values in one --vary"));
        }
        let mut trials = Vec::new();
        // The pick is tried too, if the values do not hold it.
        let mut pick = None;
        for p in opts
            .pick
            .iter()
            .filter(|p| p.split_once('=').is_some_and(|(t, _)| t.trim() == target))
        {
            let (_, value) = p.split_once('=').unwrap_or_default();
            let (.., typed_pick) = typed(base, p, "--pick")?;
            if pick.replace(typed_pick).is_some() {
                return Err(format!("--pick {target} is given twice"));
            }
            values.push(value.trim().to_string());
        }
        for value in values {
            let (setup, _, _, typed_value) = typed(base, &format!("{target}={value}"), "--vary")?;
            // A pick already among the values is not tried twice.
            if trials.iter().any(|t: &Trial| t.typed == typed_value) {
                continue;
            }
            setups.push(setup);
            trials.push(Trial {
                value,
                typed: typed_value,
                first: Vec::new(),
                others: Vec::new(),
            });
        }
        let current = base
            .detectors
            .iter()
            .find(|c| c.info.id == detector)
            .and_then(|c| c.params.iter().find(|(n, _)| *n == param).map(|(_, v)| v.clone()))
            .expect("typed found it");
        let picked = pick.and_then(|p| trials.iter().position(|t| t.typed == p));
        varied.push(Varied {
            target,
            detector,
            param,
            current,
            trials,
            picked,
        });
    }
    for pick in &opts.pick {
        let target = pick.split_once('=').map_or(pick.as_str(), |(t, _)| t).trim();
        if !varied.iter().any(|v| v.target == target) {
            return Err(format!(
                "--pick {pick}: {target} is not varied (--pick chooses among the values of a --vary)"
            ));
        }
    }
    Ok((varied, setups))
}

/// Runs the trials. Any input that cannot be read (a missing file, one
/// that is not a stream, a read error) is an error: `tune` never counts an
/// unread file as a file that did not fire. Bad lines inside a file are
/// warnings on `err`. A file found in a folder that is `skip` (the
/// `--expect` list beside the sessions) is not tried.
pub fn trials(opts: &TuneOptions, skip: Option<crate::files::FileId>, err: &mut dyn Write) -> Result<Trials, String> {
    if opts.vary.is_empty() {
        return Err("nothing to vary: give --vary ID.PARAM=VALUES".to_string());
    }
    let base = Setup::resolve(&opts.choices)?;
    let (mut varied, setups) = plan(opts, &base)?;
    let inputs: Vec<&Input> = opts
        .inputs
        .iter()
        .filter(|i| {
            !(matches!(i, Input::Found(_)) && skip.is_some() && i.path().and_then(crate::files::FileId::of) == skip)
        })
        .collect();
    // Which varied detector each setup counts.
    let counted: Vec<&str> = varied
        .iter()
        .flat_map(|v| v.trials.iter().map(|_| v.detector))
        .collect();
    let tried = crate::report::in_parallel(inputs.len(), |i| try_one(inputs[i], opts.format, &setups, &counted));
    let mut out = Trials {
        profile: base.profile,
        varied: Vec::new(),
        files: Vec::new(),
        names: Vec::new(),
        skipped: 0,
    };
    for (input, result) in inputs.iter().zip(tried) {
        let (per_setup, warnings) = result?;
        for w in warnings {
            let _ = writeln!(err, "loopscope: warning: {}: {w}", input.name());
        }
        match per_setup {
            Tried::Skipped => out.skipped += 1,
            Tried::Done(per_setup) => {
                out.files.push(
                    input
                        .path()
                        .map_or_else(|| PathBuf::from(input.name()), Path::to_path_buf),
                );
                out.names
                    .push(loopscope_core::sanitize::text(&input.name()).into_owned());
                let all = varied.iter_mut().flat_map(|v| v.trials.iter_mut());
                for (t, (first, others)) in all.zip(per_setup) {
                    t.first.push(first);
                    t.others.push(others);
                }
            }
        }
    }
    out.varied = varied;
    if out.files.is_empty() {
        return Err(match out.skipped {
            0 => "nothing to tune on: no input".to_string(),
            n => format!("nothing to tune on: none of the {n} files found is an agent session"),
        });
    }
    Ok(out)
}

/// One input through every value's setup (`counted[k]`: the detector
/// setup `k` varies); its warnings (bad lines) apart.
fn try_one(
    input: &Input,
    format: FormatChoice,
    setups: &[Setup],
    counted: &[&str],
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
    .map_err(|e| format!("{name}: {}", loopscope_core::io_reason(&e)))?;
    if let Err(msg) = forced.check(scanned.stream_events) {
        if matches!(input, Input::Found(_)) {
            return Ok((Tried::Skipped, Vec::new()));
        }
        return Err(format!("{name}: {msg}"));
    }
    let mut per_value = vec![(None, BTreeSet::new()); setups.len()];
    for d in &scanned.detections {
        let (first, others) = &mut per_value[d.run];
        if d.detector == counted[d.run] {
            first.get_or_insert(d.event);
        } else {
            others.insert(d.detector);
        }
    }
    Ok((Tried::Done(per_value), warnings))
}

/// `tune`: prints a table (or JSON records) per parameter, then writes
/// the chosen values with `--write-config`; exit 0, or 2 when it cannot
/// run or cannot write what was asked.
pub fn run(opts: &TuneOptions, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), String> {
    let labels = opts.expect.as_deref().map(Labels::read).transpose()?;
    if let (Some(path), Some(l), false) = (&opts.write_config, &labels, opts.dry_run) {
        crate::files::refuse_if_input(path, &[l.source.as_path()])?;
    }
    if let Some(path) = &opts.write_config {
        write::precheck(path, Setup::resolve(&opts.choices)?.profile)?;
    }
    let t = trials(opts, labels.as_ref().and_then(Labels::id), err)?;
    if t.skipped > 0 {
        let _ = writeln!(err, "loopscope: {} files skipped (not agent sessions)", t.skipped);
    }
    let truth = labels.as_ref().map(|l| Truth::new(l, &t));
    if let (Some(tr), Some(l)) = (&truth, &labels) {
        if !tr.unmatched.is_empty() {
            // Said, not fatal: a list may cover more sessions than one run
            // tries; but a misspelt path would quietly count a loop as clean.
            let n = tr.unmatched.len();
            let _ = writeln!(
                err,
                "loopscope: {} names {} not among the sessions tried: {}{}",
                loopscope_core::sanitize::path(&l.source),
                if n == 1 {
                    "1 loop".to_string()
                } else {
                    format!("{n} loops")
                },
                tr.unmatched.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                if n > 3 { ", …" } else { "" }
            );
        }
    }
    let io = |e: io::Error| loopscope_core::io_reason(&e);
    let mut chosen = Vec::new();
    for (n, v) in t.varied.iter().enumerate() {
        let scores: Vec<Score> = v.trials.iter().map(|tr| Score::of(tr, truth.as_ref())).collect();
        let choice = choose(v, &scores, truth.as_ref());
        if opts.json {
            for (i, s) in scores.iter().enumerate() {
                let rec = table::trial_json(&t, v, i, s, truth.as_ref(), choice.as_ref());
                writeln!(out, "{}", loopscope_core::sanitize::json(&rec.to_string())).map_err(io)?;
            }
            if let Some(c) = &choice {
                let rec = table::choice_json(v, c);
                writeln!(out, "{}", loopscope_core::sanitize::json(&rec.to_string())).map_err(io)?;
            }
        } else {
            if n > 0 {
                writeln!(out).map_err(io)?;
            }
            for line in table::render(&t, v, &scores, truth.as_ref(), choice.as_ref()) {
                writeln!(out, "{line}").map_err(io)?;
            }
        }
        chosen.push((v, choice));
    }
    if !opts.json {
        if let Some(tr) = truth.as_ref().filter(|tr| tr.loops > 0) {
            writeln!(
                out,
                "{}",
                match tr.timed() {
                    true => "latency: events from the labelled onset to the first detection (negative: before it)",
                    false =>
                        "latency: label the event each loop begins at (`PATH EVENT` in the --expect file) to see it",
                }
            )
            .map_err(io)?;
        }
        for line in others_apart(&t) {
            writeln!(out, "{line}").map_err(io)?;
        }
    }
    match &opts.write_config {
        Some(path) => write::write_chosen(path, t.profile, &chosen, opts, out),
        None => Ok(()),
    }
}

/// The value chosen for a parameter: its `--pick`, else the suggestion
/// (with labels); `None` without either.
fn choose(v: &Varied, scores: &[Score], truth: Option<&Truth>) -> Option<Choice> {
    let suggested = truth.map(|tr| table::suggest(v, scores, tr));
    let pick = v.picked;
    match (pick, suggested) {
        (Some(i), s) => Some(Choice {
            index: Some(i),
            picked: true,
            why: match s {
                Some(Choice {
                    index: Some(k), why, ..
                }) if k != i => {
                    format!(
                        "picked with --pick; the suggestion was {}, which {why}",
                        v.trials[k].value
                    )
                }
                Some(Choice { index: Some(_), .. }) => "picked with --pick (also the suggestion)".to_string(),
                Some(Choice { why, .. }) => format!("picked with --pick ({why})"),
                None => "picked with --pick".to_string(),
            },
        }),
        (None, s) => s,
    }
}
/// The other detectors that fired, per file, under the tables: not
/// counted in "fires", but a reader choosing a value should know the file
/// is not quiet ("(at 5, 6)" when only some values saw them). A detector
/// varied in another table is counted there, not listed here.
fn others_apart(t: &Trials) -> Vec<String> {
    let varied: BTreeSet<&str> = t.varied.iter().map(|v| v.detector).collect();
    let trials: Vec<(&Varied, &Trial)> = t
        .varied
        .iter()
        .flat_map(|v| v.trials.iter().map(move |tr| (v, tr)))
        .collect();
    let mut lines = Vec::new();
    for (k, name) in t.names.iter().enumerate() {
        let all: BTreeSet<&str> = trials
            .iter()
            .flat_map(|(_, tr)| tr.others[k].iter().copied())
            .filter(|d| !varied.contains(d))
            .collect();
        if all.is_empty() {
            continue;
        }
        let said: Vec<String> = all
            .iter()
            .map(|d| {
                let at: Vec<String> = trials
                    .iter()
                    .filter(|(_, tr)| tr.others[k].contains(d))
                    .map(|(v, tr)| match t.varied.len() {
                        1 => tr.value.clone(),
                        _ => format!("{}={}", v.target, tr.value),
                    })
                    .collect();
                if at.len() == trials.len() {
                    d.to_string()
                } else {
                    format!("{d} (at {})", at.join(", "))
                }
            })
            .collect();
        if lines.is_empty() {
            let ids: Vec<&str> = varied.iter().copied().collect();
            lines.push(format!("not counted (detectors other than {}):", ids.join(", ")));
        }
        lines.push(format!("  {name}: {}", said.join(", ")));
    }
    lines
}
