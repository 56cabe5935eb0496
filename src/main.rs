//! The `loopscope` command line: parses arguments and calls the runners in
//! `cli/` (flags in `cli/flags.rs`).

/// The library's `eprintln!` and `eprint!`, which never panic (a closed
/// standard error is no reason to crash), in place of std's in every
/// module below.
macro_rules! eprintln {
    ($($arg:tt)*) => { loopscope::eprintln!($($arg)*) };
}

macro_rules! eprint {
    ($($arg:tt)*) => { loopscope::eprint!($($arg)*) };
}

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::batch::*;
use cli::flags::{Cli, Command};
use cli::live::*;
use loopscope::scan::EXIT_ERROR;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
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
        Some(
            Command::Detectors(_) | Command::Record(_) | Command::Hook(_) | Command::Completions { .. } | Command::Man,
        ) => None,
        None => Some(cli.input),
    };
    if let Some(i) = input {
        loopscope::reading::set_max_record(i.max_record);
    }
    let spool = match &cli.command {
        Some(Command::View(a)) => Some(a.spool),
        Some(Command::Tail(a)) => Some(a.spool),
        Some(Command::Screenshot(a)) => Some(a.spool),
        Some(Command::Watch(a)) => Some(a.spool),
        None => Some(cli.spool),
        Some(_) => None,
    };
    if let Some(s) = spool {
        loopscope::tui::app::set_max_spool(s.max_spool as u64);
    }
    let result = match cli.command {
        Some(Command::View(args)) => cli::live::view_target(args.files, args.latest.as_deref())
            .and_then(|f| run_view(f, &args.replay, &args.judge, args.input, &args.detectors)),
        Some(Command::Tail(args)) => run_tail(&args),
        Some(Command::Convert(args)) => run_convert(&args),
        Some(Command::Screenshot(args)) => run_screenshot(&args),
        Some(Command::ReplayInto(args)) => run_replay_into(&args),
        Some(Command::Scan(args)) => scan_inputs(&args.sessions, None).and_then(|inputs| run_scan(inputs, &args)),
        Some(Command::Watch(args)) => run_watch(&args),
        Some(Command::Report(args)) => {
            scan_inputs(&args.sessions, Some(&args.output)).and_then(|inputs| run_report(&args, inputs))
        }
        Some(Command::Detectors(args)) => run_detectors(&args),
        Some(Command::Tune(args)) => run_tune(args),
        Some(Command::Judge(args)) => run_judge(&args),
        Some(Command::Record(args)) => cli::record::run_record(&args),
        Some(Command::Hook(args)) => cli::hook::run_hook(&args),
        Some(Command::Completions { shell }) => print_generated(|out| {
            // clap_complete panics when its writer fails (a closed pipe,
            // a full disk): it writes into memory, and the write is ours.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "loopscope", &mut script);
            out.write_all(&script)
        }),
        Some(Command::Man) => print_generated(|out| cli::man::render(Cli::command(), out)),
        None => mistyped_command(&cli.files)
            .and_then(|()| one_stream(cli.files))
            .and_then(|f| run_view(f, &cli.replay, &cli.judge, cli.input, &cli.detectors)),
    };
    match result {
        Ok(code) => ExitCode::from(code as u8),
        Err(msg) => {
            // Standard error into an input: the exit status says it alone.
            if !loopscope::files::stderr_is_an_input() {
                eprint!(
                    "{}",
                    loopscope_core::sanitize::text(&loopscope_core::sanitize::cut_lines(&format!("loopscope: {msg}")))
                );
            }
            ExitCode::from(EXIT_ERROR as u8)
        }
    }
}

/// Prints clap's message (help and version as they are), each line cut
/// (clap quotes a bad value whole) and made safe for a terminal; exit 2.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let line = one_line(&e.render().to_string());
    eprint!(
        "{}",
        loopscope_core::sanitize::text(&loopscope_core::sanitize::cut_lines(&format!("loopscope: {line}\n")))
    );
    // An agent reads a hook's exit status 2 as a refusal of its call (Claude
    // Code): a hook whose flags are wrong allows the call instead.
    if running_as_a_hook() {
        cli::hook::allow("its flags are wrong");
        return ExitCode::SUCCESS;
    }
    ExitCode::from(2)
}

/// clap's message (`error: …`, a tip, the usage, "For more information,
/// try '--help'") as one line, in the form of every other error: what is
/// wrong, the tip (a similar flag), and the `--help` of the command run.
fn one_line(rendered: &str) -> String {
    let mut text = String::new();
    let command = Cli::command();
    let first = std::env::args_os().nth(1);
    let sub = first
        .as_ref()
        .and_then(|a| a.to_str())
        .filter(|a| command.find_subcommand(a).is_some());
    let help = match sub {
        Some(sub) => format!("`loopscope {} --help`", loopscope_core::sanitize::line(sub)),
        None => "`loopscope --help`".to_string(),
    };
    let mut in_usage = false;
    for line in rendered.lines().map(str::trim) {
        // The usage (one line or more, to the blank line) is the help's.
        in_usage = (in_usage || line.starts_with("Usage: ")) && !line.is_empty();
        if in_usage || line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        if !text.is_empty() {
            // A list after "…were not provided:" goes on; a tip is its own clause.
            text += if text.ends_with(':') { " " } else { "; " };
        }
        text += line;
    }
    format!("{text} (see {help})")
}

/// `loopscope scna x`: without a subcommand the words are files to view,
/// so a mistyped subcommand would be "no such file". A first word that is
/// no file, has no path or extension in it, and is near a subcommand's name
/// is said to be that.
fn mistyped_command(files: &[std::path::PathBuf]) -> Result<(), String> {
    let Some(word) = files.first().and_then(|f| f.to_str()) else {
        return Ok(());
    };
    if std::path::Path::new(word).exists() || word.contains(['/', '.']) {
        return Ok(());
    }
    let command = Cli::command();
    let nearest = command
        .get_subcommands()
        .map(|c| c.get_name())
        .map(|name| (strsim::jaro(word, name), name))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match nearest {
        Some((_, name)) => Err(format!(
            "no command or file {} (did you mean `loopscope {name}`?)",
            loopscope_core::sanitize::line(word)
        )),
        None => Ok(()),
    }
}

/// `loopscope hook AGENT …` (not `hook install`, `uninstall` or `status`).
fn running_as_a_hook() -> bool {
    // args_os: a word that is not UTF-8 must not panic here.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .take(2)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.first().map(String::as_str) == Some("hook")
        && !matches!(
            args.get(1).map(String::as_str),
            Some("install" | "uninstall" | "status" | "help" | "--help" | "-h") | None
        )
}
