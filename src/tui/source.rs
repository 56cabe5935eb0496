//! What the source hands the app: decoded events (run through the engine,
//! paced, listed), problems reading it, and its end — where a `--format`
//! that read nothing is said, as `scan` says it.

use crate::output::count;
use std::time::Instant;

use super::app::{App, Flash, BADGE_FOR, MAX_PROBLEMS};
use loopscope_core::event::Event;
use loopscope_core::formats::Problem;

impl App {
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
            self.stream_events += usize::from(loopscope_core::formats::carries_stream(&event));
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
        if let Some(Err(msg)) = self.forced_format.map(|f| f.check(self.stream_events)) {
            // The standing error says what went wrong; the bad lines a wrong
            // importer flashed while reading only follow from it.
            self.read_error = Some(msg.to_string());
            self.flash = None;
        }
        if let Some(n) = self.rechunk_when_read.take() {
            self.set_rechunk(Some(n), now);
            self.start_at_if_there(now);
        } else if self.tape.setups().len() > 1 {
            self.refresh_summaries();
        }
        if let Some(at) = self.start_at.take() {
            self.jump_to((at + 1).min(self.tape.len()), now);
            self.flash(format!("the stream has only {}", count(self.tape.len(), "event")), now);
        }
        self.advance(now);
        self.dirty = true;
    }

    /// Problems reading the source: counted, the latest said, the first
    /// [`MAX_PROBLEMS`] kept for `:bad`.
    pub fn problems(&mut self, problems: Vec<Problem>, now: Instant) {
        if let Some(p) = problems.last().filter(|_| self.read_error.is_none()) {
            // "line 3: not JSON; line skipped", "record 2: …; skipped".
            self.flash(p.to_string(), now);
        }
        self.bad_lines += problems.iter().filter(|p| p.skipped).count();
        self.problems_seen += problems.len();
        let room = MAX_PROBLEMS.saturating_sub(self.problems.len());
        self.problems.extend(problems.into_iter().take(room));
    }

    pub fn bad_lines(&self) -> usize {
        self.bad_lines
    }
}
