//! Keys, bindings and their lookup. Each component offers its own bindings
//! (its `Component::KEYS`); the app's global ones are here. The help overlay,
//! the footer hints and the README's table are generated from them, so a
//! key and its help cannot drift.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a key asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Quit,
    ForceQuit,
    /// Stop the process as a shell's Ctrl-Z does; `fg` brings it back.
    Suspend,
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
    /// First / last item of a list, or the top / bottom of a text.
    Top,
    Bottom,
    Zoom,
    Detections,
    Inspect,
    Copy,
    Filter,
    /// The `:` command line.
    CommandLine,
    /// A command of one component's own, named in its module (the
    /// detectors pane's parameter editor, the prompt's line editing), so a
    /// component's verbs need no change here.
    Own(&'static str),
}

/// A key as bound: matched against crossterm events and shown in help.
#[derive(Clone, Copy, Debug)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Alt(char),
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
                KeyCode::Backspace => "Backspace".into(),
                KeyCode::F(n) => format!("F{n}"),
                other => format!("{other:?}"),
            }
        }
        match self {
            Key::Char(' ') => "space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("Ctrl-{c}"),
            Key::Alt(c) => format!("Alt-{c}"),
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
            // A typed char already carries its shift ('G', '?', '>').
            (Key::Char(c), KeyCode::Char(k)) => *c == k && !ctrl && !alt,
            (Key::Ctrl(c), KeyCode::Char(k)) => ctrl && c.eq_ignore_ascii_case(&k),
            (Key::Alt(c), KeyCode::Char(k)) => alt && !ctrl && *c == k,
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

/// One key binding.
pub struct Binding {
    pub keys: &'static [Key],
    pub command: Command,
    pub description: &'static str,
    /// Short label for the footer, for the keys worth showing there.
    pub hint: Option<&'static str>,
}

/// The bindings of one part of the app, under a title in the help.
pub struct Section {
    pub title: &'static str,
    pub bindings: &'static [Binding],
}

pub const fn bind(keys: &'static [Key], command: Command, description: &'static str) -> Binding {
    Binding {
        keys,
        command,
        description,
        hint: None,
    }
}

pub const fn hinted(binding: Binding, hint: &'static str) -> Binding {
    Binding {
        hint: Some(hint),
        ..binding
    }
}

use Command as C;
use KeyCode as K;

/// Keys that work wherever the focus is (when no overlay is open).
pub const PLAYBACK: &[Binding] = &[
    hinted(
        bind(
            &[Key::Char(' ')],
            C::TogglePlay,
            "play / pause (at the end: play again)",
        ),
        "play",
    ),
    bind(&[Key::Char('.')], C::StepForward, "step one event forward (pauses)"),
    bind(&[Key::Char(',')], C::StepBack, "step one event back (pauses)"),
    bind(&[Key::Code(K::Right)], C::SeekForward, "seek 5 s forward"),
    bind(&[Key::Code(K::Left)], C::SeekBack, "seek 5 s back"),
    bind(&[Key::Shift(K::Right)], C::SeekForwardMore, "seek 10 % forward"),
    bind(&[Key::Shift(K::Left)], C::SeekBackMore, "seek 10 % back"),
    bind(
        &[Key::Digits],
        C::JumpTenths(0),
        "jump to 0 %, 10 % … 90 % of the stream",
    ),
    bind(
        &[Key::Char('g'), Key::Code(K::Home)],
        C::Start,
        "go to the start (g in a list pane: its first row)",
    ),
    bind(
        &[Key::Char('G'), Key::Code(K::End)],
        C::End,
        "go to the end, live: follow again (G in a list pane: its last row)",
    ),
    // Speed is on keys nothing else uses (as players do: mpv's [ ] and
    // Backspace, here < > since [ ] are the checkpoints); + - = are the
    // detectors pane's parameter editor, one meaning per key.
    hinted(bind(&[Key::Char('>')], C::Faster, "speed ×2 (up to ×64)"), "faster"),
    bind(&[Key::Char('<')], C::Slower, "speed ÷2 (down to ×0.25)"),
    bind(&[Key::Code(K::Backspace)], C::NormalSpeed, "speed ×1"),
];

pub const FINDINGS: &[Binding] = &[
    hinted(
        bind(
            &[Key::Char('e')],
            C::NextDetection,
            "next detection (two at one event are two steps)",
        ),
        "detection",
    ),
    bind(&[Key::Char('E')], C::PrevDetection, "previous detection"),
    hinted(
        bind(&[Key::Char('d')], C::Detections, "list every detection of the stream"),
        "list",
    ),
    bind(&[Key::Char(']')], C::NextCheckpoint, "next checkpoint run"),
    bind(&[Key::Char('[')], C::PrevCheckpoint, "previous checkpoint run"),
    bind(
        &[Key::Char('p')],
        C::TogglePauseOnDetect,
        "pause when a detector fires (on/off)",
    ),
    hinted(
        bind(
            &[Key::Char('/')],
            C::Search,
            "search the whole stream (regex; smart case: lower case ignores case)",
        ),
        "search",
    ),
    bind(&[Key::Char('n')], C::SearchNext, "next match (moves the position)"),
    bind(&[Key::Char('N')], C::SearchPrev, "previous match"),
    bind(
        &[Key::Char('f')],
        C::Filter,
        "filter the timeline: detections, failed, tool NAME, or a regex",
    ),
    hinted(
        bind(
            &[Key::Char(':')],
            C::CommandLine,
            "command: set ID.PARAM=V, reset, profile P, detectors A,B, diff, write F, compare P,Q, rechunk N|off, bad, q",
        ),
        "what-if",
    ),
];

pub const VIEW: &[Binding] = &[
    bind(&[Key::Char('c')], C::ToggleChannel, "show reasoning / content"),
    bind(&[Key::Char('w')], C::ToggleWrap, "wrap long lines (on/off)"),
    bind(&[Key::Char('F')], C::Follow, "follow: keep the buffer at its end"),
    hinted(
        bind(
            &[Key::Char('z')],
            C::Zoom,
            "zoom the focused pane to the full screen (again: back)",
        ),
        "zoom",
    ),
    hinted(bind(&[Key::Code(K::Tab)], C::FocusNext, "next pane"), "pane"),
    bind(&[Key::Code(K::BackTab)], C::FocusPrev, "previous pane"),
];

pub const APP: &[Binding] = &[
    bind(&[Key::Code(K::Esc)], C::Close, "close the overlay / cancel"),
    hinted(
        bind(&[Key::Char('q')], C::Quit, "quit (closes an overlay first)"),
        "quit",
    ),
    bind(&[Key::Ctrl('c')], C::ForceQuit, "quit now"),
    bind(
        &[Key::Ctrl('z')],
        C::Suspend,
        "suspend to the shell (its `fg` brings the viewer back)",
    ),
    hinted(
        bind(&[Key::Char('?'), Key::Code(K::F(1))], C::Help, "this help"),
        "help",
    ),
];

/// Keys that work over any overlay, after the overlay's own: the rest
/// do nothing there, and the bottom line says so (overlays are modal, as
/// lazygit's and gitui's popups are).
pub const OVERLAY: &[Binding] = &[
    bind(&[Key::Code(K::Esc), Key::Char('q')], C::Close, "close the overlay"),
    bind(
        &[Key::Char('?'), Key::Code(K::F(1))],
        C::Help,
        "this help (again: close it)",
    ),
    bind(
        &[Key::Char('d')],
        C::Detections,
        "the detections list (again: close it)",
    ),
    bind(&[Key::Char(':')], C::CommandLine, "the command line (:set, :diff…)"),
];

/// How the bottom line names a key pressed ("x", "Ctrl-x", "F5"); none
/// for keys that are no key of their own (a modifier, caps lock).
pub fn key_name(ev: &KeyEvent) -> Option<String> {
    let ctrl = ev.modifiers.contains(KeyModifiers::CONTROL);
    let alt = ev.modifiers.contains(KeyModifiers::ALT);
    let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
    let key = match ev.code {
        KeyCode::Char(c) if ctrl => Key::Ctrl(c),
        KeyCode::Char(c) if alt => Key::Alt(c),
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Modifier(_)
        | KeyCode::Null
        | KeyCode::CapsLock
        | KeyCode::ScrollLock
        | KeyCode::NumLock
        | KeyCode::Media(_) => return None,
        KeyCode::BackTab => Key::Code(KeyCode::BackTab),
        code if shift => Key::Shift(code),
        code => Key::Code(code),
    };
    Some(key.label())
}

/// Moving in a list pane or overlay.
pub const LIST: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], C::Down, "next item"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], C::Up, "previous item"),
    bind(&[Key::Code(K::PageDown), Key::Ctrl('d')], C::PageDown, "a page down"),
    bind(&[Key::Code(K::PageUp), Key::Ctrl('u')], C::PageUp, "a page up"),
    bind(&[Key::Char('g')], C::Top, "first item"),
    bind(&[Key::Char('G')], C::Bottom, "last item"),
];

/// Scrolling a text pane or overlay.
pub const SCROLL: &[Binding] = &[
    bind(&[Key::Char('j'), Key::Code(K::Down)], C::Down, "scroll down"),
    bind(&[Key::Char('k'), Key::Code(K::Up)], C::Up, "scroll up"),
    bind(&[Key::Code(K::PageDown)], C::PageDown, "a page down"),
    bind(&[Key::Code(K::PageUp)], C::PageUp, "a page up"),
    bind(&[Key::Ctrl('d')], C::HalfPageDown, "half a page down"),
    bind(&[Key::Ctrl('u')], C::HalfPageUp, "half a page up"),
    bind(&[Key::Char('g')], C::Top, "top"),
    bind(&[Key::Char('G')], C::Bottom, "bottom"),
];

/// The command bound to a key press in the first of `scopes` that binds it.
pub fn lookup(ev: &KeyEvent, scopes: &[&[Binding]]) -> Option<Command> {
    scopes.iter().find_map(|bindings| {
        bindings.iter().find_map(|b| {
            b.keys.iter().find_map(|k| {
                k.matches(ev).map(|digit| match (b.command, digit) {
                    (C::JumpTenths(_), Some(d)) => C::JumpTenths(d),
                    (cmd, _) => cmd,
                })
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
    fn keys_map_to_commands_in_the_first_scope_that_binds_them() {
        let none = KeyModifiers::NONE;
        let global: &[&[Binding]] = &[PLAYBACK, FINDINGS, VIEW, APP];
        let find = |ev: KeyEvent| lookup(&ev, global);
        assert_eq!(find(key(K::Char(' '), none)), Some(C::TogglePlay));
        assert_eq!(find(key(K::End, none)), Some(C::End));
        assert_eq!(find(key(K::Char('7'), none)), Some(C::JumpTenths(7)));
        assert_eq!(find(key(K::Left, KeyModifiers::SHIFT)), Some(C::SeekBackMore));
        assert_eq!(find(key(K::Left, none)), Some(C::SeekBack));
        assert_eq!(find(key(K::Char('c'), KeyModifiers::CONTROL)), Some(C::ForceQuit));
        assert_eq!(find(key(K::Char('c'), none)), Some(C::ToggleChannel));
        assert_eq!(find(key(K::F(1), none)), Some(C::Help));
        assert_eq!(find(key(K::Char('x'), none)), None);
        assert_eq!(find(key(K::Char('G'), KeyModifiers::SHIFT)), Some(C::End));
        let in_list: &[&[Binding]] = &[LIST, PLAYBACK];
        assert_eq!(
            lookup(&key(K::Char('G'), KeyModifiers::SHIFT), in_list),
            Some(C::Bottom)
        );
    }
}
