//! Every key binding with its description. The help overlay and the footer
//! hints are generated from this table, so a key and its help cannot drift.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    ForceQuit,
    Help,
    Close,
    TogglePlay,
    StepBack,
    StepForward,
    SeekBack,
    SeekForward,
    SeekBackMore,
    SeekForwardMore,
    JumpTenths(u8),
    Start,
    End,
    NextDetection,
    PrevDetection,
    NextCheckpoint,
    PrevCheckpoint,
    TogglePauseOnDetect,
    Search,
    SearchNext,
    SearchPrev,
    ToggleWrap,
    ToggleChannel,
    Faster,
    Slower,
    NormalSpeed,
    FocusNext,
    FocusPrev,
    Up,
    Down,
    PageUp,
    PageDown,
    HalfPageUp,
    HalfPageDown,
    Left,
    Right,
    Select,
    Follow,
}

/// A key as bound: matched against crossterm events and shown in help.
#[derive(Clone, Copy, Debug)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Code(KeyCode),
    Shift(KeyCode),
    /// The ten digit keys; `JumpTenths` takes the digit.
    Digits,
}

impl Key {
    pub fn label(&self) -> String {
        fn code(c: &KeyCode) -> String {
            match c {
                KeyCode::Left => "←".into(),
                KeyCode::Right => "→".into(),
                KeyCode::Up => "↑".into(),
                KeyCode::Down => "↓".into(),
                KeyCode::PageUp => "PgUp".into(),
                KeyCode::PageDown => "PgDn".into(),
                KeyCode::Home => "Home".into(),
                KeyCode::End => "End".into(),
                KeyCode::Enter => "Enter".into(),
                KeyCode::Esc => "Esc".into(),
                KeyCode::Tab => "Tab".into(),
                KeyCode::BackTab => "Shift+Tab".into(),
                KeyCode::F(n) => format!("F{n}"),
                other => format!("{other:?}"),
            }
        }
        match self {
            Key::Char(' ') => "space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("Ctrl-{c}"),
            Key::Code(c) => code(c),
            Key::Shift(c) => format!("Shift+{}", code(c)),
            Key::Digits => "0–9".into(),
        }
    }

    fn matches(&self, ev: &KeyEvent) -> Option<Option<u8>> {
        let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
        let alt = ev.modifiers.contains(KeyModifiers::ALT);
        let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
        let hit = match (self, ev.code) {
            // A typed char already carries its shift ('G', '?', '+').
            (Key::Char(c), KeyCode::Char(k)) => *c == k && !ctrl && !alt,
            (Key::Ctrl(c), KeyCode::Char(k)) => ctrl && c.eq_ignore_ascii_case(&k),
            (Key::Digits, KeyCode::Char(k)) if k.is_ascii_digit() && !ctrl && !alt => {
                return Some(Some(k as u8 - b'0'));
            }
            // Shift+Tab arrives as BackTab, usually with SHIFT set.
            (Key::Code(KeyCode::BackTab), KeyCode::BackTab) => !ctrl && !alt,
            (Key::Code(c), k) => *c == k && !ctrl && !alt && !shift,
            (Key::Shift(c), k) => *c == k && shift && !ctrl && !alt,
            _ => false,
        };
        hit.then_some(None)
    }
}

/// One row of the keymap.
pub struct Binding {
    pub keys: &'static [Key],
    pub command: Command,
    pub description: &'static str,
    /// Short label for the footer, for the keys worth showing there.
    pub hint: Option<&'static str>,
    pub group: &'static str,
}

const fn bind(group: &'static str, keys: &'static [Key], command: Command, description: &'static str) -> Binding {
    Binding {
        keys,
        command,
        description,
        hint: None,
        group,
    }
}

const fn hinted(binding: Binding, hint: &'static str) -> Binding {
    Binding {
        hint: Some(hint),
        ..binding
    }
}

use Command as C;
use KeyCode as K;

pub static KEYMAP: &[Binding] = &[
    hinted(
        bind(
            "playback",
            &[Key::Char(' ')],
            C::TogglePlay,
            "play / pause (at the end: play again)",
        ),
        "play",
    ),
    bind(
        "playback",
        &[Key::Char('.')],
        C::StepForward,
        "step one event forward (pauses)",
    ),
    bind(
        "playback",
        &[Key::Char(',')],
        C::StepBack,
        "step one event back (pauses)",
    ),
    bind("playback", &[Key::Code(K::Right)], C::SeekForward, "seek 5 s forward"),
    bind("playback", &[Key::Code(K::Left)], C::SeekBack, "seek 5 s back"),
    bind(
        "playback",
        &[Key::Shift(K::Right)],
        C::SeekForwardMore,
        "seek 10 % forward",
    ),
    bind("playback", &[Key::Shift(K::Left)], C::SeekBackMore, "seek 10 % back"),
    bind(
        "playback",
        &[Key::Digits],
        C::JumpTenths(0),
        "jump to 0 %, 10 % … 90 % of the stream",
    ),
    bind(
        "playback",
        &[Key::Char('g'), Key::Code(K::Home)],
        C::Start,
        "go to the start",
    ),
    bind(
        "playback",
        &[Key::Char('G'), Key::Code(K::End)],
        C::End,
        "go to the end (live: follow again)",
    ),
    hinted(
        bind("playback", &[Key::Char('+')], C::Faster, "speed ×2 (up to ×64)"),
        "speed",
    ),
    bind("playback", &[Key::Char('-')], C::Slower, "speed ÷2 (down to ×0.25)"),
    bind("playback", &[Key::Char('=')], C::NormalSpeed, "speed ×1"),
    hinted(
        bind("findings", &[Key::Char('e')], C::NextDetection, "next detection"),
        "detection",
    ),
    bind("findings", &[Key::Char('E')], C::PrevDetection, "previous detection"),
    hinted(
        bind("findings", &[Key::Char(']')], C::NextCheckpoint, "next checkpoint run"),
        "checkpoint",
    ),
    bind(
        "findings",
        &[Key::Char('[')],
        C::PrevCheckpoint,
        "previous checkpoint run",
    ),
    bind(
        "findings",
        &[Key::Char('p')],
        C::TogglePauseOnDetect,
        "pause when a detector fires (on/off)",
    ),
    hinted(
        bind(
            "findings",
            &[Key::Char('/')],
            C::Search,
            "search the shown buffer (regex)",
        ),
        "search",
    ),
    bind("findings", &[Key::Char('n')], C::SearchNext, "next search match"),
    bind("findings", &[Key::Char('N')], C::SearchPrev, "previous search match"),
    hinted(
        bind("view", &[Key::Char('c')], C::ToggleChannel, "show reasoning / content"),
        "channel",
    ),
    bind("view", &[Key::Char('w')], C::ToggleWrap, "wrap long lines (on/off)"),
    bind(
        "view",
        &[Key::Char('F')],
        C::Follow,
        "follow: keep the buffer at its end",
    ),
    hinted(bind("panes", &[Key::Code(K::Tab)], C::FocusNext, "next pane"), "pane"),
    bind("panes", &[Key::Code(K::BackTab)], C::FocusPrev, "previous pane"),
    bind(
        "panes",
        &[Key::Char('j'), Key::Code(K::Down)],
        C::Down,
        "down in the pane (scroll, next item)",
    ),
    bind(
        "panes",
        &[Key::Char('k'), Key::Code(K::Up)],
        C::Up,
        "up in the pane (scroll, previous item)",
    ),
    bind("panes", &[Key::Code(K::PageDown)], C::PageDown, "page down"),
    bind("panes", &[Key::Code(K::PageUp)], C::PageUp, "page up"),
    bind("panes", &[Key::Ctrl('d')], C::HalfPageDown, "half a page down"),
    bind("panes", &[Key::Ctrl('u')], C::HalfPageUp, "half a page up"),
    bind("panes", &[Key::Char('h')], C::Left, "scroll left (wrap off)"),
    bind("panes", &[Key::Char('l')], C::Right, "scroll right (wrap off)"),
    bind(
        "panes",
        &[Key::Code(K::Enter)],
        C::Select,
        "go to the selected detection or event",
    ),
    hinted(
        bind("app", &[Key::Char('?'), Key::Code(K::F(1))], C::Help, "this help"),
        "help",
    ),
    bind("app", &[Key::Code(K::Esc)], C::Close, "close the overlay / cancel"),
    hinted(
        bind("app", &[Key::Char('q')], C::Quit, "quit (closes an overlay first)"),
        "quit",
    ),
    bind("app", &[Key::Ctrl('c')], C::ForceQuit, "quit now"),
];

/// The command bound to a key press, if any.
pub fn lookup(ev: &KeyEvent) -> Option<Command> {
    KEYMAP.iter().find_map(|b| {
        b.keys.iter().find_map(|k| {
            k.matches(ev).map(|digit| match (b.command, digit) {
                (C::JumpTenths(_), Some(d)) => C::JumpTenths(d),
                (cmd, _) => cmd,
            })
        })
    })
}

/// "space/." style labels of a binding's keys.
pub fn keys_label(b: &Binding) -> String {
    b.keys.iter().map(Key::label).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn keys_map_to_commands() {
        let none = KeyModifiers::NONE;
        assert_eq!(lookup(&key(K::Char(' '), none)), Some(C::TogglePlay));
        assert_eq!(lookup(&key(K::Char('G'), KeyModifiers::SHIFT)), Some(C::End));
        assert_eq!(lookup(&key(K::Char('7'), none)), Some(C::JumpTenths(7)));
        assert_eq!(lookup(&key(K::Left, KeyModifiers::SHIFT)), Some(C::SeekBackMore));
        assert_eq!(lookup(&key(K::Left, none)), Some(C::SeekBack));
        assert_eq!(lookup(&key(K::Char('c'), KeyModifiers::CONTROL)), Some(C::ForceQuit));
        assert_eq!(lookup(&key(K::Char('c'), none)), Some(C::ToggleChannel));
        assert_eq!(lookup(&key(K::F(1), none)), Some(C::Help));
        assert_eq!(lookup(&key(K::Char('x'), none)), None);
    }

    #[test]
    fn every_binding_is_described_and_no_key_is_bound_twice() {
        let mut seen = std::collections::HashSet::new();
        for b in KEYMAP {
            assert!(!b.description.is_empty());
            for k in b.keys {
                assert!(seen.insert(k.label()), "{} bound twice", k.label());
            }
        }
    }
}
