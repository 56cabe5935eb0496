//! The terminal app. Std threads and one channel: an input thread forwards
//! terminal events, a source thread forwards decoded events, a signal thread
//! forwards SIGTERM/SIGHUP/SIGINT; the main loop applies them to the [`App`]
//! and redraws only when something changed, at most ~60 times a second.

mod abort_restore;
pub mod app;
pub mod buffer_layout;
pub mod buffer_pane;
pub mod calls;
pub mod cells;
pub mod clipboard;
pub mod colors;
pub mod completion;
pub mod component;
pub mod detections_list;
pub mod detectors_pane;
pub(crate) mod footer;
pub mod help;
pub mod input;
pub mod inspector;
pub mod keymap;
pub mod layout;
pub mod live;
mod navigate;
pub mod prompt;
mod scrubber;
pub mod search;
mod shown;
mod source;
pub mod status;
pub mod theme;
pub mod timeline;
pub mod timeline_pane;
pub mod ui;
pub mod watch;
pub mod watch_list;
pub mod whatif;

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, Event as TermEvent};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub use app::{App, LiveOptions, ViewOptions};
pub use input::Action;

// The viewer's panes, in focus (Tab) order, and its overlays. Each is its
// own module implementing `component::Component`; registering it here is
// all the rest of the viewer needs (layout, keys, help, footer, drawing).
component::panes! {
    Buffer => buffer: buffer_pane::BufferPane,
    Detectors => detectors: detectors_pane::DetectorsPane,
    Timeline => timeline: timeline_pane::TimelinePane,
}
component::overlays! {
    Detections(detections_list::DetectionsList),
    Inspector(inspector::Inspector),
    Help(help::Help),
}

use crate::replay::feed::{Feed, Sink};
use crate::tail::OnDetect;
use loopscope_core::config::Setup;

/// At most one frame per this long (~60 fps).
const FRAME: Duration = Duration::from_millis(16);
/// The loop wakes at least this often (messages expire, signals arrive).
const IDLE_WAKE: Duration = Duration::from_millis(250);
/// Batches of decoded events waiting for the app. Bounded: a big file
/// waits in the reader (on disk), not in memory.
const FEED_QUEUE: usize = 4;
/// Decoded events are applied for at most this long between looks at the
/// keyboard and signals, so a key is answered while a big file loads.
const FEED_SLICE: Duration = Duration::from_millis(8);

/// Runs the viewer until the user quits. `start` starts the thread that
/// feeds events (a whole file for `view`, a followed file for `tail`).
/// Returns the exit status: 0 after `q`, 128 + the signal after one (130
/// after Ctrl-C, as a shell reports it).
pub fn run(name: &str, setup: Setup, opts: ViewOptions, start: impl FnOnce(Sink)) -> Result<i32, String> {
    if !io::stdout().is_terminal() {
        return Err("the viewer needs a terminal; for headless output use `loopscope scan`".to_string());
    }
    // Two queues: keys, signals and hook reports on one, unbounded and
    // always looked at first; decoded events on a small bounded one, taken
    // in time slices. A wake-up (Tick) on the first says events are waiting.
    let (tx, rx) = mpsc::channel::<Action>();
    let (sink, feed_rx, feed_waiting) = feed_sink(tx.clone());
    start(sink);
    let mut feed_backlog = false;
    spawn_signals(tx.clone());
    let guard = TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(|e| e.to_string())?;
    spawn_input(tx.clone());
    let hook = opts
        .live
        .as_ref()
        .and_then(|l| l.on_detect.clone())
        .map(|command| OnDetect {
            command,
            file: name.to_string(),
        });
    let bell = opts.live.as_ref().is_some_and(|l| l.bell);
    let link = opts.live.as_ref().and_then(|l| l.link.clone());
    let profile = setup.profile.name();
    // The exporter's warnings flash in the status line while the screen is the viewer's.
    let exporter = link.as_ref().and_then(|l| l.telemetry().otlp);
    if let Some(x) = &exporter {
        let tx = tx.clone();
        x.set_warn(Box::new(move |text| {
            let _ = tx.send(Action::HookFailed(text));
        }));
    }
    let now = Instant::now();
    let mut app = App::new(name, setup, &opts, now);
    let size = terminal.size().map_err(|e| e.to_string())?;
    app.update(Action::Resize(size.width, size.height), now);
    let mut last_draw: Option<Instant> = None;
    // The end-to-end tests check that a panic (or an allocation failure)
    // restores the terminal.
    // Debug builds only: the hook is compiled out of a release build, where
    // no variable can make the app fail.
    #[cfg(debug_assertions)]
    let fail_for_test = std::env::var("LOOPSCOPE_TEST_PANIC").ok();
    loop {
        let now = Instant::now();
        for d in std::mem::take(&mut app.announcements) {
            if let (Some(link), Some(event)) = (&link, app.tape.event(d.event)) {
                link.with(|l| l.detection(&d, &event, profile));
            }
            if bell {
                let _ = terminal.backend_mut().write_all(b"\x07");
            }
            if let Some(hook) = &hook {
                let tx = tx.clone();
                hook.run(&d, true, move |r| {
                    if let Err(msg) = r {
                        let _ = tx.send(Action::HookFailed(msg));
                    }
                });
            }
        }
        if let Some(text) = app.clipboard.take() {
            let _ = terminal.backend_mut().write_all(clipboard::osc52(&text).as_bytes());
        }
        if app.dirty && last_draw.is_none_or(|t| now >= t + FRAME) {
            draw(&mut terminal, &app).map_err(|e| format!("cannot draw: {e}"))?;
            app.dirty = false;
            last_draw = Some(now);
            #[cfg(debug_assertions)]
            if let Some(how) = fail_for_test.as_deref() {
                fail_deliberately(how);
            }
        }
        let frame_due = (app.dirty).then(|| last_draw.map_or(now, |t| t + FRAME));
        let wake = [app.next_wakeup(now), frame_due]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(now + IDLE_WAKE);
        let timeout = if feed_backlog {
            Duration::ZERO
        } else {
            wake.saturating_duration_since(now).min(IDLE_WAKE)
        };
        match rx.recv_timeout(timeout) {
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
        if app.quit {
            break;
        }
        if std::mem::take(&mut app.suspend) {
            suspend(&mut terminal).map_err(|e| format!("cannot take the terminal back: {e}"))?;
            // The terminal may have changed size while the viewer was stopped.
            let size = terminal.size().map_err(|e| e.to_string())?;
            app.update(Action::Resize(size.width, size.height), Instant::now());
        }
        feed_backlog = take_feed(&mut app, &feed_rx, &feed_waiting);
        app.update(Action::Tick, Instant::now());
        if app.quit {
            break;
        }
    }
    drop(terminal);
    drop(guard);
    if let Some(x) = &exporter {
        x.set_warn(crate::telemetry::otlp::warn_on_stderr());
    }
    let status = app.exit_status();
    // Freeing millions of events takes longer than quitting should; the
    // process is about to end and gives the memory back at once.
    std::mem::forget(app);
    Ok(status)
}

/// A source's sink into a small bounded queue of feed batches, taken by
/// [`take_feed`]; the first batch waiting sends `wake` a Tick.
pub(crate) fn feed_sink(wake: Sender<Action>) -> (Sink, mpsc::Receiver<Feed>, Arc<AtomicBool>) {
    let (feed_tx, feed_rx) = mpsc::sync_channel::<Feed>(FEED_QUEUE);
    let waiting = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&waiting);
    let sink: Sink = Box::new(move |f| {
        if feed_tx.send(f).is_err() {
            return false;
        }
        if !flag.swap(true, Ordering::SeqCst) {
            let _ = wake.send(Action::Tick);
        }
        true
    });
    (sink, feed_rx, waiting)
}

/// Applies waiting feed batches for at most [`FEED_SLICE`]; true when
/// some are left for the next turn of the loop.
pub(crate) fn take_feed(app: &mut App, feed: &mpsc::Receiver<Feed>, waiting: &AtomicBool) -> bool {
    waiting.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + FEED_SLICE;
    while let Ok(f) = feed.try_recv() {
        app.update(Action::Feed(f), Instant::now());
        if Instant::now() >= deadline {
            return true;
        }
    }
    false
}

fn draw(terminal: &mut Terminal<CrosstermBackend<io::Stdout>>, app: &App) -> io::Result<()> {
    draw_with(terminal, |frame| ui::render(frame, app))
}

/// One frame, drawn as one synchronized update (no half-drawn screens).
pub(crate) fn draw_with(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    render: impl FnOnce(&mut ratatui::Frame),
) -> io::Result<()> {
    crossterm::queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    terminal.draw(render)?;
    crossterm::queue!(terminal.backend_mut(), EndSynchronizedUpdate)?;
    terminal.backend_mut().flush()
}

/// `LOOPSCOPE_TEST_PANIC`: `alloc` fails an allocation as running out of
/// memory does (an abort), `thread` panics on another thread, anything
/// else panics on this one.
#[cfg(debug_assertions)]
fn fail_deliberately(how: &str) {
    match how {
        "alloc" => std::alloc::handle_alloc_error(std::alloc::Layout::new::<[u8; 1 << 30]>()),
        "thread" => {
            let _ = thread::spawn(|| panic!("deliberate panic on a thread (LOOPSCOPE_TEST_PANIC)")).join();
            // The hook ends the process; nothing after it runs.
            thread::sleep(Duration::from_secs(5));
        }
        _ => panic!("deliberate panic (LOOPSCOPE_TEST_PANIC)"),
    }
}

/// Raw mode, alternate screen and mouse capture, undone on drop, by a
/// panic hook and by a SIGABRT handler (an allocation failure, a stack
/// overflow), so the terminal is restored however the app ends.
pub(crate) struct TerminalGuard;

impl TerminalGuard {
    pub(crate) fn enter() -> io::Result<TerminalGuard> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A panic caught where it happens (the parquet crate on a
            // damaged file) is an error the app reports: the viewer goes on.
            if loopscope_core::contain::is_contained() {
                return;
            }
            let drawing = TERMINAL_SET_UP.load(Ordering::SeqCst);
            restore_terminal();
            previous(info);
            // A panic on another thread (a source, a hook) would leave the
            // app drawing on a restored terminal: end it here, as the main
            // thread's panic does.
            if drawing && thread::current().name() != Some("main") {
                std::process::exit(101);
            }
        }));
        abort_restore::prepare();
        let guard = TerminalGuard;
        take_terminal()?;
        Ok(guard)
    }
}

/// Raw mode, the alternate screen and mouse capture (undone by
/// [`restore_terminal`]).
fn take_terminal() -> io::Result<()> {
    enable_raw_mode()?;
    TERMINAL_SET_UP.store(true, Ordering::SeqCst);
    abort_restore::arm(true);
    crossterm::execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)
}

/// Ctrl-Z: the terminal back as it was, the process stopped as by the
/// terminal's own Ctrl-Z (raw mode delivers it as a key); when the shell
/// resumes it (`fg`), the app's modes again and a whole new frame.
pub(crate) fn suspend(terminal: &mut Terminal<CrosstermBackend<io::Stdout>>) -> io::Result<()> {
    restore_terminal();
    // SAFETY: raise(2) with a signal number; SIGTSTP's default action
    // stops the whole process, and the call returns once SIGCONT arrives.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    take_terminal()?;
    crossterm::execute!(
        io::stdout(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    )?;
    // A new terminal has no previous frame: the next draws it whole.
    // (Terminal::clear would ask the terminal where its cursor is, and the
    // answer goes to the input thread's read.)
    *terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok(())
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
    abort_restore::arm(false);
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

pub(crate) fn spawn_input(tx: Sender<Action>) {
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

pub(crate) fn spawn_signals(tx: Sender<Action>) {
    crate::tail::on_stop_signal(move |sig| {
        let _ = tx.send(Action::Signal(sig));
    });
}
