//! The SDK's checks over the window (`_action_error_streak`, `is_stuck`'s
//! four scenarios), read from the rings of its actions and observations.

use super::window::Ring;
use super::{Ev, Sdk};

impl Sdk {
    /// `_action_error_streak` over the newest `n` actions and observations,
    /// with the events of the streak when `events` asks for them.
    pub(super) fn error_streak(&self, n: usize, mut events: Option<&mut Vec<usize>>) -> usize {
        let (actions, observations) = (&self.actions, &self.observations);
        if actions.len() == 0 || n == 0 {
            return 0;
        }
        let first = actions.newest(0).class;
        let mut streak = 0;
        for i in 0..n.min(actions.len()).min(observations.len()) {
            let (a, o) = (actions.newest(i), observations.newest(i));
            if a.class == first && o.error {
                streak += 1;
                if let Some(ev) = events.as_deref_mut() {
                    ev.push(a.event);
                    ev.push(o.event);
                }
            } else {
                break;
            }
        }
        streak
    }

    /// `is_stuck`: the scenario, the events involved, the count and the
    /// threshold it reached, and the parameter that decides it.
    /// `full_streak`: `error_streak` over the whole window.
    pub(super) fn is_stuck(
        &self,
        full_streak: usize,
    ) -> Option<(&'static str, Vec<usize>, usize, &'static str, usize)> {
        let t = self.t;
        let events = &self.window;
        if events.len() < t.action_observation.min(t.action_error).min(t.monologue) {
            return None;
        }
        let max_needed = t.action_observation.max(t.action_error + 1);
        let (actions, observations) = (&self.actions, &self.observations);
        // The events of the newest `n` actions and observations, in order.
        let involved = |n: usize| {
            let mut v: Vec<usize> = (0..n)
                .map(|i| actions.newest(i).event)
                .chain((0..n).map(|i| observations.newest(i).event))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // The newest `n` of `ring` all of one class.
        let same =
            |ring: &Ring, n: usize| ring.len() >= n && (1..n).all(|i| ring.newest(i).class == ring.newest(0).class);
        // 1. the same action with the same observation.
        let n = t.action_observation;
        if same(actions, n) && same(observations, n) {
            return Some(("repeating_action_observation", involved(n), n, "action_observation", n));
        }
        // 2. the same action failing, more than action_error times.
        let streak = full_streak.min(max_needed);
        debug_assert_eq!(streak, self.error_streak(max_needed, None));
        if streak > t.action_error {
            let mut ev = Vec::new();
            self.error_streak(max_needed, Some(&mut ev));
            ev.sort_unstable();
            return Some(("repeating_action_error", ev, streak, "action_error", t.action_error));
        }
        // 3. a monologue: agent messages, passing over environment messages.
        let mut count = 0;
        let mut ev = Vec::new();
        for item in events.iter().rev() {
            match item.ev {
                Ev::Agent => {
                    count += 1;
                    ev.push(item.event);
                }
                Ev::Environment => {}
                _ => break,
            }
        }
        if count >= t.monologue {
            ev.reverse();
            return Some(("monologue", ev, count, "monologue", t.monologue));
        }
        // 4. an A/B pattern.
        let n = t.alternating;
        if events.len() >= n {
            let ab = |ring: &Ring| {
                ring.len() >= n && (0..n.saturating_sub(2)).all(|i| ring.newest(i).class == ring.newest(i + 2).class)
            };
            if ab(actions) && ab(observations) {
                return Some(("alternating_pattern", involved(n), n, "alternating_pattern", n));
            }
        }
        None
    }
}
