//! The committed pictures in screenshots/ are what `loopscope screenshot`
//! draws now (each line of screenshots/make.sh is run), every picture is
//! well-formed SVG, and a picture of a fired detector shows its reason.

mod common;

use std::path::Path;

use common::loopscope_at_root as loopscope;

use loopscope::render::svg::{to_svg, CELL_H, CELL_W};
use loopscope::tui::theme::Canvas;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use serde_json::Value;
use unicode_width::UnicodeWidthChar;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A shell line split into words; single quotes group (all make.sh needs).
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => (word, any) = (word + &c.to_string(), true),
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// The arguments of every `loopscope screenshot` line of make.sh.
fn shots() -> Vec<Vec<String>> {
    let script = std::fs::read_to_string(Path::new(ROOT).join("screenshots/make.sh")).unwrap();
    let shots: Vec<Vec<String>> = script
        .lines()
        .filter(|l| l.starts_with("loopscope screenshot "))
        .map(|l| words(l)[1..].to_vec())
        .collect();
    assert!(shots.len() >= 5, "make.sh lost its screenshots");
    shots
}

fn arg<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter().position(|a| a == flag).map(|i| args[i + 1].as_str())
}

fn draw(args: &[String]) -> String {
    let out = loopscope()
        .args(
            args.iter()
                .filter(|a| *a != "-o" && Some(a.as_str()) != arg(args, "-o")),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The picture's text, put back on its grid of cells (a wide glyph's second
/// cell is empty).
fn screen_cells(svg: &str) -> Vec<Vec<String>> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let cols = (root.attribute("width").unwrap().parse::<f64>().unwrap() / CELL_W).round() as usize;
    let rows = (root.attribute("height").unwrap().parse::<f64>().unwrap() / CELL_H).round() as usize;
    let mut grid = vec![vec![" ".to_string(); cols]; rows];
    for text in doc.descendants().filter(|n| n.has_tag_name("text")) {
        let at = |name| text.attribute(name).unwrap().parse::<f64>().unwrap();
        let (mut col, row) = ((at("x") / CELL_W).round() as usize, (at("y") / CELL_H) as usize);
        for c in text.text().unwrap_or_default().chars() {
            grid[row][col] = c.to_string();
            let w = c.width().unwrap_or(1).max(1);
            for k in 1..w {
                grid[row][col + k] = String::new();
            }
            col += w;
        }
    }
    grid
}

/// The picture's text, one string per row.
fn screen_text(svg: &str) -> Vec<String> {
    screen_cells(svg).into_iter().map(|r| r.concat()).collect()
}

/// The text of the detectors pane's detail, from its "FIRED at event" line
/// down, with whitespace (and the wrapping) collapsed.
fn fired_detail(cells: &[Vec<String>]) -> String {
    let rows: Vec<String> = cells.iter().map(|r| r.concat()).collect();
    let start = rows
        .iter()
        .position(|r| r.contains("FIRED at event"))
        .expect("a FIRED detail");
    let col = (0..cells[start].len())
        .find(|&c| cells[start][c..].concat().starts_with("FIRED at event"))
        .unwrap();
    let mut detail = String::new();
    for r in &cells[start..] {
        let cell: String = r[col..].iter().take_while(|c| *c != "│").map(String::as_str).collect();
        detail.push(' ');
        detail.push_str(&cell);
    }
    collapse(&detail)
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The reason `scan` gives for `detector` on `file`, under the picture's profiles.
fn reason(file: &str, profile: Option<&str>, detector: &str) -> String {
    let mut scan = loopscope();
    scan.args(["scan", "--json", file]);
    if let Some(p) = profile {
        scan.args(["--profile", p]);
    }
    let out = scan.output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let d: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|d| d["detector"] == detector)
        .unwrap_or_else(|| panic!("{file}: {detector} does not fire"));
    // The picture shows it as people read it (a call's arguments as text).
    loopscope_core::detect::readable::readable(d["reason"].as_str().unwrap())
}

#[test]
fn committed_screenshots_are_what_the_command_draws() {
    let mut stale = Vec::new();
    for args in shots() {
        let out = arg(&args, "-o").expect("every shot names its file");
        let committed = std::fs::read_to_string(Path::new(ROOT).join(out)).unwrap_or_default();
        if draw(&args) != committed {
            stale.push(out.to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "out of date: {stale:?}; run `sh screenshots/make.sh` and review them"
    );
}

#[test]
fn every_committed_screenshot_comes_from_make_sh() {
    let mut made: Vec<String> = shots().iter().map(|a| arg(a, "-o").unwrap().to_string()).collect();
    // `watch --snapshot` draws the watch list (from a made-up home).
    let script = std::fs::read_to_string(Path::new(ROOT).join("screenshots/make.sh")).unwrap();
    made.extend(
        script
            .lines()
            .filter_map(|l| l.split("--snapshot ").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .map(str::to_string),
    );
    for e in std::fs::read_dir(Path::new(ROOT).join("screenshots")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".svg") {
            assert!(
                made.contains(&format!("screenshots/{name}")),
                "screenshots/{name} is not made by make.sh"
            );
        }
    }
}

#[test]
fn a_screenshot_parses_and_shows_the_selected_detectors_reason() {
    for args in shots() {
        let cells = screen_cells(&draw(&args));
        let top = cells[0].concat();
        assert!(
            top.contains(args[1].as_str()),
            "the status line names the file: {top:?}"
        );
        if let Some(detector) = arg(&args, "--select") {
            let want = collapse(&reason(&args[1], arg(&args, "--profile"), detector));
            let got = fired_detail(&cells);
            assert!(got.contains(&want), "{args:?}\n want {want}\n in   {got}");
        }
    }
}

#[test]
fn the_help_screenshot_shows_the_keys() {
    let rows = screen_text(&draw(&words("screenshot sample-logs/demo.jsonl --keys '?'")));
    let all = rows.join("\n");
    for needle in ["loopscope keys", "play / pause", "next detection", "quit"] {
        assert!(all.contains(needle), "{needle} missing from\n{all}");
    }
}

#[test]
fn a_wide_glyph_paints_both_of_its_cells() {
    let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
    buf.set_string(0, 0, "检x", Style::default().bg(Color::Red));
    let svg = to_svg(&buf, "t", Canvas::Dark);
    let rect = format!(r#"width="{:.1}""#, 3.0 * CELL_W);
    assert!(svg.contains(&rect), "one red rect three cells wide: {svg}");
    let rows = screen_text(&svg);
    assert_eq!(rows, ["检x "]);
}

#[test]
fn control_characters_never_reach_the_svg() {
    let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
    buf[(0, 0)].set_symbol("\u{1b}");
    buf[(1, 0)].set_symbol("a");
    let svg = to_svg(&buf, "bad \u{7} title", Canvas::Dark);
    assert!(!svg.chars().any(|c| c.is_control() && c != '\n'), "{svg:?}");
    roxmltree::Document::parse(&svg).expect("still well-formed");
}

#[test]
fn screenshot_errors_are_one_line() {
    for (args, needle) in [
        (
            vec!["screenshot", "sample-logs/demo.jsonl", "--at", "99999"],
            "the stream has 314 events",
        ),
        (
            vec!["screenshot", "sample-logs/demo.jsonl", "--select", "nope"],
            "not a detector of this run",
        ),
        (vec!["screenshot", "sample-logs/no-such.jsonl"], "no-such.jsonl"),
    ] {
        let out = loopscope().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// `fill` of the `<text>` elements holding `needle`.
fn text_fills(svg: &str, needle: &str) -> Vec<String> {
    svg.lines()
        .filter(|l| l.starts_with("<text") && l.contains(needle))
        .filter_map(|l| l.split("fill=\"").nth(1)?.split('"').next().map(str::to_string))
        .collect()
}

fn luminance(hex: &str) -> f64 {
    let v = |i: usize| f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
    0.2126 * v(1) + 0.7152 * v(3) + 0.0722 * v(5)
}

#[test]
fn the_light_theme_is_drawn_on_a_light_canvas() {
    let svg = draw(&words(
        "screenshot sample-logs/demo.jsonl --at 278 --select block-cycle --theme light",
    ));
    let canvas = svg
        .lines()
        .find(|l| l.starts_with("<rect width=\"100%\""))
        .and_then(|l| l.split("fill=\"").nth(1))
        .map(|f| f[..7].to_string())
        .unwrap();
    assert!(luminance(&canvas) > 0.8, "canvas {canvas}");
    // The text, and the selected detector's name, are dark on it.
    for needle in ["block-cycle", "timeline"] {
        let fills = text_fills(&svg, needle);
        assert!(!fills.is_empty(), "{needle}");
        assert!(fills.iter().all(|f| luminance(f) < 0.5), "{needle}: {fills:?}");
    }
}

#[test]
fn mono_marks_every_copy_of_the_period_in_two_styles() {
    let svg = draw(&words(
        "screenshot sample-logs/demo.jsonl --at 278 --select block-cycle --theme mono",
    ));
    // Reversed copies paint their background; both alternating styles do.
    let reversed = svg.lines().filter(|l| l.starts_with("<rect x=")).count();
    assert!(reversed >= 10, "{reversed} reversed runs");
    let italic_underlined = svg
        .lines()
        .filter(|l| l.contains("font-style=\"italic\"") && l.contains("underline"))
        .count();
    assert!(
        italic_underlined >= 3,
        "the second style alternates: {italic_underlined}"
    );
}

#[test]
fn a_caption_gives_the_reason_and_parameters_under_the_picture() {
    for size in ["80x24", "200x50"] {
        let args = words(&format!(
            "screenshot sample-logs/demo.jsonl --at 278 --select block-cycle --caption --size {size} -o x.txt"
        ));
        let out = loopscope()
            .args(&args[..args.len() - 2])
            .arg("-o")
            .arg(std::env::temp_dir().join(format!("loopscope-caption-{size}.txt")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(std::env::temp_dir().join(format!("loopscope-caption-{size}.txt"))).unwrap();
        let rows: u16 = size.split('x').nth(1).unwrap().parse().unwrap();
        let caption: String = text.lines().skip(rows as usize).collect::<Vec<_>>().join(" ");
        assert!(caption.contains("block-cycle fired at event 278"), "{caption}");
        assert!(collapse(&caption).contains(&collapse(&reason("sample-logs/demo.jsonl", None, "block-cycle"))));
        assert!(caption.contains("params: checkpoints=2000,3000,5000"), "{caption}");
    }
}
