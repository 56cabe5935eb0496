//! The conversation as the judge is shown it: the user's messages, the
//! model's turns and tool calls, as chat messages, bounded.

use std::collections::VecDeque;

use serde_json::{json, Value};

use loopscope_core::event::{Event, EventKind};

/// The conversation as the judge sees it: chat messages, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    original: Option<String>,
    entries: VecDeque<Entry>,
    /// The model turn being streamed: its text and tool calls.
    text: String,
    calls: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
enum Entry {
    User(String),
    /// Model text and the tool calls it made.
    Model {
        text: String,
        calls: Vec<String>,
    },
    ToolResponse(String),
}

/// Entries kept at most (the request sends the last `history` of them).
const MAX_ENTRIES: usize = 200;

impl Conversation {
    fn close_model(&mut self) {
        if !self.text.is_empty() || !self.calls.is_empty() {
            let e = Entry::Model {
                text: std::mem::take(&mut self.text),
                calls: std::mem::take(&mut self.calls),
            };
            self.push(e);
        }
    }

    fn push(&mut self, e: Entry) {
        self.entries.push_back(e);
        if self.entries.len() > MAX_ENTRIES {
            self.entries.pop_front();
        }
    }

    pub fn observe(&mut self, e: &Event) {
        match &e.kind {
            EventKind::Prompt { text } => {
                *self = Conversation::default();
                self.original = text.clone();
                if let Some(t) = text {
                    self.push(Entry::User(t.clone()));
                }
            }
            EventKind::Request { .. } => self.close_model(),
            EventKind::Content { text } => self.text.push_str(text),
            EventKind::ToolCall { name, args, .. } => self.calls.push(format!("{name}({args})")),
            EventKind::ToolResult { ok, output, .. } => {
                self.close_model();
                let out = match output {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                let status = if *ok { "ok" } else { "error" };
                self.push(Entry::ToolResponse(format!("[{status}] {}", cut(&out, 4000))));
            }
            _ => {}
        }
    }

    /// The last `history` entries, as gemini-cli trims them: trailing model
    /// entries made only of tool calls and leading tool responses removed.
    fn window(&self, history: usize) -> Vec<&Entry> {
        let mut w: Vec<&Entry> = self.entries.iter().rev().take(history).collect();
        w.reverse();
        while matches!(w.last(), Some(Entry::Model { text, .. }) if text.is_empty()) {
            w.pop();
        }
        let lead = w.iter().take_while(|e| matches!(e, Entry::ToolResponse(_))).count();
        w.drain(..lead);
        w
    }

    /// The chat messages of a check.
    pub fn messages(&self, history: usize, prompt: &str) -> Vec<Value> {
        let mut m = vec![json!({"role": "system", "content": prompt})];
        if let Some(o) = &self.original {
            m.push(json!({"role": "user", "content": format!("<original_request>\n{o}\n</original_request>")}));
        }
        for e in self.window(history) {
            m.push(match e {
                Entry::User(t) => json!({"role": "user", "content": t}),
                Entry::Model { text, calls } => {
                    let mut c = text.clone();
                    for call in calls {
                        c.push_str(&format!("\n[tool call] {call}"));
                    }
                    json!({"role": "assistant", "content": c})
                }
                Entry::ToolResponse(r) => json!({"role": "user", "content": format!("[tool response] {r}")}),
            });
        }
        m.push(
            json!({"role": "user", "content": "Is the agent above stuck in a loop? Answer with the JSON object only."}),
        );
        m
    }
}

pub(super) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
