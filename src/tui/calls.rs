//! Tool calls side by side with their results: what the big pane shows for
//! a tool or agent detection (the involved calls: what repeated, and what
//! each call returned), and for a request that has no text, only calls.

use crate::output::count;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use serde_json::Value;

use super::cells::{label, wrap_text};
use super::theme::Theme;
use super::timeline::{EntryKind, Timeline};
use loopscope_core::engine::Tape;
use loopscope_core::event::EventKind;

/// Rows of arguments or output shown per call before "…".
const ROWS_PER_SIDE: usize = 8;
/// Calls shown at most (the newest).
pub const MAX_CALLS: usize = 60;

#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub event: usize,
    pub name: String,
    pub args: String,
    /// The result's event, whether it succeeded, and its output.
    pub result: Option<(usize, bool, String)>,
    /// Involved in the selected detection.
    pub involved: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calls {
    pub title: String,
    pub calls: Vec<Call>,
}

fn readable(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

impl Calls {
    /// The calls behind `events` (calls or results, as a detection lists
    /// them), each once, in order.
    pub fn of_events(events: &[usize], timeline: &Timeline, tape: &Tape, title: String) -> Calls {
        let entries = timeline.entries();
        let mut calls: Vec<Call> = Vec::new();
        let skip = events.len().saturating_sub(MAX_CALLS);
        for &e in &events[skip..] {
            // The call entry at `e`, or the one whose result is `e`.
            let at = entries.partition_point(|x| x.first < e);
            let call_entry = entries[at..]
                .iter()
                .take_while(|x| x.first == e)
                .position(|x| matches!(x.kind, EntryKind::Call { .. }))
                .map(|k| at + k)
                .or_else(|| {
                    (at.saturating_sub(512)..at)
                        .rev()
                        .find(|&k| matches!(entries[k].kind, EntryKind::Call { result: Some((r, _)), .. } if r == e))
                });
            let call = match call_entry {
                Some(k) => call_at(entries[k].first, result_of(&entries[k].kind), tape),
                None => call_at(e, None, tape),
            };
            if let Some(mut c) = call {
                c.involved = true;
                if !calls.iter().any(|x| x.event == c.event) {
                    calls.push(c);
                }
            }
        }
        Calls { title, calls }
    }

    /// The newest calls among timeline entries `from..to`.
    pub fn in_entries(from: usize, to: usize, timeline: &Timeline, tape: &Tape, title: String) -> Calls {
        let entries = &timeline.entries()[from.min(to)..to];
        let mut calls: Vec<Call> = entries
            .iter()
            .rev()
            .filter(|x| matches!(x.kind, EntryKind::Call { .. }))
            .take(MAX_CALLS)
            .filter_map(|x| call_at(x.first, result_of(&x.kind), tape))
            .collect();
        calls.reverse();
        Calls { title, calls }
    }
}

fn result_of(kind: &EntryKind) -> Option<usize> {
    match kind {
        EntryKind::Call { result, .. } => result.map(|(r, _)| r),
        _ => None,
    }
}

fn call_at(event: usize, result: Option<usize>, tape: &Tape) -> Option<Call> {
    let e = tape.event(event)?;
    let (name, args) = match &e.kind {
        EventKind::ToolCall { name, args, .. } => (name.clone(), readable(args)),
        EventKind::ToolResult { .. } => ("(a result without its call)".to_string(), String::new()),
        _ => return None,
    };
    let result_event = match e.kind {
        EventKind::ToolResult { .. } => Some(event),
        _ => result,
    };
    let result = result_event.and_then(|r| match tape.event(r)?.kind {
        EventKind::ToolResult { ok, output, .. } => Some((
            r,
            ok,
            output.as_ref().map_or("(no output recorded)".to_string(), readable),
        )),
        _ => None,
    });
    Some(Call {
        event,
        name,
        args,
        result,
        involved: false,
    })
}

/// One side of a call, cut to [`ROWS_PER_SIDE`] rows.
fn side(head: Line<'static>, body: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut rows = vec![head];
    let mut body_rows = Vec::new();
    wrap_text(body.trim_end_matches(['\n', '\r']), theme.text, width, &mut body_rows);
    let n = body_rows.len();
    rows.extend(body_rows.into_iter().take(ROWS_PER_SIDE));
    if n > ROWS_PER_SIDE {
        rows.push(Line::styled(
            format!(
                "… {} (o shows the first call whole)",
                count(n - ROWS_PER_SIDE, "more row")
            ),
            theme.dim,
        ));
    }
    rows
}

/// Every row of the view at `width` cells: each call beside its result.
pub fn rows(calls: &Calls, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let left_w = (width.saturating_sub(3) / 2).max(1);
    let right_w = width.saturating_sub(left_w + 3).max(1);
    let mut out = Vec::new();
    if calls.calls.is_empty() {
        out.push(Line::styled("no tool calls here", theme.dim));
    }
    for c in &calls.calls {
        let head_style = if c.involved { theme.involved } else { theme.title };
        let left = side(
            Line::styled(label(&format!("{:>6} ▸ {}", c.event, c.name), left_w), head_style),
            &c.args,
            left_w,
            theme,
        );
        let right = match &c.result {
            Some((r, ok, output)) => {
                let (mark, style) = if *ok {
                    ("✓ ok", theme.clear)
                } else {
                    ("✗ error", theme.error)
                };
                side(
                    Line::styled(label(&format!("{r:>6} ◂ {mark}"), right_w), style),
                    output,
                    right_w,
                    theme,
                )
            }
            None => vec![Line::styled("       no result in the stream (yet)", theme.dim)],
        };
        for i in 0..left.len().max(right.len()) {
            let l = left.get(i).cloned().unwrap_or_default();
            let pad = left_w.saturating_sub(l.width());
            let mut spans: Vec<Span<'static>> = l.spans;
            spans.push(Span::raw(" ".repeat(pad)));
            spans.push(Span::styled(" │ ", theme.border));
            if let Some(r) = right.get(i) {
                spans.extend(r.spans.iter().cloned());
            }
            out.push(Line::from(spans));
        }
        out.push(Line::styled("─".repeat(width), theme.border));
    }
    out
}

/// The row where call `event` (or the call whose result it is) starts.
pub fn row_of(calls: &Calls, event: usize, width: usize, theme: &Theme) -> Option<usize> {
    let k = calls
        .calls
        .iter()
        .position(|c| c.event == event || c.result.as_ref().is_some_and(|r| r.0 == event))?;
    let before = Calls {
        title: String::new(),
        calls: calls.calls[..k].to_vec(),
    };
    Some(if k == 0 { 0 } else { rows(&before, width, theme).len() })
}

/// The event of the call drawn at row `row` (the last call when past them).
pub fn call_at_row(calls: &Calls, row: usize, width: usize, theme: &Theme) -> Option<usize> {
    let mut start = 0;
    for c in &calls.calls {
        let one = Calls {
            title: String::new(),
            calls: vec![c.clone()],
        };
        start += rows(&one, width, theme).len();
        if row < start {
            return Some(c.event);
        }
    }
    calls.calls.last().map(|c| c.event)
}

/// Draws the calls from row `top`, a search's matches marked.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    (calls, top): (&Calls, usize),
    search: Option<&regex::Regex>,
    block: Block<'_>,
    theme: &Theme,
) {
    let inner = block.inner(area);
    let mut all = rows(calls, inner.width as usize, theme);
    if let Some(re) = search {
        super::cells::mark_matches(&mut all, re, theme.search);
    }
    let first = top.min(all.len().saturating_sub(inner.height as usize));
    let shown: Vec<Line> = all.into_iter().skip(first).take(inner.height as usize).collect();
    frame.render_widget(Paragraph::new(shown).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use loopscope_core::event::Event;
    use loopscope_core::{Profile, Setup};
    use serde_json::json;

    #[test]
    fn calls_sit_beside_their_results() {
        let events = vec![
            Event::request(),
            Event::tool_call("read_file", json!({"path": "a.rs"})),
            Event::tool_result_with(true, json!("fn main() {}")),
            Event::tool_call("read_file", json!({"path": "a.rs"})),
            Event::tool_result_with(false, json!("permission denied")),
        ];
        let mut t = Timeline::default();
        for (i, e) in events.iter().enumerate() {
            t.push(i, e);
        }
        let tape = Tape::with_events(&Setup::profile(Profile::Seed), events);
        // A detection may list calls or results: each call appears once.
        let calls = Calls::of_events(&[1, 3, 4], &t, &tape, "x".into());
        assert_eq!(calls.calls.len(), 2);
        assert_eq!(calls.calls[1].result, Some((4, false, "permission denied".into())));
        let text: Vec<String> = rows(&calls, 60, &Theme::dark()).iter().map(|l| l.to_string()).collect();
        assert!(
            text[0].contains("1 ▸ read_file") && text[0].contains("2 ◂ ✓ ok"),
            "{text:?}"
        );
        assert!(text.iter().any(|r| r.contains("\"path\": \"a.rs\"")), "{text:?}");
        assert!(
            text[1].contains("fn main() {}"),
            "the output beside the arguments: {text:?}"
        );
        assert!(text
            .iter()
            .all(|r| unicode_width::UnicodeWidthStr::width(r.as_str()) <= 60));
        let recent = Calls::in_entries(0, t.entries().len(), &t, &tape, "y".into());
        assert_eq!(recent.calls.len(), 2);
    }
}
