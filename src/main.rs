//! The `loopscope` command line: parses arguments and calls the library.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use loopscope::detect::Family;
use loopscope::scan::{self, Input, ScanOptions, EXIT_ERROR};
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
    /// A stream to inspect; with none, the bundled demo stream.
    file: Option<PathBuf>,
    #[command(flatten)]
    detectors: DetectorFlags,
}

#[derive(Subcommand)]
enum Command {
    /// Run the detectors headless and print what fired (exit 1 if anything did).
    Scan(ScanArgs),
    /// List detectors, their rules, parameters and defaults.
    Detectors(DetectorsArgs),
}

#[derive(Args)]
struct ScanArgs {
    /// Streams to scan ("-" reads standard input).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// One JSON object per detection per line.
    #[arg(long)]
    json: bool,
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
}

/// Which detectors run, with which parameters.
#[derive(Args, Clone, Default)]
struct DetectorFlags {
    /// Detector profile [default: seed].
    #[arg(long, value_enum, global = true)]
    profile: Option<ProfileArg>,
    /// Only these detectors (comma-separated ids) [default: all of the profile].
    #[arg(long, value_delimiter = ',', global = true)]
    detectors: Option<Vec<String>>,
    /// Set a parameter, e.g. --set block-cycle.min_matches=8 (repeatable; overrides the config).
    #[arg(long = "set", value_name = "ID.PARAM=VALUE", global = true)]
    sets: Vec<String>,
    /// TOML config file [default: $LOOPSCOPE_CONFIG, then $XDG_CONFIG_HOME/loopscope/config.toml].
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
}

impl DetectorFlags {
    fn setup(&self) -> Result<Setup, String> {
        Setup::resolve(&Choices {
            profile: self.profile.map(|p| match p {
                ProfileArg::Seed => Profile::Seed,
                ProfileArg::GeminiCli => Profile::GeminiCli,
            }),
            detectors: self.detectors.clone(),
            config: self.config.clone(),
            sets: self.sets.clone(),
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Scan(args)) => run_scan(
            args.files.into_iter().map(Input::Path).collect(),
            args.json,
            &args.detectors,
        ),
        Some(Command::Detectors(args)) => run_detectors(&args),
        // Until the TUI lands, a bare `loopscope [FILE]` prints the scan.
        None => {
            let input = match cli.file {
                Some(path) => Input::Path(path),
                None => Input::Bytes {
                    name: "demo (bundled)".to_string(),
                    bytes: loopscope::DEMO_STREAM.as_bytes(),
                },
            };
            run_scan(vec![input], false, &cli.detectors)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(msg) => {
            eprintln!("loopscope: {msg}");
            ExitCode::from(EXIT_ERROR as u8)
        }
    }
}

fn run_scan(inputs: Vec<Input>, json: bool, flags: &DetectorFlags) -> Result<i32, String> {
    let opts = ScanOptions {
        setup: flags.setup()?,
        json,
    };
    let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
    match scan::run(&inputs, &opts, &mut out, &mut err) {
        Ok(code) => Ok(code),
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(loopscope::io_reason(&e)),
    }
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

fn describe_text(setup: &Setup) -> String {
    let mut s = format!("profile {} ({} detectors)\n", setup.profile, setup.detectors.len());
    if let Some(p) = &setup.config_file {
        s += &format!("config {}\n", p.display());
    }
    for c in &setup.detectors {
        let profiles = if c.info.in_gemini_cli {
            "seed, gemini-cli"
        } else {
            "seed"
        };
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
    s
}
