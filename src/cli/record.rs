//! The runner of `loopscope record`: the proxy, alone or around a command
//! whose base-URL variables point at it.

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use loopscope::record::{self, agents, Guard, Options, Proxy, Route, Upstream};
use loopscope_core::{Choices, Setup};

use super::flags::RecordArgs;

pub fn run_record(args: &RecordArgs) -> Result<i32, String> {
    let guard = match args.guard {
        Some(profile) => Some(Guard {
            setup: Setup::resolve(&Choices {
                profile: Some(profile),
                detectors: args.detectors.clone(),
                config: args.config.clone(),
                sets: args.sets.clone(),
                tokenizer: None,
            })?,
            hook: args.guard_hook.clone(),
        }),
        None => None,
    };
    let mut named = Vec::new();
    let mut unnamed = Vec::new();
    for u in &args.upstreams {
        match agents::parse_upstream(u)? {
            (Some(name), url) => named.push((name, url)),
            (None, url) => unnamed.push(url),
        }
    }
    let with_command = !args.command.is_empty();
    let (routes, vars) = if with_command {
        if !unnamed.is_empty() {
            return Err(
                "with a COMMAND, say which API an upstream replaces: --upstream openai=URL (or anthropic=, gemini=)"
                    .into(),
            );
        }
        let env = |k: &str| std::env::var(k).ok();
        let plan = agents::plan(&env, &named)?;
        (plan.routes, plan.vars)
    } else {
        if unnamed.len() > 1 {
            return Err("one --upstream URL serves every path; name the others (--upstream NAME=URL)".into());
        }
        let mut routes = Vec::new();
        for url in unnamed {
            routes.push(Route {
                prefix: String::new(),
                upstream: Upstream::parse(&url)?,
            });
        }
        for (name, url) in named {
            routes.push(Route {
                prefix: format!("/{name}"),
                upstream: Upstream::parse(&url)?,
            });
        }
        if routes.is_empty() {
            return Err(
                "nothing to record: run an agent (loopscope record -o DIR -- COMMAND) or give the proxy its upstream (--upstream URL)"
                    .into(),
            );
        }
        (routes, Vec::new())
    };
    let guard_name = guard.as_ref().map(|g| g.setup.profile.to_string());
    // The guard's detectors are record's only ones: without them there is
    // nothing to send (a variable set for every program is not a request).
    if guard.is_none() && args.otlp.otlp.is_some() {
        return Err(
            "record --otlp sends the guard's detections: add --guard PROFILE, or follow the folder with `loopscope watch --otlp URL DIR`"
                .into(),
        );
    }
    let otlp = match guard {
        Some(_) => args.otlp.clone(),
        None => Default::default(),
    };
    let telemetry = super::export::telemetry(&otlp, Some(&args.metrics), loopscope::telemetry::metrics::IDLE_AFTER)?;
    let proxy = record::start(Options {
        listen: args.listen,
        allow_remote: args.allow_remote,
        allow_hosts: args.metrics.allow_hosts.clone(),
        routes,
        dir: args.output.clone(),
        guard,
        connect_timeout: Duration::from_secs(30),
        read_timeout: Duration::from_secs(args.upstream_timeout),
        telemetry: telemetry.clone(),
        max_session: args.max_session,
    })?;
    let dir = loopscope_core::sanitize::path(&args.output);
    let guarding = guard_name.map_or(String::new(), |p| format!(", guarded by {p}"));
    // Each route as `PREFIX → UPSTREAM` (printable).
    let routes: Vec<(String, String)> = proxy
        .ctx
        .routes
        .iter()
        .map(|r| {
            (
                r.prefix.clone(),
                loopscope_core::sanitize::text(&r.upstream.url()).into_owned(),
            )
        })
        .collect();
    if !with_command {
        eprintln!("loopscope: recording into {dir}{guarding}");
        for (prefix, url) in &routes {
            eprintln!(
                "loopscope: listening on {}/ → {url}",
                agents::local_url(proxy.addr, prefix)
            );
        }
        wait_for_stop();
        summary(&proxy, &dir);
        telemetry.finish();
        return Ok(0);
    }
    let routes: Vec<String> = routes
        .iter()
        .map(|(prefix, url)| format!("{} → {url}", prefix.trim_start_matches('/')))
        .collect();
    eprintln!(
        "loopscope: recording into {dir}{guarding} through {} ({})",
        agents::local_url(proxy.addr, ""),
        routes.join(", ")
    );
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    for (var, prefix) in &vars {
        cmd.env(var, agents::local_url(proxy.addr, prefix));
    }
    // A proxy set for the agent must not carry its calls to localhost away.
    for var in ["NO_PROXY", "no_proxy"] {
        let mut list = std::env::var(var).unwrap_or_default();
        if !list.is_empty() {
            list.push(',');
        }
        list.push_str("127.0.0.1,localhost,::1");
        cmd.env(var, list);
    }
    let program = args.command[0].to_string_lossy().into_owned();
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "{}: {}",
            loopscope_core::sanitize::text(&program),
            loopscope_core::io_reason(&e)
        )
    })?;
    pass_signals_to(child.id());
    let status = child.wait().map_err(|e| loopscope_core::io_reason(&e))?;
    summary(&proxy, &dir);
    telemetry.finish();
    use std::os::unix::process::ExitStatusExt;
    Ok(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

fn summary(proxy: &Proxy, dir: &str) {
    let recorder = &proxy.ctx.recorder;
    let n = recorder.conversations.load(Ordering::Relaxed);
    let fired = recorder.detections.load(Ordering::Relaxed);
    let guard = match (&recorder.guard, fired) {
        (None, _) => String::new(),
        (Some(_), 1) => "; the guard fired once".to_string(),
        (Some(_), k) => format!("; the guard fired {k} times"),
    };
    let s = if n == 1 { "" } else { "s" };
    eprintln!("loopscope: recorded {n} conversation{s} into {dir}{guard}");
}

/// The proxy alone runs until SIGINT, SIGTERM or SIGHUP.
fn wait_for_stop() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(mut signals) => {
            signals.forever().next();
        }
        Err(_) => loop {
            std::thread::park();
        },
    }
}

/// While the command runs, loopscope outlives it: Ctrl-C reaches the whole
/// process group, so the agent decides what it means (loopscope waits for
/// it and keeps recording); SIGTERM and SIGHUP sent to loopscope alone are
/// passed on.
fn pass_signals_to(pid: u32) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            if sig != SIGINT {
                // SAFETY: kill(2) with our own child's pid and a plain signal number.
                unsafe {
                    libc::kill(pid as libc::pid_t, sig);
                }
            }
        }
    });
}
