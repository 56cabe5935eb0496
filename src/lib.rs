//! loopscope: replay, tail and inspect recorded LLM agent streams and see
//! which loop detector fired and why.
//!
//! The model and the engine are the core crate's (`loopscope_core`), and
//! the app names them by that crate everywhere. In the order data flows:
//! `loopscope_core::formats` decode input bytes into events, the core's
//! `Engine` feeds them to the detectors chosen by a `Setup`; [`scan`]
//! prints what fired, and the [`tui`] replays the stream on the [`replay`]
//! clock and shows it.

/// `eprintln!` and `eprint!` that never panic: std's panic when standard
/// error cannot be written (`loopscope report … 2>&1 | head -c 10` closes
/// it), and a message that cannot be shown is no reason to crash. Defined
/// before the modules, they shadow std's in all of them; exported for the
/// binary's modules (`main.rs` forwards to them).
#[macro_export]
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[macro_export]
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub mod convert;
pub mod files;
pub mod hook;
pub mod http;
pub mod judge;
pub mod output;
pub mod reading;
pub mod record;
pub mod render;
pub mod replay;
pub mod report;
pub mod scan;
pub mod sessions;
pub mod tail;
pub mod telemetry;
pub mod tokenize;
pub mod tui;
pub mod tune;
pub mod watch;
pub mod whatif;

/// A recorded stream compiled into the binary: what `loopscope` shows with
/// no file, so a fresh checkout demonstrates itself.
pub const DEMO_STREAM: &str = include_str!("../sample-logs/demo.jsonl");
