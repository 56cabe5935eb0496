//! Which tool calls may change what another call would see: edits, writes,
//! moves and deletions, installs, commits, and shell commands that do any of
//! these. A read repeated with the same result after one of them may be
//! checking its effect (a failing test re-run after a new edit is
//! debugging); a read repeated with nothing of the kind in between learns
//! nothing new.
//!
//! Judged from the tool's name, its verb argument (`command: "view"` of a
//! combined editor tool) and, for a shell tool, its command line. Unknown
//! tools count as reads: tests, builds and queries observe.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Words of a tool name or verb that change something.
const WRITES: &[&str] = &[
    "add",
    "append",
    "apply",
    "commit",
    "create",
    "del",
    "delete",
    "edit",
    "insert",
    "install",
    "mkdir",
    "modify",
    "move",
    "mv",
    "overwrite",
    "patch",
    "post",
    "push",
    "put",
    "remove",
    "rename",
    "replace",
    "rm",
    "save",
    "set",
    "touch",
    "update",
    "upload",
    "write",
];

/// Words of a tool name that keep the agent's own plan or thoughts
/// (`TodoWrite`, `write_todos`, `update_plan`, `think`, the
/// `sequentialthinking` server): bookkeeping. Writing a plan changes no
/// file, command or page another call would see, and an agent that
/// re-plans in other words before it runs the same steps again has done
/// nothing new (openai/codex#7049: `update_plan`, then the same `git
/// status` and `git push` with the same answers, again and again).
const PLANS: &[&str] = &[
    "plan",
    "sequentialthinking",
    "think",
    "thinking",
    "thought",
    "thoughts",
    "todo",
    "todos",
];

/// Words of a verb that only look.
const READS: &[&str] = &[
    "cat", "fetch", "find", "get", "grep", "inspect", "list", "lookup", "ls", "open", "query", "read", "search",
    "show", "status", "view",
];

/// Words of a tool name that run a command line.
const SHELLS: &[&str] = &[
    "bash",
    "cmd",
    "command",
    "console",
    "exec",
    "execute",
    "powershell",
    "run",
    "sh",
    "shell",
    "terminal",
    "zsh",
];

/// Argument fields that name what a combined tool does (`str_replace_editor`'s `command`).
const VERBS: &[&str] = &["command", "action", "operation", "op", "mode", "subcommand"];

/// Argument fields that hold a shell tool's command line.
const LINES: &[&str] = &["command", "cmd", "script", "input", "code"];

/// A command line that writes: a redirection into a file, or a program or
/// subcommand that changes files, the repository or the installed packages.
static SHELL_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?x)
        (?:^|[^-=<>&0-9\s]\s*|\s)>>?\s*[^&\s>=]           # > file, >> file (not 2>&1, ->, =>, >=)
        | (?:^|[;&|(\s])(?:rm|rmdir|mv|cp|mkdir|touch|tee|chmod|chown|ln|patch|truncate|dd|apply_patch|unzip|tar\s+-?x)\b
        | \bsed\s+(?:-[a-zA-Z]*i|--in-place)
        | \bperl\s+-[a-zA-Z]*i
        | \bgit\s+(?:add|commit|apply|am|checkout|switch|reset|restore|merge|rebase|cherry-pick|revert|stash|push|pull|rm|mv|clean)\b
        | \b(?:npm|pnpm|yarn|pip3?|uv|poetry|cargo|go|apt|apt-get|brew|gem|conda|bun)\s+(?:install|add|remove|uninstall|update|upgrade|i|get)\b
        ",
    )
    .expect("valid shell-write regex")
});

/// The lowercase words of a name: split at anything not a letter or digit
/// and between a lowercase letter and a capital (`MultiEdit`, `write_file`).
fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn any_of(words: &[String], set: &[&str]) -> bool {
    words.iter().any(|w| set.contains(&w.as_str()))
}

/// A string field of the arguments, if they are an object that has one of `fields`.
fn field<'a>(args: &'a Value, fields: &[&str]) -> Option<&'a str> {
    let map = args.as_object()?;
    fields.iter().find_map(|f| map.get(*f)?.as_str())
}

/// A shell tool's command line: its arguments as a string, an argument
/// vector, or one of the [`LINES`] fields holding either.
fn command_line(args: &Value) -> Option<String> {
    match args {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => Some(items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => LINES
            .iter()
            .find_map(|f| map.get(*f).filter(|v| !v.is_object()))
            .and_then(command_line),
        _ => None,
    }
}

/// Whether a tool only keeps the agent's plan or thoughts ([`PLANS`]);
/// a shell tool never does (what it runs decides).
pub(super) fn bookkeeping(name: &str) -> bool {
    let name_words = words(name);
    !any_of(&name_words, SHELLS) && any_of(&name_words, PLANS)
}

/// Whether a call may change what another call would see.
pub(super) fn changes(name: &str, args: &Value) -> bool {
    let name_words = words(name);
    if any_of(&name_words, SHELLS) {
        return command_line(args).is_some_and(|l| SHELL_WRITE.is_match(&l));
    }
    // Its own plan is no change to what the other calls see.
    if bookkeeping(name) {
        return false;
    }
    // A one-word verb argument that says what a combined tool does decides.
    if let Some(verb) = field(args, VERBS).filter(|v| !v.contains(char::is_whitespace) && v.len() <= 40) {
        let verb_words = words(verb);
        if any_of(&verb_words, WRITES) {
            return true;
        }
        if any_of(&verb_words, READS) {
            return false;
        }
    }
    any_of(&name_words, WRITES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_and_writes_change_reads_and_queries_do_not() {
        for (name, args) in [
            ("edit_file", json!({"path": "a.rs"})),
            ("Write", json!({"file_path": "a.rs"})),
            ("MultiEdit", json!({})),
            ("replace", json!({"file_path": "a.rs"})),
            ("str_replace_editor", json!({"command": "str_replace", "path": "a.rs"})),
            ("str_replace_editor", json!({"command": "create", "path": "a.rs"})),
            ("edit_file", json!({"path": "a.rs", "mode": "fast"})),
            ("apply_patch", json!({"input": "*** Begin Patch"})),
            ("run_shell_command", json!({"command": "sed -i 's/a/b/' a.rs"})),
            ("bash", json!({"command": "echo x > notes.md"})),
            ("bash", json!({"command": "cat a >> b"})),
            ("shell", json!({"command": ["bash", "-lc", "git commit -am wip"]})),
            ("execute_command", json!({"command": "npm install left-pad"})),
            ("terminal", json!({"command": "mkdir -p out && cp a out/"})),
        ] {
            assert!(changes(name, &args), "{name} {args}");
        }
        for (name, args) in [
            ("read_file", json!({"path": "PLAN.md"})),
            ("Read", json!({"file_path": "a.rs"})),
            ("grep", json!({"pattern": "fn main"})),
            ("list_directory", json!({"path": "."})),
            ("str_replace_editor", json!({"command": "view", "path": "a.rs"})),
            ("edit_file", json!({"path": "a.rs", "mode": "view"})),
            ("TodoRead", json!({})),
            // The agent's own plan: bookkeeping, not a change.
            ("TodoWrite", json!({"todos": []})),
            (
                "update_plan",
                json!({"plan": [{"step": "push", "status": "in_progress"}]}),
            ),
            ("write_todos", json!({"todos": []})),
            ("think", json!({"thought": "the config is wrong"})),
            ("run_tests", json!({"filter": "date"})),
            ("bash", json!({"command": "cat PLAN.md"})),
            ("bash", json!({"command": "cargo test 2>&1 | tail -20"})),
            ("run_shell_command", json!({"command": "git status && git diff HEAD~1"})),
            ("shell", json!({"command": ["bash", "-lc", "ls -la src"]})),
            ("execute_command", json!({"command": "python -c 'print(1 >= 0)'"})),
            ("web_search", json!({"query": "set up rust"})),
        ] {
            assert!(!changes(name, &args), "{name} {args}");
        }
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("MultiEdit"), ["multi", "edit"]);
        assert_eq!(words("write_file"), ["write", "file"]);
        assert_eq!(words("mcp__fs__readFile"), ["mcp", "fs", "read", "file"]);
        assert_eq!(words("HTTPGet"), ["httpget"]);
    }

    #[test]
    fn plans_and_thoughts_are_bookkeeping() {
        for name in [
            "TodoWrite",
            "update_plan",
            "write_todos",
            "think",
            "mcp__st__sequentialthinking",
            "ExitPlanMode",
        ] {
            assert!(bookkeeping(name), "{name}");
        }
        for name in ["bash", "run_shell_command", "edit_file", "read_file", "Write"] {
            assert!(!bookkeeping(name), "{name}");
        }
    }
}
