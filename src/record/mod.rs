//! `loopscope record`: a local proxy between an agent and its model API
//! that passes every byte on as it comes and writes each conversation as a
//! native session file, live; under `--guard` it ends a looping response
//! in the API's own terms.
//!
//! The pieces: [`server`] (the client side, HTTP/1.1 on std threads),
//! [`upstream`] (connections to the APIs, TLS by rustls), [`exchange`]
//! (one request), [`answer`] (its answer on the way back), [`payloads`]
//! (a stream cut into its payloads), [`guarded`] (a guarded stream: tool
//! calls held until judged), [`protocol`] (what each API's requests say
//! and how its streams end), [`conversations`] (the session files),
//! [`conversation_guard`] (one conversation's detectors), [`guard`] (what
//! the guard stopped, in words), [`agents`] (the variables that point
//! agents at the proxy).

pub mod agents;
pub mod answer;
pub mod conversation_guard;
pub mod conversations;
pub mod exchange;
pub mod guard;
pub mod guarded;
pub mod payloads;
pub mod protocol;
pub mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use crate::http::upstream::Upstream;
pub use conversations::Recorder;
pub use guard::Guard;

/// Requests under `prefix` go to `upstream` (the prefix replaced by its base path).
#[derive(Clone, Debug)]
pub struct Route {
    /// `/openai`, or empty for every path.
    pub prefix: String,
    pub upstream: Upstream,
}

/// What the server threads share.
pub struct Context {
    pub routes: Vec<Route>,
    pub client: crate::http::upstream::Client,
    pub recorder: Recorder,
    /// Which Host names are answered (DNS rebinding).
    pub hosts: crate::http::host::HostCheck,
}

impl Context {
    /// The route of a request target, and the rest of the target after its prefix.
    pub fn route<'a>(&'a self, target: &'a str) -> Option<(&'a Route, &'a str)> {
        self.routes
            .iter()
            .filter(|r| {
                let p = r.prefix.as_str();
                target == p || target.starts_with(&format!("{p}/")) || target.starts_with(&format!("{p}?"))
            })
            .max_by_key(|r| r.prefix.len())
            .map(|r| (r, &target[r.prefix.len()..]))
    }
}

/// How the proxy runs.
pub struct Options {
    pub listen: SocketAddr,
    pub allow_remote: bool,
    /// `--allow-host`: names answered besides localhost and loopback addresses.
    pub allow_hosts: Vec<String>,
    pub routes: Vec<Route>,
    pub dir: PathBuf,
    pub guard: Option<Guard>,
    pub connect_timeout: Duration,
    /// The longest silence from an upstream before its request fails.
    pub read_timeout: Duration,
    /// Where the guard's detections and the counts go besides (`--otlp`, `--metrics`).
    pub telemetry: crate::telemetry::Telemetry,
    /// The most bytes a session file gets (`--max-session`).
    pub max_session: u64,
}

/// A running proxy.
pub struct Proxy {
    pub addr: SocketAddr,
    pub ctx: Arc<Context>,
}

/// Binds the address and starts serving on a thread of its own.
pub fn start(opts: Options) -> Result<Proxy, String> {
    if !opts.listen.ip().is_loopback() && !opts.allow_remote {
        return Err(format!(
            "--listen {}: not a loopback address; anyone who can reach it could send requests through it \
             (and read what the agent streams); add --allow-remote if that is what you want",
            opts.listen
        ));
    }
    if opts.routes.is_empty() {
        return Err("no upstream to forward to (--upstream URL)".into());
    }
    let client = crate::http::upstream::Client::new(opts.connect_timeout, opts.read_timeout)?;
    let mut recorder = Recorder::new(&opts.dir, opts.guard)?;
    recorder.telemetry = opts.telemetry;
    recorder.max_session = opts.max_session;
    let (listener, addr) = crate::http::listener::bind("--listen", opts.listen)?;
    let ctx = Arc::new(Context {
        routes: opts.routes,
        client,
        recorder,
        hosts: crate::http::host::HostCheck::new(!opts.allow_remote, &opts.allow_hosts),
    });
    let serving = ctx.clone();
    std::thread::Builder::new()
        .name("record-accept".into())
        .spawn(move || server::serve(listener, serving))
        .map_err(|e| format!("cannot start the proxy: {e}"))?;
    Ok(Proxy { addr, ctx })
}
