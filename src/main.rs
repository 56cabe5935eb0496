//! The `loopscope` command line: parses arguments and calls the library.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use loopscope::detect::Family;
use loopscope::formats::{self, FormatChoice};
use loopscope::render::{At, Shot};
use loopscope::replay::{feed, PacingRules};
use loopscope::sanitize::Terminal;
use loopscope::scan::{self, Input, ScanOptions, EXIT_ERROR};
use loopscope::sessions::{self, Agent};
use loopscope::tail::{run_headless, HeadlessOptions, Target};
use loopscope::tui::{self, theme::Theme, LiveOptions, ViewOptions};
use loopscope::{Choices, Profile, Setup};

#[derive(Parser)]
#[command(
    name = "loopscope",
    version,
    about = "Replay, tail and inspect recorded LLM agent streams; see which loop detector fired and why."
)]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// A stream to view ("-" reads standard input); with none, the bundled demo.
    /// (Several are refused with a hint: the viewer shows one stream.)
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    replay: ReplayFlags,
    #[command(flatten)]
    judge: LiveJudgeFlags,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct ConvertArgs {
    /// The input ("-" reads standard input; a Cline/Roo task folder works too).
    file: PathBuf,
    /// Where to write (default: standard output). Never the input itself.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    #[command(flatten)]
    input: InputFlags,
}

#[derive(Args)]
struct ScreenshotArgs {
    /// The stream to draw.
    file: PathBuf,
    /// Draw just after this event, or at the end.
    #[arg(long, default_value = "end", value_name = "EVENT|end", value_parser = At::parse)]
    at: At,
    /// Terminal size in cells.
    #[arg(long, default_value = "120x40", value_name = "COLSxROWS", value_parser = parse_size)]
    size: (u16, u16),
    /// Select this detector and show its evidence.
    #[arg(long, value_name = "DETECTOR")]
    select: Option<String>,
    /// Keys to press first, one character each ("?" opens the help, "c" the content, "e" the next
    /// detection), and named keys in brackets: <Tab> <Enter> <Esc> <Up> <Down> <PgUp> <PgDn>.
    #[arg(long, default_value = "")]
    keys: String,
    /// Draw it as `tail` shows a live stream.
    #[arg(long)]
    live: bool,
    /// Where to write the SVG (default: standard output); a name ending in
    /// .txt gets the screen as plain text.
    #[arg(short, long, value_name = "OUT.svg")]
    output: Option<PathBuf>,
    /// Colour theme (the picture's background follows it).
    #[arg(long, value_parser = ["dark", "light", "mono"], default_value = "dark")]
    theme: String,
    /// Add the selected detection's reason and parameters under the picture.
    #[arg(long)]
    caption: bool,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct ReplayIntoArgs {
    /// The recorded stream (any supported format).
    source: PathBuf,
    /// The file to write native JSONL into (created or emptied first).
    target: PathBuf,
    /// How many times faster than recorded.
    #[arg(long, default_value_t = 1.0, value_parser = parse_positive)]
    speed: f64,
    /// Characters per second for events without `ts`.
    #[arg(long, default_value_t = 300.0, value_parser = parse_positive)]
    cps: f64,
    #[command(flatten)]
    input: InputFlags,
}

fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("expected COLSxROWS like 120x40, got {s:?}"))?;
    let parse = |v: &str| v.trim().parse::<u16>().ok().filter(|n| (10..=1000).contains(n));
    match (parse(w), parse(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("expected COLSxROWS with 10 to 1000 each, got {s:?}")),
    }
}

/// How the input is read.
#[derive(Args, Clone, Copy)]
struct InputFlags {
    /// Input format: auto, native, openai-chat, openai-responses, anthropic, gemini,
    /// claude-code, qwen-code, codex, gemini-cli or cline.
    #[arg(long, default_value = "auto", value_parser = FormatChoice::parse)]
    format: FormatChoice,
    /// The longest record (line, event, array element, whole document) read;
    /// a longer one is reported as a bad line and skipped (64M, 1G, …).
    #[arg(long, default_value = "64M", value_name = "SIZE", value_parser = formats::parse_size)]
    max_record: usize,
}

#[derive(Args)]
struct ViewArgs {
    /// The stream to view ("-" reads standard input).
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    replay: ReplayFlags,
    #[command(flatten)]
    judge: LiveJudgeFlags,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct TailArgs {
    /// The file to follow ("-" reads standard input); it may not exist yet.
    #[arg(required_unless_present = "latest")]
    file: Option<PathBuf>,
    /// Follow the most recently written session of an agent (claude-code,
    /// codex, gemini-cli, qwen-code, cline, roo-code) or in a directory,
    /// and switch to each new session it starts.
    #[arg(long, value_name = "AGENT|DIR", conflicts_with = "file")]
    latest: Option<String>,
    #[command(flatten)]
    judge: LiveJudgeFlags,
    /// Print each detection as it happens instead of opening the viewer.
    #[arg(long)]
    no_tui: bool,
    /// With --no-tui: one JSON object per detection (the fields of `scan --json`).
    #[arg(long, requires = "no_tui")]
    json: bool,
    /// Replay what the file already holds, then follow. Without it the
    /// existing content is fed to the detectors silently and following
    /// starts at the end.
    #[arg(long)]
    from_start: bool,
    /// Run CMD through the shell once per detection, with LOOPSCOPE_FILE,
    /// LOOPSCOPE_DETECTOR, LOOPSCOPE_EVENT, LOOPSCOPE_REASON and LOOPSCOPE_JSON set.
    #[arg(long, value_name = "CMD")]
    on_detect: Option<String>,
    /// Ring the terminal bell on each detection.
    #[arg(long)]
    bell: bool,
    #[command(flatten)]
    look: LookFlags,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

/// How a replay starts and looks.
#[derive(Args, Clone)]
struct ReplayFlags {
    /// Start paused.
    #[arg(long)]
    paused: bool,
    /// Start with events up to this index already shown.
    #[arg(long, value_name = "EVENT")]
    start_at: Option<usize>,
    /// Re-cut the text into deltas of N chars once read (`:rechunk off` in
    /// the viewer goes back to the recorded deltas).
    #[arg(long, value_name = "N", value_parser = parse_chunk)]
    rechunk: Option<usize>,
    #[command(flatten)]
    look: LookFlags,
}

/// Pacing and looks, for `view` and `tail`.
#[derive(Args, Clone)]
struct LookFlags {
    /// Playback speed, 0.25 to 64.
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
    speed: f64,
    /// Pause whenever a detector fires.
    #[arg(long)]
    pause_on_detect: bool,
    /// Characters per second for events without `ts`.
    #[arg(long, default_value_t = 300.0, value_parser = parse_positive)]
    cps: f64,
    /// Colour theme.
    #[arg(long, value_parser = ["dark", "light", "mono"], default_value = "dark")]
    theme: String,
    /// No colours (same as NO_COLOR=1): highlights use reverse, underline and bold.
    #[arg(long)]
    no_color: bool,
}

fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.25..=64.0).contains(&v) {
        Ok(v)
    } else {
        Err("speed must be between 0.25 and 64".into())
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

impl ReplayFlags {
    fn options(&self) -> ViewOptions {
        ViewOptions {
            paused: self.paused,
            start_at: self.start_at,
            rechunk: self.rechunk,
            ..self.look.options()
        }
    }
}

impl LookFlags {
    fn options(&self) -> ViewOptions {
        let no_color = self.no_color || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let theme = if no_color { "mono" } else { self.theme.as_str() };
        ViewOptions {
            speed: self.speed,
            pause_on_detect: self.pause_on_detect,
            pacing: PacingRules {
                cps: self.cps,
                ..PacingRules::default()
            },
            theme: Theme::by_name(theme).unwrap_or_else(Theme::dark),
            ..ViewOptions::default()
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Replay a recorded stream in the terminal and see what fires, and why.
    View(ViewArgs),
    /// Follow a stream that is still being written; be told the moment a loop starts.
    Tail(TailArgs),
    /// Turn any supported input into native loopscope JSONL.
    Convert(ConvertArgs),
    /// Draw the viewer at a position of a stream into an SVG file (no terminal needed).
    Screenshot(ScreenshotArgs),
    /// Write a recorded stream into a file at its own pace, to try `tail` in another terminal.
    ReplayInto(ReplayIntoArgs),
    /// Run the detectors headless and print what fired (exit 1 if anything did).
    Scan(ScanArgs),
    /// Write one self-contained HTML report for reviewers: the sessions
    /// (sortable), and each detection with its reason, numbers, parameters,
    /// highlighted evidence and the viewer's picture at that moment.
    Report(ReportArgs),
    /// A live list of every session of some agents (or folders): which are
    /// streaming, idle, or ⚠ FIRED; Enter opens one in the viewer.
    Watch(WatchArgs),
    /// List detectors, their rules, parameters and defaults.
    Detectors(DetectorsArgs),
    /// Try one parameter at many values over your logs: which files fire, and
    /// with --expect, recall and false positives per value.
    Tune(TuneArgs),
    /// Ask an LLM judge (any OpenAI-compatible endpoint) at every check of a
    /// recorded stream; write a copy with the verdicts as loop_check events.
    Judge(JudgeArgs),
    /// Print a shell completion script (e.g. `loopscope completions bash > ~/.local/share/bash-completion/completions/loopscope`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `loopscope man > loopscope.1`.
    Man,
}

/// Which sessions `scan` and `report` read.
#[derive(Args, Clone)]
struct SessionFlags {
    /// Streams to scan ("-" reads standard input); a directory is scanned
    /// recursively, a glob ('**/*.jsonl', quoted) expanded, files that are
    /// not agent sessions skipped.
    files: Vec<PathBuf>,
    /// Also every session of these agents on this machine (claude-code,
    /// codex, gemini-cli, qwen-code, cline, roo-code, comma-separated, or
    /// all); LOOPSCOPE_<AGENT>_DIR overrides where they are looked for.
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
    /// Only files found (in directories, globs, agents' folders) changed within this long (7d, 12h, 30m).
    #[arg(long, value_name = "AGE", value_parser = sessions::parse_age)]
    since: Option<std::time::Duration>,
    /// Only files found changed after this date (2026-11-01 or an RFC 3339 time).
    #[arg(long, value_name = "DATE", value_parser = sessions::parse_date)]
    newer_than: Option<std::time::SystemTime>,
}

#[derive(Args)]
struct ScanArgs {
    #[command(flatten)]
    sessions: SessionFlags,
    /// Files scanned at once [default: one per core].
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// After the files: a row per file (events, bad lines, detections, the
    /// first and what streamed after it) and totals per detector and format
    /// (with --json: {"type":"summary"} and {"type":"totals"} records).
    #[arg(long)]
    summary: bool,
    /// One JSON object per detection per line (comparing profiles: one per
    /// profile per file).
    #[arg(long)]
    json: bool,
    /// Re-cut the text into deltas of N chars first (the other events stay),
    /// to see whether a verdict depends on how the stream was cut.
    #[arg(long, value_name = "N", value_parser = parse_chunk)]
    rechunk: Option<usize>,
    #[command(flatten)]
    judge: LiveJudgeFlags,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct WatchArgs {
    /// Folders to watch, recursively (they may not exist yet); with no
    /// folder and no --agent, every agent's usual places.
    dirs: Vec<PathBuf>,
    /// Watch these agents' session folders (claude-code, codex, gemini-cli,
    /// qwen-code, cline, roo-code, comma-separated, or all).
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
    /// Print one line per detection across all sessions instead of the list.
    #[arg(long)]
    no_tui: bool,
    /// With --no-tui: one JSON record per detection (as `scan --json`).
    #[arg(long, requires = "no_tui")]
    json: bool,
    /// A session that has not grown for this long is idle (30s, 5m, 1h).
    #[arg(long, default_value = "2m", value_name = "AGE", value_parser = sessions::parse_age)]
    idle_after: std::time::Duration,
    /// Announce the detections in what the sessions held when watching
    /// began (without it they only mark the sessions ⚠ FIRED).
    #[arg(long)]
    from_start: bool,
    /// Run CMD through the shell once per new detection, with the same
    /// environment as `tail --on-detect` (LOOPSCOPE_FILE, …).
    #[arg(long, value_name = "CMD")]
    on_detect: Option<String>,
    /// Ring the terminal bell on each new detection.
    #[arg(long)]
    bell: bool,
    /// Draw the list once every session has been read into this file (SVG,
    /// or text for a name ending in .txt) and exit, no terminal needed.
    #[arg(long, value_name = "OUT.svg", conflicts_with = "no_tui")]
    snapshot: Option<PathBuf>,
    /// With --snapshot: its size in cells.
    #[arg(long, default_value = "120x24", value_name = "COLSxROWS", value_parser = parse_size)]
    size: (u16, u16),
    #[command(flatten)]
    look: LookFlags,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct ReportArgs {
    #[command(flatten)]
    sessions: SessionFlags,
    /// The HTML file to write (never one of the inputs).
    #[arg(short, long, value_name = "OUT.html")]
    output: PathBuf,
    /// Detections shown in full with a picture; the rest are in the table only.
    #[arg(long, default_value_t = 100, value_name = "N")]
    max_detections: usize,
    /// The viewer's size in the pictures, in cells.
    #[arg(long, default_value = "120x40", value_name = "COLSxROWS", value_parser = parse_size)]
    size: (u16, u16),
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

/// The LLM judge of `scan`: its recorded verdicts, a live endpoint, or none.
#[derive(Args, Clone)]
struct LiveJudgeFlags {
    /// replay: the loop_check verdicts recorded in the stream; live: ask
    /// --judge-endpoint at each check (verdicts counted as if recorded);
    /// off: no llm-judge.
    #[arg(long, value_parser = ["replay", "live", "off"], default_value = "replay")]
    judge: String,
    /// With --judge live: the OpenAI-compatible base URL (e.g. http://localhost:11434/v1).
    #[arg(long, value_name = "URL")]
    judge_endpoint: Option<String>,
    /// With --judge live: the model asked first.
    #[arg(long, value_name = "MODEL")]
    judge_model: Option<String>,
    /// With --judge live: the model that confirms a loop.
    #[arg(long, value_name = "MODEL")]
    judge_double_check_model: Option<String>,
    /// With --judge live: the environment variable holding the API key.
    #[arg(long, value_name = "VAR")]
    judge_api_key_env: Option<String>,
    /// The judge's instructions, instead of loopscope's own.
    #[arg(long, value_name = "FILE")]
    judge_prompt: Option<PathBuf>,
}

/// The judge endpoint the flags name, over the config file's `[judge]`.
#[derive(Default)]
struct EndpointFlags<'a> {
    url: Option<&'a str>,
    model: Option<&'a str>,
    double_check: Option<&'a str>,
    key_env: Option<&'a str>,
    timeout: Option<u64>,
    attempts: Option<usize>,
    prompt: Option<&'a std::path::Path>,
}

/// An endpoint from flags over the config; the API key is read from the named variable.
fn endpoint(
    flags: EndpointFlags<'_>,
    config: &loopscope::config::JudgeEndpoint,
) -> Result<loopscope::judge::Endpoint, String> {
    let url = flags
        .url
        .map(str::to_string)
        .or(config.base_url.clone())
        .ok_or("no judge endpoint: give --endpoint (--judge-endpoint) or base_url in the config's [judge]")?;
    let model = flags
        .model
        .map(str::to_string)
        .or(config.model.clone())
        .ok_or("no judge model: give --model (--judge-model) or model in the config's [judge]")?;
    let double_check = flags
        .double_check
        .map(str::to_string)
        .or(config.double_check_model.clone());
    let key_env = flags.key_env.map(str::to_string).or(config.api_key_env.clone());
    let timeout = flags.timeout.or(config.timeout).unwrap_or(60);
    let attempts = flags.attempts.or(config.attempts).unwrap_or(2);
    let prompt_path = flags
        .prompt
        .map(std::path::Path::to_path_buf)
        .or(config.prompt_file.clone());
    let prompt = match prompt_path.as_deref() {
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("{}: {}", p.display(), loopscope::io_reason(&e)))?,
        None => loopscope::judge::DEFAULT_PROMPT.to_string(),
    };
    let api_key = match key_env {
        Some(var) => Some(std::env::var(&var).map_err(|_| format!("the API key variable {var} is not set"))?),
        None => None,
    };
    Ok(loopscope::judge::Endpoint {
        base_url: url,
        model,
        double_check_model: double_check,
        api_key,
        timeout: std::time::Duration::from_secs(timeout.max(1)),
        attempts: attempts.max(1),
        prompt,
    })
}

/// The inputs of `scan` and `report`: each named file, every file under
/// each named directory or glob, and each named agent's sessions; notes
/// (an empty folder, an agent with no folder here) go to stderr.
fn scan_inputs(sel: &SessionFlags) -> Result<Vec<Input>, String> {
    let agents = match &sel.agent {
        Some(list) => Agent::parse_list(list)?,
        None => Vec::new(),
    };
    if sel.files.is_empty() && agents.is_empty() {
        return Err("nothing to scan: name files, directories or globs, or --agent AGENT|all".to_string());
    }
    let req = sessions::Request {
        paths: sel.files.clone(),
        agents,
        fresh: sessions::Freshness {
            since: sel.since,
            newer_than: sel.newer_than,
        },
    };
    let (found, notes) = sessions::collect(&req, &sessions::process_env);
    for n in notes {
        eprintln!("loopscope: {}", loopscope::sanitize::text(&n));
    }
    Ok(found
        .into_iter()
        .map(|s| if s.found { Input::Found(s) } else { Input::Path(s.path) })
        .collect())
}

/// `-j N`: 1 to 1024 files at once.
fn parse_jobs(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=1024).contains(n))
        .ok_or_else(|| format!("expected 1 to 1024 files at once, got {s:?}"))
}

/// `--rechunk N`: 1 to 1,000,000 chars.
fn parse_chunk(s: &str) -> Result<usize, String> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=1_000_000).contains(n))
        .ok_or_else(|| format!("expected a delta size from 1 to 1000000 chars, got {s:?}"))
}

#[derive(Args)]
struct TuneArgs {
    /// The logs to try it on.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The parameter and its values: ID.PARAM=5..20, =5..20:5 or =3,8,13.
    #[arg(long, value_name = "ID.PARAM=VALUES")]
    vary: String,
    /// A file listing the logs that really loop (one path per line); the
    /// others count as clean work.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// One JSON object per value.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct JudgeArgs {
    /// The recorded stream (any supported format).
    file: PathBuf,
    /// Where to write the stream with the verdicts (never FILE itself).
    #[arg(short, long, value_name = "OUT", required_unless_present = "dry_run")]
    output: Option<PathBuf>,
    /// The endpoint's base URL, e.g. http://localhost:11434/v1 (ollama),
    /// http://localhost:8000/v1 (vLLM); /chat/completions is appended
    /// [default: base_url in the config's [judge]].
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// The model asked first ("flash") [default: model in [judge]].
    #[arg(long)]
    model: Option<String>,
    /// The model that confirms a loop (gemini-cli's double check).
    #[arg(long, value_name = "MODEL")]
    double_check_model: Option<String>,
    /// The environment variable holding the API key (the key is never printed).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// Seconds per request [default: 60, or timeout in [judge]].
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Attempts per check before it counts as no answer [default: 2, or attempts in [judge]].
    #[arg(long)]
    attempts: Option<usize>,
    /// The judge's instructions, instead of loopscope's own.
    #[arg(long, value_name = "FILE")]
    judge_prompt: Option<PathBuf>,
    /// Print the requests it would send (JSON lines) and send none.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    input: InputFlags,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Args)]
struct DetectorsArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print the configuration as a TOML file with every default.
    #[arg(long)]
    print_default_config: bool,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Clone, Copy, ValueEnum)]
enum ProfileArg {
    Seed,
    GeminiCli,
    Extended,
    QwenCode,
    Openhands,
    RooCode,
    Cline,
    RooFork,
}

/// Which detectors run, with which parameters.
#[derive(Args, Clone, Default)]
struct DetectorFlags {
    /// Detector profile [default: seed]; `scan` (and `view`) take several,
    /// comma-separated, to compare them.
    #[arg(
        long,
        visible_alias = "compare",
        value_enum,
        value_delimiter = ',',
        value_name = "PROFILE"
    )]
    profile: Vec<ProfileArg>,
    /// Only these detectors (comma-separated ids) [default: all of the profile].
    #[arg(long, value_delimiter = ',')]
    detectors: Option<Vec<String>>,
    /// Set a parameter, e.g. --set block-cycle.min_matches=8 (repeatable; overrides the config).
    #[arg(long = "set", value_name = "ID.PARAM=VALUE")]
    sets: Vec<String>,
    /// TOML config file [default: $LOOPSCOPE_CONFIG, then $XDG_CONFIG_HOME/loopscope/config.toml].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl ProfileArg {
    fn profile(self) -> Profile {
        match self {
            ProfileArg::Seed => Profile::Seed,
            ProfileArg::GeminiCli => Profile::GeminiCli,
            ProfileArg::Extended => Profile::Extended,
            ProfileArg::QwenCode => Profile::QwenCode,
            ProfileArg::Openhands => Profile::Openhands,
            ProfileArg::RooCode => Profile::RooCode,
            ProfileArg::Cline => Profile::Cline,
            ProfileArg::RooFork => Profile::RooFork,
        }
    }
}

impl DetectorFlags {
    fn choices(&self) -> Choices {
        Choices {
            profile: self.profile.first().map(|p| p.profile()),
            detectors: self.detectors.clone(),
            config: self.config.clone(),
            sets: self.sets.clone(),
        }
    }

    /// The one setup of a command that runs one profile.
    fn setup(&self) -> Result<Setup, String> {
        if self.profile.len() > 1 {
            return Err(
                "this command runs one profile; compare several with `scan --profile a,b` or `view --profile a,b`"
                    .to_string(),
            );
        }
        Setup::resolve(&self.choices())
    }

    /// One setup per profile named (one when none or one is).
    fn setups(&self) -> Result<Vec<Setup>, String> {
        if self.profile.len() <= 1 {
            return Ok(vec![self.setup()?]);
        }
        let mut profiles: Vec<Profile> = Vec::new();
        for p in self.profile.iter().map(|p| p.profile()) {
            if !profiles.contains(&p) {
                profiles.push(p);
            }
        }
        Setup::resolve_each(&self.choices(), &profiles)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let input = match &cli.command {
        Some(Command::View(a)) => Some(a.input),
        Some(Command::Tail(a)) => Some(a.input),
        Some(Command::Convert(a)) => Some(a.input),
        Some(Command::Screenshot(a)) => Some(a.input),
        Some(Command::ReplayInto(a)) => Some(a.input),
        Some(Command::Scan(a)) => Some(a.input),
        Some(Command::Report(a)) => Some(a.input),
        Some(Command::Watch(a)) => Some(a.input),
        Some(Command::Tune(a)) => Some(a.input),
        Some(Command::Judge(a)) => Some(a.input),
        Some(Command::Detectors(_) | Command::Completions { .. } | Command::Man) => None,
        None => Some(cli.input),
    };
    if let Some(i) = input {
        formats::set_max_record(i.max_record);
    }
    let result = match cli.command {
        Some(Command::View(args)) => {
            one_stream(args.files).and_then(|f| run_view(f, &args.replay, &args.judge, args.input, &args.detectors))
        }
        Some(Command::Tail(args)) => run_tail(&args),
        Some(Command::Convert(args)) => run_convert(&args),
        Some(Command::Screenshot(args)) => run_screenshot(&args),
        Some(Command::ReplayInto(args)) => run_replay_into(&args),
        Some(Command::Scan(args)) => scan_inputs(&args.sessions).and_then(|inputs| {
            run_scan(
                inputs,
                args.json,
                args.rechunk,
                &args.judge,
                (args.jobs, args.summary),
                args.input,
                &args.detectors,
            )
        }),
        Some(Command::Watch(args)) => run_watch(&args),
        Some(Command::Report(args)) => scan_inputs(&args.sessions).and_then(|inputs| run_report(&args, &inputs)),
        Some(Command::Detectors(args)) => run_detectors(&args),
        Some(Command::Tune(args)) => run_tune(args),
        Some(Command::Judge(args)) => run_judge(&args),
        Some(Command::Completions { shell }) => print_generated(|out| {
            clap_complete::generate(shell, &mut Cli::command(), "loopscope", out);
            Ok(())
        }),
        Some(Command::Man) => print_generated(|out| clap_mangen::Man::new(Cli::command()).render(out)),
        None => one_stream(cli.files).and_then(|f| run_view(f, &cli.replay, &cli.judge, cli.input, &cli.detectors)),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(msg) => {
            eprintln!("loopscope: {}", loopscope::sanitize::text(&msg));
            ExitCode::from(EXIT_ERROR as u8)
        }
    }
}

fn run_judge(args: &JudgeArgs) -> Result<i32, String> {
    let setup = args.detectors.setup()?;
    let params = setup.judge_params().ok_or_else(|| {
        format!(
            "profile {} has no llm-judge (use --profile gemini-cli or seed)",
            setup.profile
        )
    })?;
    if let Some(out) = &args.output {
        loopscope::files::refuse_if_input(out, &[&args.file])?;
    }
    let endpoint = endpoint(
        EndpointFlags {
            url: args.endpoint.as_deref(),
            model: args.model.as_deref(),
            double_check: args.double_check_model.as_deref(),
            key_env: args.api_key_env.as_deref(),
            timeout: args.timeout,
            attempts: args.attempts,
            prompt: args.judge_prompt.as_deref(),
        },
        &setup.judge,
    )?;
    let (events, format) = read_events(&args.file, args.input.format)?;
    let cmd = loopscope::judge::command::JudgeCommand {
        input: args.file.clone(),
        output: args.output.clone(),
        endpoint,
        params,
        dry_run: args.dry_run,
    };
    let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr().lock()));
    let written = loopscope::judge::command::run(&cmd, events, &mut out, &mut err)?;
    if let (Some(path), false) = (&args.output, args.dry_run) {
        loopscope::files::write_atomically(path, |w| {
            let meta = serde_json::json!({"type": "meta", "format": "loopscope", "version": 1, "source": format.name(), "judged": true});
            writeln!(w, "{meta}")?;
            for e in &written {
                writeln!(w, "{}", e.to_json())?;
            }
            Ok(())
        })?;
    }
    Ok(0)
}

fn run_tune(args: TuneArgs) -> Result<i32, String> {
    if args.detectors.profile.len() > 1 {
        return Err("tune tries values on one profile; pick one with --profile".to_string());
    }
    let opts = loopscope::tune::TuneOptions {
        files: args.files,
        vary: args.vary,
        choices: args.detectors.choices(),
        expect: args.expect,
        format: args.input.format,
        json: args.json,
    };
    let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr().lock()));
    loopscope::tune::run(&opts, &mut out, &mut err)?;
    Ok(0)
}

/// The viewer shows one stream: several files get a hint, not a clap error.
fn one_stream(mut files: Vec<PathBuf>) -> Result<Option<PathBuf>, String> {
    if files.len() > 1 {
        let names: Vec<String> = files.iter().map(|f| loopscope::sanitize::path(f)).collect();
        return Err(format!(
            "the viewer opens one stream at a time, not {} ({}); scan several with `loopscope scan {}`",
            files.len(),
            names.join(", "),
            names.join(" ")
        ));
    }
    Ok(files.pop())
}

/// Writes generated text (completions, the man page) to standard output.
fn print_generated(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<i32, String> {
    let mut out = io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope::io_reason(&e)),
        _ => Ok(0),
    }
}

/// Opens the viewer on a file, standard input, or the bundled demo.
fn run_view(
    file: Option<PathBuf>,
    replay: &ReplayFlags,
    judge: &LiveJudgeFlags,
    input: InputFlags,
    flags: &DetectorFlags,
) -> Result<i32, String> {
    // Several profiles: the first is shown, the others compared with it.
    let mut setups = flags.setups()?;
    let live = live_judge(judge, &mut setups)?;
    let setup = setups.remove(0);
    let mut opts = replay.options();
    opts.compare = setups;
    opts.input = file.clone().filter(|f| !loopscope::config::is_stdin(f));
    let (name, opened) = match file {
        Some(path) => (path.display().to_string(), formats::open_input(&path, input.format)?),
        None => (
            "demo (bundled)".to_string(),
            formats::detect::open_reader(Box::new(loopscope::DEMO_STREAM.as_bytes()), input.format, None)?,
        ),
    };
    tui::run(&name, setup, opts, |sink| {
        let sink = match &live {
            Some(j) => j.wrap(sink),
            None => sink,
        };
        feed::read(opened.reader, opened.decoder, false, sink)
    })?;
    Ok(0)
}

/// Writes the input as native JSONL: a `meta` line naming the source
/// format, then every event. Converting the output again gives the same bytes.
fn run_convert(args: &ConvertArgs) -> Result<i32, String> {
    refuse_writing_into(args.output.as_deref(), &[&args.file])?;
    let opened = formats::open_input(&args.file, args.input.format)?;
    let name = args.file.display().to_string();
    let mut err = Terminal::new(io::stderr());
    match &args.output {
        Some(p) => loopscope::files::write_atomically(p, |w| loopscope::convert::convert(opened, &name, w, &mut err)),
        None => {
            let mut out = io::BufWriter::new(Terminal::new(io::stdout().lock()));
            match loopscope::convert::convert(opened, &name, &mut out, &mut err).and_then(|()| out.flush()) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope::io_reason(&e)),
                _ => Ok(()),
            }
        }
    }?;
    Ok(0)
}

/// loopscope never writes to a file it reads: neither `-o` nor standard
/// output may be one of the inputs (compared as files, not as paths).
fn refuse_writing_into(output: Option<&std::path::Path>, inputs: &[&std::path::Path]) -> Result<(), String> {
    match output {
        Some(out) => loopscope::files::refuse_if_input(out, inputs),
        None => loopscope::files::refuse_stdout_into_input(inputs),
    }
}

fn run_tail(args: &TailArgs) -> Result<i32, String> {
    let mut setups = vec![args.detectors.setup()?];
    let live = live_judge(&args.judge, &mut setups)?;
    let setup = setups.remove(0);
    // A live judge asks on the reading thread and inserts its verdicts.
    let wrap = move |sink: feed::Sink| -> feed::Sink {
        match &live {
            Some(j) => j.wrap(sink),
            None => sink,
        }
    };
    let target = match (&args.file, &args.latest) {
        (_, Some(spec)) => {
            // Said now rather than on the reading thread: a typo is one line and exit 2.
            sessions::Latest::new(spec, &sessions::process_env)?;
            Target::Latest(spec.clone())
        }
        (Some(file), None) if loopscope::config::is_stdin(file) => Target::Stdin,
        (Some(file), None) => {
            if file.is_dir() && formats::cline::task_file(file).is_none() {
                return Err(format!(
                    "{}: is a directory (and not a Cline/Roo task folder); follow its newest session with --latest DIR",
                    file.display()
                ));
            }
            Target::File(file.clone())
        }
        (None, None) => return Err("tail needs a FILE or --latest AGENT|DIR".to_string()),
    };
    if args.no_tui {
        let opts = HeadlessOptions {
            format: args.input.format,
            json: args.json,
            from_start: args.from_start,
            bell: args.bell,
            on_detect: args.on_detect.clone(),
            wrap_sink: Box::new(wrap),
        };
        if let Target::File(path) = &target {
            refuse_writing_into(None, &[path])?;
        }
        // Stderr unlocked: hook threads report failures on it too.
        let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr()));
        return match run_headless(&target, &setup, &opts, &mut out, &mut err) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
            other => other.map_err(|e| loopscope::io_reason(&e)),
        };
    }
    let opts = ViewOptions {
        live: Some(LiveOptions {
            from_start: args.from_start,
            bell: args.bell,
            on_detect: args.on_detect.clone(),
        }),
        ..args.look.options()
    };
    let format = args.input.format;
    tui::run(&target.name(), setup, opts, |sink| target.start(format, wrap(sink)))?;
    Ok(0)
}

/// Reads every event of an input; problems are warnings on stderr.
fn read_events(
    path: &std::path::Path,
    format: FormatChoice,
) -> Result<(Vec<loopscope::Event>, formats::Format), String> {
    let opened = formats::open_input(path, format)?;
    let format = opened.format;
    let mut events = Vec::new();
    stream_events(opened, path, &mut |e| events.push(e))?;
    Ok((events, format))
}

/// Hands every event of an input to `sink` as it is decoded; problems are
/// warnings on stderr, and a forced format that read nothing is an error.
fn stream_events(
    opened: formats::Opened,
    path: &std::path::Path,
    sink: &mut dyn FnMut(loopscope::Event),
) -> Result<(), String> {
    let name = loopscope::sanitize::path(path);
    let forced = opened.forced_check();
    let mut decoder = opened.decoder;
    let mut stream = 0;
    formats::decode_all(opened.reader, &mut *decoder, |item| match item {
        formats::Item::Event(e, _) => {
            stream += usize::from(formats::carries_stream(&e));
            sink(e);
        }
        formats::Item::Problem(p) => eprintln!(
            "loopscope: warning: {name}: {}",
            loopscope::sanitize::line(&p.to_string())
        ),
    })
    .map_err(|e| format!("{name}: {}", loopscope::io_reason(&e)))?;
    forced.check(stream).map_err(|msg| format!("{name}: {msg}"))
}

fn write_output(output: Option<&std::path::Path>, text: &str) -> Result<(), String> {
    match output {
        Some(p) => loopscope::files::write_atomically(p, |w| w.write_all(text.as_bytes())),
        None => match Terminal::new(io::stdout().lock()).write_all(text.as_bytes()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope::io_reason(&e)),
            _ => Ok(()),
        },
    }
}

fn run_screenshot(args: &ScreenshotArgs) -> Result<i32, String> {
    let mut setups = args.detectors.setups()?;
    let setup = setups.remove(0);
    refuse_writing_into(args.output.as_deref(), &[&args.file])?;
    let opened = formats::open_input(&args.file, args.input.format)?;
    let format = opened.format;
    let shot = Shot {
        name: args.file.display().to_string(),
        at: args.at,
        size: args.size,
        select: args.select.clone(),
        keys: args.keys.clone(),
        live: args.live,
        theme: Theme::by_name(&args.theme).unwrap_or_else(Theme::dark),
        caption: args.caption,
        compare: setups,
    };
    let canvas = shot.theme.canvas;
    // Streamed into the app, which keeps what it must on disk: no
    // second copy of the whole log in memory.
    let read = |sink: &mut dyn FnMut(loopscope::Event)| stream_events(opened, &args.file, sink);
    let buffer = loopscope::render::screenshot_streamed(read, format, setup, &shot)?;
    let title = format!("loopscope {}", args.file.display());
    let as_text = args
        .output
        .as_ref()
        .is_some_and(|o| o.extension().is_some_and(|e| e == "txt"));
    let picture = if as_text {
        loopscope::render::to_text(&buffer)
    } else {
        loopscope::render::svg::to_svg(&buffer, &title, canvas)
    };
    write_output(args.output.as_deref(), &picture)?;
    Ok(0)
}

fn run_replay_into(args: &ReplayIntoArgs) -> Result<i32, String> {
    // Written as it goes (that is the point: a file to tail), so no
    // temporary file; never one of the files the source is read from.
    loopscope::files::refuse_if_input(&args.target, &[&args.source])?;
    let (events, _) = read_events(&args.source, args.input.format)?;
    let mut out = std::fs::File::create(&args.target)
        .map_err(|e| format!("{}: {}", args.target.display(), loopscope::io_reason(&e)))?;
    let rules = PacingRules {
        cps: args.cps,
        ..PacingRules::default()
    };
    eprintln!(
        "loopscope: writing {} events into {}",
        events.len(),
        loopscope::sanitize::path(&args.target)
    );
    loopscope::replay::write_paced(&events, rules, args.speed, &mut out, std::thread::sleep)
        .map_err(|e| loopscope::io_reason(&e))?;
    Ok(0)
}

/// `--judge`: `off` takes llm-judge out of the setups; `live` gives the
/// endpoint and schedule to ask while reading.
fn live_judge(judge: &LiveJudgeFlags, setups: &mut [Setup]) -> Result<Option<loopscope::judge::LiveJudge>, String> {
    Ok(match judge.judge.as_str() {
        "off" => {
            for s in setups.iter_mut() {
                s.detectors.retain(|c| c.info.id != "llm-judge");
            }
            None
        }
        "live" => {
            let mut params = setups[0]
                .judge_params()
                .ok_or_else(|| format!("--judge live: profile {} has no llm-judge", setups[0].profile))?;
            let ep = endpoint(
                EndpointFlags {
                    url: judge.judge_endpoint.as_deref(),
                    model: judge.judge_model.as_deref(),
                    double_check: judge.judge_double_check_model.as_deref(),
                    key_env: judge.judge_api_key_env.as_deref(),
                    prompt: judge.judge_prompt.as_deref(),
                    ..EndpointFlags::default()
                },
                &setups[0].judge,
            )?;
            if ep.double_check_model.is_none() && params.double_check {
                // The first model decides; the replay of its verdicts must agree.
                params.double_check = false;
                for s in setups.iter_mut() {
                    let _ = s.apply_set("llm-judge.double_check=false");
                }
            }
            Some(loopscope::judge::LiveJudge { endpoint: ep, params })
        }
        _ => None,
    })
}

fn run_scan(
    inputs: Vec<Input>,
    json: bool,
    rechunk: Option<usize>,
    judge: &LiveJudgeFlags,
    (jobs, summary): (Option<usize>, bool),
    input: InputFlags,
    flags: &DetectorFlags,
) -> Result<i32, String> {
    let mut setups = flags.setups()?;
    let live = live_judge(judge, &mut setups)?;
    let opts = ScanOptions {
        setups,
        format: input.format,
        json,
        transform: scan::Transform { rechunk, judge: live },
        jobs,
        summary,
        progress: io::IsTerminal::is_terminal(&io::stderr()) && inputs.len() > 1,
    };
    let paths: Vec<&std::path::Path> = inputs.iter().filter_map(Input::path).collect();
    refuse_writing_into(None, &paths)?;
    let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr().lock()));
    match scan::run(&inputs, &opts, &mut out, &mut err) {
        Ok(code) => Ok(code),
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(loopscope::io_reason(&e)),
    }
}

fn run_watch(args: &WatchArgs) -> Result<i32, String> {
    let agents = match &args.agent {
        Some(list) => Agent::parse_list(list)?,
        None => Vec::new(),
    };
    let opts = loopscope::watch::WatchOptions {
        roots: loopscope::watch::roots(&args.dirs, &agents, &sessions::process_env),
        setup: args.detectors.setup()?,
        format: args.input.format,
        idle_after: args.idle_after,
        from_start: args.from_start,
    };
    if let Some(out) = &args.snapshot {
        let roots: Vec<&std::path::Path> = opts.roots.iter().map(|r| r.path.as_path()).collect();
        refuse_writing_into(Some(out), &roots)?;
        let view = args.look.options();
        let buffer = tui::watch::snapshot(opts, args.size, &view.theme)?;
        let picture = if out.extension().is_some_and(|e| e == "txt") {
            loopscope::render::to_text(&buffer)
        } else {
            loopscope::render::svg::to_svg(&buffer, "loopscope watch", view.theme.canvas)
        };
        write_output(Some(out), &picture)?;
        return Ok(0);
    }
    if args.no_tui {
        let print = loopscope::watch::PrintOptions {
            json: args.json,
            bell: args.bell,
            on_detect: args.on_detect.clone(),
        };
        let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr()));
        return match loopscope::watch::run_headless(opts, &print, &mut out, &mut err) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
            other => other.map_err(|e| loopscope::io_reason(&e)),
        };
    }
    let live = LiveOptions {
        from_start: false,
        bell: args.bell,
        on_detect: args.on_detect.clone(),
    };
    tui::watch::run(opts, live, args.look.options())?;
    Ok(0)
}

fn run_report(args: &ReportArgs, inputs: &[Input]) -> Result<i32, String> {
    let paths: Vec<&std::path::Path> = inputs.iter().filter_map(Input::path).collect();
    refuse_writing_into(Some(&args.output), &paths)?;
    let opts = loopscope::report::ReportOptions {
        setups: args.detectors.setups()?,
        format: args.input.format,
        size: args.size,
        max_sections: args.max_detections,
    };
    let mut err = Terminal::new(io::stderr().lock());
    let report = loopscope::report::build(inputs, &opts, &mut err).map_err(|e| loopscope::io_reason(&e))?;
    let html = loopscope::render::html::to_html(&report);
    loopscope::files::write_atomically(&args.output, |w| w.write_all(html.as_bytes()))?;
    let looped = report.files.iter().filter(|f| !f.row.detectors.is_empty()).count();
    let detections: usize = report.files.iter().map(|f| f.row.detectors.len()).sum();
    eprintln!(
        "loopscope: wrote {}: {} sessions, {looped} looped, {detections} detections{}",
        loopscope::sanitize::path(&args.output),
        report.files.len(),
        match report.skipped {
            0 => String::new(),
            n => format!(", {n} files skipped (not agent sessions)"),
        }
    );
    Ok(if report.failed.is_empty() { 0 } else { EXIT_ERROR })
}

fn run_detectors(args: &DetectorsArgs) -> Result<i32, String> {
    let setup = args.detectors.setup()?;
    let text = if args.print_default_config {
        setup.to_toml()
    } else if args.json {
        serde_json::to_string_pretty(&setup.describe_json()).expect("plain JSON") + "\n"
    } else {
        describe_text(&setup)
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope::io_reason(&e)),
        _ => Ok(0),
    }
}

/// Text wrapped at `width` columns, each line indented.
fn wrap_words(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out += &format!("{indent}{line}\n");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out += &format!("{indent}{line}\n");
    }
    out
}

fn describe_text(setup: &Setup) -> String {
    let mut s = format!("profile {} ({} detectors)\n", setup.profile, setup.detectors.len());
    s += &wrap_words(setup.profile.about(), 78, "  ");
    if let Some(p) = &setup.config_file {
        s += &format!("config {}\n", p.display());
    }
    for c in &setup.detectors {
        let profiles = c.info.profiles.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ");
        s += &format!(
            "\n{}  ({} · {} · profiles: {profiles})\n  {}\n",
            c.info.id,
            c.info.family.name(),
            c.info.channel.as_str(),
            c.info.rule
        );
        let rows: Vec<(&str, String, &str)> = c
            .info
            .params
            .iter()
            .zip(c.params.iter())
            .map(|(spec, (_, value))| {
                let default = spec.default_for(setup.profile);
                let mut notes = Vec::new();
                if *value != default {
                    notes.push(format!("default {default}"));
                }
                for other in Profile::ALL {
                    if other != setup.profile && c.info.in_profile(other) && spec.default_for(other) != default {
                        notes.push(format!("{other}: {}", spec.default_for(other)));
                    }
                }
                let notes = if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join("; "))
                };
                (spec.name, format!("{value}{notes}"), spec.help)
            })
            .collect();
        let w_name = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        let w_value = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
        for (name, value, help) in rows {
            s += &format!("    {name:<w_name$}  {value:<w_value$}  {help}\n");
        }
    }
    if setup.detectors.iter().any(|c| c.info.family == Family::Checkpoint) {
        s += "\nCheckpoint detectors see the reasoning of the current request; a request starts them over.\n";
    }
    s +=
        "\nInput formats: raw API streams (openai-chat, openai-responses, anthropic, gemini) and native logs keep the \
          deltas as the model streamed them. Session files (claude-code, codex, gemini-cli, cline) keep whole blocks \
          (a thought, a message): chunk-chant and the checkpoint detectors then see one block at a time, so a \
          checkpoint runs after the block that crosses it.\n";
    s
}
