//! `loopscope tune` (issue 41, item 4): a table per varied parameter with
//! recall, false positives and latency per value over a labelled set, the
//! value suggested, `--json` with the same numbers, and `--write-config`
//! merging the chosen values into a config that `scan --config` reads.

mod common;

use std::path::Path;

use common::loopscope_at_root as loopscope;
use serde_json::Value;

fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = loopscope().current_dir(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

/// A session: a prompt, a line of reasoning, then each `(path, times)`
/// read that many times in a row (each call answered). Events: 0 meta,
/// 1 prompt, 2 request, 3 reasoning, then a call and its result each.
fn session(reads: &[(&str, usize)]) -> String {
    let mut lines = vec![
        r#"{"type":"meta","format":"loopscope","version":1}"#.to_string(),
        r#"{"type":"prompt","text":"修复解析器的测试"}"#.to_string(),
        r#"{"type":"request"}"#.to_string(),
        r#"{"type":"reasoning","text":"我先看看相关的文件。"}"#.to_string(),
    ];
    let mut id = 0;
    for (path, times) in reads {
        for _ in 0..*times {
            id += 1;
            let args = serde_json::json!({ "path": path });
            lines.push(
                serde_json::json!({"type":"tool_call","id":format!("c{id}"),"name":"read_file","args":args})
                    .to_string(),
            );
            lines.push(
                serde_json::json!({"type":"tool_result","id":format!("c{id}"),"ok":true,"output":format!("{path} 的内容")})
                    .to_string(),
            );
        }
    }
    lines.join("\n") + "\n"
}

/// The labelled set: a folder with two loops and two clean sessions (CJK
/// names and text), and its list of loops inside it.
///
/// - `loops/a.jsonl`: 6 identical reads from event 4: tool-repeat at
///   threshold T fires at event 4 + 2(T-1) (T ≤ 6).
/// - `loops/读取-b.jsonl`: 2 other reads, then 8 identical ones from event
///   8 (labelled from 6): fires at 8 + 2(T-1) (T ≤ 8).
/// - `clean/轮询.jsonl`: polling, 4 identical reads then others: fires at T ≤ 4.
/// - `clean/c.jsonl`: 3 identical reads: fires at T ≤ 3.
fn labelled_set() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(logs.join("loops")).unwrap();
    std::fs::create_dir_all(logs.join("clean")).unwrap();
    let write = |p: &str, text: String| std::fs::write(logs.join(p), text).unwrap();
    write("loops/a.jsonl", session(&[("src/解析.rs", 6)]));
    write(
        "loops/读取-b.jsonl",
        session(&[("README.md", 1), ("Cargo.toml", 1), ("文档/说明.md", 8)]),
    );
    write(
        "clean/轮询.jsonl",
        session(&[("build.log", 4), ("src/lib.rs", 1), ("tests/t.rs", 1)]),
    );
    write("clean/c.jsonl", session(&[("a.rs", 3), ("b.rs", 1)]));
    write(
        "loops.txt",
        "# the sessions that loop, and the event each loop begins at\nloops/a.jsonl 4\nloops/读取-b.jsonl   6  # its reads begin at 8\n".to_string(),
    );
    dir
}

/// The rows of the first table: (mark, value, caught, clean firing, median, worst).
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .skip(2)
        .take_while(|l| (l.starts_with("    ") || l.starts_with("  * ")) && !l.contains(": "))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

const VARY: &str = "tool-repeat.threshold=2..9";

#[test]
fn a_folder_with_its_list_of_loops_gives_a_table_and_a_suggestion() {
    let set = labelled_set();
    let (code, out, err) = run_in(
        set.path(),
        &[
            "tune",
            "--detectors",
            "tool-repeat",
            "--vary",
            VARY,
            "--expect",
            "logs/loops.txt",
            "logs",
        ],
    );
    assert_eq!(code, 0, "{err}");
    // The list inside the folder is not tried as a session, nor counted as skipped.
    assert_eq!(err, "", "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "tool-repeat.threshold (profile seed; now 5) on 4 sessions: 2 loops, 2 clean"
    );
    assert_eq!(
        lines[1]
            .split("  ")
            .filter(|c| !c.trim().is_empty())
            .map(str::trim)
            .collect::<Vec<_>>(),
        ["value", "caught", "clean firing", "median latency", "worst latency"]
    );
    let r = rows(&out);
    let want: [&[&str]; 8] = [
        // threshold 2: a fires at 6 (latency 2), b at 10 (latency 4).
        &["2", "2/2", "2/2", "3", "4"],
        &["3", "2/2", "2/2", "5", "6"],
        &["4", "2/2", "1/2", "7", "8"],
        // Quiet from 5 on; 5 and 6 catch both: 5 is the current value.
        &["*", "5", "2/2", "0/2", "9", "10"],
        &["6", "2/2", "0/2", "11", "12"],
        &["7", "1/2", "0/2", "14", "14"],
        &["8", "1/2", "0/2", "16", "16"],
        &["9", "0/2", "0/2", "-", "-"],
    ];
    assert_eq!(r.len(), want.len(), "{out}");
    for (row, want) in r.iter().zip(want) {
        assert_eq!(row, want, "{out}");
    }
    assert!(
        out.contains("  * 5: suggested; it keeps the 2 clean sessions quiet and catches both loops; of the 2 values that do as well, the closest to the current 5\n"),
        "{out}"
    );
    assert!(out.contains("latency: events from the labelled onset"), "{out}");
    // The same set named file by file from elsewhere, the list by an
    // absolute path: the same numbers.
    let logs = set.path().join("logs");
    let list = logs.join("loops.txt");
    let (code, again, err) = run(&[
        "tune",
        "--detectors",
        "tool-repeat",
        "--vary",
        VARY,
        "--expect",
        list.to_str().unwrap(),
        logs.join("loops/a.jsonl").to_str().unwrap(),
        logs.join("loops/读取-b.jsonl").to_str().unwrap(),
        logs.join("clean/轮询.jsonl").to_str().unwrap(),
        logs.join("clean/c.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(rows(&again), r);
    // A loop the list names that was not tried is said (a typo would
    // otherwise count a loop as clean work).
    let (_, _, err) = run_in(
        set.path(),
        &[
            "tune",
            "--detectors",
            "tool-repeat",
            "--vary",
            VARY,
            "--expect",
            "logs/loops.txt",
            "logs/clean",
            "logs/loops/a.jsonl",
        ],
    );
    assert!(
        err.contains("names 1 loop not among the sessions tried: loops/读取-b.jsonl"),
        "{err}"
    );
}

#[test]
fn when_no_value_keeps_the_clean_sessions_quiet_it_says_why_and_writes_nothing() {
    let set = labelled_set();
    let args = [
        "tune",
        "--detectors",
        "tool-repeat",
        "--vary",
        "tool-repeat.threshold=2..4",
        "--expect",
        "logs/loops.txt",
        "logs",
    ];
    let (code, out, err) = run_in(set.path(), &args);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("  * "), "nothing marked: {out}");
    assert!(
        out.contains("  no value keeps the 2 clean sessions quiet: the fewest that fire is 1 (at 4); choose one with --pick tool-repeat.threshold=VALUE"),
        "{out}"
    );
    assert!(
        out.contains("at 4") && !out.contains("at 4: "),
        "no detail without a choice: {out}"
    );
    let (code, out, err) = run_in(set.path(), &[&args[..], &["--write-config", "tuned.toml"]].concat());
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("nothing chosen for tool-repeat.threshold: no value keeps"),
        "{err}"
    );
    assert!(!set.path().join("tuned.toml").exists());
    // --pick chooses one anyway, and says what it costs.
    let (code, out, err) = run_in(
        set.path(),
        &[
            &args[..],
            &["--pick", "tool-repeat.threshold=4", "--write-config", "tuned.toml"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("  * 4: picked with --pick (no value keeps"), "{out}");
    assert!(out.contains("  at 4: fires on clean logs/clean/轮询.jsonl@10"), "{out}");
    assert!(out.contains("tool-repeat.threshold = 4  (new)"), "{out}");
}

#[test]
fn json_gives_the_same_numbers_per_value_and_the_choice() {
    let set = labelled_set();
    let (code, out, err) = run_in(
        set.path(),
        &[
            "tune",
            "--json",
            "--detectors",
            "tool-repeat",
            "--vary",
            VARY,
            "--vary",
            "tool-repeat.max_cycle=1,2",
            "--expect",
            "logs/loops.txt",
            "logs",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let recs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let types: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [&["trial"; 8][..], &["choice"], &["trial"; 2], &["choice"]].concat()
    );
    assert!(recs.iter().all(|r| r["schema"] == 1));
    let five = &recs[3];
    assert_eq!(five["param"], "tool-repeat.threshold");
    assert_eq!(five["value"], "5");
    assert_eq!(five["current"], true);
    assert_eq!(five["chosen"], true);
    assert_eq!(five["recall"], serde_json::json!({"caught": 2, "loops": 2}));
    assert_eq!(five["false_positives"], serde_json::json!({"fired": 0, "clean": 2}));
    assert_eq!(
        five["latency"],
        serde_json::json!({"unit": "events", "measured": 2, "median": 9.0, "worst": 10})
    );
    let a = five["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == "logs/loops/a.jsonl")
        .unwrap();
    assert_eq!(
        (&a["loop"], &a["onset"], &a["first_event"]),
        (&Value::from(true), &Value::from(4), &Value::from(12))
    );
    let four = &recs[2];
    assert_eq!(four["false_positives"]["fired"], 1);
    assert_eq!(four["chosen"], false);
    assert_eq!(
        recs[8],
        serde_json::json!({
            "type": "choice", "schema": 1, "param": "tool-repeat.threshold", "current": "5", "value": "5", "picked": false,
            "why": "keeps the 2 clean sessions quiet and catches both loops; of the 2 values that do as well, the closest to the current 5"
        })
    );
    assert_eq!(recs[11]["param"], "tool-repeat.max_cycle");
}

/// A team's config with its own comments, keys and tables.
const TEAM: &str = "# our loopscope settings\ndetectors = [\"tool-repeat\", \"block-cycle\"]\n\n[tool-repeat]\n# three reads in a row is already too many?\nthreshold = 3  # set in March\n\n[block-cycle]\nmin_matches = 9\n\n[judge]\nmodel = \"qwen3:8b\"\n";

#[test]
fn write_config_creates_or_merges_and_scan_reads_it_back() {
    let set = labelled_set();
    let dir = set.path();
    std::fs::write(dir.join("team.toml"), TEAM).unwrap();
    let tune = [
        "tune",
        "--vary",
        VARY,
        "--expect",
        "logs/loops.txt",
        "logs",
        "--config",
        "team.toml",
    ];
    // A dry run says the change and writes nothing.
    let (code, out, err) = run_in(
        dir,
        &[&tune[..], &["--write-config", "team.toml", "--dry-run"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("tool-repeat.threshold (profile seed; now 3)"), "{out}");
    assert!(
        out.contains("\nwould write team.toml (--dry-run: nothing written):\n  tool-repeat.threshold = 5  (was 3)\n"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(dir.join("team.toml")).unwrap(), TEAM);
    // Into the config it read: 5 and 6 both do best; 5 is closer to 3.
    let (code, out, err) = run_in(dir, &[&tune[..], &["--write-config", "team.toml"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\nwrote team.toml (--config team.toml reads it):\n  tool-repeat.threshold = 5  (was 3)\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("team.toml")).unwrap(),
        TEAM.replace("threshold = 3  # set in March", "threshold = 5  # set in March"),
        "only the value changed"
    );
    // Again: nothing to change, nothing written.
    let (_, out, _) = run_in(dir, &[&tune[..], &["--write-config", "team.toml"]].concat());
    assert!(
        out.contains("team.toml already holds these values; nothing written"),
        "{out}"
    );
    // A new file, under another profile: it says which.
    let (code, out, err) = run_in(
        dir,
        &[
            "tune",
            "--profile",
            "gemini-cli",
            "--vary",
            "tool-repeat.threshold=4..6",
            "--expect",
            "logs/loops.txt",
            "logs",
            "--write-config",
            "new/tuned.toml",
        ],
    );
    assert_eq!(code, 2, "no such folder: {out}");
    assert!(out.is_empty(), "said before the trials: {out}");
    assert!(err.contains("new/tuned.toml: its folder: "), "{err}");
    let (code, out, err) = run_in(
        dir,
        &[
            "tune",
            "--profile",
            "gemini-cli",
            "--vary",
            "tool-repeat.threshold=4..6",
            "--expect",
            "logs/loops.txt",
            "logs",
            "--write-config",
            "tuned.toml",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(
        last,
        serde_json::json!({"type": "config", "schema": 1, "file": "tuned.toml", "written": true, "changes": [
            {"key": "profile", "from": null, "to": "\"gemini-cli\""},
            {"key": "tool-repeat.threshold", "from": null, "to": "5"},
        ]})
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("tuned.toml")).unwrap(),
        "profile = \"gemini-cli\"\n\n[tool-repeat]\nthreshold = 5\n"
    );
    // It will not mix profiles in one file.
    let (code, _, err) = run_in(dir, &[&tune[..], &["--write-config", "tuned.toml"]].concat());
    assert_eq!(code, 2);
    assert!(
        err.contains("tuned.toml: runs profile gemini-cli, and these values were tried under seed"),
        "{err}"
    );
    std::fs::write(dir.join("broken.toml"), "[tool-repeat\n").unwrap();
    let (code, out, err) = run_in(dir, &[&tune[..], &["--write-config", "broken.toml"]].concat());
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("broken.toml: is not valid TOML"), "{err}");

    // scan with the written config: tool-repeat fires on the loops only,
    // where the old threshold 3 also fired on both clean sessions.
    let fired = |config: &str| {
        let (_, out, err) = run_in(dir, &["scan", "--json", "--config", config, "logs"]);
        // (scan tries loops.txt, and skips it.)
        assert_eq!(err, "loopscope: 1 file skipped (not agent sessions)\n");
        let mut files: Vec<String> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|d| d["detector"] == "tool-repeat")
            .map(|d| format!("{}@{}", d["file"].as_str().unwrap(), d["event"]))
            .collect();
        files.sort();
        files
    };
    assert_eq!(
        fired("team.toml"),
        ["logs/loops/a.jsonl@12", "logs/loops/读取-b.jsonl@16"]
    );
    std::fs::write(dir.join("old.toml"), TEAM).unwrap();
    assert_eq!(fired("old.toml").len(), 4);
}

#[test]
fn write_config_never_writes_over_a_session_or_the_list_of_loops() {
    let set = labelled_set();
    let dir = set.path();
    let session = dir.join("logs/loops/a.jsonl");
    let before = std::fs::read(&session).unwrap();
    std::fs::hard_link(&session, dir.join("linked.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.join("logs/loops.txt"), dir.join("list-link.txt")).unwrap();
    let tune = [
        "tune",
        "--vary",
        VARY,
        "--expect",
        "logs/loops.txt",
        "logs",
        "--write-config",
    ];
    for (target, input) in [
        ("logs/loops/a.jsonl", "logs/loops/a.jsonl"),
        // The same files under other names: compared by identity.
        ("linked.jsonl", "logs/loops/a.jsonl"),
        ("list-link.txt", "logs/loops.txt"),
    ] {
        let (code, out, err) = run_in(dir, &[&tune[..], &[target]].concat());
        assert_eq!(code, 2, "{target}: {out}");
        assert!(out.is_empty(), "{target}: refused before any table: {out}");
        assert!(
            err.contains(&format!(
                "{target}: is the same file as the input {input}; refusing to write over it"
            )),
            "{target}: {err}"
        );
    }
    assert_eq!(std::fs::read(&session).unwrap(), before);
    assert!(std::fs::read_to_string(dir.join("logs/loops.txt"))
        .unwrap()
        .starts_with("# the sessions"));
}

#[test]
fn tune_prints_recall_and_false_positives_per_value() {
    let dir = tempfile::tempdir().unwrap();
    let expect = dir.path().join("loops.txt");
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::write(
        &expect,
        format!("# real loops\n{root}/sample-logs/chanting-content-en.jsonl\n"),
    )
    .unwrap();
    let (code, out, err) = run(&[
        "tune",
        "--profile",
        "gemini-cli",
        "--vary",
        "chunk-chant.threshold=5..15:5",
        "--expect",
        expect.to_str().unwrap(),
        "sample-logs/chanting-content-en.jsonl",
        "sample-logs/fp-haha-zh.jsonl",
        "sample-logs/long-clean-session.jsonl",
    ]);
    assert_eq!(code, 0, "{err}");
    // No onset labelled: no latency columns, and a word on how to get them.
    assert_eq!(
        rows(&out),
        [["5", "1/1", "1/2"], ["10", "1/1", "1/2"], ["15", "0/1", "1/2"]],
        "a threshold too high misses the loop: {out}"
    );
    assert!(out.contains("latency: label the event each loop begins at"), "{out}");
    // JSON: one record per value.
    let (_, out, _) = run(&[
        "tune",
        "--json",
        "--profile",
        "gemini-cli",
        "--vary",
        "chunk-chant.threshold=9,10",
        "sample-logs/chanting-content-en.jsonl",
    ]);
    let recs: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1]["value"], "10");
    assert_eq!(recs[1]["files"][0]["first_event"], 66);
    let (code, _, err) = run(&["tune", "--vary", "nope.x=1", "sample-logs/demo.jsonl"]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn tune_never_counts_an_unread_input_and_counts_only_the_varied_detector() {
    let vary = ["tune", "--vary", "block-cycle.min_matches=20,21"];
    // A file it cannot read is an error, with no table made up around it.
    for bad in ["sample-logs/no-such.jsonl", "Cargo.toml"] {
        let (code, out, err) = run(&[&vary[..], &[bad, "sample-logs/demo.jsonl"]].concat());
        assert_eq!(code, 2, "{bad}: {out}{err}");
        assert!(out.is_empty(), "{bad}: {out}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let (code, out, err) = run(&[&vary[..], &["sample-logs/no-*.jsonl"]].concat());
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    // Folders and globs are walked as scan walks them.
    let (code, out, err) = run(&[&vary[..], &["sample-logs/formats", "sample-logs/fp-*.jsonl"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("block-cycle.min_matches (profile seed; now 6) on 17 sessions\n"),
        "{out}"
    );
    // fp-code-block: block-cycle matches 20 (fires at 20, not at 21); its
    // list-cycle fires at both and is shown apart, never counted.
    let r = rows(&out);
    assert_eq!(r[0][..2], ["20", "1/17"], "{out}");
    assert!(
        r[0].contains(&"sample-logs/fp-code-block.jsonl@220".to_string()),
        "{out}"
    );
    assert_eq!(r[1], ["21", "0/17"], "{out}");
    assert!(out.contains("not counted (detectors other than block-cycle):"), "{out}");
    assert!(out.contains("  sample-logs/fp-code-block.jsonl: list-cycle\n"), "{out}");
    let (_, out, _) = run(&[&vary[..], &["--json", "sample-logs/fp-code-block.jsonl"]].concat());
    let rec: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
    assert_eq!(rec["fired"], 0, "{rec}");
    assert_eq!(rec["files"][0]["other_detectors"], serde_json::json!(["list-cycle"]));
}
