//! Colours and text styles. Highlights that carry meaning also differ in
//! modifiers (reverse, underline, bold), so the `mono` theme — used for
//! `NO_COLOR` or `--no-color` — still shows every one of them.

use ratatui::style::{Color, Modifier, Style};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Theme {
    pub name: &'static str,
    /// The terminal background the theme is made for (a screenshot paints it).
    pub canvas: Canvas,
    pub text: Style,
    pub dim: Style,
    pub border: Style,
    pub border_focus: Style,
    pub title: Style,
    pub badge_play: Style,
    pub badge_pause: Style,
    pub badge_end: Style,
    pub badge_live: Style,
    /// A live detection's badge in the status line.
    pub badge_alert: Style,
    pub idle: Style,
    pub watching: Style,
    pub clear: Style,
    pub fired: Style,
    pub latched: Style,
    /// Cycle detectors: the first copy of the period.
    pub copy_first: Style,
    /// Cycle detectors and short-repeat units: the other copies, alternately.
    pub copy_a: Style,
    pub copy_b: Style,
    /// chunk-chant: the first char of each occurrence, and its extent.
    pub chunk_start: Style,
    pub chunk_extent: Style,
    pub search: Style,
    pub marker: Style,
    pub marker_fired: Style,
    pub selected: Style,
    pub involved: Style,
    pub here: Style,
    pub key: Style,
    pub flash: Style,
    pub error: Style,
    /// Detections of the second, third… profile compared (the first is `fired`).
    pub compared: [Style; 3],
}

/// A terminal's default colours: the background and the text on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Canvas {
    Dark,
    Light,
}

impl Theme {
    pub fn dark() -> Theme {
        let s = Style::new();
        Theme {
            name: "dark",
            canvas: Canvas::Dark,
            text: s,
            dim: s.fg(Color::DarkGray),
            border: s.fg(Color::DarkGray),
            border_focus: s.fg(Color::Cyan),
            title: s.add_modifier(Modifier::BOLD),
            badge_play: s.fg(Color::Black).bg(Color::Green).add_modifier(Modifier::BOLD),
            badge_pause: s.fg(Color::Black).bg(Color::Yellow).add_modifier(Modifier::BOLD),
            badge_end: s.fg(Color::Black).bg(Color::Gray).add_modifier(Modifier::BOLD),
            badge_live: s.fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD),
            badge_alert: s.fg(Color::Black).bg(Color::LightRed).add_modifier(Modifier::BOLD),
            idle: s.fg(Color::DarkGray),
            watching: s.fg(Color::Yellow),
            clear: s.fg(Color::Green),
            fired: s.fg(Color::LightRed).add_modifier(Modifier::BOLD),
            latched: s.fg(Color::Magenta),
            copy_first: s
                .fg(Color::Black)
                .bg(Color::LightYellow)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            copy_a: s.fg(Color::Black).bg(Color::LightRed),
            copy_b: s.fg(Color::Black).bg(Color::LightMagenta),
            chunk_start: s.fg(Color::Black).bg(Color::LightCyan).add_modifier(Modifier::BOLD),
            chunk_extent: s.fg(Color::LightCyan).add_modifier(Modifier::UNDERLINED),
            search: s.fg(Color::Black).bg(Color::Yellow),
            marker: s.fg(Color::Cyan),
            marker_fired: s.fg(Color::LightRed).add_modifier(Modifier::BOLD),
            // A selected row sets both colours: over a dim (DarkGray) row a
            // background alone was grey on grey.
            selected: s
                .fg(Color::Black)
                .bg(Color::Gray)
                .add_modifier(Modifier::BOLD)
                .remove_modifier(Modifier::DIM),
            involved: s.fg(Color::LightRed).add_modifier(Modifier::BOLD),
            here: s.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            key: s.fg(Color::Cyan).add_modifier(Modifier::BOLD),
            flash: s.fg(Color::Yellow),
            error: s.fg(Color::LightRed),
            compared: [
                s.fg(Color::LightCyan).add_modifier(Modifier::BOLD),
                s.fg(Color::LightMagenta).add_modifier(Modifier::BOLD),
                s.fg(Color::LightGreen).add_modifier(Modifier::BOLD),
            ],
        }
    }

    pub fn light() -> Theme {
        let s = Style::new();
        Theme {
            name: "light",
            canvas: Canvas::Light,
            dim: s.fg(Color::Gray),
            border: s.fg(Color::Gray),
            border_focus: s.fg(Color::Blue),
            watching: s.fg(Color::Rgb(150, 110, 0)),
            clear: s.fg(Color::Rgb(0, 120, 0)),
            fired: s.fg(Color::Red).add_modifier(Modifier::BOLD),
            chunk_extent: s.fg(Color::Blue).add_modifier(Modifier::UNDERLINED),
            marker: s.fg(Color::Blue),
            marker_fired: s.fg(Color::Red).add_modifier(Modifier::BOLD),
            selected: s
                .fg(Color::Black)
                .bg(Color::Rgb(205, 218, 238))
                .add_modifier(Modifier::BOLD)
                .remove_modifier(Modifier::DIM),
            involved: s.fg(Color::Red).add_modifier(Modifier::BOLD),
            here: s.fg(Color::Blue).add_modifier(Modifier::BOLD),
            key: s.fg(Color::Blue).add_modifier(Modifier::BOLD),
            flash: s.fg(Color::Rgb(150, 110, 0)),
            error: s.fg(Color::Red),
            compared: [
                s.fg(Color::Blue).add_modifier(Modifier::BOLD),
                s.fg(Color::Magenta).add_modifier(Modifier::BOLD),
                s.fg(Color::Green).add_modifier(Modifier::BOLD),
            ],
            ..Theme::dark()
        }
    }

    /// No colour at all: meaning is carried by reverse, underline and bold.
    pub fn mono() -> Theme {
        let s = Style::new();
        let b = Modifier::BOLD;
        Theme {
            name: "mono",
            canvas: Canvas::Dark,
            text: s,
            dim: s.add_modifier(Modifier::DIM),
            border: s,
            border_focus: s.add_modifier(b),
            title: s.add_modifier(b),
            badge_play: s.add_modifier(Modifier::REVERSED | b),
            badge_pause: s.add_modifier(Modifier::REVERSED | b),
            badge_end: s.add_modifier(Modifier::REVERSED),
            badge_live: s.add_modifier(Modifier::REVERSED | b),
            badge_alert: s.add_modifier(Modifier::REVERSED | b | Modifier::UNDERLINED),
            idle: s.add_modifier(Modifier::DIM),
            watching: s,
            clear: s,
            fired: s.add_modifier(b | Modifier::REVERSED),
            latched: s.add_modifier(Modifier::ITALIC),
            copy_first: s.add_modifier(Modifier::REVERSED | b | Modifier::UNDERLINED),
            copy_a: s.add_modifier(Modifier::REVERSED),
            // Both copies reversed, so every copy shows and the run's end
            // is plain; they alternate by italic underline.
            copy_b: s.add_modifier(Modifier::REVERSED | Modifier::ITALIC | Modifier::UNDERLINED),
            chunk_start: s.add_modifier(Modifier::REVERSED | b),
            chunk_extent: s.add_modifier(Modifier::UNDERLINED),
            search: s.add_modifier(Modifier::REVERSED | Modifier::ITALIC),
            marker: s.add_modifier(b),
            marker_fired: s.add_modifier(b | Modifier::REVERSED),
            // The cursor has a look of its own: a ⚠ row is already
            // reversed, so reverse alone did not show which was selected.
            // No other row's style has reverse and underline together
            // (involved rows are italic here for that).
            selected: s
                .add_modifier(Modifier::REVERSED | b | Modifier::UNDERLINED)
                .remove_modifier(Modifier::DIM),
            involved: s.add_modifier(b | Modifier::ITALIC),
            here: s.add_modifier(b),
            key: s.add_modifier(b),
            flash: s.add_modifier(b),
            error: s.add_modifier(b),
            compared: [
                s.add_modifier(b | Modifier::UNDERLINED),
                s.add_modifier(b | Modifier::ITALIC),
                s.add_modifier(Modifier::UNDERLINED | Modifier::ITALIC),
            ],
        }
    }

    /// How run `k`'s detections are marked (run 0: `fired`).
    pub fn run_style(&self, k: usize) -> Style {
        match k {
            0 => self.fired,
            k => self.compared[(k - 1) % self.compared.len()],
        }
    }

    pub fn by_name(name: &str) -> Option<Theme> {
        match name {
            "dark" => Some(Theme::dark()),
            "light" => Some(Theme::light()),
            "mono" => Some(Theme::mono()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::colors::{contrast, drawn_colors};

    /// Any row style under the selection (the detectors, the detections
    /// list, watch's list patch the selection over their own styles) reads
    /// in every theme.
    #[test]
    fn the_selection_over_any_style_reads_in_every_theme() {
        for theme in [Theme::dark(), Theme::light(), Theme::mono()] {
            let t = &theme;
            let styles = [
                ("text", t.text),
                ("dim", t.dim),
                ("title", t.title),
                ("idle", t.idle),
                ("watching", t.watching),
                ("clear", t.clear),
                ("fired", t.fired),
                ("latched", t.latched),
                ("involved", t.involved),
                ("key", t.key),
                ("error", t.error),
                ("compared 1", t.compared[0]),
                ("compared 2", t.compared[1]),
                ("compared 3", t.compared[2]),
            ];
            for (name, style) in styles {
                let mut cell = ratatui::buffer::Cell::new("x");
                cell.set_style(style.patch(t.selected));
                let (fg, bg) = drawn_colors(&cell, t.canvas);
                let c = contrast(&fg, &bg);
                assert!(
                    fg != bg && c >= 4.5,
                    "{} theme, {name} selected: {fg} on {bg} ({c:.2})",
                    t.name
                );
            }
        }
    }

    #[test]
    fn in_mono_the_cursor_looks_like_no_rows_own_style() {
        let t = Theme::mono();
        let cursor = Modifier::REVERSED | Modifier::UNDERLINED;
        assert!(t.selected.add_modifier.contains(cursor));
        let mut rows = vec![t.text, t.dim, t.fired, t.latched, t.involved, t.fired.patch(t.involved)];
        for c in t.compared {
            rows.extend([c, c.patch(t.involved)]);
        }
        for r in rows {
            assert!(!r.add_modifier.contains(cursor), "{r:?} looks like the cursor");
        }
    }
}
