//! What-if: the pieces behind "what would have to change?" — re-cutting a
//! stream's text into other deltas, what a profile's first detection would
//! have saved (or cost), and the value ranges `tune` tries. The viewer's
//! `:rechunk`/`:compare` and `scan --rechunk`/`--profile a,b`/`tune` use the
//! same code.

use std::borrow::Cow;

use serde_json::{Map, Value};

use loopscope_core::detect::Detection;
use loopscope_core::event::{Event, EventKind, Ts};

/// Re-cuts text into deltas of `n` chars: consecutive deltas of one channel
/// are joined and cut every `n` chars; any other event (or the other
/// channel) ends the run, and its last piece may be shorter. Other events
/// pass unchanged. Each piece keeps the time of the recorded delta that
/// holds its last char, and says which one that was (its origin), so a
/// position can be carried between the two cuts. A recorded delta's other
/// fields (its `usage`, say) go with the piece that holds its last char:
/// once, so they are counted once, and so a piece never costs a copy of a
/// whole delta (cutting a long delta stays linear in its length).
pub struct Rechunker {
    n: usize,
    /// The text waiting to make a full piece.
    held: Option<Held>,
}

struct Held {
    reasoning: bool,
    text: String,
    chars: usize,
    /// The time of the recorded delta that brought the last char.
    ts: Option<Ts>,
    /// Fields of recorded deltas whose last char is held, for the next piece.
    fields: Map<String, Value>,
    origin: usize,
}

impl Held {
    /// The held text as a piece (with the fields waiting for it).
    fn take_piece(&mut self) -> Event {
        let text = std::mem::take(&mut self.text);
        self.chars = 0;
        Event {
            kind: if self.reasoning {
                EventKind::Reasoning { text }
            } else {
                EventKind::Content { text }
            },
            ts: self.ts.clone(),
            extra: std::mem::take(&mut self.fields).into(),
        }
    }
}

/// A recorded delta's field, for the piece that holds its last char.
fn clone_field((key, value): (&String, &Value)) -> (String, Value) {
    (key.clone(), value.clone())
}

impl Rechunker {
    pub fn new(n: usize) -> Rechunker {
        Rechunker {
            n: n.max(1),
            held: None,
        }
    }

    /// Takes recorded event `index`; appends what it releases to `out`
    /// as (event, origin) pairs.
    pub fn push(&mut self, index: usize, event: &Event, out: &mut Vec<(Event, usize)>) {
        self.push_into(index, event, &mut |e, origin| out.push((e.into_owned(), origin)));
    }

    /// [`Rechunker::push`], handing each piece to `sink` as it is cut (a
    /// long delta cut small is never held as a list of pieces). The event
    /// is borrowed, and an event that passes unchanged is handed on
    /// borrowed: `scan` reads each one where it was decoded, never moving
    /// or copying it.
    pub fn push_into(&mut self, index: usize, event: &Event, sink: &mut dyn FnMut(Cow<'_, Event>, usize)) {
        let (reasoning, text) = match &event.kind {
            EventKind::Reasoning { text } => (true, text),
            EventKind::Content { text } => (false, text),
            _ => {
                self.flush_into(sink);
                sink(Cow::Borrowed(event), index);
                return;
            }
        };
        if self.held.as_ref().is_some_and(|h| h.reasoning != reasoning) {
            self.flush_into(sink);
        }
        let n = self.n;
        let held = self.held.get_or_insert_with(|| Held {
            reasoning,
            text: String::new(),
            chars: 0,
            ts: None,
            fields: Map::new(),
            origin: index,
        });
        held.ts.clone_from(&event.ts);
        held.origin = index;
        let mut extra = Some(&event.extra);
        let mut rest = text.as_str();
        while !rest.is_empty() {
            // The chars that fill the held piece, or all that is left.
            let want = n - held.chars;
            let (cut, taken) = match rest.char_indices().nth(want) {
                Some((at, _)) => (at, want),
                None => (rest.len(), rest.chars().count()),
            };
            held.text.push_str(&rest[..cut]);
            held.chars += taken;
            rest = &rest[cut..];
            if held.chars == n {
                if rest.is_empty() {
                    // This piece holds the delta's last char: its fields too.
                    held.fields.extend(extra.take().into_iter().flatten().map(clone_field));
                }
                sink(Cow::Owned(held.take_piece()), index);
            }
        }
        if held.chars > 0 {
            held.fields.extend(extra.into_iter().flatten().map(clone_field));
        } else {
            self.held = None;
        }
    }

    /// The last, shorter piece of the text held.
    pub fn flush(&mut self, out: &mut Vec<(Event, usize)>) {
        self.flush_into(&mut |e, origin| out.push((e.into_owned(), origin)));
    }

    pub fn flush_into(&mut self, sink: &mut dyn FnMut(Cow<'_, Event>, usize)) {
        if let Some(mut h) = self.held.take().filter(|h| h.chars > 0) {
            let origin = h.origin;
            sink(Cow::Owned(h.take_piece()), origin);
        }
    }
}

/// The events of a stream re-cut into `n`-char deltas (`None`: as recorded).
pub fn rechunked(events: impl IntoIterator<Item = Event>, n: Option<usize>) -> Vec<Event> {
    let Some(n) = n else {
        return events.into_iter().collect();
    };
    let mut r = Rechunker::new(n);
    let mut out = Vec::new();
    for (i, e) in events.into_iter().enumerate() {
        r.push(i, &e, &mut out);
    }
    r.flush(&mut out);
    out.into_iter().map(|(e, _)| e).collect()
}

/// Output tokens an event's own `usage` field records (native logs keep an
/// importer's usage there), if any.
pub fn usage_tokens(event: &Event) -> Option<u64> {
    let usage = event.extra.get("usage")?;
    ["output_tokens", "completion_tokens", "candidatesTokenCount"]
        .iter()
        .find_map(|k| usage.get(k).and_then(Value::as_u64))
}

/// Chars per token where the log records no usage.
pub const CHARS_PER_TOKEN: usize = 4;

/// What streamed after a point of the stream: the work a detection there
/// would have saved (or, on a false positive, cut short).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct After {
    pub chars: usize,
    pub tool_calls: usize,
    /// From the log's usage where it has any, else chars / 4.
    pub tokens: usize,
    /// `tokens` came from the log's usage.
    pub tokens_recorded: bool,
}

impl After {
    /// `~` when the tokens are estimated from chars, else nothing.
    pub fn approx(&self) -> &'static str {
        if self.tokens_recorded {
            ""
        } else {
            "~"
        }
    }

    /// "496 chars, ~124 tokens".
    pub fn chars_and_tokens(&self) -> String {
        format!("{} chars, {}{} tokens", self.chars, self.approx(), self.tokens)
    }

    /// "496 chars, ~124 tokens, 3 calls".
    pub fn describe(&self) -> String {
        format!("{}, {} calls", self.chars_and_tokens(), self.tool_calls)
    }
}

/// Running totals of a stream: text chars, tool calls, recorded tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    chars: usize,
    tool_calls: usize,
    tokens: usize,
    any_usage: bool,
}

impl Tally {
    pub fn push(&mut self, e: &Event) {
        match &e.kind {
            EventKind::Reasoning { text } | EventKind::Content { text } => {
                self.chars += loopscope_core::text::char_count(text)
            }
            EventKind::ToolCall { .. } => self.tool_calls += 1,
            _ => {}
        }
        if let Some(t) = usage_tokens(e) {
            self.any_usage = true;
            self.tokens += t as usize;
        }
    }

    /// What this (later) tally adds to `earlier`.
    pub fn since(&self, earlier: &Tally) -> After {
        let chars = self.chars - earlier.chars;
        let (tokens, tokens_recorded) = if self.any_usage {
            (self.tokens - earlier.tokens, true)
        } else {
            (chars.div_ceil(CHARS_PER_TOKEN), false)
        };
        After {
            chars,
            tool_calls: self.tool_calls - earlier.tool_calls,
            tokens,
            tokens_recorded,
        }
    }
}

/// What one profile's run found in a stream.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub label: String,
    pub detections: usize,
    /// The first detection, as found.
    pub first: Option<Detection>,
    /// What streamed after the first detection's event.
    pub after: After,
}

/// Per-run summaries, built as a stream is read: the tally is taken when a
/// run's first detection arrives (after the event that caused it).
pub struct Summarizer {
    tally: Tally,
    runs: Vec<(RunSummary, Option<Tally>)>,
}

impl Summarizer {
    pub fn new(labels: &[String]) -> Summarizer {
        Summarizer {
            tally: Tally::default(),
            runs: labels
                .iter()
                .map(|l| {
                    let s = RunSummary {
                        label: l.clone(),
                        detections: 0,
                        first: None,
                        after: After::default(),
                    };
                    (s, None)
                })
                .collect(),
        }
    }

    /// The next event of the stream, then the detections it caused.
    pub fn push(&mut self, e: &Event, found: &[Detection]) {
        self.tally.push(e);
        self.found(found);
    }

    /// Detections made after the last event (a check at the stream's end).
    pub fn found(&mut self, found: &[Detection]) {
        for d in found {
            if let Some((s, at)) = self.runs.get_mut(d.run) {
                s.detections += 1;
                if s.first.is_none() {
                    s.first = Some(d.clone());
                    *at = Some(self.tally);
                }
            }
        }
    }

    pub fn finish(self) -> Vec<RunSummary> {
        let total = self.tally;
        self.runs
            .into_iter()
            .map(|(mut s, at)| {
                if let Some(at) = at {
                    s.after = total.since(&at);
                }
                s
            })
            .collect()
    }
}

/// `tune --vary ID.PARAM=SPEC`: the values to try. SPEC is a list
/// (`5,8,13`), a range (`5..20`, both ends included) or a stepped range
/// (`5..20:5`); at most 1,000 values.
pub fn vary_values(spec: &str) -> Result<Vec<String>, String> {
    let spec = spec.trim();
    if let Some((from, rest)) = spec.split_once("..") {
        let (to, step) = rest.split_once(':').unwrap_or((rest, "1"));
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("--vary: {s:?} is not a whole number (ranges are FROM..TO or FROM..TO:STEP)"))
        };
        let (from, to, step) = (num(from)?, num(to)?, num(step)?);
        if step == 0 || to < from {
            return Err(format!("--vary: empty range {spec:?}"));
        }
        let n = (to - from) / step + 1;
        if n > 1000 {
            return Err(format!("--vary: {n} values in {spec:?}; at most 1000"));
        }
        return Ok((0..n).map(|i| (from + i * step).to_string()).collect());
    }
    let values: Vec<String> = spec
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect();
    if values.is_empty() {
        return Err("--vary: no values".to_string());
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::event::Event;
    use serde_json::json;

    fn texts(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| match &e.kind {
                EventKind::Reasoning { text } => format!("r:{text}"),
                EventKind::Content { text } => format!("c:{text}"),
                _ => e.type_name().to_string(),
            })
            .collect()
    }

    #[test]
    fn text_is_joined_and_recut_and_other_events_stay() {
        let events = vec![
            Event::request(),
            Event::reasoning("ab"),
            Event::reasoning("cdefg"),
            Event::reasoning("h"),
            Event::content("思考思考"),
            Event::tool_call("ls", json!({})),
            Event::content("xyz"),
        ];
        let out = rechunked(events, Some(3));
        assert_eq!(
            texts(&out),
            vec![
                "request",
                "r:abc",
                "r:def",
                "r:gh",
                "c:思考思",
                "c:考",
                "tool_call",
                "c:xyz"
            ]
        );
        let mut r = Rechunker::new(4);
        let mut got = Vec::new();
        r.push(0, &Event::reasoning("abcdef"), &mut got);
        r.push(1, &Event::reasoning("gh"), &mut got);
        r.flush(&mut got);
        let origins: Vec<usize> = got.iter().map(|(_, o)| *o).collect();
        assert_eq!(origins, vec![0, 1], "each piece names the delta holding its last char");
    }

    #[test]
    fn a_deltas_fields_go_with_the_piece_holding_its_last_char_once() {
        let with_usage = |text: &str, tokens: u64| {
            let mut e = Event::content(text).at(1.5);
            e.extra.insert("usage".into(), json!({ "output_tokens": tokens }));
            e
        };
        let mut got = Vec::new();
        let mut r = Rechunker::new(3);
        r.push(0, &with_usage("abcdefg", 7), &mut got);
        r.push(1, &with_usage("hi", 2), &mut got);
        r.flush(&mut got);
        let usage: Vec<Option<u64>> = got.iter().map(|(e, _)| usage_tokens(e)).collect();
        // abc def | ghi: g ends delta 0, i ends delta 1.
        assert_eq!(
            texts(&got.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>()),
            ["c:abc", "c:def", "c:ghi"]
        );
        assert_eq!(usage, [None, None, Some(2)]);
        assert_eq!(
            got[2].0.extra["usage"]["output_tokens"], 2,
            "the later delta's fields win"
        );
        assert!(got
            .iter()
            .all(|(e, _)| e.ts == Some(loopscope_core::event::Ts::Seconds(1.5))));
        // Cut exactly at a delta's end: that piece has its fields.
        let mut got = Vec::new();
        let mut r = Rechunker::new(2);
        r.push(0, &with_usage("abcd", 4), &mut got);
        r.flush(&mut got);
        let usage: Vec<Option<u64>> = got.iter().map(|(e, _)| usage_tokens(e)).collect();
        assert_eq!(usage, [None, Some(4)]);
    }

    #[test]
    fn what_streams_after_each_runs_first_detection() {
        let fired = |run: usize, event: usize| {
            let mut d = Detection::new("x", event, loopscope_core::event::Channel::Tools, None);
            d.run = run;
            d
        };
        let mut s = Summarizer::new(&["a".into(), "b".into()]);
        s.push(&Event::request(), &[]);
        s.push(&Event::reasoning("abcdefgh"), &[fired(1, 1)]);
        s.push(&Event::tool_call("ls", json!({})), &[fired(1, 2)]);
        s.push(&Event::content("0123456789"), &[]);
        let out = s.finish();
        assert_eq!((out[0].detections, out[0].first.is_none()), (0, true));
        assert_eq!(out[1].detections, 2);
        let a = out[1].after;
        assert_eq!((a.chars, a.tool_calls, a.tokens, a.tokens_recorded), (10, 1, 3, false));
        // With usage in the log, its tokens count.
        let mut u = Event::content("x");
        u.extra.insert("usage".into(), json!({"output_tokens": 120}));
        let (mut t0, mut t1) = (Tally::default(), Tally::default());
        t1.push(&u);
        t0.push(&Event::request());
        assert_eq!(t1.since(&t0).tokens, 120);
        assert!(t1.since(&t0).tokens_recorded);
    }

    #[test]
    fn vary_takes_lists_and_ranges() {
        assert_eq!(vary_values("5..8").unwrap(), vec!["5", "6", "7", "8"]);
        assert_eq!(vary_values("5..20:5").unwrap(), vec!["5", "10", "15", "20"]);
        assert_eq!(vary_values("3, 8,13").unwrap(), vec!["3", "8", "13"]);
        assert!(vary_values("9..2").is_err());
        assert!(vary_values("1..5000").unwrap_err().contains("at most 1000"));
        assert!(vary_values("a..b").is_err());
    }
}
