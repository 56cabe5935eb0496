//! The agents whose session folders loopscope knows, and where each OS
//! keeps them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use loopscope_core::formats;

/// An agent whose session folders loopscope knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Agent {
    ClaudeCode,
    Codex,
    GeminiCli,
    QwenCode,
    Cline,
    RooCode,
    Pi,
    Opencode,
    Kilo,
    Copilot,
    Openhands,
    Goose,
    Crush,
    Openclaw,
}

/// VS Code and its forks, whose `globalStorage` holds Cline's and Roo's tasks.
const EDITORS: [&str; 6] = ["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf", "Kiro"];

impl Agent {
    pub const ALL: [Agent; 14] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::GeminiCli,
        Agent::QwenCode,
        Agent::Cline,
        Agent::RooCode,
        Agent::Pi,
        Agent::Opencode,
        Agent::Kilo,
        Agent::Copilot,
        Agent::Openhands,
        Agent::Goose,
        Agent::Crush,
        Agent::Openclaw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::GeminiCli => "gemini-cli",
            Agent::QwenCode => "qwen-code",
            Agent::Cline => "cline",
            Agent::RooCode => "roo-code",
            Agent::Pi => "pi",
            Agent::Opencode => "opencode",
            Agent::Kilo => "kilo",
            Agent::Copilot => "copilot",
            Agent::Openhands => "openhands",
            Agent::Goose => "goose",
            Agent::Crush => "crush",
            Agent::Openclaw => "openclaw",
        }
    }

    /// `claude-code`, …, or `all`.
    pub fn parse_list(text: &str) -> Result<Vec<Agent>, String> {
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let found: Vec<Agent> = if word == "all" {
                Agent::ALL.to_vec()
            } else {
                let a = Agent::ALL.into_iter().find(|a| a.name() == word).ok_or_else(|| {
                    let names: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
                    format!("unknown agent {word:?} (one of {}, or all)", names.join(", "))
                })?;
                vec![a]
            };
            for a in found {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        if out.is_empty() {
            return Err("no agent named".to_string());
        }
        Ok(out)
    }

    /// The variable that replaces this agent's folders (a path list:
    /// `:`-separated, `;` on Windows).
    pub fn override_var(self) -> String {
        format!("LOOPSCOPE_{}_DIR", self.name().to_uppercase().replace('-', "_"))
    }

    /// The folders this agent writes its sessions to on this machine, as
    /// `env` (the process environment, or a test's) names them: the
    /// override variable when set, else the agent's own variable
    /// (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`), else the usual places for
    /// this OS. Whether they exist is not checked.
    pub fn locations(self, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
        if let Some(list) = env(&self.override_var()).filter(|v| !v.is_empty()) {
            return std::env::split_paths(&list).collect();
        }
        let home = env("HOME")
            .or_else(|| env("USERPROFILE"))
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let Some(home) = home else { return Vec::new() };
        let own = |var: &str, sub: &str, default: &str| match env(var).filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir).join(sub),
            None => home.join(default).join(sub),
        };
        // $XDG_DATA_HOME, else ~/.local/share — on every OS for the agents
        // written with xdg-basedir (opencode, Kilo) or Go's xdg (Crush).
        let xdg_data = env("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".local").join("share"));
        // A store named by the agent's own variable is the one place.
        let db_or = |var: &str, dir: PathBuf| match env(var).filter(|v| !v.is_empty()) {
            Some(db) => vec![PathBuf::from(db)],
            None => vec![dir],
        };
        match self {
            Agent::ClaudeCode => vec![own("CLAUDE_CONFIG_DIR", "projects", ".claude")],
            Agent::Codex => vec![own("CODEX_HOME", "sessions", ".codex")],
            Agent::GeminiCli => vec![home.join(".gemini").join("tmp")],
            Agent::QwenCode => vec![home.join(".qwen").join("projects"), home.join(".qwen").join("tmp")],
            Agent::Cline | Agent::RooCode => {
                let ext = if self == Agent::Cline {
                    "saoudrizwan.claude-dev"
                } else {
                    "rooveterinaryinc.roo-cline"
                };
                let mut dirs: Vec<PathBuf> = EDITORS
                    .iter()
                    .map(|e| {
                        editor_config(&home, env)
                            .join(e)
                            .join("User/globalStorage")
                            .join(ext)
                            .join("tasks")
                    })
                    .collect();
                if self == Agent::Cline {
                    dirs.push(home.join(".cline").join("data").join("tasks"));
                }
                dirs
            }
            // badlogic/pi-mono src/config.ts: PI_CODING_AGENT_DIR, else ~/.pi/agent (every OS).
            Agent::Pi => vec![own("PI_CODING_AGENT_DIR", "sessions", ".pi/agent")],
            // storage/db.ts: OPENCODE_DB, else Global.Path.data = xdgData/opencode.
            Agent::Opencode => db_or("OPENCODE_DB", xdg_data.join("opencode")),
            Agent::Kilo => db_or("KILO_DB", xdg_data.join("kilo")),
            // COPILOT_HOME replaces ~/.copilot (changelog); session-state inside it.
            Agent::Copilot => vec![own("COPILOT_HOME", "session-state", ".copilot")],
            Agent::Openhands => vec![home.join(".openhands").join("conversations")],
            Agent::Goose => goose_dirs(&home, &xdg_data, env),
            Agent::Crush => crush_dirs(&xdg_data, env),
            Agent::Openclaw => openclaw_dirs(&home, env),
        }
    }

    /// Whether a file found under this agent's folders can be one of its
    /// sessions (its other files — settings, shell history, checkpoints —
    /// are not looked at).
    pub fn is_session_file(self, path: &Path) -> bool {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let under_chats = path.components().any(|c| c.as_os_str() == "chats");
        match self {
            Agent::ClaudeCode => name.ends_with(".jsonl"),
            Agent::Codex => name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")),
            Agent::GeminiCli | Agent::QwenCode => under_chats && (name.ends_with(".json") || name.ends_with(".jsonl")),
            // Task folders are found as folders; nothing else under tasks/ is a session.
            Agent::Cline | Agent::RooCode => path.is_dir(),
            Agent::Pi => name.ends_with(".jsonl"),
            // The store (`opencode.db`, `opencode-<channel>.db`) and the legacy tree.
            Agent::Opencode => {
                (name.starts_with("opencode") && name.ends_with(".db")) || formats::folder::is_opencode_tree(path)
            }
            Agent::Kilo => {
                (name.starts_with("kilo") && name.ends_with(".db")) || formats::folder::is_opencode_tree(path)
            }
            Agent::Copilot => name == "events.jsonl" || formats::copilot::session_file(path).is_some(),
            Agent::Openhands => formats::folder::is_conversation(path),
            Agent::Goose => name == "sessions.db",
            Agent::Crush => name == "crush.db",
            Agent::Openclaw => name == "openclaw-agent.sqlite",
        }
    }
}

/// Goose (block/goose `config/paths.rs`: etcetera's app strategy for
/// Block/goose, `GOOSE_PATH_ROOT` overriding): `<data>/sessions`.
fn goose_dirs(home: &Path, xdg_data: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    if let Some(root) = env("GOOSE_PATH_ROOT").filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(root).join("data").join("sessions")];
    }
    if cfg!(target_os = "macos") {
        let support = home.join("Library").join("Application Support");
        vec![
            support.join("Block").join("goose").join("sessions"),
            support.join("Block.goose").join("sessions"),
        ]
    } else if cfg!(windows) {
        let roaming = env("APPDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("AppData").join("Roaming"));
        vec![roaming.join("Block").join("goose").join("data").join("sessions")]
    } else {
        vec![xdg_data.join("goose").join("sessions")]
    }
}

/// OpenClaw (docs/help/environment.md, 2026.9.6): a store per agent,
/// `<state>/agents/<agent>/agent/openclaw-agent.sqlite`. `OPENCLAW_AGENT_DIR`
/// names one agent's folder; the state folder is `OPENCLAW_STATE_DIR`, else
/// `$OPENCLAW_HOME/.openclaw`, else `~/.openclaw` (`~/.openclaw-<profile>`
/// with `OPENCLAW_PROFILE`).
fn openclaw_dirs(home: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let set = |var: &str| env(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(agent) = set("OPENCLAW_AGENT_DIR") {
        return vec![agent];
    }
    let state = set("OPENCLAW_STATE_DIR").unwrap_or_else(|| {
        let base = set("OPENCLAW_HOME").unwrap_or_else(|| home.to_path_buf());
        match env("OPENCLAW_PROFILE").filter(|v| !v.is_empty()) {
            Some(p) => base.join(format!(".openclaw-{}", p.to_string_lossy())),
            None => base.join(".openclaw"),
        }
    });
    vec![state.join("agents")]
}

/// Crush keeps a store per project (`<project>/.crush/crush.db`) and lists
/// its projects in `<data>/crush/projects.json`: the projects' data
/// folders it names, and the `.crush` of the working folder.
fn crush_dirs(xdg_data: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let data = if cfg!(windows) {
        env("LOCALAPPDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| xdg_data.to_path_buf())
            .join("crush")
    } else {
        xdg_data.join("crush")
    };
    let mut dirs = Vec::new();
    let index = data.join("projects.json");
    let text = std::fs::metadata(&index)
        .ok()
        .filter(|m| m.len() < 16 << 20)
        .and_then(|_| std::fs::read(&index).ok());
    if let Some(v) = text.and_then(|t| serde_json::from_slice::<serde_json::Value>(&t).ok()) {
        // Every path the index names that holds a store (its shape varies by version).
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::String(s) if s.starts_with('/') || s.contains(":\\") => {
                    let p = PathBuf::from(s);
                    for dir in [p.clone(), p.join(".crush")] {
                        if dir.join("crush.db").is_file() && !dirs.contains(&dir) {
                            dirs.push(dir);
                        }
                    }
                }
                serde_json::Value::Array(a) => stack.extend(a),
                serde_json::Value::Object(o) => stack.extend(o.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }
    if let Some(cwd) = env("PWD").map(PathBuf::from) {
        let here = cwd.join(".crush");
        if here.join("crush.db").is_file() && !dirs.contains(&here) {
            dirs.push(here);
        }
    }
    if dirs.is_empty() {
        dirs.push(data);
    }
    dirs
}

/// Where each OS keeps an editor's settings (`Code/User/…` lives under it).
fn editor_config(home: &Path, env: &dyn Fn(&str) -> Option<OsString>) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library").join("Application Support")
    } else if cfg!(windows) {
        env("APPDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("AppData").join("Roaming"))
    } else {
        env("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config"))
    }
}
