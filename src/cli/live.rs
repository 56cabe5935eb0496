//! The runners of the commands that show or follow streams: the viewer,
//! tail, watch.

use std::io;
use std::path::PathBuf;

use loopscope::replay::feed;
use loopscope::sessions::{self, Agent};
use loopscope::tail::{run_headless, HeadlessOptions, Target};
use loopscope::tui::{self, LiveOptions, ViewOptions};
use loopscope_core::formats;
use loopscope_core::sanitize::Terminal;
use loopscope_core::Setup;

use super::batch::{endpoint, refuse_writing_into, write_output, EndpointFlags};
use super::flags::*;

fn paths(list: &[PathBuf]) -> Vec<&std::path::Path> {
    list.iter().map(PathBuf::as_path).collect()
}

/// The viewer shows one stream: several files get a hint, not a clap error.
pub fn one_stream(mut files: Vec<PathBuf>) -> Result<Option<PathBuf>, String> {
    if files.len() > 1 {
        let names: Vec<String> = files.iter().map(|f| loopscope_core::sanitize::path(f)).collect();
        return Err(format!(
            "the viewer opens one stream at a time, not {} ({}); scan several with `loopscope scan {}`",
            files.len(),
            names.join(", "),
            names.join(" ")
        ));
    }
    let file = files.pop();
    // A folder of sessions is for the commands that take many (a Cline/Roo
    // task folder is one stream and opens as one).
    if let Some(dir) = file
        .as_deref()
        .filter(|f| f.is_dir() && loopscope_core::formats::cline::task_file(f).is_none())
    {
        let d = loopscope_core::sanitize::path(dir);
        return Err(format!(
            "{d} is a folder; the viewer opens one stream: `loopscope watch {d}` lists its sessions live (Enter opens one), `loopscope scan {d}` scans them all"
        ));
    }
    Ok(file)
}

/// `view`'s stream: the file named, or with `--latest` the newest
/// session of an agent or in a folder (as `tail --latest` picks it).
pub fn view_target(files: Vec<PathBuf>, latest: Option<&str>) -> Result<Option<PathBuf>, String> {
    let Some(spec) = latest else {
        return one_stream(files);
    };
    let mut finder = sessions::Latest::new(spec, &sessions::process_env)?;
    match finder.next(None, true) {
        Some(path) => Ok(Some(path)),
        None => {
            let roots = finder.roots();
            let looked: Vec<String> = roots.iter().map(|d| loopscope_core::sanitize::path(d)).collect();
            // Every agent's folders would fill the line: their number.
            let looked = match looked.len() {
                0 => "no folder: no home directory".to_string(),
                1..=3 => looked.join(", "),
                n => format!("{n} folders"),
            };
            Err(format!(
                "--latest {}: no session yet (looked in {looked}); `loopscope tail --latest {}` waits for one",
                loopscope_core::sanitize::line(spec),
                loopscope_core::sanitize::line(spec)
            ))
        }
    }
}

/// Opens the viewer on a file, standard input, or the bundled demo.
pub fn run_view(
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
    opts.inputs = file
        .iter()
        .filter(|f| !loopscope_core::config::is_stdin(f))
        .cloned()
        .collect();
    refuse_writing_into(None, &paths(&opts.inputs))?;
    let (name, opened) = match file {
        Some(path) => (
            path.display().to_string(),
            loopscope::reading::open_input(&path, input.format).map_err(|e| loopscope::output::clear_error(&e))?,
        ),
        None => (
            "demo (bundled)".to_string(),
            formats::detect::open_reader(
                Box::new(loopscope::DEMO_STREAM.as_bytes()),
                loopscope::reading::options(input.format),
                None,
            )?,
        ),
    };
    // A named --format that reads nothing is said in the viewer, as scan says it.
    opts.forced_format = Some(opened.forced_check());
    tui::run(&name, setup, opts, |sink| {
        let sink = match &live {
            Some(j) => j.wrap(sink),
            None => sink,
        };
        feed::read(opened.reader, opened.decoder, false, sink)
    })
}

pub fn run_tail(args: &TailArgs) -> Result<i32, String> {
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
        (Some(file), None) if loopscope_core::config::is_stdin(file) => Target::Stdin,
        (Some(file), None) => {
            if file.is_dir() && !sessions::is_unit(file) {
                return Err(format!(
                    "{}: is a directory (not a session folder: a Cline/Roo task, a Copilot session, an OpenHands conversation, opencode's storage); follow its newest session with --latest DIR",
                    file.display()
                ));
            }
            Target::File(file.clone())
        }
        (None, None) => return Err("tail needs a FILE or --latest AGENT|DIR".to_string()),
    };
    // What this command reads or follows: nothing it writes may go there.
    let inputs: Vec<PathBuf> = match &target {
        Target::File(path) => vec![path.clone()],
        Target::Latest(spec) => sessions::Latest::new(spec, &sessions::process_env)?.roots(),
        Target::Stdin => Vec::new(),
    };
    refuse_writing_into(None, &paths(&inputs))?;
    let telemetry = super::export::telemetry(
        &args.otlp,
        Some(&args.metrics),
        loopscope::telemetry::metrics::IDLE_AFTER,
    )?;
    let link = (!telemetry.is_empty()).then(|| {
        let (id, agent) = match &target {
            Target::File(p) => (p.display().to_string(), String::new()),
            Target::Stdin => ("-".to_string(), String::new()),
            // An agent's sessions are that agent's; a folder's are their formats'.
            Target::Latest(spec) => (
                spec.clone(),
                Agent::parse_list(spec)
                    .ok()
                    .filter(|a| a.len() == 1)
                    .map_or(String::new(), |a| a[0].name().to_string()),
            ),
        };
        loopscope::telemetry::SharedLink::new(telemetry.session(
            loopscope::telemetry::SessionInfo {
                name: target.name(),
                id,
                agent,
                format: String::new(),
                profile: setup.profile.name().to_string(),
            },
            false,
        ))
    });
    if args.no_tui {
        let opts = HeadlessOptions {
            format: args.input.format,
            json: args.json,
            from_start: args.from_start,
            bell: args.bell,
            on_detect: args.on_detect.clone(),
            wrap_sink: Box::new(wrap),
            link,
        };
        // Stderr unlocked: hook threads report failures on it too.
        let (mut out, mut err) = (Terminal::new(io::stdout().lock()), Terminal::new(io::stderr()));
        let result = run_headless(&target, &setup, &opts, &mut out, &mut err);
        telemetry.finish();
        return match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
            other => other.map_err(|e| loopscope_core::io_reason(&e)),
        };
    }
    let opts = ViewOptions {
        live: Some(LiveOptions {
            from_start: args.from_start,
            bell: args.bell,
            on_detect: args.on_detect.clone(),
            link: link.clone(),
        }),
        inputs,
        ..args.look.options()
    };
    let format = args.input.format;
    let result = tui::run(&target.name(), setup, opts, |sink| {
        let sink = wrap(sink);
        target.start(
            format,
            match &link {
                Some(link) => loopscope::telemetry::metered(sink, link.clone()),
                None => sink,
            },
        )
    });
    if let Some(link) = &link {
        link.with(|l| l.finish());
    }
    telemetry.finish();
    result
}

/// `--judge`: `off` takes llm-judge out of the setups; `live` gives the
/// endpoint and schedule to ask while reading.
pub fn live_judge(judge: &LiveJudgeFlags, setups: &mut [Setup]) -> Result<Option<loopscope::judge::LiveJudge>, String> {
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

pub fn run_watch(args: &WatchArgs) -> Result<i32, String> {
    let agents = match &args.agent {
        Some(list) => Agent::parse_list(list)?,
        None => Vec::new(),
    };
    if let Some(file) = args.dirs.iter().find(|d| d.exists() && !d.is_dir()) {
        return Err(format!(
            "{}: watch takes folders; follow one file with `loopscope tail FILE`",
            file.display()
        ));
    }
    let opts = loopscope::watch::WatchOptions {
        roots: loopscope::watch::roots(&args.dirs, &agents, &sessions::process_env),
        setup: args.detectors.setup()?,
        format: args.input.format,
        idle_after: args.idle_after,
        from_start: args.from_start,
        telemetry: super::export::telemetry(&args.otlp, Some(&args.metrics), args.idle_after)?,
    };
    let telemetry = opts.telemetry.clone();
    let roots: Vec<PathBuf> = opts.roots.iter().map(|r| r.path.clone()).collect();
    // `watch --no-tui >> session.jsonl` would follow what it writes.
    refuse_writing_into(args.snapshot.as_deref(), &paths(&roots))?;
    if let Some(out) = &args.snapshot {
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
        let result = loopscope::watch::run_headless(opts, &print, &mut out, &mut err);
        telemetry.finish();
        return match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
            other => other.map_err(|e| loopscope_core::io_reason(&e)),
        };
    }
    let live = LiveOptions {
        from_start: false,
        bell: args.bell,
        on_detect: args.on_detect.clone(),
        link: None,
    };
    let view = ViewOptions {
        inputs: roots,
        ..args.look.options()
    };
    let result = tui::watch::run(opts, live, view);
    telemetry.finish();
    result
}
