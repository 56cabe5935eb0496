//! `loopscope hook` inside the real agents (issue 40): each pinned agent
//! (tests/agent_pins.tsv, installed under target/agents by .ci/run) run
//! offline against the project's scripted model, with the hook put into
//! its settings by `loopscope hook install` in a temporary HOME. In a tool
//! loop the call is refused at `extended`'s threshold (the third identical
//! call with the same result), the model reads loopscope's reason, and
//! the calls after it are refused too; a clean run is untouched.

#[path = "common/real_agent.rs"]
mod real_agent;

use std::path::Path;
use std::process::Command;

use real_agent::agent_model::Script;
use real_agent::{require, run_prepared, Agent, Run, Sandbox};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");
/// What every refusal starts with (loopscope::hook::MARK).
const MARK: &str = "loopscope stopped a loop";

/// `loopscope hook install AGENT` as a user would run it, in the sandbox.
fn install(sb: &Sandbox, agent: &str) {
    let mut c = sb.command(Path::new(BIN));
    c.args(["hook", "install", agent])
        .env("CODEX_HOME", sb.home.join(".codex"));
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "hook install {agent}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("hook") || said.contains("plugin") || said.contains("written"),
        "{said}"
    );
}

/// The results loopscope reads from the run's session.
fn results(run: &Run) -> Vec<Value> {
    let files = run.sessions();
    assert_eq!(files.len(), 1, "{files:?}\n{}", run.said());
    let out = Command::new(BIN).arg("convert").arg(&files[0]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn refused(r: &Value) -> bool {
    r["ok"] == false && r["output"].to_string().contains(MARK)
}

/// The agent's own settings the hook needs beside loopscope's (Codex runs
/// untrusted hooks only when told to).
fn settings(agent: Agent) -> Option<Value> {
    match agent {
        Agent::Codex => Some(json!({"args": ["--dangerously-bypass-hook-trust"]})),
        _ => None,
    }
}

fn check(agent: Agent) {
    let Some(program) = require(agent) else { return };
    let name = agent.name();

    let looping = run_prepared(agent, &program, Script::ToolLoop(10), settings(agent), |sb| {
        install(sb, name)
    });
    let got = results(&looping);
    // Refused once three steps (call and result) would be the same:
    // the third call, or the fourth where the agent answers the first
    // read differently (Claude Code: "Wasted call — file unchanged").
    let first = got.iter().position(refused);
    assert!(
        matches!(first, Some(2 | 3)),
        "refused at the third or fourth identical call: {got:?}\n{}",
        looping.said()
    );
    let first = first.unwrap_or_default();
    assert!(
        got[..first].iter().all(|r| r["ok"] == true),
        "the calls before it ran: {got:?}"
    );
    assert!(
        got[first..].iter().all(refused),
        "every call after it is refused too: {got:?}"
    );
    // The model was told why, in the agent's own words for a tool's answer.
    let told = looping
        .model
        .asked()
        .iter()
        .any(|a| a.body.to_string().contains(MARK) && a.body.to_string().contains("the same result"));
    assert!(told, "the model receives loopscope's reason\n{}", looping.said());

    let clean = run_prepared(agent, &program, Script::Clean, settings(agent), |sb| install(sb, name));
    let got = results(&clean);
    assert!(
        !got.is_empty() && got.iter().all(|r| r["ok"] == true),
        "a clean run is untouched: {got:?}\n{}",
        clean.said()
    );
    assert!(!clean.model.asked().iter().any(|a| a.body.to_string().contains(MARK)));
}

#[test]
fn claude_code() {
    check(Agent::ClaudeCode);
}

#[test]
fn gemini_cli() {
    check(Agent::GeminiCli);
}

#[test]
fn qwen_code() {
    check(Agent::QwenCode);
}

#[test]
fn codex() {
    check(Agent::Codex);
}

#[test]
fn opencode() {
    check(Agent::Opencode);
}

#[test]
fn pi() {
    check(Agent::Pi);
}

#[test]
fn openclaw() {
    check(Agent::Openclaw);
}

#[test]
fn kilo() {
    check(Agent::Kilo);
}
