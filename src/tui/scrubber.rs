//! The scrubber: one row showing where playback is in the whole stream,
//! with a mark at every detection (like asciinema's markers).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::Frame;

use super::theme::Theme;

pub struct ScrubberView<'a> {
    /// Playback position and length, in seconds.
    pub position: f64,
    pub duration: f64,
    /// Playback times of the detections, with the run (profile) of each.
    pub marks: &'a [(f64, usize)],
}

pub fn render(frame: &mut Frame, area: Rect, v: ScrubberView<'_>, theme: &Theme) {
    let buf: &mut Buffer = frame.buffer_mut();
    let w = area.width as usize;
    if w == 0 {
        return;
    }
    let col = |t: f64| -> usize {
        if v.duration <= 0.0 {
            0
        } else {
            ((t / v.duration) * (w - 1) as f64).round().clamp(0.0, (w - 1) as f64) as usize
        }
    };
    let here = col(v.position);
    for x in 0..w {
        let (sym, style) = if x < here {
            ("━", theme.here)
        } else {
            ("─", theme.dim)
        };
        buf[(area.x + x as u16, area.y)].set_symbol(sym).set_style(style);
    }
    // Later runs first, so the shown profile's mark wins a shared cell.
    for &(t, run) in v.marks.iter().rev() {
        buf[(area.x + col(t) as u16, area.y)]
            .set_symbol("◆")
            .set_style(theme.run_style(run));
    }
    buf[(area.x + here as u16, area.y)]
        .set_symbol("●")
        .set_style(theme.here);
}
