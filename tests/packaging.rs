//! What a release is made of stays consistent: one version source for the
//! crates and the Python package, a CHANGELOG in Keep a Changelog form,
//! the stated minimum Rust the README repeats, and packages that hold what
//! the crates need and not the test fixtures. (`.ci/run` runs `cargo
//! publish --dry-run`, which builds the packed crates.)

use std::path::Path;
use std::process::Command;

use toml_edit::DocumentMut;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn manifest(rel: &str) -> DocumentMut {
    read(rel).parse().unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn workspace_field(field: &str) -> String {
    let root = manifest("Cargo.toml");
    root["workspace"]["package"][field]
        .as_str()
        .unwrap_or_else(|| panic!("Cargo.toml: no workspace.package.{field}"))
        .to_string()
}

fn semver(v: &str) -> (u64, u64, u64) {
    let parts: Vec<u64> = v
        .split('.')
        .map(|p| p.parse().unwrap_or_else(|_| panic!("{v}: not MAJOR.MINOR.PATCH")))
        .collect();
    assert_eq!(parts.len(), 3, "{v}: not MAJOR.MINOR.PATCH");
    (parts[0], parts[1], parts[2])
}

#[test]
fn one_version_source() {
    let version = workspace_field("version");
    semver(&version);
    for rel in ["Cargo.toml", "crates/loopscope-core/Cargo.toml", "python/Cargo.toml"] {
        let m = manifest(rel);
        for field in ["version", "edition", "rust-version", "license"] {
            let inherited = m["package"][field]
                .as_table_like()
                .and_then(|t| t.get("workspace"))
                .and_then(|w| w.as_bool());
            assert_eq!(
                inherited,
                Some(true),
                "{rel}: package.{field} must be `{field}.workspace = true`"
            );
        }
    }
    // The app's requirement on the core is the same version, exactly: the
    // two are released together.
    let root = manifest("Cargo.toml");
    let pin = root["dependencies"]["loopscope-core"]["version"].as_str();
    assert_eq!(
        pin,
        Some(format!("={version}").as_str()),
        "Cargo.toml: loopscope-core's version"
    );
    // maturin takes the Python package's version from Cargo.toml.
    let py = manifest("python/pyproject.toml");
    assert!(
        py["project"].get("version").is_none(),
        "python/pyproject.toml: a version of its own"
    );
    let dynamic: Vec<&str> = py["project"]["dynamic"]
        .as_array()
        .expect("python/pyproject.toml: project.dynamic")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        dynamic.contains(&"version"),
        "python/pyproject.toml: dynamic = [\"version\"]"
    );
}

/// Keep a Changelog: an Unreleased section on top, then released versions,
/// newest first, each `## [X.Y.Z] - YYYY-MM-DD`, none newer than the
/// workspace's version; the usual subsections only.
#[test]
fn changelog_is_keep_a_changelog() {
    let version = semver(&workspace_field("version"));
    let log = read("CHANGELOG.md");
    assert!(
        log.starts_with("# Changelog\n"),
        "CHANGELOG.md: starts with `# Changelog`"
    );
    let sections: Vec<&str> = log.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        sections.first(),
        Some(&"## [Unreleased]"),
        "CHANGELOG.md: Unreleased first"
    );
    let mut previous: Option<(u64, u64, u64)> = None;
    for s in &sections[1..] {
        let (v, date) = s
            .strip_prefix("## [")
            .and_then(|r| r.split_once("] - "))
            .unwrap_or_else(|| panic!("CHANGELOG.md: `{s}` is not `## [X.Y.Z] - YYYY-MM-DD`"));
        let v = semver(v);
        assert!(
            date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
            "CHANGELOG.md: `{s}`: the date as YYYY-MM-DD"
        );
        assert!(
            v <= version,
            "CHANGELOG.md: `{s}` is newer than the workspace's version"
        );
        if let Some(p) = previous {
            assert!(v < p, "CHANGELOG.md: `{s}` out of order (newest first)");
        }
        previous = Some(v);
    }
    let kinds = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"];
    for l in log.lines().filter(|l| l.starts_with("### ")) {
        assert!(kinds.contains(&&l[4..]), "CHANGELOG.md: `{l}` is not one of {kinds:?}");
    }
}

/// The README states the minimum Rust that `rust-version` declares (and
/// CI builds with).
#[test]
fn readme_states_the_msrv() {
    let msrv = workspace_field("rust-version");
    let readme = read("README.md");
    let stated: Vec<&str> = readme
        .match_indices(" or newer")
        .filter_map(|(at, _)| readme[..at].rsplit(' ').next())
        .filter(|w| w.starts_with("1."))
        .collect();
    assert!(!stated.is_empty(), "README: no `the Rust toolchain, 1.X or newer`");
    for s in stated {
        assert_eq!(s, msrv, "README states Rust {s}; rust-version is {msrv}");
    }
}

fn package_list(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args(["package", "--list", "--offline", "--allow-dirty", "-p", package])
        .current_dir(ROOT)
        .output()
        .expect("cargo package --list");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn packages_hold_what_the_crates_need_and_no_fixtures() {
    for (package, must) in [
        (
            "loopscope",
            &[
                "Cargo.lock",
                "sample-logs/demo.jsonl",
                "src/main.rs",
                "README.md",
                "CHANGELOG.md",
                "LICENSE-MIT",
                "LICENSE-APACHE",
            ][..],
        ),
        (
            "loopscope-core",
            &["src/lib.rs", "README.md", "LICENSE-MIT", "LICENSE-APACHE"][..],
        ),
    ] {
        let files = package_list(package);
        for m in must {
            assert!(files.iter().any(|f| f == m), "{package}: the package lacks {m}");
        }
        for f in &files {
            assert!(
                !["tests/", "screenshots/", "fuzz/", "python/", "target/"]
                    .iter()
                    .any(|p| f.starts_with(p)),
                "{package}: the package holds {f}"
            );
        }
        // A package crates.io keeps small: sources and documents.
        let bytes: u64 = files
            .iter()
            .filter(|f| !f.starts_with("Cargo.toml") && !f.ends_with(".cargo_vcs_info.json"))
            .map(|f| {
                let base = if package == "loopscope" {
                    ""
                } else {
                    "crates/loopscope-core/"
                };
                std::fs::metadata(Path::new(ROOT).join(base).join(f)).map_or(0, |m| m.len())
            })
            .sum();
        assert!(bytes < 4 << 20, "{package}: {bytes} bytes packed");
    }
}
