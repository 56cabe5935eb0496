//! What is shown at the position: the detectors' states, the buffer's
//! layout and highlights, and what the big pane shows instead of (or
//! under) the text — derived from the engine at the cursor by
//! [`App::refresh`], read by rendering.

use super::app::App;
use super::buffer_pane::{Highlight, Mark};
use super::calls::Calls;
use super::layout::Areas;
use loopscope_core::detect::{Detection, Evidence, Span};
use loopscope_core::event::Channel;

impl App {
    /// Recomputes what is shown from the engine at `cursor`.
    pub fn refresh(&mut self) {
        self.tape.seek(self.cursor);
        let engine = self.tape.cursor();
        let mut states = engine.states();
        self.runs = engine.checkpoint_runs();
        let mut state_runs = vec![0; states.len()];
        for k in 1..self.tape.setups().len() {
            if let Some(e) = self.tape.run_cursor(k) {
                let more = e.states();
                state_runs.extend(std::iter::repeat_n(k, more.len()));
                states.extend(more);
            }
        }
        self.states = states;
        self.state_runs = state_runs;
        self.follow_finding();
        // (The layout depends on whether a detection is shown.)
        let areas = self.areas();
        let engine = self.tape.cursor();
        let request = engine.request_start();
        let buffers = engine.buffers();
        let channel = self.panes.buffer.channel;
        let buf = if channel == Channel::Content {
            &buffers.content
        } else {
            &buffers.reasoning
        };
        let mut markers: Vec<usize> = if channel == Channel::Reasoning {
            self.runs.iter().map(|r| r.checkpoint).collect()
        } else {
            Vec::new()
        };
        markers.dedup();
        if let Some(areas) = areas {
            let (width, _) = Areas::inner(areas.buffer);
            let wrap = self.panes.buffer.wrap;
            self.panes
                .buffer
                .layout
                .sync(buf, request, channel, &markers, width, wrap);
        }
        let len = buf.len();
        let text_empty = buffers.reasoning.is_empty() && buffers.content.is_empty();
        let first_event = request.unwrap_or(0);
        let mut hl = Vec::new();
        for d in self.tape.detections_before(self.cursor) {
            // Compared runs' evidence shows when one of them is selected.
            let shown = d.run == 0 || self.selected_detection().is_some_and(|s| s == d);
            if shown && d.channel == channel && d.event >= first_event {
                evidence_marks(d, len, &mut hl);
            }
        }
        hl.extend(
            self.search
                .in_buffer(request, channel)
                .filter(|s| s.end <= len)
                .map(|span| Highlight {
                    span,
                    mark: Mark::Search,
                }),
        );
        hl.sort_by_key(|h| (h.span.start, h.mark));
        self.panes.buffer.highlights = hl;
        self.panes.detectors.selected = self.panes.detectors.selected.min(self.states.len().saturating_sub(1));
        self.panes.buffer.calls = self.calls_view(request, text_empty);
        self.panes.buffer.below = None;
        if let (None, Some(areas)) = (&self.panes.buffer.calls, areas) {
            // A text that fills under half the pane leaves room for the calls.
            let (_, height) = Areas::inner(areas.buffer);
            if self.panes.buffer.layout.rows().len() * 2 <= height {
                let calls = self.request_calls(request, "tool calls of this request".into());
                self.panes.buffer.below = (!calls.calls.is_empty()).then_some(calls);
            }
        }
        self.dirty = true;
    }

    /// The detectors pane follows the finding: until the user picks a
    /// detector, the one behind the detection shown (the chosen one, else
    /// the newest at or before the shown event) is selected, so a pane
    /// with room for one row shows what fired rather than an idle detector.
    fn follow_finding(&mut self) {
        if self.panes.detectors.picked {
            return;
        }
        let shown = self.tape.detections_before(self.cursor);
        let chosen = self.chosen.and_then(|i| self.tape.detections().get(i));
        let Some(d) = chosen.filter(|d| d.event < self.cursor).or(shown.last()) else {
            return;
        };
        let (id, run) = (d.detector, d.run);
        let row = (0..self.states.len()).find(|&i| self.states[i].id == id && self.state_runs[i] == run);
        if let Some(i) = row {
            self.panes.detectors.select(i, self.states.len());
        }
    }

    /// The newest calls of the request shown, up to the position.
    fn request_calls(&self, request: Option<usize>, title: String) -> Calls {
        let timeline = &self.panes.timeline.timeline;
        let to = timeline.current(self.cursor).map_or(0, |c| c + 1);
        let from = request.map_or(0, |r| timeline.entries().partition_point(|e| e.first < r));
        Calls::in_entries(from, to, timeline, &self.tape, title)
    }

    /// The calls the big pane shows instead of text: a selected tool
    /// detection's, or those of a request that has no text.
    fn calls_view(&self, request: Option<usize>, text_empty: bool) -> Option<Calls> {
        let timeline = &self.panes.timeline.timeline;
        if let Some(hit) = self.panes.buffer.calls_hit {
            let title = format!("search match at event {hit}: tool calls of this request");
            let mut calls = self.request_calls(request, title.clone());
            let is_hit = |c: &super::calls::Call| c.event == hit || c.result.as_ref().is_some_and(|r| r.0 == hit);
            if !calls.calls.iter().any(is_hit) {
                calls = Calls::of_events(&[hit], timeline, &self.tape, title);
            }
            for c in calls.calls.iter_mut() {
                c.involved = is_hit(c);
            }
            return Some(calls);
        }
        if let Some(d) = self.selected_detection().filter(|d| d.evidence == Evidence::Calls) {
            let title = format!("{} at event {}: the calls involved", d.detector, d.event);
            return Some(Calls::of_events(&d.events, timeline, &self.tape, title));
        }
        if !text_empty {
            return None;
        }
        let calls = self.request_calls(request, "tool calls of this request".into());
        (!calls.calls.is_empty()).then_some(calls)
    }
}

/// The highlights of one detection's evidence in a buffer of `len` chars.
pub fn evidence_marks(d: &Detection, len: usize, out: &mut Vec<Highlight>) {
    let spans = d.spans.iter().filter(|s| s.end <= len);
    // Copies shade alternately, the first marked: one span per copy, or
    // `n` spans (lines, sentences) per copy.
    let per_copy = match d.evidence {
        Evidence::Count | Evidence::Calls => return,
        Evidence::Occurrences => {
            for s in spans {
                out.push(Highlight {
                    span: *s,
                    mark: Mark::ChunkExtent,
                });
                out.push(Highlight {
                    span: Span::new(s.start, s.start + 1),
                    mark: Mark::ChunkStart,
                });
            }
            return;
        }
        Evidence::Copies => 1,
        Evidence::GroupedCopies(n) => n.max(1),
    };
    for (i, s) in spans.enumerate() {
        let mark = match i / per_copy {
            0 => Mark::CopyFirst,
            c if c % 2 == 1 => Mark::CopyA,
            _ => Mark::CopyB,
        };
        out.push(Highlight { span: *s, mark });
    }
}
