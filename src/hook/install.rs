//! `loopscope hook install AGENT` / `uninstall AGENT` / `status`: puts the
//! hook into the agent's own settings (or writes its plugin), touching
//! nothing else there: other hooks are kept, running it twice changes
//! nothing, the file is backed up before it changes, and the change is
//! printed (`--dry-run` prints it only).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::agents::HookAgent;

/// Where the hook goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The user's settings (every project).
    User,
    /// This project's settings (the working folder).
    Project,
}

/// What an install or uninstall does: files written, with what they say.
#[derive(Debug, Default)]
pub struct Change {
    pub lines: Vec<String>,
    writes: Vec<(PathBuf, Vec<u8>)>,
    removes: Vec<PathBuf>,
}

impl Change {
    fn write(&mut self, path: PathBuf, bytes: Vec<u8>, what: String) {
        self.lines.push(what);
        self.writes.push((path, bytes));
    }

    /// Does it: each file that changes is backed up first (`FILE.loopscope-backup`).
    pub fn apply(&self) -> Result<(), String> {
        for (path, bytes) in &self.writes {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("{}: {}", dir.display(), loopscope_core::io_reason(&e)))?;
            }
            backup(path)?;
            crate::files::write_atomically(path, |w| w.write_all(bytes))?;
        }
        for path in &self.removes {
            backup(path)?;
            std::fs::remove_file(path).map_err(|e| format!("{}: {}", path.display(), loopscope_core::io_reason(&e)))?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removes.is_empty()
    }
}

fn backup(path: &Path) -> Result<(), String> {
    if path.is_file() {
        let mut b = path.as_os_str().to_owned();
        b.push(".loopscope-backup");
        std::fs::copy(path, &b)
            .map_err(|e| format!("backing up {}: {}", path.display(), loopscope_core::io_reason(&e)))?;
    }
    Ok(())
}

/// Reads an environment variable (the process's, or a test's).
pub type Env = Box<dyn Fn(&str) -> Option<String>>;

/// The environment an install looks in (the process's, or a test's).
pub struct Places {
    pub home: PathBuf,
    pub cwd: PathBuf,
    pub env: Env,
}

impl Places {
    pub fn here() -> Result<Places, String> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or("HOME is not set")?;
        let cwd = std::env::current_dir().map_err(|e| loopscope_core::io_reason(&e))?;
        Ok(Places {
            home,
            cwd,
            env: Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        })
    }

    fn var_or(&self, var: &str, default: PathBuf) -> PathBuf {
        (self.env)(var).map(PathBuf::from).unwrap_or(default)
    }

    fn xdg_config(&self) -> PathBuf {
        self.var_or("XDG_CONFIG_HOME", self.home.join(".config"))
    }
}

/// How each agent holds its hooks.
enum Holder {
    /// A JSON settings file with `hooks.EVENT = [{matcher, hooks: [{type, command}]}]`
    /// (Claude Code's shape; qwen-code, Codex and gemini-cli use it too).
    Settings {
        file: PathBuf,
        events: &'static [&'static str],
    },
    /// Copilot CLI's `{version, hooks: {EVENT: [{type, bash}]}}`, the event on the command line.
    Copilot { file: PathBuf },
    /// Cursor's `{version, hooks: {EVENT: [{command}]}}`.
    Cursor { file: PathBuf },
    /// A plugin file loopscope writes whole.
    Plugin { file: PathBuf, template: &'static str },
    /// OpenClaw: a plugin folder, and two entries in its config.
    Openclaw { dir: PathBuf, config: PathBuf },
}

/// A marker in every hook command and plugin loopscope writes, so it finds
/// its own and nothing else.
fn is_ours(command: &str, agent: HookAgent) -> bool {
    command.contains("loopscope") && command.contains(&format!("hook {}", agent.name()))
}

fn holder(agent: HookAgent, scope: Scope, p: &Places) -> Result<Holder, String> {
    let user = scope == Scope::User;
    let root = |user_dir: PathBuf, project: &str| if user { user_dir } else { p.cwd.join(project) };
    Ok(match agent {
        // The results too: a transcript can be written behind the agent.
        HookAgent::ClaudeCode => Holder::Settings {
            file: root(p.var_or("CLAUDE_CONFIG_DIR", p.home.join(".claude")), ".claude").join("settings.json"),
            events: &["PreToolUse", "PostToolUse", "PostToolUseFailure"],
        },
        HookAgent::QwenCode => Holder::Settings {
            file: root(p.home.join(".qwen"), ".qwen").join("settings.json"),
            events: &["PreToolUse", "PostToolUse", "PostToolUseFailure"],
        },
        HookAgent::Codex => Holder::Settings {
            file: root(p.var_or("CODEX_HOME", p.home.join(".codex")), ".codex").join("hooks.json"),
            events: &["PreToolUse", "PostToolUse", "UserPromptSubmit"],
        },
        HookAgent::GeminiCli => Holder::Settings {
            file: root(p.var_or("GEMINI_CLI_HOME", p.home.clone()).join(".gemini"), ".gemini").join("settings.json"),
            events: &["BeforeTool"],
        },
        HookAgent::Copilot if user => {
            return Err("Copilot CLI reads hooks from the repository (.github/hooks/): use --project".to_string())
        }
        HookAgent::Copilot => Holder::Copilot {
            file: p.cwd.join(".github/hooks/loopscope.json"),
        },
        HookAgent::Cursor => Holder::Cursor {
            file: root(p.home.join(".cursor"), ".cursor").join("hooks.json"),
        },
        HookAgent::Opencode => Holder::Plugin {
            file: root(p.xdg_config().join("opencode"), ".opencode").join("plugin/loopscope.js"),
            template: include_str!("plugins/opencode.js"),
        },
        HookAgent::Kilo => Holder::Plugin {
            file: root(p.xdg_config().join("kilo"), ".kilo").join("plugin/loopscope.js"),
            template: include_str!("plugins/opencode.js"),
        },
        HookAgent::Pi => Holder::Plugin {
            file: root(p.var_or("PI_CODING_AGENT_DIR", p.home.join(".pi/agent")), ".pi")
                .join("extensions/loopscope.ts"),
            template: include_str!("plugins/pi.ts"),
        },
        HookAgent::Openclaw if !user => {
            return Err(
                "OpenClaw loads plugins from its own folder: install it for the user (without --project)".to_string(),
            )
        }
        HookAgent::Openclaw => {
            let state = p.var_or(
                "OPENCLAW_STATE_DIR",
                p.var_or("OPENCLAW_HOME", p.home.clone()).join(".openclaw"),
            );
            Holder::Openclaw {
                dir: state.join("extensions/loopscope"),
                config: p.var_or("OPENCLAW_CONFIG_PATH", state.join("openclaw.json")),
            }
        }
    })
}

/// Reads a JSON settings file (none yet: `{}`); one that is not plain JSON
/// is left alone.
fn read_settings(file: &Path) -> Result<Value, String> {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                format!(
                    "{} is not a plain JSON object (comments?); loopscope leaves it as it is: add the hook by hand",
                    file.display()
                )
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(format!("{}: {}", file.display(), loopscope_core::io_reason(&e))),
    }
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("JSON values serialise");
    out.push(b'\n');
    out
}

/// `hooks.EVENT` of a settings object, with our entry set (`add`) or removed.
fn edit_event_list(settings: &mut Value, event: &str, entry: Option<Value>, ours: &dyn Fn(&Value) -> bool) -> bool {
    let hooks = settings
        .as_object_mut()
        .expect("an object")
        .entry("hooks")
        .or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    let list = hooks
        .as_object_mut()
        .expect("an object")
        .entry(event)
        .or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    let items = list.as_array_mut().expect("an array");
    let before = items.clone();
    items.retain(|i| !ours(i));
    if let Some(e) = entry {
        items.push(e);
    }
    let changed = *items != before;
    if items.is_empty() {
        hooks.as_object_mut().expect("an object").remove(event);
    }
    if hooks.as_object().is_some_and(Map::is_empty) {
        settings.as_object_mut().expect("an object").remove("hooks");
    }
    changed
}

/// Whether a Claude-shaped matcher group runs our command.
fn group_is_ours(group: &Value, agent: HookAgent) -> bool {
    group["hooks"].as_array().is_some_and(|hs| {
        hs.iter()
            .any(|h| h["command"].as_str().is_some_and(|c| is_ours(c, agent)))
    })
}

/// Installs (`command`: the hook's command line) or, with `None`, uninstalls.
pub fn plan(agent: HookAgent, scope: Scope, p: &Places, command: Option<&[String]>) -> Result<Change, String> {
    let mut change = Change::default();
    let line = command.map(shell_line);
    match holder(agent, scope, p)? {
        Holder::Settings { file, events } => {
            let mut settings = read_settings(&file)?;
            let mut changed = false;
            for event in events {
                let entry = line.as_ref().map(|l| {
                    let mut h = json!({"type": "command", "command": l});
                    // gemini-cli names its hooks and counts timeouts in ms; the others in seconds.
                    if agent == HookAgent::GeminiCli {
                        h["name"] = json!("loopscope");
                        h["timeout"] = json!(30_000);
                    } else {
                        h["timeout"] = json!(30);
                    }
                    json!({"matcher": if agent == HookAgent::GeminiCli { ".*" } else { "*" }, "hooks": [h]})
                });
                changed |= edit_event_list(&mut settings, event, entry, &|g| group_is_ours(g, agent));
            }
            if changed {
                let what = match &line {
                    Some(l) => format!(
                        "{}: {} {} `{l}`",
                        file.display(),
                        events.join(", "),
                        if events.len() == 1 { "runs" } else { "run" }
                    ),
                    None => format!("{}: the loopscope hook removed", file.display()),
                };
                change.write(file, pretty(&settings), what);
            }
        }
        Holder::Copilot { file } => {
            if let Some(l) = &line {
                let hook = |event: &str| json!([{"type": "command", "bash": format!("{l} --event {event}"), "timeoutSec": 30}]);
                let v = json!({"version": 1, "hooks": {
                    "preToolUse": hook("preToolUse"),
                    "postToolUse": hook("postToolUse"),
                    "userPromptSubmitted": hook("userPromptSubmitted"),
                }});
                let bytes = pretty(&v);
                if std::fs::read(&file).ok().as_deref() != Some(&bytes[..]) {
                    change.write(
                        file.clone(),
                        bytes,
                        format!(
                            "{}: preToolUse, postToolUse, userPromptSubmitted run `{l}`",
                            file.display()
                        ),
                    );
                }
            } else if file.is_file() {
                change.lines.push(format!("{}: removed", file.display()));
                change.removes.push(file);
            }
        }
        Holder::Cursor { file } => {
            let mut settings = read_settings(&file)?;
            let mut changed = false;
            for event in ["preToolUse", "postToolUse", "beforeSubmitPrompt"] {
                let entry = line.as_ref().map(|l| json!({"command": l}));
                let ours = |h: &Value| h["command"].as_str().is_some_and(|c| is_ours(c, agent));
                changed |= edit_event_list(&mut settings, event, entry, &ours);
            }
            if changed {
                if line.is_some() {
                    settings["version"] = json!(1);
                }
                let what = match &line {
                    Some(l) => format!(
                        "{}: preToolUse, postToolUse, beforeSubmitPrompt run `{l}`",
                        file.display()
                    ),
                    None => format!("{}: the loopscope hook removed", file.display()),
                };
                change.write(file, pretty(&settings), what);
            }
        }
        Holder::Plugin { file, template } => match command {
            Some(cmd) => {
                let text = template.replace("__LOOPSCOPE_COMMAND__", &Value::from(cmd.to_vec()).to_string());
                if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                    change.write(
                        file.clone(),
                        text.into_bytes(),
                        format!("{}: the plugin runs `{}`", file.display(), shell_line(cmd)),
                    );
                }
            }
            None => {
                if std::fs::read_to_string(&file).is_ok_and(|t| t.contains("loopscope hook install")) {
                    change.lines.push(format!("{}: removed", file.display()));
                    change.removes.push(file);
                }
            }
        },
        Holder::Openclaw { dir, config } => {
            let mut settings = read_settings(&config)?;
            let path = dir.display().to_string();
            let obj = settings.as_object_mut().expect("an object");
            let plugins = obj.entry("plugins").or_insert_with(|| json!({}));
            if !plugins.is_object() {
                *plugins = json!({});
            }
            let before = plugins.clone();
            let paths = plugins["load"]["paths"].as_array().cloned().unwrap_or_default();
            let mut paths: Vec<Value> = paths
                .into_iter()
                .filter(|x| x.as_str() != Some(path.as_str()))
                .collect();
            match command {
                Some(cmd) => {
                    paths.push(json!(path));
                    plugins["load"] = merge_obj(&plugins["load"], json!({"paths": paths}));
                    plugins["entries"] = merge_obj(&plugins["entries"], json!({"loopscope": {"enabled": true}}));
                    let index = include_str!("plugins/openclaw/index.mjs")
                        .replace("__LOOPSCOPE_COMMAND__", &Value::from(cmd.to_vec()).to_string());
                    for (name, text) in [
                        ("index.mjs", index),
                        (
                            "openclaw.plugin.json",
                            include_str!("plugins/openclaw/openclaw.plugin.json").to_string(),
                        ),
                        (
                            "package.json",
                            include_str!("plugins/openclaw/package.json").to_string(),
                        ),
                    ] {
                        let file = dir.join(name);
                        if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                            change.write(file.clone(), text.into_bytes(), format!("{}: written", file.display()));
                        }
                    }
                }
                None => {
                    plugins["load"] = merge_obj(&plugins["load"], json!({"paths": paths}));
                    if let Some(entries) = plugins["entries"].as_object_mut() {
                        entries.remove("loopscope");
                    }
                    for name in ["index.mjs", "openclaw.plugin.json", "package.json"] {
                        let file = dir.join(name);
                        if file.is_file() {
                            change.lines.push(format!("{}: removed", file.display()));
                            change.removes.push(file);
                        }
                    }
                }
            }
            if *plugins != before {
                let what = format!("{}: plugins.load.paths and plugins.entries.loopscope", config.display());
                change.write(config, pretty(&settings), what);
            }
        }
    }
    Ok(change)
}

fn merge_obj(base: &Value, add: Value) -> Value {
    let mut out = base.as_object().cloned().unwrap_or_default();
    if let Value::Object(a) = add {
        out.extend(a);
    }
    Value::Object(out)
}

/// A command line for a shell: each word quoted when it needs it.
pub fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+".contains(c)) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where the hook is installed for `agent` (user and project scope).
pub fn installed(agent: HookAgent, p: &Places) -> Vec<(Scope, PathBuf)> {
    let mut out = Vec::new();
    for scope in [Scope::User, Scope::Project] {
        let Ok(h) = holder(agent, scope, p) else { continue };
        let (file, has) = match h {
            Holder::Settings { file, .. } | Holder::Cursor { file } => {
                let has = std::fs::read_to_string(&file).is_ok_and(|t| is_ours(&t, agent));
                (file, has)
            }
            Holder::Copilot { file } => {
                let has = std::fs::read_to_string(&file).is_ok_and(|t| is_ours(&t, agent));
                (file, has)
            }
            Holder::Plugin { file, .. } => {
                let has = std::fs::read_to_string(&file).is_ok_and(|t| t.contains("loopscope hook install"));
                (file, has)
            }
            Holder::Openclaw { dir, config } => {
                let has = dir.join("index.mjs").is_file()
                    && std::fs::read_to_string(&config).is_ok_and(|t| t.contains(&dir.display().to_string()));
                (dir, has)
            }
        };
        if has {
            out.push((scope, file));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            cwd: dir.join("project"),
            env: Box::new(|_| None),
        }
    }

    fn cmd(agent: HookAgent) -> Vec<String> {
        vec!["/opt/loop scope/loopscope".into(), "hook".into(), agent.name().into()]
    }

    #[test]
    fn installing_keeps_other_hooks_is_idempotent_and_uninstalls_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".claude/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let theirs = json!({"model": "opus", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}]}});
        std::fs::write(&file, serde_json::to_vec(&theirs).unwrap()).unwrap();
        let c = cmd(HookAgent::ClaudeCode);
        let change = plan(HookAgent::ClaudeCode, Scope::User, &p, Some(&c)).unwrap();
        assert!(
            change.lines[0].contains("'/opt/loop scope/loopscope' hook claude-code"),
            "{:?}",
            change.lines
        );
        change.apply().unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(v["model"], "opus");
        let groups = v["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "theirs kept, ours added");
        assert!(PathBuf::from(format!("{}.loopscope-backup", file.display())).is_file());
        assert!(
            plan(HookAgent::ClaudeCode, Scope::User, &p, Some(&c))
                .unwrap()
                .is_empty(),
            "twice is once"
        );
        assert_eq!(installed(HookAgent::ClaudeCode, &p).len(), 1);
        plan(HookAgent::ClaudeCode, Scope::User, &p, None)
            .unwrap()
            .apply()
            .unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(v, theirs);
        assert!(installed(HookAgent::ClaudeCode, &p).is_empty());
    }

    #[test]
    fn plugins_are_written_whole_and_removed_only_when_ours() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let c = cmd(HookAgent::Opencode);
        plan(HookAgent::Opencode, Scope::Project, &p, Some(&c))
            .unwrap()
            .apply()
            .unwrap();
        let file = p.cwd.join(".opencode/plugin/loopscope.js");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(r#"["/opt/loop scope/loopscope","hook","opencode"]"#),
            "{text}"
        );
        std::fs::write(&file, "// someone else's").unwrap();
        assert!(plan(HookAgent::Opencode, Scope::Project, &p, None).unwrap().is_empty());
    }

    #[test]
    fn a_settings_file_that_is_not_plain_json_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let file = p.home.join(".gemini/settings.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{ // comment\n}").unwrap();
        let err = plan(HookAgent::GeminiCli, Scope::User, &p, Some(&cmd(HookAgent::GeminiCli))).unwrap_err();
        assert!(err.contains("by hand"), "{err}");
    }
}
