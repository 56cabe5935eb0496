//! A ratatui buffer as an SVG picture of the terminal: one `<rect>` per run
//! of background colour, one `<text>` per run of text style, every run
//! stretched to its exact cell width so columns line up whatever the font.

use std::fmt::Write;

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

use super::escape_markup as escape;
use crate::tui::colors::{defaults, look, Look};
use crate::tui::theme::Canvas;

/// One terminal cell, in SVG user units.
pub const CELL_W: f64 = 8.4;
pub const CELL_H: f64 = 17.0;
const FONT_SIZE: f64 = 14.0;
fn text_element(out: &mut String, x: usize, y: usize, cells: usize, text: &str, l: &Look) {
    let mut attrs = format!(r#"fill="{}""#, l.fg);
    if l.bold {
        attrs += r#" font-weight="bold""#;
    }
    if l.italic {
        attrs += r#" font-style="italic""#;
    }
    if l.dim {
        attrs += r#" opacity="0.6""#;
    }
    match (l.underline, l.strike) {
        (true, true) => attrs += r#" text-decoration="underline line-through""#,
        (true, false) => attrs += r#" text-decoration="underline""#,
        (false, true) => attrs += r#" text-decoration="line-through""#,
        _ => {}
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" textLength="{:.1}" lengthAdjust="spacingAndGlyphs" xml:space="preserve" {attrs}>{}</text>"#,
        x as f64 * CELL_W,
        y as f64 * CELL_H + CELL_H * 0.78,
        cells as f64 * CELL_W,
        escape(text)
    );
}

/// Renders `buf` as an SVG document titled `title`, on a terminal of
/// `canvas` colours (the theme's). Each `<text>` says `xml:space="preserve"`
/// itself: browsers do not take it from the enclosing group, and collapsed
/// runs of spaces would be stretched over the row by `textLength`.
pub fn to_svg(buf: &Buffer, title: &str, canvas: Canvas) -> String {
    let (_, canvas_bg) = defaults(canvas);
    let (w, h) = (buf.area.width as usize, buf.area.height as usize);
    let (pw, ph) = (w as f64 * CELL_W, h as f64 * CELL_H);
    let mut rects = String::new();
    let mut texts = String::new();
    for y in 0..h {
        // Backgrounds; a wide glyph paints both of its cells, as a terminal does.
        let mut bgs: Vec<String> = Vec::with_capacity(w);
        while bgs.len() < w {
            let cell = &buf[(bgs.len() as u16, y as u16)];
            let width = UnicodeWidthStr::width(cell.symbol()).clamp(1, w - bgs.len());
            let bg = look(cell, canvas).bg;
            bgs.extend(std::iter::repeat_n(bg, width));
        }
        let mut x = 0;
        while x < w {
            let bg = bgs[x].clone();
            let start = x;
            while x < w && bgs[x] == bg {
                x += 1;
            }
            if bg != canvas_bg {
                let _ = writeln!(
                    rects,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{CELL_H:.1}" fill="{bg}"/>"#,
                    start as f64 * CELL_W,
                    y as f64 * CELL_H,
                    (x - start) as f64 * CELL_W
                );
            }
        }
        // Text: runs of one look; a wide glyph is a run of its own, two cells wide.
        let mut x = 0;
        let mut run = String::new();
        let (mut run_start, mut run_cells, mut run_look) = (0, 0, None::<Look>);
        let mut flush = |run: &mut String, start: usize, cells: usize, l: &Option<Look>| {
            let visible = !run.trim().is_empty() || l.as_ref().is_some_and(|l| l.underline || l.strike);
            if let (true, Some(l)) = (visible, l) {
                text_element(&mut texts, start, y, cells, run, l);
            }
            run.clear();
        };
        while x < w {
            let cell = &buf[(x as u16, y as u16)];
            let sym = cell.symbol();
            let width = UnicodeWidthStr::width(sym).max(1);
            let l = look(cell, canvas);
            if width > 1 || run_look.as_ref() != Some(&l) {
                flush(&mut run, run_start, run_cells, &run_look);
                run_start = x;
                run_cells = 0;
                run_look = Some(l.clone());
            }
            run.push_str(sym);
            run_cells += width;
            if width > 1 {
                flush(&mut run, run_start, run_cells, &run_look);
                run_start = x + width;
                run_cells = 0;
                run_look = None;
            }
            x += width;
        }
        flush(&mut run, run_start, run_cells, &run_look);
    }
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{pw:.0}" height="{ph:.0}" viewBox="0 0 {pw:.1} {ph:.1}" font-family="{fonts}" font-size="{FONT_SIZE}">
<title>{}</title>
<rect width="100%" height="100%" fill="{canvas_bg}"/>
<g shape-rendering="crispEdges">
{rects}</g>
<g xml:space="preserve">
{texts}</g>
</svg>
"##,
        escape(title),
        fonts = super::MONO_FONTS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;

    #[test]
    fn the_picture_names_cjk_capable_fonts_before_the_generic_one() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        buf.set_string(0, 0, "思考", ratatui::style::Style::default());
        let svg = to_svg(&buf, "t", Canvas::Dark);
        let fonts = svg.split("font-family=\"").nth(1).unwrap().split('"').next().unwrap();
        for cjk in [
            "'Noto Sans Mono CJK SC'",
            "'Sarasa Mono SC'",
            "'PingFang SC'",
            "'Microsoft YaHei'",
        ] {
            assert!(fonts.contains(cjk), "{cjk} missing from {fonts}");
        }
        assert!(fonts.ends_with(", monospace"), "{fonts}");
        assert!(svg.contains("思考") || (svg.contains('思') && svg.contains('考')));
    }
}
