//! Each agent's hook protocol, as the pinned versions speak it: what its
//! hook is handed on stdin (an agent-neutral [`Said`]), where its session
//! is, and how a call is refused with a reason the model reads.

use std::path::PathBuf;

use serde_json::{json, Value};

use loopscope_core::formats::detect::Kind;

/// The agents `loopscope hook` speaks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAgent {
    ClaudeCode,
    Codex,
    GeminiCli,
    QwenCode,
    Copilot,
    Cursor,
    Opencode,
    Kilo,
    Pi,
    Openclaw,
}

impl HookAgent {
    pub const ALL: [HookAgent; 10] = [
        HookAgent::ClaudeCode,
        HookAgent::Codex,
        HookAgent::GeminiCli,
        HookAgent::QwenCode,
        HookAgent::Copilot,
        HookAgent::Cursor,
        HookAgent::Opencode,
        HookAgent::Kilo,
        HookAgent::Pi,
        HookAgent::Openclaw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "claude-code",
            HookAgent::Codex => "codex",
            HookAgent::GeminiCli => "gemini-cli",
            HookAgent::QwenCode => "qwen-code",
            HookAgent::Copilot => "copilot",
            HookAgent::Cursor => "cursor",
            HookAgent::Opencode => "opencode",
            HookAgent::Kilo => "kilo",
            HookAgent::Pi => "pi",
            HookAgent::Openclaw => "openclaw",
        }
    }

    pub fn parse(name: &str) -> Result<HookAgent, String> {
        HookAgent::ALL.into_iter().find(|a| a.name() == name).ok_or_else(|| {
            let names: Vec<&str> = HookAgent::ALL.iter().map(|a| a.name()).collect();
            format!("no hook for {name:?} (one of {})", names.join(", "))
        })
    }

    /// How its transcript is read, for the agents whose hooks name one
    /// that holds the calls as the hook sees them. Codex names its rollout,
    /// but its hooks see a model's `exec_command {cmd, workdir}` as `Bash
    /// {command}`: its calls are taken from the hooks alone.
    pub fn transcript_kind(self) -> Option<Kind> {
        match self {
            HookAgent::ClaudeCode => Some(Kind::ClaudeCode),
            HookAgent::GeminiCli => Some(Kind::GeminiCliJsonl),
            HookAgent::QwenCode => Some(Kind::QwenCode),
            _ => None,
        }
    }
}

/// A tool call as a hook sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Value,
    pub id: Option<String>,
}

/// What one hook call says, whatever the agent.
#[derive(Clone, Debug, PartialEq)]
pub enum Said {
    /// A call about to run: allow it or refuse it.
    Before(Call),
    /// A call's result.
    After { call: Call, ok: bool, output: Value },
    /// The user's prompt: a new task, the session's state starts over.
    Prompt(String),
    /// Anything else: nothing to do.
    Other,
}

/// One hook call, read.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// What the session is known by (its id, else the working folder).
    pub session: String,
    /// The session's transcript, where the agent names it.
    pub transcript: Option<PathBuf>,
    pub said: Said,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Arguments given as an object, or as JSON text (Copilot CLI's `toolArgs`).
fn args_of(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
        Some(v) => v.clone(),
        None => json!({}),
    }
}

/// The session key: the first of these fields the input has, else its
/// working folder.
fn session_of(v: &Value, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| text(v, k).filter(|s| !s.is_empty()))
        .or_else(|| text(v, "cwd"))
        .or_else(|| v["workspace_roots"][0].as_str().map(str::to_string))
        .unwrap_or_else(|| "default".to_string())
}

/// Reads an agent's hook input. `event` names the hook when the agent does
/// not say it on stdin (Copilot CLI: the installed command says it).
pub fn read(agent: HookAgent, v: &Value, event: Option<&str>) -> Input {
    let event = event
        .map(str::to_string)
        .or_else(|| text(v, "hook_event_name"))
        .or_else(|| text(v, "event"))
        .unwrap_or_default();
    let transcript = text(v, "transcript_path").filter(|p| !p.is_empty()).map(PathBuf::from);
    let said = match agent {
        // Claude Code's protocol; qwen-code and Codex copy it.
        HookAgent::ClaudeCode | HookAgent::QwenCode | HookAgent::Codex => {
            let call = || Call {
                name: text(v, "tool_name").unwrap_or_default(),
                args: args_of(v.get("tool_input")),
                id: text(v, "tool_use_id").or_else(|| text(v, "tool_call_id")),
            };
            match event.as_str() {
                "PreToolUse" => Said::Before(call()),
                "PostToolUse" | "PostToolUseFailure" => Said::After {
                    call: call(),
                    ok: event == "PostToolUse",
                    output: v.get("tool_response").cloned().unwrap_or(Value::Null),
                },
                // qwen-code fires it with an empty prompt on every continuation.
                "UserPromptSubmit" => match text(v, "prompt").filter(|p| !p.trim().is_empty()) {
                    Some(p) => Said::Prompt(p),
                    None => Said::Other,
                },
                _ => Said::Other,
            }
        }
        HookAgent::GeminiCli => {
            let call = || Call {
                name: text(v, "tool_name").unwrap_or_default(),
                args: args_of(v.get("tool_input")),
                id: None,
            };
            match event.as_str() {
                "BeforeTool" => Said::Before(call()),
                "AfterTool" => {
                    let r = v.get("tool_response").cloned().unwrap_or(Value::Null);
                    let ok = r.get("error").is_none_or(Value::is_null);
                    Said::After {
                        call: call(),
                        ok,
                        output: r.get("llmContent").cloned().unwrap_or(r),
                    }
                }
                "BeforeAgent" => text(v, "prompt").map_or(Said::Other, Said::Prompt),
                _ => Said::Other,
            }
        }
        HookAgent::Copilot => {
            let call = || Call {
                name: text(v, "toolName").unwrap_or_default(),
                args: args_of(v.get("toolArgs")),
                id: None,
            };
            match event.as_str() {
                "preToolUse" => Said::Before(call()),
                "postToolUse" => {
                    let r = v.get("toolResult").cloned().unwrap_or(Value::Null);
                    let ok = !matches!(r["resultType"].as_str(), Some("failure" | "denied"));
                    Said::After {
                        call: call(),
                        ok,
                        output: r.get("textResultForLlm").cloned().unwrap_or(r),
                    }
                }
                "userPromptSubmitted" => text(v, "prompt").map_or(Said::Other, Said::Prompt),
                _ => Said::Other,
            }
        }
        HookAgent::Cursor => {
            let tool = text(v, "tool_name");
            match event.as_str() {
                "preToolUse" | "beforeMCPExecution" => Said::Before(Call {
                    name: tool.unwrap_or_default(),
                    args: args_of(v.get("tool_input")),
                    id: text(v, "tool_use_id"),
                }),
                "beforeShellExecution" => Said::Before(Call {
                    name: "Shell".into(),
                    args: json!({"command": v["command"]}),
                    id: None,
                }),
                "beforeReadFile" => Said::Before(Call {
                    name: "Read".into(),
                    args: json!({"file_path": v["file_path"]}),
                    id: None,
                }),
                "postToolUse" | "afterMCPExecution" => Said::After {
                    call: Call {
                        name: tool.unwrap_or_default(),
                        args: args_of(v.get("tool_input")),
                        id: text(v, "tool_use_id"),
                    },
                    ok: true,
                    output: v
                        .get("tool_output")
                        .or(v.get("result_json"))
                        .cloned()
                        .unwrap_or(Value::Null),
                },
                "afterShellExecution" => Said::After {
                    call: Call {
                        name: "Shell".into(),
                        args: json!({"command": v["command"]}),
                        id: None,
                    },
                    ok: true,
                    output: v.get("output").cloned().unwrap_or(Value::Null),
                },
                "beforeSubmitPrompt" => text(v, "prompt").map_or(Said::Other, Said::Prompt),
                _ => Said::Other,
            }
        }
        // The plugins loopscope writes for them (hook install) all send this.
        HookAgent::Opencode | HookAgent::Kilo | HookAgent::Pi | HookAgent::Openclaw => {
            let call = || Call {
                name: text(v, "tool").unwrap_or_default(),
                args: args_of(v.get("args")),
                id: text(v, "id"),
            };
            match event.as_str() {
                "before" => Said::Before(call()),
                "after" => Said::After {
                    call: call(),
                    ok: v["ok"].as_bool().unwrap_or(true),
                    output: v.get("output").cloned().unwrap_or(Value::Null),
                },
                "prompt" => text(v, "prompt").map_or(Said::Other, Said::Prompt),
                _ => Said::Other,
            }
        }
    };
    let session = match agent {
        HookAgent::Cursor => session_of(v, &["conversation_id"]),
        HookAgent::Copilot => session_of(v, &["sessionId", "session_id"]),
        _ => session_of(v, &["session_id", "session"]),
    };
    Input {
        session,
        transcript: transcript.filter(|_| agent.transcript_kind().is_some()),
        said,
    }
}

/// What the agent is told to refuse a call: printed on stdout, exit 0.
pub fn refusal(agent: HookAgent, event: &str, reason: &str) -> Value {
    match agent {
        HookAgent::ClaudeCode | HookAgent::QwenCode | HookAgent::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": if event.is_empty() { "PreToolUse" } else { event },
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
        HookAgent::GeminiCli => json!({"decision": "deny", "reason": reason}),
        HookAgent::Copilot => json!({"permissionDecision": "deny", "permissionDecisionReason": reason}),
        HookAgent::Cursor => json!({"permission": "deny", "user_message": reason, "agent_message": reason}),
        HookAgent::Opencode | HookAgent::Kilo | HookAgent::Pi | HookAgent::Openclaw => {
            json!({"decision": "deny", "reason": reason})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_says_a_call_its_own_way() {
        let claude = json!({"session_id": "s1", "transcript_path": "/t.jsonl", "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": "/a"}, "tool_use_id": "toolu_1"});
        let i = read(HookAgent::ClaudeCode, &claude, None);
        assert_eq!(i.session, "s1");
        assert_eq!(i.transcript, Some(PathBuf::from("/t.jsonl")));
        assert_eq!(
            i.said,
            Said::Before(Call {
                name: "Read".into(),
                args: json!({"file_path": "/a"}),
                id: Some("toolu_1".into())
            })
        );
        let copilot = json!({"timestamp": 1, "cwd": "/w", "toolName": "bash", "toolArgs": "{\"command\":\"ls\"}"});
        let i = read(HookAgent::Copilot, &copilot, Some("preToolUse"));
        assert_eq!(i.session, "/w");
        assert!(matches!(i.said, Said::Before(c) if c.args == json!({"command": "ls"})));
        let gemini = json!({"session_id": "g", "hook_event_name": "AfterTool", "tool_name": "read_file",
            "tool_input": {}, "tool_response": {"llmContent": "x", "error": "no"}});
        assert!(matches!(
            read(HookAgent::GeminiCli, &gemini, None).said,
            Said::After { ok: false, .. }
        ));
        let qwen = json!({"hook_event_name": "UserPromptSubmit", "prompt": ""});
        assert_eq!(read(HookAgent::QwenCode, &qwen, None).said, Said::Other);
        let cursor = json!({"conversation_id": "c", "hook_event_name": "beforeShellExecution", "command": "make"});
        assert!(matches!(read(HookAgent::Cursor, &cursor, None).said, Said::Before(c) if c.name == "Shell"));
    }

    #[test]
    fn refusals_are_each_agents_deny() {
        assert_eq!(
            refusal(HookAgent::ClaudeCode, "PreToolUse", "r")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        assert_eq!(refusal(HookAgent::GeminiCli, "BeforeTool", "r")["decision"], "deny");
        assert_eq!(refusal(HookAgent::Cursor, "preToolUse", "r")["permission"], "deny");
    }
}
