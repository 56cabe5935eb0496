//! The peer profiles against their originals (issue 42). `openclaw`: generated
//! sessions (benches/peers/gen_openclaw.py: few tools, few argument and
//! result variants, batches, missing results, prompts, compactions, CJK and
//! emoji) go through the unmodified `dist/tool-loop-detection-*.mjs` of the
//! pinned openclaw package under the pinned Node 24, driven by its caller's
//! rules (benches/peers/openclaw_original.mjs), and through
//! `loopscope scan --json --profile openclaw`; every session must give the
//! same detections: the same events, rules and levels. `vllm` and
//! `openhands`: benches/peers/bench.py's random agreement checks. Outside CI
//! a missing node24/openclaw (or python3) prints "skipped"; in CI it is a
//! failure.

#[path = "common/real_agent.rs"]
mod real_agent;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use real_agent::{program, require, Agent};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_loopscope");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI must have python3");
        println!("skipped: python3 is not installed (it writes the generated sessions)");
    }
    ok.then_some("python3")
}

/// The original's module folder, next to the pinned openclaw's program.
fn dist(openclaw: &Path) -> PathBuf {
    openclaw.parent().expect("node_modules/openclaw").join("dist")
}

/// The rule names of OpenClaw's module, as the profile's detector ids spell them.
fn our_id(detector: &str, level: &str) -> String {
    let stem = match detector {
        "generic_repeat" => "generic-repeat",
        "known_poll_no_progress" => "known-poll",
        "ping_pong" => "ping-pong",
        "argument_churn" => "argument-churn",
        "unknown_tool_repeat" => "unknown-tool",
        "global_circuit_breaker" => "global-breaker",
        other => panic!("a rule the test does not know: {other}"),
    };
    let level = if level == "critical" { "block" } else { "warning" };
    format!("openclaw-{stem}-{level}")
}

type Verdicts = BTreeMap<usize, Vec<(usize, String)>>;

/// Every session through the original at once (one node process; each file
/// is a session with fresh state): file -> [(event, our id)].
fn original(node: &Path, openclaw: &Path, files: &[PathBuf]) -> Verdicts {
    let out = Command::new(node)
        .arg(root().join("benches/peers/openclaw_original.mjs"))
        .arg(dist(openclaw))
        .args(files)
        .env("OPENCLAW_LOG_LEVEL", "silent")
        .output()
        .expect("node runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut v = Verdicts::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(doc) = line.strip_prefix("@@") else { continue };
        let d: Value = serde_json::from_str(doc).unwrap();
        let Some(file) = d["file"].as_u64() else { continue };
        let id = our_id(d["detector"].as_str().unwrap(), d["level"].as_str().unwrap());
        v.entry(file as usize)
            .or_default()
            .push((d["event"].as_u64().unwrap() as usize, id));
    }
    v
}

/// loopscope's detections of one session: [(event, detector)], without the
/// post-compaction guard, which lives outside OpenClaw's module (the
/// original script does not run it).
fn ours(file: &Path) -> Vec<(usize, String)> {
    real_agent::loopscope_json(&["scan", "--json", "--profile", "openclaw"], file)
        .into_iter()
        .filter(|d| d["detector"] != "openclaw-compaction-abort")
        .filter_map(|d| Some((d["event"].as_u64()? as usize, d["detector"].as_str()?.to_string())))
        .collect()
}

#[test]
fn profile_openclaw_fires_where_openclaws_own_module_does() {
    let Some(openclaw) = require(Agent::Openclaw) else {
        return;
    };
    let Some(python) = python() else { return };
    let node = program("node24").expect("node24 comes with openclaw");
    let dir = tempfile::tempdir().unwrap();
    // Many short sessions and a few long ones (the warning buckets and the
    // 30-call breaker need length).
    for (first, count, calls) in [("0", "200", "60"), ("1000", "40", "400")] {
        let status = Command::new(python)
            .arg(root().join("benches/peers/gen_openclaw.py"))
            .args(["--dir"])
            .arg(dir.path())
            .args([first, count, calls])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 240);
    let want = original(&node, &openclaw, &files);
    let (mut agree, mut fired, mut bad) = (0, 0, Vec::new());
    for (i, file) in files.iter().enumerate() {
        let mut w = want.get(&i).cloned().unwrap_or_default();
        let mut g = ours(file);
        w.sort();
        g.sort();
        fired += w.len();
        if w == g {
            agree += 1;
        } else if bad.len() < 5 {
            bad.push(format!("{}: original {w:?}\n  loopscope {g:?}", file.display()));
        }
    }
    println!(
        "{agree}/{} sessions agree with OpenClaw's module ({fired} detections)",
        files.len()
    );
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        files.len() - agree,
        files.len(),
        bad.join("\n")
    );
    // The generated sessions do make the rules fire (a test that compares
    // nothing with nothing proves nothing).
    assert!(fired > 200, "only {fired} detections");
    let rules: std::collections::BTreeSet<&str> = want.values().flatten().map(|(_, id)| id.as_str()).collect();
    assert!(rules.len() >= 5, "rules seen: {rules:?}");
}

/// benches/peers/bench.py's random agreement check for one profile, run
/// against this build.
fn bench_check(python: &str, profile: &str, extra: &[&str]) -> String {
    let out = Command::new(python)
        .arg(root().join("benches/peers/bench.py"))
        .args(["check", "--only", profile, "--cases", "300", "--bin", BIN])
        .args(extra)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{said}");
    assert!(out.status.success(), "{said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("300/300 agree"), "{said}");
    said.into_owned()
}

/// vLLM 0.33.0's `check_sequence_repetition` (copied unchanged into
/// benches/peers/originals.py; plain Python) against profile `vllm` on 300
/// random token streams and parameter sets.
#[test]
fn profile_vllm_stops_where_vllms_own_check_does() {
    let Some(python) = python() else { return };
    bench_check(python, "vllm", &[]);
}

/// The OpenHands SDK 1.58.2's own StuckDetector over its own pydantic
/// events (benches/peers/openhands_sdk.py, run by the Python 3.12 venv that
/// .ci/install-agents makes for tests/agent_pins.tsv's `openhands` row)
/// against profile `openhands` on 300 random streams and thresholds; and
/// the plain-class stand-in (benches/peers/originals.py) the same way, so
/// the stand-in's numbers in bench.py stay the SDK's.
#[test]
fn profile_openhands_stops_where_the_sdks_detector_does() {
    let Some(python) = python() else { return };
    bench_check(python, "openhands", &["--stand-in"]);
    let Some(sdk) = program("openhands") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have the OpenHands SDK under target/agents"
        );
        println!("skipped: the OpenHands SDK is not installed under target/agents (.ci/install-agents)");
        return;
    };
    let sdk = sdk.display().to_string();
    let said = bench_check(python, "openhands", &["--sdk-python", &sdk]);
    assert!(!said.contains("STAND-IN"), "the real SDK ran: {said}");
}
