//! What every pane and overlay of the viewer is: a [`Component`] with its
//! own state, its key bindings (the help, the footer hints, the README's
//! key tables and the man page's KEYS are made from them), its handling of
//! a key (consumed, or passed on to the app), and its drawing, a pure
//! function of its state and a read-only [`Context`] (the app's shared
//! state: the tape, the position, the theme…).
//!
//! What only the app can do (go to a detection, stop following, open a
//! prompt, close the overlay) a component asks for with an [`Intent`],
//! queued while it handles the key and carried out by the app right after,
//! as gitui's internal events are.
//!
//! Keys go to the open prompt, else the open overlay, else the focused
//! pane, and what none of them consumes to the app's own bindings. The
//! panes and overlays are registered in `tui/mod.rs` with `panes!` and
//! `overlays!`. A new pane is its own module and one line there:
//!
//! 1. `src/tui/my_pane.rs`: its state (`#[derive(Default)] pub struct
//!    MyPane`), `impl Component for MyPane` (`TITLE`, `KEYS`, `HINTS`,
//!    `on_command`, `render`; its own verbs are `Command::Own("…")`) and
//!    `impl PaneComponent for MyPane` (its `PLACE` on the screen);
//! 2. in `tui/mod.rs`: `pub mod my_pane;` and `Mine => mine: my_pane::MyPane,`
//!    in `panes!`.
//!
//! Tab, the layout, zoom, the mouse, the footer's hints, the help and the
//! man page's KEYS take it from there; the README's key table gets its
//! section (`tests/tui.rs` prints the table to paste).

use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::layout::{Position, Rect};
use ratatui::text::Line;
use ratatui::widgets::Block;
use ratatui::Frame;

use super::app::App;
use super::keymap::{lookup, Binding, Command, Section};
use super::layout::Pane;
use super::prompt::{Prompt, PromptKind};

/// What a component did with a key or a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    /// Done with: it goes no further.
    Consumed,
    /// Not the component's: the next in line (the app) may take it.
    NotConsumed,
}

/// Something a component asks of the app, carried out in order once the
/// component has handled its key.
#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    /// A live view stops at the shown event (scrolling up the buffer).
    StopFollowing,
    /// A live view goes back to the newest event (nothing when not live).
    Follow,
    /// Go to detection `i` of the stream (paused, not following) and select it.
    GoToDetection(usize),
    /// Show the stream up to and including this event, paused, and inspect
    /// the selected timeline row.
    InspectAt(usize),
    /// Inspect the selected timeline row (else the row of the position).
    Inspect,
    /// Inspect the tool call of this event (its timeline row), staying where the view is.
    InspectCall(usize),
    /// The detectors pane selected another detector: its latest detection
    /// is shown, its evidence brought into view.
    DetectorSelected,
    /// Step the selected parameter by this much and re-run.
    StepParam(isize),
    /// Open a line to type into (a parameter's value).
    Prompt(Prompt),
    /// The prompt's line was entered.
    Submit(PromptKind, String),
    ClosePrompt,
    CloseOverlay,
    Focus(Pane),
    /// Put this text on the clipboard (OSC 52) and say so.
    Copy(String),
    Flash(String),
    /// Run one of the app's own commands (search from the inspector).
    Run(Command),
}

/// What a component reads besides its own state. While a component
/// handles a key it is out of the app (so it may change itself while
/// reading the app): it reads itself through `self`, never through `app`.
pub struct Context<'a> {
    /// The app's shared state, read-only.
    pub app: &'a App,
    /// Where the component is: its pane, the whole screen for an overlay,
    /// the bottom line for the prompt.
    pub area: Rect,
    /// It has the keys (the focused pane, the open overlay).
    pub focused: bool,
}

impl<'a> Context<'a> {
    pub fn new(app: &'a App, area: Rect, focused: bool) -> Context<'a> {
        Context { app, area, focused }
    }

    /// A pane's border and title, highlighted while it has the focus,
    /// marked while it is zoomed.
    pub fn block(&self, title: String) -> Block<'static> {
        let theme = &self.app.theme;
        let title = if self.app.zoom {
            format!("{title}· zoomed (z) ")
        } else {
            title
        };
        let (border, title_style) = if self.focused {
            (theme.border_focus, theme.border_focus)
        } else {
            (theme.border, theme.title)
        };
        Block::bordered()
            .border_style(border)
            .title(Line::styled(title, title_style))
    }
}

/// What reaches a component.
#[derive(Clone, Copy, Debug)]
pub enum Input<'k> {
    Key(&'k KeyEvent),
    /// A command from elsewhere: the mouse wheel scrolls with `Up`/`Down`,
    /// and the app passes on the commands it does not know.
    Command(Command),
    /// A left click at this cell (inside the component's area).
    Click(Position),
}

/// A footer hint: the keys, and what they do.
pub type Hint = (&'static str, &'static str);

/// A pane or an overlay of the viewer.
pub trait Component {
    /// Its heading in the help, the README and the man page.
    const TITLE: &'static str;
    /// Its keys, with what they do.
    const KEYS: &'static [Binding];
    /// What the footer says about its keys while it has them, before the
    /// app's hints.
    const HINTS: &'static [Hint] = &[];

    /// A key: the command its bindings give it, else not consumed.
    fn on_key(&mut self, key: &KeyEvent, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        match lookup(key, &[Self::KEYS]) {
            Some(cmd) => self.on_command(cmd, cx, out),
            None => Handled::NotConsumed,
        }
    }

    /// A command of its bindings (or one passed on to it, see [`Input`]).
    fn on_command(&mut self, cmd: Command, cx: &Context, out: &mut Vec<Intent>) -> Handled;

    /// A left click inside it (it has the focus by then).
    fn on_click(&mut self, _at: Position, _cx: &Context, _out: &mut Vec<Intent>) -> Handled {
        Handled::NotConsumed
    }

    /// Draws it in `cx.area`: a pure function of its state and the context.
    fn render(&self, frame: &mut Frame, cx: &Context);

    /// Whatever reached it, to the method for it.
    fn handle(&mut self, input: Input, cx: &Context, out: &mut Vec<Intent>) -> Handled {
        match input {
            Input::Key(key) => self.on_key(key, cx, out),
            Input::Command(cmd) => self.on_command(cmd, cx, out),
            Input::Click(at) => self.on_click(at, cx, out),
        }
    }
}

/// A component's section of the help.
pub const fn section<C: Component>() -> Section {
    Section {
        title: C::TITLE,
        bindings: C::KEYS,
    }
}

/// A pane: a component with a place on the screen, there from the start.
pub trait PaneComponent: Component + Default {
    const PLACE: Place;
}

/// Where a pane goes. A wide screen (100 columns or more) has a main
/// column on the left and a side column; each column's panes share its
/// height. A narrow screen stacks every pane in one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub column: Column,
    /// Its share of its column's height on a wide screen.
    pub wide: Share,
    /// Its share of the height on a narrow screen.
    pub narrow: Share,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Main,
    Side,
}

/// Percent of the height, usually and while a detection is shown (its
/// details then get more room). Shares that do not add up to 100 are
/// scaled to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    pub usual: u16,
    pub detection_shown: u16,
}

impl Share {
    pub const fn new(usual: u16, detection_shown: u16) -> Share {
        Share { usual, detection_shown }
    }
}

/// Rows a scrolling command moves in a view `page` rows high.
pub fn scroll_delta(cmd: Command, page: isize) -> isize {
    match cmd {
        Command::Up => -1,
        Command::Down => 1,
        Command::PageUp => -page.max(1),
        Command::PageDown => page.max(1),
        Command::HalfPageUp => -(page / 2).max(1),
        Command::HalfPageDown => (page / 2).max(1),
        Command::Top => isize::MIN / 2,
        Command::Bottom => isize::MAX / 2,
        _ => 0,
    }
}

/// Lends the part of the app at `slot` to `f` together with the rest of
/// the app (read-only), puts it back, then carries out what it asked for.
pub(crate) fn lend<T: Default>(
    app: &mut App,
    slot: fn(&mut App) -> &mut T,
    now: Instant,
    f: impl FnOnce(&mut T, &App, &mut Vec<Intent>) -> Handled,
) -> Handled {
    let mut part = std::mem::take(slot(app));
    let mut intents = Vec::new();
    let handled = f(&mut part, app, &mut intents);
    *slot(app) = part;
    app.fulfil(intents, now);
    handled
}

/// Input for what is open at `slot` (the overlay, the prompt), in `area`.
pub(crate) fn lend_open<T>(
    app: &mut App,
    slot: fn(&mut App) -> &mut Option<T>,
    area: Rect,
    now: Instant,
    f: impl FnOnce(&mut T, &Context, &mut Vec<Intent>) -> Handled,
) -> Handled {
    lend(app, slot, now, |open, app, out| match open {
        Some(c) => f(c, &Context::new(app, area, true), out),
        None => Handled::NotConsumed,
    })
}

/// Input for pane `pane`, whose state is at `slot`.
pub(crate) fn handle_pane<C: PaneComponent>(
    app: &mut App,
    pane: Pane,
    slot: fn(&mut App) -> &mut C,
    input: Input,
    now: Instant,
) -> Handled {
    let area = app.areas().unwrap_or_default().pane(pane);
    let focused = app.focus == pane;
    lend(app, slot, now, |c, app, out| {
        c.handle(input, &Context::new(app, area, focused), out)
    })
}

/// Registers the viewer's panes, in focus (Tab) order: `Variant => field:
/// Type` makes the [`Pane`] variant, the `Panes` field holding its state
/// (`app.panes.field`), the `Areas` field with its place on the screen,
/// and the dispatch from the variant to its [`PaneComponent`].
macro_rules! panes {
    ($($variant:ident => $field:ident: $ty:ty),+ $(,)?) => {
        /// A pane of the viewer.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Pane {
            $($variant),+
        }

        impl Default for Pane {
            fn default() -> Pane {
                Pane::ALL[0]
            }
        }

        impl Pane {
            /// Every pane, in focus (Tab) order.
            pub const ALL: &'static [Pane] = &[$(Pane::$variant),+];

            /// The pane's section of the help.
            pub fn section(self) -> $crate::tui::keymap::Section {
                match self {
                    $(Pane::$variant => $crate::tui::component::section::<$ty>()),+
                }
            }

            /// The footer's hints while the pane has the focus.
            pub fn hints(self) -> &'static [$crate::tui::component::Hint] {
                match self {
                    $(Pane::$variant => <$ty as $crate::tui::component::Component>::HINTS),+
                }
            }

            pub fn place(self) -> $crate::tui::component::Place {
                match self {
                    $(Pane::$variant => <$ty as $crate::tui::component::PaneComponent>::PLACE),+
                }
            }

            /// Input for the pane.
            pub(crate) fn handle(
                self,
                app: &mut $crate::tui::app::App,
                input: $crate::tui::component::Input,
                now: std::time::Instant,
            ) -> $crate::tui::component::Handled {
                match self {
                    $(Pane::$variant => $crate::tui::component::handle_pane(
                        app, self, |a| &mut a.panes.$field, input, now,
                    )),+
                }
            }

            /// Draws the pane in `area`.
            pub fn render(self, app: &$crate::tui::app::App, frame: &mut ratatui::Frame, area: ratatui::layout::Rect) {
                use $crate::tui::component::Component;
                let cx = $crate::tui::component::Context::new(app, area, app.focus == self);
                match self {
                    $(Pane::$variant => app.panes.$field.render(frame, &cx)),+
                }
            }
        }

        /// The state of every pane.
        #[derive(Default)]
        pub struct Panes {
            $(pub $field: $ty),+
        }

        /// Where everything is on the screen: the status line, each pane
        /// (no room when another is zoomed), the scrubber and the footer.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Areas {
            pub status: ratatui::layout::Rect,
            $(pub $field: ratatui::layout::Rect,)+
            pub scrubber: ratatui::layout::Rect,
            pub footer: ratatui::layout::Rect,
        }

        impl Areas {
            /// Where pane `p` is.
            pub fn pane(&self, p: Pane) -> ratatui::layout::Rect {
                match p {
                    $(Pane::$variant => self.$field),+
                }
            }

            fn pane_mut(&mut self, p: Pane) -> &mut ratatui::layout::Rect {
                match p {
                    $(Pane::$variant => &mut self.$field),+
                }
            }
        }
    };
}
pub(crate) use panes;

/// Registers the viewer's overlays: `Variant(Type)` makes the [`Overlay`]
/// variant holding the open overlay's state and the dispatch to its
/// [`Component`].
///
/// [`Overlay`]: super::app::Overlay
macro_rules! overlays {
    ($($variant:ident($ty:ty)),+ $(,)?) => {
        /// What covers the panes, taking the keys while it is open.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Overlay {
            $($variant($ty)),+
        }

        impl Overlay {
            /// Every overlay's section of the help, in registration order.
            pub fn sections() -> Vec<$crate::tui::keymap::Section> {
                vec![$($crate::tui::component::section::<$ty>()),+]
            }

            /// Its heading in the help ("inspector (o)").
            pub fn title(&self) -> &'static str {
                match self {
                    $(Overlay::$variant(_) => <$ty as $crate::tui::component::Component>::TITLE),+
                }
            }

            /// The footer's hints while it is open.
            pub fn hints(&self) -> &'static [$crate::tui::component::Hint] {
                match self {
                    $(Overlay::$variant(_) => <$ty as $crate::tui::component::Component>::HINTS),+
                }
            }

            pub(crate) fn handle(
                &mut self,
                input: $crate::tui::component::Input,
                cx: &$crate::tui::component::Context,
                out: &mut Vec<$crate::tui::component::Intent>,
            ) -> $crate::tui::component::Handled {
                use $crate::tui::component::Component;
                match self {
                    $(Overlay::$variant(c) => c.handle(input, cx, out)),+
                }
            }

            pub fn render(&self, frame: &mut ratatui::Frame, cx: &$crate::tui::component::Context) {
                use $crate::tui::component::Component;
                match self {
                    $(Overlay::$variant(c) => c.render(frame, cx)),+
                }
            }
        }
    };
}
pub(crate) use overlays;
