//! The real agents, as people run them (issue 39): each pinned agent
//! (tests/agent_pins.tsv; `.ci/run` installs them from npm and PyPI under
//! target/agents) is run offline against the project's scripted model on
//! 127.0.0.1 with HOME in a temporary folder, and what loopscope reads from
//! the files the agent wrote is held to what happened: one prompt with the
//! user's text, every call with the exact arguments the model sent and its
//! result with the right `ok`, the tool loop, the failing loop and the text
//! loop caught by `seed` and `extended`, the clean run quiet.

#[path = "common/real_agent.rs"]
mod real_agent;

use std::process::Command;

use real_agent::agent_model::{Script, MISSING};
use real_agent::{require, run, Agent, Run, PROMPT};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");

/// What loopscope read from a run's session.
struct Read {
    events: Vec<Value>,
    seed: Vec<Value>,
    extended: Vec<Value>,
}

impl Read {
    fn of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }
}

fn loopscope(args: &[&str], file: &std::path::Path) -> (Vec<Value>, String, Option<i32>) {
    let out = Command::new(BIN)
        .args(args)
        .arg(file)
        .env_remove("LOOPSCOPE_CONFIG")
        .output()
        .unwrap();
    let values = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (
        values,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// The session the run wrote, read: exactly one, in the agent's format,
/// without a bad line or a record loopscope does not know.
fn read(run: &Run) -> Read {
    let files = run.sessions();
    assert_eq!(files.len(), 1, "one session file: {files:?}\n{}", run.said());
    let file = &files[0];
    let (events, err, code) = loopscope(&["convert"], file);
    assert_eq!(code, Some(0), "convert {}: {err}\n{}", file.display(), run.said());
    assert!(
        !err.contains("warning"),
        "the agent's own file reads without a warning: {err}\n{}",
        run.said()
    );
    assert_eq!(events[0]["source"], run.agent.format(), "{}", run.said());
    let (seed, _, _) = loopscope(&["scan", "--json", "--profile", "seed"], file);
    let (extended, _, _) = loopscope(&["scan", "--json", "--profile", "extended"], file);
    Read { events, seed, extended }
}

/// The user's words, once: the only prompt (mini-swe-agent sends the task
/// inside its own template).
fn one_prompt(run: &Run, r: &Read) {
    let prompts: Vec<&str> = r
        .of("prompt")
        .iter()
        .map(|p| p["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(prompts.len(), 1, "{prompts:?}\n{}", run.said());
    if run.agent == Agent::MiniSwe {
        assert!(prompts[0].contains(PROMPT), "{prompts:?}");
    } else {
        assert_eq!(prompts[0], PROMPT, "{}", run.said());
    }
}

/// Every call the file holds is one the model made, with the same
/// arguments, and has its result with the `ok` expected.
fn calls_as_made(run: &Run, r: &Read, ok: bool, at_least: usize) {
    let made = run.model.calls();
    let calls = r.of("tool_call");
    let results = r.of("tool_result");
    assert!(
        calls.len() >= at_least,
        "{} calls read, {} made\n{}",
        calls.len(),
        made.len(),
        run.said()
    );
    if run.agent != Agent::Aider {
        for c in &calls {
            let name = c["name"].as_str().unwrap();
            // mini-swe-agent's submit ends the run: it has no result.
            assert!(
                made.iter().any(|(n, a)| n == name && *a == c["args"]),
                "{c} was not made by the model: {made:?}"
            );
        }
    }
    let submits = calls
        .iter()
        .filter(|c| {
            c["args"]["command"]
                .as_str()
                .is_some_and(|s| s.contains("COMPLETE_TASK"))
        })
        .count();
    assert_eq!(
        results.len() + submits,
        calls.len(),
        "a result for every call\n{}",
        run.said()
    );
    let oks: Vec<bool> = results.iter().map(|x| x["ok"].as_bool().unwrap()).collect();
    assert!(
        oks.iter().all(|o| *o == ok),
        "every result ok: {ok} ({oks:?})\n{}",
        run.said()
    );
}

fn fired(run: &Run, r: &Read, channel: &[&str]) {
    for (profile, found) in [("seed", &r.seed), ("extended", &r.extended)] {
        assert!(
            found
                .iter()
                .any(|d| channel.contains(&d["channel"].as_str().unwrap_or_default())),
            "{profile} catches the loop on {channel:?}: {found:?}\n{}",
            run.said()
        );
    }
}

fn quiet(run: &Run, r: &Read) {
    assert!(
        r.seed.is_empty() && r.extended.is_empty(),
        "seed {:?} extended {:?}\n{}",
        r.seed,
        r.extended,
        run.said()
    );
}

/// The agent's own settings for a script (gemini-cli's detection cuts a
/// text loop out of its file: it is switched off where the loop must be
/// recorded to be read).
fn settings(agent: Agent, script: Script) -> Option<Value> {
    match (agent, script) {
        (Agent::GeminiCli, Script::TextLoop) => Some(json!({"model": {"disableLoopDetection": true}})),
        _ => None,
    }
}

fn check(agent: Agent) {
    let Some(program) = require(agent) else { return };
    let go = |script: Script| run(agent, &program, script, settings(agent, script));

    let clean = go(Script::Clean);
    let r = read(&clean);
    one_prompt(&clean, &r);
    calls_as_made(&clean, &r, true, 1);
    quiet(&clean, &r);

    let tools = go(Script::ToolLoop(10));
    let r = read(&tools);
    one_prompt(&tools, &r);
    // aider's loop: an edit that does not match, refused and asked again.
    let ok = agent != Agent::Aider;
    calls_as_made(&tools, &r, ok, 3);
    fired(&tools, &r, &["tools"]);
    if agent == Agent::GeminiCli {
        // Its own detection cut the fifth call: the file says so.
        assert!(
            r.events.iter().any(|e| e["kind"] == "agent_loop_detection"),
            "gemini-cli's own detection is read\n{}",
            tools.said()
        );
    }

    if agent != Agent::Aider {
        let failing = go(Script::FailLoop(10));
        let r = read(&failing);
        one_prompt(&failing, &r);
        calls_as_made(&failing, &r, false, 3);
        assert!(r
            .of("tool_call")
            .iter()
            .any(|c| c["args"].to_string().contains(MISSING)));
        fired(&failing, &r, &["tools"]);
    }

    let text = go(Script::TextLoop);
    let r = read(&text);
    one_prompt(&text, &r);
    assert!(
        r.of("tool_call").is_empty() || agent == Agent::MiniSwe,
        "{}",
        text.said()
    );
    fired(&text, &r, &["reasoning", "content"]);
}

#[test]
fn claude_code() {
    check(Agent::ClaudeCode);
}

#[test]
fn codex() {
    check(Agent::Codex);
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
fn opencode() {
    check(Agent::Opencode);
}

#[test]
fn kilo() {
    check(Agent::Kilo);
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
fn aider() {
    check(Agent::Aider);
}

#[test]
fn mini_swe_agent() {
    check(Agent::MiniSwe);
}

#[test]
fn openhands() {
    check(Agent::Openhands);
}
