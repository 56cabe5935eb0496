//! Moving around: the detection `e`/`E` go to, the inspector on the
//! selected row, the mouse, and what the panes and overlays ask of the app
//! (their intents).

use std::time::Instant;

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::app::{App, Overlay};
use super::component::{Input, Intent};
use super::inspector::Inspector;
use super::keymap::Command;

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

    /// Opens the inspector on the selected timeline row (else the row of the position).
    pub(super) fn inspect_selected(&mut self, now: Instant) {
        let pane = &self.panes.timeline;
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

    /// Opens the inspector on the call at `event` (its timeline entry).
    fn inspect_call(&mut self, event: usize, now: Instant) {
        let entries = self.panes.timeline.timeline.entries();
        let at = entries.partition_point(|e| e.first < event);
        let call = entries[at..]
            .iter()
            .take_while(|e| e.first == event)
            .find(|e| matches!(e.kind, super::timeline::EntryKind::Call { .. }));
        match call {
            Some(e) => {
                let ins = Inspector::open(e, &self.tape, self.tape.detections());
                self.overlay = Some(Overlay::Inspector(ins));
            }
            None => self.flash(format!("no call at event {event} in the timeline"), now),
        }
    }

    pub(super) fn on_mouse(&mut self, m: MouseEvent, now: Instant) {
        let Some(areas) = self.areas() else { return };
        if self.overlay.is_some() || self.prompt.is_some() {
            return;
        }
        let click = matches!(m.kind, MouseEventKind::Down(MouseButton::Left));
        // The scrubber: a click seeks to that point of the stream.
        if click && areas.scrubber.contains(Position::new(m.column, m.row)) {
            let w = areas.scrubber.width.saturating_sub(1).max(1) as f64;
            let x = f64::from(m.column - areas.scrubber.x);
            self.stop_following();
            self.seek_time(self.pacing.duration() * x / w, now);
            return;
        }
        let Some(pane) = areas.pane_at(m.column, m.row) else {
            return;
        };
        let input = match m.kind {
            MouseEventKind::ScrollUp => Input::Command(Command::Up),
            MouseEventKind::ScrollDown => Input::Command(Command::Down),
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                Input::Click(Position::new(m.column, m.row))
            }
            _ => return,
        };
        pane.handle(self, input, now);
    }

    /// Carries out, in order, what a component asked for.
    pub(crate) fn fulfil(&mut self, intents: Vec<Intent>, now: Instant) {
        for intent in intents {
            match intent {
                Intent::StopFollowing => self.stop_following(),
                Intent::Follow => self.follow(now),
                Intent::GoToDetection(i) => {
                    self.stop_following();
                    self.choose_detection(i, now);
                }
                Intent::InspectAt(event) => {
                    self.stop_following();
                    self.clock.set_playing(false, now);
                    self.jump_to(event + 1, now);
                    self.inspect_selected(now);
                }
                Intent::Inspect => self.inspect_selected(now),
                Intent::InspectCall(event) => self.inspect_call(event, now),
                Intent::DetectorSelected => self.detector_selected(),
                Intent::StepParam(delta) => self.step_param(delta, now),
                Intent::Prompt(p) => self.prompt = Some(p),
                Intent::Submit(kind, text) => {
                    self.prompt = None;
                    self.submit(kind, text, now);
                }
                Intent::ClosePrompt => self.prompt = None,
                Intent::CloseOverlay => self.overlay = None,
                Intent::Focus(pane) => self.focus = pane,
                Intent::Copy(text) => {
                    self.clipboard = Some(text);
                    self.flash("copied to the clipboard (OSC 52)".into(), now);
                }
                Intent::Flash(text) => self.flash(text, now),
                Intent::Run(cmd) => self.command(cmd, now),
            }
        }
    }
}
