//! Runs a profile's detectors over a stream. [`Engine`] is fed events one by
//! one and can report every detector's state at any point; [`Tape`] keeps a
//! stream's events and seek snapshots so any position can be shown.
//!
//! `scan`, the TUI and `tail` all drive these two types, so a detection is
//! computed by one piece of code everywhere.

use crate::config::Setup;
use crate::detect::{Buffers, CheckpointRun, Detection, Detector, DetectorState, Kinds, Observation};
use crate::event::{Event, EventKind};
use crate::store::{EventStore, HOT_BUDGET};

#[derive(Clone)]
/// One setup's detectors over one stream, fed event by event.
///
/// ```
/// use loopscope_core::{Engine, Event, Profile, Setup};
///
/// let mut engine = Engine::new(&Setup::profile(Profile::Extended));
/// engine.push(&Event::request());
/// let mut found = Vec::new();
/// for _ in 0..40 {
///     found.extend(engine.push(&Event::reasoning("Wait, let me check the tests again. ")));
/// }
/// assert_eq!(engine.position(), 41);
/// assert!(found.iter().any(|d| d.detector == "text-loop"));
/// ```
pub struct Engine {
    detectors: Vec<Box<dyn Detector>>,
    /// What kinds of event each detector looks at (asked once).
    kinds: Vec<Kinds>,
    buffers: Buffers,
    /// Events applied so far (= the index of the next event).
    position: usize,
    /// Index of the `request`/`prompt` that started the current buffers.
    request_start: Option<usize>,
}

impl Engine {
    /// An engine at the start of a stream.
    pub fn new(setup: &Setup) -> Engine {
        let mut detectors = crate::detect::build_all(&setup.detectors);
        if let Some(encoder) = &setup.tokenizer {
            for d in &mut detectors {
                d.use_encoder(encoder);
            }
        }
        Engine {
            kinds: detectors.iter().map(|d| d.kinds()).collect(),
            detectors,
            buffers: Buffers::default(),
            position: 0,
            request_start: None,
        }
    }

    /// Applies the next event; returns the detections it caused.
    pub fn push(&mut self, event: &Event) -> Vec<Detection> {
        let index = self.position;
        self.position += 1;
        match &event.kind {
            EventKind::Prompt { .. } | EventKind::Request { .. } => {
                self.buffers.reasoning.clear();
                self.buffers.content.clear();
                self.request_start = Some(index);
            }
            _ => {}
        }
        let reasoning_before = self.buffers.reasoning.len();
        let content_before = self.buffers.content.len();
        match &event.kind {
            EventKind::Reasoning { text } => self.buffers.reasoning.push_str(text),
            EventKind::Content { text } => self.buffers.content.push_str(text),
            _ => {}
        }
        let obs = Observation::new(index, event, &self.buffers, reasoning_before, content_before);
        let mut found = Vec::new();
        let kind = Kinds::of(&event.kind);
        for (det, kinds) in self.detectors.iter_mut().zip(&self.kinds) {
            if kinds.meets(kind) {
                det.observe(&obs, &mut found);
            }
        }
        // gemini-cli's two checks are one service with one "loop detected" flag.
        for d in &found {
            let shares = self.detectors.iter().any(|x| x.id() == d.detector && x.shares_latch());
            if shares {
                for other in self
                    .detectors
                    .iter_mut()
                    .filter(|x| x.shares_latch() && x.id() != d.detector)
                {
                    other.latch(d.detector, index);
                }
            }
        }
        found
    }

    /// Moves past `n` events the detectors are not to see (events the
    /// caller recorded and then took back from the detectors, as
    /// `loopscope record --guard` does with a response it ended), so later
    /// events keep the indexes they have in the stream.
    pub fn skip(&mut self, n: usize) {
        self.position += n;
    }

    /// Lets every detector drop what it can work out again (see
    /// [`crate::detect::Detector::compact`]): `watch` does it to a quiet session.
    pub fn compact(&mut self) {
        for d in &mut self.detectors {
            d.compact();
        }
    }

    /// The stream has ended: what the detectors that check once more at
    /// the end find, at index [`Engine::position`] (one past the last event).
    /// The engine is at its end afterwards: nothing more should be pushed.
    pub fn finish(&mut self) -> Vec<Detection> {
        let mut found = Vec::new();
        for d in &mut self.detectors {
            d.finish(self.position, &mut found);
        }
        found
    }

    /// What kept a detector from running exactly, one line each (see
    /// [`crate::detect::Detector::caveat`]).
    pub fn caveats(&self) -> Vec<String> {
        self.detectors.iter().filter_map(|d| d.caveat()).collect()
    }

    /// Events applied so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The current request's text buffers.
    pub fn buffers(&self) -> &Buffers {
        &self.buffers
    }

    /// The index of the prompt or request that started the current buffers.
    pub fn request_start(&self) -> Option<usize> {
        self.request_start
    }

    /// Every detector's status now, in profile order.
    pub fn states(&self) -> Vec<DetectorState> {
        self.detectors.iter().flat_map(|d| d.states(&self.buffers)).collect()
    }

    /// How many checkpoint runs the current request has had (cheap to ask).
    pub(crate) fn checkpoint_run_count(&self) -> usize {
        self.detectors.iter().map(|d| d.checkpoint_runs().len()).sum()
    }

    /// What ran at each checkpoint of the current request, by checkpoint.
    pub fn checkpoint_runs(&self) -> Vec<CheckpointRun> {
        let mut runs: Vec<CheckpointRun> = self
            .detectors
            .iter()
            .flat_map(|d| d.checkpoint_runs().iter().cloned())
            .collect();
        runs.sort_by_key(|r| r.checkpoint); // stable: detectors keep profile order
        runs
    }
}

/// How much work (text bytes, plus a fixed cost per event) may pass between
/// two seek snapshots. Seeking replays at most this much.
const SNAPSHOT_WORK: usize = 256 * 1024;
/// The most seek snapshots kept; past it they are thinned (see `push`).
const MAX_SNAPSHOTS: usize = 128;
const EVENT_WORK: usize = 64;

/// One setup's engine run over a tape's events: the head engine that has
/// seen every event so far, seek snapshots, and the engine at the position
/// being shown. Engine clones share the buffers' text, so a snapshot costs
/// little more than the detectors' state.
struct Run {
    head: Engine,
    snapshots: Vec<Engine>,
    work: usize,
    /// Work between two snapshots: doubles whenever they are thinned.
    snapshot_work: usize,
    cursor: Engine,
}

impl Run {
    fn new(setup: &Setup) -> Run {
        let fresh = Engine::new(setup);
        Run {
            head: fresh.clone(),
            snapshots: vec![fresh.clone()],
            work: 0,
            snapshot_work: SNAPSHOT_WORK,
            cursor: fresh,
        }
    }

    /// Applies the next event to the head; returns its detections and the
    /// checkpoints that ran at it.
    fn push(&mut self, event: &Event) -> (Vec<Detection>, Vec<usize>) {
        if self.work >= self.snapshot_work {
            self.snapshots.push(self.head.clone());
            self.work = 0;
            if self.snapshots.len() > MAX_SNAPSHOTS {
                // Thin out: every other snapshot goes and the spacing
                // doubles, so a long log keeps a bounded number of them and
                // a seek replays at most twice the spacing.
                let mut i = 0;
                self.snapshots.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.snapshot_work *= 2;
            }
        }
        self.work += work_of(event);
        let index = self.head.position();
        let runs_before = self.head.checkpoint_run_count();
        let found = self.head.push(event);
        let mut here = Vec::new();
        if self.head.checkpoint_run_count() > runs_before {
            here = self
                .head
                .checkpoint_runs()
                .iter()
                .filter(|r| r.event == index)
                .map(|r| r.checkpoint)
                .collect();
            here.dedup();
        }
        (found, here)
    }

    fn seek(&mut self, events: &EventStore, position: usize) -> &Engine {
        if position == self.head.position() {
            // At the live end the head is the answer; no replay needed.
            self.cursor = self.head.clone();
            return &self.cursor;
        }
        let snap = self.snapshots.partition_point(|s| s.position() <= position) - 1;
        let from_snapshot = self.snapshots[snap].position();
        let cursor_at = self.cursor.position();
        if !(from_snapshot..=position).contains(&cursor_at) {
            self.cursor = self.snapshots[snap].clone();
        }
        let cursor = &mut self.cursor;
        events.for_each(cursor.position(), position, |e| {
            cursor.push(e);
        });
        &self.cursor
    }
}

/// What an event costs the detectors, roughly: its text plus a fixed part.
fn work_of(event: &Event) -> usize {
    EVENT_WORK
        + match &event.kind {
            EventKind::Reasoning { text } | EventKind::Content { text } => text.len(),
            _ => 0,
        }
}

/// A stream's events with one engine run per setup over all of them,
/// seekable. The first setup's run is the one shown (buffers, checkpoints);
/// the others are compared with it. Every run's detections are merged in
/// (event, run) order, each tagged with its run.
///
/// Changing the setups re-runs the stored events ([`Tape::rerun`]): up to a
/// position at once, the rest in slices ([`Tape::resume`]), so a long
/// stream answers at once where the user is looking.
///
/// ```
/// use loopscope_core::{Event, Profile, Setup, Tape};
///
/// let mut events = vec![Event::request()];
/// events.extend((0..40).map(|_| Event::reasoning("Wait, let me check the tests again. ")));
/// let mut tape = Tape::with_events(&Setup::profile(Profile::Extended), events);
/// assert_eq!(tape.len(), 41);
/// let first = tape.detections()[0].event;
/// // Back to just before the first detection: the engine as it was then.
/// assert!(tape.seek(first).states().iter().all(|s| s.status.label() != "FIRED"));
/// ```
pub struct Tape {
    events: EventStore,
    setups: Vec<Setup>,
    runs: Vec<Run>,
    detections: Vec<Detection>,
    /// (event, checkpoint) of every event at which a checkpoint of the first run ran.
    checkpoints: Vec<(usize, usize)>,
}

impl Tape {
    /// An empty tape running `setup`.
    pub fn new(setup: &Setup) -> Tape {
        Tape::compare(std::slice::from_ref(setup))
    }

    /// A tape that runs every one of `setups` (at least one) over its events.
    pub fn compare(setups: &[Setup]) -> Tape {
        assert!(!setups.is_empty(), "a tape runs at least one setup");
        Tape {
            events: EventStore::default(),
            setups: setups.to_vec(),
            runs: setups.iter().map(Run::new).collect(),
            detections: Vec::new(),
            checkpoints: Vec::new(),
        }
    }

    /// The same empty tape, its store spooling at most `bytes` to its
    /// temporary file (`--max-spool`; [`DEFAULT_MAX_SPOOL`](crate::store::DEFAULT_MAX_SPOOL)
    /// unless set): past it the stream is cut ([`Tape::cut`]).
    ///
    /// ```
    /// use loopscope_core::{Profile, Setup, Tape};
    ///
    /// let tape = Tape::new(&Setup::profile(Profile::Seed)).with_max_spool(64 << 20);
    /// assert_eq!(tape.max_spool(), 64 << 20);
    /// ```
    pub fn with_max_spool(mut self, bytes: u64) -> Tape {
        assert!(self.events.is_empty(), "the spool limit is set before any event");
        self.events = EventStore::with_limits(HOT_BUDGET, bytes);
        self
    }

    /// The most bytes its store spools ([`Tape::with_max_spool`]).
    pub fn max_spool(&self) -> u64 {
        self.events.max_spool()
    }

    /// A tape holding `events`, run by `setup`.
    pub fn with_events(setup: &Setup, events: Vec<Event>) -> Tape {
        let mut tape = Tape::new(setup);
        for e in events {
            tape.push(e);
        }
        tape
    }

    /// Appends an event (a live stream grows); returns its detections (none
    /// while a re-run is still catching up: it finds them when it gets there).
    /// Once the store is cut (its spool limit), events are not taken: the
    /// stream ends there, detectors included.
    pub fn push(&mut self, event: Event) -> &[Detection] {
        let from = self.detections.len();
        if self.events.cut().is_some() {
            return &[];
        }
        if !self.pending() {
            self.apply(&event);
        }
        self.events.push(event);
        &self.detections[from..]
    }

    /// Where the stream was cut because its spool could take no more (see
    /// [`crate::store`]), and why.
    pub fn cut(&self) -> Option<&crate::store::Cut> {
        self.events.cut()
    }

    /// Runs the next event through every run.
    fn apply(&mut self, event: &Event) {
        let index = self.runs[0].head.position();
        for (k, run) in self.runs.iter_mut().enumerate() {
            let (found, checkpoints) = run.push(event);
            if k == 0 {
                self.checkpoints.extend(checkpoints.into_iter().map(|c| (index, c)));
            }
            self.detections.extend(found.into_iter().map(|mut d| {
                d.run = k;
                d
            }));
        }
    }

    /// The setups run, the shown one first.
    pub fn setups(&self) -> &[Setup] {
        &self.setups
    }

    /// Runs `setups` instead, over the same events: the first `upto` events
    /// at once, the rest by [`Tape::resume`].
    pub fn rerun(&mut self, setups: &[Setup], upto: usize) {
        assert!(!setups.is_empty(), "a tape runs at least one setup");
        self.setups = setups.to_vec();
        self.runs = setups.iter().map(Run::new).collect();
        self.detections.clear();
        self.checkpoints.clear();
        self.replay_until(|tape| tape.runs[0].head.position() >= upto);
    }

    /// Some stored events are not run yet (a re-run is catching up).
    pub fn pending(&self) -> bool {
        self.runs[0].head.position() < self.events.len()
    }

    /// Runs stored events not run yet, about `budget` bytes of work of
    /// them; true while some are left.
    pub fn resume(&mut self, budget: usize) -> bool {
        let mut done = 0;
        self.replay_until(|tape| {
            let stop = done >= budget;
            if let Some(e) = tape.events.get(tape.runs[0].head.position()) {
                done += work_of(&e);
            }
            stop
        });
        self.pending()
    }

    fn replay_until(&mut self, mut stop: impl FnMut(&Tape) -> bool) {
        while self.pending() && !stop(self) {
            let at = self.runs[0].head.position();
            let Some(event) = self.events.get(at) else { break };
            self.apply(&event);
        }
    }

    /// How many blocks of events were written to the spool file, and how
    /// many seek snapshots the shown run keeps.
    pub fn storage(&self) -> (usize, usize) {
        (self.events.spooled_blocks(), self.runs[0].snapshots.len())
    }

    /// Event `i` of the stream (read back from disk for a long one).
    pub fn event(&self, i: usize) -> Option<Event> {
        self.events.get(i)
    }

    /// Calls `f` on events `from..to` in order (read back from disk as needed).
    pub fn for_each_event(&self, from: usize, to: usize, f: impl FnMut(&Event)) {
        self.events.for_each(from, to.min(self.events.len()), f);
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether it holds no event.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Every run's detections, in (event, run) order.
    pub fn detections(&self) -> &[Detection] {
        &self.detections
    }

    /// Calls `f(i, event, its detections)` on every event in order: the one
    /// walk the views built from the whole stream share.
    pub fn for_each_with_detections(&self, mut f: impl FnMut(usize, &Event, &[Detection])) {
        let (mut next, mut i) = (0, 0);
        self.for_each_event(0, self.len(), |e| {
            let from = next;
            while next < self.detections.len() && self.detections[next].event == i {
                next += 1;
            }
            f(i, e, &self.detections[from..next]);
            i += 1;
        });
    }

    /// Every run's configured detectors, run by run (the rows of the
    /// detectors pane).
    pub fn configured(&self) -> Vec<crate::detect::Configured> {
        self.setups().iter().flat_map(|s| s.detectors.iter().cloned()).collect()
    }

    /// (event, checkpoint) for every checkpoint run of the stream, in order.
    pub fn checkpoint_events(&self) -> &[(usize, usize)] {
        &self.checkpoints
    }

    /// Detections at events before `position`.
    pub fn detections_before(&self, position: usize) -> &[Detection] {
        let n = self.detections.partition_point(|d| d.event < position);
        &self.detections[..n]
    }

    /// Every run's engine after the first `position` events (clamped to
    /// what has been run); returns the shown run's.
    pub fn seek(&mut self, position: usize) -> &Engine {
        let position = position.min(self.runs[0].head.position());
        let events = &self.events;
        for run in self.runs.iter_mut().skip(1) {
            run.seek(events, position);
        }
        self.runs[0].seek(events, position)
    }

    /// The shown run's engine at the last position sought.
    pub fn cursor(&self) -> &Engine {
        &self.runs[0].cursor
    }

    /// Run `k`'s engine at the last position sought.
    pub fn run_cursor(&self, k: usize) -> Option<&Engine> {
        self.runs.get(k).map(|r| &r.cursor)
    }

    /// The shown run's engine after every event run so far.
    pub fn head(&self) -> &Engine {
        &self.runs[0].head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::{Kinds, Profile};
    use crate::event::{Event, EventKind};

    /// A mixed stream: every kind of event, calls repeating and results
    /// failing often enough that tool detectors fire, text that chants.
    fn stream(seed: u64, n: usize) -> Vec<Event> {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        (0..n)
            .map(|_| match next(40) {
                0 => Event::prompt("go"),
                1..=3 => Event::request(),
                4..=13 => Event::reasoning(["I will check it again. ", "思考 ", "Let me see. "][next(3) as usize]),
                14..=23 => {
                    Event::content(["The answer is here 🙂 ", "* item\n", "same words again "][next(3) as usize])
                }
                24..=31 => Event::tool_call(["ls", "read"][next(2) as usize], serde_json::json!({"p": next(2)})),
                32..=36 => Event::tool_result(next(3) != 0),
                37 => Event::new(EventKind::LoopCheck {
                    confidence: Some(next(100) as f64 / 100.0),
                    analysis: None,
                    detector: None,
                    model: None,
                    stage: None,
                }),
                _ => Event::note("n"),
            })
            .collect()
    }

    #[test]
    fn handing_detectors_only_their_kinds_changes_nothing() {
        for profile in Profile::ALL {
            let setup = Setup::profile(profile);
            let mut every = Engine::new(&setup);
            every.kinds = vec![Kinds::ALL; every.detectors.len()];
            let mut only = Engine::new(&setup);
            assert!(only.kinds.iter().any(|&k| k != Kinds::ALL) || profile != Profile::Seed);
            let mut fired = 0;
            for (i, e) in stream(profile as u64 + 3, 3000).iter().enumerate() {
                let (a, b) = (every.push(e), only.push(e));
                fired += a.len();
                assert_eq!(a, b, "{profile:?} event {i}");
                assert_eq!(
                    format!("{:?}", every.states()),
                    format!("{:?}", only.states()),
                    "{profile:?} event {i}"
                );
            }
            if matches!(profile, Profile::Seed | Profile::GeminiCli) {
                assert!(fired > 0, "{profile:?}: something fires");
            }
        }
    }
}
