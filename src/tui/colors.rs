//! The colours a cell is drawn in, as the pictures (`loopscope
//! screenshot`, the report's SVGs) draw them: the palette of each canvas,
//! reverse and dim applied; and their contrast, which the themes are
//! checked against.

use ratatui::style::{Color, Modifier};

use super::theme::Canvas;

const DEFAULT_FG: &str = "#d7dae0";
const DEFAULT_BG: &str = "#1e2127";
const LIGHT_FG: &str = "#24292f";
const LIGHT_BG: &str = "#fafafa";

/// The default text and background colours of a canvas.
pub(crate) fn defaults(canvas: Canvas) -> (&'static str, &'static str) {
    match canvas {
        Canvas::Dark => (DEFAULT_FG, DEFAULT_BG),
        Canvas::Light => (LIGHT_FG, LIGHT_BG),
    }
}

/// The 16 named colours (a softer palette than xterm's).
fn named(c: Color) -> Option<&'static str> {
    Some(match c {
        Color::Black => "#282c34",
        Color::Red => "#e06c75",
        Color::Green => "#98c379",
        Color::Yellow => "#e5c07b",
        Color::Blue => "#61afef",
        Color::Magenta => "#c678dd",
        Color::Cyan => "#56b6c2",
        Color::Gray => "#abb2bf",
        Color::DarkGray => "#5c6370",
        Color::LightRed => "#ff7b86",
        Color::LightGreen => "#b5e890",
        Color::LightYellow => "#f0d58c",
        Color::LightBlue => "#82c4ff",
        Color::LightMagenta => "#de9bf0",
        Color::LightCyan => "#7fd3de",
        Color::White => "#ffffff",
        _ => return None,
    })
}

/// The 16 named colours as a light terminal scheme draws them: darker,
/// so that text in them reads on a light background.
fn named_on_light(c: Color) -> Option<&'static str> {
    Some(match c {
        Color::Black => "#24292f",
        Color::Red => "#cf222e",
        Color::Green => "#116329",
        Color::Yellow => "#9a6700",
        Color::Blue => "#0550ae",
        Color::Magenta => "#8250df",
        Color::Cyan => "#1b7c83",
        Color::Gray => "#6e7781",
        Color::DarkGray => "#8c959f",
        Color::LightRed => "#ff8182",
        Color::LightGreen => "#4ac26b",
        Color::LightYellow => "#eac54f",
        Color::LightBlue => "#54aeff",
        Color::LightMagenta => "#c297ff",
        Color::LightCyan => "#76e3ea",
        Color::White => "#ffffff",
        _ => return None,
    })
}

/// A colour as `#rrggbb`; `Reset` is the default for its role.
pub(crate) fn hex(c: Color, default: &str, canvas: Canvas) -> String {
    let named = match canvas {
        Canvas::Dark => named,
        Canvas::Light => named_on_light,
    };
    match c {
        Color::Reset => default.to_string(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => indexed(i),
        other => named(other).unwrap_or(default).to_string(),
    }
}

/// xterm's 256-colour palette.
fn indexed(i: u8) -> String {
    const BASE: [Color; 16] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    match i {
        0..=15 => named(BASE[i as usize]).unwrap_or(DEFAULT_FG).to_string(),
        16..=231 => {
            let n = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + v * 40 };
            format!("#{:02x}{:02x}{:02x}", level(n / 36), level((n / 6) % 6), level(n % 6))
        }
        _ => {
            let g = 8 + (i - 232) * 10;
            format!("#{g:02x}{g:02x}{g:02x}")
        }
    }
}

/// The drawn colours and text attributes of one cell.
#[derive(Clone, PartialEq)]
pub(crate) struct Look {
    pub(crate) fg: String,
    pub(crate) bg: String,
    pub(crate) bold: bool,
    pub(crate) dim: bool,
    pub(crate) italic: bool,
    pub(crate) underline: bool,
    pub(crate) strike: bool,
}

pub(crate) fn look(cell: &ratatui::buffer::Cell, canvas: Canvas) -> Look {
    let m = cell.modifier;
    let (dfg, dbg) = defaults(canvas);
    let (mut fg, mut bg) = (hex(cell.fg, dfg, canvas), hex(cell.bg, dbg, canvas));
    if m.contains(Modifier::REVERSED) {
        std::mem::swap(&mut fg, &mut bg);
    }
    Look {
        fg,
        bg,
        bold: m.contains(Modifier::BOLD),
        dim: m.contains(Modifier::DIM),
        italic: m.contains(Modifier::ITALIC),
        underline: m.contains(Modifier::UNDERLINED),
        strike: m.contains(Modifier::CROSSED_OUT),
    }
}

/// A cell's text and background colours as drawn (`#rrggbb`): reverse
/// applied, dim text at 60 % over its background as the pictures draw it.
/// The themes are checked for contrast with these (tui/theme.rs).
pub fn drawn_colors(cell: &ratatui::buffer::Cell, canvas: Canvas) -> (String, String) {
    let l = look(cell, canvas);
    let fg = if l.dim { blend(&l.fg, &l.bg, 0.6) } else { l.fg };
    (fg, l.bg)
}

fn rgb(hex: &str) -> [f64; 3] {
    let v = |i: usize| f64::from(u8::from_str_radix(hex.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0));
    [v(1), v(3), v(5)]
}

fn blend(fg: &str, bg: &str, alpha: f64) -> String {
    let (f, b) = (rgb(fg), rgb(bg));
    let c = |i: usize| (f[i] * alpha + b[i] * (1.0 - alpha)).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(0), c(1), c(2))
}

/// The WCAG contrast ratio of two `#rrggbb` colours (1 to 21; text wants 4.5).
pub fn contrast(a: &str, b: &str) -> f64 {
    let lum = |hex: &str| {
        let lin = |v: f64| {
            let v = v / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        let [r, g, b] = rgb(hex);
        0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
    };
    let (x, y) = (lum(a), lum(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}
