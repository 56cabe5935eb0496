//! Scans one log with a profile and prints what fired, the way a program
//! depending on loopscope-core would:
//!
//! ```text
//! cargo run -p loopscope-core --example scan -- sample-logs/demo.jsonl extended
//! ```
//!
//! Text from the log (a detection's reason quotes it) is made safe for a
//! terminal before it is printed: a log may hold escape sequences.
//!
//! Exits 1 when a detector fired, 2 when the log could not be scanned (the
//! message says why; its kind chooses what to tell the user).

use std::path::Path;
use std::process::ExitCode;

use loopscope_core::sanitize::text as safe;
use loopscope_core::{scan_path, setup, ErrorKind, FormatChoice};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: scan FILE [PROFILE]");
        return ExitCode::from(2);
    };
    let profile = args.next().unwrap_or_else(|| "seed".to_string());
    let result = setup(&profile, &[], &[]).and_then(|s| scan_path(Path::new(&file), FormatChoice::Auto, &s));
    let found = match result {
        Ok(found) => found,
        Err(e) => {
            let hint = match e.kind() {
                ErrorKind::NotFound => " (check the path)",
                ErrorKind::UnknownProfile => " (loopscope detectors --help lists them)",
                _ => "",
            };
            eprintln!("scan: {}{hint}", safe(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let format = found.format.map_or("unknown".to_string(), |f| f.to_string());
    println!(
        "{}: {} events ({format}), profile {}",
        safe(&file),
        found.events,
        safe(&profile)
    );
    for p in &found.problems {
        // "line 3: not JSON; line skipped", or for a whole JSON document
        // (no lines) "record 2: …; skipped".
        println!("  {}", safe(&p.to_string()));
    }
    for d in &found.detections {
        println!("  {} at event {}: {}", d.detector, d.event, safe(&d.reason));
    }
    ExitCode::from(u8::from(!found.detections.is_empty()))
}
