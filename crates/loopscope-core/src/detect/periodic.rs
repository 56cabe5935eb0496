//! The periodic tail: does a sequence end in a repeating cycle?
//!
//! Shared by `block-cycle` and `list-cycle` (over blocks and lines) and by
//! the tool and action detectors (over call keys): all of them ask how far
//! back from the end each element equals the one `p` places before it.

/// How many consecutive indices `i = m-1, m-2, …` satisfy
/// `elems[i] == elems[i - period]`, stopping at the first mismatch.
pub(crate) fn tail_matches<T: PartialEq>(elems: &[T], period: usize) -> usize {
    if period == 0 || period >= elems.len() {
        return 0;
    }
    (period..elems.len())
        .rev()
        .take_while(|&i| elems[i] == elems[i - period])
        .count()
}

/// The rule of detectors.md: periods `1..=min(max_period, m/2)`; a tail is
/// periodic when `matches >= min_matches` and `matches >= period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TailRule {
    pub max_period: usize,
    pub min_matches: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TailMatch {
    pub period: usize,
    pub matches: usize,
}

impl TailMatch {
    /// Elements in the repeated run, including its first copy.
    pub(crate) fn run_len(&self) -> usize {
        self.matches + self.period
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TailVerdict {
    /// The smallest qualifying period.
    Periodic(TailMatch),
    /// No period qualified; `best` is the closest one, for near-miss reports.
    Aperiodic { best: Option<TailMatch> },
}

impl TailRule {
    /// Matches a period needs to qualify.
    pub(crate) fn needed(&self, period: usize) -> usize {
        self.min_matches.max(period)
    }

    pub(crate) fn check<T: PartialEq>(&self, elems: &[T]) -> TailVerdict {
        let mut best: Option<TailMatch> = None;
        for period in 1..=self.max_period.min(elems.len() / 2) {
            let matches = tail_matches(elems, period);
            let m = TailMatch { period, matches };
            if matches >= self.needed(period) {
                return TailVerdict::Periodic(m);
            }
            // Closest = largest share of what was needed; ties keep the smaller period.
            let better = best.is_none_or(|b| matches * self.needed(b.period) > b.matches * self.needed(period));
            if matches > 0 && better {
                best = Some(m);
            }
        }
        TailVerdict::Aperiodic { best }
    }

    /// "best period 2: 4 of 6 matches", or that nothing repeated at all.
    pub(crate) fn near_miss(&self, verdict: &TailVerdict, what: &str) -> String {
        match verdict {
            TailVerdict::Aperiodic { best: Some(b) } => format!(
                "best period {}: {} of {} matches",
                b.period,
                b.matches,
                self.needed(b.period)
            ),
            TailVerdict::Aperiodic { best: None } => format!("no {what} equals one 1..{} before it", self.max_period),
            TailVerdict::Periodic(m) => format!("period {}: {} matches", m.period, m.matches),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: TailRule = TailRule {
        max_period: 50,
        min_matches: 6,
    };

    #[test]
    fn counts_back_from_the_end() {
        assert_eq!(tail_matches(&["a", "b", "a", "b", "a"], 2), 3);
        assert_eq!(tail_matches(&["x", "a", "a", "a"], 1), 2);
        assert_eq!(tail_matches(&["a", "b", "c"], 1), 0);
        assert_eq!(tail_matches::<&str>(&[], 1), 0);
        assert_eq!(tail_matches(&["a"], 1), 0);
    }

    #[test]
    fn smallest_qualifying_period_wins() {
        let e: Vec<&str> = "xyzABABABABABABAB".split("").filter(|s| !s.is_empty()).collect();
        // A B repeated 7 times: 12 matches at period 2; period 4 also repeats but 2 wins.
        assert_eq!(
            RULE.check(&e),
            TailVerdict::Periodic(TailMatch { period: 2, matches: 12 })
        );
    }

    #[test]
    fn needs_min_matches_and_a_whole_period() {
        // 1 2 3 4 5 6 7 then the same seven: period 7, 7 matches >= 6 and >= 7.
        let mut e: Vec<u32> = (1..=7).collect();
        e.extend(1..=7);
        assert_eq!(
            RULE.check(&e),
            TailVerdict::Periodic(TailMatch { period: 7, matches: 7 })
        );
        // Six blocks that equal six blocks ten places earlier: 6 matches < period 10.
        let mut e: Vec<u32> = vec![100, 101, 102, 103];
        e.extend(1..=10);
        e.extend(1..=6);
        let v = RULE.check(&e);
        assert_eq!(
            v,
            TailVerdict::Aperiodic {
                best: Some(TailMatch { period: 10, matches: 6 })
            }
        );
        assert_eq!(RULE.near_miss(&v, "block"), "best period 10: 6 of 10 matches");
    }

    #[test]
    fn five_matches_are_not_enough() {
        let e = ["q", "a", "a", "a", "a", "a", "a"]; // 5 matches at period 1
        let v = RULE.check(&e);
        assert_eq!(
            v,
            TailVerdict::Aperiodic {
                best: Some(TailMatch { period: 1, matches: 5 })
            }
        );
        assert_eq!(RULE.near_miss(&v, "block"), "best period 1: 5 of 6 matches");
    }
}
