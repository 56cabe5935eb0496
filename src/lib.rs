//! loopscope: replay, tail and inspect recorded LLM agent streams and see
//! which loop detector fired and why.
//!
//! The pieces, in the order data flows through them:
//! [`formats`] decode input bytes into [`event::Event`]s, the
//! [`engine::Engine`] feeds them to the [`detect`]ors chosen by a
//! [`config::Setup`]; [`scan`] prints what fired, and the [`tui`] replays
//! the stream on the [`replay`] clock and shows it.

pub mod config;
pub mod convert;
pub mod detect;
pub mod engine;
pub mod event;
pub mod files;
pub mod formats;
#[doc(hidden)]
pub mod fuzzing;
pub mod judge;
pub mod render;
pub mod replay;
pub mod report;
pub mod sanitize;
pub mod scan;
pub mod sessions;
pub mod store;
pub mod tail;
pub mod text;
pub mod tui;
pub mod tune;
pub mod watch;
pub mod whatif;

pub use config::{Choices, Setup};
pub use detect::{Detection, DetectorState, Profile, Status};
pub use engine::{Engine, Tape};
pub use event::{Channel, Event, EventKind};

/// A recorded stream compiled into the binary: what `loopscope` shows with
/// no file, so a fresh checkout demonstrates itself.
pub const DEMO_STREAM: &str = include_str!("../sample-logs/demo.jsonl");

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
