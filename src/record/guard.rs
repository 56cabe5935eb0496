//! `--guard`: the detectors run on every conversation as it streams (see
//! `conversation_guard`); when one fires, the response is ended in the
//! API's own terms, and a tool call that would make one fire never reaches
//! the agent. What the guard ended, and why, in words for the agent, the
//! session and stderr.

use serde_json::Value;

use crate::tail::OnDetect;
use loopscope_core::detect::readable::call_text;
use loopscope_core::detect::Detection;
use loopscope_core::Setup;

/// What `--guard` runs, and the hook run on each detection.
pub struct Guard {
    pub setup: Setup,
    /// `--guard-hook CMD`, run as `tail --on-detect` runs its command.
    pub hook: Option<String>,
}

/// Where a detection fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// On what the client received (the text that loops).
    Stream,
    /// On a tool call, before the agent got it.
    Call,
    /// On the result the call would get: the one it got last time.
    Result { ok: bool },
    /// On the results the agent sent back in its request.
    Request,
}

/// A tool call the model asked for that the agent did not get.
#[derive(Clone, Debug, PartialEq)]
pub struct Withheld {
    pub name: String,
    pub args: Value,
    /// How often the model asked for it since the prompt, this time included.
    pub asked: usize,
}

impl Withheld {
    /// `read_file {path: notes.txt}`, at most so long.
    pub fn shown(&self) -> String {
        let raw = format!("{}:{}", self.name, self.args);
        let text = call_text(&raw).unwrap_or(raw);
        shorten(&text, MAX_SHOWN_CALL)
    }
}

/// The most of a call's text a stop message quotes (a write's content can
/// be the size of a file).
const MAX_SHOWN_CALL: usize = 200;
/// The most of a detection's reason a stop message quotes.
const MAX_SHOWN_REASON: usize = 300;

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A reason without where in the session it is (`, from char 2330`,
/// `, events 8..36`, `, events [12, 25, 38]`): places in a file the agent
/// has never seen.
fn without_place(reason: &str) -> String {
    let place = regex::Regex::new(r",? (from (char|event) \d+|events \d+\.\.\d+|events \[[\d, ]*\])$")
        .expect("a valid pattern");
    place.replace(reason, "").into_owned()
}

/// Why the guard ended a response.
#[derive(Clone, Debug)]
pub struct Stop {
    pub detection: Detection,
    pub found: Found,
    pub withheld: Option<Withheld>,
}

impl Stop {
    pub fn new(detection: Detection, found: Found, withheld: Option<Withheld>) -> Stop {
        Stop {
            detection,
            found,
            withheld,
        }
    }

    /// What the agent reads as the end of the answer: what loopscope
    /// stopped and why, in a sentence on one line (the agent shows it to
    /// its user as the model's words: what the model sent in it, a call's
    /// arguments, has its control characters shown as placeholders).
    pub fn message(&self) -> String {
        loopscope_core::sanitize::line(&self.sentence())
    }

    fn sentence(&self) -> String {
        let detector = self.detection.detector;
        match (&self.withheld, self.found) {
            // The detector's count: the steps of the loop, this one with
            // the result it would get included.
            (Some(call), Found::Result { ok }) => format!(
                "loopscope stopped a loop: {} called {} times with the same arguments and the same {} ({detector}); this call was not run.",
                call.shown(),
                self.detection.repeats.unwrap_or(call.asked),
                if ok { "result" } else { "error" },
            ),
            (Some(call), _) => format!(
                "loopscope stopped a loop: {} called {} times with the same arguments ({detector}); this call was not run.",
                call.shown(),
                call.asked,
            ),
            (None, _) => format!(
                "loopscope stopped a loop: {} ({detector}).",
                shorten(&without_place(&self.detection.readable_reason()), MAX_SHOWN_REASON)
            ),
        }
    }
}

impl Guard {
    /// Says a detection on stderr and runs the hook: where it fired
    /// (`found`; `None`: in a response that had already ended, which only
    /// the recording could see).
    pub fn announce(&self, file: &str, d: &Detection, found: Option<&Stop>) {
        let (place, outcome) = match found {
            Some(Stop {
                withheld: Some(call), ..
            }) => (
                format!("on the call {}", call.shown()),
                "kept the call from the agent and ended the response",
            ),
            Some(Stop {
                found: Found::Request, ..
            }) => (
                format!("at event {} ({})", d.event, crate::scan::position(d)),
                "the answer to these results ends at its first word (a streamed one)",
            ),
            Some(_) => (
                format!("at event {} ({})", d.event, crate::scan::position(d)),
                "ended the response",
            ),
            None => (
                format!("at event {} ({})", d.event, crate::scan::position(d)),
                "the response had already ended",
            ),
        };
        eprintln!(
            "loopscope: guard: {} fired in {file} {}; {outcome}: {}",
            d.detector,
            loopscope_core::sanitize::line(&place),
            loopscope_core::sanitize::text(&d.reason)
        );
        if let Some(command) = &self.hook {
            let hook = OnDetect {
                command: command.clone(),
                file: file.to_string(),
            };
            hook.run(d, false, |r| {
                if let Err(msg) = r {
                    eprintln!("loopscope: {}", loopscope_core::sanitize::text(&msg));
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::event::Channel;
    use serde_json::json;

    #[test]
    fn a_stop_says_what_was_stopped_in_words_and_quotes_a_long_call_short() {
        let mut d = Detection::new("text-loop", 9, Channel::Reasoning, Some(40));
        let escape = Withheld {
            name: "bash".into(),
            args: json!({"command": "printf '\u{1b}[2J'\nls"}),
            asked: 3,
        };
        let message = Stop::new(d.clone(), Found::Call, Some(escape)).message();
        assert!(!message.contains(['\u{1b}', '\n']), "{message}");
        d.reason =
            "the reasoning repeats a 12-char unit \"Let me check\" 3 times in a row (needs 3), from char 40".into();
        let stop = Stop::new(d.clone(), Found::Stream, None);
        let mut streak = d.clone();
        streak.reason = "5 tool results in a row failed (max_consecutive 5), events 8..36".into();
        assert_eq!(
            Stop::new(streak, Found::Request, None).message(),
            "loopscope stopped a loop: 5 tool results in a row failed (max_consecutive 5) (text-loop)."
        );
        assert_eq!(
            stop.message(),
            "loopscope stopped a loop: the reasoning repeats a 12-char unit \"Let me check\" 3 times in a row (needs 3) (text-loop)."
        );
        let write = Withheld {
            name: "write_file".into(),
            args: json!({"path": "a.txt", "content": "x".repeat(1000)}),
            asked: 4,
        };
        d.repeats = Some(3);
        let stop = Stop::new(d, Found::Result { ok: false }, Some(write));
        let message = stop.message();
        assert!(
            message.starts_with("loopscope stopped a loop: write_file {path: a.txt, content: xxx"),
            "{message}"
        );
        assert!(message.contains("…") && message.len() < 400, "{message}");
        assert!(message.ends_with(
            "called 3 times with the same arguments and the same error (text-loop); this call was not run."
        ));
    }
}
