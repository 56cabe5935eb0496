//! The app's top-level modules (each file or folder under src/) form no
//! import circle (issue 45 item 5): what two modules both need lives in a
//! module below them, so each can be read, changed and tested on its own.
//! Every `crate::NAME` path (in `use crate::{…}` lists too) in a module's
//! code, comments left out, is an edge from it to `NAME`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges from each module to those it names, with one place that does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A line without its comment (`//` not after a `:`, so URLs stay).
fn code_of(line: &str) -> &str {
    let b = line.as_bytes();
    (0..b.len().saturating_sub(1))
        .find(|&i| b[i] == b'/' && b[i + 1] == b'/' && (i == 0 || b[i - 1] != b':'))
        .map_or(line, |i| &line[..i])
}

/// The first path segments named after `crate::` in `code`: `crate::a::x`
/// gives `a`; `crate::{a::x, b}` gives `a` and `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        // `loopscope_core::…` and `my_crate::` are other paths.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(list) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut start = true;
            for (i, c) in list.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 1 => {
                        found.push(ident(&list[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let module_of = |p: &Path| -> String {
        let first = p.strip_prefix(&src).unwrap().components().next().unwrap();
        let name = first.as_os_str().to_string_lossy();
        name.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| module_of(p))
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut g = Graph::new();
    for p in &files {
        let from = module_of(p);
        let text = std::fs::read_to_string(p).unwrap();
        let code: String = text.lines().map(|l| format!("{}\n", code_of(l))).collect();
        for (n, line) in code.lines().enumerate() {
            // A `use crate::{…}` list may run over several lines: read on.
            let from_here: String = code.lines().skip(n).take(40).collect::<Vec<_>>().join("\n");
            let here = if line.contains("crate::{") {
                from_here.as_str()
            } else {
                line
            };
            let paths = if line.contains("crate::") {
                crate_paths(here)
            } else {
                Vec::new()
            };
            for to in paths {
                if to != from && modules.contains(&to) {
                    let place = format!("{}:{}", p.strip_prefix(&src).unwrap().display(), n + 1);
                    g.entry(from.clone()).or_default().entry(to).or_insert(place);
                }
            }
        }
    }
    g
}

/// A cycle through `start`, if any: the modules on it, `start` first.
fn cycle_from(g: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in g.get(&at).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                return Some(path);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn the_app_modules_import_each_other_in_one_direction() {
    let g = graph();
    // The parser sees the edges there are (a guard against finding none).
    assert!(g.get("tui").is_some_and(|e| e.contains_key("replay")), "{g:#?}");
    assert!(g.get("record").is_some_and(|e| e.contains_key("http")), "{g:#?}");
    let mut cycles = Vec::new();
    for module in g.keys() {
        if let Some(cycle) = cycle_from(&g, module) {
            let mut steps: Vec<String> = cycle
                .iter()
                .zip(cycle.iter().cycle().skip(1))
                .map(|(a, b)| format!("{a} -> {b} ({})", g[a][b]))
                .collect();
            steps.sort();
            cycles.push(steps.join(", "));
        }
    }
    cycles.sort();
    cycles.dedup();
    assert!(
        cycles.is_empty(),
        "import circles between src/ modules:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_path_reader_reads_use_lists_and_skips_comments() {
    assert_eq!(crate_paths("use crate::{a::{x, y}, b, c::z};"), ["a", "b", "c"]);
    assert_eq!(crate_paths("let n = crate::render::count(1, \"x\");"), ["render"]);
    assert!(crate_paths("use loopscope_core::x; my_crate::y").is_empty());
    assert_eq!(code_of("let u = \"http://x\"; // crate::tui"), "let u = \"http://x\"; ");
}
