//! `loopscope judge FILE -o OUT`: asks the endpoint at every check of a
//! recorded stream and writes a copy with the verdicts inserted as
//! `loop_check` events (never into FILE). `--dry-run` prints the requests
//! it would send instead.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use serde_json::Value;

use super::{body, max_checks, Answer, Asker, Endpoint, Inserter};
use loopscope_core::detect::judge::JudgeParams;
use loopscope_core::event::{Event, EventKind};

pub struct JudgeCommand {
    pub input: PathBuf,
    pub output: Option<PathBuf>,
    pub endpoint: Endpoint,
    pub params: JudgeParams,
    pub dry_run: bool,
}

/// Prints each request body as a JSON line instead of sending it.
struct DryRun<'a> {
    out: &'a mut dyn Write,
}

impl Asker for DryRun<'_> {
    fn ask(&mut self, stage: u8, model: &str, messages: &[Value]) -> Answer {
        // A record like every command's JSON; `request` is the body as sent.
        let record = serde_json::json!({
            "type": "judge_request",
            "schema": crate::output::SCHEMA,
            "stage": stage,
            "request": body(model, messages),
        });
        let _ = writeln!(self.out, "{}", loopscope_core::sanitize::json(&record.to_string()));
        Answer::Nothing("dry run".to_string())
    }
}

/// Turns per prompt (requests after each prompt).
fn turns_per_prompt(events: &[Event]) -> Vec<usize> {
    let mut out = vec![0];
    for e in events {
        match e.kind {
            EventKind::Prompt { .. } => out.push(0),
            EventKind::Request { .. } => *out.last_mut().expect("one prompt slot") += 1,
            _ => {}
        }
    }
    out
}

/// Runs the command over `events` (already read); returns the events to
/// write (none for a dry run).
pub fn run(
    cmd: &JudgeCommand,
    events: Vec<Event>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Vec<Event>, String> {
    let turns = turns_per_prompt(&events);
    let most = max_checks(&cmd.params, &turns);
    let per = if cmd.endpoint.double_check_model.is_some() && cmd.params.double_check {
        " (two calls each when the first model says loop)"
    } else {
        ""
    };
    let _ = writeln!(
        err,
        "loopscope: {} turns in {} prompts: at most {most} judge checks{per}",
        turns.iter().sum::<usize>(),
        turns.iter().filter(|t| **t > 0).count()
    );
    let progress = std::io::stderr().is_terminal() && !cmd.dry_run;
    let mut written = Vec::with_capacity(events.len());
    if cmd.dry_run {
        let mut inserter = Inserter::new(&cmd.params, &cmd.endpoint, DryRun { out });
        for e in events {
            inserter.push(e, &mut written);
        }
        return Ok(Vec::new());
    }
    let mut inserter = Inserter::new(&cmd.params, &cmd.endpoint, cmd.endpoint.clone());
    let mut seen = 0;
    for e in events {
        inserter.push(e, &mut written);
        if progress && inserter.checks != seen {
            seen = inserter.checks;
            let _ = write!(err, "\rloopscope: judge check {seen} of at most {most}");
        }
        for w in inserter.warnings.drain(..) {
            if progress {
                let _ = writeln!(err);
            }
            let _ = writeln!(err, "loopscope: warning: judge: {w}");
        }
    }
    if progress {
        let _ = writeln!(err);
    }
    let said = match inserter.loops.as_slice() {
        [] => "no loop".to_string(),
        turns => format!(
            "a loop at turn {}",
            turns.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    // A judge that could not answer did not call "no loop": say so.
    let unanswered = match inserter.unanswered {
        0 => String::new(),
        n => format!(", {n} of them with no usable answer (see the warnings)"),
    };
    let _ = writeln!(
        err,
        "loopscope: {} checks{unanswered}; the judge called {said} (replaying the written stream gives the same)",
        inserter.checks
    );
    if cmd.params.double_check && cmd.endpoint.double_check_model.is_none() {
        let _ = writeln!(
            err,
            "loopscope: no --double-check-model, so the first model decided (its verdicts say so, and replay as deciding alone)"
        );
    }
    Ok(written)
}
