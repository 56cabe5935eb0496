//! Trying an answer inside the viewer: the `:` command line (`:set`,
//! `:reset`, `:profile`, `:detectors`, `:diff`, `:write`, `:compare`,
//! `:rechunk`), the parameter editor of the detectors pane, and what
//! follows a change — the stored events re-run at once up to the shown
//! position (the rest in slices), the timeline and highlights rebuilt.

use crate::output::count;
use std::path::PathBuf;
use std::time::Instant;

use super::app::{App, Overlay};
use super::inspector::{Inspector, Part};
use super::timeline_pane::TimelinePane;
use crate::replay::Pacing;
use crate::whatif::{Rechunker, Summarizer};
use loopscope_core::config::Setup;
use loopscope_core::detect::params::{Kind, Value};
use loopscope_core::detect::Profile;
use loopscope_core::engine::Tape;

/// Work re-run per slice after the shown position (about 2 ms here).
const RESUME_WORK: usize = 1 << 20;

/// The stream as recorded, kept while its text is shown re-cut.
pub struct Rechunked {
    pub n: usize,
    /// The recorded events with every setup run over them (for "as recorded").
    pub recorded: Tape,
    /// For each shown (re-cut) event, the recorded event it came from.
    pub origins: Vec<usize>,
}

impl App {
    /// The label of run `k` in the timeline and lists, when comparing.
    pub fn run_label(&self, k: usize) -> Option<&str> {
        (self.tape.setups().len() > 1).then(|| self.tape.setups().get(k).map(|s| s.profile.name()))?
    }

    /// The profile name as the status line shows it: `seed*` when its
    /// parameters differ from the profile's defaults (compared ones too).
    pub fn profile_label(&self) -> String {
        let mut label = starred(&self.setup);
        for s in self.tape.setups().iter().skip(1) {
            label += &format!(" vs {}", starred(s));
        }
        if let Some(r) = &self.rechunked {
            label += &format!(" · re-cut into {}-char deltas", r.n);
        }
        label
    }

    /// Under `:rechunk`, how the selected detector's first detection moved
    /// from the recorded deltas (events named as recorded).
    pub fn rechunk_note(&self) -> Option<String> {
        let r = self.rechunked.as_ref()?;
        let i = self.panes.detectors.selected;
        let (id, run) = (self.states.get(i)?.id, self.state_runs.get(i).copied().unwrap_or(0));
        let first =
            |ds: &[loopscope_core::detect::Detection]| ds.iter().find(|d| d.run == run && d.detector == id).cloned();
        let at = |event: usize, ch: Option<usize>| match ch {
            Some(c) => format!("event {event}, char {c}"),
            None => format!("event {event}"),
        };
        let recut =
            first(self.tape.detections()).map(|d| at(r.origins.get(d.event).copied().unwrap_or(d.event), d.at_char));
        let recorded = first(r.recorded.detections()).map(|d| at(d.event, d.at_char));
        let n = r.n;
        Some(match (recorded, recut) {
            (None, None) => format!("re-cut into {n}-char deltas: no detection, as recorded"),
            (Some(a), Some(b)) if a == b => {
                format!("re-cut into {n}-char deltas: fires where the recorded deltas do ({a})")
            }
            (Some(a), Some(b)) => format!("re-cut into {n}-char deltas it moves: at recorded {b}, as recorded at {a}"),
            (Some(a), None) => format!("re-cut into {n}-char deltas it disappears (as recorded it fired at {a})"),
            (None, Some(b)) => {
                format!("re-cut into {n}-char deltas it appears at recorded {b} (as recorded it does not fire)")
            }
        })
    }

    /// The profiles compared (none when one runs).
    pub fn run_labels(&self) -> Vec<String> {
        if self.tape.setups().len() < 2 {
            return Vec::new();
        }
        self.profile_names()
    }

    /// Every run's profile name, run by run (`gemini-cli*` when edited).
    fn profile_names(&self) -> Vec<String> {
        self.tape.setups().iter().map(starred).collect()
    }

    /// Profile `p` as the user left it: the shown setup when it is `p`,
    /// else its remembered changes, else its defaults.
    fn setup_for(&self, p: Profile) -> Setup {
        if self.setup.profile == p {
            return self.setup.clone();
        }
        self.edits
            .iter()
            .find(|s| s.profile == p)
            .cloned()
            .unwrap_or_else(|| Setup::profile(p))
    }

    /// Keeps the changes of every setup now run (an edited profile's
    /// latest; one back at its defaults is forgotten).
    fn remember_edits(&mut self) {
        let now: Vec<Setup> = self.tape.setups().to_vec();
        for s in now {
            self.edits.retain(|e| e.profile != s.profile);
            if !s.diff().is_empty() {
                self.edits.push(s);
            }
        }
    }

    /// One line per compared profile: its first detection and what
    /// streamed after it (none when a single profile runs).
    pub fn compare_headers(&self) -> Vec<String> {
        if self.summaries.len() < 2 {
            return Vec::new();
        }
        self.summaries
            .iter()
            .map(|s| match &s.first {
                Some(d) => {
                    let from = d.evidence_from().map_or(String::new(), |f| format!(" (from {f})"));
                    format!(
                        "{}: {} at {}{from} · after it {} {}{}, {}",
                        s.label,
                        d.detector,
                        d.event,
                        count(s.after.chars, "char"),
                        s.after.approx(),
                        count(s.after.tokens, "token"),
                        count(s.after.tool_calls, "call")
                    )
                }
                None => format!("{}: no detection", s.label),
            })
            .collect()
    }

    /// Runs a `:` command; what it did (or why not) flashes in the status line.
    pub fn run_command(&mut self, text: &str, now: Instant) {
        let text = text.trim();
        let (cmd, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let arg = arg.trim();
        let said = match cmd {
            "" => return,
            "set" => self.command_set(arg),
            "reset" => {
                // What is dropped is said (the start's own changes are not dropped).
                let launch_diff = self.launch.diff();
                let dropped: Vec<String> = self
                    .edits
                    .iter()
                    .filter(|e| e.profile != self.launch.profile || e.diff() != launch_diff)
                    .map(|e| format!("{}: {}", e.profile, e.diff().join(", ")))
                    .collect();
                let compared = self.tape.setups()[1..]
                    .iter()
                    .map(|s| Setup::profile(s.profile))
                    .collect();
                let setup = self.launch.clone();
                self.change_setups(setup, Some(compared));
                self.edits
                    .retain(|e| e.profile == self.launch.profile && e.diff() == launch_diff);
                Ok(match dropped.is_empty() {
                    true => "parameters as at the start".to_string(),
                    false => format!("parameters as at the start; dropped {}", dropped.join("; ")),
                })
            }
            "profile" => match Profile::from_name(arg) {
                Some(p) => {
                    let left = (self.setup.profile != p && !self.setup.diff().is_empty()).then_some(self.setup.profile);
                    let setup = self.setup_for(p);
                    let changes = setup.diff();
                    self.change_setups(setup, None);
                    let mut said = match changes.is_empty() {
                        true => format!("profile {p}, its parameters at their defaults"),
                        false => format!("profile {p}* as you left it ({}; :reset drops it)", changes.join(", ")),
                    };
                    if let Some(l) = left {
                        said += &format!(" · {l}'s changes kept (:profile {l} brings them back)");
                    }
                    Ok(said)
                }
                None => {
                    let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
                    Err(format!("no profile {arg:?} ({})", names.join(", ")))
                }
            },
            "detectors" => self.command_detectors(arg),
            "diff" => {
                self.show_diff();
                return;
            }
            "write" | "w" => self.command_write(arg),
            "compare" => self.command_compare(arg),
            "rechunk" => self.command_rechunk(arg, now),
            "bad" => {
                self.show_bad_lines();
                return;
            }
            "q" | "q!" | "quit" | "qa" | "x" => {
                self.quit = true;
                return;
            }
            other => Err(format!(
                "unknown command :{other} (set, reset, profile, detectors, diff, write, compare, rechunk, bad, q)"
            )),
        };
        let text = match said {
            Ok(t) => t,
            Err(e) => format!("✗ {e}"),
        };
        self.flash(text, now);
    }

    fn command_set(&mut self, arg: &str) -> Result<String, String> {
        let mut setup = self.setup.clone();
        setup
            .apply_set(arg)
            .map_err(|e| e.to_string().replacen("--set", ":set", 1))?;
        self.change_setups(setup, None);
        Ok(self.after_change(arg))
    }

    /// "set X: 2 detections now (was 3)".
    fn after_change(&self, what: &str) -> String {
        let mine = self.tape.detections().iter().filter(|d| d.run == 0).count();
        let pending = if self.tape.pending() { " so far" } else { "" };
        format!("{what}: {}{pending}", count(mine, "detection"))
    }

    fn command_detectors(&mut self, arg: &str) -> Result<String, String> {
        let mut setup = Setup::profile(self.setup.profile);
        if arg != "all" && !arg.is_empty() {
            let ids: Vec<String> = arg.split(',').map(|s| s.trim().to_string()).collect();
            setup.select(&ids)?;
        }
        // Parameters changed so far stay with the detectors that stay.
        for c in &mut setup.detectors {
            if let Some(old) = self.setup.detectors.iter().find(|o| o.info.id == c.info.id) {
                c.params = old.params.clone();
            }
        }
        self.change_setups(setup, None);
        Ok(format!("detectors: {}", self.setup.ids().join(", ")))
    }

    fn show_diff(&mut self) {
        let mut lines = self.setup.diff();
        if lines.is_empty() {
            lines.push("none: every parameter is at its profile default".to_string());
        }
        let body = lines.join("\n");
        let toml = self.setup.to_toml();
        self.overlay = Some(Overlay::Inspector(Inspector {
            title: format!("{} parameters that differ from the profile", self.setup.profile),
            parts: vec![
                Part {
                    heading: format!("changes from profile {}", self.setup.profile),
                    body,
                },
                Part {
                    heading: "as a config file (:write FILE saves it; --config FILE reads it)".to_string(),
                    body: toml,
                },
            ],
            scroll: 0,
        }));
    }

    /// `:bad`: the source's unreadable lines, each with its line number and
    /// why, in the inspector (scrolls; `y` copies them).
    fn show_bad_lines(&mut self) {
        let n = self.problems_seen;
        let mut lines: Vec<String> = self.read_error.iter().map(|e| format!("nothing shown: {e}")).collect();
        if n == 0 && lines.is_empty() {
            lines.push("none: every line of the source was read".to_string());
        }
        lines.extend(self.problems.iter().map(|p| p.to_string()));
        if n > self.problems.len() {
            lines.push(format!("… and {} more", n - self.problems.len()));
        }
        let body = lines.join("\n");
        self.overlay = Some(Overlay::Inspector(Inspector {
            title: format!(
                "{} · {} skipped, {}",
                self.name,
                count(self.bad_lines, "bad line"),
                count(n, "problem")
            ),
            parts: vec![Part {
                heading: "problems reading the source (line: reason)".to_string(),
                body,
            }],
            scroll: 0,
        }));
    }

    fn command_write(&mut self, arg: &str) -> Result<String, String> {
        if arg.is_empty() {
            return Err(":write needs a file name".to_string());
        }
        let path = PathBuf::from(arg);
        let inputs: Vec<&std::path::Path> = self.inputs.iter().map(PathBuf::as_path).collect();
        crate::files::refuse_if_input(&path, &inputs)?;
        // Opening a FIFO waits for a reader: the viewer would hang on it.
        #[cfg(unix)]
        if std::fs::metadata(&path).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())) {
            return Err(format!(
                "{}: is a FIFO, which would hold the viewer until something reads it; write to a file",
                loopscope_core::sanitize::path(&path)
            ));
        }
        let toml = self.setup.to_toml();
        crate::files::write_atomically(&path, |w| w.write_all(toml.as_bytes()))
            .map_err(|e| format!("{}: {}", loopscope_core::sanitize::path(&path), e))?;
        Ok(format!(
            "wrote {} (read it with --config)",
            loopscope_core::sanitize::path(&path)
        ))
    }

    fn command_compare(&mut self, arg: &str) -> Result<String, String> {
        if arg == "off" || arg.is_empty() {
            // Back to the profile shown before comparing, as it was left.
            let back = self.compared_from.take().unwrap_or(self.setup.profile);
            let setup = self.setup_for(back);
            let changes = setup.diff();
            self.change_setups(setup, Some(Vec::new()));
            let mut said = format!("comparison off: {}", self.profile_label());
            if !changes.is_empty() {
                said += &format!(" ({})", changes.join(", "));
            }
            return Ok(said);
        }
        let mut profiles = Vec::new();
        for name in arg.split(',').map(str::trim) {
            let p = Profile::from_name(name).ok_or_else(|| format!("no profile {name:?}"))?;
            if !profiles.contains(&p) {
                profiles.push(p);
            }
        }
        if self.tape.setups().len() < 2 {
            self.compared_from = Some(self.setup.profile);
        }
        // Each profile as the user left it: an edited one is compared as edited.
        let mut setups: Vec<Setup> = profiles.iter().map(|&p| self.setup_for(p)).collect();
        let first = setups.remove(0);
        self.change_setups(first, Some(setups));
        let edited: Vec<String> = self
            .tape
            .setups()
            .iter()
            .filter(|s| !s.diff().is_empty())
            .map(|s| format!("{}: {}", starred(s), s.diff().join(", ")))
            .collect();
        let mut said = format!("comparing {}", self.profile_label());
        if !edited.is_empty() {
            said += &format!(" ({})", edited.join("; "));
        }
        Ok(said)
    }

    fn command_rechunk(&mut self, arg: &str, now: Instant) -> Result<String, String> {
        let n = match arg {
            "off" | "" => None,
            n => Some(
                n.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=1_000_000).contains(n))
                    .ok_or_else(|| format!(":rechunk takes a size from 1 to 1000000 chars or off, not {n:?}"))?,
            ),
        };
        if self.live.is_some() {
            return Err(":rechunk works on a recorded stream, not while tailing".to_string());
        }
        self.set_rechunk(n, now);
        Ok(match n {
            Some(n) => format!("text re-cut into {n}-char deltas: {}", count(self.tape.len(), "event")),
            None => "deltas as recorded".to_string(),
        })
    }

    /// Shows the stream's text re-cut into `n`-char deltas (`None`: as recorded).
    pub fn set_rechunk(&mut self, n: Option<usize>, now: Instant) {
        // Where we are, as a recorded event.
        let recorded_cursor = match &self.rechunked {
            Some(r) => self.cursor.checked_sub(1).map_or(0, |i| r.origins[i] + 1),
            None => self.cursor,
        };
        let recorded = match self.rechunked.take() {
            Some(r) => r.recorded,
            None => {
                let empty = Tape::compare(std::slice::from_ref(&self.setup)).with_max_spool(self.tape.max_spool());
                std::mem::replace(&mut self.tape, empty)
            }
        };
        let setups = recorded.setups().to_vec();
        match n {
            None => {
                self.tape = recorded;
                self.rebuild_views();
                self.jump_to(recorded_cursor, now);
            }
            Some(n) => {
                let mut tape = Tape::compare(&setups).with_max_spool(recorded.max_spool());
                let mut origins = Vec::new();
                let mut chunker = Rechunker::new(n);
                let mut pieces = Vec::new();
                let mut i = 0;
                recorded.for_each_event(0, recorded.len(), |e| {
                    chunker.push(i, e, &mut pieces);
                    i += 1;
                    for (piece, origin) in pieces.drain(..) {
                        origins.push(origin);
                        tape.push(piece);
                    }
                });
                chunker.flush(&mut pieces);
                for (piece, origin) in pieces.drain(..) {
                    origins.push(origin);
                    tape.push(piece);
                }
                self.tape = tape;
                let cursor = origins.partition_point(|&o| o < recorded_cursor);
                self.rechunked = Some(Rechunked { n, recorded, origins });
                self.rebuild_views();
                self.jump_to(cursor, now);
            }
        }
    }

    /// Runs `shown` (and, with `Some`, these compared setups instead of the
    /// current ones) over the stored events: at once up to the shown
    /// position, the rest in slices as time passes.
    pub fn change_setups(&mut self, shown: Setup, compared: Option<Vec<Setup>>) {
        let mut setups = vec![shown.clone()];
        match compared {
            Some(c) => setups.extend(c),
            None => setups.extend(self.tape.setups().iter().skip(1).cloned()),
        }
        // The changes of what ran until now are kept, then those of what runs.
        self.remember_edits();
        self.setup = shown;
        self.tape.rerun(&setups, self.cursor);
        self.remember_edits();
        if let Some(r) = self.rechunked.as_mut() {
            // "As recorded" answers for the same setups.
            r.recorded.rerun(&setups, usize::MAX);
        }
        self.chosen = None;
        self.rebuild_views();
        self.refresh();
    }

    /// Re-runs more of a pending re-run; true when something changed.
    pub fn resume_rerun(&mut self) -> bool {
        if !self.tape.pending() {
            return false;
        }
        if !self.tape.resume(RESUME_WORK) {
            self.rebuild_views();
        }
        true
    }

    /// The views built from the whole stream: the timeline (with every
    /// run's detections), the pacing, the detectors' rows, the comparison.
    pub fn rebuild_views(&mut self) {
        let mut timeline = TimelinePane::default();
        timeline.set_filter(self.panes.timeline.filter().cloned());
        timeline.timeline.set_judge(self.setup.judge_params());
        let mut pacing = Pacing::new(self.pacing.rules());
        let labels = self.profile_names();
        let comparing = labels.len() > 1;
        let mut summary = Summarizer::new(&labels);
        self.tape.for_each_with_detections(|i, e, found| {
            pacing.push(e);
            timeline.push(i, e);
            for d in found {
                timeline.push_detection(d, comparing.then(|| labels[d.run].as_str()));
            }
            summary.push(e, found);
        });
        self.panes.timeline = timeline;
        self.pacing = pacing;
        self.summaries = summary.finish();
        self.configured = self.tape.configured();
        self.dirty = true;
    }

    /// Each compared run's first detection and what streamed after it.
    pub fn refresh_summaries(&mut self) {
        let mut summary = Summarizer::new(&self.profile_names());
        self.tape.for_each_with_detections(|_, e, found| summary.push(e, found));
        self.summaries = summary.finish();
        self.dirty = true;
    }

    /// The parameter editor: steps the selected detector's selected
    /// parameter by `delta` (a count by one, a flag toggled, a choice to
    /// the next word); a list is typed instead (`=`).
    pub fn step_param(&mut self, delta: isize, now: Instant) {
        let Some((id, name, value, kind)) = self.selected_param() else {
            return;
        };
        let next = match (&value, kind) {
            (Value::Count(n), Kind::Count { min }) => n.saturating_add_signed(delta).max(min).to_string(),
            (Value::Flag(b), _) => (!b).to_string(),
            (Value::Word(w), Kind::Choice(words)) => {
                let at = words.iter().position(|x| x == w).unwrap_or(0) as isize;
                words[(at + delta).rem_euclid(words.len() as isize) as usize].to_string()
            }
            _ => {
                self.flash(format!("{id}.{name} is a list: press = to type it"), now);
                return;
            }
        };
        if self.state_runs.get(self.panes.detectors.selected) != Some(&0) {
            self.flash(
                "parameters are edited on the shown profile (the first compared)".into(),
                now,
            );
            return;
        }
        self.run_command(&format!("set {id}.{name}={next}"), now);
    }

    /// The parameter the detectors pane's editor has selected.
    pub(super) fn selected_param(&self) -> Option<(&'static str, &'static str, Value, Kind)> {
        self.panes.detectors.selected_param(&self.configured)
    }
}

/// A setup's profile name, `*` added when its parameters differ from the profile's.
fn starred(s: &Setup) -> String {
    let star = if s.diff().is_empty() { "" } else { "*" };
    format!("{}{star}", s.profile)
}
