//! The `loopscope` binary: output fields, exit codes and bad input (cli.md).

mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use loopscope_core::Event;
use serde_json::Value;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The binary with no user config in reach.
    fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("loopscope").unwrap();
        c.env_remove("LOOPSCOPE_CONFIG")
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg"))
            .env("HOME", self.dir.path().join("home"))
            .current_dir(self.dir.path());
        c
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn stream(&self, name: &str, events: &[Event]) -> PathBuf {
        let text: String = events.iter().map(|e| e.to_json().to_string() + "\n").collect();
        self.write(name, &text)
    }
}

fn sentence_loop() -> Vec<Event> {
    let mut text = String::new();
    let mut i = 0;
    while text.chars().count() < 2100 {
        text += &format!("Sentence number {i} is about something else. ");
        i += 1;
    }
    text += &"Check the config again. Run the tests again. ".repeat(40);
    let chars: Vec<char> = text.chars().collect();
    let mut events = vec![Event::prompt("fix"), Event::request()];
    events.extend(
        chars
            .chunks(20)
            .map(|c| Event::reasoning(&c.iter().collect::<String>())),
    );
    events
}

fn clean() -> Vec<Event> {
    vec![
        Event::prompt("hi"),
        Event::request(),
        Event::reasoning("All good. "),
        Event::content("Done."),
    ]
}

fn stdout_json(out: &[u8]) -> Vec<Value> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

#[test]
fn scan_json_has_the_documented_fields_and_exit_1() {
    let env = Env::new();
    env.stream("loop.jsonl", &sentence_loop());
    let out = env
        .cmd()
        .args(["scan", "--json", "loop.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let lines = stdout_json(&out.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let d = &lines[0];
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(
        &keys[..12],
        &[
            "type",
            "schema",
            "file",
            "detector",
            "event",
            "channel",
            "at_char",
            "checkpoint",
            "period",
            "matches",
            "threshold",
            "spans"
        ]
    );
    assert_eq!(d["type"], "detection");
    assert_eq!(d["schema"], 1);
    assert_eq!(d["file"], "loop.jsonl");
    assert_eq!(d["detector"], "block-cycle");
    assert_eq!(d["channel"], "reasoning");
    assert_eq!(d["checkpoint"], 3000);
    assert_eq!(d["period"], 2);
    assert_eq!(d["at_char"], 3000);
    assert_eq!(d["event"], 2 + 3000 / 20 - 1);
    let spans = d["spans"].as_array().unwrap();
    assert_eq!(spans.len() as u64, d["matches"].as_u64().unwrap() + 2);
    assert!(spans.iter().all(|s| s.as_array().unwrap().len() == 2));
    assert!(d["reason"].as_str().unwrap().starts_with("2 blocks repeat:"));
    assert!(out.stderr.is_empty());
}

#[test]
fn tool_detections_have_events_and_a_null_at_char() {
    let env = Env::new();
    let mut events = vec![Event::prompt("p")];
    for _ in 0..5 {
        events.push(common::tool("read_file", r#"{"path":"a.rs"}"#));
        events.push(Event::tool_result(true));
    }
    env.stream("tools.jsonl", &events);
    let out = env
        .cmd()
        .args(["scan", "--json", "--profile", "gemini-cli", "tools.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let d = &stdout_json(&out.stdout)[0];
    assert_eq!(d["detector"], "tool-repeat");
    assert_eq!(d["channel"], "tools");
    assert_eq!(d["at_char"], Value::Null);
    assert_eq!(d["events"], serde_json::json!([1, 3, 5, 7, 9]));
}

#[test]
fn a_clean_stream_exits_0() {
    let env = Env::new();
    env.stream("ok.jsonl", &clean());
    env.cmd()
        .args(["scan", "ok.jsonl"])
        .assert()
        .code(0)
        .stdout("ok.jsonl: no detections (4 events)\n");
    env.cmd()
        .args(["scan", "--json", "ok.jsonl"])
        .assert()
        .code(0)
        .stdout("");
}

#[test]
fn a_missing_file_is_one_line_and_exit_2() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["scan", "nope.jsonl"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err, "loopscope: nope.jsonl: no such file or directory\n");
    assert!(out.stdout.is_empty());
    // A directory is scanned (issue 15); an empty one says so, and a scan
    // of nothing is no clean scan.
    std::fs::create_dir_all(env.dir.path().join("empty")).unwrap();
    env.cmd()
        .args(["scan", "empty"])
        .assert()
        .code(2)
        .stderr("loopscope: empty: no files to scan\n");
}

#[test]
fn other_files_are_still_scanned_when_one_is_missing() {
    let env = Env::new();
    env.stream("loop.jsonl", &sentence_loop());
    let out = env
        .cmd()
        .args(["scan", "--json", "nope.jsonl", "loop.jsonl"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out.stdout).len(), 1);
}

#[test]
fn bad_lines_are_warnings_on_stderr_with_line_numbers() {
    let env = Env::new();
    let mut text: String = sentence_loop().iter().map(|e| e.to_json().to_string() + "\n").collect();
    text.insert_str(0, "{\"type\":\"prompt\"\n");
    text.push_str("[1]\n\u{1b}[31mnot json\n{\"type\":\"reasoning\",\"text\":\"half");
    env.write("bad.jsonl", &text);
    let out = env
        .cmd()
        .args(["scan", "--json", "bad.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out.stdout).len(), 1, "bad lines never reach stdout");
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    let n = sentence_loop().len();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines[0].starts_with("loopscope: warning: bad.jsonl: line 1: not valid JSON"),
        "{err}"
    );
    assert!(lines[1].starts_with(&format!(
        "loopscope: warning: bad.jsonl: line {}: expected a JSON object",
        n + 2
    )));
    assert!(lines[2].contains(&format!("line {}:", n + 3)));
    assert!(
        lines[3].contains(&format!("line {}:", n + 4)),
        "the unterminated last line is read too"
    );
    assert!(!err.contains('\u{1b}'), "escape characters from the log are not echoed");
}

#[test]
fn human_output_is_aligned_and_names_the_reason() {
    let env = Env::new();
    let mut events = sentence_loop();
    for _ in 0..5 {
        events.push(Event::tool_result(false));
    }
    env.stream("two.jsonl", &events);
    let out = env
        .cmd()
        .args(["scan", "two.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    let streak = sentence_loop().len() + 4;
    assert!(
        lines[0].starts_with("two.jsonl event 151 line 152  block-cycle   reasoning@3000  2 blocks repeat"),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "two.jsonl event {streak} line {}  error-streak  tools           5 tool results in a row failed",
            streak + 1
        )),
        "{text}"
    );
}

#[test]
fn set_config_and_detectors_change_what_runs() {
    let env = Env::new();
    env.stream("loop.jsonl", &sentence_loop());
    env.cmd()
        .args(["scan", "loop.jsonl", "--set", "block-cycle.min_matches=100"])
        .assert()
        .code(0);
    env.cmd()
        .args(["scan", "loop.jsonl", "--detectors", "list-cycle,short-repeat"])
        .assert()
        .code(0);
    env.write("strict.toml", "[block-cycle]\nmin_matches = 100\n");
    env.cmd()
        .args(["scan", "loop.jsonl", "--config", "strict.toml"])
        .assert()
        .code(0);
    // --set wins over the config file.
    env.cmd()
        .args([
            "scan",
            "loop.jsonl",
            "--config",
            "strict.toml",
            "--set",
            "block-cycle.min_matches=6",
        ])
        .assert()
        .code(1);
    // The config is found through $LOOPSCOPE_CONFIG and in XDG_CONFIG_HOME.
    env.cmd()
        .args(["scan", "loop.jsonl"])
        .env("LOOPSCOPE_CONFIG", "strict.toml")
        .assert()
        .code(0);
    let xdg = env.dir.path().join("xdg/loopscope");
    std::fs::create_dir_all(&xdg).unwrap();
    std::fs::write(xdg.join("config.toml"), "[block-cycle]\nmin_matches = 100\n").unwrap();
    env.cmd().args(["scan", "loop.jsonl"]).assert().code(0);
}

#[test]
fn configuration_mistakes_exit_2_with_a_message() {
    let env = Env::new();
    env.stream("loop.jsonl", &sentence_loop());
    let cases: &[(&[&str], &str)] = &[
        (
            &["--set", "block-cycle.min_match=3"],
            "block-cycle has no parameter \"min_match\"",
        ),
        (&["--set", "block-cycle.min_matches=abc"], "expected a whole number"),
        (&["--detectors", "nope"], "unknown detector \"nope\""),
        (
            &["--profile", "gemini-cli", "--detectors", "block-cycle"],
            "not in profile gemini-cli",
        ),
        (&["--config", "missing.toml"], "cannot read config missing.toml"),
        (&["--profile", "extended-plus"], "unknown profile \"extended-plus\""),
    ];
    for (args, msg) in cases {
        let out = env
            .cmd()
            .arg("scan")
            .arg("loop.jsonl")
            .args(*args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    env.write("bad.toml", "[block-cycle]\nmin_matches = 0\n");
    let out = env
        .cmd()
        .args(["scan", "loop.jsonl", "--config", "bad.toml"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "loopscope: config bad.toml: [block-cycle] min_matches: must be at least 1, got 0\n"
    );
}

#[test]
fn stdin_can_be_scanned() {
    let env = Env::new();
    let text: String = sentence_loop().iter().map(|e| e.to_json().to_string() + "\n").collect();
    let out = env
        .cmd()
        .args(["scan", "--json", "-"])
        .write_stdin(text)
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out.stdout)[0]["file"], "-");
}

#[test]
fn the_input_file_is_never_written() {
    let env = Env::new();
    let f = env.stream("loop.jsonl", &sentence_loop());
    let before = (
        std::fs::read(&f).unwrap(),
        std::fs::metadata(&f).unwrap().modified().unwrap(),
    );
    env.cmd().args(["scan", "loop.jsonl"]).assert().code(1);
    // Commands that write refuse to write over what they read.
    env.cmd()
        .args(["replay-into", "loop.jsonl", "./loop.jsonl"])
        .assert()
        .code(2)
        .stderr("loopscope: ./loop.jsonl: is the same file as the input loop.jsonl; refusing to write over it\n");
    let after = (
        std::fs::read(&f).unwrap(),
        std::fs::metadata(&f).unwrap().modified().unwrap(),
    );
    assert_eq!(before, after);
}

#[test]
fn detectors_lists_rules_parameters_and_profile_defaults() {
    let env = Env::new();
    let out = env.cmd().arg("detectors").assert().code(0).get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("profile seed (11 detectors)"), "{text}");
    assert!(text.contains("max_cycle"), "{text}");
    assert!(text.contains("(gemini-cli: 5)"), "{text}");
    let out = env
        .cmd()
        .args([
            "detectors",
            "--json",
            "--profile",
            "gemini-cli",
            "--set",
            "chunk-chant.threshold=12",
        ])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v["detectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["tool-repeat", "chunk-chant", "llm-judge"]);
    let threshold = &v["detectors"][1]["params"][1];
    assert_eq!(threshold["name"], "threshold");
    assert_eq!(threshold["value"], 12);
    assert_eq!(threshold["defaults"]["gemini-cli"], 10);
}

#[test]
fn the_default_config_round_trips() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["detectors", "--print-default-config", "--profile", "gemini-cli"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    env.write("default.toml", std::str::from_utf8(&out.stdout).unwrap());
    let again = env
        .cmd()
        .args(["detectors", "--print-default-config", "--config", "default.toml"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    assert_eq!(out.stdout, again.stdout);
}

#[test]
fn the_viewer_without_a_terminal_says_so_and_exits_2() {
    let env = Env::new();
    for args in [&[][..], &["view", "-"][..]] {
        let out = env
            .cmd()
            .args(args)
            .write_stdin("")
            .assert()
            .code(2)
            .get_output()
            .clone();
        assert_eq!(
            String::from_utf8(out.stderr).unwrap(),
            "loopscope: the viewer needs a terminal; for headless output use `loopscope scan`\n"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn viewing_a_missing_file_is_one_line_and_exit_2() {
    let env = Env::new();
    for args in [&["nope.jsonl"][..], &["view", "nope.jsonl"][..]] {
        env.cmd()
            .args(args)
            .assert()
            .code(2)
            .stderr("loopscope: nope.jsonl: no such file or directory\n");
    }
}

#[test]
fn a_bad_flag_exits_2() {
    let env = Env::new();
    env.cmd().args(["scan", "--frobnicate", "x"]).assert().code(2);
    env.cmd().args(["scan"]).assert().code(2);
}

#[test]
fn a_typed_line_with_bad_fields_still_counts_as_an_event() {
    let env = Env::new();
    let events = sentence_loop();
    let mut text: String = events.iter().map(|e| e.to_json().to_string() + "\n").collect();
    // After the request: an event with a broken field keeps its index, so the detection moves by one.
    let at = text.match_indices('\n').nth(1).unwrap().0 + 1;
    text.insert_str(at, "{\"type\":\"reasoning\",\"text\":5}\n");
    env.write("typed.jsonl", &text);
    let out = env
        .cmd()
        .args(["scan", "--json", "typed.jsonl"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert_eq!(stdout_json(&out.stdout)[0]["event"], 2 + 3000 / 20);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "loopscope: warning: typed.jsonl: line 3: `reasoning` event: `text` must be a string, not a number; kept as an unreadable `reasoning` event\n"
    );
}

#[test]
fn whole_documents_name_events_without_lines() {
    let env = Env::new();
    // A Gemini response array on one line: every event on line 1.
    let calls: Vec<String> = (0..6)
        .map(|_| {
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"ls","args":{"d":"."}}}]}}]}"#.to_string()
        })
        .collect();
    env.write("g.json", &format!("[{}]", calls.join(",")));
    let out = env.cmd().args(["scan", "g.json"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("g.json event "), "{text}");
    assert!(!text.contains(" line "), "{text}");
}

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.cmd().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("loopscope") && text.contains("screenshot"),
            "{shell}: {text}"
        );
        if shell == "bash" {
            let script = env.write("loopscope.bash", &text);
            let ok = std::process::Command::new("bash")
                .arg("-n")
                .arg(&script)
                .status()
                .unwrap();
            assert!(ok.success(), "the bash script parses");
        }
    }
    let out = env.cmd().arg("man").output().unwrap();
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.starts_with(".ie") && page.contains(".TH loopscope 1"), "{page}");
    assert!(page.contains("completions"), "subcommands are listed");
}

/// One real page: every command with its options, the viewer's keys made
/// from the keymap tables, exit status, environment, files, examples, and
/// no reference to a page that does not exist.
#[test]
fn the_man_page_is_whole_and_refers_to_no_missing_page() {
    let env = Env::new();
    let out = env.cmd().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "KEYS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "EXAMPLES",
    ] {
        assert!(page.contains(&format!(".SH {section}\n")), "no {section} section");
    }
    // Each command and its own options are here, not in pages of their own.
    for sub in [
        "view",
        "tail",
        "scan",
        "watch",
        "report",
        "tune",
        "judge",
        "convert",
        "screenshot",
        "replay\\-into",
    ] {
        assert!(page.contains(&format!(".SS \\fBloopscope {sub}\\fR")), "{sub} missing");
    }
    assert!(
        page.contains("\\fB\\-\\-vary\\fR \\fIID.PARAM=VALUES\\fR"),
        "tune's own option"
    );
    let refs = regex::Regex::new(r"[A-Za-z\\-]+\([1-9]\)").unwrap();
    let found: Vec<&str> = refs.find_iter(&page).map(|m| m.as_str()).collect();
    assert!(found.is_empty(), "references to other pages: {found:?}");
    // KEYS is the keymap: every binding of every section, with its keys.
    for section in loopscope::tui::help::sections() {
        for b in section.bindings {
            let keys = loopscope::tui::keymap::keys_label(b)
                .replace('\\', "\\e")
                .replace('-', "\\-");
            assert!(
                page.contains(&format!(".TP\n\\fB{keys}\\fR\n{}\n", b.description)),
                "{keys}: {}",
                b.description
            );
        }
    }
    for (keys, _) in loopscope::tui::watch_list::KEYS {
        assert!(page.contains(&keys.replace('-', "\\-")), "watch's {keys}");
    }
    for needle in [
        "LOOPSCOPE_CONFIG",
        "NO_COLOR",
        "LOOPSCOPE_CODEX_DIR",
        "~/.claude/projects",
        "~/.codex/sessions",
    ] {
        assert!(
            page.contains(&needle.replace('-', "\\-")) || page.contains(needle),
            "{needle}"
        );
    }
    // It renders where a man is installed.
    let man = std::process::Command::new("man").arg("--version").output();
    if man.is_ok_and(|o| o.status.success()) {
        let file = env.write("loopscope.1", &page);
        let shown = std::process::Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(text.contains("EXIT STATUS") && text.contains("KEYS"), "{text}");
    }
}

/// Completion scripts offer agent names for --agent and --latest, and the
/// detector ids for --detectors; those flags still take what they took.
#[test]
fn completions_offer_agents_and_detector_ids() {
    let env = Env::new();
    let out = env.cmd().args(["completions", "bash"]).output().unwrap();
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(
        script.contains(
            "claude-code codex gemini-cli qwen-code cline roo-code pi opencode kilo copilot openhands goose crush openclaw all"
        ),
        "--agent"
    );
    // --latest (view's and tail's) takes all too: the newest session of any agent.
    let latest: Vec<&str> = script
        .split("--latest)")
        .skip(1)
        .filter_map(|after| after.lines().nth(1))
        .collect();
    assert_eq!(latest.len(), 2, "view's and tail's --latest");
    for offered in latest {
        assert!(offered.contains("goose crush openclaw all\""), "--latest: {offered}");
    }
    let ids: Vec<&str> = loopscope_core::detect::DETECTORS.iter().map(|d| d.id).collect();
    assert!(script.contains(&ids.join(" ")), "--detectors offers every id");
    let out = env.cmd().args(["completions", "fish"]).output().unwrap();
    let fish = String::from_utf8(out.stdout).unwrap();
    assert!(fish.contains("-l detectors") && fish.contains("tool-repeat"), "{fish}");
    // The values are still taken as typed: a list, a folder.
    let demo = format!("{}/sample-logs/demo.jsonl", env!("CARGO_MANIFEST_DIR"));
    let out = env
        .cmd()
        .args(["scan", "--detectors", "block-cycle,list-cycle", &demo])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = env.cmd().args(["scan", "--detectors", "nope", &demo]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown detector \"nope\""));
}

#[test]
fn two_files_for_the_viewer_get_a_hint_not_a_parse_error() {
    let env = Env::new();
    for args in [vec!["a.jsonl", "b.jsonl"], vec!["view", "a.jsonl", "b.jsonl"]] {
        let out = env.cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("one stream at a time") && err.contains("loopscope scan a.jsonl b.jsonl"),
            "{err}"
        );
    }
}

#[test]
fn a_folder_for_the_viewer_points_to_watch_and_scan() {
    let env = Env::new();
    std::fs::create_dir(env.dir.path().join("runs")).unwrap();
    for args in [vec!["runs"], vec!["view", "runs"]] {
        let out = env.cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("runs is a folder")
                && err.contains("loopscope watch runs")
                && err.contains("loopscope scan runs"),
            "{err}"
        );
    }
}

#[test]
fn text_lines_read_tool_arguments_as_text_and_json_keeps_them_exact() {
    let env = Env::new();
    let file = format!("{}/sample-logs/identical-tool-calls.jsonl", env!("CARGO_MANIFEST_DIR"));
    let out = env
        .cmd()
        .args(["scan", "--detectors", "tool-repeat", &file])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("read_file {path: config/server.toml} called 5 times in a row"),
        "{text}"
    );
    let out = env
        .cmd()
        .args(["scan", "--json", "--detectors", "tool-repeat", &file])
        .output()
        .unwrap();
    let d = &stdout_json(&out.stdout)[0];
    assert_eq!(
        d["reason"],
        "read_file \"{\\\"path\\\":\\\"config/server.toml\\\"}\" called 5 times in a row with the same arguments (threshold 5), events 6..42"
    );
    assert_eq!(d["repeated"], "read_file:{\"path\":\"config/server.toml\"}");
}

#[test]
fn a_huge_bad_value_is_quoted_cut_and_a_huge_file_is_not_read_whole() {
    // Issue 31: a 50 MB unknown profile name was echoed whole;
    // prompt_file = "/dev/zero" grew to 2.1 GB before failing.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.jsonl");
    std::fs::write(&log, "{\"type\":\"prompt\",\"text\":\"hi\"}\n").unwrap();
    let run = |args: &[&str], config: Option<&Path>| {
        let mut cmd = common::loopscope_at_root();
        cmd.args(args);
        if let Some(c) = config {
            cmd.env("LOOPSCOPE_CONFIG", c);
        }
        let o = cmd.output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let long = "p".repeat(100_000);
    let bad = format!("{long}\u{1b}[31m");
    let unreadable = format!("{long}\u{1b}]0;title\u{7}.jsonl");
    for args in [
        vec!["scan", "--profile", &bad, log.to_str().unwrap()],
        vec!["scan", "--max-record", &bad, log.to_str().unwrap()],
        vec![
            "scan",
            "--set",
            &format!("tool-repeat.threshold={long}"),
            log.to_str().unwrap(),
        ],
        // Our own errors too: a flag's argument, an agent's name, a URL.
        vec!["scan", "--set", &bad, log.to_str().unwrap()],
        vec!["scan", "--agent", &bad],
        vec!["scan", "--otlp", &bad, log.to_str().unwrap()],
        // A path that cannot be read, among files that can (no '[': that
        // would make it a glob, and a glob matching nothing is a note).
        vec!["scan", log.to_str().unwrap(), &unreadable],
    ] {
        let (code, err) = run(&args, None);
        assert_eq!(code, Some(2), "{}", &err[..err.len().min(300)]);
        let flag: String = args[1].chars().take(20).collect();
        assert!(err.len() < 1500, "{} bytes of error for {flag}", err.len());
        assert!(!err.contains('\u{1b}'), "raw escape for {flag}");
    }
    let (_, err) = run(&["scan", "--profile", &long, log.to_str().unwrap()], None);
    assert!(err.contains("unknown profile \"pppp") && err.contains("…"), "{err}");
    // In a config file too (under its 1 MiB), and a config over it is refused.
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("profile = \"{}\"\n", "q".repeat(500_000))).unwrap();
    let (code, err) = run(&["scan", log.to_str().unwrap()], Some(&config));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown profile") && err.len() < 1000,
        "{}",
        &err[..err.len().min(300)]
    );
    std::fs::write(&config, format!("# {}\n", "z".repeat(3 << 20))).unwrap();
    let (code, err) = run(&["scan", log.to_str().unwrap()], Some(&config));
    assert_eq!(code, Some(2));
    assert!(err.contains("longer than 1 MiB"), "{err}");
    // The judge's prompt file: read at most 1 MiB.
    std::fs::write(&config, "[judge]\nprompt_file = \"/dev/zero\"\n").unwrap();
    let (code, err) = run(
        &[
            "judge",
            "--dry-run",
            "--model",
            "m",
            "--endpoint",
            "http://127.0.0.1:9/v1",
            log.to_str().unwrap(),
        ],
        Some(&config),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("/dev/zero: longer than 1 MiB"), "{err}");
    // tune's list of the logs that loop: at most 16 MiB.
    let (code, err) = run(
        &[
            "tune",
            "--vary",
            "tool-repeat.threshold=3,4",
            "--expect",
            "/dev/zero",
            log.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--expect /dev/zero: longer than 16 MiB"), "{err}");
}

/// `--format`'s help names every format `--format` accepts.
#[test]
fn format_help_names_every_format() {
    let help = common::loopscope_at_root().args(["scan", "--help"]).output().unwrap();
    // The help wraps its lines: read it as one run of words.
    let text = String::from_utf8(help.stdout).unwrap();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    for format in loopscope_core::formats::Format::ALL {
        let name = format.name();
        assert!(
            words.contains(&name) || words.contains(&format!("{name}.").as_str()),
            "`scan --help` does not name {name}"
        );
        assert!(loopscope_core::formats::FormatChoice::parse(name).is_ok());
    }
}

/// Issue 43, item 10: the test-only hook that makes the viewer fail on
/// purpose (`LOOPSCOPE_TEST_PANIC`, tests/tmux_e2e.rs) is compiled out of
/// a release build: no variable can make an installed loopscope panic or
/// abort. The debug build the tests run keeps it. .ci/run builds the
/// release binary before `cargo test`, so CI always checks it.
#[test]
fn the_test_panic_hook_is_only_in_debug_builds() {
    let debug = Path::new(env!("CARGO_BIN_EXE_loopscope"));
    let needle = b"LOOPSCOPE_TEST_PANIC";
    let holds = |p: &Path| std::fs::read(p).unwrap().windows(needle.len()).any(|w| w == needle);
    if cfg!(debug_assertions) {
        assert!(holds(debug), "the debug build exercises the hook");
    }
    let release = debug.parent().unwrap().parent().unwrap().join("release/loopscope");
    if !release.exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI builds {} before the tests (.ci/run)",
            release.display()
        );
        eprintln!(
            "skipped: no release build at {} (cargo build --release)",
            release.display()
        );
        return;
    }
    assert!(!holds(&release), "{} reads LOOPSCOPE_TEST_PANIC", release.display());
}
