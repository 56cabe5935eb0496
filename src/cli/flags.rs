//! The command line's flags: one struct per subcommand and the flag groups
//! they share, with their parsers. Generated help, completions and the man
//! page come from these definitions; the runners are in `batch` and `live`.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use loopscope::render::At;
use loopscope::replay::PacingRules;
use loopscope::sessions;
use loopscope::tui::{theme::Theme, ViewOptions};
use loopscope_core::formats::{self, FormatChoice};
use loopscope_core::{Choices, Profile, Setup};

mod network;
mod values;
pub use network::*;
pub use values::*;

#[derive(Parser)]
#[command(
    name = "loopscope",
    version,
    about = "Replay, tail and inspect recorded LLM agent streams; see which loop detector fired and why.",
    after_help = super::examples::MAIN
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A stream to view ("-" reads standard input); with none, the bundled demo.
    /// (Several are refused with a hint: the viewer shows one stream.)
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub replay: ReplayFlags,
    #[command(flatten)]
    pub judge: LiveJudgeFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub spool: SpoolFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// The input ("-" reads standard input; a Cline/Roo task folder works too).
    pub file: PathBuf,
    /// Where to write (default: standard output). Never the input itself.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputFlags,
}

#[derive(Args)]
pub struct ScreenshotArgs {
    /// The stream to draw.
    pub file: PathBuf,
    /// Draw just after this event, or at the end.
    #[arg(long, default_value = "end", value_name = "EVENT|end", value_parser = At::parse)]
    pub at: At,
    /// Terminal size in cells.
    #[arg(long, default_value = "120x40", value_name = "COLSxROWS", value_parser = parse_size)]
    pub size: (u16, u16),
    /// Select this detector and show its evidence.
    #[arg(long, value_name = "DETECTOR")]
    pub select: Option<String>,
    /// Keys to press first, one character each ("?" opens the help, "c" the content, "e" the next
    /// detection), and named keys in brackets: <Tab> <Enter> <Esc> <Up> <Down> <PgUp> <PgDn>.
    #[arg(long, default_value = "")]
    pub keys: String,
    /// Draw it as `tail` shows a live stream.
    #[arg(long)]
    pub live: bool,
    /// Where to write the SVG (default: standard output); a name ending in
    /// .txt gets the screen as plain text.
    #[arg(short, long, value_name = "OUT.svg")]
    pub output: Option<PathBuf>,
    /// Colour theme (the picture's background follows it).
    #[arg(long, value_parser = ["dark", "light", "mono"], default_value = "dark")]
    pub theme: String,
    /// Add the selected detection's reason and parameters under the picture.
    #[arg(long)]
    pub caption: bool,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub spool: SpoolFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct ReplayIntoArgs {
    /// The recorded stream (any supported format).
    pub source: PathBuf,
    /// The file to write native JSONL into (created or emptied first).
    pub target: PathBuf,
    /// How many times faster than recorded.
    #[arg(long, default_value_t = 1.0, value_parser = parse_positive)]
    pub speed: f64,
    /// Characters per second for events without `ts`.
    #[arg(long, default_value_t = 300.0, value_parser = parse_positive)]
    pub cps: f64,
    #[command(flatten)]
    pub input: InputFlags,
}

/// How much of a log the viewer keeps on disk.
#[derive(Args, Clone, Copy)]
pub struct SpoolFlags {
    /// The most of the decoded log the viewer writes to a temporary file
    /// (past 32 MB in memory); past it, or when the disk would keep less
    /// than 1 GiB (or a tenth of it) free, later events are not kept and
    /// the viewer says so (64M, 1G, …).
    #[arg(long, default_value = "1G", value_name = "SIZE", value_parser = formats::parse_size)]
    pub max_spool: usize,
}

/// How the input is read.
#[derive(Args, Clone, Copy)]
pub struct InputFlags {
    // Input format: its help lists the format table's names (format_help).
    #[arg(long, default_value = "auto", value_parser = FormatChoice::parse, help = format_help())]
    pub format: FormatChoice,
    /// The longest record (line, event, array element, whole document) read;
    /// a longer one is reported as a bad line and skipped (64M, 1G, …).
    #[arg(long, default_value = "64M", value_name = "SIZE", value_parser = formats::parse_size)]
    pub max_record: usize,
}

/// `--format`'s help: every name the format table (loopscope_core's
/// formats/registry.rs) gives, so a new importer is listed without an edit here.
fn format_help() -> String {
    format!(
        "Input format: auto (detected from the first bytes), {}.",
        formats::registry::names_listed()
    )
}

#[derive(Args)]
pub struct ViewArgs {
    /// The stream to view ("-" reads standard input).
    #[arg(value_name = "FILE", required_unless_present = "latest")]
    pub files: Vec<PathBuf>,
    /// View the most recently written session of an agent (claude-code,
    /// codex, gemini-cli, …; all: of any agent) or in a directory, as
    /// `tail --latest` follows it (`tail` follows it live).
    #[arg(long, value_name = "AGENT|DIR", conflicts_with = "files", value_parser = super::complete::agent_list(), hide_possible_values = true)]
    pub latest: Option<String>,
    #[command(flatten)]
    pub replay: ReplayFlags,
    #[command(flatten)]
    pub judge: LiveJudgeFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub spool: SpoolFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct TailArgs {
    /// The file to follow ("-" reads standard input); it may not exist yet.
    #[arg(required_unless_present = "latest")]
    pub file: Option<PathBuf>,
    /// Follow the most recently written session of an agent (claude-code,
    /// codex, gemini-cli, …; all: of any agent, comma-separated: of these)
    /// or in a directory, and switch to each new session started.
    #[arg(long, value_name = "AGENT|DIR", conflicts_with = "file", value_parser = super::complete::agent_list(), hide_possible_values = true)]
    pub latest: Option<String>,
    #[command(flatten)]
    pub judge: LiveJudgeFlags,
    /// Print each detection as it happens instead of opening the viewer.
    #[arg(long)]
    pub no_tui: bool,
    /// With --no-tui: one JSON object per detection (the fields of `scan --json`).
    #[arg(long, requires = "no_tui")]
    pub json: bool,
    /// Replay what the file already holds, then follow. Without it the
    /// existing content is fed to the detectors silently and following
    /// starts at the end.
    #[arg(long)]
    pub from_start: bool,
    /// Run CMD through the shell once per detection, with LOOPSCOPE_FILE,
    /// LOOPSCOPE_DETECTOR, LOOPSCOPE_EVENT, LOOPSCOPE_REASON and LOOPSCOPE_JSON set.
    #[arg(long, value_name = "CMD")]
    pub on_detect: Option<String>,
    /// Ring the terminal bell on each detection.
    #[arg(long)]
    pub bell: bool,
    #[command(flatten)]
    pub otlp: OtlpFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
    #[command(flatten)]
    pub look: LookFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub spool: SpoolFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

/// How a replay starts and looks.
#[derive(Args, Clone)]
pub struct ReplayFlags {
    /// Start paused.
    #[arg(long)]
    pub paused: bool,
    /// Start with events up to this index already shown.
    #[arg(long, value_name = "EVENT")]
    pub start_at: Option<usize>,
    /// Re-cut the text into deltas of N chars once read (`:rechunk off` in
    /// the viewer goes back to the recorded deltas).
    #[arg(long, value_name = "N", value_parser = parse_chunk)]
    pub rechunk: Option<usize>,
    #[command(flatten)]
    pub look: LookFlags,
}

/// Pacing and looks, for `view` and `tail`.
#[derive(Args, Clone)]
pub struct LookFlags {
    /// Playback speed, 0.25 to 64.
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,
    /// Pause whenever a detector fires.
    #[arg(long)]
    pub pause_on_detect: bool,
    /// Characters per second for events without `ts`.
    #[arg(long, default_value_t = 300.0, value_parser = parse_positive)]
    pub cps: f64,
    /// Colour theme.
    #[arg(long, value_parser = ["dark", "light", "mono"], default_value = "dark")]
    pub theme: String,
    /// No colours (same as NO_COLOR=1): highlights use reverse, underline and bold.
    #[arg(long)]
    pub no_color: bool,
}

impl ReplayFlags {
    pub fn options(&self) -> ViewOptions {
        ViewOptions {
            paused: self.paused,
            start_at: self.start_at,
            rechunk: self.rechunk,
            ..self.look.options()
        }
    }
}

impl LookFlags {
    pub fn options(&self) -> ViewOptions {
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
pub enum Command {
    /// Replay a recorded stream in the terminal and see what fires, and why.
    #[command(after_help = super::examples::VIEW)]
    View(ViewArgs),
    /// Follow a stream that is still being written; be told the moment a loop starts.
    #[command(after_help = super::examples::TAIL)]
    Tail(TailArgs),
    /// Turn any supported input into native loopscope JSONL.
    #[command(after_help = super::examples::CONVERT)]
    Convert(ConvertArgs),
    /// Draw the viewer at a position of a stream into an SVG file (no terminal needed).
    #[command(after_help = super::examples::SCREENSHOT)]
    Screenshot(ScreenshotArgs),
    /// Write a recorded stream into a file at its own pace, to try `tail` in another terminal.
    ReplayInto(ReplayIntoArgs),
    /// Run the detectors headless and print what fired (exit 1 if anything did).
    #[command(after_help = super::examples::SCAN)]
    Scan(ScanArgs),
    /// Write one self-contained HTML report for reviewers: the sessions
    /// (sortable), and each detection with its reason, numbers, parameters,
    /// highlighted evidence and the viewer's picture at that moment.
    #[command(after_help = super::examples::REPORT)]
    Report(ReportArgs),
    /// A live list of every session of some agents (or folders): which are
    /// streaming, idle, or ⚠ FIRED; Enter opens one in the viewer.
    #[command(after_help = super::examples::WATCH)]
    Watch(WatchArgs),
    /// List detectors, their rules, parameters and defaults.
    #[command(after_help = super::examples::DETECTORS)]
    Detectors(DetectorsArgs),
    /// Try parameters at many values over your logs: which files fire, and
    /// with --expect, recall, false positives and latency per value, the
    /// value suggested, and --write-config to keep it.
    #[command(after_help = super::examples::TUNE)]
    Tune(TuneArgs),
    /// Ask an LLM judge (any OpenAI-compatible endpoint) at every check of a
    /// recorded stream; write a copy with the verdicts as loop_check events.
    Judge(JudgeArgs),
    /// Run an agent through a local recording proxy: every conversation it
    /// has with its model API becomes a live session file (`tail`/`watch`
    /// follow it); with --guard, a response that loops is ended there.
    Record(RecordArgs),
    /// Be an agent's hook: refuse a tool call that would make a loop
    /// detector fire, with a reason the model reads (`hook install AGENT`
    /// puts it into the agent's settings).
    Hook(super::hook::HookArgs),
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
pub struct SessionFlags {
    /// The streams ("-" reads standard input); a directory is read
    /// recursively, a glob ('**/*.jsonl', quoted) expanded, files that are
    /// not agent sessions skipped.
    pub files: Vec<PathBuf>,
    /// Also every session of these agents on this machine (claude-code,
    /// codex, gemini-cli, qwen-code, cline, roo-code, pi, opencode, kilo,
    /// copilot, openhands, goose, crush, openclaw; comma-separated, or all);
    /// LOOPSCOPE_<AGENT>_DIR overrides where they are looked for.
    #[arg(long, value_name = "AGENT", value_parser = super::complete::agent_list(), hide_possible_values = true)]
    pub agent: Option<String>,
    /// Only files found (in directories, globs, agents' folders) changed within this long (7d, 12h, 30m).
    #[arg(long, value_name = "AGE", value_parser = sessions::parse_age)]
    pub since: Option<std::time::Duration>,
    /// Only files found changed after this date (2026-11-01 or an RFC 3339 time).
    #[arg(long, value_name = "DATE", value_parser = sessions::parse_date)]
    pub newer_than: Option<std::time::SystemTime>,
}

#[derive(Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub sessions: SessionFlags,
    /// Files scanned at once [default: one per core].
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// After the files: a row per file (events, bad lines, detections, the
    /// first and what streamed after it) and totals per detector and format
    /// (with --json: {"type":"summary"} and {"type":"totals"} records).
    #[arg(long)]
    pub summary: bool,
    /// List every bad line of each file (its line number and why it was
    /// skipped) on stderr, not only the first 10 and a count.
    #[arg(long)]
    pub bad_lines: bool,
    /// One JSON object per detection per line (comparing profiles: one per
    /// profile per file).
    #[arg(long)]
    pub json: bool,
    /// Re-cut the text into deltas of N chars first (the other events stay),
    /// to see whether a verdict depends on how the stream was cut.
    #[arg(long, value_name = "N", value_parser = parse_chunk)]
    pub rechunk: Option<usize>,
    #[command(flatten)]
    pub judge: LiveJudgeFlags,
    #[command(flatten)]
    pub rows: RowsFlags,
    #[command(flatten)]
    pub otlp: OtlpFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

/// Datasets of trajectories, one per row (JSONL lines, Parquet rows).
#[derive(Args, Clone, Default)]
pub struct RowsFlags {
    /// Read each JSONL line as a trajectory of its own (a dataset), named
    /// FILE#LINE; found by itself when a line is a whole trajectory (a
    /// `messages`, `trajectory` or ATIF document) and always for Parquet.
    #[arg(long)]
    pub rows: bool,
    /// The field (JSONL) or column (Parquet) holding each row's trajectory:
    /// its messages, or their JSON text [default: the whole row].
    #[arg(long, value_name = "NAME")]
    pub column: Option<String>,
    /// The field naming each row (instance_id, trajectory_id): rows are
    /// named FILE#ID instead of FILE#LINE.
    #[arg(long, value_name = "NAME")]
    pub id_field: Option<String>,
}

impl RowsFlags {
    /// How scan and report read datasets.
    pub fn mode(&self) -> loopscope::scan::RowsMode {
        loopscope::scan::RowsMode {
            force: self.rows,
            options: loopscope_core::formats::rows::RowOptions {
                column: self.column.clone(),
                id_field: self.id_field.clone(),
                max_record: loopscope::reading::max_record(),
            },
        }
    }
}

#[derive(Args)]
pub struct WatchArgs {
    /// Folders to watch, recursively (they may not exist yet); with no
    /// folder and no --agent, every agent's usual places.
    pub dirs: Vec<PathBuf>,
    /// Watch these agents' session folders (claude-code, codex, gemini-cli,
    /// qwen-code, cline, roo-code, pi, opencode, kilo, copilot, openhands,
    /// goose, crush, openclaw; comma-separated, or all).
    #[arg(long, value_name = "AGENT", value_parser = super::complete::agent_list(), hide_possible_values = true)]
    pub agent: Option<String>,
    /// Print one line per detection across all sessions instead of the list.
    #[arg(long)]
    pub no_tui: bool,
    /// With --no-tui: one JSON record per detection (as `scan --json`).
    #[arg(long, requires = "no_tui")]
    pub json: bool,
    /// A session that has not grown for this long is idle (30s, 5m, 1h).
    #[arg(long, default_value = "2m", value_name = "AGE", value_parser = sessions::parse_age)]
    pub idle_after: std::time::Duration,
    /// Announce the detections in what the sessions held when watching
    /// began (without it they only mark the sessions ⚠ FIRED).
    #[arg(long)]
    pub from_start: bool,
    /// Run CMD through the shell once per new detection, with the same
    /// environment as `tail --on-detect` (LOOPSCOPE_FILE, …).
    #[arg(long, value_name = "CMD")]
    pub on_detect: Option<String>,
    /// Ring the terminal bell on each new detection.
    #[arg(long)]
    pub bell: bool,
    /// Draw the list once every session has been read into this file (SVG,
    /// or text for a name ending in .txt) and exit, no terminal needed.
    #[arg(long, value_name = "OUT.svg", conflicts_with = "no_tui")]
    pub snapshot: Option<PathBuf>,
    /// With --snapshot: its size in cells.
    #[arg(long, default_value = "120x24", value_name = "COLSxROWS", value_parser = parse_size)]
    pub size: (u16, u16),
    #[command(flatten)]
    pub otlp: OtlpFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
    #[command(flatten)]
    pub look: LookFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub spool: SpoolFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub sessions: SessionFlags,
    /// The HTML file to write (never one of the inputs).
    #[arg(short, long, value_name = "OUT.html")]
    pub output: PathBuf,
    /// Detections shown in full with a picture; the rest are in the table only.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_detections: usize,
    /// The viewer's size in the pictures, in cells.
    #[arg(long, default_value = "120x40", value_name = "COLSxROWS", value_parser = parse_size)]
    pub size: (u16, u16),
    #[command(flatten)]
    pub rows: RowsFlags,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct TuneArgs {
    /// The logs to try it on, found as `scan` finds them: files,
    /// directories, globs, --agent.
    #[command(flatten)]
    pub sessions: SessionFlags,
    /// A parameter and its values: ID.PARAM=5..20, =5..20:5 or =3,8,13
    /// (repeatable: a table each, the others at their current values).
    #[arg(long, value_name = "ID.PARAM=VALUES", required = true)]
    pub vary: Vec<String>,
    /// A file listing the sessions that really loop, one per line (`PATH`,
    /// or `PATH EVENT` with the event the loop begins at), paths as given
    /// or relative to the file; the others count as clean work. Each value
    /// gets recall, false positives and latency, and one is suggested.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Choose this value instead of the suggestion (repeatable; a value
    /// not among --vary's is tried too).
    #[arg(long, value_name = "ID.PARAM=VALUE")]
    pub pick: Vec<String>,
    /// Write the chosen values into this TOML config file, merged with
    /// what it holds (other keys and comments kept); never one of the
    /// sessions or the --expect file.
    #[arg(long, value_name = "FILE")]
    pub write_config: Option<PathBuf>,
    /// With --write-config: say what would change, write nothing.
    #[arg(long, requires = "write_config")]
    pub dry_run: bool,
    /// One JSON object per value, then the choice per parameter (and the
    /// config change).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
pub struct DetectorsArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the configuration as a TOML file with every default.
    #[arg(long)]
    pub print_default_config: bool,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

/// Which detectors run, with which parameters.
#[derive(Args, Clone, Default)]
pub struct DetectorFlags {
    /// Detector profile [default: seed]; `scan`, `report` and `view` take several,
    /// comma-separated, to compare them.
    #[arg(
        long,
        visible_alias = "compare",
        value_parser = profile_parser(),
        value_delimiter = ',',
        value_name = "PROFILE"
    )]
    pub profile: Vec<Profile>,
    /// Only these detectors (comma-separated ids) [default: all of the profile].
    #[arg(long, value_name = "ID", value_delimiter = ',', value_parser = super::complete::detectors(), hide_possible_values = true)]
    pub detectors: Option<Vec<String>>,
    /// Set a parameter, e.g. --set block-cycle.min_matches=8 (repeatable; overrides the config).
    #[arg(long = "set", value_name = "ID.PARAM=VALUE")]
    pub sets: Vec<String>,
    /// TOML config file [default: $LOOPSCOPE_CONFIG, then $XDG_CONFIG_HOME/loopscope/config.toml].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A Hugging Face tokenizer.json: profile vllm counts the tokens of text
    /// events without token_ids with it (the model's own tokenizer makes it exact).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
}

impl DetectorFlags {
    /// The choices, with the tokenizer file loaded (its error is one line).
    pub fn choices(&self) -> Result<Choices, String> {
        Ok(Choices {
            profile: self.profile.first().copied(),
            detectors: self.detectors.clone(),
            config: self.config.clone(),
            sets: self.sets.clone(),
            tokenizer: self.tokenizer.as_deref().map(loopscope::tokenize::load).transpose()?,
        })
    }

    /// The one setup of a command that runs one profile.
    pub fn setup(&self) -> Result<Setup, String> {
        if self.profile.len() > 1 {
            return Err(
                "this command runs one profile; compare several with `scan --profile a,b` or `view --profile a,b`"
                    .to_string(),
            );
        }
        Setup::resolve(&self.choices()?).map_err(String::from)
    }

    /// One setup per profile named (one when none or one is).
    pub fn setups(&self) -> Result<Vec<Setup>, String> {
        if self.profile.len() <= 1 {
            return Ok(vec![self.setup()?]);
        }
        let mut profiles: Vec<Profile> = Vec::new();
        for &p in &self.profile {
            if !profiles.contains(&p) {
                profiles.push(p);
            }
        }
        Setup::resolve_each(&self.choices()?, &profiles).map_err(String::from)
    }
}
