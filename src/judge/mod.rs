//! The LLM judge, live: at each check the `llm-judge` schedule makes, the
//! conversation so far is sent to an OpenAI-compatible endpoint and the
//! verdicts are inserted into the stream as `loop_check` events — so the
//! detector (which does no I/O) replays them, and the written stream can be
//! viewed again for free. Bad endpoints are survived: every failure is a
//! warning and a verdict with no usable answer, as gemini-cli counts it.

pub mod command;

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::{json, Value};

use loopscope_core::detect::judge::{JudgeParams, Outcome, Schedule, ALONE_FIELD};
use loopscope_core::event::{Event, EventKind};

/// loopscope's own prompt for the judge (replaceable with `--judge-prompt`).
pub const DEFAULT_PROMPT: &str = "You review the conversation of an AI coding agent with a user and its tools. \
Decide whether the agent is stuck in an unproductive loop: repeating the same actions or words, \
cycling through the same few attempts with the same results, or restating its plan without acting on it. \
Steady progress, even when slow, is not a loop; neither is repetition the user asked for. \
Answer with JSON only: {\"analysis\": a short explanation, \"confidence\": a number from 0 (certainly not a loop) to 1 (certainly a loop)}.";

/// Where and how to ask.
#[derive(Clone)]
pub struct Endpoint {
    /// The base URL; `/chat/completions` is appended (e.g. `http://localhost:11434/v1`).
    pub base_url: String,
    pub model: String,
    pub double_check_model: Option<String>,
    /// The API key (read from the environment variable the user named; never printed).
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub attempts: usize,
    pub prompt: String,
}

impl std::fmt::Debug for Endpoint {
    /// Everything but the key, which is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("double_check_model", &self.double_check_model)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("timeout", &self.timeout)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// What stands for the API key wherever an endpoint's text would show it.
pub const REDACTED: &str = "[API key redacted]";

/// Chars of an endpoint's error body kept in a warning (and in the
/// verdict's analysis): enough to see what went wrong, not a page of it.
pub const ERROR_EXCERPT: usize = 160;

/// `text` with every occurrence of `key` replaced by [`REDACTED`]. An
/// endpoint may echo the key it was sent (a 401 "invalid key sk-…"); what
/// it says goes into warnings and the `-o` file, and the key must not.
pub fn redact(text: &str, key: Option<&str>) -> String {
    match key.map(str::trim).filter(|k| !k.is_empty()) {
        Some(k) if text.contains(k) => text.replace(k, REDACTED),
        _ => text.to_string(),
    }
}

/// An error body as a short, one-line excerpt with the key redacted
/// (redacted before it is cut, so no prefix of the key survives the cut).
fn excerpt(body: &str, key: Option<&str>) -> String {
    let one_line = redact(body, key).split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&one_line, ERROR_EXCERPT)
}

/// What one request got.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Verdict {
        confidence: f64,
        analysis: String,
    },
    /// No usable answer, and why (for the warning).
    Nothing(String),
}

/// The conversation as the judge sees it: chat messages, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    original: Option<String>,
    entries: VecDeque<Entry>,
    /// The model turn being streamed: its text and tool calls.
    text: String,
    calls: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
enum Entry {
    User(String),
    /// Model text and the tool calls it made.
    Model {
        text: String,
        calls: Vec<String>,
    },
    ToolResponse(String),
}

/// Entries kept at most (the request sends the last `history` of them).
const MAX_ENTRIES: usize = 200;

impl Conversation {
    fn close_model(&mut self) {
        if !self.text.is_empty() || !self.calls.is_empty() {
            let e = Entry::Model {
                text: std::mem::take(&mut self.text),
                calls: std::mem::take(&mut self.calls),
            };
            self.push(e);
        }
    }

    fn push(&mut self, e: Entry) {
        self.entries.push_back(e);
        if self.entries.len() > MAX_ENTRIES {
            self.entries.pop_front();
        }
    }

    pub fn observe(&mut self, e: &Event) {
        match &e.kind {
            EventKind::Prompt { text } => {
                *self = Conversation::default();
                self.original = text.clone();
                if let Some(t) = text {
                    self.push(Entry::User(t.clone()));
                }
            }
            EventKind::Request { .. } => self.close_model(),
            EventKind::Content { text } => self.text.push_str(text),
            EventKind::ToolCall { name, args, .. } => self.calls.push(format!("{name}({args})")),
            EventKind::ToolResult { ok, output, .. } => {
                self.close_model();
                let out = match output {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let status = if *ok { "ok" } else { "error" };
                self.push(Entry::ToolResponse(format!("[{status}] {}", cut(&out, 4000))));
            }
            _ => {}
        }
    }

    /// The last `history` entries, as gemini-cli trims them: trailing model
    /// entries made only of tool calls and leading tool responses removed.
    fn window(&self, history: usize) -> Vec<&Entry> {
        let mut w: Vec<&Entry> = self.entries.iter().rev().take(history).collect();
        w.reverse();
        while matches!(w.last(), Some(Entry::Model { text, .. }) if text.is_empty()) {
            w.pop();
        }
        let lead = w.iter().take_while(|e| matches!(e, Entry::ToolResponse(_))).count();
        w.drain(..lead);
        w
    }

    /// The chat messages of a check.
    pub fn messages(&self, history: usize, prompt: &str) -> Vec<Value> {
        let mut m = vec![json!({"role": "system", "content": prompt})];
        if let Some(o) = &self.original {
            m.push(json!({"role": "user", "content": format!("<original_request>\n{o}\n</original_request>")}));
        }
        for e in self.window(history) {
            m.push(match e {
                Entry::User(t) => json!({"role": "user", "content": t}),
                Entry::Model { text, calls } => {
                    let mut c = text.clone();
                    for call in calls {
                        c.push_str(&format!("\n[tool call] {call}"));
                    }
                    json!({"role": "assistant", "content": c})
                }
                Entry::ToolResponse(r) => json!({"role": "user", "content": format!("[tool response] {r}")}),
            });
        }
        m.push(
            json!({"role": "user", "content": "Is the agent above stuck in a loop? Answer with the JSON object only."}),
        );
        m
    }
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The JSON schema of the answer (structured output).
fn response_format() -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": "loop_verdict",
            "schema": {
                "type": "object",
                "properties": {
                    "analysis": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                },
                "required": ["analysis", "confidence"]
            }
        }
    })
}

/// The request body for `model`.
pub fn body(model: &str, messages: &[Value]) -> Value {
    json!({
        "model": model,
        "messages": messages,
        "temperature": 0,
        "response_format": response_format(),
    })
}

/// A verdict from a chat completion's text (JSON, perhaps in a code fence).
pub fn parse_answer(text: &str) -> Answer {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map(|r| r.trim_end().trim_end_matches("```"))
        .unwrap_or(t);
    let Ok(v) = serde_json::from_str::<Value>(t.trim()) else {
        return Answer::Nothing("the answer is not JSON".to_string());
    };
    match v.get("confidence").and_then(Value::as_f64) {
        Some(c) if (0.0..=1.0).contains(&c) => Answer::Verdict {
            confidence: c,
            analysis: v
                .get("analysis")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        Some(c) => Answer::Nothing(format!("confidence {c} is outside 0..1")),
        None => Answer::Nothing("the answer has no numeric confidence".to_string()),
    }
}

/// Requests this process made to judge endpoints: answered with a usable
/// verdict, or not (for `/metrics`).
static VERDICTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static NO_ANSWER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The judge's requests so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    pub verdicts: u64,
    pub no_answer: u64,
}

pub fn calls() -> Calls {
    use std::sync::atomic::Ordering::Relaxed;
    Calls {
        verdicts: VERDICTS.load(Relaxed),
        no_answer: NO_ANSWER.load(Relaxed),
    }
}

impl Endpoint {
    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// Asks `model` once per attempt until one answer is usable. Whatever
    /// the endpoint said comes back with the API key redacted.
    pub fn ask(&self, model: &str, messages: &[Value]) -> Answer {
        let mut last = Answer::Nothing("no attempt".to_string());
        for _ in 0..self.attempts.max(1) {
            last = self.ask_once(model, messages);
            let answered = matches!(last, Answer::Verdict { .. });
            let counter = if answered { &VERDICTS } else { &NO_ANSWER };
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if answered {
                break;
            }
        }
        let key = self.api_key.as_deref();
        match last {
            Answer::Verdict { confidence, analysis } => Answer::Verdict {
                confidence,
                analysis: redact(&analysis, key),
            },
            Answer::Nothing(why) => Answer::Nothing(redact(&why, key)),
        }
    }

    fn ask_once(&self, model: &str, messages: &[Value]) -> Answer {
        // Redirects are followed by post_within_origin, not by ureq: one to
        // another origin would take the conversation (and ureq would drop
        // the key, so that host's answer would be taken for the verdict).
        let agent = crate::http::endpoint::agent(self.timeout, None);
        let body = body(model, messages).to_string();
        let bearer = self.api_key.as_ref().map(|k| format!("Bearer {k}"));
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(bearer.as_deref().map(|b| ("Authorization", b)));
        let mut resp = match crate::http::endpoint::post_within_origin(&agent, &self.url(), &headers, body.as_bytes()) {
            Ok(r) => r,
            Err(crate::http::endpoint::PostError::Request(e)) => {
                return Answer::Nothing(format!("request failed: {e}"))
            }
            Err(crate::http::endpoint::PostError::Redirect(why)) => return Answer::Nothing(why),
        };
        let status = resp.status().as_u16();
        let text = match resp.body_mut().with_config().limit(4 << 20).read_to_string() {
            Ok(t) => t,
            Err(e) => return Answer::Nothing(format!("cannot read the answer: {e}")),
        };
        if status >= 400 {
            return Answer::Nothing(format!("HTTP {status}: {}", excerpt(&text, self.api_key.as_deref())));
        }
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            return Answer::Nothing("the response is not JSON".to_string());
        };
        match v.pointer("/choices/0/message/content").and_then(Value::as_str) {
            Some(content) => parse_answer(content),
            None => Answer::Nothing("the response has no choices[0].message.content".to_string()),
        }
    }
}

/// Something that answers checks: a real endpoint, or (for `--dry-run`) a
/// recorder of the requests.
pub trait Asker {
    fn ask(&mut self, stage: u8, model: &str, messages: &[Value]) -> Answer;
}

impl Asker for Endpoint {
    fn ask(&mut self, _stage: u8, model: &str, messages: &[Value]) -> Answer {
        Endpoint::ask(self, model, messages)
    }
}

/// Runs a stream through the judge: copies every event, and after each
/// `request` at which a check is due inserts the verdicts it got.
pub struct Inserter<A: Asker> {
    pub schedule: Schedule,
    pub conversation: Conversation,
    pub asker: A,
    pub model: String,
    pub double_check_model: Option<String>,
    pub prompt: String,
    /// Checks made, and warnings about answers that were not usable.
    pub checks: usize,
    pub warnings: Vec<String>,
    /// The turns (of their prompt) at which the judge called it a loop.
    pub loops: Vec<usize>,
    /// Checks one of whose answers was not usable (a failure, a refused
    /// redirect, an answer that is no verdict).
    pub unanswered: usize,
}

impl<A: Asker> Inserter<A> {
    /// An inserter asking `asker` with `endpoint`'s models and prompt.
    pub fn new(params: &JudgeParams, endpoint: &Endpoint, asker: A) -> Inserter<A> {
        let mut params = *params;
        // With no double-check model, the first model decides (as gemini-cli does).
        params.double_check = params.double_check && endpoint.double_check_model.is_some();
        Inserter {
            schedule: Schedule::new(&params),
            conversation: Conversation::default(),
            asker,
            model: endpoint.model.clone(),
            double_check_model: endpoint.double_check_model.clone(),
            prompt: endpoint.prompt.clone(),
            checks: 0,
            warnings: Vec::new(),
            loops: Vec::new(),
            unanswered: 0,
        }
    }

    fn verdict_event(&self, stage: u8, model: &str, answer: &Answer) -> Event {
        let (confidence, analysis) = match answer {
            Answer::Verdict { confidence, analysis } => (Some(*confidence), Some(analysis.clone())),
            Answer::Nothing(why) => (None, Some(format!("no usable answer: {why}"))),
        };
        let mut e = Event::new(EventKind::LoopCheck {
            confidence,
            analysis,
            detector: Some("llm-judge".to_string()),
            model: Some(model.to_string()),
            stage: Some(stage),
        });
        // No double check will follow (none is configured): the replay
        // lets this verdict decide alone, as it does here.
        if stage == 1 && !self.schedule.params.double_check {
            e.extra.insert(ALONE_FIELD.to_string(), Value::Bool(false));
        }
        e
    }

    /// Takes the next event; appends it and any verdicts to `out`. Verdicts
    /// already recorded for the judge are replaced by the new ones.
    pub fn push(&mut self, event: Event, out: &mut Vec<Event>) {
        match &event.kind {
            EventKind::LoopCheck { detector, .. } if detector.as_deref().is_none_or(|d| d == "llm-judge") => return,
            EventKind::Prompt { .. } => self.schedule.reset(),
            EventKind::Request { .. } => {
                self.conversation.observe(&event);
                let due = self.schedule.turn();
                out.push(event);
                if due {
                    self.check(out);
                }
                return;
            }
            _ => {}
        }
        self.conversation.observe(&event);
        out.push(event);
    }

    fn check(&mut self, out: &mut Vec<Event>) {
        self.checks += 1;
        let turn = self.schedule.turns;
        let messages = self.conversation.messages(self.schedule.params.history, &self.prompt);
        let model = self.model.clone();
        let first = self.asker.ask(1, &model, &messages);
        if let Answer::Nothing(why) = &first {
            self.unanswered += 1;
            self.warnings.push(format!("turn {turn}, {model}: {why}"));
        }
        out.push(self.verdict_event(1, &model, &first));
        let c = match first {
            Answer::Verdict { confidence, .. } => Some(confidence),
            Answer::Nothing(_) => None,
        };
        match self.schedule.verdict(1, c) {
            Outcome::DoubleCheck => {}
            Outcome::Loop => return self.loops.push(turn),
            Outcome::NotLoop => return,
        }
        let Some(second_model) = self.double_check_model.clone() else {
            return;
        };
        let second = self.asker.ask(2, &second_model, &messages);
        if let Answer::Nothing(why) = &second {
            self.unanswered += 1;
            self.warnings.push(format!("turn {turn}, {second_model}: {why}"));
        }
        out.push(self.verdict_event(2, &second_model, &second));
        let c2 = match second {
            Answer::Verdict { confidence, .. } => Some(confidence),
            Answer::Nothing(_) => None,
        };
        if self.schedule.verdict(2, c2) == Outcome::Loop {
            self.loops.push(turn);
        }
    }
}

/// `--judge live`: where to ask, and the schedule's parameters.
#[derive(Clone, Debug)]
pub struct LiveJudge {
    pub endpoint: Endpoint,
    pub params: JudgeParams,
}

impl LiveJudge {
    /// An inserter asking this endpoint.
    pub fn inserter(&self) -> Inserter<Endpoint> {
        Inserter::new(&self.params, &self.endpoint, self.endpoint.clone())
    }

    /// `sink`, with the verdicts inserted as events pass (see [`judging`]).
    pub fn wrap(&self, sink: crate::replay::feed::Sink) -> crate::replay::feed::Sink {
        judging(self.inserter(), sink)
    }
}

/// A feed sink that asks the judge as events pass (on the reading thread,
/// so the viewer never waits) and forwards them with the verdicts.
pub fn judging<A: Asker + Send + 'static>(
    mut inserter: Inserter<A>,
    mut sink: crate::replay::feed::Sink,
) -> crate::replay::feed::Sink {
    use crate::replay::feed::Feed;
    Box::new(move |f| match f {
        Feed::Events(batch) => {
            let mut out = Vec::with_capacity(batch.len());
            for e in batch {
                inserter.push(e, &mut out);
            }
            for w in inserter.warnings.drain(..) {
                if !sink(Feed::Warning(format!("judge: {w}"))) {
                    return false;
                }
            }
            sink(Feed::Events(out))
        }
        other => sink(other),
    })
}

/// The most checks a stream of `turns` turns per prompt can get: every
/// interval at its shortest.
pub fn max_checks(params: &JudgeParams, turns_per_prompt: &[usize]) -> usize {
    let step = params.initial_interval.min(params.interval_min).max(1);
    turns_per_prompt
        .iter()
        .map(|&t| {
            if t < params.after_turns {
                0
            } else {
                1 + (t - params.after_turns) / step
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers from a script, in order.
    struct Script(Vec<Answer>);

    impl Asker for Script {
        fn ask(&mut self, _stage: u8, _model: &str, _messages: &[Value]) -> Answer {
            if self.0.is_empty() {
                Answer::Nothing("script ended".into())
            } else {
                self.0.remove(0)
            }
        }
    }

    #[test]
    fn the_viewers_feed_gets_verdicts_and_warnings_as_events_pass() {
        use crate::replay::feed::Feed;
        use std::sync::{Arc, Mutex};
        let params = JudgeParams {
            after_turns: 2,
            history: 20,
            threshold: 0.9,
            strict: false,
            interval_min: 5,
            interval_max: 15,
            initial_interval: 1,
            double_check: false,
        };
        let script = Script(vec![Answer::Nothing("HTTP 500".into())]);
        let endpoint = Endpoint {
            base_url: String::new(),
            model: "flash".into(),
            double_check_model: None,
            api_key: None,
            timeout: Duration::from_secs(1),
            attempts: 1,
            prompt: "P".into(),
        };
        let ins = Inserter::new(&params, &endpoint, script);
        let got: Arc<Mutex<Vec<Feed>>> = Arc::default();
        let seen = Arc::clone(&got);
        let mut sink = judging(
            ins,
            Box::new(move |f| {
                seen.lock().unwrap().push(f);
                true
            }),
        );
        let events = vec![
            Event::prompt("go"),
            Event::request(),
            Event::request(),
            Event::content("x"),
        ];
        assert!(sink(Feed::Events(events)));
        let got = got.lock().unwrap();
        assert!(matches!(&got[0], Feed::Warning(w) if w.contains("turn 2") && w.contains("HTTP 500")));
        let Feed::Events(out) = &got[1] else { panic!("events") };
        assert_eq!(out.len(), 5, "the verdict after the second request");
        assert!(matches!(out[3].kind, EventKind::LoopCheck { confidence: None, .. }));
    }

    #[test]
    fn answers_are_read_leniently_and_checked() {
        assert_eq!(
            parse_answer("```json\n{\"analysis\":\"x\",\"confidence\":0.7}\n```"),
            Answer::Verdict {
                confidence: 0.7,
                analysis: "x".into()
            }
        );
        assert!(matches!(parse_answer("{\"confidence\": 1.7}"), Answer::Nothing(w) if w.contains("outside")));
        assert!(matches!(parse_answer("{\"confidence\": \"high\"}"), Answer::Nothing(_)));
        assert!(matches!(parse_answer("yes, a loop"), Answer::Nothing(w) if w.contains("not JSON")));
    }

    #[test]
    fn the_window_drops_trailing_call_only_turns_and_leading_responses() {
        let mut c = Conversation::default();
        c.observe(&Event::prompt("fix it"));
        c.observe(&Event::request());
        c.observe(&Event::tool_call("ls", json!({})));
        c.observe(&Event::tool_result(true));
        c.observe(&Event::request());
        c.observe(&Event::content("done?"));
        c.observe(&Event::tool_call("ls", json!({})));
        c.observe(&Event::request());
        c.observe(&Event::tool_call("ls", json!({})));
        c.observe(&Event::request());
        let m = c.messages(3, "P");
        let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap()).collect();
        // system, original request, then the window: the leading tool response
        // and the trailing call-only turn are gone.
        assert_eq!(roles, vec!["system", "user", "assistant", "user"]);
        assert!(m[1]["content"].as_str().unwrap().contains("<original_request>"));
        assert!(m[2]["content"].as_str().unwrap().contains("done?"));
    }
}
