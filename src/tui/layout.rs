//! Where each pane goes. One function, used by rendering and by the state
//! update (page sizes, mouse hit-testing), so both agree on the geometry.

use ratatui::layout::{Constraint, Layout, Rect};

/// Below this the layout would break: a message is shown instead.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Areas {
    pub status: Rect,
    pub buffer: Rect,
    pub detectors: Rect,
    pub timeline: Rect,
    pub scrubber: Rect,
    pub footer: Rect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pane {
    #[default]
    Buffer,
    Detectors,
    Timeline,
}

impl Pane {
    pub fn next(self) -> Pane {
        match self {
            Pane::Buffer => Pane::Detectors,
            Pane::Detectors => Pane::Timeline,
            Pane::Timeline => Pane::Buffer,
        }
    }

    pub fn prev(self) -> Pane {
        self.next().next()
    }
}

impl Areas {
    /// The panes for a terminal of this size, or `None` when it is too small.
    pub fn new(area: Rect) -> Option<Areas> {
        Areas::arrange(area, None, false)
    }

    /// The panes with one `zoom`ed to the whole main area (the others get
    /// no room), or with the detectors pane taller when `detail_first`
    /// (a detection is shown and the screen is narrow).
    pub fn arrange(area: Rect, zoom: Option<Pane>, detail_first: bool) -> Option<Areas> {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            return None;
        }
        let [status, main, scrubber, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(8),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        let (buffer, detectors, timeline) = if let Some(pane) = zoom {
            let none = Rect::new(main.x, main.y, 0, 0);
            match pane {
                Pane::Buffer => (main, none, none),
                Pane::Detectors => (none, main, none),
                Pane::Timeline => (none, none, main),
            }
        } else if area.width >= 100 {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(main);
            let d = if detail_first { 65 } else { 55 };
            let [d, t] = Layout::vertical([Constraint::Percentage(d), Constraint::Percentage(100 - d)]).areas(right);
            (left, d, t)
        } else {
            let (b, d) = if detail_first { (36, 42) } else { (50, 28) };
            let [b, d, t] = Layout::vertical([
                Constraint::Percentage(b),
                Constraint::Percentage(d),
                Constraint::Percentage(22),
            ])
            .areas(main);
            (b, d, t)
        };
        Some(Areas {
            status,
            buffer,
            detectors,
            timeline,
            scrubber,
            footer,
        })
    }

    /// Inner size (without borders) of a bordered pane.
    pub fn inner(r: Rect) -> (usize, usize) {
        (r.width.saturating_sub(2) as usize, r.height.saturating_sub(2) as usize)
    }

    pub fn pane_at(&self, col: u16, row: u16) -> Option<Pane> {
        let hit = |r: Rect| r.contains(ratatui::layout::Position::new(col, row));
        [
            (self.buffer, Pane::Buffer),
            (self.detectors, Pane::Detectors),
            (self.timeline, Pane::Timeline),
        ]
        .into_iter()
        .find(|(r, _)| r.area() > 0 && hit(*r))
        .map(|(_, p)| p)
    }
}
