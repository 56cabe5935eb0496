//! Every sample in sample-logs/ gives exactly the detections that
//! sample-logs/expected.json lists, under both profiles, and the table in
//! sample-logs/README.md is expected.json. `UPDATE_SAMPLES=1` rewrites both
//! from what `scan` says now (review the diff). The labels a row gives a
//! false positive or a miss (which profiles flag it or stay quiet, which
//! miss it or catch it) are read back from the README and checked against
//! what `scan` says: UPDATE_SAMPLES never rewrites a label.

mod common;

use std::path::Path;

use serde_json::{json, Value};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const PROFILES: [&str; 10] = [
    "seed",
    "gemini-cli",
    "extended",
    "qwen-code",
    "openhands-v0",
    "roo-code",
    "cline",
    "roo-fork",
    "openclaw",
    "opencode",
];
/// The other agents' profiles, shown together in one column.
const AGENTS: [&str; 7] = [
    "qwen-code",
    "openhands-v0",
    "roo-code",
    "cline",
    "roo-fork",
    "openclaw",
    "opencode",
];

fn expected() -> Value {
    let text = std::fs::read_to_string(Path::new(ROOT).join("sample-logs/expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// (detector, event, reason) of every detection `scan` reports.
fn scan(file: &str, profile: &str) -> Vec<Value> {
    let out = common::loopscope_at_root()
        .args(["scan", "--json", "--profile", profile])
        .arg(format!("sample-logs/{file}"))
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{file} [{profile}] has problems: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            json!({"detector": d["detector"], "event": d["event"], "reason": d["reason"]})
        })
        .collect()
}

fn cell(detections: &[Value]) -> String {
    if detections.is_empty() {
        return "—".to_string();
    }
    detections
        .iter()
        .map(|d| {
            let reason = d["reason"].as_str().unwrap_or_default().replace('|', "\\|");
            format!(
                "`{}` at event {}: {reason}",
                d["detector"].as_str().unwrap_or_default(),
                d["event"]
            )
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// The README table, made from expected.json.
fn table(exp: &Value) -> String {
    let mut t = String::from(
        "| sample | kind | what it shows | seed | gemini-cli | extended | other agents |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for s in exp["samples"].as_array().unwrap() {
        let agents: Vec<String> = AGENTS
            .iter()
            .filter_map(|p| {
                let ds = s["expect"][*p].as_array()?;
                (!ds.is_empty()).then(|| format!("**{p}**: {}", cell(ds)))
            })
            .collect();
        t += &format!(
            "| [`{f}`]({f}) | {} | {} | {} | {} | {} | {} |\n",
            kind_cell(s),
            s["shows"].as_str().unwrap().replace('|', "\\|"),
            cell(s["expect"]["seed"].as_array().unwrap()),
            cell(s["expect"]["gemini-cli"].as_array().unwrap()),
            cell(s["expect"]["extended"].as_array().unwrap()),
            if agents.is_empty() {
                "—".to_string()
            } else {
                agents.join("<br>")
            },
            f = s["file"].as_str().unwrap(),
        );
    }
    t
}

/// The claims a label can make, as the README words them: (key in
/// expected.json, words in the row, whether the profiles named fire).
const CLAIMS: [(&str, &str, bool); 4] = [
    ("flagged_by", "flagged by", true),
    ("quiet_under", "quiet under", false),
    ("missed_by", "missed by", false),
    ("caught_by", "caught by", true),
];

/// The kind column: the kind, and for a false positive or a miss its label
/// ("false positive: flagged by seed; quiet under gemini-cli, extended").
fn kind_cell(s: &Value) -> String {
    let kind = s["kind"].as_str().unwrap().to_string();
    let claims: Vec<String> = CLAIMS
        .iter()
        .filter_map(|(key, words, _)| {
            let names: Vec<&str> = s["label"][*key].as_array()?.iter().filter_map(Value::as_str).collect();
            (!names.is_empty()).then(|| format!("{words} {}", names.join(", ")))
        })
        .collect();
    if claims.is_empty() {
        kind
    } else {
        format!("{kind}: {}", claims.join("; "))
    }
}

const BEGIN: &str = "<!-- samples:begin -->\n";
const END: &str = "<!-- samples:end -->";

fn readme_with(table: &str) -> String {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("sample-logs/README.md")).unwrap();
    let (head, rest) = readme.split_once(BEGIN).expect("README has the samples:begin marker");
    let (_, tail) = rest.split_once(END).expect("README has the samples:end marker");
    format!("{head}{BEGIN}{table}{END}{tail}")
}

#[test]
fn every_sample_gives_the_expected_detections() {
    let mut exp = expected();
    let update = std::env::var_os("UPDATE_SAMPLES").is_some();
    let mut wrong = Vec::new();
    for s in exp["samples"].as_array_mut().unwrap() {
        let file = s["file"].as_str().unwrap().to_string();
        for profile in PROFILES {
            let got = Value::Array(scan(&file, profile));
            if update {
                s["expect"][profile] = got;
            } else if s["expect"][profile] != got {
                wrong.push(format!(
                    "{file} [{profile}]\n  want {}\n  got  {got}",
                    s["expect"][profile]
                ));
            }
        }
    }
    if update {
        let text = serde_json::to_string_pretty(&exp).unwrap() + "\n";
        std::fs::write(Path::new(ROOT).join("sample-logs/expected.json"), text).unwrap();
        std::fs::write(Path::new(ROOT).join("sample-logs/README.md"), readme_with(&table(&exp))).unwrap();
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_readme_table_is_expected_json() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("sample-logs/README.md")).unwrap();
    assert_eq!(
        readme,
        readme_with(&table(&expected())),
        "run UPDATE_SAMPLES=1 cargo test --test samples"
    );
}

#[test]
fn every_sample_is_listed_and_every_listed_sample_exists() {
    let listed: Vec<String> = expected()["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["file"].as_str().unwrap().to_string())
        .collect();
    for f in &listed {
        assert!(
            Path::new(ROOT).join("sample-logs").join(f).exists(),
            "{f} is listed but missing"
        );
    }
    let mut on_disk = Vec::new();
    for dir in ["sample-logs", "sample-logs/formats"] {
        for e in std::fs::read_dir(Path::new(ROOT).join(dir)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let rel = if dir.ends_with("formats") {
                format!("formats/{name}")
            } else {
                name
            };
            let skip = [
                "formats",
                "datasets",
                "README.md",
                "expected.json",
                "make_samples.py",
                "real-loops.txt",
            ]
            .contains(&rel.as_str());
            if !skip {
                on_disk.push(rel);
            }
        }
    }
    for f in on_disk {
        assert!(listed.contains(&f), "sample-logs/{f} is not in expected.json");
    }
    // `tune --expect`'s example list names real samples, none a false positive.
    let loops = std::fs::read_to_string(Path::new(ROOT).join("sample-logs/real-loops.txt")).unwrap();
    // (A line is the path, then perhaps the event its loop begins at.)
    for l in loops
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().next().unwrap())
    {
        assert!(
            listed.contains(&l.to_string()),
            "real-loops.txt names {l}, not a sample"
        );
        assert!(!l.starts_with("fp-"), "{l} is a false positive, not a loop");
    }
    // Both languages and every detector are covered.
    let exp = expected();
    let fired: std::collections::HashSet<&str> = exp["samples"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            PROFILES
                .iter()
                .flat_map(move |p| s["expect"][*p].as_array().unwrap().iter())
        })
        .map(|d| d["detector"].as_str().unwrap())
        .collect();
    // (`qwen-code` and `openclaw` hold their service's switches and never
    // fire themselves; `vllm` and the OpenHands SDK's profile are shown by
    // the peers' cases, not by these samples.)
    for info in loopscope_core::detect::DETECTORS
        .iter()
        .filter(|d| d.id != "qwen-code" && d.id != "openclaw")
        .filter(|d| d.profiles.iter().any(|p| PROFILES.contains(&p.name())))
    {
        assert!(fired.contains(info.id), "no sample fires {}", info.id);
    }
}

/// The labels as the README's rows state them: every `fp-*` and `miss-*`
/// sample says which profiles flag or miss it and which stay quiet or catch
/// it, and `scan` agrees with every claim.
#[test]
fn false_positives_and_misses_behave_as_their_readme_rows_say() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("sample-logs/README.md")).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for row in readme.lines().filter(|l| l.starts_with("| [`")) {
        let file = row.split('`').nth(1).unwrap();
        let labelled = ["fp-", "miss-"].iter().any(|p| file.starts_with(p));
        let kind = row.split(" | ").nth(1).unwrap();
        let claims: Vec<(&str, bool)> = kind
            .split_once(": ")
            .map_or("", |(_, c)| c)
            .split("; ")
            .filter_map(|claim| {
                let (_, words, fires) = CLAIMS.iter().find(|(_, w, _)| claim.starts_with(w))?;
                Some((claim[words.len()..].trim(), *fires))
            })
            .collect();
        if !labelled {
            assert!(claims.is_empty(), "{file}: only fp-* and miss-* samples carry a label");
            continue;
        }
        // A false positive names who stays quiet, a miss who catches it.
        let needed = if file.starts_with("fp-") {
            "quiet under"
        } else {
            "caught by"
        };
        assert!(
            kind.contains(needed),
            "{file}: its row says no profile it is {needed}: {kind}"
        );
        for (profiles, fires) in claims {
            for profile in profiles.split(", ") {
                let n = scan(file, profile).len();
                checked += 1;
                if fires != (n > 0) {
                    let said = if fires { "fires" } else { "stays quiet" };
                    wrong.push(format!(
                        "{file}: the README says {profile} {said}; it has {n} detections"
                    ));
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} labels found in the README");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
