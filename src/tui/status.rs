//! The status line: mode badge, file, speed, position, time, profile, and
//! problems or a passing message.

use crate::output::count;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use ratatui::style::Style;
use unicode_width::UnicodeWidthStr;

use super::cells::{label, label_end};
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
    /// A live detection that just arrived ("⚠ tool-repeat at 42").
    pub badge: Option<&'a str>,
    /// Live detections so far.
    pub fired: usize,
    /// For live streams: idle, ended, or how far behind the view is.
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

/// The status line fitted to `area`: the mode, news and where the view is
/// come first; what does not fit goes, least useful first (the format, the
/// times, the speed); the file name takes what is left and keeps its end
/// (the session id), not its start. Messages have the bottom line.
pub fn render(frame: &mut Frame, area: Rect, v: StatusView<'_>, theme: &Theme) {
    let badge = match v.mode {
        Mode::Playing => theme.badge_play,
        Mode::Paused | Mode::Loading => theme.badge_pause,
        Mode::End => theme.badge_end,
        Mode::Live => theme.badge_live,
    };
    // (priority: lower goes first when the line is too long, text, style)
    let mut head: Vec<(u8, String, Style)> = vec![(9, v.mode.badge().to_string(), badge)];
    if let Some(b) = v.badge {
        head.push((9, format!(" {} ", label(b, 40)), theme.badge_alert));
    }
    if v.fired > 0 {
        head.push((8, format!(" FIRED {} ", v.fired), theme.fired));
    }
    let mut tail: Vec<(u8, String, Style)> = vec![
        (3, format!("  {}", speed_label(v.speed)), theme.text),
        (7, format!("  {}", position(v.shown, v.total)), theme.text),
        (2, format!("  {} / {}", clock(v.time), clock(v.duration)), theme.text),
        (5, format!("  {}", v.profile), theme.text),
    ];
    if let Some(note) = &v.format_note {
        tail.push((1, format!("  {note}"), theme.dim));
    }
    if let Some(note) = &v.live_note {
        tail.push((8, format!("  {note}"), theme.watching));
    }
    if v.pause_on_detect {
        tail.push((4, "  pause-on-detect".to_string(), theme.watching));
    }
    if v.bad_lines > 0 {
        tail.push((6, format!("  {} (:bad)", count(v.bad_lines, "bad line")), theme.error));
    }
    let width = area.width as usize;
    // The name wants at least this much before anything else gives way.
    const NAME_MIN: usize = 16;
    let cost = |parts: &[(u8, String, Style)]| parts.iter().map(|(_, t, _)| t.width()).sum::<usize>();
    while cost(&head) + cost(&tail) + 1 + NAME_MIN > width {
        let lowest = tail.iter().enumerate().min_by_key(|(_, p)| p.0).map(|(i, _)| i);
        match lowest {
            Some(i) => {
                tail.remove(i);
            }
            None => break,
        }
    }
    let room = width.saturating_sub(cost(&head) + cost(&tail) + 1).max(1);
    let mut spans: Vec<Span> = head.into_iter().map(|(_, t, s)| Span::styled(t, s)).collect();
    spans.push(Span::raw(" "));
    spans.push(Span::styled(label_end(v.name, room.min(60)), theme.title));
    spans.extend(tail.into_iter().map(|(_, t, s)| Span::styled(t, s)));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
