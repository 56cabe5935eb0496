//! aider's chat history Markdown (`.aider.chat.history.md`): `#### ` lines
//! are what the user typed, `> ` lines what aider printed (each ending in
//! the Markdown line break, two spaces), the rest the model's answers. A
//! multi-line message of aider's own has `> ` on its first line only, and
//! that line alone lacks the break: the raw lines after it are aider's, up
//! to the next line that has one.
//!
//! Prompts and commands are exact. Edits are not: aider prints one
//! "Applied edit to PATH" per file, not per SEARCH/REPLACE block, so how
//! many blocks an applied answer had is only bounded: at least one per
//! such line plus the blocks aider says it applied beside a failure ("The
//! other N … were applied") plus the failed blocks it echoes; at most every
//! block the model wrote plus one whole-file write per such line. Failures
//! are exact: aider echoes every block that failed to match, a malformed
//! block fails its whole answer, /test failed when aider added its output,
//! /lint when it found errors.

use super::{Bound, Truth};

const BREAK: &str = "  ";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    User,
    Aider,
    Answer,
}

#[derive(Default)]
struct Tally {
    prompts: usize,
    commands: usize,
    applied: usize,
    others_applied: usize,
    echoed_failures: usize,
    /// Blocks of answers that had a malformed block.
    malformed_failures: usize,
    blocks: usize,
    failed_commands: usize,
}

/// "# The other N SEARCH/REPLACE block(s) were applied successfully." → N.
fn others_applied(line: &str) -> Option<usize> {
    let n = line.strip_prefix("# The other ")?.split_whitespace().next()?;
    line.contains("were applied successfully").then(|| n.parse().ok())?
}

/// What aider prints when the /test or /lint it runs found a problem: a
/// failing test's output added to the chat (only then is it added), lint
/// errors to fix, or no repository to lint.
fn command_failed(said: &str, pending: Option<&str>) -> bool {
    match pending {
        Some("test") => said.starts_with("Added ") && said.contains("of output to the chat"),
        Some("lint") => said.starts_with("# Fix any errors below") || said.starts_with("No git repository found"),
        _ => false,
    }
}

pub fn count(text: &str) -> Result<Truth, String> {
    let mut t = Tally::default();
    let (mut user, mut continuation, mut fenced) = (Vec::<String>::new(), false, false);
    let mut last = Last::User;
    let mut answer_blocks = 0;
    // A typed /test or /lint, until aider says what it found.
    let mut pending: Option<&str> = None;
    let end_user_block = |user: &mut Vec<String>, t: &mut Tally, pending: &mut Option<&str>| {
        let typed = user.join("\n");
        let typed = typed.trim();
        user.clear();
        match typed.split_whitespace().next() {
            None => {}
            Some(cmd @ ("/run" | "/test" | "/lint")) => {
                t.commands += 1;
                *pending = match cmd {
                    "/test" => Some("test"),
                    "/lint" => Some("lint"),
                    _ => None,
                };
            }
            Some(cmd) if cmd.starts_with('/') => {}
            Some(_) => t.prompts += 1,
        }
    };
    for raw in text.split('\n') {
        let raw = raw.trim_end_matches('\r');
        let broken = raw.ends_with(BREAK);
        let line = raw.trim_end();
        let aider_line = |l: &str| l.starts_with("> ") || l == ">";
        if continuation {
            continuation = !broken;
        } else if (line.starts_with("#### ") || line == "####") && (!fenced || broken) {
            user.push(line.trim_start_matches('#').trim().to_string());
            last = Last::User;
            continue;
        } else if aider_line(line) && (!fenced || broken) {
            continuation = line != ">" && !broken;
            fenced = false;
            last = Last::Aider;
        } else if line.is_empty() {
            end_user_block(&mut user, &mut t, &mut pending);
            continue;
        } else {
            end_user_block(&mut user, &mut t, &mut pending);
            if last != Last::Answer {
                answer_blocks = 0;
                pending = None;
            }
            last = Last::Answer;
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if line == "<<<<<<< SEARCH" {
                answer_blocks += 1;
                t.blocks += 1;
            }
            continue;
        }
        // What aider printed (a '> ' line or the raw lines after it).
        end_user_block(&mut user, &mut t, &mut pending);
        let said = line.strip_prefix("> ").unwrap_or(line).trim();
        if said.starts_with("Applied edit to ") {
            t.applied += 1;
        } else if said.starts_with("Running ") {
            t.commands += 1;
        } else if said.contains("failed to exactly match lines in ") {
            t.echoed_failures += 1;
        } else if let Some(n) = others_applied(said) {
            t.others_applied += n;
        } else if said.starts_with("^^^ Expected") {
            // A malformed block: aider applies nothing of that answer.
            t.malformed_failures += answer_blocks.max(1);
            answer_blocks = 0;
        } else if command_failed(said, pending) {
            t.failed_commands += 1;
            pending = None;
        }
    }
    end_user_block(&mut user, &mut t, &mut pending);
    let edits = Bound::between(
        t.applied + t.others_applied + t.echoed_failures + t.malformed_failures,
        t.applied + t.blocks,
    );
    let calls = Bound::between(t.commands + edits.lo, t.commands + edits.hi);
    Ok(Truth {
        prompts: Bound::exact(t.prompts),
        calls,
        results: calls,
        failed: Bound::exact(t.echoed_failures + t.malformed_failures + t.failed_commands),
        cancelled: Bound::exact(0),
        calls_named: vec![
            (&["shell", "run", "test", "lint"], Bound::exact(t.commands)),
            (&["edit", "write"], edits),
        ],
    })
}
