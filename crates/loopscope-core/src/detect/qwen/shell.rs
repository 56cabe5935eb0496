//! qwen-code's shell stagnation: which `run_shell_command` calls are mere
//! inspections (`git status`, `git diff` overviews, `git ls-files`).

use std::sync::LazyLock;

use regex::Regex;

use crate::detect::js_trim;

/// JavaScript's `\s` inside a regex class.
const WS: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

static SEGMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^git(?:[{WS}]+(?:-C[{WS}]+[^{WS}]+|--no-pager))*[{WS}]+(status|diff|ls-files)\b"
    ))
    .expect("valid inspection regex")
});
static SPLIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"&&|\|\||[;&|\n]").expect("valid split regex"));
static TOKENS: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!("[{WS}]+")).expect("valid token regex"));
static REV_SUFFIX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:HEAD|@)(?:[~^][0-9]*)+$").expect("valid"));
static HEX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)^[0-9a-f]{7,40}$").expect("valid"));
static RANGE: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!(r"^[^{WS}]+\.{{2,3}}[^{WS}]+$")).expect("valid"));

fn revision(t: &str) -> bool {
    t == "HEAD" || t == "@" || REV_SUFFIX.is_match(t) || HEX.is_match(t) || RANGE.is_match(t)
}

/// What follows `git diff` is an overview: nothing, or flags and revisions
/// with no `--` before the last token.
fn diff_overview(rest: &str) -> bool {
    let rest = js_trim(rest);
    if rest.is_empty() {
        return true;
    }
    let tokens: Vec<&str> = TOKENS.split(rest).collect();
    let n = tokens.len();
    if tokens[..n - 1].contains(&"--") {
        return false;
    }
    tokens.iter().all(|t| t.starts_with('-') || revision(t))
}

fn segment_inspects(seg: &str) -> bool {
    let Some(m) = SEGMENT.captures(seg) else {
        return false;
    };
    let verb = m.get(1).map_or("", |v| v.as_str()).to_ascii_lowercase();
    if verb == "diff" {
        let end = m.get(0).map_or(0, |x| x.end());
        return diff_overview(&seg[end..]);
    }
    true
}

/// Whether a shell command is nothing but inspections.
pub(crate) fn inspection(command: &str) -> bool {
    let segments: Vec<&str> = SPLIT.split(command).map(js_trim).filter(|s| !s.is_empty()).collect();
    !segments.is_empty() && segments.iter().all(|s| segment_inspects(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overview_commands_are_inspections() {
        for c in [
            "git status",
            "git --no-pager diff",
            "GIT -c repo STATUS && git diff HEAD~1",
            "git diff --stat main...feature",
            "git ls-files; git status -s",
        ] {
            assert!(inspection(c), "{c}");
        }
        for c in [
            "git diff src/main.rs",
            "git status && cargo test",
            "ls",
            "git commit -m x",
            "",
            "git diff -- a",
        ] {
            assert!(!inspection(c), "{c}");
        }
    }
}
