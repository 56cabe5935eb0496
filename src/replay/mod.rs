//! The replay clock: when each event of a recorded stream is shown, and
//! where playback is at a given moment. Nothing here reads the clock: every
//! call takes `now`, so replays are deterministic in tests.
//!
//! The sources of events live here too: [`feed`] reads a whole input or a
//! stream, or follows a file with [`follow`] as it is written.

pub mod feed;
pub mod follow;

use std::time::{Duration, Instant};

use loopscope_core::event::{Event, EventKind, Ts};

/// Playback speeds: ×0.25 … ×64, doubling.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 64.0;

/// How events are spaced when the log has no `ts`, and how long a pause may
/// last in playback.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacingRules {
    /// Characters per second for text events without `ts`.
    pub cps: f64,
    /// Seconds between two non-text events without `ts`.
    pub beat: f64,
    /// Longest gap played back; longer idle time is skipped (the stream
    /// time shown stays true).
    pub idle_limit: f64,
}

impl Default for PacingRules {
    fn default() -> PacingRules {
        PacingRules {
            cps: 300.0,
            beat: 0.2,
            idle_limit: 3.0,
        }
    }
}

/// Each event's time: `stream` as the log tells it (seconds since the
/// stream started), `play` with idle gaps capped, which is what the clock runs on.
#[derive(Clone, Debug, Default)]
pub struct Pacing {
    rules: PacingRules,
    stream: Vec<f64>,
    play: Vec<f64>,
    /// Unix seconds that clock-time `ts` values are measured from.
    clock_base: Option<f64>,
}

impl Pacing {
    pub fn new(rules: PacingRules) -> Pacing {
        Pacing {
            rules,
            ..Pacing::default()
        }
    }

    pub fn push(&mut self, event: &Event) {
        let (prev_stream, prev_play) = (
            self.stream.last().copied().unwrap_or(0.0),
            self.play.last().copied().unwrap_or(0.0),
        );
        let paced_gap = || match &event.kind {
            EventKind::Reasoning { text } | EventKind::Content { text } => text.chars().count() as f64 / self.rules.cps,
            _ => self.rules.beat,
        };
        let stamped = match &event.ts {
            Some(Ts::Seconds(s)) => Some(*s),
            Some(Ts::Clock { unix, .. }) => {
                // The first clock time is placed where the stream is now.
                let base = *self.clock_base.get_or_insert(unix - prev_stream);
                Some(unix - base)
            }
            None => None,
        };
        let (stream, gap) = match stamped {
            // Time never runs backwards, whatever the log says.
            Some(t) if self.stream.is_empty() => (t.max(0.0), t.clamp(0.0, self.rules.idle_limit)),
            Some(t) => {
                let t = t.max(prev_stream);
                (t, (t - prev_stream).min(self.rules.idle_limit))
            }
            None => {
                let g = if self.stream.is_empty() { 0.0 } else { paced_gap() };
                (prev_stream + g, g)
            }
        };
        self.stream.push(stream);
        self.play.push(prev_play + gap);
    }

    pub fn rules(&self) -> PacingRules {
        self.rules
    }

    pub fn len(&self) -> usize {
        self.play.len()
    }

    pub fn is_empty(&self) -> bool {
        self.play.is_empty()
    }

    /// Playback second at which event `i` is shown.
    pub fn play_time(&self, i: usize) -> f64 {
        self.play.get(i).copied().unwrap_or_else(|| self.duration())
    }

    /// The log's own time of event `i` (seconds since the stream started).
    pub fn stream_time(&self, i: usize) -> f64 {
        self.stream.get(i).copied().unwrap_or(0.0)
    }

    pub fn duration(&self) -> f64 {
        self.play.last().copied().unwrap_or(0.0)
    }

    pub fn stream_duration(&self) -> f64 {
        self.stream.last().copied().unwrap_or(0.0)
    }

    /// How many events are shown at playback second `t`.
    pub fn due_at(&self, t: f64) -> usize {
        self.play.partition_point(|&p| p <= t)
    }
}

/// Where playback is: a position in playback seconds that advances at
/// `speed` while playing.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    speed: f64,
    playing: bool,
    /// Position at `since`.
    at: f64,
    since: Instant,
}

impl Clock {
    pub fn new(now: Instant, speed: f64, playing: bool) -> Clock {
        Clock {
            speed: speed.clamp(MIN_SPEED, MAX_SPEED),
            playing,
            at: 0.0,
            since: now,
        }
    }

    pub fn position(&self, now: Instant) -> f64 {
        if self.playing {
            self.at + now.saturating_duration_since(self.since).as_secs_f64() * self.speed
        } else {
            self.at
        }
    }

    pub fn playing(&self) -> bool {
        self.playing
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    fn rebase(&mut self, now: Instant) {
        self.at = self.position(now);
        self.since = now;
    }

    pub fn set_playing(&mut self, playing: bool, now: Instant) {
        self.rebase(now);
        self.playing = playing;
    }

    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.rebase(now);
        self.speed = speed.clamp(MIN_SPEED, MAX_SPEED);
    }

    pub fn seek(&mut self, position: f64, now: Instant) {
        self.at = position.max(0.0);
        self.since = now;
    }

    /// The moment playback reaches `position`, if playing and not there yet.
    pub fn when(&self, position: f64, now: Instant) -> Option<Instant> {
        if !self.playing {
            return None;
        }
        let ahead = position - self.position(now);
        if ahead <= 0.0 {
            return Some(now);
        }
        Some(now + Duration::from_secs_f64(ahead / self.speed))
    }
}

/// Writes `events` as native JSONL at the pace they were recorded (`speed`
/// times faster), flushing each line, so another process can follow the
/// file as if an agent were writing it. `sleep` is given the time to wait.
pub fn write_paced(
    events: &[Event],
    rules: PacingRules,
    speed: f64,
    out: &mut dyn std::io::Write,
    mut sleep: impl FnMut(Duration),
) -> std::io::Result<()> {
    let mut pacing = Pacing::new(rules);
    let mut at = 0.0;
    for e in events {
        pacing.push(e);
        let t = pacing.play_time(pacing.len() - 1) / speed.max(0.01);
        if t > at {
            sleep(Duration::from_secs_f64(t - at));
            at = t;
        }
        writeln!(out, "{}", e.to_json())?;
        out.flush()?;
    }
    Ok(())
}

/// Doubles or halves a speed within the allowed range.
pub fn faster(speed: f64) -> f64 {
    (speed * 2.0).min(MAX_SPEED)
}

pub fn slower(speed: f64) -> f64 {
    (speed / 2.0).max(MIN_SPEED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(events: &[Event]) -> Pacing {
        let mut p = Pacing::new(PacingRules::default());
        events.iter().for_each(|e| p.push(e));
        p
    }

    #[test]
    fn ts_drives_the_times_and_idle_gaps_are_capped() {
        let p = pacing(&[
            Event::prompt("a").at(0.5),
            Event::reasoning("x").at(1.0),
            Event::reasoning("y").at(61.0),
            Event::reasoning("z").at(61.5),
        ]);
        assert_eq!(p.stream_time(2), 61.0);
        assert_eq!(p.play_time(0), 0.5);
        assert_eq!(p.play_time(2), 4.0, "a 60 s pause plays as 3 s");
        assert_eq!(p.play_time(3), 4.5);
        assert_eq!(p.due_at(4.0), 3);
        assert_eq!(p.due_at(0.4), 0);
    }

    #[test]
    fn events_without_ts_are_paced_by_characters() {
        let p = pacing(&[Event::request(), Event::reasoning(&"x".repeat(300)), Event::note("n")]);
        assert_eq!(p.play_time(1), 1.0);
        assert_eq!(p.play_time(2), 1.2);
    }

    #[test]
    fn clock_times_start_where_the_stream_is_and_never_run_backwards() {
        let at = |s: &str| {
            let mut e = Event::note("n");
            e.ts = Some(Ts::Clock {
                text: s.into(),
                unix: chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp() as f64,
            });
            e
        };
        let p = pacing(&[
            at("2025-01-01T00:00:10Z"),
            at("2025-01-01T00:00:12Z"),
            at("2025-01-01T00:00:11Z"),
        ]);
        assert_eq!((p.stream_time(0), p.stream_time(1), p.stream_time(2)), (0.0, 2.0, 2.0));
    }

    #[test]
    fn paced_writing_waits_between_lines() {
        let events = [
            Event::prompt("p").at(0.0),
            Event::note("a").at(1.0),
            Event::note("b").at(3.0),
        ];
        let mut out = Vec::new();
        let mut waits = Vec::new();
        write_paced(&events, PacingRules::default(), 2.0, &mut out, |d| waits.push(d)).unwrap();
        assert_eq!(waits, vec![Duration::from_millis(500), Duration::from_secs(1)]);
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3);
    }

    #[test]
    fn the_clock_runs_at_its_speed_only_while_playing() {
        let t0 = Instant::now();
        let mut c = Clock::new(t0, 1.0, true);
        let t1 = t0 + Duration::from_secs(2);
        assert_eq!(c.position(t1), 2.0);
        c.set_speed(4.0, t1);
        assert_eq!(c.position(t1 + Duration::from_secs(1)), 6.0);
        c.set_playing(false, t1 + Duration::from_secs(1));
        assert_eq!(c.position(t1 + Duration::from_secs(100)), 6.0);
        assert_eq!(c.when(7.0, t1), None);
        c.set_playing(true, t1);
        assert_eq!(c.when(10.0, t1), Some(t1 + Duration::from_secs(1)));
        assert_eq!((faster(64.0), slower(0.25), faster(1.0)), (64.0, 0.25, 2.0));
    }
}
