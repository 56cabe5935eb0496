//! `loopscope watch` in the terminal: the list of sessions, and the viewer
//! following one of them (Enter; a FIRED one opens at its detection), back
//! to the list with q or Esc. The watching
//! thread and the opened session's reader feed one loop, which redraws
//! only when something changed.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyCode, KeyEventKind};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::watch_list::{ListAction, WatchList};
use super::{
    draw_with, feed_sink, spawn_input, spawn_signals, take_feed, Action, App, LiveOptions, TerminalGuard, ViewOptions,
};
use crate::replay::feed::Feed;
use crate::tail::{OnDetect, Target};
use crate::watch::{self, WatchNews, WatchOptions};

/// How long another session's detection is said over the opened viewer.
const ALERT_FOR: Duration = Duration::from_secs(8);
/// The list is redrawn at least this often (its "5s ago" column moves).
const LIST_REFRESH: Duration = Duration::from_secs(1);

/// The session opened from the list.
struct Opened {
    path: std::path::PathBuf,
    /// Another session fired: said over the footer until then.
    alert: Option<(String, Instant)>,
    app: App,
    feed: mpsc::Receiver<Feed>,
    waiting: Arc<AtomicBool>,
    backlog: bool,
}

/// Runs the watch screen until the user quits.
/// Returns the exit status: 0 after `q`, 128 + the signal after one.
pub fn run(opts: WatchOptions, live: LiveOptions, view: ViewOptions) -> Result<i32, String> {
    if !io::stdout().is_terminal() {
        return Err("watch needs a terminal; for one line per detection use `loopscope watch --no-tui`".to_string());
    }
    let setup = opts.setup.clone();
    let format = opts.format;
    let (tx, rx) = mpsc::channel::<Action>();
    // The exporter's warnings go to the list's note line while the screen is the list's.
    let exporter = opts.telemetry.otlp.clone();
    if let Some(x) = &exporter {
        let tx = tx.clone();
        x.set_warn(Box::new(move |text| {
            let _ = tx.send(Action::HookFailed(text));
        }));
    }
    let (news_tx, news_rx) = mpsc::channel::<WatchNews>();
    let wake = tx.clone();
    watch::spawn(
        opts,
        Box::new(move |n| news_tx.send(n).is_ok() && wake.send(Action::Tick).is_ok()),
    );
    spawn_signals(tx.clone());
    let guard = TerminalGuard::enter().map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(|e| e.to_string())?;
    spawn_input(tx.clone());
    let mut list = WatchList::default();
    let mut opened: Option<Opened> = None;
    let mut size = terminal.size().map_err(|e| e.to_string())?;
    let mut dirty = true;
    let mut last_draw = Instant::now() - LIST_REFRESH;
    let theme = view.theme.clone();
    let mut interrupted: Option<i32> = None;
    loop {
        // The watcher's news: rows, and detections to announce.
        while let Ok(n) = news_rx.try_recv() {
            dirty = true;
            if let Some((row, d)) = list.apply(n) {
                // Looking at another session: say so over the viewer's footer.
                if let Some(o) = opened.as_mut().filter(|o| o.path != row.path) {
                    let text = format!(" ⚠ {} fired in {} · q: the list ", d.detector, row.label());
                    o.alert = Some((text, Instant::now() + ALERT_FOR));
                    o.app.dirty = true;
                }
                if live.bell {
                    let _ = terminal.backend_mut().write_all(b"\x07");
                }
                if let Some(command) = &live.on_detect {
                    let hook = OnDetect {
                        command: command.clone(),
                        file: row.path.display().to_string(),
                    };
                    let tx = tx.clone();
                    hook.run(&d, true, move |r| {
                        if let Err(msg) = r {
                            let _ = tx.send(Action::HookFailed(msg));
                        }
                    });
                }
            }
        }
        let now = Instant::now();
        match opened.as_mut() {
            Some(o) => {
                // The viewer's own announcements are the watcher's too: said once, above.
                o.app.announcements.clear();
                if o.alert.as_ref().is_some_and(|(_, until)| now >= *until) {
                    o.alert = None;
                    o.app.dirty = true;
                }
                if o.app.dirty {
                    let alert = o.alert.as_ref().map(|(text, _)| text.as_str());
                    draw_with(&mut terminal, |f| {
                        super::ui::render(f, &o.app);
                        if let Some(text) = alert {
                            let area = f.area();
                            let row = ratatui::layout::Rect::new(0, area.height.saturating_sub(1), area.width, 1);
                            let line = ratatui::text::Span::styled(
                                super::cells::label_middle(text, area.width as usize),
                                theme.badge_alert,
                            );
                            f.render_widget(ratatui::widgets::Clear, row);
                            f.render_widget(ratatui::widgets::Paragraph::new(line), row);
                        }
                    })
                    .map_err(|e| format!("cannot draw: {e}"))?;
                    o.app.dirty = false;
                }
            }
            None => {
                if dirty || now >= last_draw + LIST_REFRESH {
                    draw_with(&mut terminal, |f| list.render(f, &theme, SystemTime::now()))
                        .map_err(|e| format!("cannot draw: {e}"))?;
                    dirty = false;
                    last_draw = now;
                }
            }
        }
        let timeout = match &opened {
            Some(o) if o.backlog => Duration::ZERO,
            Some(o) => o
                .app
                .next_wakeup(now)
                .map_or(Duration::from_millis(250), |t| t.saturating_duration_since(now))
                .min(Duration::from_millis(250)),
            None => LIST_REFRESH.saturating_sub(now - last_draw),
        };
        let mut actions = Vec::new();
        match rx.recv_timeout(timeout) {
            Ok(a) => actions.push(a),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        while let Ok(a) = rx.try_recv() {
            actions.push(a);
        }
        let mut quit = false;
        let mut suspend = false;
        for action in actions {
            if let Action::Resize(w, h) = action {
                size = ratatui::layout::Size::new(w, h);
                dirty = true;
            }
            if let Action::Signal(sig) = action {
                interrupted = Some(sig);
                quit = true;
                break;
            }
            match opened.as_mut() {
                Some(o) => {
                    // q or Esc (nothing open in the viewer to close first)
                    // come back to the list, as in k9s; Ctrl-C quits.
                    let back = matches!(&action, Action::Key(k)
                        if k.kind != KeyEventKind::Release
                            && k.modifiers.is_empty()
                            && matches!(k.code, KeyCode::Esc | KeyCode::Char('q'))
                            && o.app.overlay.is_none() && o.app.prompt.is_none());
                    if back {
                        // Dropping the receiver ends the reader thread at its next batch.
                        opened = None;
                        dirty = true;
                        continue;
                    }
                    o.app.update(action, Instant::now());
                    if o.app.quit {
                        interrupted = o.app.interrupted;
                        quit = true;
                    }
                    if std::mem::take(&mut o.app.suspend) {
                        suspend = true;
                    }
                }
                // Ctrl-Z over the list too, as in the viewer.
                None if matches!(&action, Action::Key(k) if k.kind != KeyEventKind::Release
                    && k.code == KeyCode::Char('z')
                    && k.modifiers.contains(crossterm::event::KeyModifiers::CONTROL)) =>
                {
                    suspend = true;
                }
                None => match action {
                    Action::Key(k) if k.kind != KeyEventKind::Release => {
                        dirty = true;
                        match list.key(k, size.height.saturating_sub(4) as usize) {
                            ListAction::Quit => quit = true,
                            ListAction::Interrupt => {
                                interrupted = Some(super::input::SIGINT);
                                quit = true;
                            }
                            ListAction::Open { path, at } => {
                                let name = list
                                    .row(&path)
                                    .map_or_else(|| path.display().to_string(), |r| r.label());
                                let view = ViewOptions {
                                    start_at: at,
                                    ..view.clone()
                                };
                                opened = Some(open(&name, &path, &setup, format, &view, size, &tx));
                            }
                            ListAction::None => {}
                        }
                    }
                    Action::HookFailed(msg) => {
                        list.note = Some(msg);
                        dirty = true;
                    }
                    _ => {}
                },
            }
        }
        if quit {
            break;
        }
        if suspend {
            super::suspend(&mut terminal).map_err(|e| format!("cannot take the terminal back: {e}"))?;
            size = terminal.size().map_err(|e| e.to_string())?;
            dirty = true;
            if let Some(o) = opened.as_mut() {
                o.app.update(Action::Resize(size.width, size.height), Instant::now());
            }
        }
        if let Some(o) = opened.as_mut() {
            o.backlog = take_feed(&mut o.app, &o.feed, &o.waiting);
            o.app.update(Action::Tick, Instant::now());
            if o.app.quit {
                interrupted = o.app.interrupted;
                break;
            }
        }
    }
    drop(terminal);
    drop(guard);
    if let Some(x) = &exporter {
        x.set_warn(crate::telemetry::otlp::warn_on_stderr());
    }
    if let Some(o) = opened {
        std::mem::forget(o.app);
    }
    Ok(interrupted.map_or(0, |sig| 128 + sig))
}

/// The viewer following one session, as `tail` shows it (the watcher
/// rings and runs hooks for every session, so this one does not).
fn open(
    name: &str,
    path: &std::path::Path,
    setup: &loopscope_core::config::Setup,
    format: loopscope_core::formats::FormatChoice,
    view: &ViewOptions,
    size: ratatui::layout::Size,
    wake: &mpsc::Sender<Action>,
) -> Opened {
    let now = Instant::now();
    let opts = ViewOptions {
        live: Some(LiveOptions {
            from_start: false,
            bell: false,
            on_detect: None,
            // The watcher reports every session's detections, this one's too.
            link: None,
        }),
        // The session, and the folders watched (a new file there is a session too).
        inputs: std::iter::once(path.to_path_buf())
            .chain(view.inputs.iter().cloned())
            .collect(),
        ..view.clone()
    };
    let mut app = App::new(name, setup.clone(), &opts, now);
    app.update(Action::Resize(size.width, size.height), now);
    let (sink, feed_rx, waiting) = feed_sink(wake.clone());
    Target::File(path.to_path_buf()).start(format, sink);
    Opened {
        path: path.to_path_buf(),
        alert: None,
        app,
        feed: feed_rx,
        waiting,
        backlog: false,
    }
}

/// The list as it is once every session that exists has been read, drawn
/// off-screen (`watch --snapshot`): for documentation and bug reports.
pub fn snapshot(
    opts: WatchOptions,
    size: (u16, u16),
    theme: &super::theme::Theme,
) -> Result<ratatui::buffer::Buffer, String> {
    let (tx, rx) = mpsc::channel::<WatchNews>();
    watch::spawn(opts, Box::new(move |n| tx.send(n).is_ok()));
    let mut list = WatchList::default();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !list.caught_up {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(n) => {
                list.apply(n);
            }
            Err(_) => return Err("the sessions were not read in time".to_string()),
        }
    }
    let mut terminal = Terminal::new(ratatui::backend::TestBackend::new(size.0, size.1)).map_err(|e| e.to_string())?;
    terminal
        .draw(|f| list.render(f, theme, SystemTime::now()))
        .map_err(|e| e.to_string())?;
    Ok(terminal.backend().buffer().clone())
}
