//! The numbers of each value tried, the value suggested, and the table
//! and JSON records that show them.

use loopscope_core::detect::params::Value;

use super::labels::Labels;
use super::{Trial, Trials, Varied};

/// The labels as they apply to the sessions tried.
#[derive(Debug, Clone, Default)]
pub struct Truth {
    /// Per session tried: its loop's onset (`Some(None)`: a loop with no
    /// onset labelled), or `None` for clean work.
    pub label: Vec<Option<Option<usize>>>,
    pub loops: usize,
    pub clean: usize,
    /// Labelled paths that matched no session tried, as written.
    pub unmatched: Vec<String>,
}

impl Truth {
    /// Whether any loop tried has its onset labelled (latency can be measured).
    pub fn timed(&self) -> bool {
        self.label.iter().any(|l| matches!(l, Some(Some(_))))
    }

    pub fn new(labels: &Labels, t: &Trials) -> Truth {
        let mut matched = vec![false; labels.labels.len()];
        let label: Vec<Option<Option<usize>>> = t
            .files
            .iter()
            .map(|f| {
                labels.find(f).map(|k| {
                    matched[k] = true;
                    labels.labels[k].onset
                })
            })
            .collect();
        let loops = label.iter().filter(|l| l.is_some()).count();
        let unmatched = labels
            .labels
            .iter()
            .zip(&matched)
            .filter(|(_, m)| !**m)
            .map(|(l, _)| loopscope_core::sanitize::path(&l.given))
            .collect();
        Truth {
            clean: label.len() - loops,
            loops,
            label,
            unmatched,
        }
    }
}

/// What one value did against the labels.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Score {
    /// Sessions where the varied detector fired.
    pub fired: usize,
    /// Loops it fired on (recall: `caught` of `Truth::loops`).
    pub caught: usize,
    /// Clean sessions it fired on (of `Truth::clean`).
    pub false_pos: usize,
    /// Per loop caught with an onset: first detection's event minus the
    /// onset (negative: it fired before the loop began), ascending.
    pub latencies: Vec<i64>,
}

impl Score {
    pub fn of(trial: &Trial, truth: Option<&Truth>) -> Score {
        let mut s = Score::default();
        for (k, first) in trial.first.iter().enumerate() {
            let Some(at) = *first else { continue };
            s.fired += 1;
            match truth.map(|t| t.label[k]) {
                Some(Some(onset)) => {
                    s.caught += 1;
                    if let Some(o) = onset {
                        s.latencies.push(at as i64 - o as i64);
                    }
                }
                Some(None) => s.false_pos += 1,
                None => {}
            }
        }
        s.latencies.sort_unstable();
        s
    }

    /// The middle latency (the mean of the two middle ones for an even count).
    pub fn median(&self) -> Option<f64> {
        let l = &self.latencies;
        let n = l.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(l[n / 2] as f64),
            _ => Some((l[n / 2 - 1] + l[n / 2]) as f64 / 2.0),
        }
    }

    pub fn worst(&self) -> Option<i64> {
        self.latencies.last().copied()
    }
}

/// The value chosen for one parameter, and why (one sentence).
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Its index among the values tried; `None` when nothing could be
    /// suggested and nothing was picked.
    pub index: Option<usize>,
    /// Chosen with `--pick`, not suggested.
    pub picked: bool,
    pub why: String,
}

/// How far a value is from the current one: numbers by difference,
/// anything else equal or not (ties then go to the first tried).
fn distance(a: &Value, b: &Value) -> u64 {
    match (a, b) {
        (Value::Count(x), Value::Count(y)) => x.abs_diff(*y) as u64,
        (Value::Milli(x), Value::Milli(y)) => u64::from(x.abs_diff(*y)),
        _ => u64::from(a != b),
    }
}

/// The value that keeps every clean session quiet and catches the most
/// loops; among equals, the one closest to the current value. `None`
/// (with the reason) when no value keeps the clean sessions quiet.
pub fn suggest(v: &Varied, scores: &[Score], truth: &Truth) -> Choice {
    let quiet: Vec<usize> = (0..scores.len()).filter(|&i| scores[i].false_pos == 0).collect();
    let Some(best) = quiet.iter().map(|&i| scores[i].caught).max() else {
        let fewest = scores.iter().map(|s| s.false_pos).min().unwrap_or(0);
        let at: Vec<&str> = (0..scores.len())
            .filter(|&i| scores[i].false_pos == fewest)
            .map(|i| v.trials[i].value.as_str())
            .collect();
        return Choice {
            index: None,
            picked: false,
            why: format!(
                "no value keeps the {} quiet: the fewest that fire is {fewest} (at {}); choose one with --pick {}=VALUE",
                count(truth.clean, "clean session"),
                at.join(", "),
                v.target
            ),
        };
    };
    let equal: Vec<usize> = quiet.into_iter().filter(|&i| scores[i].caught == best).collect();
    let index = *equal
        .iter()
        .min_by_key(|&&i| distance(&v.trials[i].typed, &v.current))
        .expect("one quiet value at least");
    let quiet = match truth.clean {
        1 => "keeps the clean session quiet".to_string(),
        c => format!("keeps the {c} clean sessions quiet"),
    };
    let mut why = match (truth.clean, truth.loops, best) {
        (0, l, b) => format!("{} (no clean session labelled)", catches(b, l)),
        (_, 0, _) => format!("{quiet} (no loop labelled)"),
        (_, l, 0) => format!(
            "{quiet}, but catches none of the {}: every value that is quiet misses them",
            count(l, "loop")
        ),
        (_, l, b) => format!("{quiet} and {}", catches(b, l)),
    };
    if equal.len() > 1 {
        why += &format!(
            "; of the {} values that do as well, the closest to the current {}",
            equal.len(),
            v.current
        );
    }
    Choice {
        index: Some(index),
        picked: false,
        why,
    }
}

/// "1 loop", "3 loops".
fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

/// "catches the loop", "catches all 3 loops", "catches 2 of the 3 loops".
fn catches(caught: usize, loops: usize) -> String {
    match (caught, loops) {
        (1, 1) => "catches the loop".to_string(),
        (2, 2) => "catches both loops".to_string(),
        (c, l) if c == l => format!("catches all {l} loops"),
        (c, l) => format!("catches {c} of the {}", count(l, "loop")),
    }
}

/// Names for a line: the first few, then how many more.
fn some_of(names: Vec<String>) -> String {
    const SHOWN: usize = 5;
    let more = names.len().saturating_sub(SHOWN);
    let mut out = names.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        out += &format!(" and {more} more");
    }
    out
}

/// A latency as shown: whole events, a half where a median falls between two.
fn shown(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |x| format!("{x}"))
}

/// The human table of one parameter: a header line, a row per value (the
/// chosen one marked `*`), then why it was chosen and, with labels, what
/// it misses and where it fires on clean work.
pub fn render(t: &Trials, v: &Varied, scores: &[Score], truth: Option<&Truth>, choice: Option<&Choice>) -> Vec<String> {
    let mut lines = vec![match truth {
        Some(tr) => format!(
            "{} (profile {}; now {}) on {}: {}, {}",
            v.target,
            t.profile,
            v.current,
            count(t.names.len(), "session"),
            count(tr.loops, "loop"),
            tr.clean.to_string() + " clean"
        ),
        None => format!(
            "{} (profile {}; now {}) on {}",
            v.target,
            t.profile,
            v.current,
            count(t.names.len(), "session")
        ),
    }];
    // Latency only where a loop's onset is labelled.
    let timed = truth.is_some_and(Truth::timed);
    let mut rows: Vec<Vec<String>> = vec![match truth {
        Some(_) => ["value", "caught", "clean firing", "median latency", "worst latency"][..if timed { 5 } else { 3 }]
            .iter()
            .map(|h| h.to_string())
            .collect(),
        None => ["value", "fires", "first detection"].map(String::from).to_vec(),
    }];
    for (trial, s) in v.trials.iter().zip(scores) {
        rows.push(match truth {
            Some(tr) => {
                let mut row = vec![
                    trial.value.clone(),
                    format!("{}/{}", s.caught, tr.loops),
                    format!("{}/{}", s.false_pos, tr.clean),
                ];
                if timed {
                    row.push(shown(s.median()));
                    row.push(shown(s.worst().map(|w| w as f64)));
                }
                row
            }
            None => vec![
                trial.value.clone(),
                format!("{}/{}", s.fired, t.names.len()),
                fired_on(t, trial, |_| true).join(" "),
            ],
        });
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| {
            rows.iter()
                .map(|r| unicode_width::UnicodeWidthStr::width(r[c].as_str()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let marked = choice.and_then(|c| c.index);
    for (k, row) in rows.iter().enumerate() {
        let mark = if k > 0 && marked == Some(k - 1) { "*" } else { " " };
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| {
                let pad = w - unicode_width::UnicodeWidthStr::width(cell.as_str());
                format!("{cell}{}", " ".repeat(pad))
            })
            .collect();
        lines.push(format!("  {mark} {}", cells.join("  ")).trim_end().to_string());
    }
    if let Some(c) = choice {
        let said = match c.index {
            Some(i) if c.picked => format!("* {}: {}", v.trials[i].value, c.why),
            Some(i) => format!("* {}: suggested; it {}", v.trials[i].value, c.why),
            None => c.why.clone(),
        };
        lines.push(format!("  {said}"));
    }
    if let (Some(tr), Some(i)) = (truth, marked) {
        let trial = &v.trials[i];
        let missed: Vec<String> = (0..t.names.len())
            .filter(|&k| tr.label[k].is_some() && trial.first[k].is_none())
            .map(|k| t.names[k].clone())
            .collect();
        let noisy = fired_on(t, trial, |k| tr.label[k].is_none());
        let mut said = Vec::new();
        if !missed.is_empty() {
            said.push(format!("misses {}", some_of(missed)));
        }
        if !noisy.is_empty() {
            said.push(format!("fires on clean {}", some_of(noisy)));
        }
        if !said.is_empty() {
            lines.push(format!("  at {}: {}", trial.value, said.join("; ")));
        }
    }
    lines
}

/// `name@event` of the sessions `keep` selects where the trial fired.
fn fired_on(t: &Trials, trial: &Trial, keep: impl Fn(usize) -> bool) -> Vec<String> {
    t.names
        .iter()
        .zip(&trial.first)
        .enumerate()
        .filter(|(k, _)| keep(*k))
        .filter_map(|(_, (n, f))| f.map(|e| format!("{n}@{e}")))
        .collect()
}

/// The `trial` record of one value (see README, "The `--json` records").
pub fn trial_json(
    t: &Trials,
    v: &Varied,
    i: usize,
    s: &Score,
    truth: Option<&Truth>,
    choice: Option<&Choice>,
) -> serde_json::Value {
    let trial = &v.trials[i];
    let files: Vec<serde_json::Value> = (0..t.names.len())
        .map(|k| {
            let mut f = serde_json::json!({
                "file": t.names[k],
                "first_event": trial.first[k],
                "other_detectors": trial.others[k],
            });
            if let Some(tr) = truth {
                f["loop"] = tr.label[k].is_some().into();
                f["onset"] = tr.label[k].flatten().into();
            }
            f
        })
        .collect();
    let mut rec = serde_json::json!({
        "type": "trial",
        "schema": crate::output::SCHEMA,
        "param": v.target,
        "value": trial.value,
        "current": trial.typed == v.current,
        "fired": s.fired,
        "files": files,
    });
    if let Some(tr) = truth {
        rec["recall"] = serde_json::json!({"caught": s.caught, "loops": tr.loops});
        rec["false_positives"] = serde_json::json!({"fired": s.false_pos, "clean": tr.clean});
        rec["latency"] = serde_json::json!({
            "unit": "events",
            "measured": s.latencies.len(),
            "median": s.median(),
            "worst": s.worst(),
        });
    }
    if let Some(c) = choice {
        rec["chosen"] = (c.index == Some(i)).into();
    }
    rec
}

/// The `choice` record of one parameter: the value chosen (null when none
/// could be), whether `--pick` chose it, and why.
pub fn choice_json(v: &Varied, c: &Choice) -> serde_json::Value {
    serde_json::json!({
        "type": "choice",
        "schema": crate::output::SCHEMA,
        "param": v.target,
        "current": v.current.to_string(),
        "value": c.index.map(|i| v.trials[i].value.clone()),
        "picked": c.picked,
        "why": c.why,
    })
}
