//! The importers on what the real agents wrote: the public sessions in
//! ../shared/wild (provenance in its sources.json, whose `loopscope_format`
//! names the format each file is). Each file must be detected as that
//! format and read with no bad line and no unknown record, and what
//! loopscope reads of it (prompts, calls, results, failed results,
//! cancelled calls) must equal what the file says of itself, counted from
//! its own structure by a small counter per format (tests/wild_count),
//! which does not use the importers.
//!
//! The files are not in this repository (their licences differ, and the
//! project's own fixtures show each shape: tests/shapes.rs). They are read
//! where they are: $LOOPSCOPE_WILD, ../shared/wild beside the checkout (as
//! CI has it), or /work/shared/wild. Where there are none the test says on
//! standard error that it skipped (in CI too, where the shared folder may
//! be absent), and passes.

mod wild_count;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use loopscope_core::formats::{self, Decoded, FormatChoice};
use serde_json::Value;
use wild_count::{Bound, Truth};

/// Where the wild files are, if anywhere: $LOOPSCOPE_WILD when set (and
/// only there, so a run can name a copy, or skip with a path that does
/// not exist), else ../shared/wild beside the checkout, else /work/shared/wild.
fn wild_dir() -> Option<PathBuf> {
    let candidates = match std::env::var_os("LOOPSCOPE_WILD") {
        Some(dir) => vec![PathBuf::from(dir)],
        None => vec![
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/wild"),
            PathBuf::from("/work/shared/wild"),
        ],
    };
    candidates.into_iter().find(|d| d.join("sources.json").is_file())
}

/// sources.json: (file relative to the wild folder, loopscope_format).
fn sources(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("sources.json")).expect("sources.json");
    let list: Vec<Value> = serde_json::from_str(&text).expect("sources.json is JSON");
    list.iter()
        .map(|s| {
            let field = |k: &str| s[k].as_str().unwrap_or_else(|| panic!("sources.json: {s} has no {k}"));
            (field("file").to_string(), field("loopscope_format").to_string())
        })
        .collect()
}

/// The independent count of a file, by its format.
fn truth(format: &str, name: &str, text: &str) -> Result<Truth, String> {
    match format {
        "aider" => wild_count::aider::count(text),
        "claude-code" => wild_count::claude_code::count(text),
        "cline" => wild_count::cline::count(name, text),
        "codex" => wild_count::codex::count(text),
        "gemini-cli" => wild_count::gemini_cli::count(text),
        "openhands" => wild_count::openhands::count(text),
        "swe-agent" => wild_count::swe_agent::count(text),
        other => Err(format!(
            "no independent counter for the format {other}: write one in tests/wild_count"
        )),
    }
}

/// What loopscope read of a file, counted the same way.
struct Read {
    format: String,
    prompts: usize,
    calls: usize,
    results: usize,
    failed: usize,
    cancelled: usize,
    calls_by_name: BTreeMap<String, usize>,
    bad_lines: Vec<String>,
    unknown: Vec<String>,
}

fn read(path: &Path) -> Result<Read, String> {
    let opened = formats::open_input(path, FormatChoice::Auto)?;
    let format = opened.format.name().to_string();
    let mut d = Decoded::default();
    let mut decoder = opened.decoder;
    formats::decode_all(opened.reader, &mut *decoder, |i| d.push(i)).map_err(|e| e.to_string())?;
    let lines: Vec<Value> = d.events.iter().map(|e| e.to_json()).collect();
    let count = |f: &dyn Fn(&Value) -> bool| lines.iter().filter(|l| f(l)).count();
    let mut calls_by_name = BTreeMap::new();
    for l in lines.iter().filter(|l| l["type"] == "tool_call") {
        *calls_by_name
            .entry(l["name"].as_str().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    Ok(Read {
        format,
        prompts: count(&|l| l["type"] == "prompt"),
        calls: count(&|l| l["type"] == "tool_call"),
        results: count(&|l| l["type"] == "tool_result"),
        failed: count(&|l| l["type"] == "tool_result" && l["ok"] == false),
        cancelled: count(&|l| l["type"] == "note" && l["kind"] == "cancelled"),
        calls_by_name,
        bad_lines: d.problems.iter().filter(|p| p.skipped).map(|p| p.to_string()).collect(),
        unknown: d.unknown.iter().map(|(k, t)| format!("{k} ×{}", t.count)).collect(),
    })
}

/// Where what loopscope read of a file differs from what the file says.
fn disagreements(name: &str, format: &str, truth: &Truth, got: &Read) -> Vec<String> {
    let mut out = Vec::new();
    if got.format != format {
        out.push(format!("{name}: read as {}, not as {format}", got.format));
    }
    if !got.bad_lines.is_empty() {
        out.push(format!(
            "{name}: {} bad lines: {:?}",
            got.bad_lines.len(),
            got.bad_lines
        ));
    }
    if !got.unknown.is_empty() {
        out.push(format!("{name}: unknown records: {:?}", got.unknown));
    }
    let counts: [(&str, Bound, usize); 5] = [
        ("prompts", truth.prompts, got.prompts),
        ("calls", truth.calls, got.calls),
        ("results", truth.results, got.results),
        ("failed results", truth.failed, got.failed),
        ("cancelled calls", truth.cancelled, got.cancelled),
    ];
    for (what, want, n) in counts {
        if !want.holds(n) {
            out.push(format!("{name}: {what}: the file says {want}, loopscope reads {n}"));
        }
    }
    for (names, want) in &truth.calls_named {
        let n: usize = names
            .iter()
            .map(|k| got.calls_by_name.get(*k).copied().unwrap_or(0))
            .sum();
        if !want.holds(n) {
            out.push(format!(
                "{name}: calls named {names:?}: the file says {want}, loopscope reads {n}"
            ));
        }
    }
    out
}

#[test]
fn every_wild_file_reads_as_its_format_with_the_counts_it_holds() {
    let Some(dir) = wild_dir() else {
        let why = match std::env::var_os("LOOPSCOPE_WILD") {
            Some(dir) => format!("no sources.json in $LOOPSCOPE_WILD ({})", dir.to_string_lossy()),
            None => "no ../shared/wild beside the checkout and no /work/shared/wild".to_string(),
        };
        if std::env::var_os("CI").is_some() {
            eprintln!("skipped in CI: the shared folder is absent ({why})");
        } else {
            eprintln!("skipped: {why}");
        }
        return;
    };
    let listed = sources(&dir);
    assert!(!listed.is_empty(), "{}: sources.json lists no file", dir.display());
    // Every file in the folder is listed, so none is left unread.
    let mut present = Vec::new();
    for agent in std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
    {
        for f in std::fs::read_dir(&agent).unwrap() {
            let f = f.unwrap().path();
            present.push(f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned());
        }
    }
    let unlisted: Vec<&String> = present
        .iter()
        .filter(|p| !listed.iter().any(|(f, _)| f == *p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "in {} but not in sources.json: {unlisted:?}",
        dir.display()
    );

    let mut wrong = Vec::new();
    for (name, format) in &listed {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let truth = match truth(format, name, &text) {
            Ok(t) => t,
            Err(e) => {
                wrong.push(format!("{name}: {e}"));
                continue;
            }
        };
        match read(&path) {
            Ok(got) => {
                eprintln!(
                    "{name}: prompts {} calls {} results {} failed {} cancelled {}",
                    got.prompts, got.calls, got.results, got.failed, got.cancelled
                );
                wrong.extend(disagreements(name, format, &truth, &got));
            }
            Err(e) => wrong.push(format!("{name}: not read: {e}")),
        }
    }
    eprintln!("{} wild files read from {}", listed.len(), dir.display());
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
}
