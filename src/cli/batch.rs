//! The runners of the commands that read inputs to their end: scan,
//! report, tune, judge, convert, screenshot, replay-into, detectors.

use loopscope::output::count;
use std::io::{self, Write};

use loopscope::render::Shot;
use loopscope::replay::PacingRules;
use loopscope::scan::{self, Input, ScanOptions, EXIT_ERROR};
use loopscope::sessions::{self, Agent};
use loopscope::tui::theme::Theme;
use loopscope_core::detect::Family;
use loopscope_core::formats::{self, FormatChoice};
use loopscope_core::sanitize::Terminal;
use loopscope_core::{Profile, Setup};

use super::flags::*;
use super::live::live_judge;

/// An endpoint from flags over the config; the API key is read from the named variable.
pub fn endpoint(
    flags: EndpointFlags<'_>,
    config: &loopscope_core::config::JudgeEndpoint,
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
        Some(p) => loopscope_core::config::read_capped(p, loopscope_core::config::MAX_SMALL_FILE)?,
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

/// The judge endpoint the flags name, over the config file's `[judge]`.
#[derive(Default)]
pub struct EndpointFlags<'a> {
    pub url: Option<&'a str>,
    pub model: Option<&'a str>,
    pub double_check: Option<&'a str>,
    pub key_env: Option<&'a str>,
    pub timeout: Option<u64>,
    pub attempts: Option<usize>,
    pub prompt: Option<&'a std::path::Path>,
}

/// Why `--agent` found nothing, in one line: for one agent or a few,
/// where it looked; for all of them "no agent sessions on this machine"
/// and the home folder they were looked for under (their folders are a
/// score: `--agent NAME` says one agent's).
fn no_sessions(agents: &[Agent]) -> String {
    let looked: Vec<std::path::PathBuf> = agents
        .iter()
        .flat_map(|a| a.locations(&sessions::process_env))
        .collect();
    let names: Vec<&str> = agents.iter().map(|a| a.name()).collect();
    if looked.is_empty() {
        return format!("no session of {} found: no home folder to look in", names.join(", "));
    }
    if let [one] = agents {
        let env = one.override_var();
        let shown: Vec<String> = looked.iter().map(|d| loopscope_core::sanitize::path(d)).collect();
        return format!(
            "no session of {} found (looked in {}; set {env} to look elsewhere)",
            one.name(),
            shown.join(", ")
        );
    }
    if agents.len() < Agent::ALL.len() {
        let shown: Vec<String> = looked.iter().map(|d| loopscope_core::sanitize::path(d)).collect();
        return format!(
            "no session of {} found (looked in {})",
            names.join(", "),
            shown.join(", ")
        );
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let under = home
        .filter(|h| looked.iter().all(|d| d.starts_with(h)))
        .map_or(String::new(), |h| {
            format!(" under {}", loopscope_core::sanitize::path(&h))
        });
    format!(
        "no agent sessions on this machine: none of the {} agents has a session folder{under} (`loopscope scan --agent NAME` says where it looks for one)",
        agents.len()
    )
}

/// The inputs of `scan` and `report`: each named file, every file under
/// each named directory or glob, and each named agent's sessions; notes
/// (an empty folder, an agent with no folder here) go to stderr.
pub fn scan_inputs(sel: &SessionFlags, output: Option<&std::path::Path>) -> Result<Vec<Input>, String> {
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
    let sessions::Collected {
        sessions: found,
        notes,
        aged_out,
    } = sessions::collect(&req, &sessions::process_env);
    // Before anything is said: standard error may be one of them.
    let paths: Vec<&std::path::Path> = found.iter().map(|s| s.path.as_path()).collect();
    refuse_writing_into(output, &paths)?;
    // Nothing to read is not a clean scan (exit 2: a job that checked
    // nothing must not pass), said in one line. Nothing changed within
    // --since / --newer-than is: there is nothing new (a job run hourly).
    if found.is_empty() && aged_out == 0 {
        if !req.agents.is_empty() && sel.files.is_empty() {
            // The notes (a line per agent without a folder) would say it again.
            return Err(no_sessions(&req.agents));
        }
        // The notes (an empty folder, a glob that matched nothing) say why.
        return Err(match notes.is_empty() {
            true => "nothing to scan".to_string(),
            false => notes.join("; "),
        });
    }
    for n in notes {
        eprint!(
            "{}",
            loopscope_core::sanitize::text(&loopscope_core::sanitize::cut_lines(&format!("loopscope: {n}")))
        );
    }
    Ok(found
        .into_iter()
        .map(|s| {
            if s.found || s.parent.is_some() || s.title.is_some() {
                Input::Found(s)
            } else {
                Input::Path(s.path)
            }
        })
        .collect())
}

pub fn run_judge(args: &JudgeArgs) -> Result<i32, String> {
    let setup = args.detectors.setup()?;
    let params = setup.judge_params().ok_or_else(|| {
        format!(
            "profile {} has no llm-judge (use --profile gemini-cli or seed)",
            setup.profile
        )
    })?;
    // `--dry-run … >> FILE` would write the requests into what it reads.
    refuse_writing_into(args.output.as_deref(), &[&args.file])?;
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

pub fn run_tune(args: TuneArgs) -> Result<i32, String> {
    if args.detectors.profile.len() > 1 {
        return Err("tune tries values on one profile; pick one with --profile".to_string());
    }
    // Refuses standard output or error, or the config to write, into an
    // input, before any note (a dry run writes no config).
    let output = args.write_config.as_deref().filter(|_| !args.dry_run);
    let inputs = scan_inputs(&args.sessions, output)?;
    let opts = loopscope::tune::TuneOptions {
        inputs,
        vary: args.vary,
        pick: args.pick,
        choices: args.detectors.choices()?,
        expect: args.expect,
        format: args.input.format,
        json: args.json,
        write_config: args.write_config,
        dry_run: args.dry_run,
    };
    let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr().lock()));
    loopscope::tune::run(&opts, &mut out, &mut err)?;
    Ok(0)
}

/// Writes generated text (completions, the man page) to standard output.
pub fn print_generated(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<i32, String> {
    let mut out = io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope_core::io_reason(&e)),
        _ => Ok(0),
    }
}

/// Writes the input as native JSONL: a `meta` line naming the source
/// format, then every event. Converting the output again gives the same bytes.
pub fn run_convert(args: &ConvertArgs) -> Result<i32, String> {
    refuse_writing_into(args.output.as_deref(), &[&args.file])?;
    let opened = loopscope::reading::open_input(&args.file, args.input.format)
        .map_err(|e| loopscope::output::clear_error(&e))?;
    let name = args.file.display().to_string();
    let mut err = Terminal::new(io::stderr());
    match &args.output {
        Some(p) => loopscope::files::write_atomically(p, |w| loopscope::convert::convert(opened, &name, w, &mut err)),
        None => {
            let mut out = io::BufWriter::new(Terminal::new(io::stdout().lock()));
            match loopscope::convert::convert(opened, &name, &mut out, &mut err).and_then(|()| out.flush()) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope_core::io_reason(&e)),
                _ => Ok(()),
            }
        }
    }?;
    Ok(0)
}

/// loopscope never writes to a file it reads: neither `-o` nor standard
/// output or error may be one of the inputs (compared as files, not as paths).
pub use loopscope::files::refuse_writing_into;

/// Reads every event of an input; problems are warnings on stderr.
pub fn read_events(
    path: &std::path::Path,
    format: FormatChoice,
) -> Result<(Vec<loopscope_core::Event>, formats::Format), String> {
    let opened = loopscope::reading::open_input(path, format).map_err(|e| loopscope::output::clear_error(&e))?;
    let format = opened.format;
    let mut events = Vec::new();
    stream_events(opened, path, &mut |e| events.push(e))?;
    Ok((events, format))
}

/// Hands every event of an input to `sink` as it is decoded; problems are
/// warnings on stderr, and a forced format that read nothing is an error.
pub fn stream_events(
    opened: formats::Opened,
    path: &std::path::Path,
    sink: &mut dyn FnMut(loopscope_core::Event),
) -> Result<(), String> {
    let name = loopscope_core::sanitize::path(path);
    let forced = opened.forced_check();
    let mut decoder = opened.decoder;
    let mut stream = 0;
    let mut bad = loopscope::scan::BadLines::new(&name);
    let mut err = io::stderr();
    formats::decode_all(opened.reader, &mut *decoder, |item| match item {
        formats::Item::Event(e, _) => {
            stream += usize::from(formats::carries_stream(&e));
            sink(e);
        }
        formats::Item::Problem(p) => {
            let _ = bad.warn(&p, &mut err);
        }
        formats::Item::Unknown(u) => bad.unknown(&u),
    })
    .map_err(|e| format!("{name}: {}", loopscope_core::io_reason(&e)))?;
    let _ = bad.finish(&mut err);
    forced.check(stream).map_err(|msg| format!("{name}: {msg}"))
}

pub fn write_output(output: Option<&std::path::Path>, text: &str) -> Result<(), String> {
    match output {
        Some(p) => loopscope::files::write_atomically(p, |w| w.write_all(text.as_bytes())),
        None => match Terminal::new(io::stdout().lock()).write_all(text.as_bytes()) {
            Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope_core::io_reason(&e)),
            _ => Ok(()),
        },
    }
}

pub fn run_screenshot(args: &ScreenshotArgs) -> Result<i32, String> {
    let mut setups = args.detectors.setups()?;
    let setup = setups.remove(0);
    refuse_writing_into(args.output.as_deref(), &[&args.file])?;
    let opened = loopscope::reading::open_input(&args.file, args.input.format)
        .map_err(|e| loopscope::output::clear_error(&e))?;
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
    let read = |sink: &mut dyn FnMut(loopscope_core::Event)| stream_events(opened, &args.file, sink);
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

pub fn run_replay_into(args: &ReplayIntoArgs) -> Result<i32, String> {
    // Written as it goes (that is the point: a file to tail), so no
    // temporary file; never one of the files the source is read from.
    refuse_writing_into(Some(&args.target), &[&args.source])?;
    let (events, _) = read_events(&args.source, args.input.format)?;
    let mut out = std::fs::File::create(&args.target)
        .map_err(|e| format!("{}: {}", args.target.display(), loopscope_core::io_reason(&e)))?;
    let rules = PacingRules {
        cps: args.cps,
        ..PacingRules::default()
    };
    eprintln!(
        "loopscope: writing {} events into {}",
        events.len(),
        loopscope_core::sanitize::path(&args.target)
    );
    loopscope::replay::write_paced(&events, rules, args.speed, &mut out, std::thread::sleep)
        .map_err(|e| loopscope_core::io_reason(&e))?;
    Ok(0)
}

pub fn run_scan(inputs: Vec<Input>, args: &ScanArgs) -> Result<i32, String> {
    let mut setups = args.detectors.setups()?;
    let live = live_judge(&args.judge, &mut setups)?;
    let telemetry = super::export::telemetry(&args.otlp, None, loopscope::telemetry::metrics::IDLE_AFTER)?;
    if let Some(x) = &telemetry.otlp {
        x.wait_for_room();
    }
    let opts = ScanOptions {
        setups,
        format: args.input.format,
        json: args.json,
        transform: scan::Transform {
            rechunk: args.rechunk,
            judge: live,
        },
        jobs: args.jobs,
        summary: args.summary,
        progress: io::IsTerminal::is_terminal(&io::stderr()) && inputs.len() > 1,
        bad_lines: args.bad_lines,
        rows: args.rows.mode(),
        telemetry: telemetry.clone(),
    };
    let paths: Vec<&std::path::Path> = inputs.iter().filter_map(Input::path).collect();
    refuse_writing_into(None, &paths)?;
    let result = {
        let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr().lock()));
        scan::run(&inputs, &opts, &mut out, &mut err)
    };
    // What was found is sent before the status says it was.
    telemetry.finish();
    match result {
        Ok(code) => Ok(code),
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(loopscope_core::io_reason(&e)),
    }
}

pub fn run_report(args: &ReportArgs, inputs: Vec<Input>) -> Result<i32, String> {
    // None given: nothing changed within --since (a clean, empty report).
    let given = inputs.len();
    let paths: Vec<&std::path::Path> = inputs.iter().filter_map(Input::path).collect();
    refuse_writing_into(Some(&args.output), &paths)?;
    let inputs = loopscope::report::read_streams_once(inputs, loopscope::tui::app::max_spool())?;
    // A dataset's rows are each a session of the report.
    let (inputs, warnings) = loopscope::scan::expand_rows(inputs, &args.rows.mode())?;
    for w in warnings.iter().take(10) {
        eprintln!("loopscope: warning: {}", loopscope_core::sanitize::line(w));
    }
    if warnings.len() > 10 {
        eprintln!(
            "loopscope: … and {} more rows that are not trajectories",
            loopscope::scan::thousands(warnings.len() - 10)
        );
    }
    let inputs = &inputs[..];
    let opts = loopscope::report::ReportOptions {
        setups: args.detectors.setups()?,
        format: args.input.format,
        size: args.size,
        max_sections: args.max_detections,
    };
    let mut err = Terminal::new(io::stderr().lock());
    let report = loopscope::report::build(inputs, &opts, &mut err).map_err(|e| loopscope_core::io_reason(&e))?;
    // Nothing read (a missing file) is the command failing, one line per
    // input and no report; beside a report it is a warning.
    let label = if report.files.is_empty() { "" } else { "warning: " };
    for msg in &report.failed {
        eprintln!("loopscope: {label}{}", loopscope_core::sanitize::line(msg));
    }
    if report.files.is_empty() && given > 0 {
        if !report.failed.is_empty() {
            return Ok(EXIT_ERROR);
        }
        let forced = matches!(args.input.format, loopscope_core::FormatChoice::Fixed(_));
        return Err(loopscope::scan::nothing_read(report.skipped, forced));
    }
    let html = loopscope::report::html::to_html(&report);
    loopscope::files::write_atomically(&args.output, |w| w.write_all(html.as_bytes()))?;
    eprintln!(
        "loopscope: wrote {}: {}, {}{}",
        loopscope_core::sanitize::path(&args.output),
        count(report.files.len(), "session"),
        report.headline(),
        match report.skipped {
            0 => String::new(),
            n => format!(", {} skipped (not agent sessions)", count(n, "file")),
        }
    );
    Ok(if report.failed.is_empty() { 0 } else { EXIT_ERROR })
}

pub fn run_detectors(args: &DetectorsArgs) -> Result<i32, String> {
    let setup = args.detectors.setup()?;
    let text = if args.print_default_config {
        setup.to_toml()
    } else if args.json {
        let mut record = serde_json::json!({"type": "detectors", "schema": loopscope::output::SCHEMA});
        if let (Some(r), serde_json::Value::Object(fields)) = (record.as_object_mut(), setup.describe_json()) {
            r.extend(fields);
        }
        serde_json::to_string_pretty(&record).expect("plain JSON") + "\n"
    } else {
        describe_text(&setup)
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(loopscope_core::io_reason(&e)),
        _ => Ok(0),
    }
}

/// Text wrapped at `width` columns, each line indented.
pub fn wrap_words(text: &str, width: usize, indent: &str) -> String {
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

pub fn describe_text(setup: &Setup) -> String {
    let mut s = format!("profile {} ({} detectors)\n", setup.profile, setup.detectors.len());
    s += &wrap_words(setup.profile.about(), 78, "  ");
    if let Some(p) = &setup.config_file {
        s += &format!("config {}\n", p.display());
    }
    let others: Vec<&str> = Profile::ALL
        .into_iter()
        .filter(|p| *p != setup.profile)
        .map(Profile::name)
        .collect();
    s += &wrap_words(
        &format!("other profiles (--profile NAME): {}", others.join(", ")),
        78,
        "  ",
    );
    for c in &setup.detectors {
        let profiles = c
            .info
            .profiles
            .iter()
            .map(|&p| match loopscope_core::config::off_by_default(c.info.id, p) {
                true => format!("{} when named", p.name()),
                false => p.name().to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ");
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
