//! What Tab completes in the viewer's prompts: `:` commands, profiles,
//! detector ids, `:set`'s parameter names, filter words and tool names,
//! a parameter's choices.

use super::app::App;
use super::prompt::{matching, PromptKind};
use super::timeline::EntryKind;
use loopscope_core::config::Setup;
use loopscope_core::detect::params::{Kind, Value};
use loopscope_core::detect::{Profile, DETECTORS};

/// The `:` commands, as completed (those that take a word end in a space).
pub const COMMANDS: &[&str] = &[
    "set ",
    "reset",
    "profile ",
    "detectors ",
    "diff",
    "write ",
    "compare ",
    "rechunk ",
    "bad",
    "q",
];

impl App {
    /// What Tab may complete the word before the cursor to: where that
    /// word starts (a char index), and the candidates.
    pub fn completions(&self, kind: &PromptKind, before: &str) -> (usize, Vec<String>) {
        // The word being typed: after the last space, or after a comma in a list.
        let cut = |delims: &[char]| before.rfind(delims).map_or(0, |i| i + 1);
        let chars = |bytes: usize| before[..bytes].chars().count();
        match kind {
            PromptKind::Command => {
                let Some((cmd, _)) = before.split_once(' ') else {
                    return (0, matching(before, COMMANDS.iter().map(|c| c.to_string())));
                };
                let start = cut(&[' ', ',']);
                let word = &before[start..];
                let profiles = || Profile::ALL.iter().map(|p| p.name().to_string());
                let options: Vec<String> = match cmd {
                    "profile" => profiles().collect(),
                    "compare" => profiles().chain(["off".to_string()]).collect(),
                    "rechunk" => vec!["off".to_string()],
                    "detectors" => {
                        let mut ids: Vec<String> = Setup::profile(self.setup.profile)
                            .ids()
                            .into_iter()
                            .map(String::from)
                            .collect();
                        ids.push("all".to_string());
                        ids
                    }
                    "set" => return (chars(start), self.set_completions(word)),
                    _ => Vec::new(),
                };
                (chars(start), matching(word, options))
            }
            PromptKind::Filter => match before.strip_prefix("tool ") {
                Some(name) => {
                    let tools = self
                        .panes
                        .timeline
                        .timeline
                        .entries()
                        .iter()
                        .filter_map(|e| match &e.kind {
                            EntryKind::Call { name, .. } => Some(name.clone()),
                            _ => None,
                        });
                    (5, matching(name, tools.take(10_000)))
                }
                None => (0, matching(before, ["detections", "failed", "tool "].map(String::from))),
            },
            PromptKind::Param { .. } => {
                let options = match self.selected_param() {
                    Some((_, _, Value::Flag(_), _)) => vec!["true".to_string(), "false".to_string()],
                    Some((_, _, _, Kind::Choice(words))) => words.iter().map(|w| w.to_string()).collect(),
                    _ => Vec::new(),
                };
                (0, matching(before, options))
            }
            PromptKind::Search | PromptKind::HelpSearch => (0, Vec::new()),
        }
    }

    /// `:set` words: a running detector's id and a dot, then one of its
    /// parameters and `=`.
    fn set_completions(&self, word: &str) -> Vec<String> {
        match word.split_once('.') {
            None => matching(word, self.setup.ids().into_iter().map(|id| format!("{id}."))),
            Some((id, param)) => {
                let Some(info) = DETECTORS.iter().find(|d| d.id == id) else {
                    return Vec::new();
                };
                let names = info.params.iter().map(|p| format!("{id}.{}=", p.name));
                matching(&format!("{id}.{param}"), names)
            }
        }
    }
}
