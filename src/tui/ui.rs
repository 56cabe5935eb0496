//! Rendering: a pure function of the app state.

use ratatui::layout::{Alignment, Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::app::App;
use super::layout::{Areas, Pane, MIN_HEIGHT, MIN_WIDTH};
use super::theme::Theme;
use super::{buffer_pane, detectors_pane, footer, help, scrubber, status, timeline};
use crate::event::Channel;

pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let theme = &app.theme;
    let Some(areas) = Areas::new(area) else {
        too_small(frame, area, theme);
        return;
    };
    status::render(
        frame,
        areas.status,
        status::StatusView {
            mode: app.mode(),
            name: &app.name,
            speed: app.clock.speed(),
            cursor: app.cursor,
            total: app.tape.len(),
            time: app.cursor.checked_sub(1).map_or(0.0, |i| app.pacing.stream_time(i)),
            duration: app.pacing.stream_duration(),
            profile: app.setup.profile.name(),
            bad_lines: app.bad_lines(),
            pause_on_detect: app.pause_on_detect,
            flash: app.flash.as_ref().map(|f| f.text.as_str()),
            live_note: live_note(app),
            format_note: app.format.filter(|f| *f != crate::formats::Format::Native).map(|f| {
                if f.has_deltas() {
                    f.name().to_string()
                } else {
                    // Detectors see whole blocks, not the streamed deltas.
                    format!("{f} · whole blocks")
                }
            }),
        },
        theme,
    );
    let engine = app.tape.cursor();
    let buffers = engine.buffers();
    let buf = if app.channel == Channel::Content {
        &buffers.content
    } else {
        &buffers.reasoning
    };
    let request = match engine.request_start() {
        Some(e) => format!(" · request from event {e}"),
        None => String::new(),
    };
    let buffer_title = format!(" {}{request} · {} chars ", app.channel.as_str(), buf.len());
    let mut flags = Vec::new();
    if !app.wrap {
        flags.push("no wrap".to_string());
    }
    flags.push(if app.scroll.follow {
        "following".into()
    } else {
        "scrolled".into()
    });
    buffer_pane::render(
        frame,
        areas.buffer,
        buffer_pane::BufferView {
            buf,
            layout: &app.layout,
            scroll: app.scroll,
            wrap: app.wrap,
            highlights: &app.highlights,
            runs: &app.runs,
            block: pane_block(app, Pane::Buffer, buffer_title)
                .title_top(Line::from(format!(" {} ", flags.join(" · "))).right_aligned()),
        },
        theme,
    );
    detectors_pane::render(
        frame,
        areas.detectors,
        detectors_pane::DetectorsView {
            states: &app.states,
            configured: &app.setup.detectors,
            selected: app.selected_detector,
            detection: app.selected_detection(),
            block: pane_block(app, Pane::Detectors, format!(" detectors · {} ", app.setup.profile)),
        },
        theme,
    );
    let involved = match app.selected_detection() {
        Some(d) => d.events.as_slice(),
        None => &[],
    };
    timeline::render(
        frame,
        areas.timeline,
        timeline::TimelineView {
            timeline: &app.timeline,
            cursor: app.cursor,
            selected: app.timeline_selected,
            involved,
            block: pane_block(
                app,
                Pane::Timeline,
                format!(
                    " timeline · {} events · {} detections ",
                    app.tape.len(),
                    app.tape.detections().len()
                ),
            ),
        },
        theme,
    );
    let marks: Vec<f64> = app
        .tape
        .detections()
        .iter()
        .map(|d| app.pacing.play_time(d.event))
        .collect();
    scrubber::render(
        frame,
        areas.scrubber,
        scrubber::ScrubberView {
            position: app.shown_time(),
            duration: app.pacing.duration(),
            marks: &marks,
        },
        theme,
    );
    footer::render(frame, areas.footer, app.search.input.as_deref(), theme);
    if app.help {
        help::render(frame, area, theme);
    }
}

/// What a live stream's status adds: the file's condition, idleness, or
/// how many events arrived while the view was stopped.
fn live_note(app: &App) -> Option<String> {
    let live = app.live.as_ref()?;
    if let Some(news) = &live.file {
        return Some(crate::tail::describe(news, "the file"));
    }
    let behind = app.tape.len().saturating_sub(app.cursor);
    if !live.following && behind > 0 {
        return Some(format!("LIVE +{behind} new (G follows)"));
    }
    if live.input_ended {
        return Some("input ended".to_string());
    }
    if live.idle && live.following {
        return Some("waiting for data…".to_string());
    }
    None
}

fn pane_block(app: &App, pane: Pane, title: String) -> Block<'static> {
    let theme = &app.theme;
    let focused = app.focus == pane;
    Block::bordered()
        .border_style(if focused { theme.border_focus } else { theme.border })
        .title(Line::styled(
            title,
            if focused { theme.border_focus } else { theme.title },
        ))
}

fn too_small(frame: &mut Frame, area: Rect, theme: &Theme) {
    let text = format!(
        "terminal too small: {}×{}\nloopscope needs at least {MIN_WIDTH}×{MIN_HEIGHT}\n(q quits)",
        area.width, area.height
    );
    let [middle] = Layout::vertical([Constraint::Length(3)]).flex(Flex::Center).areas(area);
    frame.render_widget(
        Paragraph::new(text)
            .style(theme.flash)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        middle,
    );
}
