//! The status line: mode badge, file, speed, position, time, profile, and
//! problems or a passing message.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::cells::label;
use super::theme::Theme;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Playing,
    Paused,
    End,
    Loading,
    /// Following a live stream at its newest event.
    Live,
}

impl Mode {
    pub fn badge(self) -> &'static str {
        match self {
            Mode::Playing => " ▶ PLAYING ",
            Mode::Paused => " ‖ PAUSED ",
            Mode::End => " ■ END ",
            Mode::Loading => " … LOADING ",
            Mode::Live => " ● LIVE ",
        }
    }
}

pub struct StatusView<'a> {
    pub mode: Mode,
    pub name: &'a str,
    pub speed: f64,
    /// The last shown event (0-based, as the log format numbers events).
    pub shown: Option<usize>,
    pub total: usize,
    pub time: f64,
    pub duration: f64,
    pub profile: &'a str,
    pub bad_lines: usize,
    pub pause_on_detect: bool,
    pub flash: Option<&'a str>,
    /// A live detection that just arrived ("⚠ tool-repeat at 42").
    pub badge: Option<&'a str>,
    /// Live detections so far.
    pub fired: usize,
    /// For live streams: waiting, deleted, idle, or how far behind the view is.
    pub live_note: Option<String>,
    /// The importer, when the input is not native ("claude-code · blocks").
    pub format_note: Option<String>,
}

/// Seconds as m:ss.s (h:mm:ss past an hour).
pub fn clock(s: f64) -> String {
    let s = s.max(0.0);
    let (h, m, sec) = ((s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64, s % 60.0);
    if h > 0 {
        format!("{h}:{m:02}:{sec:04.1}")
    } else {
        format!("{m}:{sec:04.1}")
    }
}

pub fn speed_label(speed: f64) -> String {
    if speed >= 1.0 {
        format!("×{speed}")
    } else {
        format!("×{speed:.2}")
    }
}

/// The shown event as the log numbers it, and the range there is:
/// "event 278 (0–313)".
pub fn position(shown: Option<usize>, total: usize) -> String {
    match (shown, total) {
        (_, 0) => "no events".to_string(),
        (Some(e), n) => format!("event {e} (0–{})", n - 1),
        (None, n) => format!("event – (0–{})", n - 1),
    }
}

pub fn render(frame: &mut Frame, area: Rect, v: StatusView<'_>, theme: &Theme) {
    let badge = match v.mode {
        Mode::Playing => theme.badge_play,
        Mode::Paused | Mode::Loading => theme.badge_pause,
        Mode::End => theme.badge_end,
        Mode::Live => theme.badge_live,
    };
    let mut parts = vec![Span::styled(v.mode.badge(), badge)];
    // Live news first, where a narrow screen still shows it.
    if let Some(b) = v.badge {
        parts.push(Span::styled(format!(" {} ", label(b, 40)), theme.badge_alert));
    }
    if v.fired > 0 {
        parts.push(Span::styled(format!(" FIRED {} ", v.fired), theme.fired));
    }
    parts.push(Span::raw(" "));
    parts.push(Span::styled(label(v.name, 40), theme.title));
    parts.push(Span::styled(
        format!(
            "  {}  {}  {} / {}  {}",
            speed_label(v.speed),
            position(v.shown, v.total),
            clock(v.time),
            clock(v.duration),
            v.profile
        ),
        theme.text,
    ));
    if let Some(note) = &v.format_note {
        parts.push(Span::styled(format!("  {note}"), theme.dim));
    }
    if let Some(note) = &v.live_note {
        parts.push(Span::styled(format!("  {note}"), theme.watching));
    }
    if v.pause_on_detect {
        parts.push(Span::styled("  pause-on-detect", theme.watching));
    }
    if v.bad_lines > 0 {
        parts.push(Span::styled(format!("  {} bad lines", v.bad_lines), theme.error));
    }
    if let Some(f) = v.flash {
        parts.push(Span::styled(format!("  {}", label(f, 200)), theme.flash));
    }
    frame.render_widget(Paragraph::new(Line::from(parts)), area);
}
