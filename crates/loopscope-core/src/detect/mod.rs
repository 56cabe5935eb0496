//! Loop detectors (`shared/design/detectors.md`). Each is a deterministic
//! state machine fed the events of one stream in order; none does I/O or
//! looks at the clock. The engine owns the channel buffers and hands each
//! detector an [`Observation`] per event.

mod checkpoint;
mod chunk_chant;
mod cline;
mod content_classes;
mod cycles;
mod evidence;
mod guards;
pub use guards::BUDGETS;
pub mod judge;
pub mod keys;
mod kinds;
mod openclaw;
mod opencode;
mod openhands;
mod openhands_sdk;
pub mod params;
mod paraphrase;
pub(crate) mod periodic;
mod qwen;
pub mod readable;
mod roo;
mod roo_fork;
mod short_repeat;
mod text_loop;
pub(crate) mod tokens;
mod tool_loop;
mod tool_repeat;
mod vllm;

pub use evidence::{CheckpointRun, Detection, DetectorState, Evidence, Span, Status};
pub(crate) use kinds::Kinds;
pub use params::{Params, Profile};
pub use tokens::Encoder;

use crate::event::{Channel, Event, EventKind};
use crate::text::TextBuffer;
use params::ParamSpec;

/// The per-request channel buffers: cleared by `prompt` and `request`.
#[derive(Clone, Debug, Default)]
pub struct Buffers {
    /// The current request's reasoning text.
    pub reasoning: TextBuffer,
    /// The current request's answer text.
    pub content: TextBuffer,
}

impl Buffers {
    /// The buffer of a text channel (`None` for tools and turns).
    pub fn channel(&self, channel: Channel) -> Option<&TextBuffer> {
        match channel {
            Channel::Reasoning => Some(&self.reasoning),
            Channel::Content => Some(&self.content),
            Channel::Tools | Channel::Turns => None,
        }
    }
}

/// One event as a detector sees it, with the buffers already updated.
pub struct Observation<'a> {
    /// The index of the event.
    pub index: usize,
    /// The event.
    pub event: &'a Event,
    /// The buffers after the event was applied.
    pub buffers: &'a Buffers,
    /// Channel lengths before this event's text was appended.
    pub reasoning_before: usize,
    /// The content buffer's length before the event.
    pub content_before: usize,
    /// A tool call's keys, made once for all the detectors that ask
    /// (by `KeyStyle`: canonical, JavaScript, stable).
    /// Shared: the detectors that keep recent calls keep one copy.
    keys: [std::cell::OnceCell<std::sync::Arc<str>>; 3],
}

impl<'a> Observation<'a> {
    /// An observation of `event`, the `index`th, with the buffers after it.
    pub(crate) fn new(
        index: usize,
        event: &'a Event,
        buffers: &'a Buffers,
        reasoning_before: usize,
        content_before: usize,
    ) -> Observation<'a> {
        Observation {
            index,
            event,
            buffers,
            reasoning_before,
            content_before,
            keys: Default::default(),
        }
    }

    /// [`Observation::call_key`] to keep: every detector holding it shares one copy.
    pub(crate) fn shared_call_key(&self, style: keys::KeyStyle) -> Option<&std::sync::Arc<str>> {
        let EventKind::ToolCall { name, args, .. } = &self.event.kind else {
            return None;
        };
        let slot = match style {
            keys::KeyStyle::Canonical => 0,
            keys::KeyStyle::Js => 1,
            keys::KeyStyle::Stable => 2,
        };
        Some(self.keys[slot].get_or_init(|| keys::call_key(name, args, style).into()))
    }
}

/// A detector: fed every event, reports detections and its state.
pub trait Detector: Send + Sync {
    /// The detector's id.
    fn id(&self) -> &'static str;
    /// Looks at one event; pushes what fired onto `out`.
    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>);
    /// What it is doing now.
    fn status(&self, buffers: &Buffers) -> Status;
    /// Every id this object answers for, with its state (a group's members;
    /// otherwise just this detector).
    fn states(&self, buffers: &Buffers) -> Vec<DetectorState> {
        vec![DetectorState {
            id: self.id(),
            status: self.status(buffers),
        }]
    }
    /// Runs at checkpoints in the current request (checkpoint detectors only).
    fn checkpoint_runs(&self) -> &[CheckpointRun] {
        &[]
    }
    /// Whether this detector stops when another latch-sharing detector fires.
    fn shares_latch(&self) -> bool {
        false
    }
    /// A detector sharing this one's latch fired: stop as the real service does.
    fn latch(&mut self, _by: &'static str, _event: usize) {}
    /// The stream is quiet (`watch` has thousands): keep only what cannot
    /// be worked out again; the next event rebuilds the rest. What it
    /// finds is the same either way.
    fn compact(&mut self) {}
    /// The stream ended after event `index - 1`: a detector whose agent
    /// checks once more when its loop would go on reports at `index`
    /// (the OpenHands SDK's check before the next LLM call).
    fn finish(&mut self, _index: usize, _out: &mut Vec<Detection>) {}
    /// Hands it the tokenizer of the run (`--tokenizer`); only detectors
    /// that count tokens keep it.
    fn use_encoder(&mut self, _encoder: &Encoder) {}
    /// One line on what kept it from running exactly, if anything did
    /// (vllm-repetition without token ids or a tokenizer).
    fn caveat(&self) -> Option<String> {
        None
    }
    /// A boxed copy (detectors are cloned for seek snapshots).
    fn clone_box(&self) -> Box<dyn Detector>;
    /// The kinds of event it looks at; the engine does not hand it others
    /// (an event of another kind must leave it as it was).
    fn kinds(&self) -> Kinds {
        Kinds::ALL
    }
}

impl Clone for Box<dyn Detector> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// The kind of detector, for grouping in listings.
pub enum Family {
    /// Reasoning-buffer detectors that run at checkpoints.
    Checkpoint,
    /// gemini-cli's LoopDetectionService (tool calls and content chanting).
    ContentStream,
    /// Generic agent guards over tool calls, results and turns.
    AgentGuard,
    /// loopscope's own: any period, found continuously (profile `extended`).
    Continuous,
    /// Another agent's own guard, reproduced exactly (compat.md).
    Compat,
}

impl Family {
    /// The family's name in listings.
    pub fn name(self) -> &'static str {
        match self {
            Family::Checkpoint => "checkpoint",
            Family::ContentStream => "content-stream",
            Family::AgentGuard => "agent guard",
            Family::Continuous => "continuous",
            Family::Compat => "agent compat",
        }
    }
}

/// One detector of a run, with its resolved parameters.
#[derive(Clone, Debug)]
pub struct Configured {
    /// The detector kind.
    pub info: &'static DetectorInfo,
    /// Its resolved parameters.
    pub params: Params,
}

/// A detector kind in the registry.
pub struct DetectorInfo {
    /// The detector's id (`block-cycle`).
    pub id: &'static str,
    /// Its family.
    pub family: Family,
    /// The channel it watches.
    pub channel: Channel,
    /// The rule in one sentence, with the parameter names.
    pub rule: &'static str,
    /// The profiles this detector is part of.
    pub profiles: &'static [Profile],
    /// Its parameters with their defaults.
    pub params: &'static [ParamSpec],
    /// Detectors whose state is one object (one agent's service) are built
    /// together: the group's builder gets every selected member.
    pub group: Option<&'static Group>,
    /// Builds the detector (a group's members are built by the group).
    pub build: fn(&Params) -> Box<dyn Detector>,
}

/// Several detector ids over one state: one agent's service whose checks
/// share counters and a latch (cline's, qwen-code's).
pub struct Group {
    /// The group's name.
    pub name: &'static str,
    /// Builds the one detector object from its selected members, in
    /// registry order; it reports their states in that order.
    pub build: fn(&[&Configured]) -> Box<dyn Detector>,
}

impl std::fmt::Debug for DetectorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id)
    }
}

impl DetectorInfo {
    /// Whether `profile` runs this detector.
    pub fn in_profile(&self, profile: Profile) -> bool {
        self.profiles.contains(&profile)
    }
}

/// Every detector, in the order they run and are listed.
pub static DETECTORS: [&DetectorInfo; 46] = [
    &short_repeat::INFO,
    &cycles::BLOCK_CYCLE,
    &cycles::LIST_CYCLE,
    &tool_repeat::INFO,
    &chunk_chant::INFO,
    &judge::INFO,
    &guards::MAX_TURNS,
    &guards::ACTION_WINDOW,
    &guards::ACTION_CYCLE,
    &guards::ERROR_STREAK,
    &guards::ERROR_TOTAL,
    &text_loop::INFO,
    &paraphrase::INFO,
    &tool_loop::INFO,
    &roo::TOOL_REPEAT,
    &roo::MISTAKE_LIMIT,
    &cline::LOOP_WARNING,
    &cline::LOOP,
    &cline::MISTAKE_LIMIT,
    &openhands::INFO,
    &roo_fork::INFO,
    &qwen::SERVICE,
    &qwen::TOOL_REPEAT,
    &qwen::SHELL_STAGNATION,
    &qwen::TURN_CAP,
    &qwen::CHANT,
    &qwen::THOUGHTS,
    &qwen::READ_LOOP,
    &qwen::STAGNATION,
    &qwen::GLOBAL_DUP,
    &qwen::ALTERNATION,
    &vllm::INFO,
    &openhands_sdk::NUDGE_INFO,
    &openhands_sdk::STUCK_INFO,
    &openclaw::SERVICE,
    &openclaw::GENERIC_WARNING,
    &openclaw::GENERIC_BLOCK,
    &openclaw::POLL_WARNING,
    &openclaw::POLL_BLOCK,
    &openclaw::PING_PONG_WARNING,
    &openclaw::PING_PONG_BLOCK,
    &openclaw::CHURN_WARNING,
    &openclaw::UNKNOWN_BLOCK,
    &openclaw::GLOBAL_BLOCK,
    &openclaw::COMPACTION_ABORT,
    &opencode::INFO,
];

/// The detector with this id.
pub(crate) fn find(id: &str) -> Option<&'static DetectorInfo> {
    DETECTORS.iter().copied().find(|d| d.id == id)
}

/// The detector objects of a setup: one per detector, one per group.
pub(crate) fn build_all(configured: &[Configured]) -> Vec<Box<dyn Detector>> {
    let mut out = Vec::new();
    let mut built: Vec<&'static str> = Vec::new();
    for c in configured {
        match c.info.group {
            None => out.push((c.info.build)(&c.params)),
            Some(g) if !built.contains(&g.name) => {
                built.push(g.name);
                let members: Vec<&Configured> = configured
                    .iter()
                    .filter(|x| x.info.group.is_some_and(|xg| xg.name == g.name))
                    .collect();
                out.push((g.build)(&members));
            }
            Some(_) => {}
        }
    }
    out
}

/// The logic of a detector that watches the whole prompt: it is reset only
/// by `prompt` and stays fired until then. [`PromptScoped`] adds the reset
/// and the latch so each rule is just its counting.
pub(crate) trait Rule: Clone + Send + Sync + 'static {
    const ID: &'static str;
    /// The kinds of event `observe` acts on (see [`Detector::kinds`]); a
    /// `prompt` always reaches the reset.
    const KINDS: Kinds = Kinds::ALL;
    /// Sees every event except `prompt` while not fired.
    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection>;
    /// A `prompt` arrived.
    fn reset(&mut self);
    /// Status while not fired.
    fn progress(&self, buffers: &Buffers) -> Status;
    fn shares_latch(&self) -> bool {
        false
    }
    /// See [`Detector::compact`]; `stopped`: it fired or was latched, so
    /// nothing it holds counts until the next prompt resets it.
    fn compact(&mut self, _stopped: bool) {}
}

#[derive(Clone, Debug)]
enum Stop {
    Fired { event: usize, reason: String },
    Latched { by: &'static str, event: usize },
}

#[derive(Clone)]
pub(crate) struct PromptScoped<R> {
    rule: R,
    stopped: Option<Stop>,
}

impl<R: Rule> PromptScoped<R> {
    pub(crate) fn boxed(rule: R) -> Box<dyn Detector> {
        Box::new(PromptScoped { rule, stopped: None })
    }
}

impl<R: Rule> Detector for PromptScoped<R> {
    fn id(&self) -> &'static str {
        R::ID
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        if matches!(obs.event.kind, EventKind::Prompt { .. }) {
            self.rule.reset();
            self.stopped = None;
            return;
        }
        if self.stopped.is_some() {
            return;
        }
        if let Some(d) = self.rule.observe(obs) {
            self.stopped = Some(Stop::Fired {
                event: d.event,
                reason: d.reason.clone(),
            });
            out.push(d);
        }
    }

    fn status(&self, buffers: &Buffers) -> Status {
        match &self.stopped {
            Some(Stop::Fired { event, reason }) => Status::Fired {
                event: *event,
                reason: reason.clone(),
            },
            Some(Stop::Latched { by, event }) => Status::Latched { by, event: *event },
            None => self.rule.progress(buffers),
        }
    }

    fn shares_latch(&self) -> bool {
        self.rule.shares_latch()
    }

    fn latch(&mut self, by: &'static str, event: usize) {
        if self.stopped.is_none() {
            self.stopped = Some(Stop::Latched { by, event });
        }
    }

    fn compact(&mut self) {
        self.rule.compact(self.stopped.is_some());
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }

    fn kinds(&self) -> Kinds {
        R::KINDS.and(Kinds::PROMPT)
    }
}

/// A rule that is not latched: an agent's guard that blocks one call (or
/// asks the user) and goes on watching, re-armed at once (Roo Code).
/// `prompt` resets it; its status is its last firing, or its progress.
#[derive(Clone)]
pub(crate) struct Rearmed<R> {
    rule: R,
    last: Option<(usize, String)>,
}

impl<R: Rule> Rearmed<R> {
    pub(crate) fn boxed(rule: R) -> Box<dyn Detector> {
        Box::new(Rearmed { rule, last: None })
    }
}

impl<R: Rule> Detector for Rearmed<R> {
    fn id(&self) -> &'static str {
        R::ID
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        if matches!(obs.event.kind, EventKind::Prompt { .. }) {
            self.rule.reset();
            self.last = None;
            return;
        }
        if let Some(d) = self.rule.observe(obs) {
            self.last = Some((d.event, d.reason.clone()));
            out.push(d);
        }
    }

    fn kinds(&self) -> Kinds {
        R::KINDS.and(Kinds::PROMPT)
    }

    fn status(&self, buffers: &Buffers) -> Status {
        match &self.last {
            Some((event, reason)) => Status::Fired {
                event: *event,
                reason: format!("{reason} (re-armed)"),
            },
            None => self.rule.progress(buffers),
        }
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }
}

/// One state per text channel, for detectors that read reasoning and
/// content alike (each request starts both over).
#[derive(Clone, Debug, Default)]
pub(crate) struct PerChannel<T> {
    pub reasoning: T,
    pub content: T,
}

impl<T> PerChannel<T> {
    pub(crate) fn get_mut(&mut self, channel: Channel) -> &mut T {
        match channel {
            Channel::Reasoning => &mut self.reasoning,
            _ => &mut self.content,
        }
    }

    pub(crate) fn each(&mut self, mut f: impl FnMut(&mut T)) {
        f(&mut self.reasoning);
        f(&mut self.content);
    }
}

/// JavaScript's `\s` (and what `trim` removes): it has U+FEFF and lacks U+0085.
pub(crate) fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// JavaScript's `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

/// `char::is_whitespace` for an ASCII byte (tab to carriage return, and
/// space), usable in the const tables of the detectors that read text byte
/// by byte.
pub(crate) const fn is_ascii_space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | b' ')
}

/// What a [`TextReader`] looks at (its `Rule::KINDS`).
pub(crate) const TEXT_KINDS: Kinds = Kinds::REQUEST.and(Kinds::REASONING).and(Kinds::CONTENT);

/// A rule that reads the reasoning and content text of each request, each
/// channel on its own, and starts both over at a new request (text-loop,
/// paraphrase-loop): its `Rule::observe` is `observe_text`, its
/// `Rule::KINDS` [`TEXT_KINDS`].
pub(crate) trait TextReader {
    /// A new request (or prompt): both channels start over.
    fn restart(&mut self);

    /// Text added to one channel.
    fn read(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection>;

    fn observe_text(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.restart();
                None
            }
            EventKind::Reasoning { text } => self.read(Channel::Reasoning, text, obs),
            EventKind::Content { text } => self.read(Channel::Content, text, obs),
            _ => None,
        }
    }
}

/// Quotes log text for a reason sentence, shortened to `max_chars`, so a
/// reason is always one printable line: a quote, a backslash, a newline,
/// a carriage return and a tab are escaped as in Rust (`\"`, `\\`, `\n`,
/// `\r`, `\t`), and any other char that must not reach a terminal is its
/// placeholder (`␛`, `�`), as in every line loopscope prints.
pub fn quote(text: &str, max_chars: usize) -> String {
    let cut = text.char_indices().nth(max_chars).map_or(text.len(), |(at, _)| at);
    let head = &text[..cut];
    let mut out = String::with_capacity(cut + 4);
    out.push('"');
    // One shown char per char of the text (a zero-width joiner is kept
    // inside an emoji sequence only, which is why it is read in context).
    for (c, shown) in head.chars().zip(crate::sanitize::shown_chars(head)) {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => out.push(shown),
        }
    }
    out.push('"');
    if cut < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn a_quote_is_one_printable_line_with_placeholders() {
        assert_eq!(quote("say \"hi\"\\ok", 60), r#""say \"hi\"\\ok""#);
        assert_eq!(quote("a\nb\tc\r", 60), r#""a\nb\tc\r""#);
        // Escape sequences and hidden chars show as the placeholders every
        // printed line uses, not as Rust's `\u{1b}`.
        assert_eq!(quote("\u{1b}[31mRED\u{7}", 60), "\"␛[31mRED␇\"");
        assert_eq!(quote("a\u{202e}b\u{200b}c", 60), "\"a�b�c\"");
        // An emoji sequence keeps its joiner; CJK is as it is.
        assert_eq!(quote("👩\u{200d}💻 思考", 60), "\"👩\u{200d}💻 思考\"");
        // Cut after max_chars chars.
        assert_eq!(quote("思考思考思考", 4), "\"思考思考\"…");
        assert_eq!(quote("abcd", 4), "\"abcd\"");
    }
}
