//! `loopscope man`: one man page, whole. The name, synopsis, description
//! and options come from the clap definition (through clap_mangen); every
//! command's own options are listed here rather than in pages of their own
//! (it refers to no other page); KEYS is made from the viewer's keymap
//! tables, the same ones the help overlay and the README's table come from;
//! then EXIT STATUS, ENVIRONMENT, FILES (the config file and where each
//! agent keeps its sessions) and EXAMPLES.

use std::io::{self, Write};

use clap::{Arg, Command};

use loopscope::sessions::Agent;
use loopscope::tui::{help, keymap, watch_list};

/// Text for a roff line: backslashes escaped, and a line that would start
/// with a control character (`.` or `'`) protected.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e");
    t.lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A flag or value as set in bold (dashes as roff's minus signs; never
/// at the start of a line, so a leading `.` needs no protection).
fn bold(text: &str) -> String {
    format!("\\fB{}\\fR", text.replace('\\', "\\e").replace('-', "\\-"))
}

/// One option (or positional argument) as a tagged paragraph.
fn option(out: &mut String, arg: &Arg) {
    let value = arg
        .get_value_names()
        .map(|v| v.iter().map(|n| format!(" \\fI{}\\fR", roff(n))).collect::<String>())
        .unwrap_or_default();
    let tag = if arg.is_positional() {
        let name = arg
            .get_value_names()
            .and_then(|v| v.first().map(|n| n.to_string()))
            .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
        format!("\\fI{}\\fR", roff(&name))
    } else {
        let mut names = Vec::new();
        if let Some(s) = arg.get_short() {
            names.push(bold(&format!("-{s}")));
        }
        if let Some(l) = arg.get_long() {
            names.push(bold(&format!("--{l}")));
        }
        let takes = arg.get_action().takes_values();
        format!("{}{}", names.join(", "), if takes { value } else { String::new() })
    };
    let mut text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && !arg.is_hide_default_value_set() && arg.get_action().takes_values() {
        text += &format!(" [default: {}]", defaults.join(","));
    }
    out.push_str(&format!(".TP\n{tag}\n{}\n", roff(&text)));
}

/// A command's options, those every command shares last.
fn options(out: &mut String, cmd: &Command) {
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        option(out, arg);
    }
}

/// The COMMANDS section: each subcommand, its synopsis and its own options.
fn commands(out: &mut String, cli: &Command) {
    out.push_str(".SH COMMANDS\n");
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut sub = sub.clone().bin_name(format!("loopscope {}", sub.get_name()));
        let usage = sub.render_usage().to_string();
        let usage = usage.trim_start_matches("Usage: ").trim();
        out.push_str(&format!(".SS {}\n", bold(&format!("loopscope {}", sub.get_name()))));
        out.push_str(&format!(
            "{}\n.PP\n",
            roff(&sub.get_about().map(|a| a.to_string()).unwrap_or_default())
        ));
        out.push_str(&format!(".nf\n{}\n.fi\n", roff(usage)));
        options(out, &sub);
    }
}

/// KEYS: the viewer's bindings by where they work, and watch's list.
fn keys(out: &mut String) {
    out.push_str(".SH KEYS\nIn the viewer (\\fBview\\fR, \\fBtail\\fR, and a session opened from \\fBwatch\\fR), keys go to an open overlay first, then the focused pane, then the app. The same tables make the \\fB?\\fR help.\n");
    for section in help::sections() {
        out.push_str(&format!(".SS {}\n", roff(section.title)));
        for b in section.bindings {
            out.push_str(&format!(
                ".TP\n{}\n{}\n",
                bold(&keymap::keys_label(b)),
                roff(b.description)
            ));
        }
    }
    out.push_str(".SS watch (the list of sessions)\n");
    for (k, what) in watch_list::KEYS {
        out.push_str(&format!(".TP\n{}\n{}\n", bold(k), roff(what)));
    }
}

const EXIT_STATUS: &str = r#".SH EXIT STATUS
.TP
\fB0\fR
\fBscan\fR, \fBtail \-\-no\-tui\fR, \fBwatch \-\-no\-tui\fR: nothing was detected. The viewer, \fBconvert\fR, \fBscreenshot\fR, \fBreport\fR, \fBtune\fR, \fBjudge\fR, \fBreplay\-into\fR, \fBdetectors\fR: done.
.TP
\fB1\fR
\fBscan\fR, \fBtail \-\-no\-tui\fR, \fBwatch \-\-no\-tui\fR: at least one detection.
.TP
\fB2\fR
The command could not run: a bad flag or configuration, a missing or unreadable input, an agent with no session, nothing read (an empty folder, a glob that matches nothing, no file an agent session; nothing changed within \fB\-\-since\fR is no error), an output that is one of the inputs. One line on standard error says why. Unreadable lines inside an input are warnings, not errors.
"#;

/// ENVIRONMENT: the configuration's, the agents' folders', the hook's.
fn environment(out: &mut String) {
    out.push_str(".SH ENVIRONMENT\n");
    let mut item = |name: &str, what: &str| out.push_str(&format!(".TP\n{}\n{}\n", bold(name), roff(what)));
    item("LOOPSCOPE_CONFIG", "The config file, when --config is not given.");
    item(
        "XDG_CONFIG_HOME",
        "Where the config file is looked for next: $XDG_CONFIG_HOME/loopscope/config.toml.",
    );
    item(
        "HOME",
        "Where the agents' session folders and ~/.config/loopscope/config.toml are.",
    );
    item("NO_COLOR", "When set and not empty, the viewer uses no colour (as --no-color): highlights are reverse, underline and bold.");
    for agent in Agent::ALL {
        item(
            &agent.override_var(),
            &format!(
                "A list of folders (separated by : on Unix, ; on Windows) holding {}'s sessions, instead of its usual ones.",
                agent.name()
            ),
        );
    }
    item(
        "CLAUDE_CONFIG_DIR",
        "Claude Code's folder (its sessions are in projects/ under it).",
    );
    item("CODEX_HOME", "Codex's folder (its sessions are in sessions/ under it).");
    item(
        "LOOPSCOPE_FILE, LOOPSCOPE_DETECTOR, LOOPSCOPE_EVENT, LOOPSCOPE_REASON, LOOPSCOPE_JSON",
        "Set for the command of --on-detect (tail, watch): the file, the detector, the event, the reason and the detection as JSON.",
    );
    item(
        "the --api-key-env variable",
        "The LLM judge's API key is read from the variable named by --api-key-env (or api_key_env in the config), never stored or printed.",
    );
}

/// FILES: the config file, and where each agent keeps its sessions.
fn files(out: &mut String) {
    out.push_str(".SH FILES\n.TP\n\\fI~/.config/loopscope/config.toml\\fR\nThe config file (or $XDG_CONFIG_HOME/loopscope/config.toml): a profile, the detectors to run, parameters per detector id, and the LLM judge's endpoint. \\fBloopscope detectors \\-\\-print\\-default\\-config\\fR prints one with every default.\n");
    let home = |var: &str| (var == "HOME").then(|| std::ffi::OsString::from("~"));
    for agent in Agent::ALL {
        let dirs: Vec<String> = agent.locations(&home).iter().map(|d| d.display().to_string()).collect();
        let Some((first, more)) = dirs.split_first() else {
            continue;
        };
        let name = roff(agent.name());
        out.push_str(&format!(
            ".TP\n\\fI{}\\fR\n{name}'s sessions (--agent {name}, tail --latest {name}, watch; {} overrides).\n",
            roff(first),
            roff(&agent.override_var())
        ));
        for d in more {
            out.push_str(&format!(".br\nAlso \\fI{}\\fR\n", roff(d)));
        }
    }
}

const EXAMPLES: &str = r#".SH EXAMPLES
.TP
\fBloopscope\fR
Open the bundled demo in the viewer.
.TP
\fBloopscope view session.jsonl \-\-start\-at 278\fR
Replay a stream, shown up to event 278 (a detection there is selected).
.TP
\fBloopscope scan \-\-agent all \-\-summary\fR
Scan every session of every agent on this machine; a row per session and totals.
.TP
\fBloopscope scan \-\-json \-\-profile seed,gemini\-cli,extended session.jsonl\fR
Compare three profiles' first detections on one stream, as JSON lines.
.TP
\fBloopscope tail \-\-latest claude\-code \-\-no\-tui \-\-on\-detect 'kill \-INT $AGENT_PID'\fR
Follow Claude Code's newest session and stop the agent when a loop starts.
.TP
\fBloopscope watch\fR
A live list of every agent's sessions; Enter opens one.
.TP
\fBloopscope tune \-\-vary block\-cycle.min_matches=6..20:2 \-\-expect logs/loops.txt logs/ \-\-write\-config tuned.toml\fR
Try a threshold over a folder of logs and its list of loops: recall, false positives and latency per value; keep the suggested value in a config file.
.TP
\fBloopscope report logs/ \-o report.html\fR
One self\-contained HTML report for reviewers.
"#;

/// SYNOPSIS: every option with its value (`[--start-at EVENT]`; clap_mangen
/// names the flags only), then the commands' form.
fn synopsis(cli: &Command) -> String {
    let mut line = bold("loopscope");
    for arg in cli.get_arguments().filter(|a| !a.is_hide_set()) {
        let value = |a: &Arg| {
            a.get_value_names()
                .and_then(|v| v.first().map(|n| format!("\\fI{}\\fR", roff(n))))
                .unwrap_or_else(|| format!("\\fI{}\\fR", roff(&a.get_id().to_string().to_uppercase())))
        };
        let part = if arg.is_positional() {
            format!("[{}]", value(arg))
        } else {
            let mut names = Vec::new();
            if let Some(s) = arg.get_short() {
                names.push(bold(&format!("-{s}")));
            }
            if let Some(l) = arg.get_long() {
                names.push(bold(&format!("--{l}")));
            }
            let takes = arg.get_action().takes_values();
            let v = if takes {
                format!(" {}", value(arg))
            } else {
                String::new()
            };
            format!("[{}{v}]", names.join("|"))
        };
        line.push(' ');
        line.push_str(&part);
    }
    format!(
        ".SH SYNOPSIS\n{line}\n.br\n{} \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR] (see COMMANDS)\n",
        bold("loopscope")
    )
}

/// Writes the page.
pub fn render(cli: Command, out: &mut dyn Write) -> io::Result<()> {
    let man = clap_mangen::Man::new(cli.clone());
    man.render_title(out)?;
    man.render_name_section(out)?;
    out.write_all(synopsis(&cli).as_bytes())?;
    man.render_description_section(out)?;
    let mut page = String::from(
        ".SH OPTIONS\nWith no command, loopscope views FILE (or the bundled demo); these options are the viewer's.\n",
    );
    options(&mut page, &cli);
    commands(&mut page, &cli);
    keys(&mut page);
    page.push_str(EXIT_STATUS);
    environment(&mut page);
    files(&mut page);
    page.push_str(EXAMPLES);
    out.write_all(page.as_bytes())?;
    man.render_version_section(out)
}
