//! The timeline's entries: the stream as a list of what happened — prompts,
//! requests, runs of reasoning or content, tool calls with their ✓/✗
//! results, notes and detections. The pane that shows them is
//! `timeline_pane.rs`.

use crate::output::count;
use loopscope_core::detect::Detection;
use loopscope_core::event::{Channel, Event, EventKind};

#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    Meta(String),
    Prompt(String),
    Request(Option<String>),
    /// Consecutive deltas of one channel, with their total length.
    Text {
        channel: Channel,
        chars: usize,
    },
    Call {
        name: String,
        args: String,
        id: Option<String>,
        result: Option<(usize, bool)>,
    },
    /// A tool result whose call is not in the stream.
    Result {
        ok: bool,
    },
    Note(String),
    /// A recorded judge verdict at a turn of the prompt (`None`: no usable answer).
    Judge {
        turn: usize,
        stage: Option<u8>,
        confidence: Option<f64>,
        model: Option<String>,
        /// The turn of the next check after this verdict (when the shown
        /// profile runs the judge).
        next: Option<usize>,
        /// Recorded at a turn the shown profile's schedule would not have
        /// checked (it is replayed all the same).
        unasked: bool,
    },
    Other(String),
    /// Detection number `index` of the stream (of every run's, merged).
    Detection {
        index: usize,
        detector: &'static str,
        reason: String,
        /// The run that found it, and its profile when runs are compared.
        run: usize,
        profile: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub first: usize,
    pub last: usize,
    pub kind: EntryKind,
}

impl Entry {
    /// Whether any of `events` belongs to this entry (a call's result counts).
    pub fn involves(&self, events: &[usize]) -> bool {
        let result = match self.kind {
            EntryKind::Call {
                result: Some((r, _)), ..
            } => Some(r),
            _ => None,
        };
        events
            .iter()
            .any(|&e| (self.first..=self.last).contains(&e) || Some(e) == result)
    }
}

/// The entries of a stream, built as events arrive.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    entries: Vec<Entry>,
    detections: usize,
    /// Entries of calls still waiting for their result, oldest first.
    open_calls: Vec<usize>,
    /// Requests (turns) since the last prompt, for the judge's entries.
    turns: usize,
    /// The shown profile's judge schedule, to say when it asks next, and
    /// the turn it last asked at.
    judge: Option<loopscope_core::detect::judge::Schedule>,
    judge_due: Option<usize>,
    /// Waiting calls looked at to pair results (the tests count the work).
    #[cfg(test)]
    pairing_looks: usize,
}

/// Calls waiting for a result that a result can still be paired with.
const MAX_OPEN_CALLS: usize = 256;

/// The most of a prompt, note or call's arguments a row keeps: rows show a
/// line, and the whole event is in the tape; a long log's rows stay small.
const LABEL_CHARS: usize = 400;

fn label_text(text: &str) -> String {
    match text.char_indices().nth(LABEL_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

impl Timeline {
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The parameters of the judge followed, if any.
    pub fn judge_params(&self) -> Option<loopscope_core::detect::judge::JudgeParams> {
        self.judge.as_ref().map(|j| j.params)
    }

    /// Follows the judge of these parameters (None: the profile has none).
    pub fn set_judge(&mut self, params: Option<loopscope_core::detect::judge::JudgeParams>) {
        self.judge = params.map(|p| loopscope_core::detect::judge::Schedule::new(&p));
    }

    pub fn push(&mut self, index: usize, event: &Event) {
        match event.kind {
            EventKind::Prompt { .. } => {
                self.turns = 0;
                self.judge_due = None;
                if let Some(j) = self.judge.as_mut() {
                    j.reset();
                }
            }
            EventKind::Request { .. } => {
                self.turns += 1;
                if let Some(j) = self.judge.as_mut() {
                    if j.turn() {
                        self.judge_due = Some(self.turns);
                    }
                }
            }
            _ => {}
        }
        let kind = match &event.kind {
            EventKind::Reasoning { text } | EventKind::Content { text } => {
                let channel = if matches!(event.kind, EventKind::Reasoning { .. }) {
                    Channel::Reasoning
                } else {
                    Channel::Content
                };
                if let Some(Entry {
                    last,
                    kind: EntryKind::Text { channel: c, chars },
                    ..
                }) = self.entries.last_mut()
                {
                    if *c == channel {
                        *last = index;
                        *chars += text.chars().count();
                        return;
                    }
                }
                EntryKind::Text {
                    channel,
                    chars: text.chars().count(),
                }
            }
            EventKind::ToolResult { id, ok, .. } => {
                // Pair with its call: the same id, else the latest call still
                // waiting. Only the newest waiting calls are looked at, so a
                // log of results without calls costs no more per event.
                let entries = &mut self.entries;
                let found = self.open_calls.iter().rposition(|&e| match &entries[e].kind {
                    EntryKind::Call { id: cid, .. } => id.is_none() || cid == id,
                    _ => false,
                });
                #[cfg(test)]
                {
                    self.pairing_looks += found.map_or(self.open_calls.len(), |k| self.open_calls.len() - k);
                }
                if let Some(k) = found {
                    let e = self.open_calls.remove(k);
                    if let EntryKind::Call { result, .. } = &mut entries[e].kind {
                        *result = Some((index, *ok));
                    }
                    return;
                }
                EntryKind::Result { ok: *ok }
            }
            EventKind::Meta => EntryKind::Meta(
                ["title", "model", "source"]
                    .iter()
                    .filter_map(|k| event.extra.get(*k).and_then(|v| v.as_str()))
                    .collect::<Vec<_>>()
                    .join(" · "),
            ),
            EventKind::Prompt { text } => EntryKind::Prompt(label_text(text.as_deref().unwrap_or_default())),
            EventKind::Request { id } => EntryKind::Request(id.clone()),
            EventKind::ToolCall { name, args, id } => EntryKind::Call {
                name: label_text(name),
                args: label_text(&args.to_string()),
                id: id.clone(),
                result: None,
            },
            EventKind::Note { text } => EntryKind::Note(label_text(text)),
            EventKind::LoopCheck {
                confidence,
                stage,
                model,
                ..
            } => {
                // As the detector replays it: where it was recorded, the
                // schedule going on from it.
                let first = stage.unwrap_or(1) == 1;
                let turns = self.turns;
                let next = self.judge.as_mut().map(|j| {
                    if first {
                        j.last_check = turns;
                    }
                    j.verdict(stage.unwrap_or(1), *confidence);
                    j.next_check()
                });
                EntryKind::Judge {
                    turn: self.turns,
                    stage: *stage,
                    confidence: *confidence,
                    model: model.as_deref().map(label_text),
                    next,
                    unasked: first && self.judge.is_some() && self.judge_due != Some(turns),
                }
            }
            EventKind::Other { type_name } => EntryKind::Other(type_name.clone()),
        };
        if matches!(kind, EntryKind::Call { .. }) {
            self.open_calls.push(self.entries.len());
            if self.open_calls.len() > MAX_OPEN_CALLS {
                self.open_calls.remove(0);
            }
        }
        self.entries.push(Entry {
            first: index,
            last: index,
            kind,
        });
    }

    /// Adds the stream's next detection; `profile` names its run when
    /// profiles are compared.
    /// A note that is not an event of the stream (`now following …`),
    /// shown before event `at`.
    pub fn push_note(&mut self, at: usize, text: String) {
        self.entries.push(Entry {
            first: at,
            last: at,
            kind: EntryKind::Note(label_text(&text)),
        });
    }

    pub fn push_detection(&mut self, d: &Detection, profile: Option<&str>) {
        self.entries.push(Entry {
            first: d.event,
            last: d.event,
            kind: EntryKind::Detection {
                index: self.detections,
                detector: d.detector,
                // One row: what differs from the other detections first.
                reason: crate::output::distinguishing_first(&d.readable_reason()),
                run: d.run,
                profile: profile.map(str::to_string),
            },
        });
        self.detections += 1;
    }

    /// The entry that holds the last shown event (the one before `cursor`).
    pub fn current(&self, cursor: usize) -> Option<usize> {
        let shown = cursor.checked_sub(1)?;
        let i = self.entries.partition_point(|e| e.first <= shown);
        i.checked_sub(1)
    }
}

/// One entry as a line of text (not yet sanitized).
pub fn describe(e: &Entry) -> String {
    match &e.kind {
        EntryKind::Meta(m) => format!("≡ {m}"),
        EntryKind::Prompt(t) => format!("❯ prompt: {t}"),
        EntryKind::Request(Some(id)) => format!("↳ request {id}"),
        EntryKind::Request(None) => "↳ request".to_string(),
        EntryKind::Text { channel, chars } => {
            let n = e.last - e.first + 1;
            let icon = if *channel == Channel::Reasoning { "…" } else { "¶" };
            if n == 1 {
                format!("{icon} {} {}", channel.as_str(), count(*chars, "char"))
            } else {
                format!("{icon} {} {} in {n} deltas", channel.as_str(), count(*chars, "char"))
            }
        }
        EntryKind::Call { name, args, result, .. } => {
            let mark = match result {
                Some((_, true)) => "✓",
                Some((_, false)) => "✗",
                None => "…",
            };
            format!("{mark} {name} {args}")
        }
        EntryKind::Result { ok } => format!("{} tool result", if *ok { "✓" } else { "✗" }),
        EntryKind::Note(t) => format!("✎ {t}"),
        EntryKind::Judge {
            turn,
            stage,
            confidence,
            model,
            next,
            unasked,
        } => {
            let verdict = confidence.map_or("no usable answer".to_string(), |c| format!("{c:.2}"));
            let stage = stage
                .filter(|s| *s > 1)
                .map_or(String::new(), |s| format!(" (stage {s})"));
            let next = next.map_or(String::new(), |n| format!(" → next at {n}"));
            let model = model.as_deref().map_or(String::new(), |m| format!(" · {m}"));
            let unasked = if *unasked { " · not on this schedule" } else { "" };
            format!("✦ turn {turn} · {verdict}{stage}{next}{model}{unasked}")
        }
        EntryKind::Other(t) => format!("· {t}"),
        EntryKind::Detection {
            detector,
            reason,
            profile: Some(p),
            ..
        } => format!("⚠ [{p}] {detector}: {reason}"),
        EntryKind::Detection { detector, reason, .. } => format!("⚠ {detector}: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_without_calls_cost_no_more_per_event_and_labels_stay_short() {
        let mut t = Timeline::default();
        // 300 calls waiting, then 200,000 results that match none of them
        // by id: once a linear search of every entry each (hostile logs).
        for i in 0..300 {
            let mut call = Event::tool_call("read", json!({"p": "x".repeat(5000)}));
            if let EventKind::ToolCall { id, .. } = &mut call.kind {
                *id = Some(format!("c{i}"));
            }
            t.push(i, &call);
        }
        for i in 0..200_000 {
            let mut r = Event::tool_result(true);
            if let EventKind::ToolResult { id, .. } = &mut r.kind {
                *id = Some("nobody".into());
            }
            t.push(300 + i, &r);
        }
        // The work counted, not timed: each result looks at the waiting
        // calls kept (at most MAX_OPEN_CALLS), never at every entry (which
        // would be 300 + i each: 4e10 looks in all).
        assert_eq!(t.pairing_looks, 200_000 * MAX_OPEN_CALLS);
        assert!(matches!(t.entries()[300].kind, EntryKind::Result { ok: true }));
        // The newest waiting call still pairs with its result.
        let mut r = Event::tool_result(false);
        if let EventKind::ToolResult { id, .. } = &mut r.kind {
            *id = Some("c299".into());
        }
        t.push(500_000, &r);
        assert!(matches!(
            t.entries()[299].kind,
            EntryKind::Call {
                result: Some((500_000, false)),
                ..
            }
        ));
        let EntryKind::Call { args, .. } = &t.entries()[0].kind else {
            panic!()
        };
        assert_eq!(args.chars().count(), LABEL_CHARS + 1);
    }

    #[test]
    fn deltas_merge_and_results_pair_with_their_calls() {
        let mut t = Timeline::default();
        let mut call = Event::tool_call("read", json!({"p": 1}));
        if let EventKind::ToolCall { id, .. } = &mut call.kind {
            *id = Some("c1".into());
        }
        let mut result = Event::tool_result(false);
        if let EventKind::ToolResult { id, .. } = &mut result.kind {
            *id = Some("c1".into());
        }
        let events = [
            Event::request(),
            Event::reasoning("ab"),
            Event::reasoning("cde"),
            call,
            result,
            Event::content("x"),
            Event::tool_result(true),
        ];
        for (i, e) in events.iter().enumerate() {
            t.push(i, e);
        }
        let kinds: Vec<String> = t.entries().iter().map(describe).collect();
        assert_eq!(
            kinds,
            vec![
                "↳ request",
                "… reasoning 5 chars in 2 deltas",
                "✗ read {\"p\":1}",
                "¶ content 1 char",
                "✓ tool result"
            ]
        );
        assert!(t.entries()[2].involves(&[4]), "the call row stands for its result");
        assert_eq!(t.current(0), None);
        assert_eq!(t.current(3), Some(1));
        assert_eq!(t.current(7), Some(4));
    }
}
