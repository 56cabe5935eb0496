//! Moving around: scrolling and selecting in the panes, Enter and `o` on
//! what is selected, the detection `e`/`E` go to, and the mouse.

use std::time::Instant;

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::app::{App, Overlay};
use super::calls;
use super::detectors_pane;
use super::input::scroll_delta;
use super::inspector::Inspector;
use super::keymap::Command;
use super::layout::{Areas, Pane};
use super::timeline::EntryKind;

impl App {
    /// The detection `e` (or `E`) goes to: the one after (before) the
    /// chosen one when it is at the position, else the first after the
    /// shown events (the last among them).
    pub(super) fn step_detection(&self, forward: bool) -> Option<usize> {
        let ds = self.tape.detections();
        let here = self
            .chosen
            .filter(|&i| ds.get(i).is_some_and(|d| d.event + 1 == self.cursor));
        match (here, forward) {
            (Some(i), true) => (i + 1 < ds.len()).then_some(i + 1),
            (Some(i), false) => i.checked_sub(1),
            (None, true) => Some(ds.partition_point(|d| d.event < self.cursor)).filter(|&i| i < ds.len()),
            (None, false) => ds.partition_point(|d| d.event < self.cursor).checked_sub(1),
        }
    }

    /// Rows in a page of a pane.
    pub(super) fn page(&self, pane: Pane) -> usize {
        let areas = self.areas().unwrap_or_default();
        let rect = match pane {
            Pane::Buffer => areas.buffer,
            Pane::Detectors => areas.detectors,
            Pane::Timeline => areas.timeline,
        };
        Areas::inner(rect).1.max(1)
    }

    /// Scrolls the buffer or the details, or moves the selection in a list.
    pub(super) fn move_in(&mut self, pane: Pane, cmd: Command, now: Instant) {
        let page = self.page(pane) as isize;
        let delta = scroll_delta(cmd, page);
        match pane {
            Pane::Buffer => {
                let height = page as usize;
                let rows = match &self.buffer.calls {
                    Some(c) => {
                        let width = Areas::inner(self.areas().unwrap_or_default().buffer).0;
                        calls::rows(c, width, &self.theme).len()
                    }
                    None => self.buffer.layout.rows().len(),
                };
                if cmd == Command::Bottom {
                    self.buffer.scroll.follow = true;
                    if self.live.is_some() {
                        self.follow(now);
                    }
                    return;
                }
                self.buffer.scroll_by(delta, rows, height);
                // Scrolling up a live stream stops it; `F` or `G` resumes.
                if delta < 0 {
                    self.stop_following();
                }
            }
            Pane::Detectors => match cmd {
                Command::PageUp | Command::PageDown => {
                    let areas = self.areas().unwrap_or_default();
                    let (width, _) = Areas::inner(areas.detectors);
                    let inner = ratatui::layout::Rect::new(0, 0, width as u16, page as u16);
                    let shown = self.selected_detection().cloned();
                    let (_, details) = detectors_pane::split(inner, self.states.len(), shown.is_some());
                    let (Some(state), Some(conf)) = (
                        self.states.get(self.detectors.selected),
                        self.configured.get(self.detectors.selected),
                    ) else {
                        return;
                    };
                    let rows = detectors_pane::detail_rows(
                        state,
                        conf,
                        shown.as_ref(),
                        self.detectors.param,
                        width,
                        &self.theme,
                    )
                    .len();
                    let height = details.height as usize;
                    let step = height.saturating_sub(1).max(1) as isize;
                    let step = if cmd == Command::PageUp { -step } else { step };
                    self.detectors.scroll_details(step, rows, height);
                }
                _ => {
                    let n = self.states.len();
                    let to = match cmd {
                        Command::Top => 0,
                        Command::Bottom => n.saturating_sub(1),
                        _ => self.detectors.selected.saturating_add_signed(delta),
                    };
                    self.select_detector(to);
                }
            },
            Pane::Timeline => match cmd {
                Command::Top => self.timeline.select_row(0),
                Command::Bottom => self.timeline.select_row(self.timeline.rows().saturating_sub(1)),
                _ => self.timeline.move_by(delta, self.cursor),
            },
        }
    }

    /// Enter: go to what the focused pane has selected.
    pub(super) fn select(&mut self, now: Instant) {
        match self.focus {
            Pane::Detectors => {
                let id = self.states.get(self.detectors.selected).map(|s| s.id);
                let ds = self.tape.detections();
                let shown = self.selected_detection().and_then(|d| ds.iter().position(|x| x == d));
                match shown.or_else(|| ds.iter().position(|d| Some(d.detector) == id)) {
                    Some(i) => {
                        self.stop_following();
                        self.choose_detection(i, now);
                    }
                    None => self.flash("this detector does not fire in the stream".into(), now),
                }
            }
            Pane::Timeline => {
                let Some(e) = self.timeline.selected_entry().cloned() else {
                    return;
                };
                self.stop_following();
                match e.kind {
                    EntryKind::Detection { index, .. } => self.choose_detection(index, now),
                    _ => {
                        self.clock.set_playing(false, now);
                        self.jump_to(e.last + 1, now);
                        self.inspect_selected(now);
                    }
                }
            }
            Pane::Buffer => {}
        }
    }

    /// Opens the inspector on the selected timeline row (else the row of the position).
    pub(super) fn inspect_selected(&mut self, now: Instant) {
        let pane = &self.timeline;
        let entry = pane
            .selected
            .or_else(|| pane.current_row(self.cursor).map(|r| pane.entry(r)))
            .and_then(|i| pane.timeline.entries().get(i));
        match entry {
            Some(e) => {
                let ins = Inspector::open(e, &self.tape, self.tape.detections());
                self.overlay = Some(Overlay::Inspector(ins));
            }
            None => self.flash("nothing to inspect yet".into(), now),
        }
    }

    pub(super) fn on_mouse(&mut self, m: MouseEvent, now: Instant) {
        let Some(areas) = self.areas() else { return };
        if self.overlay.is_some() || self.prompt.is_some() {
            return;
        }
        let click = matches!(m.kind, MouseEventKind::Down(MouseButton::Left));
        // The scrubber: a click seeks to that point of the stream.
        if click && areas.scrubber.contains(ratatui::layout::Position::new(m.column, m.row)) {
            let w = areas.scrubber.width.saturating_sub(1).max(1) as f64;
            let x = f64::from(m.column - areas.scrubber.x);
            self.stop_following();
            self.seek_time(self.pacing.duration() * x / w, now);
            return;
        }
        let Some(pane) = areas.pane_at(m.column, m.row) else {
            return;
        };
        match m.kind {
            MouseEventKind::ScrollUp => self.move_in(pane, Command::Up, now),
            MouseEventKind::ScrollDown => self.move_in(pane, Command::Down, now),
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                // A click on a timeline row selects it.
                let inner = areas.timeline;
                if pane == Pane::Timeline && m.row > inner.y && m.row + 1 < inner.y + inner.height {
                    let height = Areas::inner(inner).1;
                    let top = self.timeline.top_row(self.cursor, height);
                    self.timeline.select_row(top + usize::from(m.row - inner.y - 1));
                }
            }
            _ => {}
        }
    }
}
