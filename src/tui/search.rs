//! `/` search over the whole stream: every request's reasoning and content
//! (matches may cross delta boundaries), prompts, tool names, arguments and
//! results, notes and judge verdicts. Smart case: a pattern with no upper
//! case letter ignores case.

use regex::{Regex, RegexBuilder};

use loopscope_core::detect::Span;
use loopscope_core::engine::Tape;
use loopscope_core::event::{Channel, EventKind};

/// Most hits kept per search, so a pattern like `.` stays responsive.
pub const MAX_HITS: usize = 10_000;
/// Text held per channel while a request is searched; past it the held
/// text is searched and let go (a match across that cut is not found).
const HELD_TEXT: usize = 16 << 20;

/// A regex, case-insensitive unless the pattern has an upper case letter.
pub fn smart_case(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(!pattern.chars().any(char::is_uppercase))
        .size_limit(1 << 22)
        .build()
        .map_err(|e| {
            // regex says where, then `error: what`: the what alone.
            let text = e.to_string();
            let last = text.lines().last().unwrap_or_default().trim();
            last.strip_prefix("error: ").unwrap_or(last).to_string()
        })
}

/// Where a match is in a request's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextHit {
    /// The `request`/`prompt` event that started the buffer (as the engine says).
    pub request: Option<usize>,
    pub channel: Channel,
    pub span: Span,
}

/// One match: the event to show it at, and for text where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub event: usize,
    pub text: Option<TextHit>,
}

#[derive(Clone, Debug, Default)]
pub struct Search {
    pub pattern: Option<Regex>,
    pub hits: Vec<Hit>,
    pub current: Option<usize>,
    /// Events the hits were found in; a grown stream is searched again.
    searched: usize,
}

impl Search {
    pub fn set(&mut self, pattern: Option<Regex>, tape: &Tape) {
        self.pattern = pattern;
        self.current = None;
        self.hits.clear();
        self.searched = 0;
        self.update(tape);
    }

    /// Searches again if the stream grew since the last search.
    pub fn update(&mut self, tape: &Tape) {
        if let Some(re) = &self.pattern {
            if self.searched != tape.len() {
                self.hits = find(re, tape);
                self.searched = tape.len();
                self.current = self.current.filter(|&c| c < self.hits.len());
            }
        }
    }

    /// The next (or previous) hit from the current one, or from the
    /// position when none is current (the first after the shown events).
    pub fn step(&mut self, forward: bool, cursor: usize) -> Option<Hit> {
        let n = self.hits.len();
        if n == 0 {
            return None;
        }
        let next = match self.current {
            Some(i) if forward => (i + 1) % n,
            Some(i) => (i + n - 1) % n,
            None if forward => {
                let after = self.hits.partition_point(|h| h.event < cursor);
                if after == n {
                    0
                } else {
                    after
                }
            }
            None => self
                .hits
                .partition_point(|h| h.event + 1 < cursor)
                .checked_sub(1)
                .unwrap_or(n - 1),
        };
        self.current = Some(next);
        Some(self.hits[next])
    }

    /// Text hits in the buffer of `request`'s `channel`.
    pub fn in_buffer(&self, request: Option<usize>, channel: Channel) -> impl Iterator<Item = Span> + '_ {
        self.hits
            .iter()
            .filter_map(|h| h.text)
            .filter(move |t| t.request == request && t.channel == channel)
            .map(|t| t.span)
    }
}

/// One channel's text of the request being searched.
#[derive(Default)]
struct Held {
    text: String,
    /// Chars before `text` in the buffer (held text already let go).
    base_chars: usize,
    /// (byte in `text`, event) where each delta starts.
    deltas: Vec<(usize, usize)>,
}

impl Held {
    fn push(&mut self, event: usize, text: &str) {
        self.deltas.push((self.text.len(), event));
        self.text.push_str(text);
    }

    /// Searches the held text; keeps nothing.
    fn flush(&mut self, re: &Regex, request: Option<usize>, channel: Channel, hits: &mut Vec<Hit>) {
        let (mut byte, mut chars) = (0, self.base_chars);
        for m in re.find_iter(&self.text).filter(|m| !m.is_empty()) {
            if hits.len() >= MAX_HITS {
                break;
            }
            chars += self.text[byte..m.start()].chars().count();
            let len = m.as_str().chars().count();
            // The match is whole once the delta holding its last byte is shown.
            let k = self.deltas.partition_point(|&(b, _)| b < m.end()) - 1;
            hits.push(Hit {
                event: self.deltas[k].1,
                text: Some(TextHit {
                    request,
                    channel,
                    span: Span::new(chars, chars + len),
                }),
            });
            chars += len;
            byte = m.end();
        }
        self.base_chars += chars - self.base_chars + self.text[byte..].chars().count();
        self.text.clear();
        self.deltas.clear();
    }
}

/// Every match of `re` in the stream, by event.
fn find(re: &Regex, tape: &Tape) -> Vec<Hit> {
    let mut hits = Vec::new();
    let mut request = None;
    let mut held = [Held::default(), Held::default()];
    let flush = |held: &mut [Held; 2], request, hits: &mut Vec<Hit>, reset: bool| {
        held[0].flush(re, request, Channel::Reasoning, hits);
        held[1].flush(re, request, Channel::Content, hits);
        if reset {
            held[0].base_chars = 0;
            held[1].base_chars = 0;
        }
    };
    for i in 0..tape.len() {
        if hits.len() >= MAX_HITS {
            break;
        }
        let Some(e) = tape.event(i) else { continue };
        let found = match &e.kind {
            EventKind::Prompt { text } => {
                flush(&mut held, request, &mut hits, true);
                request = Some(i);
                text.as_deref().is_some_and(|t| re.is_match(t))
            }
            EventKind::Request { id } => {
                flush(&mut held, request, &mut hits, true);
                request = Some(i);
                id.as_deref().is_some_and(|t| re.is_match(t))
            }
            EventKind::Reasoning { text } | EventKind::Content { text } => {
                let c = usize::from(matches!(e.kind, EventKind::Content { .. }));
                held[c].push(i, text);
                if held[c].text.len() > HELD_TEXT {
                    let channel = if c == 0 { Channel::Reasoning } else { Channel::Content };
                    held[c].flush(re, request, channel, &mut hits);
                }
                false
            }
            EventKind::ToolCall { name, args, id } => {
                re.is_match(name) || re.is_match(&args.to_string()) || id.as_deref().is_some_and(|t| re.is_match(t))
            }
            EventKind::ToolResult { output, .. } => match output {
                Some(serde_json::Value::String(s)) => re.is_match(s),
                Some(v) => re.is_match(&v.to_string()),
                None => false,
            },
            EventKind::Note { text } => re.is_match(text),
            EventKind::LoopCheck { analysis, .. } => analysis.as_deref().is_some_and(|t| re.is_match(t)),
            EventKind::Meta => re.is_match(&serde_json::Value::Object(e.extra.clone().into_map()).to_string()),
            EventKind::Other { type_name } => re.is_match(type_name),
        };
        if found {
            hits.push(Hit { event: i, text: None });
        }
    }
    flush(&mut held, request, &mut hits, true);
    // Text hits are found when their request ends: put them in event order.
    hits.sort_by_key(|h| (h.event, h.text.map(|t| t.span.start)));
    hits.truncate(MAX_HITS);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::event::Event;
    use loopscope_core::{Profile, Setup};
    use serde_json::json;

    fn tape(events: Vec<Event>) -> Tape {
        Tape::with_events(&Setup::profile(Profile::Seed), events)
    }

    #[test]
    fn finds_text_across_deltas_and_in_every_kind_of_event() {
        let t = tape(vec![
            Event::prompt("Fix the Parser"),
            Event::request(),
            Event::reasoning("思考 the par"),
            Event::reasoning("ser again"),
            Event::tool_call("read_file", json!({"path": "parser.rs"})),
            Event::tool_result_with(false, json!("error: PARSER not found")),
            Event::request(),
            Event::content("no match here"),
            Event::note("parser note"),
        ]);
        let mut s = Search::default();
        s.set(Some(smart_case("parser").unwrap()), &t);
        let events: Vec<usize> = s.hits.iter().map(|h| h.event).collect();
        assert_eq!(events, vec![0, 3, 4, 5, 8]);
        let text = s.hits[1].text.unwrap();
        assert_eq!(text.request, Some(1));
        assert_eq!(text.channel, Channel::Reasoning);
        assert_eq!(text.span, Span::new(7, 13), "char offsets, across the delta cut");
        s.set(Some(smart_case("Parser").unwrap()), &t);
        assert_eq!(s.hits.len(), 1, "an upper case letter makes case matter");
    }

    #[test]
    fn stepping_starts_from_the_position_and_wraps() {
        let t = tape(vec![
            Event::note("a"),
            Event::note("b"),
            Event::note("a"),
            Event::note("a"),
        ]);
        let mut s = Search::default();
        s.set(Some(smart_case("a").unwrap()), &t);
        assert_eq!(s.step(true, 2).unwrap().event, 2);
        assert_eq!(s.step(true, 2).unwrap().event, 3);
        assert_eq!(s.step(true, 2).unwrap().event, 0, "wraps");
        s.current = None;
        assert_eq!(s.step(false, 2).unwrap().event, 0, "back from the position");
        s.set(Some(smart_case("zzz").unwrap()), &t);
        assert_eq!(s.step(true, 0), None);
    }
}
