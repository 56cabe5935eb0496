//! Rendering: a pure function of the app state. The status line, each
//! pane where the layout puts it, the scrubber, the footer, and the open
//! overlay over them.

use ratatui::layout::{Alignment, Constraint, Flex, Layout, Rect};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::app::App;
use super::component::Context;
use super::layout::{Pane, MIN_HEIGHT, MIN_WIDTH};
use super::theme::Theme;
use super::{cells, footer, scrubber, status};

pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    let theme = &app.theme;
    let Some(areas) = app.areas() else {
        too_small(frame, area, theme);
        return;
    };
    let live = app.live.as_ref();
    status::render(
        frame,
        areas.status,
        status::StatusView {
            mode: app.mode(),
            name: &app.name,
            speed: app.clock.speed(),
            shown: app.cursor.checked_sub(1),
            total: app.tape.len(),
            time: app.cursor.checked_sub(1).map_or(0.0, |i| app.pacing.stream_time(i)),
            duration: app.pacing.stream_duration(),
            profile: &app.profile_label(),
            bad_lines: app.bad_lines(),
            pause_on_detect: app.pause_on_detect,
            badge: app.badge.as_ref().map(|b| b.text.as_str()),
            fired: live.map_or(0, |l| l.fired),
            live_note: live_note(app),
            format_note: app
                .format
                .filter(|f| *f != loopscope_core::formats::Format::Native)
                .map(|f| {
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
    for &pane in Pane::ALL {
        let room = areas.pane(pane);
        if room.area() > 0 {
            pane.render(app, frame, room);
        }
    }
    let marks: Vec<(f64, usize)> = app
        .tape
        .detections()
        .iter()
        .map(|d| (app.pacing.play_time(d.event), d.run))
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
    footer::render(frame, areas.footer, app, theme);
    if let Some(overlay) = &app.overlay {
        let cx = Context::new(app, area, true);
        // An overlay's border beside a wide glyph of the panes (CJK text)
        // must not be eaten by it, in the terminal or in a picture.
        cells::settle_wide_glyphs(frame.buffer_mut());
        overlay.render(frame, &cx);
        cells::mend_cut_wide_glyphs(frame.buffer_mut());
    }
}

/// What a live stream's status adds: idleness, an ended input, or how
/// many events arrived while the view was stopped. (The file's condition —
/// waiting for it, deleted — is a message: the bottom line says it.)
fn live_note(app: &App) -> Option<String> {
    let live = app.live.as_ref()?;
    let behind = app.tape.len().saturating_sub(app.cursor);
    if !live.following && behind > 0 {
        return Some(format!("LIVE +{behind} new (G follows)"));
    }
    if live.input_ended {
        return Some("input ended".to_string());
    }
    if live.idle && live.following && live.file.is_none() {
        return Some("waiting for data…".to_string());
    }
    None
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
