//! The README's DuckDB queries over `scan --summary --json` (issue 15):
//! each ```sql block of README.md runs against the records of the sample
//! logs in DuckDB's Python module (`.ci/run` installs it from PyPI into a
//! virtual environment and names its python in LOOPSCOPE_TEST_PYTHON).

mod common;

use std::path::Path;
use std::process::Command;

fn python_with_duckdb() -> Option<String> {
    let candidates = [std::env::var("LOOPSCOPE_TEST_PYTHON").ok(), Some("python3".to_string())];
    candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import duckdb"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn sql_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    readme
        .split("```sql\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap().to_string())
        .collect()
}

#[test]
fn the_readme_queries_answer_which_sessions_looped_and_what_it_cost() {
    let queries = sql_blocks();
    assert_eq!(queries.len(), 2, "README.md should hold the two DuckDB queries");
    let Some(python) = python_with_duckdb() else {
        assert!(std::env::var_os("CI").is_none(), "CI must have duckdb (see .ci/run)");
        eprintln!("skipped: no python with duckdb here (pip install duckdb)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let scan = common::loopscope_at_root()
        .args(["scan", "--summary", "--json", "-j", "2", "sample-logs"])
        .output()
        .unwrap();
    assert_eq!(scan.status.code(), Some(1));
    std::fs::write(dir.path().join("sessions.jsonl"), &scan.stdout).unwrap();
    let records: Vec<serde_json::Value> = String::from_utf8(scan.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let script = "import duckdb, json, sys\nrows = duckdb.sql(sys.stdin.read()).fetchall()\nprint(json.dumps(rows))\n";
    let run = |sql: &str| -> Vec<serde_json::Value> {
        let mut child = Command::new(&python)
            .args(["-c", script])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{sql}\n{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Query 1: the looped sessions, costliest first — as the summary records say.
    let looped = run(&queries[0]);
    let mut expected: Vec<(String, u64)> = records
        .iter()
        .filter(|r| r["type"] == "summary" && r["detections"].as_u64().unwrap() > 0)
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["after_first"]["tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let got: Vec<(String, u64)> = looped
        .iter()
        .map(|row| (row[0].as_str().unwrap().to_string(), row[4].as_u64().unwrap()))
        .collect();
    assert_eq!(got, expected);
    assert!(got.len() > 10);
    // Query 2: detections per detector, as the totals record counts them.
    let per_detector = run(&queries[1]);
    let totals = records.iter().find(|r| r["type"] == "totals").unwrap();
    for row in &per_detector {
        let id = row[0].as_str().unwrap();
        assert_eq!(row[1], totals["per_detector"][id], "{id}");
    }
    assert_eq!(per_detector.len(), totals["per_detector"].as_object().unwrap().len());
}
