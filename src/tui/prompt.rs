//! The line typed in the footer (`/` search, `f` filter, `:` command, `=`
//! a parameter's value), edited as in a shell: it opens empty with the
//! current value as a hint (Tab or ↑ fills it in); ←/→, Home/End,
//! Ctrl-A/E/B/F move, Ctrl-U/K/W and Backspace/Delete cut, ↑/↓ walk the
//! prompt's own history, Tab completes (commands, profiles, detector ids,
//! parameter names, filter words) and cycles through several candidates.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::component::{Component, Context, Handled, Intent};
use super::footer::prompt_line;
use super::keymap::{bind, lookup, Binding, Command as C, Key};

use KeyCode as K;

/// The line's own commands.
const SUBMIT: C = C::Own("submit");
const CANCEL: C = C::Own("cancel");
const LEFT: C = C::Own("left");
const RIGHT: C = C::Own("right");
const WORD_LEFT: C = C::Own("word-left");
const WORD_RIGHT: C = C::Own("word-right");
const HOME: C = C::Own("home");
const END: C = C::Own("end");
const BACKSPACE: C = C::Own("backspace");
const DELETE: C = C::Own("delete");
const KILL_START: C = C::Own("kill-start");
const KILL_END: C = C::Own("kill-end");
const KILL_WORD_AFTER: C = C::Own("kill-word-after");
const KILL_WORD: C = C::Own("kill-word");
const HISTORY_PREV: C = C::Own("history-prev");
const HISTORY_NEXT: C = C::Own("history-next");
const COMPLETE_BACK: C = C::Own("complete-back");
const COMPLETE: C = C::Own("complete");

/// The keys of a prompt's line (any other char is typed).
pub const KEYS: &[Binding] = &[
    bind(&[Key::Code(K::Enter)], SUBMIT, "run the line"),
    bind(&[Key::Code(K::Esc)], CANCEL, "cancel (so does Backspace on an empty line)"),
    bind(&[Key::Code(K::Left), Key::Ctrl('b')], LEFT, "cursor left"),
    bind(&[Key::Code(K::Right), Key::Ctrl('f')], RIGHT, "cursor right"),
    bind(&[Key::Alt('b')], WORD_LEFT, "a word left"),
    bind(&[Key::Alt('f')], WORD_RIGHT, "a word right"),
    bind(&[Key::Code(K::Home), Key::Ctrl('a')], HOME, "to the start"),
    bind(&[Key::Code(K::End), Key::Ctrl('e')], END, "to the end"),
    bind(&[Key::Code(K::Backspace)], BACKSPACE, "erase the char before the cursor"),
    bind(&[Key::Code(K::Delete), Key::Ctrl('d')], DELETE, "erase the char at the cursor"),
    bind(&[Key::Ctrl('u')], KILL_START, "erase to the start"),
    bind(&[Key::Ctrl('k')], KILL_END, "erase to the end"),
    bind(&[Key::Ctrl('w')], KILL_WORD, "erase the word before the cursor"),
    bind(&[Key::Alt('d')], KILL_WORD_AFTER, "erase the word after the cursor"),
    bind(
        &[Key::Code(K::Up), Key::Ctrl('p')],
        HISTORY_PREV,
        "the current value, then earlier lines of this prompt",
    ),
    bind(&[Key::Code(K::Down), Key::Ctrl('n')], HISTORY_NEXT, "later lines of this prompt"),
    bind(
        &[Key::Code(K::Tab)],
        COMPLETE,
        "the current value on an empty line; else complete (commands, profiles, detectors, parameters); again: the next candidate",
    ),
    bind(&[Key::Code(K::BackTab)], COMPLETE_BACK, "the previous candidate"),
];

/// Lines kept per history.
const HISTORY: usize = 100;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptKind {
    Search,
    Filter,
    /// A `:` command.
    Command,
    /// `=` in the detectors pane: the value of `ID.PARAM` (run as `:set`).
    Param {
        target: String,
    },
    /// `/` in the help: the keys whose name or description holds the text
    /// (shown as it is typed).
    HelpSearch,
}

impl PromptKind {
    /// Which history the prompt walks (every parameter shares one).
    fn history_slot(&self) -> usize {
        match self {
            PromptKind::Search => 0,
            PromptKind::Filter => 1,
            PromptKind::Command => 2,
            PromptKind::Param { .. } => 3,
            PromptKind::HelpSearch => 4,
        }
    }
}

/// The lines entered at each kind of prompt, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Histories([Vec<String>; 5]);

impl Histories {
    pub fn of(&self, kind: &PromptKind) -> &[String] {
        &self.0[kind.history_slot()]
    }

    /// Remembers a line entered (not an empty one, not twice in a row).
    pub fn add(&mut self, kind: &PromptKind, line: &str) {
        let h = &mut self.0[kind.history_slot()];
        if line.trim().is_empty() || h.last().is_some_and(|l| l == line) {
            return;
        }
        h.push(line.to_string());
        if h.len() > HISTORY {
            h.remove(0);
        }
    }
}

/// Candidates shown while Tab cycles through them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    pub candidates: Vec<String>,
    /// The candidate in the line now (`None`: only listed so far).
    pub at: Option<usize>,
    /// Where the completed word starts (a char index).
    start: usize,
}

/// A line being typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    /// The cursor, as a char index into `text`.
    pub cursor: usize,
    /// The current value, shown while the line is empty (Tab or ↑ takes it).
    pub hint: Option<String>,
    /// Position in the history while walking it (`None`: the line typed).
    walking: Option<usize>,
    /// The line typed before walking the history.
    draft: String,
    pub cycle: Option<Cycle>,
}

/// What Tab may complete the line before the cursor to: where the word
/// being completed starts (a char index), and its candidates.
pub type Completer<'a> = dyn Fn(&PromptKind, &str) -> (usize, Vec<String>) + 'a;

/// What a key did to the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Still typing.
    Typing,
    /// Enter: the line to run.
    Submit(String),
    Cancel,
}

impl Prompt {
    pub fn new(kind: PromptKind, hint: Option<String>) -> Prompt {
        Prompt {
            kind,
            text: String::new(),
            cursor: 0,
            hint: hint.filter(|h| !h.is_empty()),
            walking: None,
            draft: String::new(),
            cycle: None,
        }
    }

    fn len(&self) -> usize {
        self.text.chars().count()
    }

    fn byte(&self, at: usize) -> usize {
        self.text.char_indices().nth(at).map_or(self.text.len(), |(b, _)| b)
    }

    fn set(&mut self, text: String) {
        self.cursor = text.chars().count();
        self.text = text;
    }

    fn insert(&mut self, c: char) {
        let b = self.byte(self.cursor);
        self.text.insert(b, c);
        self.cursor += 1;
    }

    /// Removes chars `from..to`, leaving the cursor at `from`.
    fn cut(&mut self, from: usize, to: usize) {
        let (a, b) = (self.byte(from), self.byte(to));
        self.text.replace_range(a..b, "");
        self.cursor = from;
    }

    /// Where the word before the cursor starts (white space delimits words,
    /// as Ctrl-W does in a shell).
    fn word_start(&self) -> usize {
        let chars: Vec<char> = self.text.chars().take(self.cursor).collect();
        let mut i = chars.len();
        while i > 0 && chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    fn word_end(&self) -> usize {
        let chars: Vec<char> = self.text.chars().collect();
        let mut i = self.cursor;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        while i < chars.len() && !chars[i].is_whitespace() {
            i += 1;
        }
        i
    }

    /// One key; `history` is this prompt's, `complete` lists the candidates
    /// for the line up to the cursor (what the word being typed may become,
    /// and where that word starts).
    pub fn key(&mut self, key: KeyEvent, history: &[String], complete: &Completer) -> Edit {
        if !matches!(key.code, KeyCode::Tab | KeyCode::BackTab) {
            self.cycle = None;
        }
        let len = self.len();
        let Some(cmd) = lookup(&key, &[KEYS]) else {
            // Any other char is typed (not one held with Ctrl or Alt).
            if let KeyCode::Char(c) = key.code {
                if !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
                    self.insert(c);
                }
            }
            return Edit::Typing;
        };
        match cmd {
            CANCEL => return Edit::Cancel,
            SUBMIT => return Edit::Submit(self.text.clone()),
            // As in less and vim, erasing past an empty line closes it.
            BACKSPACE | DELETE if self.text.is_empty() => return Edit::Cancel,
            BACKSPACE if self.cursor > 0 => self.cut(self.cursor - 1, self.cursor),
            DELETE if self.cursor < len => self.cut(self.cursor, self.cursor + 1),
            LEFT => self.cursor = self.cursor.saturating_sub(1),
            RIGHT => self.cursor = (self.cursor + 1).min(len),
            WORD_LEFT => self.cursor = self.word_start(),
            WORD_RIGHT => self.cursor = self.word_end(),
            HOME => self.cursor = 0,
            END => self.cursor = len,
            KILL_START => self.cut(0, self.cursor),
            KILL_END => self.cut(self.cursor, len),
            KILL_WORD => self.cut(self.word_start(), self.cursor),
            KILL_WORD_AFTER => self.cut(self.cursor, self.word_end()),
            HISTORY_PREV => self.walk(history, true),
            HISTORY_NEXT => self.walk(history, false),
            COMPLETE => self.complete(complete, true),
            COMPLETE_BACK => self.complete(complete, false),
            _ => {}
        }
        Edit::Typing
    }

    /// The lines ↑ walks through, newest last: the history, then the
    /// current value if it is not already the newest.
    fn entries<'a>(&'a self, history: &'a [String]) -> Vec<&'a str> {
        let mut all: Vec<&str> = history.iter().map(String::as_str).collect();
        if let Some(h) = self.hint.as_deref().filter(|h| all.last() != Some(h)) {
            all.push(h);
        }
        all
    }

    fn walk(&mut self, history: &[String], back: bool) {
        let all: Vec<String> = self.entries(history).into_iter().map(str::to_string).collect();
        if all.is_empty() {
            return;
        }
        let next = match (self.walking, back) {
            (None, true) => {
                self.draft = self.text.clone();
                Some(all.len() - 1)
            }
            (None, false) => return,
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < all.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        self.walking = next;
        let line = match next {
            Some(i) => all[i].clone(),
            None => std::mem::take(&mut self.draft),
        };
        self.set(line);
    }

    fn complete(&mut self, complete: &Completer, forward: bool) {
        // An empty line takes the current value first.
        if self.text.is_empty() {
            if let Some(h) = self.hint.clone() {
                self.set(h);
                return;
            }
        }
        if let Some(c) = self.cycle.as_mut() {
            let n = c.candidates.len();
            let at = match (c.at, forward) {
                (None, true) => 0,
                (None, false) => n - 1,
                (Some(i), true) => (i + 1) % n,
                (Some(i), false) => (i + n - 1) % n,
            };
            c.at = Some(at);
            let (start, word) = (c.start, c.candidates[at].clone());
            self.replace_word(start, &word);
            return;
        }
        let before: String = self.text.chars().take(self.cursor).collect();
        let (start, candidates) = complete(&self.kind, &before);
        match candidates.len() {
            0 => {}
            1 => self.replace_word(start, &candidates[0]),
            _ => {
                let typed: String = before.chars().skip(start).collect();
                let common = common_prefix(&candidates);
                if common.chars().count() > typed.chars().count() {
                    self.replace_word(start, &common);
                }
                // Listed now; the next Tab puts the first in the line.
                self.cycle = Some(Cycle {
                    candidates,
                    at: None,
                    start,
                });
            }
        }
    }

    /// Replaces the word from `start` to the cursor with `word`.
    fn replace_word(&mut self, start: usize, word: &str) {
        self.cut(start, self.cursor);
        for c in word.chars() {
            self.insert(c);
        }
    }
}

impl Component for Prompt {
    const TITLE: &'static str = "prompts (/ f : =, / in the help)";
    const KEYS: &'static [Binding] = KEYS;

    /// Any key: a binding edits the line, any other char is typed.
    fn on_key(&mut self, key: &KeyEvent, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        let app = cx.app;
        let history = app.histories.of(&self.kind);
        match self.key(*key, history, &|kind, before| app.completions(kind, before)) {
            Edit::Typing => {}
            Edit::Cancel => out.push(Intent::ClosePrompt),
            Edit::Submit(text) => out.push(Intent::Submit(self.kind.clone(), text)),
        }
        Handled::Consumed
    }

    /// The line takes keys, not commands (its history and completions
    /// come with the key).
    fn on_command(&mut self, _cmd: C, _cx: &Context, _out: &mut Vec<Intent>) -> Handled {
        Handled::NotConsumed
    }

    /// The bottom line: the line being typed, and what Enter does.
    fn render(&self, frame: &mut Frame, cx: &Context) {
        let (sigil, what) = match &self.kind {
            PromptKind::Search => ("/".to_string(), "search the stream"),
            PromptKind::HelpSearch => ("keys: /".to_string(), "keep it · the help shows the matching keys"),
            PromptKind::Filter => (
                "filter: ".to_string(),
                "detections · failed · tool NAME · a regex · empty clears",
            ),
            PromptKind::Command => (
                ":".to_string(),
                "run · set/reset/profile/detectors/diff/write/compare/rechunk/bad/q",
            ),
            PromptKind::Param { target } => (format!("{target}="), "set it"),
        };
        let line = prompt_line(self, &sigil, what, cx.area.width as usize, &cx.app.theme);
        frame.render_widget(Paragraph::new(line), cx.area);
    }
}

fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut n = first.chars().count();
    for w in &words[1..] {
        n = n.min(first.chars().zip(w.chars()).take_while(|(a, b)| a == b).count());
    }
    first.chars().take(n).collect()
}

/// What a word may become, among `options`: those that start with it.
pub fn matching(word: &str, options: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = options.into_iter().filter(|o| o.starts_with(word)).collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(p: &mut Prompt, code: KeyCode, mods: KeyModifiers) -> Edit {
        let none = |_: &PromptKind, _: &str| (0, Vec::new());
        p.key(KeyEvent::new(code, mods), &[], &none)
    }

    fn typed(p: &mut Prompt, s: &str) {
        for c in s.chars() {
            press(p, KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    #[test]
    fn it_edits_like_a_shell_line() {
        let ctrl = KeyModifiers::CONTROL;
        let mut p = Prompt::new(PromptKind::Command, None);
        typed(&mut p, "set block-cycle.min_matches=9");
        press(&mut p, KeyCode::Left, KeyModifiers::NONE);
        press(&mut p, KeyCode::Backspace, KeyModifiers::NONE);
        typed(&mut p, "2");
        assert_eq!(p.text, "set block-cycle.min_matches29");
        press(&mut p, KeyCode::Char('e'), ctrl);
        press(&mut p, KeyCode::Char('w'), ctrl);
        assert_eq!((p.text.as_str(), p.cursor), ("set ", 4));
        typed(&mut p, "思考 x");
        press(&mut p, KeyCode::Char('a'), ctrl);
        press(&mut p, KeyCode::Delete, KeyModifiers::NONE);
        assert_eq!(p.text, "et 思考 x");
        press(&mut p, KeyCode::End, KeyModifiers::NONE);
        press(&mut p, KeyCode::Left, KeyModifiers::NONE);
        press(&mut p, KeyCode::Char('u'), ctrl);
        assert_eq!((p.text.as_str(), p.cursor), ("x", 0));
        press(&mut p, KeyCode::Char('k'), ctrl);
        assert_eq!(p.text, "");
        assert_eq!(press(&mut p, KeyCode::Backspace, KeyModifiers::NONE), Edit::Cancel);
    }

    #[test]
    fn up_takes_the_current_value_then_the_history_and_down_comes_back() {
        let none = |_: &PromptKind, _: &str| (0, Vec::new());
        let history = vec!["one".to_string(), "two".to_string()];
        let mut p = Prompt::new(PromptKind::Search, Some("now".into()));
        typed(&mut p, "dra");
        let up = |p: &mut Prompt, code| {
            p.key(KeyEvent::from(code), &history, &none);
            p.text.clone()
        };
        assert_eq!(up(&mut p, KeyCode::Up), "now");
        assert_eq!(up(&mut p, KeyCode::Up), "two");
        assert_eq!(up(&mut p, KeyCode::Up), "one");
        assert_eq!(up(&mut p, KeyCode::Up), "one");
        assert_eq!(up(&mut p, KeyCode::Down), "two");
        assert_eq!(up(&mut p, KeyCode::Down), "now");
        assert_eq!(up(&mut p, KeyCode::Down), "dra", "back to what was typed");
    }

    #[test]
    fn tab_fills_the_hint_completes_and_cycles() {
        let words = |_: &PromptKind, before: &str| {
            let start = before.rfind(' ').map_or(0, |i| i + 1);
            let word = &before[start..];
            let opts = ["reset", "rechunk", "profile"].map(String::from);
            (start, matching(word, opts))
        };
        let tab = |p: &mut Prompt| {
            p.key(KeyEvent::from(KeyCode::Tab), &[], &words);
            p.text.clone()
        };
        let mut p = Prompt::new(PromptKind::Command, Some("profile seed".into()));
        assert_eq!(tab(&mut p), "profile seed", "an empty line takes the hint");
        let mut p = Prompt::new(PromptKind::Command, None);
        typed(&mut p, "p");
        assert_eq!(tab(&mut p), "profile");
        let mut p = Prompt::new(PromptKind::Command, None);
        typed(&mut p, "r");
        assert_eq!(tab(&mut p), "re", "the common prefix, the candidates listed");
        assert_eq!(p.cycle.as_ref().unwrap().candidates, vec!["rechunk", "reset"]);
        assert_eq!(tab(&mut p), "rechunk");
        assert_eq!(tab(&mut p), "reset");
        assert_eq!(tab(&mut p), "rechunk");
        typed(&mut p, " ");
        assert!(p.cycle.is_none());
    }
}
