//! Profile `qwen-code` (qwen-code.md): qwen-code 0.24.4's
//! `LoopDetectionService`, driven as its client drives it. The service is
//! one object with one latch — a tool call resets the content and thought
//! histories, results change the repeat streaks — so it is one group: one
//! object answering for nine detector ids (and `qwen-code`, which holds the
//! service's switches). A member that is not selected keeps its state but
//! never fires.

mod chant;
mod shell;
mod text;
mod tools;

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::Value;

use super::content_classes::Classifier;
use super::keys::{self, KeyStyle};
use super::params::{Default, Kind, ParamSpec, Profile};
use super::{
    js_trim, quote, Buffers, Detection, Detector, DetectorInfo, DetectorState, Evidence, Family, Group, Observation,
    Status,
};
use crate::detect::Configured;
use crate::event::{Channel, EventKind};

pub(crate) static GROUP: Group = Group {
    name: "qwen-code",
    build: build_group,
};

/// What qwen-code tells the user when it halts a turn.
const HALT: &str = "A potential loop was detected. This can happen due to repetitive tool calls or other model behavior. The request has been halted.";

const fn member(id: &'static str, channel: Channel, rule: &'static str, params: &'static [ParamSpec]) -> DetectorInfo {
    DetectorInfo {
        id,
        family: Family::Compat,
        channel,
        rule,
        profiles: &[Profile::QwenCode],
        params,
        group: Some(&GROUP),
        build: |_| unreachable_member(),
    }
}

pub(crate) static SERVICE: DetectorInfo = member(
    "qwen-code",
    Channel::Tools,
    "the service itself: its latch (one detection per prompt) and its switches",
    &[
        ParamSpec::new(
            "heuristics",
            Kind::Flag,
            Default::Flag(true),
            "run the heuristic tier (model.skipLoopDetection = false; the qwen CLI's default skips it)",
        ),
        ParamSpec::new(
            "thoughts",
            Kind::Choice(&["raw", "parsed"]),
            Default::Word("raw"),
            "a reasoning delta as a thought: raw {\"\", text} (OpenAI-compatible) or parsed **subject** (Gemini API)",
        ),
    ],
);
pub(crate) static TOOL_REPEAT: DetectorInfo = member(
    "qwen-tool-repeat",
    Channel::Tools,
    "5 consecutive identical calls (canonical name and sorted arguments; task_list polling whose results change is productive)",
    &[],
);
pub(crate) static SHELL_STAGNATION: DetectorInfo = member(
    "qwen-shell-stagnation",
    Channel::Tools,
    "8 shell calls in a row that only inspect (git status, git diff overviews, git ls-files)",
    &[],
);
pub(crate) static TURN_CAP: DetectorInfo = member(
    "qwen-turn-cap",
    Channel::Tools,
    "more than `cap` calls since the prompt, and (`explicit`, or more than 10 x `cap`, or one call seen 6 times)",
    &[
        ParamSpec::new(
            "cap",
            Kind::Count { min: 0 },
            Default::Count(100),
            "model.maxToolCallsPerTurn; 0: no cap",
        ),
        ParamSpec::new(
            "explicit",
            Kind::Flag,
            Default::Flag(false),
            "the cap was set explicitly: a hard cap",
        ),
    ],
);
pub(crate) static CHANT: DetectorInfo = member(
    "qwen-chant",
    Channel::Content,
    "a 50-unit chunk of the shared content/reasoning history (4000-unit window) 10 times at most 75 apart on average, or equally spaced over a verified periodic region of 1000+ units",
    &[],
);
pub(crate) static THOUGHTS: DetectorInfo = member(
    "qwen-thoughts",
    Channel::Reasoning,
    "3 consecutive thoughts with the same signature (subject | first 200 units of the description, trimmed, lower-cased)",
    &[],
);
pub(crate) static READ_LOOP: DetectorInfo = member(
    "qwen-read-loop",
    Channel::Tools,
    "after a first non-read call, 8 read-like calls among the last 15",
    &[],
);
pub(crate) static STAGNATION: DetectorInfo = member(
    "qwen-stagnation",
    Channel::Tools,
    "8 consecutive calls of one tool (any arguments)",
    &[],
);
pub(crate) static GLOBAL_DUP: DetectorInfo = member(
    "qwen-global-dup",
    Channel::Tools,
    "one call (or one task_list result) 6 times since the prompt, with anything between",
    &[],
);
pub(crate) static ALTERNATION: DetectorInfo = member(
    "qwen-alternation",
    Channel::Tools,
    "the last 6 calls alternate between two: A B A B A B",
    &[],
);

/// The members in registry order (the order their states are reported).
const IDS: [&str; 10] = [
    "qwen-code",
    "qwen-tool-repeat",
    "qwen-shell-stagnation",
    "qwen-turn-cap",
    "qwen-chant",
    "qwen-thoughts",
    "qwen-read-loop",
    "qwen-stagnation",
    "qwen-global-dup",
    "qwen-alternation",
];

fn unreachable_member() -> Box<dyn Detector> {
    Box::new(Service::new(&[]))
}

fn build_group(members: &[&Configured]) -> Box<dyn Detector> {
    Box::new(Service::new(members))
}

/// `canonicalToolName`: the legacy names qwen migrated.
fn canonical_tool_name(name: &str) -> &str {
    match name {
        "search_file_content" => "grep_search",
        "replace" => "edit",
        "task" => "agent",
        other => other,
    }
}

fn read_like(name: &str) -> bool {
    matches!(name, "read_file" | "read_many_files" | "list_directory" | "zoom_image")
        || name.starts_with("read_")
        || name.starts_with("list_")
}

const STATEFUL: &str = "task_list";

/// A call as the checks see it (after envelope unwrapping).
#[derive(Clone, Debug)]
struct Call {
    name: String,
    key: String,
}

fn resolve(name: &str, args: &Value) -> Call {
    let (name, args) = match (name, args.get("name").and_then(Value::as_str)) {
        ("tool_call", Some(target)) => {
            let inner = match args.get("arguments") {
                Some(a @ Value::Object(_)) => a.clone(),
                _ => args.clone(),
            };
            (canonical_tool_name(target).to_lowercase(), inner)
        }
        _ => (name.to_string(), args.clone()),
    };
    let key = format!("{}:{}", canonical_tool_name(&name), keys::json(&args, KeyStyle::Stable));
    Call { name, key }
}

/// A stateful call's results: how often observed in the streak, how often unchanged.
#[derive(Clone, Debug, Default)]
struct Polled {
    observed: usize,
    unchanged: usize,
    last: Option<(bool, String)>,
}

/// A result's fingerprint: whether it is an error, and its stripped text.
type Fingerprint = (bool, String);

/// A call's run of equal results: the fingerprint, its length, the result events.
type ResultRun = (Fingerprint, usize, Vec<usize>);

/// The first firing (or the latch) of each member.
#[derive(Clone, Debug)]
struct Fired {
    event: usize,
    reason: String,
}

#[derive(Clone)]
pub(crate) struct Service {
    heuristics: bool,
    parsed_thoughts: bool,
    cap: usize,
    explicit: bool,
    speaks: [bool; 10],
    latched: Option<(&'static str, usize)>,
    fired: [Option<Fired>; 10],
    fed: HashSet<String>,
    fresh: u64,
    // Always-on tier.
    last_key: Option<String>,
    count: usize,
    repeat_calls: Vec<usize>,
    shell_streak: Vec<usize>,
    total: usize,
    cap_counts: HashMap<String, usize>,
    cap_max: usize,
    pending: VecDeque<(String, Call)>,
    polled: HashMap<String, Polled>,
    result_runs: HashMap<String, ResultRun>,
    // Heuristic tier.
    history: chant::History,
    in_code_block: bool,
    thoughts: VecDeque<(Vec<u16>, usize)>,
    recent: VecDeque<(bool, usize)>,
    seen_non_read: bool,
    last_name: String,
    same_name: Vec<usize>,
    global: HashMap<String, Vec<usize>>,
    alt: VecDeque<(String, usize)>,
}

impl Service {
    fn new(members: &[&Configured]) -> Service {
        let conf = |id: &str| members.iter().find(|c| c.info.id == id);
        let service = conf("qwen-code");
        let turn = conf("qwen-turn-cap");
        let mut speaks = [false; 10];
        for (k, id) in IDS.iter().enumerate() {
            speaks[k] = conf(id).is_some();
        }
        Service {
            heuristics: service.is_none_or(|c| c.params.flag("heuristics")),
            parsed_thoughts: service.is_some_and(|c| c.params.word("thoughts") == "parsed"),
            cap: turn.map_or(100, |c| c.params.count("cap")),
            explicit: turn.is_some_and(|c| c.params.flag("explicit")),
            speaks,
            latched: None,
            fired: std::array::from_fn(|_| None),
            fed: HashSet::new(),
            fresh: 0,
            last_key: None,
            count: 0,
            repeat_calls: Vec::new(),
            shell_streak: Vec::new(),
            total: 0,
            cap_counts: HashMap::new(),
            cap_max: 0,
            pending: VecDeque::new(),
            polled: HashMap::new(),
            result_runs: HashMap::new(),
            history: chant::History::default(),
            in_code_block: false,
            thoughts: VecDeque::new(),
            recent: VecDeque::new(),
            seen_non_read: false,
            last_name: String::new(),
            same_name: Vec::new(),
            global: HashMap::new(),
            alt: VecDeque::new(),
        }
    }

    /// `reset()` at a prompt: everything but the switches and the code-block state.
    fn reset(&mut self) {
        let keep = Service {
            in_code_block: self.in_code_block,
            fresh: self.fresh,
            ..Service::new(&[])
        };
        let (h, p, c, e, s) = (
            self.heuristics,
            self.parsed_thoughts,
            self.cap,
            self.explicit,
            self.speaks,
        );
        *self = keep;
        (
            self.heuristics,
            self.parsed_thoughts,
            self.cap,
            self.explicit,
            self.speaks,
        ) = (h, p, c, e, s);
    }

    fn reset_content(&mut self) {
        self.history.reset();
    }

    fn member(id: &str) -> usize {
        IDS.iter().position(|x| *x == id).unwrap_or(0)
    }

    /// A firing of `id`: recorded, and reported if selected.
    fn fire(&mut self, id: &'static str, mut d: Detection, out: &mut Vec<Detection>) {
        let k = Service::member(id);
        d.reason = format!("\"{HALT}\" (loop_type {}) — {}", loop_type(id), d.reason);
        if self.fired[k].is_none() {
            self.fired[k] = Some(Fired {
                event: d.event,
                reason: d.reason.clone(),
            });
        }
        if self.speaks[k] {
            out.push(d);
        }
    }

    fn tool_detection(id: &'static str, index: usize, events: Vec<usize>, reason: String) -> Detection {
        let mut d = Detection::new(id, index, Channel::Tools, None);
        d.repeats = Some(events.len());
        d.events = events;
        d.evidence = Evidence::Calls;
        d.reason = reason;
        d
    }
}

/// `strip(v)`: a persisted or truncated output compared by its stub.
fn strip(v: &str) -> String {
    let persisted = [
        "<persisted-output>",
        "Output too large (",
        "Tool output was too large and has been truncated",
    ];
    if !persisted.iter().any(|p| v.starts_with(p)) {
        return v.to_string();
    }
    let prefix = "Full output sha256: ";
    for (i, _) in std::iter::once((0, ' ')).chain(v.match_indices('\n').map(|(i, _)| (i + 1, ' '))) {
        if let Some(rest) = v[i..].strip_prefix(prefix) {
            let hex: String = rest.chars().take(64).collect();
            let after = rest[hex.len()..].chars().next();
            if hex.len() == 64
                && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
                && matches!(after, None | Some('\n') | Some('\r'))
            {
                return format!("<persisted-stub>sha256:{hex}");
            }
        }
    }
    for marker in ["Preview (up to 2000 chars):", "Truncated part of the output:\n"] {
        if let Some(at) = v.find(marker) {
            let payload = &v[at + marker.len()..];
            let payload = payload.split("</persisted-output>").next().unwrap_or_default();
            return format!("<persisted-stub>payload:{payload}");
        }
    }
    format!("<persisted-stub>raw:{v}")
}

fn loop_type(id: &str) -> &'static str {
    match id {
        "qwen-tool-repeat" => "consecutive_identical_tool_calls",
        "qwen-shell-stagnation" => "shell_command_stagnation",
        "qwen-turn-cap" => "turn_tool_call_cap",
        "qwen-chant" => "chanting_identical_sentences",
        "qwen-thoughts" => "repetitive_thoughts",
        "qwen-read-loop" => "read_file_loop",
        "qwen-stagnation" => "action_stagnation",
        "qwen-global-dup" => "global_tool_call_duplicate",
        _ => "alternating_tool_call_pattern",
    }
}

impl Detector for Service {
    fn id(&self) -> &'static str {
        "qwen-code"
    }

    fn observe(&mut self, obs: &Observation<'_>, out: &mut Vec<Detection>) {
        let index = obs.index;
        if matches!(obs.event.kind, EventKind::Prompt { .. }) {
            self.reset();
            return;
        }
        if self.latched.is_some() {
            return;
        }
        let mut found = Vec::new();
        let fired = match &obs.event.kind {
            EventKind::Request { .. } => {
                self.fed.clear();
                false
            }
            EventKind::Reasoning { text } if !text.is_empty() => self.thought(obs, text, &mut found),
            EventKind::Content { text } if !text.is_empty() => self.content(obs, text, &mut found),
            EventKind::ToolCall { name, args, id } => {
                let id = match id {
                    Some(i) => i.clone(),
                    None => {
                        self.fresh += 1;
                        format!("\u{0}fresh-{}", self.fresh)
                    }
                };
                if !id.is_empty() && self.fed.contains(&id) {
                    false
                } else {
                    self.fed.insert(id.clone());
                    self.tool_call(index, name, args, Some(&id), &mut found)
                }
            }
            EventKind::ToolResult {
                id: Some(id),
                ok,
                output,
            } if !id.is_empty() => self.tool_result(index, id, *ok, output, &mut found),
            _ => false,
        };
        if fired {
            self.latched = Some((found.first().map_or("qwen-code", |d| d.detector), index));
            let k = 0;
            if self.fired[k].is_none() {
                self.fired[k] = Some(Fired {
                    event: index,
                    reason: "the service is latched until the next prompt".to_string(),
                });
            }
        }
        out.extend(found);
    }

    fn status(&self, _: &Buffers) -> Status {
        Status::Idle { detail: String::new() }
    }

    fn states(&self, _: &Buffers) -> Vec<DetectorState> {
        let mut out = Vec::new();
        for (k, id) in IDS.iter().enumerate() {
            if !self.speaks[k] {
                continue;
            }
            let status = match (&self.fired[k], self.latched) {
                (Some(f), _) if k > 0 => Status::Fired {
                    event: f.event,
                    reason: f.reason.clone(),
                },
                (_, Some((by, event))) => Status::Latched { by, event },
                _ => self.progress(id),
            };
            out.push(DetectorState { id, status });
        }
        out
    }

    fn clone_box(&self) -> Box<dyn Detector> {
        Box::new(self.clone())
    }
}

impl Service {
    fn progress(&self, id: &str) -> Status {
        let watching = |current: usize, threshold: usize, detail: String| Status::Watching {
            current,
            threshold,
            detail,
        };
        match id {
            "qwen-tool-repeat" => watching(self.count, 5, format!("{} identical calls in a row", self.count)),
            "qwen-shell-stagnation" => watching(
                self.shell_streak.len(),
                8,
                format!("{} inspection calls in a row", self.shell_streak.len()),
            ),
            "qwen-turn-cap" => watching(
                self.total,
                self.cap,
                format!(
                    "{} calls since the prompt (cap {}, most repeated {})",
                    self.total, self.cap, self.cap_max
                ),
            ),
            "qwen-stagnation" => watching(
                self.same_name.len(),
                8,
                format!("{} calls of one tool in a row", self.same_name.len()),
            ),
            "qwen-thoughts" => watching(
                self.thoughts.len().min(3),
                3,
                format!("{} thoughts since the last call", self.thoughts.len()),
            ),
            "qwen-code" if !self.heuristics => Status::Idle {
                detail: "heuristic tier off (only repeats, shell stagnation and the turn cap)".to_string(),
            },
            _ => Status::Idle {
                detail: "watching".to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::text::parse_thought;
    use super::*;

    #[test]
    fn envelopes_unwrap_and_legacy_names_share_keys() {
        let e = resolve(
            "tool_call",
            &serde_json::json!({"name": "Read_File", "arguments": {"p": 1}}),
        );
        assert_eq!(e.name, "read_file");
        assert_eq!(e.key, resolve("read_file", &serde_json::json!({"p": 1.0})).key);
        assert_eq!(
            resolve("search_file_content", &serde_json::json!({})).key,
            resolve("grep_search", &serde_json::json!({})).key
        );
        assert_ne!(
            resolve("search_file_content", &serde_json::json!({})).name,
            "grep_search"
        );
    }

    #[test]
    fn persisted_outputs_compare_by_their_stub() {
        let hex = "a".repeat(64);
        assert_eq!(
            strip(&format!("<persisted-output>\nFull output sha256: {hex}\nmore")),
            format!("<persisted-stub>sha256:{hex}")
        );
        assert_eq!(
            strip("Output too large (9 MB). Preview (up to 2000 chars):abc</persisted-output>x"),
            "<persisted-stub>payload:abc"
        );
        assert_eq!(strip("plain"), "plain");
        assert_eq!(parse_thought("a **Plan** b"), ("Plan".into(), "a  b".into()));
    }
}
