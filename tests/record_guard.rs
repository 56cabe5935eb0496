//! `loopscope record --guard` with the real agents (issue 40): Claude Code,
//! Codex and gemini-cli (pinned in tests/agent_pins.tsv, installed under
//! target/agents by `.ci/run`) run offline against the project's scripted
//! model, with `loopscope record --guard PROFILE` in between. Under a tool
//! loop (the same call with the same arguments every turn) the guard keeps
//! the looping call from the agent: the agent runs no call past the
//! detector's threshold, its answer ends normally with loopscope's words,
//! the agent's own retry of that request is ended again every time, and the
//! session is one conversation with the user's prompt. The clean script
//! passes untouched.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/real_agent.rs"]
mod real_agent;

use std::path::Path;
use std::process::Command;

use proxy::{events, Proxy};
use real_agent::agent_model::{Asked, Script, CLEAN_ANSWER};
use real_agent::{require, run_via, Agent, Run, PROMPT};
use serde_json::Value;

const STOPPED: &str = "loopscope stopped a loop: ";

/// A run of `agent` on `script` through `loopscope record --guard PROFILE`,
/// the proxy kept for what comes after.
struct Guarded {
    run: Run,
    proxy: Proxy,
    _dir: tempfile::TempDir,
}

fn guarded(agent: Agent, program: &Path, script: Script, profile: &str) -> Guarded {
    let dir = tempfile::tempdir().unwrap();
    let mut proxy = None;
    let run = run_via(agent, program, script, None, |model| {
        let p = Proxy::start(dir.path(), &["--upstream", &model.url, "--guard", profile]);
        let url = format!("http://{}", p.addr);
        proxy = Some(p);
        url
    });
    Guarded {
        run,
        proxy: proxy.expect("the proxy started"),
        _dir: dir,
    }
}

impl Guarded {
    fn said(&self) -> String {
        format!(
            "{}\n--- loopscope:\n{}",
            self.run.said(),
            self.proxy.printed().join("\n")
        )
    }

    /// The requests the model answered with tools on offer (the agent's own turns).
    fn turns(&self) -> Vec<Asked> {
        self.run
            .model
            .asked()
            .into_iter()
            .filter(|a| a.kind == "call" || a.kind == "answer")
            .collect()
    }

    /// The one session `record` wrote for the agent's task, read.
    fn session(&self) -> Vec<Value> {
        let files = self.proxy.sessions();
        assert_eq!(files.len(), 1, "one conversation: {files:?}\n{}", self.said());
        events(&files[0])
    }
}

/// How many tool results a request sends back to the model.
fn results_in(body: &Value) -> usize {
    let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    let parts = |key: &str, inner: &str| -> Vec<Value> {
        items(key)
            .iter()
            .flat_map(|m| m[inner].as_array().cloned().unwrap_or_default())
            .collect()
    };
    parts("messages", "content")
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .count()
        + items("input")
            .iter()
            .filter(|i| i["type"] == "function_call_output")
            .count()
        + parts("contents", "parts")
            .iter()
            .filter(|p| p.get("functionResponse").is_some())
            .count()
}

/// What loopscope reads from the agent's own session file.
fn agents_own(run: &Run) -> Vec<Value> {
    let files = run.sessions();
    assert_eq!(files.len(), 1, "{files:?}\n{}", run.said());
    let out = Command::new(env!("CARGO_BIN_EXE_loopscope"))
        .arg("convert")
        .arg(&files[0])
        .env_remove("LOOPSCOPE_CONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The tool loop under `profile`: stopped at the first call that would
/// make a detector fire, which the agent never gets.
fn tool_loop_stopped(agent: Agent, program: &Path, script: Script, profile: &str) {
    let g = guarded(agent, program, script, profile);
    let said = g.said();
    assert_eq!(g.run.out.status.code(), Some(0), "a normal end\n{said}");
    let turns = g.turns();
    let made = g.run.model.calls();
    let cut = turns.last().unwrap();
    // The model asked for the call every turn; the last ask was kept from
    // the agent, which then asked nothing more.
    assert!(
        made.len() >= 3 && made.len() < 6,
        "stopped near the threshold: {} calls\n{said}",
        made.len()
    );
    assert_eq!(cut.kind, "call", "{said}");
    assert_eq!(turns.len(), made.len(), "{said}");
    assert_eq!(
        results_in(&cut.body),
        made.len() - 1,
        "every call but the last ran and came back\n{said}"
    );

    // The agent's own file: the calls it ran, and loopscope's words as the
    // model's last answer.
    let own = agents_own(&g.run);
    assert_eq!(of(&own, "tool_call").len(), made.len() - 1, "{said}");
    assert_eq!(of(&own, "tool_result").len(), made.len() - 1, "{said}");
    let answer: String = of(&own, "content")
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect();
    assert!(
        answer.contains(STOPPED),
        "the agent read loopscope's words as the answer: {answer:?}\n{said}"
    );
    let stdout = String::from_utf8_lossy(&g.run.out.stdout);
    assert!(stdout.contains(STOPPED), "{said}");

    // The session: one conversation with the user's prompt, the calls that
    // ran, and the guard's note naming the call it kept back.
    let session = g.session();
    let prompts: Vec<&str> = of(&session, "prompt")
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, [PROMPT], "{said}");
    assert_eq!(of(&session, "tool_call").len(), made.len() - 1, "{said}");
    let notes = guard_notes(&session);
    assert_eq!(notes.len(), 1, "{said}");
    let note = notes[0];
    let (name, args) = made.last().unwrap();
    assert_eq!(note["withheld_call"]["name"], name.as_str(), "{said}");
    assert_eq!(&note["withheld_call"]["args"], args, "{said}");
    assert!(answer.contains(note["text"].as_str().unwrap()), "{note}\n{answer}");

    // At the threshold: what the agent ran fires nothing on the tools.
    let file = &g.proxy.sessions()[0];
    let fired: Vec<Value> = proxy::scan(profile, file)
        .into_iter()
        .filter(|d| d["channel"] == "tools")
        .collect();
    assert!(
        fired.is_empty(),
        "stopped at the first call that fires: {fired:?}\n{said}"
    );

    // The agent's retry of that request (its very bytes) is ended again,
    // every time (Claude Code retries once, gemini-cli up to five times).
    for n in 1..=5 {
        let body = serde_json::to_vec(&cut.body).unwrap();
        let got = proxy::request(
            &g.proxy.addr,
            "POST",
            &cut.path,
            &[("Content-Type", "application/json")],
            &body,
        )
        .unwrap();
        let text = String::from_utf8_lossy(&got.body);
        assert_eq!(got.status, 200, "{text}");
        assert!(text.contains(STOPPED), "retry {n} ended again: {text}");
        for call in [
            "\"tool_use\"",
            "\"function_call\"",
            "\"functionCall\"",
            "\"tool_calls\"",
        ] {
            assert!(!text.contains(call), "retry {n} got no call: {text}");
        }
        assert_eq!(guard_notes(&g.session()).len(), 1 + n, "{said}");
    }
    assert_eq!(
        g.run.model.calls().len(),
        made.len() + 5,
        "the model answered each retry with the call"
    );
}

fn guard_notes(session: &[Value]) -> Vec<&Value> {
    session.iter().filter(|e| e["kind"] == "guard").collect()
}

/// The clean script passes: one call, the answer, nothing stopped.
fn clean_passes(agent: Agent, program: &Path) {
    let g = guarded(agent, program, Script::Clean, "extended");
    let said = g.said();
    assert_eq!(g.run.out.status.code(), Some(0), "{said}");
    assert_eq!(g.run.model.calls().len(), 1, "{said}");
    let own = agents_own(&g.run);
    assert_eq!(of(&own, "tool_result").len(), 1, "{said}");
    let answer: String = of(&own, "content")
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect();
    assert!(answer.contains(CLEAN_ANSWER), "{answer:?}\n{said}");
    assert!(!answer.contains(STOPPED), "{said}");
    let session = g.session();
    assert!(guard_notes(&session).is_empty(), "{said}");
    assert_eq!(of(&session, "prompt").len(), 1, "{said}");
    assert!(!g.proxy.printed().join("\n").contains("guard:"), "{said}");
}

fn check(agent: Agent) {
    let Some(program) = require(agent) else { return };
    clean_passes(agent, &program);
    tool_loop_stopped(agent, &program, Script::ToolLoop(10), "extended");
    tool_loop_stopped(agent, &program, Script::ToolLoop(10), "seed");
    tool_loop_stopped(agent, &program, Script::FailLoop(10), "extended");
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
