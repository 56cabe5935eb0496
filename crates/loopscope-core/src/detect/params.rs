//! Detector parameters: what each one means, its default in each profile,
//! and the values a run resolved from defaults, config file and `--set`.

use crate::error::{Error, ErrorKind};
use std::fmt;

/// A named set of detectors with their parameters (detectors.md).
///
/// ```
/// use loopscope_core::Profile;
///
/// assert_eq!(Profile::from_name("gemini-cli"), Some(Profile::GeminiCli));
/// assert_eq!(Profile::Extended.name(), "extended");
/// assert!(Profile::ALL.iter().all(|p| Profile::from_name(p.name()) == Some(*p)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The designs the project was specified from.
    Seed,
    /// The real gemini-cli (commit 5411f113), quirks included.
    GeminiCli,
    /// loopscope's own detectors (extended.md): continuous, any period,
    /// result-aware tool loops.
    Extended,
    /// qwen-code 0.24.4's LoopDetectionService, both tiers (qwen-code.md).
    QwenCode,
    /// The OpenHands SDK's stuck detector, V1 (openhands-sdk.md).
    Openhands,
    /// OpenHands V0's StuckDetector (compat.md).
    OpenhandsV0,
    /// vLLM's repetition_detection (vllm.md).
    Vllm,
    /// Roo Code's tool repetition guard and mistake limit (compat.md).
    RooCode,
    /// Cline's loop detection and mistake limit (compat.md).
    Cline,
    /// A Roo Code fork's dead-loop detector, the checkpoint design as coded (compat.md).
    RooFork,
    /// OpenClaw's tool-loop detection and post-compaction guard (openclaw.md).
    Openclaw,
    /// opencode's (and Kilo CLI's) doom_loop permission (opencode.md).
    Opencode,
}

impl Profile {
    /// Every profile, in listing order.
    pub const ALL: [Profile; 12] = [
        Profile::Seed,
        Profile::GeminiCli,
        Profile::Extended,
        Profile::QwenCode,
        Profile::Openhands,
        Profile::RooCode,
        Profile::Cline,
        Profile::RooFork,
        Profile::OpenhandsV0,
        Profile::Vllm,
        Profile::Openclaw,
        Profile::Opencode,
    ];

    /// The profile's name (`gemini-cli`).
    pub fn name(self) -> &'static str {
        match self {
            Profile::Seed => "seed",
            Profile::GeminiCli => "gemini-cli",
            Profile::Extended => "extended",
            Profile::QwenCode => "qwen-code",
            Profile::Openhands => "openhands",
            Profile::RooCode => "roo-code",
            Profile::Cline => "cline",
            Profile::RooFork => "roo-fork",
            Profile::OpenhandsV0 => "openhands-v0",
            Profile::Vllm => "vllm",
            Profile::Openclaw => "openclaw",
            Profile::Opencode => "opencode",
        }
    }

    /// What the profile reproduces, what it compares, its thresholds and
    /// the false positives it is known for (`loopscope detectors`).
    pub fn about(self) -> &'static str {
        match self {
            Profile::Seed => "The designs loopscope was specified from: checkpoint detectors over the reasoning (short-repeat, block-cycle, list-cycle at 2000/3000/5000 chars), gemini-cli-like tool-repeat and chunk-chant, and agent guards (turns, action windows and cycles, error streaks). Known false positives: code blocks and markdown tables of identical lines (block-cycle, list-cycle), divider lines and laughter (chunk-chant), polling (action-window).",
            Profile::GeminiCli => "gemini-cli at commit 5411f113, its LoopDetectionService exactly: 5 identical tool calls in a row (JavaScript key order), and a 50-unit content chunk seen 10 times within 250 units on average (UTF-16, its regex quirks). Never reads reasoning. Known false positives: repeated lines of a long answer; known misses: everything in reasoning, loops with per-delta structure resets.",
            Profile::Extended => "loopscope's own, a loop detector: it fires when something repeats — text of any period, found continuously on reasoning and content (exact, normalized, paraphrased), tool steps with their results, the same failing step again — never because a session is long or has failed often (seed's max-turns and error-total are budgets: name them with --detectors to add them). Built to catch what seed and gemini-cli miss without their false positives.",
            Profile::QwenCode => "qwen-code 0.24.4's LoopDetectionService (npm @qwen-code/qwen-code@0.24.4), one service with one latch: always on, 5 identical calls in a row (canonical keys; task_list polling whose results change is productive), 8 git inspections in a row, the per-prompt tool-call cap (100, adaptive); with the heuristic tier (the CLI skips it by default: qwen-code.heuristics=false), 50-unit chanting over content and reasoning (UTF-16, 4000-unit window, clustered or periodic), 3 equal thoughts, read loops, 8 calls of one tool, 6 duplicates, A/B alternation. Known false positives: three whitespace-only reasoning deltas in a row are 'repetitive thoughts'; a list with a long shared prefix chants.",
            Profile::Openhands => "The OpenHands SDK's stuck detector (openhands-sdk 1.58.2, what OpenHands runs today; V0's is openhands-v0): before every LLM call it looks at the last 20 events since the user's message — the same action (thought included, arguments in any key order) with the same observation 4 times, the same action failing 4 times (a nudge to the model after the 3rd; error texts not compared), 3 agent messages in a row, or an A/B pattern over 6 actions and observations — and stops the run as STUCK. Thresholds configurable (action_observation 4, action_error 3, monologue 3, alternating_pattern 6). Known misses: a loop whose thought text changes each time; errors that a tool returns as output rather than raises.",
            Profile::OpenhandsV0 => "OpenHands V0's StuckDetector (All-Hands-AI/OpenHands@156d0686): after each observation it compares the last 4 actions and observations, the last 3 with errors, monologues, an A/B pattern over 6, and repeated condensations. A shell command's observation is compared by command and exit code only, so polling a build log with changing output is called a loop (its best-known false positive); other tools compare their whole output.",
            Profile::RooCode => "Roo Code (RooCodeInc/Roo-Code@cb836567): the 4th consecutive identical tool call (name + stable JSON of its arguments) is blocked and the user asked, re-armed at once (8th, 12th…); and the consecutive-mistake limit of 3 (tool errors, or two requests in a row without a tool). Alternating A/B calls are never caught.",
            Profile::Cline => "Cline (cline/cline@f3a3f30db5): a warning to the model at exactly 3 consecutive identical calls, a hard stop at exactly 5 (name + arguments serialized with only the top-level keys, at every depth), and the mistake limit of 3 (tool errors, requests without a tool). Calls that differ only below the top level look identical (a false positive shape).",
            Profile::Vllm => "vLLM 0.33.0's repetition_detection (the server-side check since 0.17; copied by mlx runtimes, proposed for llama.cpp): after every generated token, the request ends with finish reason \"repetition\" once its output tokens (reasoning and answer, one sequence) end in min_count copies of a pattern of min_pattern_size..max_pattern_size tokens. Off in vLLM by default: a request turns it on by sending \"repetition_detection\" (max_pattern_size 0 or min_count below 2 is off); the profile's defaults are what llama.cpp's port and mlxcel use (min 16, max 1024, count 4). Tokens are compared by id: give it logs with token_ids (vLLM's return_token_ids, kept by `loopscope record`) or --tokenizer tokenizer.json; otherwise each text delta counts as one token and it says so. Known false positives: min_count 2 stops at any doubled word; a markdown table or code of identical lines.",
            Profile::RooFork => "A Roo Code fork's dead-loop detector (kkkqkx123/Roo-Code@1ce5e59d), the checkpoint design as coded: at 1000 chars a short CJK unit repeated 4 times in the last 200 UTF-16 units, at 2000 and 4000 a list or paragraph period check on the text between checkpoints, cut at the checkpoint. Only CJK units count, and a loop that starts after a checkpoint's segment is missed.",
            Profile::Openclaw => "OpenClaw's tool-loop detection (npm openclaw@2026.9.6, tool-loop-detection.ts and its caller) on tool outcomes, per run (a prompt): a warning at 10 earlier identical calls (again at 20, 30), a block at 20 identical earlier outcomes (an exec failure counts across commands by its failure identity; a blocked call extends the streak), a global breaker at 30, polls without progress (10/20), A/B ping-pong (10; 20 with stable results), argument churn (10), an unknown tool named 10 times, and the post-compaction guard (after a compaction note, 3 identical calls with one result abort the run). Calls of one response are one batch: a block vetoes it. OpenClaw itself leaves the rolling rules off unless tools.loopDetection.enabled is true (openclaw.enabled=unset: only the post-compaction guard). Known misses: calls without results never block; a result that changes every time (a timestamp) never blocks; 30 records of history across runs.",
            Profile::Opencode => "opencode's doom_loop (npm opencode-ai@1.18.33; Kilo CLI's processor is the same): when the last three parts of one model response are tool calls of one tool with one input (JSON.stringify, key order as written), opencode asks the user for the doom_loop permission, and again at every further identical call. Blind across turns: identical calls in separate responses, or with a text or reasoning part among the last three, never ask; A/B cycles are missed. Read from the compiled binary (not run): the cases follow the spec.",
        }
    }

    /// The profile with this name.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parameter value as written in the registry (const-constructible).
#[derive(Clone, Copy, Debug)]
pub enum Default {
    /// A whole number.
    Count(usize),
    /// On or off.
    Flag(bool),
    /// Ascending whole numbers.
    List(&'static [usize]),
    /// A word among the parameter's choices.
    Word(&'static str),
    /// A fraction from 0 to 1, in thousandths.
    Milli(u32),
}

/// What values a parameter takes.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A whole number, at least `min`.
    Count {
        /// The smallest value allowed.
        min: usize,
    },
    /// On or off.
    Flag,
    /// Ascending whole numbers, at least one.
    List,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A number from 0 to 1 (kept to three decimals).
    Fraction,
}

#[derive(Clone, Copy, Debug)]
/// A detector parameter: its name, meaning, kind and defaults.
pub struct ParamSpec {
    /// The name `--set ID.NAME=` takes.
    pub name: &'static str,
    /// What it means, in one sentence.
    pub help: &'static str,
    /// What values it takes.
    pub kind: Kind,
    /// Its default in every profile but gemini-cli.
    pub seed: Default,
    /// The gemini-cli value where it differs from `seed`.
    pub gemini_cli: Option<Default>,
    /// The extended value where it differs from `seed` (a seed guard that
    /// extended keeps, made a loop detector: `error-streak.same_step`).
    pub extended: Option<Default>,
}

impl ParamSpec {
    /// A parameter with the same default everywhere.
    pub(crate) const fn new(name: &'static str, kind: Kind, seed: Default, help: &'static str) -> ParamSpec {
        ParamSpec {
            name,
            help,
            kind,
            seed,
            gemini_cli: None,
            extended: None,
        }
    }

    /// The same parameter with another default under extended.
    pub(crate) const fn extended(mut self, value: Default) -> ParamSpec {
        self.extended = Some(value);
        self
    }

    /// The same parameter with another default under gemini-cli.
    pub(crate) const fn gemini(mut self, value: Default) -> ParamSpec {
        self.gemini_cli = Some(value);
        self
    }

    /// Its default under `profile`.
    pub fn default_for(&self, profile: Profile) -> Value {
        let d = match profile {
            Profile::GeminiCli => self.gemini_cli.unwrap_or(self.seed),
            Profile::Seed => self.seed,
            // extended's detectors are its own: their one default is `seed`,
            // but for the seed guards it keeps and reads as loop detectors.
            Profile::Extended => self.extended.unwrap_or(self.seed),
            // The compat profiles' detectors are their own: one default each.
            Profile::QwenCode
            | Profile::Openhands
            | Profile::OpenhandsV0
            | Profile::RooCode
            | Profile::Cline
            | Profile::RooFork
            | Profile::Vllm
            | Profile::Openclaw
            | Profile::Opencode => self.seed,
        };
        match d {
            Default::Count(n) => Value::Count(n),
            Default::Flag(b) => Value::Flag(b),
            Default::List(l) => Value::List(l.to_vec()),
            Default::Word(w) => Value::Word(w.to_string()),
            Default::Milli(m) => Value::Milli(m),
        }
    }

    /// Parses a value given on the command line (`--set ID.PARAM=VALUE`);
    /// a value that does not fit is an [`ErrorKind::InvalidValue`].
    pub(crate) fn parse(&self, text: &str) -> Result<Value, Error> {
        self.parse_text(text).map_err(invalid)
    }

    fn parse_text(&self, text: &str) -> Result<Value, String> {
        let text = text.trim();
        match self.kind {
            Kind::Count { min } => {
                let n: usize = text
                    .parse()
                    .map_err(|_| format!("expected a whole number, got {}", crate::detect::quote(text, 60)))?;
                self.check_count(n, min)
            }
            Kind::Flag => match text {
                "true" | "yes" | "on" | "1" => Ok(Value::Flag(true)),
                "false" | "no" | "off" | "0" => Ok(Value::Flag(false)),
                _ => Err(format!(
                    "expected true or false, got {}",
                    crate::detect::quote(text, 60)
                )),
            },
            Kind::List => {
                let inner = text.trim_start_matches('[').trim_end_matches(']');
                let list = inner
                    .split(',')
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| {
                        format!(
                            "expected numbers separated by commas, got {}",
                            crate::detect::quote(text, 60)
                        )
                    })?;
                check_list(list)
            }
            Kind::Choice(words) => {
                if words.contains(&text) {
                    Ok(Value::Word(text.to_string()))
                } else {
                    Err(format!(
                        "expected one of {}, got {}",
                        words.join(", "),
                        crate::detect::quote(text, 60)
                    ))
                }
            }
            Kind::Fraction => text
                .parse::<f64>()
                .ok()
                .and_then(fraction)
                .ok_or_else(|| format!("expected a number from 0 to 1, got {}", crate::detect::quote(text, 60))),
        }
    }

    /// Reads a value from a TOML config file; a value that does not fit
    /// is an [`ErrorKind::InvalidValue`].
    pub(crate) fn read_toml(&self, v: &toml::Value) -> Result<Value, Error> {
        self.toml_value(v).map_err(invalid)
    }

    fn toml_value(&self, v: &toml::Value) -> Result<Value, String> {
        match (self.kind, v) {
            (Kind::Count { min }, toml::Value::Integer(i)) => {
                let n = usize::try_from(*i).map_err(|_| format!("expected a whole number, got {i}"))?;
                self.check_count(n, min)
            }
            (Kind::Flag, toml::Value::Boolean(b)) => Ok(Value::Flag(*b)),
            (Kind::List, toml::Value::Array(items)) => {
                let list = items
                    .iter()
                    .map(|i| i.as_integer().and_then(|n| usize::try_from(n).ok()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| "expected an array of whole numbers".to_string())?;
                check_list(list)
            }
            (Kind::Choice(_), toml::Value::String(s)) => self.parse_text(s),
            (Kind::Fraction, toml::Value::Float(x)) => {
                fraction(*x).ok_or_else(|| format!("expected a number from 0 to 1, got {x}"))
            }
            (Kind::Fraction, toml::Value::Integer(i)) => {
                fraction(*i as f64).ok_or_else(|| format!("expected a number from 0 to 1, got {i}"))
            }
            (_, other) => Err(format!("expected {}, got {other}", self.kind_name())),
        }
    }

    fn check_count(&self, n: usize, min: usize) -> Result<Value, String> {
        if n < min {
            Err(format!("must be at least {min}, got {n}"))
        } else if n > MAX_COUNT {
            Err(format!("must be at most {MAX_COUNT}, got {n}"))
        } else {
            Ok(Value::Count(n))
        }
    }

    /// The kind of values it takes, as the listing writes it.
    pub(crate) fn kind_name(&self) -> String {
        match self.kind {
            Kind::Count { min } => format!("a whole number from {min} to {MAX_COUNT}"),
            Kind::Flag => "true or false".to_string(),
            Kind::List => "a list of ascending whole numbers".to_string(),
            Kind::Choice(words) => format!("one of {}", words.join(", ")),
            Kind::Fraction => "a number from 0 to 1".to_string(),
        }
    }
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidValue, message)
}

/// A fraction in thousandths, if `x` is in 0..=1.
fn fraction(x: f64) -> Option<Value> {
    (0.0..=1.0)
        .contains(&x)
        .then(|| Value::Milli((x * 1000.0).round() as u32))
}

/// The largest count any parameter takes. Sizes, windows and histories
/// beyond it would only make a detector's memory or per-event work unbounded
/// (`chunk-chant.chunk=18446744073709551615` once never finished).
pub(crate) const MAX_COUNT: usize = 1_000_000;

/// The most numbers a list parameter (checkpoints) holds.
pub(crate) const MAX_LIST: usize = 64;

fn check_list(list: Vec<usize>) -> Result<Value, String> {
    if list.is_empty() {
        return Err("the list is empty".to_string());
    }
    if list.len() > MAX_LIST {
        return Err(format!("at most {MAX_LIST} numbers, got {}", list.len()));
    }
    if list.iter().any(|&n| n > MAX_COUNT) {
        return Err(format!("the numbers must be at most {MAX_COUNT}"));
    }
    if list.windows(2).any(|w| w[0] >= w[1]) || list[0] == 0 {
        return Err("the numbers must be positive and strictly ascending".to_string());
    }
    Ok(Value::List(list))
}

/// A resolved parameter value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A whole number.
    Count(usize),
    /// On or off.
    Flag(bool),
    /// Ascending whole numbers.
    List(Vec<usize>),
    /// A word.
    Word(String),
    /// A fraction in thousandths (0.9 is 900).
    Milli(u32),
}

impl Value {
    /// A fraction's value (0 for other kinds).
    pub(crate) fn fraction(&self) -> f64 {
        match self {
            Value::Milli(m) => f64::from(*m) / 1000.0,
            _ => 0.0,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Flag(b) => write!(f, "{b}"),
            Value::List(l) => {
                let parts: Vec<String> = l.iter().map(|n| n.to_string()).collect();
                write!(f, "{}", parts.join(","))
            }
            Value::Word(w) => f.write_str(w),
            Value::Milli(m) => write!(f, "{}", f64::from(*m) / 1000.0),
        }
    }
}

impl Value {
    /// The value as JSON (`loopscope detectors --json`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Count(n) => (*n).into(),
            Value::Flag(b) => (*b).into(),
            Value::List(l) => l.clone().into(),
            Value::Word(w) => w.clone().into(),
            Value::Milli(m) => (f64::from(*m) / 1000.0).into(),
        }
    }
}

/// The parameters of one configured detector, in registry order.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    values: Vec<(&'static str, Value)>,
}

impl Params {
    /// Every parameter at its default under `profile`.
    pub(crate) fn defaults(specs: &[ParamSpec], profile: Profile) -> Params {
        Params {
            values: specs.iter().map(|s| (s.name, s.default_for(profile))).collect(),
        }
    }

    /// Sets one parameter.
    pub(crate) fn set(&mut self, name: &str, value: Value) {
        if let Some(slot) = self.values.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = value;
        }
    }

    /// Every parameter with its value, in registry order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(n, v)| (*n, v))
    }

    fn get(&self, name: &str) -> &Value {
        // Names come from the detector's own spec list, so absence is a bug.
        &self
            .values
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("detector reads undeclared parameter {name}"))
            .1
    }

    /// A whole-number parameter's value (0 if it is another kind).
    pub fn count(&self, name: &str) -> usize {
        match self.get(name) {
            Value::Count(n) => *n,
            other => panic!("parameter {name} is not a count: {other:?}"),
        }
    }

    /// A flag parameter's value.
    pub(crate) fn flag(&self, name: &str) -> bool {
        match self.get(name) {
            Value::Flag(b) => *b,
            other => panic!("parameter {name} is not a flag: {other:?}"),
        }
    }

    /// A list parameter's value.
    pub(crate) fn list(&self, name: &str) -> Vec<usize> {
        match self.get(name) {
            Value::List(l) => l.clone(),
            other => panic!("parameter {name} is not a list: {other:?}"),
        }
    }

    /// A fraction parameter's value.
    pub(crate) fn fraction(&self, name: &str) -> f64 {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, v)| v.fraction())
    }

    /// A word parameter's value.
    pub(crate) fn word(&self, name: &str) -> &str {
        match self.get(name) {
            Value::Word(w) => w,
            other => panic!("parameter {name} is not a word: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: ParamSpec = ParamSpec::new("threshold", Kind::Count { min: 2 }, Default::Count(5), "calls");

    #[test]
    fn parses_and_validates_values() {
        assert_eq!(SPEC.parse("7"), Ok(Value::Count(7)));
        assert!(SPEC.parse("1").unwrap_err().to_string().contains("at least 2"));
        assert!(SPEC.parse("x").is_err());
        let list = ParamSpec::new("checkpoints", Kind::List, Default::List(&[2000]), "");
        assert_eq!(list.parse("[1000, 4000]"), Ok(Value::List(vec![1000, 4000])));
        assert!(list.parse("4000,1000").is_err());
        let choice = ParamSpec::new("units", Kind::Choice(&["chars", "utf16"]), Default::Word("chars"), "");
        assert!(choice.parse("bytes").unwrap_err().to_string().contains("chars, utf16"));
        assert_eq!(
            choice.read_toml(&toml::Value::String("utf16".into())),
            Ok(Value::Word("utf16".into()))
        );
        assert!(SPEC.read_toml(&toml::Value::String("5".into())).is_err());
    }

    #[test]
    fn profile_defaults() {
        let s = SPEC.gemini(Default::Count(9));
        assert_eq!(s.default_for(Profile::Seed), Value::Count(5));
        assert_eq!(s.default_for(Profile::GeminiCli), Value::Count(9));
    }
}
