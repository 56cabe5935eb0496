//! The report as one self-contained HTML file (`loopscope report`): inline
//! CSS, inline SVG pictures, a few lines of inline script to sort the
//! table; nothing is fetched. A pure function of the [`Report`].

use std::fmt::Write;

use super::{Excerpt, FileReport, Report, Section};
use crate::tui::buffer_pane::Mark;

use crate::render::escape_markup as escape;

const STYLE: &str = concat!(
    r#"
:root { color-scheme: dark; --bg: #14161a; --panel: #1d2026; --fg: #e6e6e6; --dim: #9aa0a6; --line: #333842; --red: #ff6b6b; --cyan: #5fd7ff; }
body { background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, 'Noto Sans CJK SC', 'Source Han Sans SC', 'PingFang SC', 'Hiragino Sans', 'Microsoft YaHei', sans-serif; margin: 0 auto; max-width: 1400px; padding: 1.5em; }
h1 { font-size: 1.5em; margin: 0 0 .2em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05em; margin: 0 0 .4em; }
.dim { color: var(--dim); } .fired { color: var(--red); font-weight: bold; } .clean { color: #7ee787; }
table { border-collapse: collapse; width: 100%; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: .3em .5em; text-align: left; vertical-align: top; }
th { position: sticky; top: 0; background: var(--panel); cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
td.n { text-align: right; } td.file { word-break: break-all; }
a { color: var(--cyan); }
section.detection { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 1em; margin: 1em 0; }
dl.numbers { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; margin: .5em 0; }
dl.numbers dt { color: var(--dim); } dl.numbers dd { margin: 0; }
pre.evidence { background: #000; color: #ddd; padding: .8em; white-space: pre-wrap; word-break: break-word; max-height: 28em; overflow: auto; font: 13px/1.4 ui-monospace, "#,
    crate::mono_fonts!(),
    r#"; }
pre.calls { background: #000; padding: .8em; white-space: pre-wrap; word-break: break-all; font: 13px/1.4 ui-monospace, "#,
    crate::mono_fonts!(),
    r#"; }
.copy-first { background: #ffff87; color: #000; font-weight: bold; text-decoration: underline; }
.copy-a { background: #ff8787; color: #000; } .copy-b { background: #ff87ff; color: #000; }
.chunk-extent { color: #87ffff; text-decoration: underline; } .chunk-start { background: #87ffff; color: #000; font-weight: bold; }
figure { margin: .8em 0 0; overflow-x: auto; } figure svg { max-width: 100%; height: auto; }
"#
);

/// Sorts a table by the clicked column (numbers by `data-v`, text
/// otherwise); `#sort=N` or `#sort=N-` in the address sorts the sessions.
const SCRIPT: &str = r##"
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var down = th.getAttribute("aria-sort") === "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var key = function (r) { var c = r.cells[col]; var v = c.getAttribute("data-v"); return v === null ? c.textContent : parseFloat(v); };
      rows.sort(function (a, b) { var x = key(a), y = key(b); var o = x < y ? -1 : x > y ? 1 : 0; return down ? -o : o; });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
// A link can carry a sort of the sessions: report.html#sort=4 (column 4,
// ascending) or #sort=4- (descending).
(function () {
  var m = /sort=(\d+)(-?)/.exec(location.hash);
  var th = m && document.querySelectorAll("#summary th")[parseInt(m[1], 10)];
  if (th) { th.click(); if (m[2] === "-") { th.click(); } }
})();
"##;

fn mark_class(m: Mark) -> &'static str {
    match m {
        Mark::CopyFirst => "copy-first",
        Mark::CopyA => "copy-a",
        Mark::CopyB => "copy-b",
        Mark::ChunkExtent => "chunk-extent",
        Mark::ChunkStart => "chunk-start",
        Mark::Search => "search",
    }
}

fn num(out: &mut String, v: usize) {
    let _ = write!(out, r#"<td class="n" data-v="{v}">{v}</td>"#);
}

/// The Content-Security-Policy source of the page's one script: its
/// SHA-256, so no other script runs, inline or not (not even one that text
/// from a log could smuggle in).
fn script_source() -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(SCRIPT.as_bytes());
    format!("'sha256-{}'", base64::engine::general_purpose::STANDARD.encode(digest))
}

/// The whole report page.
pub fn to_html(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let fired = report.fired_by_profile().iter().any(|p| p.1 > 0);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src {}; img-src data:\">\
         <title>loopscope report</title><style>{STYLE}</style></head><body>\n",
        script_source()
    );
    let _ = writeln!(
        out,
        "<h1>loopscope report</h1><p class=\"dim\">{} {} · {} · <span class=\"{}\">{}</span>{}{}</p>",
        crate::output::plural(report.profiles.len(), "profile"),
        escape(&report.profiles.join(", ")),
        crate::output::count(report.files.len(), "session"),
        if fired { "fired" } else { "clean" },
        escape(&report.headline()),
        match report.skipped {
            0 => String::new(),
            n => format!(" · {} skipped (not agent sessions)", crate::output::count(n, "file")),
        },
        match report.failed.len() {
            0 => String::new(),
            n => format!(" · {n} unreadable"),
        },
    );
    for f in &report.failed {
        let _ = writeln!(out, "<p class=\"fired\">{}</p>", escape(f));
    }
    totals(&mut out, report);
    summary_table(&mut out, report);
    if report.profiles.len() > 1 {
        comparison(&mut out, report);
    }
    let _ = writeln!(out, "<h2>Detections</h2>");
    if report.not_shown > 0 {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{} more detections are in the table only (raise --max-detections to show them).</p>",
            report.not_shown
        );
    }
    for (fi, file) in report.files.iter().enumerate() {
        for (nth, s) in file.sections.iter().enumerate() {
            section(&mut out, (fi, nth), file, s);
        }
    }
    if report.files.iter().all(|f| f.sections.is_empty()) {
        let _ = writeln!(out, "<p class=\"clean\">No detection.</p>");
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

fn totals(out: &mut String, report: &Report) {
    let totals = crate::scan::Totals::of(report.files.iter().map(|f| &f.row));
    let _ = writeln!(
        out,
        "<p id=\"totals\">Detections per detector: {}<br>Sessions per agent: {}</p>",
        escape(&totals.detectors_text()),
        escape(&crate::scan::Totals::looped_text(&totals.per_agent))
    );
}

fn summary_table(out: &mut String, report: &Report) {
    out.push_str(
        "<h2>Sessions</h2><table id=\"summary\" class=\"sortable\"><thead><tr><th>session</th><th>agent</th><th>events</th>\
         <th>bad lines</th><th>detections</th><th>first detection</th><th>event</th><th>evidence from</th>\
         <th>chars after</th><th>tokens after</th><th>calls after</th></tr></thead><tbody>\n",
    );
    for (fi, f) in report.files.iter().enumerate() {
        let r = &f.row;
        let _ = write!(
            out,
            "<tr><td class=\"file\">{}</td><td>{}</td>",
            escape(&r.name),
            escape(r.agent)
        );
        num(out, r.events);
        num(out, r.bad_lines);
        num(out, r.detectors.len());
        match &r.first {
            Some(d) => {
                let link = if f.sections.is_empty() {
                    escape(d.detector)
                } else {
                    format!("<a href=\"#d{fi}-0\">{}</a>", escape(d.detector))
                };
                let _ = write!(out, "<td class=\"fired\">{link}</td>");
                num(out, d.event);
                let _ = write!(out, "<td>{}</td>", escape(&d.evidence_from().unwrap_or_default()));
                num(out, r.after.chars);
                let _ = write!(
                    out,
                    "<td class=\"n\" data-v=\"{t}\">{}{t}</td>",
                    r.after.approx(),
                    t = r.after.tokens
                );
                num(out, r.after.tool_calls);
            }
            None => {
                out.push_str(
                    "<td class=\"clean\">none</td><td data-v=\"-1\"></td><td></td><td data-v=\"-1\"></td><td data-v=\"-1\"></td><td data-v=\"-1\"></td>",
                );
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

fn comparison(out: &mut String, report: &Report) {
    out.push_str(
        "<h2>Profiles compared</h2><table id=\"comparison\" class=\"sortable\"><thead><tr><th>session</th><th>profile</th>\
         <th>detections</th><th>first detection</th><th>event</th><th>evidence from</th><th>streamed after it</th></tr></thead><tbody>\n",
    );
    for f in &report.files {
        for run in &f.runs {
            let _ = write!(
                out,
                "<tr><td class=\"file\">{}</td><td>{}</td>",
                escape(&f.row.name),
                escape(&run.label)
            );
            num(out, run.detections);
            match &run.first {
                Some(d) => {
                    let _ = write!(out, "<td class=\"fired\">{}</td>", escape(d.detector));
                    num(out, d.event);
                    let _ = write!(
                        out,
                        "<td>{}</td><td>{}</td>",
                        escape(&d.evidence_from().unwrap_or_default()),
                        escape(&run.after.describe())
                    );
                }
                None => out.push_str("<td class=\"clean\">none</td><td data-v=\"-1\"></td><td></td><td></td>"),
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table>\n");
}

/// Detection `nth` of file `fi`, shown in full.
fn section(out: &mut String, (fi, nth): (usize, usize), file: &FileReport, s: &Section) {
    let d = &s.detection;
    let line = s.line.map_or(String::new(), |l| format!(" line {l}"));
    let _ = writeln!(
        out,
        "<section class=\"detection\" id=\"d{fi}-{nth}\"><h3><span class=\"fired\">{}</span> · {} · event {}{line} · profile {}</h3>",
        escape(d.detector),
        escape(&file.row.name),
        d.event,
        escape(&s.profile)
    );
    let _ = writeln!(out, "<p class=\"reason\">{}</p>", escape(&d.readable_reason()));
    out.push_str("<dl class=\"numbers\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(out, "<dt>{k}</dt><dd>{}</dd>", escape(&v));
    };
    item("channel", d.channel.as_str().to_string());
    let fields = [
        ("at char", d.at_char),
        ("checkpoint", d.checkpoint),
        ("period", d.period),
        ("matches", d.matches),
        ("repeats", d.repeats),
        ("threshold", d.threshold),
        ("onset", d.onset),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            item(k, v.to_string());
        }
    }
    if let Some(a) = d.avg_distance {
        item("average distance", format!("{a:.1}"));
    }
    if let Some(from) = d.evidence_from() {
        item("evidence from", from);
    }
    if let Some(r) = &d.repeated {
        let r: String = r.chars().take(300).collect();
        item("repeated", loopscope_core::sanitize::line(&r));
    }
    if let Some(w) = d.what_would_change() {
        item("would not fire", w);
    }
    if !s.params.is_empty() {
        let p: Vec<String> = s.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        item("parameters", p.join(" "));
    }
    out.push_str("</dl>\n");
    match &s.excerpt {
        Excerpt::Text {
            channel,
            from,
            pieces,
            cut,
        } => {
            let _ = write!(
                out,
                "<p class=\"dim\">{} from char {from}, highlighted as the viewer does (first copy underlined, then alternating copies):</p><pre class=\"evidence\">",
                escape(channel)
            );
            for (text, mark) in pieces {
                match mark {
                    Some(m) => {
                        let _ = write!(out, "<span class=\"{}\">{}</span>", mark_class(*m), escape(text));
                    }
                    None => out.push_str(&escape(text)),
                }
            }
            if *cut > 0 {
                let _ = write!(out, "<span class=\"dim\">… {cut} more chars of evidence</span>");
            }
            out.push_str("</pre>\n");
        }
        Excerpt::Calls(calls) => {
            out.push_str("<pre class=\"calls\">");
            for c in calls {
                out.push_str(&escape(&loopscope_core::sanitize::line(c)));
                out.push('\n');
            }
            out.push_str("</pre>\n");
        }
        Excerpt::None => {}
    }
    let svg = &s.svg;
    let _ = writeln!(
        out,
        "<figure>{svg}<figcaption class=\"dim\">the viewer at event {}</figcaption></figure></section>",
        d.event
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_runs_the_one_inline_script_by_its_hash_and_no_other() {
        let page = to_html(&Report {
            profiles: vec!["seed".into()],
            files: Vec::new(),
            skipped: 0,
            failed: Vec::new(),
            not_shown: 0,
        });
        let policy = page.split("Content-Security-Policy\" content=\"").nth(1).unwrap();
        let policy = policy.split('"').next().unwrap();
        let scripts: Vec<&str> = page
            .split("<script>")
            .skip(1)
            .map(|s| s.split("</script>").next().unwrap())
            .collect();
        assert_eq!(scripts.len(), 1);
        use base64::Engine;
        use sha2::Digest;
        let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(scripts[0].as_bytes()));
        assert!(policy.contains(&format!("script-src 'sha256-{hash}';")), "{policy}");
        assert!(!policy.contains("script-src 'unsafe-inline'"), "{policy}");
        assert!(
            !page.contains("onclick=") && !page.contains("onload="),
            "no inline handler: a hash does not cover one"
        );
    }

    #[test]
    fn markup_and_controls_from_logs_are_escaped() {
        let e = escape("<script>alert('x')</script>\u{1b}[31m\u{202e}a&b\nnext");
        assert!(!e.contains('<') && !e.contains('\u{1b}') && !e.contains('\u{202e}'));
        assert!(e.contains("&lt;script&gt;") && e.contains("a&amp;b\nnext") && e.contains('␛'));
    }

    #[test]
    fn text_and_code_name_cjk_capable_fonts() {
        // The prose, and both kinds of code block (evidence, calls), fall
        // back to fonts that have Chinese and Japanese glyphs.
        let body = STYLE.lines().find(|l| l.starts_with("body")).unwrap();
        assert!(
            body.contains("'Noto Sans CJK SC'") && body.contains("'Microsoft YaHei'"),
            "{body}"
        );
        for block in ["pre.evidence", "pre.calls"] {
            let rule = STYLE.lines().find(|l| l.starts_with(block)).unwrap();
            assert!(rule.contains(crate::render::MONO_FONTS), "{rule}");
        }
    }
}
