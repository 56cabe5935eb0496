//! What detectors report: detections with their evidence, the live status of
//! each detector, and what ran at each checkpoint.

use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use crate::event::Channel;

/// A half-open range `[start, end)` of char offsets in one channel buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// The first char.
    pub start: usize,
    /// One past the last char.
    pub end: usize,
}

impl Span {
    /// The span `[start, end)`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// Chars in the span.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the span holds no char.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(2))?;
        seq.serialize_element(&self.start)?;
        seq.serialize_element(&self.end)?;
        seq.end()
    }
}

/// What a detection's evidence is made of, so that a viewer knows how to
/// show it from data rather than from the detector's name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Evidence {
    /// Nothing to point at in the text (a count of turns).
    #[default]
    Count,
    /// Each span is one copy of the repeated text (units, periods, paragraphs).
    Copies,
    /// Every `n` consecutive spans (lines, sentences) together make one copy.
    GroupedCopies(usize),
    /// Each span is one occurrence of a repeated chunk; occurrences may
    /// overlap, so where each begins matters more than its extent.
    Occurrences,
    /// The tool calls in `events`, with their results.
    Calls,
}

/// One detector firing, with everything needed to show why.
///
/// ```
/// use loopscope_core::{setup, Event, Monitor};
///
/// let s = setup("extended", &[], &[("text-loop.copies", "4")]).unwrap();
/// let mut monitor = Monitor::new(&s);
/// monitor.push(&Event::request());
/// for _ in 0..40 {
///     monitor.push(&Event::reasoning("Wait, let me check the tests again. "));
/// }
/// let d = &monitor.detections()[0];
/// assert_eq!(d.detector, "text-loop");
/// assert_eq!(d.repeated.as_deref(), Some("Wait, let me check the tests again. "));
/// println!("event {}: {}", d.event, d.reason);
/// ```
///
/// For cycle detectors `spans` holds the last `matches + period` elements:
/// the first `period` are the first copy, and element `i` belongs to copy
/// `i / period`. For `short-repeat` each span is one copy of the unit; for
/// `chunk-chant` each span is one occurrence of the chunk.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Detection {
    /// The detector's id.
    pub detector: &'static str,
    /// The index of the event at which it fired.
    pub event: usize,
    /// The channel it watched.
    pub channel: Channel,
    /// Length of the channel buffer (chars) when it fired; `None` for tools/turns.
    pub at_char: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The checkpoint that ran (checkpoint detectors).
    pub checkpoint: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The period in elements (blocks, lines, chars, actions).
    pub period: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// How many elements matched the element a period before.
    pub matches: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// How many times the unit or call repeated.
    pub repeats: Option<usize>,
    /// The number `matches`/`repeats` was held against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// Char ranges of the repeated elements or chunks in the channel's buffer.
    pub spans: Vec<Span>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    /// The events involved (tool and turn detectors).
    pub events: Vec<usize>,
    /// What repeated: the unit, the chunk, or the tool call / action key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeated: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The mean distance between a chunk's occurrences (chunk chanting).
    pub avg_distance: Option<f64>,
    /// Where the repetition begins: a char offset of the channel (text) or
    /// an event index (tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub onset: Option<usize>,
    /// One human sentence: what repeated, how often, where.
    pub reason: String,
    /// How to show `spans` and `events` (not part of scan's JSON).
    #[serde(skip)]
    pub evidence: Evidence,
    /// Which of a tape's runs (setups) found it; 0 outside comparisons.
    #[serde(skip)]
    pub run: usize,
}

impl Detection {
    /// The reason as a person reads it: quoted tool calls as text
    /// (`read_file {path: a.rs}`); `reason` itself is exact (`--json`).
    pub fn readable_reason(&self) -> String {
        super::readable::readable(&self.reason)
    }

    /// A detection with only its position; detectors fill in the rest.
    pub fn new(detector: &'static str, event: usize, channel: Channel, at_char: Option<usize>) -> Detection {
        Detection {
            detector,
            event,
            channel,
            at_char,
            checkpoint: None,
            period: None,
            matches: None,
            repeats: None,
            threshold: None,
            spans: Vec::new(),
            events: Vec::new(),
            repeated: None,
            avg_distance: None,
            onset: None,
            reason: String::new(),
            evidence: Evidence::default(),
            run: 0,
        }
    }
}

impl Detection {
    /// Where the evidence begins, as text: the onset when the detector
    /// reports one, else its first span or first event ("char 2823",
    /// "event 6").
    pub fn evidence_from(&self) -> Option<String> {
        let text = matches!(self.channel, Channel::Reasoning | Channel::Content);
        let unit = if text { "char" } else { "event" };
        let at = self
            .onset
            .or_else(|| self.spans.first().map(|s| s.start))
            .or_else(|| self.events.first().copied())?;
        Some(format!("{unit} {at}"))
    }

    /// Which parameter values would have kept this detection from firing,
    /// for someone deciding whether it is a false positive.
    pub fn what_would_change(&self) -> Option<String> {
        let n = |v: Option<usize>| v.unwrap_or(0);
        Some(match self.detector {
            "block-cycle" | "list-cycle" => {
                let (p, c) = (n(self.period), n(self.matches));
                let period = if p > 1 {
                    format!(", or max_period below {p} (and no shorter cycle)")
                } else {
                    String::new()
                };
                format!("not fired here with min_matches above {c}{period}")
            }
            "short-repeat" => format!(
                "this run would not count with min_repeats above {}, or min_unit above {}",
                n(self.repeats),
                n(self.period)
            ),
            "chunk-chant" => format!(
                "not fired here with threshold above {}, or max_avg_distance below {:.1}",
                n(self.repeats),
                self.avg_distance.unwrap_or(0.0)
            ),
            "tool-repeat" | "action-window" | "error-streak" => {
                let param = match self.detector {
                    "error-streak" => "max_consecutive",
                    _ => "threshold",
                };
                format!("not fired yet with {param} above {}", n(self.repeats))
            }
            "max-turns" => format!("not fired yet with max_turns at {} or more", n(self.repeats)),
            "error-total" => format!("not fired yet with max_total at {} or more", n(self.repeats)),
            "action-cycle" => format!("a longer k than {} would need more repetition", n(self.period)),
            "vllm-repetition" => {
                let (l, c) = (n(self.period), n(self.repeats));
                format!(
                    "not stopped here with min_count above {c}, or a pattern range (min_pattern_size..max_pattern_size) without {l} and without the other lengths that repeat {c} times here; min_tokens above {} would only move the check later",
                    n(self.matches)
                )
            }
            "openhands-sdk-nudge" => format!(
                "no nudge here with action_error other than {} (it is sent at exactly that many failing repeats)",
                n(self.repeats)
            ),
            "openhands-sdk-stuck" => {
                let c = n(self.repeats);
                if self.reason.contains("repeating_action_error") {
                    format!("not stuck yet with action_error at {c} or more (it stops after one repeat more than action_error)")
                } else if self.reason.contains("repeating_action_observation") {
                    format!("not stuck yet with action_observation above {c}")
                } else if self.reason.contains("monologue") {
                    format!("not stuck yet with monologue above {c}")
                } else {
                    format!("not stuck yet with alternating_pattern above {c}")
                }
            }
            "opencode-doom-loop" => format!(
                "not asked with opencode-doom-loop.parts above {}, with a text part between the calls, or with the calls in separate responses",
                n(self.repeats)
            ),
            id if id.starts_with("openclaw") => return super::openclaw::what_would_change(self),
            _ => return None,
        })
    }
}

/// What a detector is doing right now.
///
/// ```
/// use loopscope_core::{setup, Event, Monitor, Status};
///
/// let s = setup("extended", &["text-loop"], &[]).unwrap();
/// let mut monitor = Monitor::new(&s);
/// monitor.push(&Event::request());
/// let state = &monitor.states()[0];
/// assert!(!matches!(state.status, Status::Fired { .. }));
/// println!("{}: {} ({})", state.id, state.status.label(), state.status.summary());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Not running yet (e.g. its checkpoint is not reached).
    Idle {
        /// What it waits for.
        detail: String,
    },
    /// Counting toward its threshold.
    Watching {
        /// The count so far.
        current: usize,
        /// The count that fires.
        threshold: usize,
        /// What is being counted.
        detail: String,
    },
    /// Ran at a checkpoint and found no loop.
    Clear {
        /// The checkpoint that ran.
        checkpoint: usize,
        /// The closest it came to firing.
        near_miss: String,
        /// The next checkpoint, if any.
        next: Option<usize>,
    },
    /// Found a loop.
    Fired {
        /// The event at which it fired.
        event: usize,
        /// Why.
        reason: String,
    },
    /// Stopped because a detector sharing its latch fired (gemini-cli's one service).
    Latched {
        /// The detector that fired.
        by: &'static str,
        /// The event at which it fired.
        event: usize,
    },
}

impl Status {
    /// The state in one word as the viewer shows it (`idle`, `watching`, `clear`, `FIRED`, `latched`).
    pub fn label(&self) -> &'static str {
        match self {
            Status::Idle { .. } => "idle",
            Status::Watching { .. } => "watching",
            Status::Clear { .. } => "clear",
            Status::Fired { .. } => "FIRED",
            Status::Latched { .. } => "latched",
        }
    }

    /// One line for lists: the label's explanation.
    pub fn summary(&self) -> String {
        match self {
            Status::Idle { detail } | Status::Watching { detail, .. } => detail.clone(),
            Status::Clear {
                checkpoint,
                near_miss,
                next,
            } => {
                let next = next.map_or("no checkpoint left".to_string(), |n| format!("next at {n}"));
                format!("clear at {checkpoint} ({near_miss}); {next}")
            }
            Status::Fired { event, reason } => format!("at event {event}: {reason}"),
            Status::Latched { by, event } => format!("stopped: {by} fired at event {event} (one shared latch)"),
        }
    }
}

/// The status of one detector, as the engine reports it.
///
/// ```
/// use loopscope_core::{setup, Monitor};
///
/// let monitor = Monitor::new(&setup("seed", &[], &[]).unwrap());
/// for state in monitor.states() {
///     println!("{:<16} {}", state.id, state.status.label());
/// }
/// assert_eq!(monitor.states().len(), 11);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DetectorState {
    /// The detector's id.
    pub id: &'static str,
    /// What it is doing.
    pub status: Status,
}

/// One checkpoint detector running at one checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointRun {
    /// The detector's id.
    pub detector: &'static str,
    /// The checkpoint (chars).
    pub checkpoint: usize,
    /// The event whose delta crossed it.
    pub event: usize,
    /// Buffer length when it ran (>= checkpoint when one event crossed it).
    pub at_char: usize,
    /// Whether it found a loop there.
    pub fired: bool,
    /// The near miss when clear, the reason when fired.
    pub summary: String,
}
