//! Where each pane goes. One function, used by rendering and by the state
//! update (page sizes, mouse hit-testing), so both agree on the geometry.
//! The panes and their places are registered in `tui/mod.rs`.

use ratatui::layout::{Constraint, Layout, Rect};

use super::component::{Column, Share};
pub use super::{Areas, Pane, Panes};

/// Below this the layout would break: a message is shown instead.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

/// A screen this wide has two columns of panes.
const WIDE: u16 = 100;

/// The main column's share of a wide screen's width.
const MAIN_PERCENT: u16 = 62;
/// The widest the main column (the text, read line by line) gets: past
/// it, a wider screen widens the side column, whose rows (the detectors'
/// states, the timeline's reasons) are what a narrow one cuts.
const MAIN_MAX: u16 = 102;

impl Pane {
    pub fn next(self) -> Pane {
        Pane::ALL[(self.index() + 1) % Pane::ALL.len()]
    }

    pub fn prev(self) -> Pane {
        Pane::ALL[(self.index() + Pane::ALL.len() - 1) % Pane::ALL.len()]
    }

    fn index(self) -> usize {
        Pane::ALL.iter().position(|&p| p == self).unwrap_or(0)
    }
}

/// The keys that move the focus from pane `from` to pane `to`, as the
/// keymap labels them ("Tab", "Shift+Tab", "Tab Tab"): what a hint says
/// about another pane's keys.
pub fn focus_key(from: Pane, to: Pane) -> String {
    use super::keymap::{Command, VIEW};
    let label = |cmd: Command| {
        VIEW.iter()
            .find(|b| b.command == cmd)
            .map_or_else(String::new, |b| b.keys[0].label())
    };
    let n = Pane::ALL.len();
    let ahead = (to.index() + n - from.index()) % n;
    if ahead <= n - ahead {
        vec![label(Command::FocusNext); ahead].join(" ")
    } else {
        vec![label(Command::FocusPrev); n - ahead].join(" ")
    }
}

impl Areas {
    /// The panes for a terminal of this size, or `None` when it is too small.
    pub fn new(area: Rect) -> Option<Areas> {
        Areas::arrange(area, None, false)
    }

    /// The panes with one `zoom`ed to the whole main area (the others get
    /// no room), or with each pane's share for a shown detection when
    /// `detection_shown` (the detectors pane's details get more room).
    pub fn arrange(area: Rect, zoom: Option<Pane>, detection_shown: bool) -> Option<Areas> {
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
        let mut areas = Areas {
            status,
            scrubber,
            footer,
            ..Areas::default()
        };
        let share = |s: Share| if detection_shown { s.detection_shown } else { s.usual };
        if let Some(zoomed) = zoom {
            for &p in Pane::ALL {
                let room = if p == zoomed {
                    main
                } else {
                    Rect::new(main.x, main.y, 0, 0)
                };
                *areas.pane_mut(p) = room;
            }
        } else if area.width >= WIDE {
            let in_column =
                |c: Column| -> Vec<Pane> { Pane::ALL.iter().copied().filter(|p| p.place().column == c).collect() };
            let (left, right) = (in_column(Column::Main), in_column(Column::Side));
            let (left_area, right_area) = if left.is_empty() || right.is_empty() {
                (main, main)
            } else {
                let left = (u32::from(main.width) * u32::from(MAIN_PERCENT) / 100).min(u32::from(MAIN_MAX)) as u16;
                let [l, r] = Layout::horizontal([Constraint::Length(left), Constraint::Fill(1)]).areas(main);
                (l, r)
            };
            areas.stack(left_area, &left, |p| share(p.place().wide));
            areas.stack(right_area, &right, |p| share(p.place().wide));
        } else {
            areas.stack(main, Pane::ALL, |p| share(p.place().narrow));
        }
        Some(areas)
    }

    /// Stacks `panes` in `area`, each given its share of the height.
    fn stack(&mut self, area: Rect, panes: &[Pane], share: impl Fn(Pane) -> u16) {
        if let [only] = panes {
            *self.pane_mut(*only) = area;
            return;
        }
        let shares: Vec<u16> = panes.iter().map(|&p| share(p)).collect();
        let rows = Layout::vertical(percentages(&shares).into_iter().map(Constraint::Percentage)).split(area);
        for (&p, &r) in panes.iter().zip(rows.iter()) {
            *self.pane_mut(p) = r;
        }
    }

    /// Inner size (without borders) of a bordered pane.
    pub fn inner(r: Rect) -> (usize, usize) {
        (r.width.saturating_sub(2) as usize, r.height.saturating_sub(2) as usize)
    }

    pub fn pane_at(&self, col: u16, row: u16) -> Option<Pane> {
        let hit = |r: Rect| r.contains(ratatui::layout::Position::new(col, row));
        Pane::ALL
            .iter()
            .copied()
            .find(|&p| self.pane(p).area() > 0 && hit(self.pane(p)))
    }
}

/// Shares as percentages adding up to 100 (as they are when they do).
fn percentages(shares: &[u16]) -> Vec<u16> {
    let total: u32 = shares.iter().map(|&s| u32::from(s)).sum();
    if total == 100 || total == 0 {
        return shares.to_vec();
    }
    let mut out: Vec<u16> = shares.iter().map(|&s| (u32::from(s) * 100 / total) as u16).collect();
    let given: u16 = out.iter().sum();
    if let Some(last) = out.last_mut() {
        *last += 100 - given;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_scaled_to_a_hundred() {
        assert_eq!(percentages(&[55, 45]), vec![55, 45]);
        assert_eq!(percentages(&[50, 28, 22, 20]), vec![41, 23, 18, 18]);
        assert_eq!(percentages(&[1, 1, 1]), vec![33, 33, 34]);
    }

    #[test]
    fn tab_goes_round_every_pane() {
        let mut p = Pane::default();
        for _ in Pane::ALL {
            p = p.next();
        }
        assert_eq!(p, Pane::default());
        assert_eq!(Pane::default().prev(), *Pane::ALL.last().unwrap());
    }
}
