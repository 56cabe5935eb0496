//! The terminal app. Std threads and one channel: an input thread forwards
//! terminal events, a source thread forwards decoded events, a signal thread
//! forwards SIGTERM/SIGHUP/SIGINT; the main loop applies them to the [`App`]
//! and redraws only when something changed, at most ~60 times a second.

pub mod app;
pub mod buffer_pane;
pub mod cells;
mod detectors_pane;
mod footer;
mod help;
pub mod input;
pub mod keymap;
pub mod layout;
mod scrubber;
pub mod status;
pub mod theme;
mod timeline;
pub mod ui;

use std::io::{self, IsTerminal, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub use app::{App, ViewOptions};
pub use input::Action;

use crate::config::Setup;
use crate::formats::{native::NativeDecoder, Decoder, Item};

/// At most one frame per this long (~60 fps).
const FRAME: Duration = Duration::from_millis(16);
/// The loop wakes at least this often (messages expire, signals arrive).
const IDLE_WAKE: Duration = Duration::from_millis(250);

/// A stream to show: its name and where its bytes come from.
pub struct Source {
    pub name: String,
    pub reader: Box<dyn Read + Send>,
}

/// Runs the viewer until the user quits.
pub fn run(source: Source, setup: Setup, opts: ViewOptions) -> Result<(), String> {
    if !io::stdout().is_terminal() {
        return Err("the viewer needs a terminal; for headless output use `loopscope scan`".to_string());
    }
    let (tx, rx) = mpsc::channel::<Action>();
    spawn_source(source.reader, tx.clone());
    spawn_signals(tx.clone());
    let guard = TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(|e| e.to_string())?;
    spawn_input(tx);
    let now = Instant::now();
    let mut app = App::new(&source.name, setup, &opts, now);
    let size = terminal.size().map_err(|e| e.to_string())?;
    app.update(Action::Resize(size.width, size.height), now);
    let mut last_draw: Option<Instant> = None;
    // The end-to-end tests check that a panic restores the terminal.
    let panic_for_test = std::env::var_os("LOOPSCOPE_TEST_PANIC").is_some();
    loop {
        let now = Instant::now();
        if app.dirty && last_draw.is_none_or(|t| now >= t + FRAME) {
            draw(&mut terminal, &app).map_err(|e| format!("cannot draw: {e}"))?;
            app.dirty = false;
            last_draw = Some(now);
            if panic_for_test {
                panic!("deliberate panic (LOOPSCOPE_TEST_PANIC)");
            }
        }
        let frame_due = (app.dirty).then(|| last_draw.map_or(now, |t| t + FRAME));
        let wake = [app.next_wakeup(now), frame_due]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + IDLE_WAKE);
        match rx.recv_timeout(wake.saturating_duration_since(now).min(IDLE_WAKE)) {
            Ok(action) => {
                app.update(action, Instant::now());
                // Apply everything that is waiting before drawing once.
                while let Ok(action) = rx.try_recv() {
                    app.update(action, Instant::now());
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        app.update(Action::Tick, Instant::now());
        if app.quit {
            break;
        }
    }
    drop(terminal);
    drop(guard);
    Ok(())
}

fn draw(terminal: &mut Terminal<CrosstermBackend<io::Stdout>>, app: &App) -> io::Result<()> {
    crossterm::queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    terminal.draw(|frame| ui::render(frame, app))?;
    crossterm::queue!(terminal.backend_mut(), EndSynchronizedUpdate)?;
    terminal.backend_mut().flush()
}

/// Raw mode, alternate screen and mouse capture, undone on drop and by a
/// panic hook, so the terminal is restored however the app ends.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> io::Result<TerminalGuard> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        enable_raw_mode()?;
        TERMINAL_SET_UP.store(true, Ordering::SeqCst);
        let guard = TerminalGuard;
        crossterm::execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Whether the terminal is in the app's modes; restoring twice would send
/// a second "leave alternate screen", which moves the cursor back to where
/// the app started and lets later output overwrite a panic message.
static TERMINAL_SET_UP: AtomicBool = AtomicBool::new(false);

fn restore_terminal() {
    if !TERMINAL_SET_UP.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

fn spawn_input(tx: Sender<Action>) {
    thread::spawn(move || loop {
        let action = match crossterm::event::read() {
            Ok(TermEvent::Key(k)) => Action::Key(k),
            Ok(TermEvent::Mouse(m)) => Action::Mouse(m),
            Ok(TermEvent::Resize(w, h)) => Action::Resize(w, h),
            Ok(_) => continue,
            Err(_) => break,
        };
        if tx.send(action).is_err() {
            break;
        }
    });
}

fn spawn_signals(tx: Sender<Action>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT]) {
        thread::spawn(move || {
            if signals.forever().next().is_some() {
                let _ = tx.send(Action::Quit);
            }
        });
    }
}

/// Reads the whole source, sending events in batches as they are decoded.
fn spawn_source(mut reader: Box<dyn Read + Send>, tx: Sender<Action>) {
    thread::spawn(move || {
        let mut decoder = NativeDecoder::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut items = Vec::new();
        let send = |items: &mut Vec<Item>| -> bool {
            let (mut events, mut problems) = (Vec::new(), Vec::new());
            for item in items.drain(..) {
                match item {
                    Item::Event(e) => events.push(e),
                    Item::Problem(p) => problems.push(p),
                }
            }
            (problems.is_empty() || tx.send(Action::Problems(problems)).is_ok())
                && (events.is_empty() || tx.send(Action::Events(events)).is_ok())
        };
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    decoder.feed(&buf[..n], &mut items);
                    if !send(&mut items) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Action::SourceFailed(crate::io_reason(&e)));
                    return;
                }
            }
        }
        decoder.finish(&mut items);
        if send(&mut items) {
            let _ = tx.send(Action::SourceEnded);
        }
    });
}
