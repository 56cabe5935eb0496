//! `tune --write-config FILE`: the chosen values merged into a config
//! file. An existing file keeps everything else it says — other keys and
//! tables, comments, their order, a changed key's own comment — and the
//! result must load as a config before it replaces the file. The sessions
//! and the `--expect` list are never written over (the caller refuses
//! them by identity); the config `tune` itself read may be the FILE:
//! merging into it is the point.

use std::io::{self, Write};
use std::path::Path;

use toml_edit::{DocumentMut, Item, Table};

use loopscope_core::config::{Choices, Setup};
use loopscope_core::detect::params::Value;
use loopscope_core::detect::Profile;

use super::table::Choice;
use super::{TuneOptions, Varied};

/// One key set in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `ID.PARAM`, or `profile`.
    pub key: String,
    /// What the file held (TOML text), `None` when it did not set it.
    pub from: Option<String>,
    pub to: String,
}

/// A value as TOML writes it.
fn to_toml(v: &Value) -> toml_edit::Value {
    match v {
        Value::Count(n) => (*n as i64).into(),
        Value::Flag(b) => (*b).into(),
        Value::List(l) => toml_edit::Value::Array(l.iter().map(|&n| n as i64).collect()),
        Value::Word(w) => w.as_str().into(),
        Value::Milli(m) => (f64::from(*m) / 1000.0).into(),
    }
}

/// A value's TOML text without the spaces and comment around it.
fn bare(v: &toml_edit::Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

/// `existing` (a config file's text, empty for a new one) with each
/// `(detector, param, value)` set, and `profile` named when the file
/// would otherwise run another one. Refuses a file that names another
/// profile: its detectors' values were not the ones tried.
pub fn merge(
    existing: &str,
    profile: Profile,
    values: &[(&str, &str, &Value)],
) -> Result<(String, Vec<Change>), String> {
    let mut doc: DocumentMut = existing
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("is not valid TOML ({})", e.message()))?;
    let mut changes = Vec::new();
    match doc.get("profile").map(|p| p.as_str()) {
        Some(Some(p)) if p != profile.name() => {
            return Err(format!(
                "runs profile {p}, and these values were tried under {profile}: tune with --profile {p}, or write another file"
            ))
        }
        Some(_) => {}
        // Without one the file runs seed (unless a flag says otherwise).
        None if profile != Profile::Seed => {
            let v = toml_edit::Value::from(profile.name());
            changes.push(Change {
                key: "profile".to_string(),
                from: None,
                to: bare(&v),
            });
            doc.insert("profile", Item::Value(v));
        }
        None => {}
    }
    for &(id, param, value) in values {
        let table = doc.entry(id).or_insert_with(|| Item::Table(Table::new()));
        let table = table
            .as_table_like_mut()
            .ok_or_else(|| format!("holds {id} as something other than a table"))?;
        let new = to_toml(value);
        let to = bare(&new);
        match table.get_mut(param).and_then(Item::as_value_mut) {
            Some(old) if bare(old) == to => continue,
            Some(old) => {
                // Its own comment and spacing stay.
                let from = bare(old);
                let decor = old.decor().clone();
                *old = new;
                *old.decor_mut() = decor;
                changes.push(Change {
                    key: format!("{id}.{param}"),
                    from: Some(from),
                    to,
                });
            }
            None => {
                table.insert(param, Item::Value(new));
                changes.push(Change {
                    key: format!("{id}.{param}"),
                    from: None,
                    to,
                });
            }
        }
    }
    Ok((doc.to_string(), changes))
}

/// The config file's text, `None` when there is none yet.
fn read_existing(path: &Path) -> Result<Option<String>, String> {
    let shown = loopscope_core::sanitize::path(path);
    if path.as_os_str() == "-" {
        return Err("--write-config needs a file (--dry-run shows what would change)".to_string());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(loopscope_core::config::read_capped(
            path,
            loopscope_core::config::MAX_SMALL_FILE,
        )?)),
        Ok(_) => Err(format!(
            "{shown}: is not a regular file; --write-config writes a config file"
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            match parent.map(std::fs::metadata) {
                Some(Ok(m)) if !m.is_dir() => Err(format!("{shown}: its folder is not a folder")),
                Some(Err(e)) => Err(format!("{shown}: its folder: {}", loopscope_core::io_reason(&e))),
                _ => Ok(None),
            }
        }
        Err(e) => Err(format!("{shown}: {}", loopscope_core::io_reason(&e))),
    }
}

/// What would stop the write, found before the trials (which may take
/// minutes over a large folder): no such folder, a file that is not TOML
/// or runs another profile.
pub fn precheck(path: &Path, profile: Profile) -> Result<(), String> {
    let existing = read_existing(path)?;
    merge(existing.as_deref().unwrap_or(""), profile, &[])
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", loopscope_core::sanitize::path(path)))
}

/// Writes (or with `--dry-run`, says) the chosen values; every varied
/// parameter must have one.
pub fn write_chosen(
    path: &Path,
    profile: Profile,
    chosen: &[(&Varied, Option<Choice>)],
    opts: &TuneOptions,
    out: &mut dyn Write,
) -> Result<(), String> {
    let shown = loopscope_core::sanitize::path(path);
    let mut values = Vec::new();
    for (v, c) in chosen {
        match c {
            Some(Choice { index: Some(i), .. }) => values.push((v.detector, v.param, &v.trials[*i].typed)),
            Some(Choice { why, .. }) => return Err(format!("--write-config: nothing chosen for {}: {why}", v.target)),
            None => {
                return Err(format!(
                    "--write-config: nothing chosen for {}: label the sessions that loop with --expect, or choose with --pick {}=VALUE",
                    v.target, v.target
                ))
            }
        }
    }
    let existing = read_existing(path)?;
    let (text, changes) =
        merge(existing.as_deref().unwrap_or(""), profile, &values).map_err(|e| format!("{shown}: {e}"))?;
    // What scan would read from it: it loads, and the values take effect.
    let setup = Setup::resolve_with(&Choices::default(), &text)
        .map_err(|e| format!("{shown}: would not load as a config after the change ({e}); not written"))?;
    let idle: Vec<&str> = values
        .iter()
        .filter(|(id, ..)| !setup.ids().contains(id))
        .map(|(id, ..)| *id)
        .collect();
    let write = !changes.is_empty() && !opts.dry_run;
    if write {
        crate::files::write_atomically(path, |w| w.write_all(text.as_bytes()))?;
    }
    let io = |e: io::Error| loopscope_core::io_reason(&e);
    if opts.json {
        let changes: Vec<serde_json::Value> = changes
            .iter()
            .map(|c| serde_json::json!({"key": c.key, "from": c.from, "to": c.to}))
            .collect();
        let rec = serde_json::json!({
            "type": "config",
            "schema": crate::output::SCHEMA,
            "file": path.display().to_string(),
            "written": write,
            "changes": changes,
        });
        return writeln!(out, "{}", loopscope_core::sanitize::json(&rec.to_string())).map_err(io);
    }
    let head = match (changes.is_empty(), opts.dry_run) {
        (true, _) => format!("{shown} already holds these values; nothing written"),
        (false, true) => format!("would write {shown} (--dry-run: nothing written):"),
        (false, false) => format!("wrote {shown} (--config {shown} reads it):"),
    };
    writeln!(out, "\n{head}").map_err(io)?;
    for c in &changes {
        let was = c.from.as_ref().map_or("new".to_string(), |f| format!("was {f}"));
        writeln!(out, "  {} = {}  ({was})", c.key, c.to).map_err(io)?;
    }
    for id in idle {
        writeln!(
            out,
            "  note: the file's `detectors` leaves {id} out: its value waits until it runs"
        )
        .map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_keeps_comments_and_other_keys() {
        let file = "# mine\ndetectors = [\"block-cycle\", \"tool-repeat\"]\n\n[block-cycle]\n# why 6\nmin_matches = 6  # the default\ncheckpoints = [2000, 3000]\n\n[judge]\nmodel = \"m\"\n";
        let (text, changes) = merge(
            file,
            Profile::Seed,
            &[
                ("block-cycle", "min_matches", &Value::Count(9)),
                ("tool-repeat", "threshold", &Value::Count(4)),
            ],
        )
        .unwrap();
        assert_eq!(
            text,
            "# mine\ndetectors = [\"block-cycle\", \"tool-repeat\"]\n\n[block-cycle]\n# why 6\nmin_matches = 9  # the default\ncheckpoints = [2000, 3000]\n\n[judge]\nmodel = \"m\"\n\n[tool-repeat]\nthreshold = 4\n"
        );
        assert_eq!(changes[0].from.as_deref(), Some("6"));
        assert_eq!(changes[1].from, None);
        let (again, none) = merge(
            &text,
            Profile::Seed,
            &[("block-cycle", "min_matches", &Value::Count(9))],
        )
        .unwrap();
        assert_eq!((again.as_str(), none.len()), (text.as_str(), 0));
    }

    #[test]
    fn the_profile_tuned_under_is_named_or_the_file_refused() {
        let (text, changes) = merge(
            "",
            Profile::GeminiCli,
            &[("chunk-chant", "threshold", &Value::Count(12))],
        )
        .unwrap();
        assert_eq!(text, "profile = \"gemini-cli\"\n\n[chunk-chant]\nthreshold = 12\n");
        assert_eq!(changes[0].key, "profile");
        let err = merge("profile = \"seed\"\n", Profile::GeminiCli, &[]).unwrap_err();
        assert!(err.contains("runs profile seed"), "{err}");
        assert!(merge("[x\n", Profile::Seed, &[])
            .unwrap_err()
            .contains("not valid TOML"));
    }
}
