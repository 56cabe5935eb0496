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
use crate::replay::{Clock, Pacing, PacingRules};
use crate::whatif::RunSummary;
use loopscope_core::config::{Configured, Setup};
use loopscope_core::detect::{CheckpointRun, Detection, DetectorState, Status};
use loopscope_core::engine::Tape;
use loopscope_core::event::Channel;
use loopscope_core::formats::Problem;

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
    /// A `--format` named by the user, to check once the input is read:
    /// one that read nothing of the stream is said, as `scan` says it.
    pub forced_format: Option<loopscope_core::formats::ForcedCheck>,
    /// The most bytes the view's store spools to its temporary file
    /// (`--max-spool`): the process's setting unless a caller names one.
    pub max_spool: u64,
}

/// `--max-spool`, as the command line set it for this process: the app's
/// setting (the core's stores take it as an option, [`Tape::with_max_spool`]).
static MAX_SPOOL: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(loopscope_core::store::DEFAULT_MAX_SPOOL);

/// Sets `--max-spool` for every view this process opens.
pub fn set_max_spool(bytes: u64) {
    MAX_SPOOL.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// `--max-spool` in force (the default unless the command line set it).
pub fn max_spool() -> u64 {
    MAX_SPOOL.load(std::sync::atomic::Ordering::Relaxed)
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
            forced_format: None,
            max_spool: max_spool(),
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
pub(super) const BADGE_FOR: Duration = Duration::from_secs(8);

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
    pub compared_from: Option<loopscope_core::detect::Profile>,
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
    /// The `--format` named, checked when the input ends ([`ViewOptions::forced_format`]).
    pub forced_format: Option<loopscope_core::formats::ForcedCheck>,
    /// Events read that carry something of the stream (text, calls…).
    pub stream_events: usize,
    /// Why the input showed nothing (a `--format` that read none of it):
    /// said on the bottom line while it stands, and first in `:bad`.
    pub read_error: Option<String>,
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
    /// Ctrl-Z was pressed: the run loop restores the terminal, stops the
    /// process, and takes the terminal again when the shell resumes it.
    pub suspend: bool,
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
    pub format: Option<loopscope_core::formats::Format>,
}

impl App {
    pub fn new(name: &str, setup: Setup, opts: &ViewOptions, now: Instant) -> App {
        let mut setups = vec![setup.clone()];
        setups.extend(opts.compare.iter().cloned());
        let tape = Tape::compare(&setups).with_max_spool(opts.max_spool);
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
            forced_format: opts.forced_format,
            stream_events: 0,
            read_error: None,
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
            suspend: false,
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
    pub(super) fn browsing(&self) -> bool {
        let stopped = self.live.is_some() && !self.following();
        stopped || self.overlay.is_some() || self.prompt.is_some() || self.panes.timeline.selected.is_some()
    }

    /// The exit status once it ended: 0, or 128 + the stop signal (130
    /// for Ctrl-C), as a shell reports a command a signal ended.
    pub fn exit_status(&self) -> i32 {
        self.interrupted.map_or(0, |sig| 128 + sig)
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
