//! The app state. It changes only through [`App::update`] (see `input.rs`);
//! rendering reads it and nothing else. Everything about detection comes
//! from the engine's [`Tape`]: the app only chooses a position and shows it.
//! Its panes and overlays are components (see `component.rs`): the app
//! keeps the state they share and routes the keys to them.

use std::time::{Duration, Instant};

use ratatui::layout::Rect;

use super::layout::{Areas, Pane, Panes};
use super::live::Live;
pub use super::live::{LiveOptions, IDLE_AFTER};
use super::search::Search;
use super::status::Mode;
use super::theme::Theme;
use super::whatif::Rechunked;
use crate::config::{Configured, Setup};
use crate::detect::{CheckpointRun, Detection, DetectorState, Status};
use crate::engine::Tape;
use crate::event::{Channel, Event};
use crate::formats::Problem;
use crate::replay::{Clock, Pacing, PacingRules};
use crate::whatif::RunSummary;

/// How a view starts.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    pub speed: f64,
    pub paused: bool,
    /// Show the stream up to and including this event first.
    pub start_at: Option<usize>,
    pub pause_on_detect: bool,
    pub pacing: PacingRules,
    pub theme: Theme,
    /// Follow a stream that is still being written (`tail`).
    pub live: Option<LiveOptions>,
    /// Profiles compared with the shown one (`view --profile a,b`).
    pub compare: Vec<Setup>,
    /// Re-cut the text into deltas of this many chars once it is read.
    pub rechunk: Option<usize>,
    /// The files and folders read or followed (a file shown, `--latest`'s
    /// session folders), so `:write` never writes into one of them.
    pub inputs: Vec<std::path::PathBuf>,
}

impl Default for ViewOptions {
    fn default() -> ViewOptions {
        ViewOptions {
            speed: 1.0,
            paused: false,
            start_at: None,
            pause_on_detect: false,
            pacing: PacingRules::default(),
            theme: Theme::dark(),
            live: None,
            compare: Vec::new(),
            rechunk: None,
            inputs: Vec::new(),
        }
    }
}

/// A message shown in the status line for a few seconds.
#[derive(Clone, Debug)]
pub struct Flash {
    pub text: String,
    pub until: Instant,
}

pub use super::Overlay;

pub use super::prompt::{Prompt, PromptKind};

/// Problems kept for `:bad` (a log of millions of bad lines is counted, not kept).
pub const MAX_PROBLEMS: usize = 10_000;

/// How long a new detection's badge stands out in the status line.
const BADGE_FOR: Duration = Duration::from_secs(8);

pub struct App {
    pub name: String,
    /// The shown run's setup (the first of the tape's).
    pub setup: Setup,
    /// The setup the viewer started with (`:reset` goes back to it).
    pub launch: Setup,
    /// What-if changes, by profile: each edited profile's setup as last
    /// shown or compared, so `:compare` and `:profile` take it up again.
    pub edits: Vec<Setup>,
    /// The profile shown before `:compare` began (`:compare off` returns to it).
    pub compared_from: Option<crate::detect::Profile>,
    /// Every run's detectors, in the order of `states`.
    pub configured: Vec<Configured>,
    /// The run of each row of `states`.
    pub state_runs: Vec<usize>,
    /// Each run's first detection and what streamed after it (comparing).
    pub summaries: Vec<RunSummary>,
    /// The text re-cut into other deltas (`:rechunk`).
    pub rechunked: Option<Rechunked>,
    /// Asked for at the start (`--rechunk`): done once the source is read.
    pub rechunk_when_read: Option<usize>,
    /// What `:write` must not write into ([`ViewOptions::inputs`]).
    pub inputs: Vec<std::path::PathBuf>,
    pub theme: Theme,
    pub tape: Tape,
    pub pacing: Pacing,
    pub clock: Clock,
    /// Events shown: the engine state is the one after `cursor` events.
    pub cursor: usize,
    /// The source is still being read.
    pub loading: bool,
    pub start_at: Option<usize>,
    /// The first problems reading the source (`:bad` lists them).
    pub problems: Vec<Problem>,
    /// Lines skipped, and problems said, in all.
    pub bad_lines: usize,
    pub problems_seen: usize,
    pub focus: Pane,
    /// The focused pane fills the screen.
    pub zoom: bool,
    pub pause_on_detect: bool,
    pub overlay: Option<Overlay>,
    pub prompt: Option<Prompt>,
    /// What was entered at each kind of prompt (↑/↓ walk it).
    pub histories: super::prompt::Histories,
    pub search: Search,
    pub flash: Option<Flash>,
    /// A detection that just happened, live or in playback ("⚠ tool-repeat
    /// at 42"), standing out in the status line for a while.
    pub badge: Option<Flash>,
    /// Each pane's own state (`app.buffer`, `app.timeline`… read it too).
    pub panes: Panes,
    /// The detection chosen by `e`/`E`, the list, a ⚠ row or a live
    /// arrival (an index into the tape's detections); the detail shows it
    /// while its detector is selected and it is shown.
    pub chosen: Option<usize>,
    pub size: Rect,
    pub quit: bool,
    /// The stop signal that ended it (Ctrl-C counts as SIGINT).
    pub interrupted: Option<i32>,
    /// Something changed since the last draw.
    pub dirty: bool,
    /// Derived from the engine at `cursor` by `refresh`.
    pub states: Vec<DetectorState>,
    pub runs: Vec<CheckpointRun>,
    pub live: Option<Live>,
    /// New live detections for the run loop to announce (bell, hook).
    pub announcements: Vec<Detection>,
    /// Text for the run loop to put on the clipboard (OSC 52).
    pub clipboard: Option<String>,
    /// The importer reading the source, once known.
    pub format: Option<crate::formats::Format>,
}

impl App {
    pub fn new(name: &str, setup: Setup, opts: &ViewOptions, now: Instant) -> App {
        let mut setups = vec![setup.clone()];
        setups.extend(opts.compare.iter().cloned());
        let tape = Tape::compare(&setups);
        let mut app = App {
            name: name.to_string(),
            launch: setup.clone(),
            edits: Vec::new(),
            compared_from: None,
            configured: Vec::new(),
            state_runs: Vec::new(),
            summaries: Vec::new(),
            rechunked: None,
            rechunk_when_read: opts.rechunk,
            inputs: opts.inputs.clone(),
            theme: opts.theme.clone(),
            tape,
            pacing: Pacing::new(opts.pacing),
            clock: Clock::new(now, opts.speed, !opts.paused),
            cursor: 0,
            loading: true,
            start_at: opts.start_at,
            problems: Vec::new(),
            bad_lines: 0,
            problems_seen: 0,
            focus: Pane::Buffer,
            zoom: false,
            pause_on_detect: opts.pause_on_detect,
            overlay: None,
            prompt: None,
            histories: Default::default(),
            search: Search::default(),
            flash: None,
            panes: Panes::default(),
            chosen: None,
            size: Rect::default(),
            quit: false,
            interrupted: None,
            dirty: true,
            states: Vec::new(),
            runs: Vec::new(),
            live: opts.live.as_ref().map(|l| Live {
                following: !l.from_start,
                caught_up: false,
                from_start: l.from_start,
                file: None,
                last_data: now,
                idle: false,
                input_ended: false,
                fired: 0,
            }),
            badge: None,
            announcements: Vec::new(),
            clipboard: None,
            format: None,
            setup,
        };
        app.configured = app.tape.configured();
        app.panes.timeline.timeline.set_judge(app.setup.judge_params());
        if app.following() {
            app.clock.set_playing(false, now);
        }
        app.refresh();
        app
    }

    /// Where the panes are: the focused one fills the screen when zoomed;
    /// on a narrow screen a shown detection's details get more room.
    pub fn areas(&self) -> Option<Areas> {
        let zoom = self.zoom.then_some(self.focus);
        Areas::arrange(self.size, zoom, self.selected_detection().is_some())
    }

    pub fn mode(&self) -> Mode {
        if self.following() {
            Mode::Live
        } else if self.clock.playing() {
            Mode::Playing
        } else if self.cursor >= self.tape.len() && !self.loading && self.live.is_none() {
            Mode::End
        } else if self.loading && self.tape.is_empty() {
            Mode::Loading
        } else {
            Mode::Paused
        }
    }

    /// The user is looking at something of their own: a live view stopped
    /// short of the newest event, an overlay, a prompt, a timeline row.
    fn browsing(&self) -> bool {
        let stopped = self.live.is_some() && !self.following();
        stopped || self.overlay.is_some() || self.prompt.is_some() || self.panes.timeline.selected.is_some()
    }

    /// The exit status once it ended: 0, or 128 + the stop signal (130
    /// for Ctrl-C), as a shell reports a command a signal ended.
    pub fn exit_status(&self) -> i32 {
        self.interrupted.map_or(0, |sig| 128 + sig)
    }

    /// New events from the source: run through the engine, paced, listed.
    pub fn append(&mut self, events: Vec<Event>, now: Instant) {
        let announce = self.live.as_ref().is_some_and(|l| l.caught_up || l.from_start);
        let first_new = self.tape.detections().len();
        let was_cut = self.tape.cut().is_some();
        for event in events {
            if self.tape.cut().is_some() {
                break;
            }
            let index = self.tape.len();
            self.pacing.push(&event);
            self.panes.timeline.push(index, &event);
            for d in self.tape.push(event).to_vec() {
                let label = self.run_label(d.run).map(str::to_string);
                self.panes.timeline.push_detection(&d, label.as_deref());
                if announce {
                    self.announcements.push(d);
                }
            }
        }
        if let (false, Some(cut)) = (was_cut, self.tape.cut().cloned()) {
            // Said once, where it happened and in a flash: nothing after is shown.
            let text = format!(
                "{}: kept up to event {}, not the rest",
                cut.why,
                cut.at.saturating_sub(1)
            );
            self.panes.timeline.push_note(cut.at, text.clone());
            self.flash(text, now);
        }
        let arrived = self.tape.detections().len() - first_new;
        if let Some(live) = self.live.as_mut() {
            live.last_data = now;
            live.idle = false;
            if announce && arrived > 0 {
                live.fired += arrived;
                let d = &self.tape.detections()[first_new + arrived - 1];
                self.badge = Some(Flash {
                    text: format!("⚠ {} at {}", d.detector, d.event),
                    until: now + BADGE_FOR,
                });
            }
        }
        if self.following() {
            // Like less's ESC-F: stop at the first new detection; reading goes on.
            let stop = (self.pause_on_detect && announce && arrived > 0).then_some(first_new);
            match stop {
                Some(i) => {
                    self.stop_following();
                    let d = self.tape.detections()[i].clone();
                    self.flash(
                        format!("paused: {} fired at event {} (reading goes on)", d.detector, d.event),
                        now,
                    );
                    self.choose_detection(i, now);
                }
                None => {
                    self.jump_to(self.tape.len(), now);
                    // A new detection is selected unless the user is browsing.
                    if announce && arrived > 0 && !self.browsing() {
                        let newest = first_new + arrived - 1;
                        self.chosen = Some(newest);
                        let d = self.tape.detections()[newest].clone();
                        self.show_detection(&d);
                    }
                }
            }
        }
        // Under --rechunk the numbers are the re-cut stream's: it waits for that.
        if self.rechunk_when_read.is_none() {
            self.start_at_if_there(now);
        }
        self.advance(now);
        self.dirty = true;
    }

    /// `--start-at N` once event N is there: shown, and a detection at it selected.
    fn start_at_if_there(&mut self, now: Instant) {
        if let Some(at) = self.start_at.filter(|&at| at < self.tape.len()) {
            self.start_at = None;
            // Live, the view stays there (reading goes on; G follows again).
            self.stop_following();
            self.jump_to(at + 1, now);
            // On a detection's event, that detection is selected.
            let ds = self.tape.detections();
            if let Some(i) = ds.iter().position(|d| d.event == at) {
                self.choose_detection(i, now);
            }
        }
    }

    pub fn source_ended(&mut self, now: Instant) {
        self.loading = false;
        if let Some(n) = self.rechunk_when_read.take() {
            self.set_rechunk(Some(n), now);
            self.start_at_if_there(now);
        } else if self.tape.setups().len() > 1 {
            self.refresh_summaries();
        }
        if let Some(at) = self.start_at.take() {
            self.jump_to((at + 1).min(self.tape.len()), now);
            self.flash(format!("the stream has only {} events", self.tape.len()), now);
        }
        self.advance(now);
        self.dirty = true;
    }

    /// Problems reading the source: counted, the latest said, the first
    /// [`MAX_PROBLEMS`] kept for `:bad`.
    pub fn problems(&mut self, problems: Vec<Problem>, now: Instant) {
        if let Some(p) = problems.last() {
            self.flash(format!("bad line {}", p), now);
        }
        self.bad_lines += problems.iter().filter(|p| p.skipped).count();
        self.problems_seen += problems.len();
        let room = MAX_PROBLEMS.saturating_sub(self.problems.len());
        self.problems.extend(problems.into_iter().take(room));
    }

    pub fn bad_lines(&self) -> usize {
        self.bad_lines
    }

    pub fn flash(&mut self, text: String, now: Instant) {
        self.flash = Some(Flash {
            text,
            until: now + Duration::from_secs(4),
        });
        self.dirty = true;
    }

    /// Playback time of the last shown event.
    pub fn shown_time(&self) -> f64 {
        self.cursor.checked_sub(1).map_or(0.0, |i| self.pacing.play_time(i))
    }

    /// Applies every event that is due; stops at a detection when asked to.
    pub fn advance(&mut self, now: Instant) {
        if self.flash.as_ref().is_some_and(|f| f.until <= now) {
            self.flash = None;
            self.dirty = true;
        }
        if let Some(live) = self.live.as_mut() {
            let idle = now.saturating_duration_since(live.last_data) >= IDLE_AFTER;
            if idle != live.idle {
                live.idle = idle;
                self.dirty = true;
            }
        }
        if self.badge.as_ref().is_some_and(|b| b.until <= now) {
            self.badge = None;
            self.dirty = true;
        }
        if self.resume_rerun() {
            self.refresh();
        }
        if !self.clock.playing() {
            return;
        }
        let position = self.clock.position(now);
        let due = self.pacing.due_at(position).min(self.tape.len());
        if due > self.cursor {
            let next = self.tape.detections_before(self.cursor).len();
            let stop = self
                .pause_on_detect
                .then(|| self.tape.detections().get(next))
                .flatten()
                .filter(|d| d.event < due)
                .map(|_| next);
            match stop {
                Some(i) => {
                    let d = &self.tape.detections()[i];
                    let text = format!("paused: {} fired at event {}", d.detector, d.event);
                    self.choose_detection(i, now);
                    self.flash(text, now);
                }
                None => {
                    let shown = self.tape.detections_before(self.cursor).len();
                    self.panes.buffer.calls_hit = None;
                    self.cursor = due;
                    self.refresh();
                    self.announce_played(shown, now);
                }
            }
            self.dirty = true;
        }
        if self.cursor >= self.tape.len() && !self.loading && position >= self.pacing.duration() {
            self.clock.set_playing(false, now);
            self.dirty = true;
            // A replay from the start catches up with the live end: follow it.
            if self.live.as_ref().is_some_and(|l| l.caught_up) {
                self.follow(now);
            }
        }
    }

    /// Playback reached detections after the first `shown`: the newest is
    /// announced in the status line, and selected unless the user is
    /// browsing, as `tail` does with a live one — a reviewer watching a
    /// demo sees what fired.
    fn announce_played(&mut self, shown: usize, now: Instant) {
        let ds = self.tape.detections_before(self.cursor);
        if ds.len() <= shown {
            return;
        }
        let newest = ds.len() - 1;
        let d = ds[newest].clone();
        self.badge = Some(Flash {
            text: format!("⚠ {} at {}", d.detector, d.event),
            until: now + BADGE_FOR,
        });
        if !self.browsing() {
            self.chosen = Some(newest);
            self.show_detection(&d);
        }
    }

    /// When the next event becomes due or a message expires.
    pub fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        let next_event = (self.cursor < self.tape.len())
            .then(|| self.clock.when(self.pacing.play_time(self.cursor), now))
            .flatten();
        let flash = self.flash.as_ref().map(|f| f.until);
        let live = self.live.as_ref();
        let idle = live.filter(|l| !l.idle).map(|l| l.last_data + IDLE_AFTER);
        let badge = self.badge.as_ref().map(|b| b.until);
        // A re-run still catching up goes on at once.
        let rerun = self.tape.pending().then_some(now);
        [next_event, flash, idle, badge, rerun].into_iter().flatten().min()
    }

    /// Shows the first `cursor` events; the clock moves to the last one.
    pub fn jump_to(&mut self, cursor: usize, now: Instant) {
        self.panes.buffer.calls_hit = None;
        self.cursor = cursor.min(self.tape.len());
        self.clock.seek(self.shown_time(), now);
        self.refresh();
    }

    /// Moves playback to second `t`; shows what is due then.
    pub fn seek_time(&mut self, t: f64, now: Instant) {
        let t = t.clamp(0.0, self.pacing.duration());
        self.panes.buffer.calls_hit = None;
        self.cursor = self.pacing.due_at(t).min(self.tape.len());
        self.clock.seek(t, now);
        self.refresh();
    }

    /// The detection behind row `i` of the detectors pane's status.
    pub fn detection_of(&self, i: usize) -> Option<&Detection> {
        let state = self.states.get(i)?;
        let run = self.state_runs.get(i).copied().unwrap_or(0);
        let (id, event) = match state.status {
            Status::Fired { event, .. } => (state.id, event),
            Status::Latched { by, event } => (by, event),
            _ => return None,
        };
        self.tape
            .detections_before(self.cursor)
            .iter()
            .rev()
            .find(|d| d.run == run && d.detector == id && d.event == event)
    }

    /// The detection the detail shows: the chosen one while its detector is
    /// selected and it is shown, else the selected detector's latest.
    pub fn selected_detection(&self) -> Option<&Detection> {
        self.detection_shown_for(self.panes.detectors.selected)
    }

    /// The detection the detail shows while row `i` of the detectors pane
    /// is selected.
    pub fn detection_shown_for(&self, i: usize) -> Option<&Detection> {
        let state = self.states.get(i)?;
        let run = self.state_runs.get(i).copied().unwrap_or(0);
        let chosen = self.chosen.and_then(|i| self.tape.detections().get(i));
        match chosen {
            Some(d)
                if d.event < self.cursor && d.run == run && (d.detector == state.id || detector_latched(state, d)) =>
            {
                Some(d)
            }
            _ => self.detection_of(i),
        }
    }

    /// Selects the `i`th detector; a fired one brings its evidence into view.
    pub fn select_detector(&mut self, i: usize) {
        self.panes.detectors.select(i, self.states.len());
        self.panes.detectors.picked = true;
        self.detector_selected();
    }

    /// Another detector was selected: its detection (if any) is shown.
    pub(super) fn detector_selected(&mut self) {
        self.chosen = None;
        if let Some(d) = self.selected_detection().cloned() {
            self.show_detection(&d);
        }
        self.refresh();
    }

    /// Goes to detection `i` of the stream (pausing) and selects it.
    pub fn choose_detection(&mut self, i: usize, now: Instant) {
        let Some(d) = self.tape.detections().get(i).cloned() else {
            return;
        };
        self.clock.set_playing(false, now);
        self.chosen = Some(i);
        // Choosing a detection is following findings again.
        self.panes.detectors.picked = false;
        self.jump_to(d.event + 1, now);
        self.show_detection(&d);
    }

    /// Selects the detector of `d` and brings its evidence into view.
    pub fn show_detection(&mut self, d: &Detection) {
        let row = (0..self.states.len()).find(|&i| self.states[i].id == d.detector && self.state_runs[i] == d.run);
        if let Some(i) = row {
            self.panes.detectors.select(i, self.states.len());
        }
        let channel = self.panes.buffer.channel;
        if matches!(d.channel, Channel::Reasoning | Channel::Content) && d.channel != channel {
            self.panes.buffer.channel = d.channel;
        }
        self.refresh();
        if let Some(first) = d.spans.first() {
            self.panes
                .buffer
                .reveal(d.onset.unwrap_or(first.start).min(first.start));
        } else {
            self.panes.buffer.scroll.top = 0;
        }
        self.panes.timeline.selected = None;
    }
}

/// The panes read as the app's own fields (`app.buffer`, `app.detectors`,
/// `app.timeline`), as they did before they were components.
impl std::ops::Deref for App {
    type Target = Panes;

    fn deref(&self) -> &Panes {
        &self.panes
    }
}

impl std::ops::DerefMut for App {
    fn deref_mut(&mut self) -> &mut Panes {
        &mut self.panes
    }
}

pub use super::shown::evidence_marks;

/// Whether `d` is what stopped a latched detector (gemini-cli's shared flag).
fn detector_latched(state: &DetectorState, d: &Detection) -> bool {
    matches!(state.status, Status::Latched { by, event } if by == d.detector && event == d.event)
}
