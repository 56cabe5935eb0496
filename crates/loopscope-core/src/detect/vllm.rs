//! Profile `vllm` (`shared/design/vllm.md`): vLLM 0.33.0's
//! `repetition_detection`, which ends a request with finish reason
//! `"repetition"` once its output tokens end in `min_count` back-to-back
//! copies of a pattern of `min_pattern_size`..`max_pattern_size` tokens,
//! checked after every token (`check_sequence_repetition` in
//! `vllm/v1/core/sched/utils.py`).
//!
//! Tokens are what the event says: the ids of its `token_ids` (as vLLM
//! streams them with `return_token_ids`), else the ids of `--tokenizer`,
//! else the whole delta counted as one token, compared by its text (the
//! convention of the spec's worked cases; not exact on real deltas, which
//! is said once — [`Detector::caveat`]).
//!
//! The original compares the tail again for every L at every token; here
//! each L keeps the length of its current run of positions `i` with
//! `token[i] == token[i - L]`, and only the L at which an earlier copy of
//! the new token sits (found through a chain of same-token positions) can
//! grow: the tail is `min_count` copies of its last L tokens exactly when
//! that run reaches `L × (min_count − 1)`. Memory is the last
//! `max_pattern_size` tokens, whatever the request's length.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::tokens::Encoder;
use super::{quote, Buffers, Detection, Detector, DetectorInfo, Evidence, Family, Kinds, Observation, Status};
use crate::event::{Channel, EventKind};

pub(crate) const ID: &str = "vllm-repetition";

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: ID,
    family: Family::Compat,
    channel: Channel::Content,
    rule: "after every output token of a request (reasoning and content one sequence, tokens compared by id): the last L × min_count tokens are min_count copies of the last L, for some L from min_pattern_size (0 means 1) to max_pattern_size → finish reason \"repetition\", the request ends. Off in vLLM unless a request sends repetition_detection: max_pattern_size 0 or min_count below 2 is off; not before min_tokens tokens",
    profiles: &[Profile::Vllm],
    params: &[
        ParamSpec::new(
            "max_pattern_size",
            Kind::Count { min: 0 },
            Default::Count(1024),
            "the longest pattern (tokens) tried; 0 disables the check (vLLM's default)",
        ),
        ParamSpec::new(
            "min_pattern_size",
            Kind::Count { min: 0 },
            Default::Count(16),
            "the shortest pattern tried; 0 means 1 (vLLM's default)",
        ),
        ParamSpec::new(
            "min_count",
            Kind::Count { min: 0 },
            Default::Count(4),
            "copies that end the request; below 2 disables the check (vLLM's default is 0)",
        ),
        ParamSpec::new(
            "min_tokens",
            Kind::Count { min: 0 },
            Default::Count(0),
            "the request's min_tokens: no check before that many output tokens",
        ),
    ],
    group: None,
    build: |p| Box::new(Repetition::new(p)),
};

/// Why the parameters switch the check off, in vLLM's words where vLLM
/// refuses them when the request is built (`RepetitionDetectionParams`).
fn disabled(max: usize, min: usize, count: usize) -> Option<String> {
    if max == 0 {
        Some(
            "off: max_pattern_size is 0 (vLLM's default: only a request sending repetition_detection turns it on)"
                .into(),
        )
    } else if min > max {
        Some(format!(
            "off: vLLM refuses the request: min_pattern_size ({min}) must be <= max_pattern_size ({max})"
        ))
    } else if count < 2 {
        Some(format!(
            "off: vLLM refuses the request: min_count must be >= 2 when max_pattern_size > 0, got {count}"
        ))
    } else {
        None
    }
}

/// One token: an id, or a delta's text where the log has no ids.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Token {
    Id(u64),
    Text(Box<str>),
}

impl Token {
    fn key(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }

    fn shown(&self) -> String {
        match self {
            Token::Id(id) => id.to_string(),
            Token::Text(t) => quote(t, 20),
        }
    }
}

/// A token of the window and the position of the previous token with the
/// same key (the chain the new token walks).
#[derive(Clone, Debug)]
struct Slot {
    token: Token,
    prev_same: Option<usize>,
}

/// A request that hit: the event, the sequence length, the pattern.
#[derive(Clone, Debug)]
struct Hit {
    event: usize,
    reason: String,
}

#[derive(Clone)]
pub(crate) struct Repetition {
    /// max_pattern_size (L at most).
    max: usize,
    /// min_pattern_size with 0 read as 1.
    min: usize,
    count: usize,
    min_tokens: usize,
    off: Option<String>,
    encoder: Option<Encoder>,
    /// Output tokens of the current request.
    len: usize,
    /// The last `max + 1` tokens, slot `pos % cap`.
    window: Vec<Option<Slot>>,
    /// The newest position of each token key in the window (stale entries
    /// are pruned when it grows past twice the window).
    newest: HashMap<u64, usize>,
    /// Per L: the position where its run of `token[i] == token[i-L]` ends,
    /// and the run's length.
    runs: Vec<(usize, usize)>,
    /// The longest run against its need, for the status.
    best: (usize, usize),
    /// The current request has ended (a hit): nothing counts until the next.
    ended: bool,
    last: Option<Hit>,
    /// Text deltas counted as one token each (no ids, no tokenizer).
    untokenized: usize,
}

impl Repetition {
    fn new(p: &Params) -> Repetition {
        let (max, min, count) = (
            p.count("max_pattern_size"),
            p.count("min_pattern_size").max(1),
            p.count("min_count"),
        );
        Repetition {
            max,
            min,
            count,
            min_tokens: p.count("min_tokens"),
            off: disabled(max, p.count("min_pattern_size"), count),
            encoder: None,
            len: 0,
            window: Vec::new(),
            newest: HashMap::new(),
            runs: Vec::new(),
            best: (0, 0),
            ended: false,
            last: None,
            untokenized: 0,
        }
    }

    fn restart(&mut self) {
        self.len = 0;
        self.window.clear();
        self.newest.clear();
        self.runs.clear();
        self.best = (0, 0);
        self.ended = false;
    }

    /// Appends one token; the pattern length L and the run's tokens if the
    /// output now ends in `count` copies (the smallest L, as vLLM tries them).
    fn push(&mut self, token: Token) -> Option<usize> {
        let i = self.len;
        self.len += 1;
        let cap = self.max + 1;
        let key = token.key();
        let mut hit: Option<usize> = None;
        // Walk the earlier positions of the same key within max tokens.
        let mut p = self.newest.get(&key).copied();
        while let Some(at) = p {
            let l = i - at;
            if l > self.max {
                break;
            }
            let slot = self.window[at % cap]
                .as_ref()
                .expect("a position in the window has its slot");
            if slot.token == token {
                if self.runs.len() <= l {
                    self.runs.resize(l + 1, (usize::MAX, 0));
                }
                let (end, run) = self.runs[l];
                let run = if end.wrapping_add(1) == i { run + 1 } else { 1 };
                self.runs[l] = (i, run);
                if l >= self.min {
                    let need = l * (self.count - 1);
                    if run >= need && hit.is_none_or(|h| l < h) {
                        hit = Some(l);
                    }
                    if self.best.1 == 0 || run * self.best.1 > self.best.0 * need {
                        self.best = (run, need);
                    }
                }
            }
            p = slot.prev_same;
        }
        let prev_same = self.newest.insert(key, i).filter(|&at| i - at <= self.max);
        if self.window.len() < cap {
            self.window.resize(cap.min(i + 1).max(self.window.len()), None);
        }
        self.window[i % cap] = Some(Slot { token, prev_same });
        if self.newest.len() > 2 * cap + 64 {
            let oldest = i.saturating_sub(self.max);
            self.newest.retain(|_, at| *at >= oldest);
        }
        // vLLM checks only from min_tokens output tokens on.
        hit.filter(|_| self.len >= self.min_tokens)
    }

    fn detection(&mut self, obs: &Observation<'_>, l: usize, channel: Channel) -> Detection {
        let cap = self.max + 1;
        let start = self.len - l;
        let pattern: Vec<String> = (start..self.len)
            .take(12)
            .filter_map(|at| self.window[at % cap].as_ref().map(|s| s.token.shown()))
            .collect();
        let more = if l > 12 { " …" } else { "" };
        let what = format!("[{}{more}]", pattern.join(" "));
        let mut d = Detection::new(ID, obs.index, channel, None);
        d.period = Some(l);
        d.repeats = Some(self.count);
        d.threshold = Some(self.count);
        d.matches = Some(self.len);
        d.repeated = Some(what.clone());
        d.evidence = Evidence::Count;
        d.reason = format!(
            "finish_reason \"repetition\" (stop_reason \"repetition_detected\"): the last {} output tokens are {} copies of a {l}-token pattern {what} (L from {} to {}, min_count {}), at output token {}",
            l * self.count,
            self.count,
            self.min,
            self.max,
            self.count,
            self.len
        );
        self.last = Some(Hit {
            event: obs.index,
            reason: d.reason.clone(),
        });
        d
    }

    /// The tokens of a text event: its ids, the tokenizer's, or the delta.
    fn tokens_of(&mut self, obs: &Observation<'_>, text: &str) -> Vec<Token> {
        if let Some(ids) = obs.event.extra.get(crate::event::TOKEN_IDS).and_then(|v| v.as_array()) {
            // A malformed id (not a whole number) is its own token, unequal to any id.
            return ids
                .iter()
                .map(|v| match v.as_u64() {
                    Some(id) => Token::Id(id),
                    None => Token::Text(v.to_string().into()),
                })
                .collect();
        }
        if let Some(enc) = &self.encoder {
            return enc
                .encode(text)
                .into_iter()
                .map(|id| Token::Id(u64::from(id)))
                .collect();
        }
        self.untokenized += 1;
        vec![Token::Text(text.into())]
    }
}

impl Detector for Repetition {
    fn id(&self) -> &'static str {
        ID
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let (text, channel) = match &obs.event.kind {
            EventKind::Prompt { .. } | EventKind::Request { .. } => {
                self.restart();
                return;
            }
            EventKind::Reasoning { text } => (text, Channel::Reasoning),
            EventKind::Content { text } => (text, Channel::Content),
            _ => return,
        };
        if self.off.is_some() || self.ended {
            return;
        }
        for token in self.tokens_of(obs, text) {
            if let Some(l) = self.push(token) {
                // The request ends here: the rest of this step is trimmed.
                self.ended = true;
                out.push(self.detection(obs, l, channel));
                return;
            }
        }
    }

    fn status(&self, _: &Buffers) -> Status {
        if let Some(off) = &self.off {
            return Status::Idle { detail: off.clone() };
        }
        if let (true, Some(hit)) = (self.ended, &self.last) {
            return Status::Fired {
                event: hit.event,
                reason: hit.reason.clone(),
            };
        }
        let (run, need) = self.best;
        let copies = 1 + (run * self.count.saturating_sub(1)).checked_div(need).unwrap_or(0);
        Status::Watching {
            current: copies.min(self.count),
            threshold: self.count,
            detail: format!(
                "{} output tokens in this request; closest pattern {copies} of {} copies{}",
                self.len,
                self.count,
                if self.untokenized > 0 && self.encoder.is_none() {
                    " (each text delta counted as one token: no token_ids, no --tokenizer)"
                } else {
                    ""
                }
            ),
        }
    }

    fn use_encoder(&mut self, encoder: &Encoder) {
        self.encoder = Some(encoder.clone());
    }

    fn caveat(&self) -> Option<String> {
        (self.untokenized > 0 && self.encoder.is_none()).then(|| {
            format!(
                "{ID}: cannot run exactly: {} text events carry no token_ids, so each delta counts as one token (vLLM compares token ids); record through `loopscope record` from a vLLM server with \"return_token_ids\": true, or pass --tokenizer tokenizer.json (the model's Hugging Face tokenizer)",
                self.untokenized
            )
        })
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }

    fn kinds(&self) -> Kinds {
        Kinds::PROMPT.and(super::TEXT_KINDS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vLLM's `check_sequence_repetition`, transcribed.
    fn reference(tokens: &[u64], max: usize, min: usize, count: usize) -> bool {
        if max == 0 || count < 2 {
            return false;
        }
        let min = min.max(1);
        if min > max {
            return false;
        }
        for l in min..=max {
            if l * count > tokens.len() {
                return false;
            }
            let n = tokens.len();
            if (1..=l).all(|k| (1..count).all(|m| tokens[n - (l * m + k)] == tokens[n - k])) {
                return true;
            }
        }
        false
    }

    fn detector(max: usize, min: usize, count: usize) -> Repetition {
        let mut p = Params::defaults(INFO.params, Profile::Vllm);
        p.set("max_pattern_size", super::super::params::Value::Count(max));
        p.set("min_pattern_size", super::super::params::Value::Count(min));
        p.set("min_count", super::super::params::Value::Count(count));
        Repetition::new(&p)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// The runs agree with vLLM's tail comparison after every token,
        /// over small alphabets (where repetition is common).
        #[test]
        fn runs_agree_with_the_original(
            tokens in proptest::collection::vec(0u64..3, 0..120),
            max in 1usize..12, min in 0usize..6, count in 2usize..5,
        ) {
            let mut d = detector(max, min, count);
            for (i, &t) in tokens.iter().enumerate() {
                let hit = d.push(Token::Id(t)).is_some();
                proptest::prop_assert_eq!(hit, reference(&tokens[..=i], max, min, count), "at token {}", i);
            }
        }
    }

    #[test]
    fn memory_is_the_window_whatever_the_length() {
        let mut d = detector(64, 1, 3);
        for i in 0..200_000u64 {
            d.push(Token::Id(i));
        }
        assert!(d.window.len() <= 65);
        assert!(d.newest.len() <= 2 * 65 + 64 + 1);
        assert!(d.runs.len() <= 65);
    }
}
