//! loopscope-core: the model and the engine of loopscope, with no terminal,
//! HTTP or file-watching dependency.
//!
//! The pieces, in the order data flows through them: [`formats`] decode
//! input bytes (any supported agent log or API stream) into
//! [`event::Event`]s; a [`config::Setup`] says which [`detect`]ors run with
//! which parameters; the [`engine::Engine`] feeds events to them and
//! returns each [`Detection`] with its evidence and every detector's
//! [`DetectorState`].
//!
//! # The API to depend on
//!
//! The root is the stable entry: [`setup`] (or a [`Setup`] from a
//! [`Profile`] and [`Choices`]) says what runs; a [`Monitor`] runs it over
//! a stream as it arrives ([`Event`]s of an [`EventKind`], or bytes of a
//! log), [`scan`], [`scan_path`] and their `_until` forms over a whole
//! input of any [`Format`] ([`FormatChoice::Auto`] detects it); each finding
//! is a [`Detection`] on a [`Channel`], each detector's state a
//! [`DetectorState`] with its [`Status`]. Every failure is an [`Error`]
//! whose [`ErrorKind`] says what went wrong (missing file, unknown profile,
//! malformed input at a line, …) and whose message is the CLI's.
//!
//! The modules below hold what the `loopscope` application builds on
//! (importers, detectors, the viewer's engine and store). They are public
//! for it and documented, but they follow the application: depend on the
//! root API, whose every change is deliberate (`public-api.txt` and its
//! test list the whole public surface).
//!
//! # Example: scan a log with a profile
//!
//! ```
//! use loopscope_core::{scan_path, setup, FormatChoice};
//!
//! # let dir = std::env::temp_dir().join(format!("loopscope-crate-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! # let path = dir.join("session.jsonl");
//! # let mut log = String::from("{\"type\":\"request\"}\n");
//! # for _ in 0..40 { log += "{\"type\":\"reasoning\",\"text\":\"Wait, let me check the tests again. \"}\n"; }
//! # std::fs::write(&path, log).unwrap();
//! // Any log loopscope reads: native JSONL, Claude Code, Codex, Gemini CLI, …
//! let profile = setup("extended", &[], &[])?;
//! let found = scan_path(&path, FormatChoice::Auto, &profile)?;
//! println!("{} events ({:?})", found.events, found.format);
//! for d in &found.detections {
//!     println!("{} fired at event {}: {}", d.detector, d.event, d.reason);
//! }
//! for p in &found.problems {
//!     println!("{p}"); // "line 3: not JSON; line skipped"
//! }
//! # assert_eq!(found.detections[0].detector, "text-loop");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), loopscope_core::Error>(())
//! ```
//!
//! `cargo run -p loopscope-core --example scan -- FILE [PROFILE]` runs the
//! same from the command line (examples/scan.rs).

#![warn(missing_docs)]

pub mod config;
pub mod contain;
pub mod detect;
pub mod engine;
pub mod error;
pub mod event;
pub mod formats;
#[doc(hidden)]
pub mod fuzzing;
pub mod monitor;
pub mod sanitize;
pub mod store;
pub mod text;

pub use config::{Choices, Setup};
pub use detect::{Detection, DetectorState, Profile, Status};
pub use engine::{Engine, Tape};
pub use error::{Error, ErrorKind};
pub use event::{Channel, Event, EventKind};
pub use formats::{Format, FormatChoice, ReadOptions};
pub use monitor::{scan, scan_path, scan_path_until, scan_until, setup, Monitor, Scanned};

/// An I/O error as a short lowercase phrase ("no such file or directory").
///
/// ```
/// let e = std::io::Error::from(std::io::ErrorKind::NotFound);
/// assert_eq!(loopscope_core::io_reason(&e), "no such file or directory");
/// ```
pub fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file or directory".to_string(),
        PermissionDenied => "permission denied".to_string(),
        IsADirectory => "is a directory".to_string(),
        InvalidData => "not readable as text".to_string(),
        _ => {
            // Drop Rust's " (os error N)" suffix; keep the OS's words.
            let s = e.to_string();
            let s = s.split(" (os error").next().unwrap_or(&s);
            let mut c = s.chars();
            c.next().map_or(String::new(), |f| f.to_lowercase().chain(c).collect())
        }
    }
}
