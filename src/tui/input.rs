//! Input handling: every change to the app state goes through
//! [`App::update`], which takes the current time as an argument so tests can
//! drive the app deterministically. Keys go to the open prompt, else the
//! open overlay, else the focused pane (each a component looking the key
//! up in its own bindings), and what none consumes to the app's bindings.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent};

use super::app::{App, Overlay, Prompt, PromptKind};
use super::component::{lend_open, Component, Handled, Input};
use super::detections_list::DetectionsList;
use super::help::Help;
use super::keymap::{self, lookup, Binding, Command};
use super::layout::Areas;
use super::search::smart_case;
use super::timeline_pane::Filter;
use crate::replay::feed::Feed;
use crate::replay::{faster, slower};
use loopscope_core::event::{Channel, EventKind};

/// Everything that can happen to the app.
#[derive(Clone, Debug)]
pub enum Action {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Time passed: apply due events.
    Tick,
    /// From the source of events.
    Feed(Feed),
    /// An `--on-detect` command failed.
    HookFailed(String),
    /// A stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT): the viewer ends
    /// with the exit status 128 + its number.
    Signal(i32),
}

/// SIGINT's number: Ctrl-C in raw mode is a key, ended as by the signal.
pub const SIGINT: i32 = 2;

/// Seconds moved by ←/→.
const SEEK_STEP: f64 = 5.0;

/// The app's own keys, after the focused pane's.
const GLOBAL: &[&[Binding]] = &[keymap::PLAYBACK, keymap::FINDINGS, keymap::VIEW, keymap::APP];

impl App {
    pub fn update(&mut self, action: Action, now: Instant) {
        match action {
            Action::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key, now),
            Action::Key(_) => {}
            Action::Mouse(m) => self.on_mouse(m, now),
            Action::Resize(w, h) => {
                self.size = ratatui::layout::Rect::new(0, 0, w, h);
                self.refresh();
            }
            Action::Tick => self.advance(now),
            Action::Feed(Feed::Format(f)) => self.format = Some(f),
            Action::Feed(Feed::Events(events)) => self.append(events, now),
            Action::Feed(Feed::Problems(p)) => self.problems(p, now),
            Action::Feed(Feed::CaughtUp) => self.caught_up(now),
            Action::Feed(Feed::File(news)) => self.file_news(news, now),
            Action::Feed(Feed::Warning(w)) => self.flash(w, now),
            Action::Feed(Feed::Read(_)) => {}
            Action::Feed(Feed::Ended) => {
                if let Some(live) = self.live.as_mut() {
                    live.input_ended = true;
                }
                self.source_ended(now);
            }
            Action::Feed(Feed::Failed(msg)) => {
                if self.live.is_none() {
                    self.loading = false;
                }
                self.flash(format!("reading: {msg}"), now);
            }
            Action::HookFailed(msg) => self.flash(msg, now),
            Action::Signal(sig) => {
                self.quit = true;
                self.interrupted = Some(sig);
            }
        }
        self.dirty = true;
    }

    fn on_key(&mut self, key: KeyEvent, now: Instant) {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            // The key a raw terminal delivers instead of SIGINT: ended as by it.
            self.quit = true;
            self.interrupted = Some(SIGINT);
            return;
        }
        // The key a raw terminal delivers instead of SIGTSTP: it works
        // wherever the keys are (a prompt, an overlay), as in a shell.
        if key.code == KeyCode::Char('z') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.command(Command::Suspend, now);
            return;
        }
        // A message answers the key before; the next key makes it stale
        // (as in less and vim). A key that has something to say says it anew.
        self.flash = None;
        if self.prompt.is_some() {
            let area = self.areas().unwrap_or_default().footer;
            lend_open(
                self,
                |a| &mut a.prompt,
                area,
                now,
                |p, cx, out| p.handle(Input::Key(&key), cx, out),
            );
            return;
        }
        if let Some(title) = self.overlay.as_ref().map(|o| o.title()) {
            if self.overlay_input(Input::Key(&key), now) == Handled::NotConsumed {
                match lookup(&key, &[keymap::OVERLAY]) {
                    Some(cmd) => self.overlay_command(cmd, now),
                    None => self.say_unbound(&key, Some(title), now),
                }
            }
            return;
        }
        if self.focus.handle(self, Input::Key(&key), now) == Handled::NotConsumed {
            match lookup(&key, GLOBAL) {
                Some(cmd) => self.command(cmd, now),
                None => self.say_unbound(&key, None, now),
            }
        }
    }

    /// A key bound to nothing where it was pressed: the bottom line says
    /// so, as the README promises, rather than nothing happening.
    fn say_unbound(&mut self, key: &KeyEvent, overlay: Option<&str>, now: Instant) {
        let Some(name) = keymap::key_name(key) else {
            return;
        };
        let text = match overlay {
            // "inspector (o)" is the inspector here.
            Some(title) => {
                let title = title.split(" (").next().unwrap_or(title);
                let the = if title.starts_with("this ") { "" } else { "the " };
                format!("{name} does nothing in {the}{title} · Esc closes it, ? lists the keys")
            }
            None => format!("{name} does nothing here · ? lists the keys"),
        };
        self.flash(text, now);
    }

    /// Input for the open overlay (over the whole screen).
    fn overlay_input(&mut self, input: Input, now: Instant) -> Handled {
        let area = self.size;
        lend_open(
            self,
            |a| &mut a.overlay,
            area,
            now,
            |o, cx, out| o.handle(input, cx, out),
        )
    }

    /// A line entered at a prompt of this kind.
    pub(super) fn submit(&mut self, kind: PromptKind, text: String, now: Instant) {
        self.histories.add(&kind, &text);
        match kind {
            PromptKind::Search => self.start_search(&text, now),
            PromptKind::HelpSearch => {
                if let Some(Overlay::Help(help)) = self.overlay.as_mut() {
                    help.search(text);
                }
            }
            PromptKind::Command => self.run_command(&text, now),
            PromptKind::Param { target } if !text.trim().is_empty() => {
                self.run_command(&format!("set {target}={}", text.trim()), now)
            }
            PromptKind::Param { .. } => {}
            PromptKind::Filter => match Filter::parse(&text) {
                Ok(f) => {
                    let said = f.as_ref().map_or("timeline filter off".to_string(), |f| {
                        format!("timeline: only {}", f.describe())
                    });
                    self.panes.timeline.set_filter(f);
                    self.flash(said, now);
                }
                Err(e) => self.flash(format!("bad filter: {e}"), now),
            },
        }
    }

    fn start_search(&mut self, text: &str, now: Instant) {
        if text.is_empty() {
            self.search.set(None, &self.tape);
            self.refresh();
            return;
        }
        match smart_case(text) {
            Ok(re) => {
                self.search.set(Some(re), &self.tape);
                self.step_match(true, now);
            }
            Err(e) => self.flash(format!("bad pattern: {e}"), now),
        }
    }

    /// Moves the position to the next (or previous) match in the stream.
    fn step_match(&mut self, forward: bool, now: Instant) {
        if self.search.pattern.is_none() {
            self.flash("no search yet: press / to search".into(), now);
            return;
        }
        self.search.update(&self.tape);
        let Some(hit) = self.search.step(forward, self.cursor) else {
            // Said with the pattern, as less and vim do: a typo shows.
            let pattern = self.search.pattern.as_ref().map_or("", |re| re.as_str());
            self.flash(format!("no match for /{pattern}/ in the stream"), now);
            self.refresh();
            return;
        };
        self.stop_following();
        self.clock.set_playing(false, now);
        if let Some(t) = hit.text {
            self.panes.buffer.channel = t.channel;
        }
        self.jump_to(hit.event + 1, now);
        self.overlay = None;
        match hit.text {
            Some(t) => self.panes.buffer.reveal(t.span.start),
            None => self.show_hit_event(hit.event),
        }
        let n = self.search.hits.len();
        let more = if n >= super::search::MAX_HITS { "+" } else { "" };
        let i = self.search.current.unwrap_or(0) + 1;
        self.flash(format!("match {i} of {n}{more} · event {}", hit.event), now);
    }

    /// A match outside the text is shown where its event is whole, the
    /// match marked: a tool call or result in the big pane's calls,
    /// scrolled to it; a prompt, a note or a verdict in the inspector.
    /// Its timeline row is selected either way.
    fn show_hit_event(&mut self, event: usize) {
        let entries = self.panes.timeline.timeline.entries();
        let row = entries.partition_point(|e| e.first <= event).checked_sub(1);
        // A call's row stands for its result too (and lies before it).
        let paired = |e: &super::timeline::Entry| matches!(e.kind, super::timeline::EntryKind::Call { result: Some((r, _)), .. } if r == event);
        let row = row
            .and_then(|r| (r.saturating_sub(512)..=r).rev().find(|&k| paired(&entries[k])))
            .or(row);
        self.panes.timeline.selected = row;
        let is_call = matches!(
            self.tape.event(event).map(|e| e.kind),
            Some(EventKind::ToolCall { .. } | EventKind::ToolResult { .. })
        );
        if is_call {
            self.panes.buffer.calls_hit = Some(event);
            self.refresh();
            let width = self.areas().map_or(80, |a| Areas::inner(a.buffer).0);
            if let Some(calls) = &self.panes.buffer.calls {
                self.panes.buffer.scroll.top = super::calls::row_of(calls, event, width, &self.theme).unwrap_or(0);
            }
            return;
        }
        if let Some(entry) = row.and_then(|r| self.panes.timeline.timeline.entries().get(r)) {
            let mut ins = super::inspector::Inspector::open(entry, &self.tape, self.tape.detections());
            if let Some(re) = &self.search.pattern {
                let (width, _) = Areas::inner(super::inspector::area(self.size));
                ins.scroll_to_match(re, width, &self.theme);
            }
            self.overlay = Some(Overlay::Inspector(ins));
        }
    }

    /// One of the app's keys while an overlay is open (the overlay did
    /// not take it): close it, or switch to the help or the detections.
    fn overlay_command(&mut self, cmd: Command, _now: Instant) {
        let open = self.overlay.as_ref();
        match cmd {
            Command::Close => self.overlay = None,
            Command::Help if matches!(open, Some(Overlay::Help(_))) => self.overlay = None,
            Command::Help => self.overlay = Some(Overlay::Help(Help::default())),
            Command::Detections if matches!(open, Some(Overlay::Detections(_))) => self.overlay = None,
            Command::Detections => self.open_detections(),
            // Over the overlay (`:diff` again, `:set` then `:diff`).
            Command::CommandLine => self.prompt = Some(Prompt::new(PromptKind::Command, None)),
            _ => {}
        }
    }

    fn open_detections(&mut self) {
        let ds = self.tape.detections();
        // Start at the chosen detection, else the last one shown.
        let selected = self
            .chosen
            .unwrap_or_else(|| ds.partition_point(|d| d.event < self.cursor).saturating_sub(1));
        self.overlay = Some(Overlay::Detections(DetectionsList { selected }));
    }

    pub fn command(&mut self, cmd: Command, now: Instant) {
        use Command::*;
        // Browsing the history of a live stream stops following it.
        if matches!(
            cmd,
            StepBack
                | StepForward
                | SeekBack
                | SeekForward
                | SeekBackMore
                | SeekForwardMore
                | JumpTenths(_)
                | Start
                | NextDetection
                | PrevDetection
                | NextCheckpoint
                | PrevCheckpoint
        ) {
            self.stop_following();
        }
        let len = self.tape.len();
        let duration = self.pacing.duration();
        match cmd {
            Quit | ForceQuit => self.quit = true,
            // The run loop gives the terminal back and stops the process.
            Suspend => self.suspend = true,
            Help => self.overlay = Some(Overlay::Help(super::help::Help::default())),
            Detections => self.open_detections(),
            Close => {
                self.panes.timeline.selected = None;
                self.panes.buffer.calls_hit = None;
                self.zoom = false;
                self.refresh();
            }
            // Live: space freezes the view (reading goes on) and resumes following.
            TogglePlay if self.live.is_some() && !self.clock.playing() => {
                if self.following() {
                    self.stop_following();
                } else {
                    self.follow(now);
                }
            }
            End | Follow if self.live.is_some() => self.follow(now),
            Follow => {
                self.panes.buffer.scroll.follow = true;
                self.panes.timeline.selected = None;
            }
            TogglePlay => {
                if self.cursor >= len && !self.loading {
                    self.jump_to(0, now);
                    self.clock.set_playing(true, now);
                } else {
                    let playing = self.clock.playing();
                    self.clock.set_playing(!playing, now);
                }
            }
            StepForward | StepBack => {
                self.clock.set_playing(false, now);
                let to = if cmd == StepForward {
                    self.cursor + 1
                } else {
                    self.cursor.saturating_sub(1)
                };
                self.jump_to(to, now);
            }
            SeekForward => self.seek_time(self.clock.position(now) + SEEK_STEP, now),
            SeekBack => self.seek_time(self.clock.position(now) - SEEK_STEP, now),
            SeekForwardMore => self.seek_time(self.clock.position(now) + duration / 10.0, now),
            SeekBackMore => self.seek_time(self.clock.position(now) - duration / 10.0, now),
            JumpTenths(n) => self.seek_time(duration * f64::from(n) / 10.0, now),
            Start => self.jump_to(0, now),
            End => {
                self.clock.set_playing(false, now);
                self.jump_to(len, now);
                self.panes.buffer.scroll.follow = true;
            }
            NextDetection | PrevDetection => match self.step_detection(cmd == NextDetection) {
                Some(i) => self.choose_detection(i, now),
                None => self.flash("no detection that way".into(), now),
            },
            NextCheckpoint | PrevCheckpoint => {
                let events = self.tape.checkpoint_events();
                let found = if cmd == NextCheckpoint {
                    events.iter().find(|&&(e, _)| e >= self.cursor)
                } else {
                    events.iter().rev().find(|&&(e, _)| e + 1 < self.cursor)
                };
                match found.copied() {
                    Some((event, checkpoint)) => {
                        self.clock.set_playing(false, now);
                        self.panes.buffer.channel = Channel::Reasoning;
                        self.jump_to(event + 1, now);
                        self.panes.buffer.reveal(checkpoint);
                    }
                    None => self.flash("no checkpoint run that way".into(), now),
                }
            }
            TogglePauseOnDetect => {
                self.pause_on_detect = !self.pause_on_detect;
                let state = if self.pause_on_detect { "on" } else { "off" };
                self.flash(format!("pause on detection {state}"), now);
            }
            // Prompts open empty; the current value is their hint.
            Search => {
                let now_searching = self.search.pattern.as_ref().map(|r| r.as_str().to_string());
                self.prompt = Some(Prompt::new(PromptKind::Search, now_searching));
            }
            Filter => {
                let current = self.panes.timeline.filter().map(|f| f.typed());
                self.prompt = Some(Prompt::new(PromptKind::Filter, current));
            }
            CommandLine => self.prompt = Some(Prompt::new(PromptKind::Command, None)),
            SearchNext => self.step_match(true, now),
            SearchPrev => self.step_match(false, now),
            ToggleWrap => {
                self.panes.buffer.wrap = !self.panes.buffer.wrap;
                self.panes.buffer.scroll.left = 0;
                self.refresh();
            }
            ToggleChannel => {
                self.panes.buffer.calls_hit = None;
                self.panes.buffer.channel = match self.panes.buffer.channel {
                    Channel::Reasoning => Channel::Content,
                    _ => Channel::Reasoning,
                };
                self.panes.buffer.scroll = Default::default();
                self.refresh();
            }
            Zoom => {
                self.zoom = !self.zoom;
                self.refresh();
            }
            Faster => self.clock.set_speed(faster(self.clock.speed()), now),
            Slower => self.clock.set_speed(slower(self.clock.speed()), now),
            NormalSpeed => self.clock.set_speed(1.0, now),
            FocusNext | FocusPrev => {
                self.focus = if cmd == FocusNext {
                    self.focus.next()
                } else {
                    self.focus.prev()
                };
                if self.zoom {
                    self.refresh();
                }
            }
            // The panes' commands (the mouse wheel's, or a caller's): the focused pane's.
            Up | Down | PageUp | PageDown | HalfPageUp | HalfPageDown | Top | Bottom | Left | Right | Select
            | Inspect | Copy | Own(_) => {
                self.focus.handle(self, Input::Command(cmd), now);
            }
        }
    }
}
