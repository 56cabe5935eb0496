//! A real agent through `loopscope record` (issue 27): OpenAI's Codex CLI
//! (`@openai/codex` from npm, pinned in tests/agent_pins.tsv; `.ci/run`
//! installs it under target/agents, LOOPSCOPE_TEST_CODEX names another) run non-interactively with `codex
//! exec` against the scripted upstream, offline. Its provider's base URL
//! is taken from the OPENAI_BASE_URL that `record` gives it.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/upstream.rs"]
mod upstream;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use proxy::{events, scan};
use upstream::Upstream;

fn codex() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("LOOPSCOPE_TEST_CODEX").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/agents/codex/node_modules/.bin/codex")),
    ];
    candidates.into_iter().flatten().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `loopscope record -o DIR [ARGS] -- sh -c 'codex exec … PROMPT'`: its output and the session files.
fn record_codex(
    codex: &PathBuf,
    up: &Upstream,
    args: &[&str],
    prompt: &str,
) -> (std::process::Output, Vec<PathBuf>, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("codex-home");
    std::fs::create_dir(&home).unwrap();
    let sessions = work.path().join("sessions");
    // Codex reads its provider from its config; the shell puts the proxy's URL in it.
    let script = r#"exec "$CODEX" exec --skip-git-repo-check --sandbox read-only -m gpt-5-scripted \
  -c "model_providers.recorded={name=\"recorded\",base_url=\"$OPENAI_BASE_URL\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}" \
  -c model_provider=recorded "$PROMPT" < /dev/null"#;
    let out = common::loopscope_at_root()
        .args(["record", "-o"])
        .arg(&sessions)
        .args(args)
        .args(["--", "sh", "-c", script])
        .current_dir(work.path())
        .env("CODEX", codex)
        .env("CODEX_HOME", &home)
        .env("PROMPT", prompt)
        .env("OPENAI_API_KEY", "sk-codex-SECRET")
        .env("OPENAI_BASE_URL", format!("{}/v1", up.url))
        .output()
        .unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    (out, files, work)
}

#[test]
fn codex_exec_is_recorded_and_its_loop_is_stopped() {
    let Some(codex) = codex() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the Codex CLI (see .ci/run)"
        );
        eprintln!("skipped: no codex here (.ci/install-agents installs it)");
        return;
    };
    let up = Upstream::start();
    let (out, files, _work) = record_codex(&codex, &up, &[], "clean: what is six times seven?");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("The answer is 42"), "{stdout}\n{stderr}");
    assert_eq!(files.len(), 1, "{stderr}");
    let recorded = events(&files[0]);
    assert_eq!(recorded[0]["api"], "openai-responses");
    let prompt = recorded.iter().find(|e| e["type"] == "prompt").expect("the prompt");
    assert_eq!(prompt["text"], "clean: what is six times seven?");
    let content: String = recorded
        .iter()
        .filter(|e| e["type"] == "content")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(content.ends_with("The answer is 42 — 答案是四十二 🎉."), "{content}");
    assert!(files[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .ends_with("-gpt-5-scripted.jsonl"));

    // The same agent, looping: the guard ends the response, Codex ends its turn normally.
    *up.pause.lock().unwrap() = Duration::from_millis(1);
    let (out, files, _work) = record_codex(&codex, &up, &["--guard", "extended"], "loop: count the rows");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("loopscope: guard: "), "{stderr}");
    let served = up.wait_for("loop: count the rows");
    assert!(!served.complete, "the upstream request was closed");
    let recorded = events(&files[0]);
    let note = recorded
        .iter()
        .find(|e| e["kind"] == "guard")
        .expect("the guard's note");
    let scanned = scan("extended", &files[0]);
    assert_eq!(scanned[0]["event"], note["detection_event"]);
    assert!(!stderr.contains("SECRET") && !std::fs::read_to_string(&files[0]).unwrap().contains("SECRET"));
    // Codex asked once and did not retry the ended response.
    assert_eq!(
        up.served()
            .iter()
            .filter(|s| s.prompt.contains("count the rows"))
            .count(),
        1
    );
}
