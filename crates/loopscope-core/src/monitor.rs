//! The library's front door: a [`Monitor`] runs one setup's detectors over
//! one stream as it arrives (events, or the bytes of any supported log),
//! and [`scan`] runs them over a whole input. Both drive the same
//! [`Engine`] that `loopscope scan`, `tail` and the viewer use, so a
//! detection here is the detection the command line prints.
//!
//! ```
//! use loopscope_core::{setup, Event, Monitor};
//!
//! let setup = setup("extended", &[], &[("text-loop.copies", "4")]).unwrap();
//! let mut monitor = Monitor::new(&setup);
//! monitor.push(&Event::request());
//! let mut fired = Vec::new();
//! for _ in 0..40 {
//!     fired.extend_from_slice(monitor.push(&Event::reasoning("Wait, let me check the tests again. ")));
//! }
//! assert_eq!(fired[0].detector, "text-loop");
//! ```

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::config::Setup;
use crate::detect::{Detection, DetectorState, Profile};
use crate::engine::Engine;
use crate::error::{io_kind, Error, ErrorKind};
use crate::event::Event;
use crate::formats::detect::AutoDecoder;
use crate::formats::{self, Decoder, Format, Item, Problem, ReadOptions};

/// Builds a setup as the command line does from `--profile`, `--detectors`
/// and `--set`, without reading any config file: `detectors` empty keeps
/// every detector the profile runs; each override is an `ID.PARAM` and
/// its value as `--set` takes it (`("text-loop.copies", "4")`).
///
/// ```
/// use loopscope_core::{setup, ErrorKind};
///
/// let s = setup("extended", &["text-loop", "tool-loop"], &[("text-loop.copies", "4")]).unwrap();
/// assert_eq!(s.ids(), vec!["text-loop", "tool-loop"]);
/// assert_eq!(setup("nope", &[], &[]).unwrap_err().kind(), ErrorKind::UnknownProfile);
/// ```
pub fn setup(profile: &str, detectors: &[&str], overrides: &[(&str, &str)]) -> Result<Setup, Error> {
    let p = Profile::from_name(profile).ok_or_else(|| crate::config::unknown_profile(profile))?;
    let mut setup = Setup::profile(p);
    if !detectors.is_empty() {
        let ids: Vec<String> = detectors.iter().map(|d| d.to_string()).collect();
        setup.select(&ids)?;
    }
    for (target, value) in overrides {
        setup.apply_set(&format!("{target}={value}"))?;
    }
    Ok(setup)
}

/// One setup's detectors over one stream, fed as it arrives.
///
/// Each `push` returns the detections that event caused (usually none);
/// [`Monitor::detections`] keeps them all. Memory holds the detectors'
/// state for the current request, never the stream.
///
/// ```
/// use loopscope_core::{setup, FormatChoice, Monitor};
///
/// // Bytes of a log as they arrive (split anywhere), in any supported format.
/// let mut monitor = Monitor::new(&setup("extended", &[], &[]).unwrap());
/// let mut log = String::from("{\"type\":\"request\"}\n");
/// for _ in 0..40 {
///     log += "{\"type\":\"reasoning\",\"text\":\"Wait, let me check the tests again. \"}\n";
/// }
/// for piece in log.as_bytes().chunks(100) {
///     monitor.feed(piece, FormatChoice::Auto);
/// }
/// monitor.finish();
/// assert_eq!(monitor.events(), 41);
/// assert_eq!(monitor.detections()[0].detector, "text-loop");
/// ```
#[derive(Clone)]
pub struct Monitor {
    engine: Engine,
    detections: Vec<Detection>,
    problems: Vec<Problem>,
    /// Records of kinds the importer does not know (one problem per kind).
    unknown: crate::formats::drift::UnknownKinds,
    /// Bytes given to [`Monitor::feed`] go through this importer.
    decoder: Option<FedDecoder>,
}

/// [`AutoDecoder`] is not `Clone`; a cloned monitor starts a fresh importer
/// only if it is fed bytes, which [`Monitor::clone`] documents.
struct FedDecoder(AutoDecoder, ReadOptions);

impl FedDecoder {
    fn new(read: ReadOptions) -> FedDecoder {
        let mut decoder = AutoDecoder::new(read.format, None);
        decoder.set_max_record(read.max_record);
        FedDecoder(decoder, read)
    }
}

impl Clone for FedDecoder {
    fn clone(&self) -> FedDecoder {
        FedDecoder::new(self.1)
    }
}

impl Monitor {
    /// A monitor running `setup`'s detectors from the start of a stream.
    pub fn new(setup: &Setup) -> Monitor {
        Monitor {
            engine: Engine::new(setup),
            detections: Vec::new(),
            problems: Vec::new(),
            unknown: Default::default(),
            decoder: None,
        }
    }

    /// Applies the next event; returns the detections it caused.
    pub fn push(&mut self, event: &Event) -> &[Detection] {
        let start = self.detections.len();
        let found = self.engine.push(event);
        self.detections.extend(found);
        &self.detections[start..]
    }

    /// Applies an event given as a native JSON object
    /// (`{"type": "reasoning", "text": "…"}`, log-format.md); an object
    /// that is not an event is an [`ErrorKind::Malformed`] error.
    pub fn push_json(&mut self, value: Value) -> Result<&[Detection], Error> {
        let parsed = Event::from_json(value).map_err(|e| e.prefixed("not an event: "))?;
        Ok(self.push(&parsed.event))
    }

    /// Feeds the next bytes of a log in any supported format (detected
    /// from the first bytes unless `read` names one: a [`FormatChoice`](crate::FormatChoice) or
    /// [`ReadOptions`]; later calls keep the first call's choice). Records
    /// split across calls are joined; problems (a bad line, one longer than
    /// the record limit) are kept in [`Monitor::problems`]. Returns the
    /// detections these bytes caused.
    pub fn feed(&mut self, bytes: &[u8], read: impl Into<ReadOptions>) -> &[Detection] {
        let start = self.detections.len();
        let mut items = Vec::new();
        let decoder = self.decoder.get_or_insert_with(|| FedDecoder::new(read.into()));
        decoder.0.feed(bytes, &mut items);
        self.take(items);
        &self.detections[start..]
    }

    /// The fed log ended: a last record without its line end is read too.
    pub fn finish(&mut self) -> &[Detection] {
        let start = self.detections.len();
        let mut items = Vec::new();
        if let Some(d) = self.decoder.as_mut() {
            d.0.finish(&mut items);
        }
        self.take(items);
        &self.detections[start..]
    }

    fn take(&mut self, items: Vec<Item>) {
        for item in items {
            match item {
                Item::Event(event, _) => {
                    let found = self.engine.push(&event);
                    self.detections.extend(found);
                }
                Item::Problem(p) => self.problems.push(p),
                Item::Unknown(u) => {
                    if self.unknown.add(&u) {
                        self.problems.push(u.problem());
                    }
                }
            }
        }
    }

    /// Every detector's status now (idle, watching with its count, clear
    /// with its near miss, fired), in profile order.
    pub fn states(&self) -> Vec<DetectorState> {
        self.engine.states()
    }

    /// Every detection so far, in stream order.
    pub fn detections(&self) -> &[Detection] {
        &self.detections
    }

    /// What was wrong in the fed bytes (bad lines), in order.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Events applied so far (the index the next event will have).
    pub fn events(&self) -> usize {
        self.engine.position()
    }

    /// The importer reading the fed bytes, once it is known.
    pub fn format(&self) -> Option<Format> {
        self.decoder.as_ref().and_then(|d| d.0.format())
    }

    /// The engine underneath, for what the monitor does not wrap
    /// (checkpoint runs, the current buffers).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// What [`scan`] found in one input.
///
/// ```
/// use loopscope_core::{scan, setup, Format, FormatChoice};
///
/// let log = "{\"type\":\"request\"}\nnot json\n";
/// let found = scan(std::io::Cursor::new(log), FormatChoice::Auto, None, &setup("seed", &[], &[]).unwrap()).unwrap();
/// assert_eq!((found.events, found.format), (1, Some(Format::Native)));
/// assert_eq!(found.problems[0].line, 2);
/// assert!(found.detections.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Scanned {
    /// Every detection, in stream order (as `loopscope scan --json`).
    pub detections: Vec<Detection>,
    /// Bad or partly readable records, with their line numbers (and the
    /// first record of each kind the importer does not know).
    pub problems: Vec<Problem>,
    /// Records of kinds the importer does not know, by kind.
    pub unknown: crate::formats::drift::UnknownKinds,
    /// Events read.
    pub events: usize,
    /// The importer that read it.
    pub format: Option<Format>,
}

/// Runs `setup`'s detectors over a whole input read from `reader`, in any
/// supported format (compressed Codex rollouts included); `hint` is the
/// file name, which breaks ties between formats. The same result as
/// `loopscope scan --json` on that input.
///
/// ```
/// use loopscope_core::{scan, setup, FormatChoice};
///
/// let mut log = String::from("{\"type\":\"request\"}\n");
/// for _ in 0..40 {
///     log += "{\"type\":\"reasoning\",\"text\":\"Wait, let me check the tests again. \"}\n";
/// }
/// let s = setup("extended", &[], &[]).unwrap();
/// let found = scan(std::io::Cursor::new(log), FormatChoice::Auto, Some("session.jsonl"), &s).unwrap();
/// for d in &found.detections {
///     println!("{} at event {}: {}", d.detector, d.event, d.reason);
/// }
/// assert!(!found.detections.is_empty());
/// ```
pub fn scan(
    reader: impl Read + Send + 'static,
    read: impl Into<ReadOptions>,
    hint: Option<&str>,
    setup: &Setup,
) -> Result<Scanned, Error> {
    scan_until(reader, read, hint, setup, &mut |_| false)
}

/// [`scan`], asking `stop` now and then whether to stop (a caller's
/// interrupt: Python's Ctrl-C). `stop` is asked at least every 64 KiB read
/// and whenever a read was interrupted by a signal (its argument is then
/// true); once it says yes the scan ends with what it found so far.
///
/// ```
/// use loopscope_core::{scan_until, setup, ErrorKind, FormatChoice};
///
/// let s = setup("seed", &[], &[]).unwrap();
/// let log = std::io::Cursor::new("{\"type\":\"request\"}\n");
/// let stopped = scan_until(log, FormatChoice::Auto, None, &s, &mut |_interrupted| true);
/// assert_eq!(stopped.unwrap_err().kind(), ErrorKind::Stopped);
/// ```
pub fn scan_until(
    reader: impl Read + Send + 'static,
    read: impl Into<ReadOptions>,
    hint: Option<&str>,
    setup: &Setup,
    stop: &mut dyn FnMut(bool) -> bool,
) -> Result<Scanned, Error> {
    let opened = formats::detect::open_reader(Box::new(reader), read, hint)?;
    scan_opened(opened, setup, stop)
}

/// [`scan`] of a file (`-` is standard input; a Cline/Roo task folder is
/// read as its session file).
///
/// ```
/// use loopscope_core::{scan_path, setup, ErrorKind, FormatChoice};
///
/// let path = std::env::temp_dir().join(format!("loopscope-doc-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"type\":\"request\"}\n{\"type\":\"content\",\"text\":\"Done.\"}\n").unwrap();
/// let found = scan_path(&path, FormatChoice::Auto, &setup("seed", &[], &[]).unwrap()).unwrap();
/// std::fs::remove_file(&path).unwrap();
/// assert_eq!(found.events, 2);
/// let missing = scan_path(&path, FormatChoice::Auto, &setup("seed", &[], &[]).unwrap());
/// assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
/// ```
pub fn scan_path(path: &Path, read: impl Into<ReadOptions>, setup: &Setup) -> Result<Scanned, Error> {
    scan_path_until(path, read, setup, &mut |_| false)
}

/// [`scan_path`], asking `stop` as [`scan_until`] does.
///
/// ```
/// use std::time::{Duration, Instant};
/// use loopscope_core::{scan_path_until, setup, FormatChoice};
///
/// // At most a second of work, however large the file.
/// let deadline = Instant::now() + Duration::from_secs(1);
/// let path = std::env::temp_dir().join(format!("loopscope-doc-until-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"type\":\"request\"}\n").unwrap();
/// let s = setup("seed", &[], &[]).unwrap();
/// let found = scan_path_until(&path, FormatChoice::Auto, &s, &mut |_| Instant::now() > deadline);
/// std::fs::remove_file(&path).unwrap();
/// assert_eq!(found.unwrap().events, 1);
/// ```
pub fn scan_path_until(
    path: &Path,
    read: impl Into<ReadOptions>,
    setup: &Setup,
    stop: &mut dyn FnMut(bool) -> bool,
) -> Result<Scanned, Error> {
    let opened = formats::open_input(path, read)?;
    scan_opened(opened, setup, stop)
}

/// A reader that asks `stop` before each read, and again when a read was
/// interrupted by a signal (then at once: that is how Ctrl-C arrives while
/// a read waits on a pipe).
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a mut dyn FnMut(bool) -> bool,
}

impl<R: Read> Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.stop)(false) {
            return Err(std::io::Error::other(StopAsked));
        }
        match self.inner.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted && (self.stop)(true) => {
                Err(std::io::Error::other(StopAsked))
            }
            r => r,
        }
    }
}

/// The read error a [`Stoppable`] gives once told to stop: known by its
/// type, not its words.
#[derive(Debug)]
struct StopAsked;

impl std::fmt::Display for StopAsked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped")
    }
}

impl std::error::Error for StopAsked {}

fn scan_opened(
    mut opened: formats::Opened,
    setup: &Setup,
    stop: &mut dyn FnMut(bool) -> bool,
) -> Result<Scanned, Error> {
    let forced = opened.forced_check();
    let mut engine = Engine::new(setup);
    let mut out = Scanned {
        format: Some(opened.format),
        ..Scanned::default()
    };
    let mut stream_events = 0;
    let reader = Stoppable {
        inner: opened.reader,
        stop,
    };
    formats::decode_all(reader, &mut *opened.decoder, |item| match item {
        Item::Event(event, _) => {
            out.events += 1;
            stream_events += usize::from(formats::carries_stream(&event));
            out.detections.extend(engine.push(&event));
        }
        Item::Problem(p) => out.problems.push(p),
        Item::Unknown(u) => {
            if out.unknown.add(&u) {
                out.problems.push(u.problem());
            }
        }
    })
    .map_err(|e| {
        if e.get_ref().is_some_and(|inner| inner.is::<StopAsked>()) {
            Error::new(ErrorKind::Stopped, "stopped")
        } else {
            Error::new(io_kind(&e), crate::io_reason(&e))
        }
    })?;
    forced.check(stream_events)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FormatChoice;

    fn looping(unit: &str, n: usize) -> String {
        let mut s = String::from("{\"type\":\"request\"}\n");
        for _ in 0..n {
            s.push_str(&serde_json::json!({"type": "reasoning", "text": unit}).to_string());
            s.push('\n');
        }
        s
    }

    #[test]
    fn a_scan_asks_whether_to_stop_between_reads_and_stops_when_told() {
        let setup = setup("extended", &[], &[]).unwrap();
        // 2 MB of input: read 64 KiB at a time, the question comes between reads.
        let log = looping("Wait, let me check the tests again. ", 40_000);
        let mut asked = 0;
        let whole = scan_until(
            std::io::Cursor::new(log.clone().into_bytes()),
            FormatChoice::Auto,
            None,
            &setup,
            &mut |_| {
                asked += 1;
                false
            },
        )
        .unwrap();
        assert!(asked > log.len() / (64 << 10), "asked {asked} times");
        let mut left = 3;
        let stopped = scan_until(
            std::io::Cursor::new(log.into_bytes()),
            FormatChoice::Auto,
            None,
            &setup,
            &mut |_| {
                left -= 1;
                left == 0
            },
        );
        let stopped = stopped.unwrap_err();
        assert_eq!(
            (stopped.kind(), stopped.to_string().as_str()),
            (ErrorKind::Stopped, "stopped")
        );
        assert!(whole.events > 40_000);
    }

    #[test]
    fn unknown_names_are_config_errors_with_the_cli_message() {
        let message = |r: Result<Setup, Error>| r.unwrap_err().to_string();
        assert!(message(setup("nope", &[], &[])).starts_with("unknown profile \"nope\" (known: "));
        assert!(message(setup("seed", &["text-loop"], &[])).contains("not in profile"));
        assert!(message(setup("extended", &[], &[("text-loop.nope", "1")])).contains("has no parameter"));
        assert!(message(setup("extended", &[], &[("text-loop.copies", "x")])).contains("expected a whole number"));
    }

    #[test]
    fn events_bytes_and_scan_agree() {
        let s = setup("extended", &[], &[]).unwrap();
        let log = looping("The answer is not right, let me try once more. ", 40);
        let scanned = scan(
            std::io::Cursor::new(log.clone().into_bytes()),
            FormatChoice::Auto,
            None,
            &s,
        )
        .unwrap();
        assert!(!scanned.detections.is_empty());
        assert_eq!(scanned.events, 41);

        let mut by_event = Monitor::new(&s);
        for line in log.lines() {
            by_event.push_json(serde_json::from_str(line).unwrap()).unwrap();
        }
        assert_eq!(by_event.detections(), &scanned.detections[..]);

        // Bytes in awkward pieces (inside lines and inside a UTF-8 char).
        let mut by_bytes = Monitor::new(&s);
        for piece in log.as_bytes().chunks(7) {
            by_bytes.feed(piece, FormatChoice::Auto);
        }
        by_bytes.finish();
        assert_eq!(by_bytes.detections(), &scanned.detections[..]);
        assert_eq!(by_bytes.format(), Some(Format::Native));
    }

    #[test]
    fn push_returns_only_what_that_event_caused() {
        let s = setup("extended", &[], &[]).unwrap();
        let mut m = Monitor::new(&s);
        let mut fired_at = Vec::new();
        m.push(&Event::request());
        for i in 0..60 {
            if !m.push(&Event::reasoning("思考一下这个问题。")).is_empty() {
                fired_at.push(i);
            }
        }
        assert!(!fired_at.is_empty());
        assert_eq!(m.detections().len(), fired_at.len());
        assert!(m
            .states()
            .iter()
            .any(|st| matches!(st.status, crate::Status::Fired { .. })));
    }

    #[test]
    fn bad_events_and_inputs_are_errors_not_panics() {
        let s = setup("seed", &[], &[]).unwrap();
        let mut m = Monitor::new(&s);
        let not_an_event = ErrorKind::Malformed { line: None };
        assert_eq!(m.push_json(serde_json::json!([1, 2])).unwrap_err().kind(), not_an_event);
        assert_eq!(
            m.push_json(serde_json::json!({"text": "x"})).unwrap_err().kind(),
            not_an_event
        );
        m.feed(b"{\"type\":\"request\"}\nnot json\n", FormatChoice::Auto);
        m.finish();
        assert_eq!(m.problems().len(), 1);
        assert_eq!(m.problems()[0].line, 2);
        let missing = scan_path(Path::new("/nonexistent/x.jsonl"), FormatChoice::Auto, &s);
        assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    }
}
