//! `loopscope hook`: the flags, and the runner of the hook itself and of
//! `hook install`, `hook uninstall` and `hook status`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use loopscope::hook::agents::HookAgent;
use loopscope::hook::install::{self, Places, Scope};
use loopscope::hook::{self, Options};
use loopscope_core::Setup;

use super::flags::DetectorFlags;

/// The hook runs `extended` unless told otherwise, not the other commands'
/// `seed`: the help the flags share would say the wrong default.
const HOOK_PROFILE_HELP: &str =
    "Detector profile [default: extended]; its tools detectors decide which calls are refused";

/// `loopscope hook AGENT`, or one of its commands.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
#[command(mut_arg("profile", |a| a.help(HOOK_PROFILE_HELP)))]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: Option<HookAction>,
    /// The agent whose hook this is: claude-code, codex, gemini-cli,
    /// qwen-code, copilot, cursor, opencode, kilo, pi or openclaw.
    #[arg(value_name = "AGENT")]
    pub agent: Option<String>,
    /// The hook's event when the agent does not say it on stdin (Copilot CLI).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Subcommand)]
pub enum HookAction {
    /// Put the hook into an agent's settings (or write its plugin); other
    /// hooks are kept, a backup is written, the change is printed.
    Install(InstallArgs),
    /// Take the hook out of an agent's settings (or remove its plugin).
    Uninstall(InstallArgs),
    /// Which agents have the hook installed, and where.
    Status,
}

#[derive(Args)]
#[command(mut_arg("profile", |a| a.help(HOOK_PROFILE_HELP)))]
pub struct InstallArgs {
    /// The agent: claude-code, codex, gemini-cli, qwen-code, copilot, cursor,
    /// opencode, kilo, pi or openclaw.
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// This project's settings (the working folder) instead of the user's.
    #[arg(long)]
    pub project: bool,
    /// Print the change without making it.
    #[arg(long)]
    pub dry_run: bool,
    /// The hook's detectors, as the hook will run them (default: extended).
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

/// The hook's setup: the profile asked for, `extended` by default.
fn setup(flags: &DetectorFlags) -> Result<Setup, String> {
    let mut choices = flags.choices()?;
    choices.profile.get_or_insert(loopscope_core::detect::Profile::Extended);
    Setup::resolve(&choices).map_err(String::from)
}

pub fn run_hook(args: &HookArgs) -> Result<i32, String> {
    match &args.action {
        Some(HookAction::Install(a)) => install_or_uninstall(a, true),
        Some(HookAction::Uninstall(a)) => install_or_uninstall(a, false),
        Some(HookAction::Status) => status(),
        None => {
            // The hook itself never fails the agent's call: whatever goes
            // wrong is said on stderr and the call is allowed (exit 0).
            let Some(name) = &args.agent else {
                return Ok(allow("which agent? (loopscope hook AGENT; see `loopscope help hook`)"));
            };
            let agent = match HookAgent::parse(name) {
                Ok(a) => a,
                Err(e) => return Ok(allow(&e)),
            };
            let setup = match setup(&args.detectors) {
                Ok(s) => s,
                Err(e) => return Ok(allow(&e)),
            };
            let opts = Options {
                setup,
                event: args.event.clone(),
            };
            Ok(hook::run(
                agent,
                &opts,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
            ))
        }
    }
}

/// A hook that cannot judge the call allows it: says why, reads what the
/// agent sends (an agent can take a closed pipe for a failed hook), exit 0.
pub fn allow(why: &str) -> i32 {
    eprintln!(
        "loopscope hook: {}; the call is allowed",
        loopscope_core::sanitize::line(why)
    );
    let _ = std::io::copy(
        &mut std::io::Read::take(std::io::stdin().lock(), 16 << 20),
        &mut std::io::sink(),
    );
    0
}

/// The command an installed hook runs: this program, `hook AGENT`, and
/// the detector flags given to `install`.
fn hook_command(agent: HookAgent, flags: &DetectorFlags) -> Result<Vec<String>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("where is loopscope? {}", loopscope_core::io_reason(&e)))?;
    let mut words = vec![exe.display().to_string(), "hook".to_string(), agent.name().to_string()];
    if let Some(p) = flags.profile.first() {
        words.push("--profile".into());
        words.push(p.name().to_string());
    }
    if let Some(ids) = &flags.detectors {
        words.push("--detectors".into());
        words.push(ids.join(","));
    }
    for s in &flags.sets {
        words.push("--set".into());
        words.push(s.clone());
    }
    if let Some(c) = &flags.config {
        words.push("--config".into());
        words.push(absolute(c).display().to_string());
    }
    Ok(words)
}

fn absolute(p: &std::path::Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

fn install_or_uninstall(a: &InstallArgs, add: bool) -> Result<i32, String> {
    let agent = HookAgent::parse(&a.agent)?;
    if add {
        // The flags must make a setup now, not at the agent's first call.
        setup(&a.detectors)?;
    }
    let scope = if a.project { Scope::Project } else { Scope::User };
    let places = Places::here()?;
    let command = if add {
        Some(hook_command(agent, &a.detectors)?)
    } else {
        None
    };
    let change = install::plan(agent, scope, &places, command.as_deref())?;
    if change.is_empty() {
        println!(
            "{}: nothing to change (the hook is {} there)",
            agent.name(),
            if add { "already" } else { "not" }
        );
        return Ok(0);
    }
    for line in &change.lines {
        println!(
            "{}{}",
            if a.dry_run { "would change " } else { "" },
            loopscope_core::sanitize::line(line)
        );
    }
    if !a.dry_run {
        change.apply()?;
        if add && agent == HookAgent::Codex {
            println!("codex: hooks run only once trusted (codex asks); `codex exec` skips them unless given --dangerously-bypass-hook-trust");
        }
    }
    Ok(0)
}

fn status() -> Result<i32, String> {
    let places = Places::here()?;
    for agent in HookAgent::ALL {
        let found = install::installed(agent, &places);
        if found.is_empty() {
            println!("{:<12} not installed", agent.name());
        }
        for (scope, path) in found {
            let scope = if scope == Scope::User { "user" } else { "project" };
            println!(
                "{:<12} installed ({scope}): {}",
                agent.name(),
                loopscope_core::sanitize::path(&path)
            );
        }
    }
    Ok(0)
}
