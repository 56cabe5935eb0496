//! loopscope-core: the model and the engine of loopscope, with no terminal,
//! HTTP or file-watching dependency.
//!
//! The pieces, in the order data flows through them: [`formats`] decode
//! input bytes (any supported agent log or API stream) into
//! [`event::Event`]s; a [`config::Setup`] says which [`detect`]ors run with
//! which parameters; the [`engine::Engine`] feeds events to them and
//! returns each [`Detection`] with its evidence and every detector's
//! [`DetectorState`].

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
pub use formats::{Format, FormatChoice};
pub use monitor::{scan, scan_path, scan_path_until, scan_until, setup, Monitor, Scanned};

/// An I/O error as a short lowercase phrase ("no such file or directory").
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
