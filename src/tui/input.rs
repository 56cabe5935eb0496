//! Input handling: every change to the app state goes through
//! [`App::update`], which takes the current time as an argument so tests can
//! drive the app deterministically.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use regex::Regex;

use super::app::App;
use super::keymap::{lookup, Command};
use super::layout::{Areas, Pane};
use crate::event::Channel;
use crate::replay::feed::Feed;
use crate::replay::{faster, slower};

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
    Quit,
}

/// Seconds moved by ←/→.
const SEEK_STEP: f64 = 5.0;
/// Columns moved by h/l.
const SIDE_STEP: usize = 8;

impl App {
    pub fn update(&mut self, action: Action, now: Instant) {
        match action {
            Action::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key, now),
            Action::Key(_) => {}
            Action::Mouse(m) => self.on_mouse(m),
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
            Action::Quit => self.quit = true,
        }
        self.dirty = true;
    }

    fn on_key(&mut self, key: KeyEvent, now: Instant) {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.search.input.is_some() {
            self.on_search_key(key, now);
            return;
        }
        if let Some(cmd) = lookup(&key) {
            self.command(cmd, now);
        }
    }

    fn on_search_key(&mut self, key: KeyEvent, now: Instant) {
        let Some(input) = self.search.input.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.search.input = None,
            KeyCode::Backspace => {
                input.pop();
            }
            KeyCode::Char(c) => input.push(c),
            KeyCode::Enter => {
                let text = self.search.input.take().unwrap_or_default();
                if text.is_empty() {
                    self.search.pattern = None;
                    self.search.matches.clear();
                    self.refresh();
                    return;
                }
                match Regex::new(&text) {
                    Ok(re) => {
                        self.search.pattern = Some(re);
                        self.search.current = None;
                        self.run_search();
                        self.step_match(true, now);
                    }
                    Err(e) => {
                        let first = e.to_string().lines().last().unwrap_or_default().to_string();
                        self.flash(format!("bad pattern: {first}"), now);
                    }
                }
            }
            _ => {}
        }
    }

    /// Moves to the next (or previous) search match and scrolls to it.
    fn step_match(&mut self, forward: bool, now: Instant) {
        if self.search.pattern.is_none() {
            self.flash("no search yet: press / to search".into(), now);
            return;
        }
        self.run_search();
        let n = self.search.matches.len();
        if n == 0 {
            self.flash("no match in the shown buffer".into(), now);
            return;
        }
        let next = match self.search.current {
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
            None if forward => 0,
            None => n - 1,
        };
        self.search.current = Some(next);
        let at = self.search.matches[next].start;
        self.reveal(at);
        self.flash(format!("match {} of {n}", next + 1), now);
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
                | Select
        ) && !self.help
        {
            self.stop_following();
        }
        let len = self.tape.len();
        let duration = self.pacing.duration();
        match cmd {
            Command::Quit if self.help => self.help = false,
            Command::Quit | Command::ForceQuit => self.quit = true,
            Command::Help => self.help = !self.help,
            Command::Close => {
                self.help = false;
                self.timeline_selected = None;
            }
            _ if self.help => {}
            // Live: space freezes the view (reading goes on) and resumes following.
            Command::TogglePlay if self.live.is_some() && !self.clock.playing() => {
                if self.following() {
                    self.stop_following();
                } else {
                    self.follow(now);
                }
            }
            Command::End | Command::Follow if self.live.is_some() => self.follow(now),
            Command::TogglePlay => {
                if self.cursor >= len && !self.loading {
                    self.jump_to(0, now);
                    self.clock.set_playing(true, now);
                } else {
                    let playing = self.clock.playing();
                    self.clock.set_playing(!playing, now);
                }
            }
            Command::StepForward | Command::StepBack => {
                self.clock.set_playing(false, now);
                let to = if cmd == Command::StepForward {
                    self.cursor + 1
                } else {
                    self.cursor.saturating_sub(1)
                };
                self.jump_to(to, now);
            }
            Command::SeekForward => self.seek_time(self.clock.position(now) + SEEK_STEP, now),
            Command::SeekBack => self.seek_time(self.clock.position(now) - SEEK_STEP, now),
            Command::SeekForwardMore => self.seek_time(self.clock.position(now) + duration / 10.0, now),
            Command::SeekBackMore => self.seek_time(self.clock.position(now) - duration / 10.0, now),
            Command::JumpTenths(n) => self.seek_time(duration * f64::from(n) / 10.0, now),
            Command::Start => self.jump_to(0, now),
            Command::End => {
                self.clock.set_playing(false, now);
                self.jump_to(len, now);
                self.scroll.follow = true;
            }
            Command::NextDetection | Command::PrevDetection => {
                let found = if cmd == Command::NextDetection {
                    self.tape.detections().iter().find(|d| d.event >= self.cursor)
                } else {
                    self.tape.detections().iter().rev().find(|d| d.event + 1 < self.cursor)
                };
                match found.cloned() {
                    Some(d) => {
                        self.clock.set_playing(false, now);
                        self.jump_to(d.event + 1, now);
                        self.show_detection(&d);
                    }
                    None => self.flash("no detection that way".into(), now),
                }
            }
            Command::NextCheckpoint | Command::PrevCheckpoint => {
                let events = self.tape.checkpoint_events();
                let found = if cmd == Command::NextCheckpoint {
                    events.iter().find(|&&(e, _)| e >= self.cursor)
                } else {
                    events.iter().rev().find(|&&(e, _)| e + 1 < self.cursor)
                };
                match found.copied() {
                    Some((event, checkpoint)) => {
                        self.clock.set_playing(false, now);
                        self.channel = Channel::Reasoning;
                        self.jump_to(event + 1, now);
                        self.reveal(checkpoint);
                    }
                    None => self.flash("no checkpoint run that way".into(), now),
                }
            }
            Command::TogglePauseOnDetect => {
                self.pause_on_detect = !self.pause_on_detect;
                let state = if self.pause_on_detect { "on" } else { "off" };
                self.flash(format!("pause on detection {state}"), now);
            }
            Command::Search => self.search.input = Some(String::new()),
            Command::SearchNext => self.step_match(true, now),
            Command::SearchPrev => self.step_match(false, now),
            Command::ToggleWrap => {
                self.wrap = !self.wrap;
                self.scroll.left = 0;
                self.refresh();
            }
            Command::ToggleChannel => {
                self.channel = match self.channel {
                    Channel::Reasoning => Channel::Content,
                    _ => Channel::Reasoning,
                };
                self.scroll = Default::default();
                self.search.matches.clear();
                self.search.current = None;
                self.refresh();
            }
            Command::Faster => self.clock.set_speed(faster(self.clock.speed()), now),
            Command::Slower => self.clock.set_speed(slower(self.clock.speed()), now),
            Command::NormalSpeed => self.clock.set_speed(1.0, now),
            Command::FocusNext => self.focus = self.focus.next(),
            Command::FocusPrev => self.focus = self.focus.prev(),
            Command::Up => self.move_in(self.focus, -1),
            Command::Down => self.move_in(self.focus, 1),
            Command::PageUp => self.move_in(self.focus, -self.page(1.0)),
            Command::PageDown => self.move_in(self.focus, self.page(1.0)),
            Command::HalfPageUp => self.move_in(self.focus, -self.page(0.5)),
            Command::HalfPageDown => self.move_in(self.focus, self.page(0.5)),
            Command::Left => self.scroll.left = self.scroll.left.saturating_sub(SIDE_STEP),
            Command::Right if !self.wrap => self.scroll.left += SIDE_STEP,
            Command::Right => {}
            Command::Select => self.select(now),
            Command::Follow => {
                self.scroll.follow = true;
                self.timeline_selected = None;
            }
        }
    }

    /// Rows in a page of the focused pane.
    fn page(&self, fraction: f64) -> isize {
        let areas = self.areas().unwrap_or_default();
        let rect = match self.focus {
            Pane::Buffer => areas.buffer,
            Pane::Detectors => areas.detectors,
            Pane::Timeline => areas.timeline,
        };
        ((Areas::inner(rect).1 as f64 * fraction) as isize).max(1)
    }

    /// Scrolls the buffer, or moves the selection in a list, by `delta` rows.
    fn move_in(&mut self, pane: Pane, delta: isize) {
        match pane {
            Pane::Buffer => {
                let height = Areas::inner(self.areas().unwrap_or_default().buffer).1;
                let rows = self.layout.rows().len();
                let last_page = rows.saturating_sub(height);
                let top = self
                    .scroll
                    .first_row(rows, height)
                    .saturating_add_signed(delta)
                    .min(last_page);
                self.scroll.top = top;
                // Back at the bottom: follow the text again, like `less +F`.
                self.scroll.follow = top >= last_page;
                // Scrolling up a live stream stops it; `F` or `G` resumes.
                if delta < 0 {
                    self.stop_following();
                }
            }
            Pane::Detectors => {
                self.select_detector(self.selected_detector.saturating_add_signed(delta));
            }
            Pane::Timeline => {
                let n = self.timeline.entries().len();
                if n == 0 {
                    return;
                }
                let from = self
                    .timeline_selected
                    .or(self.timeline.current(self.cursor))
                    .unwrap_or(0);
                self.timeline_selected = Some(from.saturating_add_signed(delta).min(n - 1));
            }
        }
    }

    /// Enter: go to what the focused pane has selected.
    fn select(&mut self, now: Instant) {
        match self.focus {
            Pane::Detectors => {
                let id = self.states.get(self.selected_detector).map(|s| s.id);
                let d = self
                    .selected_detection()
                    .or_else(|| self.tape.detections().iter().find(|d| Some(d.detector) == id))
                    .cloned();
                match d {
                    Some(d) => {
                        self.clock.set_playing(false, now);
                        self.jump_to(d.event + 1, now);
                        self.show_detection(&d);
                    }
                    None => self.flash("this detector does not fire in the stream".into(), now),
                }
            }
            Pane::Timeline => {
                if let Some(e) = self.timeline_selected.and_then(|i| self.timeline.entries().get(i)) {
                    let to = e.last + 1;
                    self.clock.set_playing(false, now);
                    self.jump_to(to, now);
                }
            }
            Pane::Buffer => {}
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let Some(areas) = self.areas() else { return };
        let Some(pane) = areas.pane_at(m.column, m.row) else {
            return;
        };
        match m.kind {
            MouseEventKind::ScrollUp => self.move_in(pane, -3),
            MouseEventKind::ScrollDown => self.move_in(pane, 3),
            MouseEventKind::Down(MouseButton::Left) => self.focus = pane,
            _ => {}
        }
    }
}
