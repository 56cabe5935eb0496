//! The flags of what talks over the network: `record` (a local proxy),
//! `judge` and `--judge` (an LLM endpoint), `--otlp` (a collector) and
//! `--metrics` (a local endpoint). Listeners are loopback unless asked.

use super::*;

/// `--otlp`: detections sent as OpenTelemetry.
#[derive(Args, Clone, Default)]
pub struct OtlpFlags {
    /// Send each detection as OpenTelemetry (GenAI evaluation spans and
    /// events) to this OTLP/HTTP endpoint: a base URL such as
    /// http://localhost:4318 (/v1/traces and /v1/logs are added) or the
    /// full /v1/traces URL [default: $OTEL_EXPORTER_OTLP_ENDPOINT]; headers
    /// from $OTEL_EXPORTER_OTLP_HEADERS (e.g. Authorization=Basic%20…).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// With --otlp: http/protobuf or http/json [default: $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf].
    #[arg(long, value_name = "PROTOCOL", value_parser = ["http/protobuf", "http/json"])]
    pub otlp_protocol: Option<String>,
}

/// `--metrics`: counters for Prometheus.
#[derive(Args, Clone, Default)]
pub struct MetricsFlags {
    /// Serve Prometheus counters (sessions, detections, events, bytes, bad
    /// lines, judge calls) at http://ADDR/metrics: ADDRESS:PORT, or a port
    /// alone (on 127.0.0.1).
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub metrics: Option<SocketAddr>,
    /// Also answer requests whose Host is NAME (behind a name of your own);
    /// on a loopback address only localhost and loopback IPs are answered
    /// otherwise, so a web page cannot reach it through DNS rebinding. For
    /// --metrics and for `record`'s proxy. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
}

/// The LLM judge of `scan`: its recorded verdicts, a live endpoint, or none.
#[derive(Args, Clone)]
pub struct LiveJudgeFlags {
    /// replay: the loop_check verdicts recorded in the stream; live: ask
    /// --judge-endpoint at each check (verdicts counted as if recorded);
    /// off: no llm-judge.
    #[arg(long, value_parser = ["replay", "live", "off"], default_value = "replay")]
    pub judge: String,
    /// With --judge live: the OpenAI-compatible base URL (e.g. http://localhost:11434/v1).
    #[arg(long, value_name = "URL")]
    pub judge_endpoint: Option<String>,
    /// With --judge live: the model asked first.
    #[arg(long, value_name = "MODEL")]
    pub judge_model: Option<String>,
    /// With --judge live: the model that confirms a loop.
    #[arg(long, value_name = "MODEL")]
    pub judge_double_check_model: Option<String>,
    /// With --judge live: the environment variable holding the API key.
    #[arg(long, value_name = "VAR")]
    pub judge_api_key_env: Option<String>,
    /// The judge's instructions, instead of loopscope's own.
    #[arg(long, value_name = "FILE")]
    pub judge_prompt: Option<PathBuf>,
}

#[derive(Args)]
pub struct JudgeArgs {
    /// The recorded stream (any supported format).
    pub file: PathBuf,
    /// Where to write the stream with the verdicts (never FILE itself).
    #[arg(short, long, value_name = "OUT", required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// The endpoint's base URL, e.g. http://localhost:11434/v1 (ollama),
    /// http://localhost:8000/v1 (vLLM); /chat/completions is appended
    /// [default: base_url in the config's [judge]].
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// The model asked first ("flash") [default: model in [judge]].
    #[arg(long)]
    pub model: Option<String>,
    /// The model that confirms a loop (gemini-cli's double check).
    #[arg(long, value_name = "MODEL")]
    pub double_check_model: Option<String>,
    /// The environment variable holding the API key (the key is never printed).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Seconds per request [default: 60, or timeout in [judge]].
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Attempts per check before it counts as no answer [default: 2, or attempts in [judge]].
    #[arg(long)]
    pub attempts: Option<usize>,
    /// The judge's instructions, instead of loopscope's own.
    #[arg(long, value_name = "FILE")]
    pub judge_prompt: Option<PathBuf>,
    /// Print the requests it would send (JSON lines) and send none.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub input: InputFlags,
    #[command(flatten)]
    pub detectors: DetectorFlags,
}

#[derive(Args)]
#[command(after_help = "Examples:
  loopscope record -o ~/agent-logs -- claude
  loopscope record -o ~/agent-logs --guard extended -- aider --model gpt-4o
  loopscope record -o ~/agent-logs --listen 127.0.0.1:8700 --upstream https://api.openai.com/v1

With a COMMAND, it gets OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL,
ANTHROPIC_API_BASE, GOOGLE_GEMINI_BASE_URL and GEMINI_API_BASE pointing at the
proxy; their values (or the public APIs) are where requests go. API keys pass
through and are never written or printed.")]
pub struct RecordArgs {
    /// The folder the sessions go into (created if missing): one native
    /// JSONL file per conversation, named by its start time (UTC) and model.
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    /// Where the proxy listens [default: 127.0.0.1 on a free port; the URL is printed].
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0", hide_default_value = true, value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Listen on an address that is not loopback (others could send requests through it).
    #[arg(long)]
    pub allow_remote: bool,
    /// Where requests go: URL (every path; the proxy alone) or NAME=URL
    /// (paths under /NAME/); with a COMMAND, openai=, anthropic= or gemini=
    /// replaces what that API's variables say. Repeatable.
    #[arg(long = "upstream", value_name = "[NAME=]URL")]
    pub upstreams: Vec<String>,
    /// Run this profile's detectors on every stream as it passes; when one
    /// fires, end that response as the API ends one, note it in the session
    /// and say so on stderr.
    #[arg(long, value_name = "PROFILE", value_parser = profile_parser())]
    pub guard: Option<Profile>,
    /// With --guard: only these detectors (comma-separated ids).
    #[arg(long, value_delimiter = ',', requires = "guard")]
    pub detectors: Option<Vec<String>>,
    /// With --guard: set a parameter, e.g. --set text-loop.copies=4 (repeatable).
    #[arg(long = "set", value_name = "ID.PARAM=VALUE", requires = "guard")]
    pub sets: Vec<String>,
    /// With --guard: TOML config file [default: $LOOPSCOPE_CONFIG, then $XDG_CONFIG_HOME/loopscope/config.toml].
    #[arg(long, value_name = "FILE", requires = "guard")]
    pub config: Option<PathBuf>,
    /// With --guard: run CMD through the shell on each detection, with the
    /// environment of `tail --on-detect` (LOOPSCOPE_FILE is the session file).
    #[arg(long, value_name = "CMD", requires = "guard")]
    pub guard_hook: Option<String>,
    /// Seconds an upstream may stay silent (before answering, or between
    /// two pieces of a stream) before its request fails.
    #[arg(long, default_value_t = 3600, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub upstream_timeout: u64,
    /// The largest a session file grows: past it one note says so and the
    /// rest of that conversation is passed on (and guarded) but not
    /// written. Bytes, or with K, M, G or T (powers of 1024).
    #[arg(long, default_value = "4G", value_name = "SIZE", value_parser = parse_bytes)]
    pub max_session: u64,
    #[command(flatten)]
    pub otlp: OtlpFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
    /// The agent to run, after `--`, with its arguments. Without one the
    /// proxy runs alone until interrupted.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}
