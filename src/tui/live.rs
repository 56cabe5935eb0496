//! Following a stream that is still being written (`tail`): whether the
//! view stays at the newest event, the followed file's condition, and the
//! live detections' badge.

use std::time::{Duration, Instant};

use super::app::App;
use crate::replay::follow::FileNews;
use crate::replay::Pacing;
use loopscope_core::engine::Tape;

/// How `tail` follows.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// Replay what the file already holds at playback pace, then follow.
    /// Otherwise that content is fed to the detectors at once and the view
    /// starts at the end, so their state is right from the first new event.
    pub from_start: bool,
    pub bell: bool,
    pub on_detect: Option<String>,
    /// The followed session's part in `--otlp` and `--metrics`.
    pub link: Option<crate::telemetry::SharedLink>,
}

/// No data for this long while following: say "waiting for data".
pub const IDLE_AFTER: Duration = Duration::from_secs(3);

/// The state of a live source.
#[derive(Clone, Debug)]
pub struct Live {
    /// The view stays at the newest event. Pausing, scrolling up or
    /// browsing stops it; `G`, `F` or space bring it back.
    pub following: bool,
    /// The content that existed when following began has been read.
    pub caught_up: bool,
    pub from_start: bool,
    /// A standing condition of the file (waiting for it, deleted).
    pub file: Option<FileNews>,
    pub last_data: Instant,
    /// No data for a while.
    pub idle: bool,
    pub input_ended: bool,
    /// Detections that arrived live (after catching up); the newest is
    /// the app's badge.
    pub fired: usize,
}

impl App {
    /// Live and staying at the newest event.
    pub fn following(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.following)
    }

    /// Live: go back to the newest event and stay there.
    pub fn follow(&mut self, now: Instant) {
        if let Some(live) = self.live.as_mut() {
            live.following = true;
            self.panes.buffer.scroll.follow = true;
            self.clock.set_playing(false, now);
            self.jump_to(self.tape.len(), now);
        }
    }

    /// Live: stop at the shown event; reading goes on.
    pub fn stop_following(&mut self) {
        if let Some(live) = self.live.as_mut() {
            live.following = false;
        }
    }

    /// The file started over (truncated), or another session is followed:
    /// a new stream from its first event, with nothing of the old one's
    /// counts (FIRED n, bad lines) left standing.
    pub fn restart(&mut self, now: Instant) {
        if let Some(live) = self.live.as_mut() {
            live.fired = 0;
        }
        self.badge = None;
        self.problems.clear();
        self.bad_lines = 0;
        self.problems_seen = 0;
        self.tape = Tape::compare(self.tape.setups()).with_max_spool(self.tape.max_spool());
        self.pacing = Pacing::new(self.pacing.rules());
        self.panes.timeline.clear();
        self.cursor = 0;
        self.chosen = None;
        self.panes.buffer.scroll = Default::default();
        self.search.set(self.search.pattern.clone(), &self.tape);
        self.clock.seek(0.0, now);
        self.refresh();
    }

    /// Live: the content that was there at the start has been read.
    pub fn caught_up(&mut self, now: Instant) {
        if let Some(live) = self.live.as_mut() {
            live.caught_up = true;
            self.loading = false;
            if live.following {
                self.jump_to(self.tape.len(), now);
            }
        }
    }

    /// Live: what happened to the followed file.
    pub fn file_news(&mut self, news: FileNews, now: Instant) {
        let text = crate::tail::describe(&news, &self.name);
        if news == FileNews::Truncated {
            self.restart(now);
        }
        if let FileNews::Switched(path) = &news {
            // Another session: a new stream, named in the status line, its
            // start marked in the timeline.
            self.restart(now);
            self.name = path.display().to_string();
            self.panes.timeline.push_note(0, text.clone());
            if let Some(live) = self.live.as_mut() {
                live.following = true;
            }
        }
        let standing = matches!(news, FileNews::Waiting | FileNews::Deleted | FileNews::NoSession(_));
        if let Some(live) = self.live.as_mut() {
            live.file = standing.then_some(news);
        }
        // A standing condition stays in the status line; one-off news flashes.
        if !standing {
            self.flash(text, now);
        }
    }
}
