//! Which detectors run with which parameters: profile defaults, then the
//! config file, then `--set`. The config file is found as `--config PATH`,
//! else `$LOOPSCOPE_CONFIG`, else `$XDG_CONFIG_HOME/loopscope/config.toml`,
//! else `~/.config/loopscope/config.toml`.
//!
//! ```toml
//! profile = "seed"                        # optional
//! detectors = ["block-cycle", "list-cycle"] # optional; default: all of the profile
//!
//! [block-cycle]
//! min_matches = 8
//! ```

use std::path::PathBuf;

use crate::detect::params::{ParamSpec, Value};
use crate::detect::{self, DetectorInfo, Params, Profile, DETECTORS};
use crate::error::{Error, ErrorKind};

/// A config file's content that is not what it should be (no line: the
/// TOML was read; its keys or values are wrong).
fn malformed(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Malformed { line: None }, message)
}

/// Detectors a profile offers but does not run unless named (`--detectors`,
/// or `detectors` in the config): the judge costs calls to a model, and
/// budgets are no loops.
const OFF_BY_DEFAULT: [(&str, Profile); 3] = [
    ("llm-judge", Profile::Extended),
    // Budgets, not loops (extended is a loop detector): there when named.
    ("max-turns", Profile::Extended),
    ("error-total", Profile::Extended),
];

/// Whether `profile` offers detector `id` only when it is named.
pub fn off_by_default(id: &str, profile: Profile) -> bool {
    OFF_BY_DEFAULT.contains(&(id, profile))
}

pub use crate::detect::Configured;

/// Everything the engine needs to build its detectors.
///
/// ```
/// use loopscope_core::{Choices, Profile, Setup};
///
/// let seed = Setup::profile(Profile::Seed);
/// assert!(seed.ids().contains(&"block-cycle"));
/// // As `loopscope scan --profile seed` with this config file would.
/// let tuned = Setup::resolve_with(&Choices::default(), "[block-cycle]\nmin_matches = 8\n").unwrap();
/// assert_eq!(tuned.diff(), vec!["block-cycle.min_matches: 6 -> 8"]);
/// ```
#[derive(Clone, Debug)]
pub struct Setup {
    /// The profile the detectors and their defaults come from.
    pub profile: Profile,
    /// The detectors that run, in registry order, with their parameters.
    pub detectors: Vec<Configured>,
    /// The judge endpoint of the config file (`[judge]`).
    pub judge: JudgeEndpoint,
    /// The config file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// `--tokenizer`: what turns text into token ids where a text event
    /// carries no `token_ids` (profile `vllm`).
    pub tokenizer: Option<crate::detect::Encoder>,
}

/// What the user asked for on the command line.
///
/// ```
/// use loopscope_core::{Choices, Profile, Setup};
///
/// let choices = Choices {
///     profile: Some(Profile::GeminiCli),
///     detectors: Some(vec!["tool-repeat".into()]),
///     sets: vec!["tool-repeat.max_cycle=3".into()],
///     ..Choices::default()
/// };
/// let s = Setup::resolve_with(&choices, "").unwrap();
/// assert_eq!(s.ids(), vec!["tool-repeat"]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Choices {
    /// `--profile`.
    pub profile: Option<Profile>,
    /// `--detectors`: keep only these ids.
    pub detectors: Option<Vec<String>>,
    /// `--config PATH`; when absent the usual places are searched.
    pub config: Option<PathBuf>,
    /// `--set ID.PARAM=VALUE`, in order.
    pub sets: Vec<String>,
    /// `--tokenizer FILE`, loaded.
    pub tokenizer: Option<crate::detect::Encoder>,
}

/// `[judge]` in the config file: the endpoint `--judge live` and
/// `loopscope judge` use when no flag names one. The API key itself is
/// never in the file: `api_key_env` names the variable that holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JudgeEndpoint {
    /// The endpoint's OpenAI-compatible base URL.
    pub base_url: Option<String>,
    /// The model asked first.
    pub model: Option<String>,
    /// The model that double-checks a loop verdict.
    pub double_check_model: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// Seconds to wait for an answer.
    pub timeout: Option<u64>,
    /// How many times a failed call is tried.
    pub attempts: Option<usize>,
    /// A file whose text replaces the judge's prompt.
    pub prompt_file: Option<PathBuf>,
}

impl JudgeEndpoint {
    fn from_toml(v: &toml::Value) -> Result<JudgeEndpoint, Error> {
        let toml::Value::Table(t) = v else {
            return Err(malformed("[judge] must be a table"));
        };
        let mut j = JudgeEndpoint::default();
        for (k, v) in t {
            let text = || {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| Error::new(ErrorKind::InvalidValue, format!("[judge] {k} must be a string")))
            };
            let number = || {
                v.as_integer()
                    .and_then(|n| u64::try_from(n).ok())
                    .filter(|n| (1..=3600).contains(n))
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidValue,
                            format!("[judge] {k} must be a whole number from 1 to 3600"),
                        )
                    })
            };
            match k.as_str() {
                "base_url" => j.base_url = Some(text()?),
                "model" => j.model = Some(text()?),
                "double_check_model" => j.double_check_model = Some(text()?),
                "api_key_env" => j.api_key_env = Some(text()?),
                "timeout" => j.timeout = Some(number()?),
                "attempts" => j.attempts = Some(number()? as usize),
                "prompt_file" => j.prompt_file = Some(PathBuf::from(text()?)),
                "api_key" => return Err(Error::new(ErrorKind::UnknownParameter, "[judge] api_key: keys are not kept in config files; name the environment variable that holds it with api_key_env")),
                other => {
                    return Err(Error::new(
                        ErrorKind::UnknownParameter,
                        format!("[judge] unknown key {other:?} (base_url, model, double_check_model, api_key_env, timeout, attempts, prompt_file)"),
                    ))
                }
            }
        }
        Ok(j)
    }
}

/// The parsed config file.
#[derive(Debug, Default)]
struct ConfigFile {
    judge: Option<JudgeEndpoint>,
    profile: Option<Profile>,
    detectors: Option<Vec<String>>,
    /// Parameter values per detector, already checked against their specs.
    tables: Vec<(&'static DetectorInfo, Vec<(&'static str, Value)>)>,
}

impl Setup {
    /// A profile with all its detectors at their defaults.
    pub fn profile(profile: Profile) -> Setup {
        Setup {
            profile,
            detectors: DETECTORS
                .iter()
                .filter(|d| d.in_profile(profile) && !OFF_BY_DEFAULT.contains(&(d.id, profile)))
                .map(|&info| Configured {
                    info,
                    params: Params::defaults(info.params, profile),
                })
                .collect(),
            config_file: None,
            judge: JudgeEndpoint::default(),
            tokenizer: None,
        }
    }

    /// Resolves the user's choices, reading the config file from the usual
    /// places when none was named.
    pub fn resolve(choices: &Choices) -> Result<Setup, Error> {
        let path = match &choices.config {
            Some(p) => Some(p.clone()),
            None => discover_config(),
        };
        let file = match &path {
            Some(p) => {
                let text = read_capped(p, MAX_SMALL_FILE).map_err(|e| e.prefixed("cannot read config "))?;
                parse_config(&text).map_err(|e| e.prefixed(&format!("config {}: ", p.display())))?
            }
            None => ConfigFile::default(),
        };
        let mut setup = Setup::from_parts(choices, file)?;
        setup.config_file = path;
        Ok(setup)
    }

    /// Resolves the choices once per profile, for a comparison: detectors
    /// and `--set`s that a profile does not run are left out of it, and
    /// each must apply to at least one of them.
    pub fn resolve_each(choices: &Choices, profiles: &[Profile]) -> Result<Vec<Setup>, Error> {
        let mut setups = Vec::new();
        for &p in profiles {
            let in_p = |id: &str| detect::find(id).is_some_and(|info| info.in_profile(p));
            let ids = choices
                .detectors
                .as_ref()
                .map(|ids| ids.iter().filter(|id| in_p(id)).cloned().collect::<Vec<_>>());
            if ids.as_ref().is_some_and(Vec::is_empty) {
                continue;
            }
            let running = |set: &String| {
                let id = set.split('.').next().unwrap_or_default().trim();
                in_p(id) && ids.as_ref().is_none_or(|ids| ids.iter().any(|i| i == id))
            };
            let sets = choices.sets.iter().filter(|s| running(s)).cloned().collect();
            let mine = Choices {
                profile: Some(p),
                detectors: ids,
                config: choices.config.clone(),
                sets,
                tokenizer: choices.tokenizer.clone(),
            };
            setups.push(Setup::resolve(&mine)?);
        }
        for id in choices.detectors.iter().flatten() {
            if !setups.iter().any(|s| s.ids().contains(&id.as_str())) {
                return Err(match detect::find(id) {
                    None => unknown_detector(id),
                    Some(_) => Error::new(
                        ErrorKind::UnknownDetector,
                        format!("detector {id} is in none of the profiles compared"),
                    ),
                });
            }
        }
        for set in &choices.sets {
            let id = set.split('.').next().unwrap_or_default().trim();
            if !setups.iter().any(|s| s.ids().contains(&id)) {
                // A malformed one is told as a single profile tells it.
                let home = detect::find(id).and_then(|info| Profile::ALL.into_iter().find(|p| info.in_profile(*p)));
                Setup::profile(home.unwrap_or(profiles[0])).apply_set(set)?;
                return Err(Error::new(
                    ErrorKind::UnknownDetector,
                    format!("--set {set}: detector {id} runs in none of the profiles compared"),
                ));
            }
        }
        Ok(setups)
    }

    /// Resolves choices against config text (no file system).
    pub fn resolve_with(choices: &Choices, config_text: &str) -> Result<Setup, Error> {
        Setup::from_parts(choices, parse_config(config_text)?)
    }

    fn from_parts(choices: &Choices, file: ConfigFile) -> Result<Setup, Error> {
        let profile = choices.profile.or(file.profile).unwrap_or(Profile::Seed);
        let mut setup = Setup::profile(profile);
        setup.judge = file.judge.clone().unwrap_or_default();
        setup.tokenizer = choices.tokenizer.clone();
        if let Some(ids) = choices.detectors.as_ref().or(file.detectors.as_ref()) {
            setup.select(ids)?;
        }
        for (info, values) in file.tables {
            if let Some(c) = setup.detectors.iter_mut().find(|c| c.info.id == info.id) {
                for (name, v) in values {
                    c.params.set(name, v);
                }
            }
        }
        for set in &choices.sets {
            setup.apply_set(set)?;
        }
        Ok(setup)
    }

    /// How this setup differs from its profile's defaults, one change a
    /// line ("block-cycle.min_matches: 6 -> 21", "- list-cycle").
    pub fn diff(&self) -> Vec<String> {
        let base = Setup::profile(self.profile);
        let mut out = Vec::new();
        for b in &base.detectors {
            match self.detectors.iter().find(|c| c.info.id == b.info.id) {
                None => out.push(format!("- {} (not running)", b.info.id)),
                Some(c) => {
                    for ((name, was), (_, now)) in b.params.iter().zip(c.params.iter()) {
                        if was != now {
                            out.push(format!("{}.{name}: {was} -> {now}", b.info.id));
                        }
                    }
                }
            }
        }
        out
    }

    /// Keeps only these detectors (in registry order), adding a profile's
    /// off-by-default ones when named.
    pub fn select(&mut self, ids: &[String]) -> Result<(), Error> {
        if ids.is_empty() {
            return Err(Error::new(ErrorKind::InvalidValue, "no detector selected"));
        }
        for id in ids {
            let info = detect::find(id).ok_or_else(|| unknown_detector(id))?;
            if !info.in_profile(self.profile) {
                return Err(Error::new(
                    ErrorKind::UnknownDetector,
                    format!(
                        "detector {id} is not in profile {} (its detectors: {})",
                        self.profile,
                        self.ids().join(", ")
                    ),
                ));
            }
        }
        let profile = self.profile;
        for info in DETECTORS.iter().filter(|d| OFF_BY_DEFAULT.contains(&(d.id, profile))) {
            if ids.iter().any(|id| id == info.id) && !self.detectors.iter().any(|c| c.info.id == info.id) {
                self.detectors.push(Configured {
                    info,
                    params: Params::defaults(info.params, profile),
                });
            }
        }
        // Registry order, whatever order they were named in.
        self.detectors
            .sort_by_key(|c| DETECTORS.iter().position(|d| d.id == c.info.id).unwrap_or(usize::MAX));
        self.detectors.retain(|c| ids.iter().any(|id| id == c.info.id));
        Ok(())
    }

    /// Applies one `ID.PARAM=VALUE` (as `--set` and the viewer's `:set` do).
    pub fn apply_set(&mut self, set: &str) -> Result<(), Error> {
        let bad = || {
            Error::new(
                ErrorKind::InvalidValue,
                format!("--set expects ID.PARAM=VALUE, got {set:?}"),
            )
        };
        let (target, value) = set.split_once('=').ok_or_else(bad)?;
        let (id, name) = target.trim().split_once('.').ok_or_else(bad)?;
        let info = detect::find(id).ok_or_else(|| unknown_detector(id))?;
        let spec = param_spec(info, name)?;
        let v = spec
            .parse(value)
            .map_err(|e| e.prefixed(&format!("--set {id}.{name}: ")))?;
        let not_running = Error::new(
            ErrorKind::UnknownDetector,
            format!(
                "--set {id}.{name}: detector {id} is not running (profile {}, detectors: {})",
                self.profile,
                self.ids().join(", ")
            ),
        );
        let c = self.detectors.iter_mut().find(|c| c.info.id == id).ok_or(not_running)?;
        c.params.set(spec.name, v);
        Ok(())
    }

    /// The parameters of its `llm-judge`, if the setup runs the judge.
    pub fn judge_params(&self) -> Option<crate::detect::judge::JudgeParams> {
        self.detectors
            .iter()
            .find(|c| c.info.id == "llm-judge")
            .map(|c| crate::detect::judge::JudgeParams::from(&c.params))
    }

    /// The ids of the detectors that run, in order.
    pub fn ids(&self) -> Vec<&'static str> {
        self.detectors.iter().map(|c| c.info.id).collect()
    }

    /// The detectors with their rules and parameters, for `detectors --json`.
    pub fn describe_json(&self) -> serde_json::Value {
        let detectors: Vec<serde_json::Value> = self
            .detectors
            .iter()
            .map(|c| {
                let params: Vec<serde_json::Value> = c
                    .info
                    .params
                    .iter()
                    .zip(c.params.iter())
                    .map(|(spec, (_, value))| {
                        let mut defaults = serde_json::Map::new();
                        for p in Profile::ALL.into_iter().filter(|p| c.info.in_profile(*p)) {
                            defaults.insert(p.name().into(), spec.default_for(p).to_json());
                        }
                        serde_json::json!({
                            "name": spec.name,
                            "value": value.to_json(),
                            "defaults": defaults,
                            "accepts": spec.kind_name(),
                            "help": spec.help,
                        })
                    })
                    .collect();
                let profiles: Vec<&str> = Profile::ALL
                    .into_iter()
                    .filter(|p| c.info.in_profile(*p))
                    .map(Profile::name)
                    .collect();
                serde_json::json!({
                    "id": c.info.id,
                    "family": c.info.family.name(),
                    "channel": c.info.channel.as_str(),
                    "profiles": profiles,
                    "rule": c.info.rule,
                    "params": params,
                })
            })
            .collect();
        serde_json::json!({ "profile": self.profile.name(), "about": self.profile.about(), "detectors": detectors })
    }

    /// A config file that states every parameter of this setup; what
    /// differs from the profile's defaults is marked `changed` (with the
    /// default), and a selection of detectors is written as `detectors`.
    pub fn to_toml(&self) -> String {
        let base = Setup::profile(self.profile);
        let default_of = |id: &str, name: &str| {
            base.detectors
                .iter()
                .find(|b| b.info.id == id)
                .and_then(|b| b.params.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()))
        };
        let selected = self.ids() != base.ids();
        let changed = self
            .detectors
            .iter()
            .flat_map(|c| c.params.iter().map(move |(n, v)| (c.info.id, n, v)))
            .filter(|(id, n, v)| default_of(id, n).is_some_and(|was| was != **v))
            .count();
        let mut out = format!("# loopscope configuration (profile {}).\n", self.profile);
        out += &match changed {
            0 => "# Every value below is the default; delete what you do not change.\n".to_string(),
            n => format!(
                "# {} from profile {}'s defaults (marked `changed`); the other values are the defaults.\n",
                if n == 1 {
                    "1 change".to_string()
                } else {
                    format!("{n} changes")
                },
                self.profile
            ),
        };
        out += &format!("profile = \"{}\"\n", self.profile);
        if selected {
            let ids: Vec<String> = self.ids().iter().map(|id| format!("{id:?}")).collect();
            out += &format!(
                "# Only these run (the profile's others are off).\ndetectors = [{}]\n",
                ids.join(", ")
            );
        }
        for c in &self.detectors {
            out += &format!("\n# {}\n[{}]\n", c.info.rule, c.info.id);
            for (name, value) in c.params.iter() {
                let spec = param_spec(c.info, name).expect("own parameter");
                let v = match value.to_json() {
                    serde_json::Value::String(s) => format!("{s:?}"),
                    other => other.to_string().replace(',', ", "),
                };
                let mark = match default_of(c.info.id, name) {
                    Some(was) if was != *value => format!("changed (default {was}); "),
                    _ => String::new(),
                };
                out += &format!("{name} = {v}  # {mark}{}\n", spec.help);
            }
        }
        out
    }
}

fn unknown_detector(id: &str) -> Error {
    // The ~40 ids would be cut in a message line: the nearest, and where
    // to see them all.
    let nearest = DETECTORS
        .iter()
        .map(|d| (strsim::jaro(id, d.id), d.id))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let hint = "`loopscope detectors --profile NAME` lists a profile's detectors";
    Error::new(
        ErrorKind::UnknownDetector,
        match nearest {
            Some((_, near)) => format!(
                "unknown detector {} (did you mean {near}? {hint})",
                crate::detect::quote(id, 60)
            ),
            None => format!("unknown detector {} ({hint})", crate::detect::quote(id, 60)),
        },
    )
}

/// "unknown profile 'x' (known: …)", as the CLI and the library say it.
pub(crate) fn unknown_profile(name: &str) -> Error {
    let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
    Error::new(
        ErrorKind::UnknownProfile,
        format!(
            "unknown profile {} (known: {})",
            crate::detect::quote(name, 60),
            names.join(", ")
        ),
    )
}

fn param_spec(info: &'static DetectorInfo, name: &str) -> Result<&'static ParamSpec, Error> {
    info.params.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = info.params.iter().map(|p| p.name).collect();
        Error::new(
            ErrorKind::UnknownParameter,
            format!(
                "{} has no parameter {} (its parameters: {})",
                info.id,
                crate::detect::quote(name, 60),
                names.join(", ")
            ),
        )
    })
}

/// The most read of a small text file the user names: a config file, a
/// judge prompt (`prompt_file`, `--judge-prompt`). `/dev/zero` is refused
/// after this much, not read until memory runs out.
pub const MAX_SMALL_FILE: usize = 1 << 20;

/// A text file of at most `limit` bytes; the error names the file.
pub fn read_capped(path: &std::path::Path, limit: usize) -> Result<String, Error> {
    use std::io::Read;
    let name = crate::sanitize::path(path);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| Error::io(&name, &e))?;
    if bytes.len() > limit {
        return Err(Error::new(
            ErrorKind::InvalidValue,
            format!(
                "{name}: longer than {} (the most read of such a file)",
                crate::formats::human_bytes(limit)
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| malformed(format!("{name}: not UTF-8 text")))
}

fn discover_config() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = env("LOOPSCOPE_CONFIG") {
        return Some(p);
    }
    let base = env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config")))?;
    let p = base.join("loopscope").join("config.toml");
    p.is_file().then_some(p)
}

fn parse_config(text: &str) -> Result<ConfigFile, Error> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of(text, s.start));
        let at = line.map_or(String::new(), |n| format!(" (line {n})"));
        Error::new(ErrorKind::Malformed { line }, e.message().to_string() + &at)
    })?;
    let mut file = ConfigFile::default();
    for (key, value) in table {
        match key.as_str() {
            "profile" => {
                let name = value.as_str().ok_or_else(|| malformed("`profile` must be a string"))?;
                file.profile = Some(Profile::from_name(name).ok_or_else(|| unknown_profile(name))?);
            }
            "detectors" => {
                let list = value
                    .as_array()
                    .and_then(|a| {
                        a.iter()
                            .map(|v| v.as_str().map(String::from))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| malformed("`detectors` must be an array of detector ids"))?;
                file.detectors = Some(list);
            }
            "judge" => file.judge = Some(JudgeEndpoint::from_toml(&value)?),
            id => {
                let info = detect::find(id).ok_or_else(|| {
                    Error::new(
                        ErrorKind::UnknownDetector,
                        format!(
                            "unknown key {} (expected profile, detectors, judge, or a detector id)",
                            crate::detect::quote(id, 60)
                        ),
                    )
                })?;
                let toml::Value::Table(t) = value else {
                    return Err(malformed(format!("[{id}] must be a table of parameters")));
                };
                let mut values = Vec::new();
                for (name, value) in &t {
                    let spec = param_spec(info, name)?;
                    let v = spec
                        .read_toml(value)
                        .map_err(|e| e.prefixed(&format!("[{id}] {name}: ")))?;
                    values.push((spec.name, v));
                }
                file.tables.push((info, values));
            }
        }
    }
    Ok(file)
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

pub use crate::formats::is_stdin;

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
