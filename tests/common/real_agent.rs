//! Real agents, run offline (tests/real_agents.rs, and the hook and guard
//! tests): each installed by `.ci/run` from its registry into
//! `target/agents/<agent>` at the version `tests/agent_pins.tsv` pins, run
//! non-interactively with HOME in a temporary folder against the
//! project's scripted model on 127.0.0.1, and the files it wrote found.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "agent_model.rs"]
pub mod agent_model;
use agent_model::{AgentModel, Dialect, Script, NOTES, NOTES_TEXT};

/// The agents whose runs are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
    QwenCode,
    Opencode,
    Kilo,
    Pi,
    Openclaw,
    Aider,
    MiniSwe,
    /// The OpenHands SDK (a library: run by tests/common/openhands_sdk.py).
    Openhands,
}

/// What every run is asked.
pub const PROMPT: &str = "What does notes.txt say? Read it and answer. 请用中文 🙏";

impl Agent {
    /// Its name in the pins file (and `--agent`, where it has one).
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini-cli",
            Agent::QwenCode => "qwen-code",
            Agent::Opencode => "opencode",
            Agent::Kilo => "kilo",
            Agent::Pi => "pi",
            Agent::Openclaw => "openclaw",
            Agent::Aider => "aider",
            Agent::MiniSwe => "mini-swe-agent",
            Agent::Openhands => "openhands",
        }
    }

    pub fn dialect(self) -> Dialect {
        match self {
            Agent::Aider => Dialect::AiderEdits,
            Agent::MiniSwe => Dialect::MiniSubmit,
            _ => Dialect::Tools,
        }
    }

    /// The format loopscope reads its sessions as.
    pub fn format(self) -> &'static str {
        match self {
            Agent::Kilo => "opencode",
            Agent::MiniSwe => "swe-agent",
            other => other.name(),
        }
    }
}

/// One line of `tests/agent_pins.tsv`.
#[derive(Clone, Debug)]
pub struct Pin {
    pub agent: String,
    pub registry: String,
    pub package: String,
    pub version: String,
    pub program: String,
}

pub fn pins() -> Vec<Pin> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agent_pins.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Pin {
                agent: f[0].into(),
                registry: f[1].into(),
                package: f[2].into(),
                version: f[3].into(),
                program: f[4].into(),
            }
        })
        .collect()
}

/// The installed program of a pinned package, if it is there.
pub fn program(name: &str) -> Option<PathBuf> {
    let pin = pins().into_iter().find(|p| p.agent == name)?;
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/agents")
        .join(name)
        .join(&pin.program);
    p.exists().then_some(p)
}

/// The agent's program, or None outside CI when it is not installed (the
/// test says "skipped"); in CI a missing agent is a failure.
pub fn require(agent: Agent) -> Option<PathBuf> {
    let found = program(agent.name()).filter(|_| agent != Agent::Openclaw || program("node24").is_some());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have {} installed under target/agents (see .ci/run)",
            agent.name()
        );
        eprintln!(
            "skipped: {} is not installed under target/agents (.ci/run installs the pinned agents)",
            agent.name()
        );
    }
    found
}

/// A folder for one run: HOME, the work folder with notes.txt, TMPDIR.
pub struct Sandbox {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
    pub tmp: PathBuf,
}

impl Sandbox {
    pub fn new(name: &str) -> Sandbox {
        // Outside any git checkout: aider writes its history at the root
        // of the repository it finds (Codex warns that it cannot put its
        // helper links under a temporary folder; nothing comes of it).
        let root = tempfile::Builder::new()
            .prefix(&format!("loopscope-{name}-"))
            .tempdir()
            .unwrap();
        let home = root.path().join("home");
        let work = root.path().join("work").join(name);
        let tmp = root.path().join("tmp");
        for d in [&home, &work, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(work.join(NOTES), NOTES_TEXT).unwrap();
        let mut root = root;
        if std::env::var_os("LOOPSCOPE_KEEP_RUNS").is_some() {
            root.disable_cleanup(true);
            eprintln!("{name}: kept in {}", root.path().display());
        }
        Sandbox { root, home, work, tmp }
    }

    /// A command run in the work folder with HOME and the XDG folders here.
    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        // PWD too: opencode and Kilo take the project's folder from it.
        c.current_dir(&self.work)
            .env("PWD", &self.work)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("TMPDIR", &self.tmp)
            // What `loopscope hook` saw at each call, for failure messages.
            .env("LOOPSCOPE_HOOK_LOG", self.root.path().join("hook-log.jsonl"))
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            .stdin(Stdio::null());
        for v in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "LOOPSCOPE_CONFIG",
        ] {
            c.env_remove(v);
        }
        c
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// At most this many agents run at once (each is a node or a native
/// program of its own; CI has 2 cores).
const AT_ONCE: usize = 2;
static RUNNING: Mutex<usize> = Mutex::new(0);
static FREED: Condvar = Condvar::new();

/// Runs `cmd` to its end, killed after `limit`.
pub fn run_for(mut cmd: Command, limit: Duration) -> Output {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    while *running >= AT_ONCE {
        running = FREED.wait(running).unwrap_or_else(|e| e.into_inner());
    }
    *running += 1;
    drop(running);
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let out = child.map(|mut child| {
        let pid = child.id();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watch = done.clone();
        let started = Instant::now();
        std::thread::spawn(move || {
            while started.elapsed() < limit {
                if watch.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        });
        let _ = child.stdin.take();
        let out = child.wait_with_output();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        out
    });
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
    FREED.notify_one();
    out.unwrap().unwrap()
}

/// One run of an agent: its sandbox, the model it talked to, its output.
pub struct Run {
    pub agent: Agent,
    pub script: Script,
    pub sandbox: Sandbox,
    pub model: AgentModel,
    pub out: Output,
}

impl Run {
    /// What the agent printed, for failure messages (LOOPSCOPE_KEEP_RUNS=1
    /// keeps the run's folder, and names it here).
    pub fn said(&self) -> String {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let chars: Vec<char> = s.chars().collect();
            chars[chars.len().saturating_sub(2000)..].iter().collect::<String>()
        };
        // Each hook call, in the order they finished: its event, call id,
        // verdict, and how many events the session's state held.
        let hooks: Vec<String> = std::fs::read_to_string(self.sandbox.root.path().join("hook-log.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| {
                let i = &v["input"];
                let event = i["hook_event_name"].as_str().or(i["event"].as_str()).unwrap_or("?");
                let id = i["tool_use_id"].as_str().or(i["callID"].as_str()).unwrap_or("");
                let verdict = if v["refused"].is_string() { "refused" } else { "" };
                match v["input"]["error"].as_str() {
                    Some(e) => format!("error: {e}"),
                    None => format!("{event} {id} {verdict} ({} events)", v["events"]),
                }
            })
            .collect();
        format!(
            "{} {:?} in {}: exit {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- hooks: {:?}\n--- the model was asked {} times: {:?}",
            self.agent.name(),
            self.script,
            self.sandbox.root.path().display(),
            self.out.status.code(),
            tail(&self.out.stdout),
            tail(&self.out.stderr),
            hooks,
            self.model.asked().len(),
            self.model.asked().iter().map(|a| a.kind.clone()).collect::<Vec<_>>()
        )
    }

    /// The files the agent wrote its session to.
    pub fn sessions(&self) -> Vec<PathBuf> {
        let home = &self.sandbox.home;
        match self.agent {
            Agent::Aider => vec![self.sandbox.work.join(".aider.chat.history.md")],
            Agent::MiniSwe => vec![home.join(".config/mini-swe-agent/last_mini_run.traj.json")],
            // One folder per conversation: `<id>/base_state.json`, `<id>/events/`.
            Agent::Openhands => std::fs::read_dir(home.join(".openhands/conversations"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect(),
            _ => {
                let found = find(home, &|p| match self.agent {
                    Agent::ClaudeCode => p.extension().is_some_and(|e| e == "jsonl") && in_dir(p, "projects"),
                    Agent::Codex => file_name(p).starts_with("rollout-"),
                    Agent::GeminiCli => in_dir(p, "chats") && file_name(p).starts_with("session-"),
                    Agent::QwenCode => in_dir(p, "chats") && file_name(p).ends_with(".jsonl"),
                    Agent::Opencode => file_name(p) == "opencode.db",
                    Agent::Kilo => file_name(p) == "kilo.db",
                    Agent::Pi => in_dir(p, "sessions") && file_name(p).ends_with(".jsonl"),
                    Agent::Openclaw => file_name(p) == "openclaw-agent.sqlite",
                    Agent::Aider | Agent::MiniSwe | Agent::Openhands => false,
                });
                found
            }
        }
        .into_iter()
        .filter(|p| p.exists())
        .collect()
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn in_dir(p: &Path, dir: &str) -> bool {
    p.components().any(|c| c.as_os_str() == dir)
}

/// Every file under `root` that `pick` wants (links not followed).
fn find(root: &Path, pick: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() && pick(&p) => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// How long one run may take (an agent retrying a dead model backs off
/// for minutes; these never should).
const LIMIT: Duration = Duration::from_secs(180);

/// Runs `agent` once on `script`, with `settings` merged into its own
/// configuration where it has one (a hook, a guard switched off).
pub fn run(agent: Agent, program: &Path, script: Script, settings: Option<Value>) -> Run {
    run_with(agent, program, script, settings, |model| model.url.clone(), |_| {})
}

/// [`run`], with `prepare` run on the sandbox once the agent's own
/// configuration is written and before the agent starts (a hook installed).
pub fn run_prepared(
    agent: Agent,
    program: &Path,
    script: Script,
    settings: Option<Value>,
    prepare: impl FnOnce(&Sandbox),
) -> Run {
    run_with(agent, program, script, settings, |model| model.url.clone(), prepare)
}

/// [`run`], with the agent's model URL the one `via` gives for the
/// scripted model (a proxy in between: `loopscope record`).
pub fn run_via(
    agent: Agent,
    program: &Path,
    script: Script,
    settings: Option<Value>,
    via: impl FnOnce(&AgentModel) -> String,
) -> Run {
    run_with(agent, program, script, settings, via, |_| {})
}

fn run_with(
    agent: Agent,
    program: &Path,
    script: Script,
    settings: Option<Value>,
    via: impl FnOnce(&AgentModel) -> String,
    prepare: impl FnOnce(&Sandbox),
) -> Run {
    let sandbox = Sandbox::new(agent.name());
    let model = AgentModel::start(script, agent.dialect(), &sandbox.work);
    let url = via(&model);
    let cmd = command(agent, program, &sandbox, &url, settings.unwrap_or(json!({})));
    prepare(&sandbox);
    let out = run_for(cmd, LIMIT);
    Run {
        agent,
        script,
        sandbox,
        model,
        out,
    }
}

/// `a` with `b`'s keys merged in, objects merged key by key.
pub fn merge(mut a: Value, b: &Value) -> Value {
    if let (Some(a_map), Some(b_map)) = (a.as_object_mut(), b.as_object()) {
        for (k, v) in b_map {
            let merged = match a_map.remove(k) {
                Some(old) if old.is_object() && v.is_object() => merge(old, v),
                _ => v.clone(),
            };
            a_map.insert(k.clone(), merged);
        }
        return a;
    }
    b.clone()
}

/// The command line and configuration of each agent (found by running the
/// pinned versions offline; the README's table says where each keeps its
/// sessions).
fn command(agent: Agent, program: &Path, sb: &Sandbox, url: &str, settings: Value) -> Command {
    let work = sb.work.display().to_string();
    match agent {
        Agent::ClaudeCode => {
            if settings != json!({}) {
                sb.write(".claude/settings.json", &settings.to_string());
            }
            let mut c = sb.command(program);
            // --allowedTools: no prompt for the read tool, and none of
            // --dangerously-skip-permissions' refusal to run as root.
            c.args([
                "-p",
                PROMPT,
                "--model",
                "claude-sonnet-4-5",
                "--allowedTools",
                "Read",
                "Bash",
            ])
            .env("ANTHROPIC_BASE_URL", url)
            .env("ANTHROPIC_API_KEY", "sk-ant-scripted")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
            c
        }
        Agent::Codex => {
            let mut c = sb.command(program);
            let provider = format!(
                "model_providers.scripted={{name=\"scripted\",base_url=\"{url}/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}}"
            );
            c.args([
                "exec",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                "-m",
                "gpt-5",
                "-c",
            ])
            .arg(provider)
            .args(["-c", "model_provider=scripted"])
            .args(
                settings["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str),
            )
            .arg(PROMPT)
            .env("CODEX_HOME", sb.home.join(".codex"))
            .env("OPENAI_API_KEY", "sk-scripted");
            std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
            c
        }
        Agent::GeminiCli => {
            let base = json!({
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                // Without it a base URL selects the gateway auth, which
                // headless mode refuses (exit 41).
                "security": {"auth": {"selectedType": "gemini-api-key"}}
            });
            sb.write(".gemini/settings.json", &merge(base, &settings).to_string());
            let mut c = sb.command(program);
            c.args([
                "-m",
                "gemini-2.5-flash",
                "--approval-mode",
                "yolo",
                "-o",
                "text",
                "-p",
                PROMPT,
            ])
            .env("GOOGLE_GEMINI_BASE_URL", url)
            .env("GEMINI_API_KEY", "scripted-key")
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true");
            c
        }
        Agent::QwenCode => {
            let base = json!({
                "security": {"auth": {"selectedType": "openai"}},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
                // Its background memory extraction offers tools too: off,
                // so every request with tools is the agent's own turn.
                "memory": {"enableManagedAutoMemory": false}
            });
            sb.write(".qwen/settings.json", &merge(base, &settings).to_string());
            let mut c = sb.command(program);
            c.args(["--auth-type", "openai", "--approval-mode", "yolo", "-o", "text", PROMPT])
                .env("OPENAI_BASE_URL", format!("{url}/v1"))
                .env("OPENAI_API_KEY", "scripted-key")
                .env("OPENAI_MODEL", "qwen3-coder-plus");
            c
        }
        Agent::Opencode | Agent::Kilo => {
            let (dir, file, plugin) = match agent {
                Agent::Opencode => ("opencode", "opencode.json", "@opencode-ai/plugin"),
                _ => ("kilo", "kilo.json", "@kilocode/plugin"),
            };
            let config = json!({
                "autoupdate": false,
                "share": "disabled",
                "model": "scripted/scripted",
                "small_model": "scripted/scripted",
                "provider": {"scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {"baseURL": format!("{url}/v1"), "apiKey": "sk-scripted"},
                    "models": {"scripted": {"name": "scripted", "tool_call": true, "reasoning": true,
                                            "limit": {"context": 128000, "output": 8192}}}
                }}
            });
            sb.write(&format!(".config/{dir}/{file}"), &merge(config, &settings).to_string());
            // Each config folder gets its plugin package installed from npm
            // in the background, unless it is there already (offline that
            // stalls a run ~70 s): a lock file that lists it says it is.
            let deps = json!({"dependencies": {plugin: "*"}});
            sb.write(&format!(".config/{dir}/package.json"), &deps.to_string());
            sb.write(
                &format!(".config/{dir}/package-lock.json"),
                &json!({"lockfileVersion": 3, "packages": {"": deps}}).to_string(),
            );
            std::fs::create_dir_all(sb.home.join(format!(".config/{dir}/node_modules"))).unwrap();
            let mut c = sb.command(program);
            // `run` quotes a word that holds a space: the prompt goes word by word.
            c.arg("run").args(PROMPT.split(' '));
            for v in [
                "DISABLE_AUTOUPDATE",
                "DISABLE_MODELS_FETCH",
                "DISABLE_LSP_DOWNLOAD",
                "DISABLE_DEFAULT_PLUGINS",
                "DISABLE_SHARE",
            ] {
                c.env(format!("OPENCODE_{v}"), "1").env(format!("KILO_{v}"), "1");
            }
            c
        }
        Agent::Pi => {
            let models = json!({"providers": {"scripted": {
                "baseUrl": format!("{url}/v1"), "api": "openai-completions", "apiKey": "sk-scripted",
                "models": [{"id": "scripted", "name": "Scripted", "reasoning": true, "contextWindow": 128000, "maxTokens": 8192}]
            }}});
            sb.write(".pi/agent/models.json", &models.to_string());
            let mut c = sb.command(program);
            c.args([
                "--offline",
                "-p",
                "--provider",
                "scripted",
                "--model",
                "scripted",
                PROMPT,
            ])
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0");
            c
        }
        Agent::Openclaw => {
            let config = json!({
                "agents": {"defaults": {"workspace": work, "model": {"primary": "scripted/scripted"}, "skipBootstrap": true}},
                "models": {"mode": "merge", "providers": {"scripted": {
                    "baseUrl": format!("{url}/v1"), "apiKey": "sk-local", "api": "openai-completions",
                    "models": [{"id": "scripted", "name": "Scripted", "reasoning": true, "input": ["text"],
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                                "contextWindow": 128000, "maxTokens": 8192}]
                }}},
                "logging": {"file": sb.home.join("openclaw.log").display().to_string()}
            });
            sb.write(".openclaw/openclaw.json", &merge(config, &settings).to_string());
            // OpenClaw 2026.9 needs Node 24; the pinned one from npm.
            let node = self::program("node24").expect("node24 is installed with openclaw");
            let mut c = sb.command(&node);
            c.arg(program)
                .args(["agent", "--local", "--agent", "main", "--message", PROMPT, "--json"])
                .env("OPENCLAW_OFFLINE", "1")
                .env("OPENCLAW_NO_AUTO_UPDATE", "1")
                .env("OPENCLAW_DISABLE_BONJOUR", "1")
                .env("PATH", path_with(node.parent().unwrap()));
            c
        }
        Agent::Aider => {
            // aider fetches litellm's price list from GitHub unless a fresh
            // copy is cached.
            sb.write(".aider/caches/model_prices_and_context_window.json", "{}");
            let mut c = sb.command(program);
            c.args([
                "--message",
                PROMPT,
                "--yes-always",
                "--no-git",
                "--no-auto-commits",
                "--no-check-update",
            ])
            .args([
                "--no-analytics",
                "--no-show-model-warnings",
                "--no-show-release-notes",
                "--no-pretty",
            ])
            .args(["--model", "openai/scripted", "--openai-api-base"])
            .arg(format!("{url}/v1"))
            .args(["--edit-format", "diff", "--map-tokens", "0", NOTES])
            .env("OPENAI_API_KEY", "sk-scripted")
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
            c
        }
        Agent::MiniSwe => {
            let mut c = sb.command(program);
            c.args([
                "--yolo",
                "--exit-immediately",
                "--cost-limit",
                "0",
                "-c",
                "mini.yaml",
                "-c",
            ])
            .arg(format!("model.model_kwargs.api_base={url}/v1"))
            .args(["--model", "openai/scripted", "--task", PROMPT])
            .env("OPENAI_API_KEY", "sk-scripted")
            .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            .env("MSWEA_CONFIGURED", "true")
            .env("MSWEA_COST_TRACKING", "ignore_errors");
            c
        }
        Agent::Openhands => {
            let mut c = sb.command(program);
            c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/openhands_sdk.py"))
                .arg(format!("{url}/v1"))
                .arg(&work)
                .arg(sb.home.join(".openhands/conversations"))
                .arg(PROMPT)
                .env("LITELLM_LOCAL_MODEL_COST_MAP", "True");
            c
        }
    }
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).unwrap()
}

/// `loopscope ARGS FILE` (the build under test, no user configuration):
/// its JSON lines, after checking it exited 0 or 1.
pub fn loopscope_json(args: &[&str], file: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .args(args)
        .arg(file)
        .env_remove("LOOPSCOPE_CONFIG")
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
