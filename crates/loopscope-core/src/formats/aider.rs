//! aider's chat history (`<git root>/.aider.chat.history.md`;
//! Aider-AI/aider `aider/io.py`, read at 0.86.2): the Markdown transcript a
//! person reads, not a log. `#### ` lines are what the user typed, `> `
//! lines what aider printed, the rest the model's answer, with its
//! reasoning inside aider's `<thinking-content-…>` tags. aider has no tool
//! calls and writes no times but a session's start.
//!
//! Only what the history says is read: an edit the model proposed is a
//! call once aider says what became of it ("Applied edit to PATH", or "The
//! LLM did not conform to the edit format" and which blocks failed); a
//! proposal nobody applied (an `/ask` or architect answer, an interrupted
//! one) stays text. A shell command is a call when aider ran it
//! ("Running CMD"), and `/run`, `/test`, `/lint` when typed. Their output
//! is never in the file: `/test` failed when aider added its output to the
//! chat (it does so only on a non-zero exit), `/lint` when it found errors.
//!
//! aider writes a multi-line message of its own (an edit error, lint
//! output, a commit message) with `> ` on its first line only, and that
//! line alone lacks the Markdown line break (two trailing spaces): the raw
//! lines after it are aider's, up to the next line that has one.

use serde_json::{json, Value};

use super::lines::Lines;
use super::{Args, Decoder, Format, Item, Out};
use crate::event::Ts;

pub const HEADER: &str = "# aider chat started at ";
const THINK_OPEN: &str = "<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>";
const THINK_CLOSE: &str = "</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>";
const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";
/// The Markdown line break aider ends each line of its own with.
const BREAK: &str = "  ";

pub fn decoder() -> AiderDecoder {
    AiderDecoder::default()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Block {
    #[default]
    None,
    User,
    Quote,
    Answer,
}

/// A SEARCH/REPLACE block the last answer proposed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edit {
    path: String,
    search: String,
    /// `None`: the block is malformed (no divider or no end).
    replace: Option<String>,
}

impl Edit {
    fn args(&self) -> Value {
        match &self.replace {
            Some(replace) => json!({"path": self.path, "search": self.search, "replace": replace}),
            None => json!({"path": self.path, "search": self.search, "malformed": true}),
        }
    }
}

/// A command aider ran, waiting for what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Command {
    name: &'static str,
    /// Output added to the chat means failure (`/test`), else success.
    output_means_failure: bool,
    failed: bool,
    output: Option<String>,
}

#[derive(Default)]
pub struct AiderDecoder {
    lines: Lines,
    block: Block,
    text: Vec<String>,
    /// The line the block started on.
    start: u64,
    ts: Option<Ts>,
    /// The raw lines after an unbroken `> ` line are aider's output.
    continuation: bool,
    /// Edits of the last answer, waiting for aider's verdict.
    edits: Vec<Edit>,
    command: Option<Command>,
    said: bool,
    /// Inside a ``` fence of an answer.
    fenced: bool,
}

/// What aider said of the last answer's edits, in one run of its output.
#[derive(Debug, Default)]
struct Verdict {
    applied: Vec<String>,
    /// "did not conform", with aider's first reason line.
    rejected: Option<String>,
    /// The blocks aider echoed as failing: (path, search text).
    failing: Vec<(String, String)>,
    /// "The other N SEARCH/REPLACE blocks were applied successfully."
    others_applied: bool,
}

impl AiderDecoder {
    fn line(&mut self, n: u64, raw: &[u8], out: &mut Vec<Item>) {
        let raw = String::from_utf8_lossy(raw);
        let raw = raw.trim_end_matches('\r');
        let broken = raw.ends_with(BREAK);
        let line = raw.trim_end_matches([' ', '\t']);
        if self.continuation {
            // aider's own output, to the line with the break.
            self.text.push(line.to_string());
            self.continuation = !broken;
            return;
        }
        if let Some(time) = line.strip_prefix(HEADER) {
            self.flush(out);
            self.drop_pending(out, n);
            self.ts = super::ts_of(time.trim());
            let mut o = Out::new(out, n);
            o.ts = self.ts.clone();
            if !std::mem::replace(&mut self.said, true) {
                o.note("aider chat history: edits are calls once aider applied or refused them, commands once it ran them; there are no times but each session's start");
            }
            o.note(format!("aider chat started at {}", time.trim()));
            return;
        }
        // Inside a fenced block of an answer every line is the answer's
        // (a `>>>>>>> REPLACE` marker is not aider's output), but for
        // aider's own lines, which end with its line break: an answer cut
        // short (interrupted, out of tokens) leaves its fence open.
        let aiders = broken && (line.starts_with("#### ") || line == "####" || line.starts_with("> ") || line == ">");
        let kind = if self.block == Block::Answer && self.fenced && !aiders {
            Block::Answer
        } else if line.starts_with("#### ") || line == "####" {
            Block::User
        } else if line.starts_with("> ") || line == ">" {
            Block::Quote
        } else if line.is_empty() && self.block != Block::Answer {
            // A blank line ends what the user typed and aider's output
            // (`/ask Q`, a blank line, then `#### Q` are two turns).
            self.flush(out);
            return;
        } else {
            Block::Answer
        };
        if kind != self.block {
            self.flush(out);
            self.block = kind;
            self.start = n;
        }
        match kind {
            Block::User => self.text.push(line.trim_start_matches('#').trim_start().to_string()),
            Block::Quote => {
                self.text.push(line.trim_start_matches('>').trim_start().to_string());
                self.continuation = line != ">" && !broken;
            }
            Block::Answer => {
                if line.trim_start().starts_with("```") {
                    self.fenced = !self.fenced;
                }
                self.text.push(line.to_string());
            }
            Block::None => {}
        }
    }

    /// The block that ended, as events.
    fn flush(&mut self, out: &mut Vec<Item>) {
        let text = std::mem::take(&mut self.text).join("\n");
        let block = std::mem::take(&mut self.block);
        self.fenced = false;
        self.continuation = false;
        if text.trim().is_empty() {
            return;
        }
        match block {
            Block::User => {
                self.drop_pending(out, self.start);
                self.user(text.trim(), &mut Out::new(out, self.start));
            }
            Block::Quote => self.quote(&text, out),
            Block::Answer => {
                self.drop_pending(out, self.start);
                self.answer(&text, &mut Out::new(out, self.start));
            }
            Block::None => {}
        }
    }

    /// A new turn or answer: edits nobody applied stay text; a command
    /// whose output was not added to the chat ends as it is.
    fn drop_pending(&mut self, out: &mut Vec<Item>, line: u64) {
        self.edits.clear();
        if let Some(c) = self.command.take() {
            let mut o = Out::new(out, line);
            o.ts = self.ts.clone();
            o.tool_result(None, !c.failed, c.output.map(Value::String));
        }
    }

    fn user(&mut self, text: &str, o: &mut Out<'_>) {
        o.ts = self.ts.clone();
        let (cmd, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let command = match cmd {
            "/run" | "/test" | "/lint" => Some(&cmd[1..]),
            _ => None,
        };
        match command {
            Some(name) => {
                o.tool_call(None, name, Args::Json(json!({ "command": rest.trim() })));
                self.command = Some(Command {
                    name: match name {
                        "run" => "run",
                        "test" => "test",
                        _ => "lint",
                    },
                    output_means_failure: name == "test",
                    failed: false,
                    output: None,
                });
            }
            None if cmd.starts_with('/') => o.note(format!("aider command: {text}")),
            None => o.prompt(text),
        }
    }

    /// What aider printed: verdicts on edits, commands it ran, API errors, usage.
    fn quote(&mut self, text: &str, out: &mut Vec<Item>) {
        let mut o = Out::new(out, self.start);
        o.ts = self.ts.clone();
        let mut verdict = Verdict::default();
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.next() {
            let l = l.trim_end();
            if let Some(path) = l.strip_prefix("Applied edit to ") {
                verdict.applied.push(path.trim().to_string());
            } else if l.contains("did not conform to the edit format") {
                verdict.rejected.get_or_insert_with(|| l.to_string());
            } else if let Some(path) = l.split("failed to exactly match lines in ").nth(1) {
                // The echoed block follows: its SEARCH text names it.
                let mut search = Vec::new();
                if lines.peek().is_some_and(|n| n.trim_end() == SEARCH) {
                    lines.next();
                    for s in lines.by_ref() {
                        if s.trim_end() == DIVIDER {
                            break;
                        }
                        search.push(s);
                    }
                }
                verdict.failing.push((path.trim().to_string(), search.join("\n")));
            } else if l.starts_with("# The other ") && l.contains("were applied successfully") {
                verdict.others_applied = true;
            } else if verdict.rejected.is_some()
                && (l.starts_with("^^^ ") || l.starts_with("No filename provided") || l.contains("failed to match!"))
            {
                if let Some(r) = verdict.rejected.as_mut() {
                    if !r.contains(" — ") {
                        r.push_str(" — ");
                        r.push_str(l);
                    }
                }
            } else if let Some(cmd) = l.strip_prefix("Running ") {
                // What aider said of the edits came first.
                self.judge(std::mem::take(&mut verdict), &mut o);
                self.close_command(&mut o);
                o.tool_call(None, "shell", Args::Json(json!({ "command": cmd.trim() })));
                self.command = Some(Command {
                    name: "shell",
                    output_means_failure: false,
                    failed: false,
                    output: None,
                });
            } else if l.starts_with("Added ") && l.contains("of output to the chat") {
                if let Some(c) = self.command.as_mut() {
                    c.failed |= c.output_means_failure;
                    c.output = Some(l.to_string());
                }
                self.close_command(&mut o);
            } else if (l.starts_with("# Fix any errors below") || l.starts_with("No git repository found"))
                && self.command.as_ref().is_some_and(|c| c.name == "lint")
            {
                if let Some(c) = self.command.as_mut() {
                    c.failed = true;
                    c.output.get_or_insert_with(|| l.to_string());
                }
            } else if l.starts_with("litellm.")
                || l.contains("APIConnectionError")
                || l.contains("RateLimitError")
                || l.contains("Overloaded")
            {
                o.api_error(l);
            } else if l.starts_with("^C") || (l.starts_with("Only ") && l.contains("reflections allowed")) {
                o.note(format!("aider: {l}"));
            } else if let Some(tokens) = l.strip_prefix("Tokens: ") {
                // "Tokens: 4.1k sent, 152 received. Cost: …"
                let received = tokens
                    .split(" received")
                    .next()
                    .filter(|_| tokens.contains(" received"));
                let count = received.and_then(|r| r.rsplit(", ").next());
                if let Some(n) = count.and_then(parse_count) {
                    o.usage(n);
                }
            }
        }
        self.judge(verdict, &mut o);
    }

    /// Closes the command aider is running, if any.
    fn close_command(&mut self, o: &mut Out<'_>) {
        if let Some(c) = self.command.take() {
            o.tool_result(None, !c.failed, c.output.map(Value::String));
        }
    }

    /// The last answer's edits as calls, with what aider said of them.
    fn judge(&mut self, v: Verdict, o: &mut Out<'_>) {
        if v.applied.is_empty() && v.rejected.is_none() {
            return;
        }
        let edits = std::mem::take(&mut self.edits);
        for e in &edits {
            let echoed = v.failing.iter().any(|(p, s)| *p == e.path && *s == e.search);
            let failed = match &v.rejected {
                None => false,
                Some(_) if e.replace.is_none() => true,
                Some(_) if !v.failing.is_empty() => echoed || !v.others_applied,
                Some(_) => !v.applied.contains(&e.path),
            };
            o.tool_call(None, "edit", Args::Json(e.args()));
            let said = match (&v.rejected, failed) {
                (Some(r), true) => r.clone(),
                _ => format!("Applied edit to {}", e.path),
            };
            o.tool_result(None, !failed, Some(Value::String(said)));
        }
        // A whole-file edit ("path", then the file in a fence): no block.
        for path in v.applied.iter().filter(|p| !edits.iter().any(|e| e.path == **p)) {
            o.tool_call(None, "write", Args::Json(json!({ "path": path })));
            o.tool_result(None, true, Some(Value::String(format!("Applied edit to {path}"))));
        }
        if let (Some(r), true) = (&v.rejected, edits.is_empty()) {
            o.note(format!("aider: {r}"));
        }
    }

    /// The model's answer: reasoning, text, and the edits it proposes.
    fn answer(&mut self, text: &str, o: &mut Out<'_>) {
        o.ts = self.ts.clone();
        o.request(None);
        let mut body = text;
        if let Some(start) = text.find(THINK_OPEN) {
            let after = &text[start + THINK_OPEN.len()..];
            let (thought, rest) = after.split_once(THINK_CLOSE).unwrap_or((after, ""));
            o.reasoning(thought.trim());
            body = rest;
        }
        o.content(body.trim());
        self.edits = edits_in(body);
    }
}

/// The SEARCH/REPLACE blocks of an answer, malformed ones included.
fn edits_in(body: &str) -> Vec<Edit> {
    let lines: Vec<&str> = body.lines().collect();
    let mut edits = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != SEARCH {
            i += 1;
            continue;
        }
        // The file name is on the line before the fence.
        let path = (1..=2)
            .filter_map(|k| i.checked_sub(k).map(|j| lines[j].trim()))
            .find(|l| !l.starts_with("```") && !l.is_empty())
            .unwrap_or_default()
            .to_string();
        let block_end = lines[i + 1..]
            .iter()
            .position(|l| l.trim_end() == SEARCH || l.trim_start().starts_with("```"))
            .map_or(lines.len(), |p| p + i + 1);
        let within = &lines[i + 1..block_end];
        let divider = within.iter().position(|l| l.trim_end() == DIVIDER);
        let end = within.iter().position(|l| l.trim_end().starts_with(REPLACE));
        match (divider, end) {
            (Some(d), Some(e)) if d < e => edits.push(Edit {
                path,
                search: within[..d].join("\n"),
                replace: Some(within[d + 1..e].join("\n")),
            }),
            // No divider (or none before the end): what it searched for
            // runs to the divider, the end marker, or the fence.
            (d, e) => edits.push(Edit {
                path,
                search: within[..d.or(e).unwrap_or(within.len())].join("\n"),
                replace: None,
            }),
        }
        i = block_end;
    }
    edits
}

/// "152", "4.1k", "1.2M".
fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' => (&s[..s.len() - 1], 1e3),
        'M' => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    num.parse::<f64>().ok().map(|n| (n * mult) as u64)
}

impl Decoder for AiderDecoder {
    fn set_max_record(&mut self, bytes: usize) {
        self.lines.set_max_record(bytes);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |n, raw| self.line(n, raw, out));
        super::report_overlong(lines.take_overlong(), lines.max_record(), out);
        self.lines = lines;
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|n, raw| self.line(n, raw, out));
        super::report_overlong(lines.take_overlong(), lines.max_record(), out);
        self.lines = lines;
        self.flush(out);
        let end = self.start;
        self.drop_pending(out, end);
    }

    fn caught_up(&mut self, out: &mut Vec<Item>) {
        // A user line or aider's output is complete once written; an answer
        // may still be streaming into the file.
        if matches!(self.block, Block::User | Block::Quote) && !self.continuation {
            self.flush(out);
        }
    }

    fn format(&self) -> Option<Format> {
        Some(Format::Aider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::Decoded;

    fn kinds(d: &Decoded) -> Vec<&str> {
        d.events.iter().map(|e| e.type_name()).collect()
    }

    fn results(d: &Decoded) -> Vec<bool> {
        d.events
            .iter()
            .filter(|e| e.type_name() == "tool_result")
            .map(|e| e.to_json()["ok"].as_bool().unwrap())
            .collect()
    }

    #[test]
    fn prompts_answers_edits_and_commands() {
        let md = "# aider chat started at 2026-09-14 09:12:03\n\n> Aider v0.86.1  \n\n#### Fix it.  \n\n<thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\n\nhmm\n\n</thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b>\n\nDone.\n\nsrc/a.rs\n```rust\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n\n> Tokens: 4.1k sent, 152 received. Cost: $0.01 message.  \n> Applied edit to src/a.rs  \n\n#### /test cargo test  \n> Added 12 lines of output to the chat.  \n\n";
        let d = Decoded::from_bytes(md.as_bytes(), &mut decoder());
        assert_eq!(
            kinds(&d),
            [
                "note",
                "note",
                "prompt",
                "request",
                "reasoning",
                "content",
                "tool_call",
                "tool_result",
                "tool_call",
                "tool_result"
            ]
        );
        assert_eq!(d.events[6].to_json()["args"]["path"], "src/a.rs");
        assert_eq!(d.events[5].to_json()["usage"]["output_tokens"], 152);
        assert_eq!(results(&d), [true, false], "/test added output: it failed");
        assert!(d.events.iter().all(|e| e.ts.is_some()));
    }

    #[test]
    fn an_echoed_failure_is_aider_output_not_an_edit_and_only_the_failing_block_fails() {
        let md = "#### Change it.  \n\nnotes.txt\n```\n<<<<<<< SEARCH\nmissing\n=======\nnew\n>>>>>>> REPLACE\n```\n\nb.txt\n```\n<<<<<<< SEARCH\nthere\n=======\nnew\n>>>>>>> REPLACE\n```\n\n> Tokens: 2.4k sent, 109 received.  \n> The LLM did not conform to the edit format.  \n> https://aider.chat/docs/troubleshooting/edit-errors.html  \n> # 1 SEARCH/REPLACE block failed to match!\n\n## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in notes.txt\n<<<<<<< SEARCH\nmissing\n=======\nnew\n>>>>>>> REPLACE\n\n# The other 1 SEARCH/REPLACE block were applied successfully.\nDon't re-send them.  \n";
        let d = Decoded::from_bytes(md.as_bytes(), &mut decoder());
        let calls: Vec<String> = d
            .events
            .iter()
            .filter(|e| e.type_name() == "tool_call")
            .map(|e| e.to_json()["args"]["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(calls, ["notes.txt", "b.txt"], "no call from the echo");
        assert_eq!(results(&d), [false, true]);
    }

    #[test]
    fn a_malformed_block_is_a_failed_call_and_a_proposal_nobody_applied_is_text() {
        let md = "#### Change it.  \n\nnotes.txt\n```\n<<<<<<< SEARCH\nold\n>>>>>>> REPLACE\n```\n\n> The LLM did not conform to the edit format.  \n> notes.txt\n<<<<<<< SEARCH\nold\n^^^ Expected `=======`  \n\n#### /ask what now?  \n\n#### what now?  \n\nnotes.txt\n```\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n\n#### thanks  \n";
        let d = Decoded::from_bytes(md.as_bytes(), &mut decoder());
        assert_eq!(results(&d), [false]);
        assert_eq!(d.events.iter().filter(|e| e.type_name() == "tool_call").count(), 1);
        let prompts: Vec<String> = d
            .events
            .iter()
            .filter(|e| e.type_name() == "prompt")
            .map(|e| e.to_json()["text"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(prompts, ["Change it.", "what now?", "thanks"]);
    }

    #[test]
    fn shell_commands_aider_ran_and_whole_file_edits() {
        let md = "#### go  \n\nnotes.txt\n```\nhello\n```\n\n> Applied edit to notes.txt  \n> cat notes.txt  \n> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n> Running cat notes.txt  \n> Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: y  \n> Added 2 lines of output to the chat.  \n";
        let d = Decoded::from_bytes(md.as_bytes(), &mut decoder());
        let calls: Vec<String> = d
            .events
            .iter()
            .filter(|e| e.type_name() == "tool_call")
            .map(|e| e.to_json()["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(calls, ["write", "shell"]);
        assert_eq!(results(&d), [true, true]);
    }
}
