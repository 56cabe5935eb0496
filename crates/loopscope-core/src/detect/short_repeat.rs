//! `short-repeat` (type 3): a short unit repeated back to back at the end of
//! the reasoning buffer, e.g. "思考思考思考思考".

use super::checkpoint::{Analysis, CheckpointDetector};
use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{quote, Detection, DetectorInfo, Evidence, Family, Span};
use crate::event::Channel;
use crate::text::TextBuffer;

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "short-repeat",
    family: Family::Checkpoint,
    channel: Channel::Reasoning,
    rule: "at the first checkpoint, the last `window` chars contain a unit of >= `min_unit` chars \
           (at least two distinct) repeated back to back >= `min_repeats` times",
    profiles: &[Profile::Seed],
    params: &[
        ParamSpec::new(
            "checkpoints",
            Kind::List,
            Default::List(&[2000, 3000, 5000]),
            "reasoning lengths (chars) where checks run",
        ),
        ParamSpec::new(
            "at",
            Kind::Choice(&["first", "all"]),
            Default::Word("first"),
            "run at the first checkpoint only, or at all",
        ),
        ParamSpec::new(
            "window",
            Kind::Count { min: 2 },
            Default::Count(200),
            "chars before the checkpoint that are examined",
        ),
        ParamSpec::new(
            "min_repeats",
            Kind::Count { min: 2 },
            Default::Count(4),
            "back-to-back copies that make a loop",
        ),
        ParamSpec::new(
            "min_unit",
            Kind::Count { min: 1 },
            Default::Count(2),
            "shortest unit, in chars",
        ),
    ],
    group: None,
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    CheckpointDetector::boxed(
        ShortRepeat {
            every_checkpoint: p.word("at") == "all",
            window: p.count("window"),
            min_repeats: p.count("min_repeats"),
            min_unit: p.count("min_unit"),
        },
        p.list("checkpoints"),
    )
}

#[derive(Clone, Debug)]
pub(crate) struct ShortRepeat {
    every_checkpoint: bool,
    window: usize,
    min_repeats: usize,
    min_unit: usize,
}

/// `count` copies of the unit `chars[start..start + unit]`, back to back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: usize,
    unit: usize,
    count: usize,
}

impl Run {
    fn covered(&self) -> usize {
        self.count * self.unit
    }
}

impl ShortRepeat {
    /// The best qualifying run (most chars covered, then later start, then
    /// shorter unit) and, failing that, the run with the most copies. Only
    /// units short enough to repeat `min_repeats` times in the window are
    /// tried: longer ones can neither qualify nor be a near miss worth showing.
    fn find(&self, chars: &[char]) -> (Option<Run>, Option<Run>) {
        let mut pick = Pick::default();
        for unit in self.min_unit.max(1)..=chars.len() / self.min_repeats.max(2) {
            // A maximal stretch where chars[i] == chars[i+unit] is a
            // unit-periodic substring [a, i + unit); only a stretch of at
            // least `unit` positions holds two copies, and such a stretch
            // contains a multiple of `unit`: only those are tried (about
            // len/unit looks per unit length, not len), each stretch found
            // once, left to right, as a scan of every position finds them.
            let mut probe = 0;
            while probe + unit < chars.len() {
                if chars[probe] != chars[probe + unit] {
                    probe += unit;
                    continue;
                }
                let mut a = probe;
                while a > 0 && chars[a - 1] == chars[a - 1 + unit] {
                    a -= 1;
                }
                let mut i = probe;
                while i + unit < chars.len() && chars[i] == chars[i + unit] {
                    i += 1;
                }
                // The next multiple of `unit` past the stretch (`i` breaks it).
                probe = (i / unit + 1) * unit;
                let run = Run {
                    start: a,
                    unit,
                    count: (i + unit - a) / unit,
                };
                pick.offer(run, chars, self.min_repeats);
            }
        }
        (pick.best, pick.near)
    }
}

/// The best qualifying run and the nearest miss among the maximal runs
/// offered, in the order they are found.
#[derive(Default)]
struct Pick {
    best: Option<Run>,
    near: Option<Run>,
}

impl Pick {
    fn offer(&mut self, run: Run, chars: &[char], min_repeats: usize) {
        let a = run.start;
        // One distinct char ("哈哈", "  ") is single-character repetition: left alone.
        if run.count < 2 || chars[a..a + run.unit].iter().all(|&c| c == chars[a]) {
            return;
        }
        if run.count >= min_repeats {
            let key = |r: &Run| (r.covered(), r.start, std::cmp::Reverse(r.unit));
            if self.best.is_none_or(|b| key(&run) > key(&b)) {
                self.best = Some(run);
            }
        } else if self
            .near
            .is_none_or(|b| (run.count, run.covered()) > (b.count, b.covered()))
        {
            self.near = Some(run);
        }
    }
}

impl Analysis for ShortRepeat {
    fn id(&self) -> &'static str {
        INFO.id
    }

    fn runs_at(&self, ordinal: usize) -> bool {
        self.every_checkpoint || ordinal == 0
    }

    fn analyze(
        &self,
        buf: &TextBuffer,
        _checkpoints: &[usize],
        _ordinal: usize,
        n: usize,
    ) -> Result<Detection, String> {
        let from = n.saturating_sub(self.window);
        let chars: Vec<char> = buf.chars_from(from).take(n - from).collect();
        let (best, near) = self.find(&chars);
        let text = |r: &Run| chars[r.start..r.start + r.unit].iter().collect::<String>();
        let Some(run) = best else {
            return Err(match near {
                Some(r) => format!(
                    "best unit {}: {} of {} repeats",
                    quote(&text(&r), 20),
                    r.count,
                    self.min_repeats
                ),
                None => format!(
                    "no unit of {}+ chars repeats in the last {} chars",
                    self.min_unit,
                    n - from
                ),
            });
        };
        let start = from + run.start;
        let end = start + run.covered();
        let mut d = Detection::new(INFO.id, 0, Channel::Reasoning, None);
        d.period = Some(run.unit);
        d.repeats = Some(run.count);
        d.threshold = Some(self.min_repeats);
        d.spans = (0..run.count)
            .map(|k| Span::new(start + k * run.unit, start + (k + 1) * run.unit))
            .collect();
        d.repeated = Some(text(&run));
        d.evidence = Evidence::Copies;
        d.reason = format!(
            "{} repeats {} times back to back (unit of {} chars, needs {}), in chars {start}..{end}",
            quote(&text(&run), 40),
            run.count,
            run.unit,
            self.min_repeats
        );
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find`'s runs as first found: every position tried for every unit length.
    fn find_every_position(sr: &ShortRepeat, chars: &[char]) -> (Option<Run>, Option<Run>) {
        let mut pick = Pick::default();
        for unit in sr.min_unit.max(1)..=chars.len() / sr.min_repeats.max(2) {
            let mut i = 0;
            while i + unit < chars.len() {
                if chars[i] != chars[i + unit] {
                    i += 1;
                    continue;
                }
                let a = i;
                while i + unit < chars.len() && chars[i] == chars[i + unit] {
                    i += 1;
                }
                let run = Run {
                    start: a,
                    unit,
                    count: (i + unit - a) / unit,
                };
                pick.offer(run, chars, sr.min_repeats);
            }
        }
        (pick.best, pick.near)
    }

    proptest::proptest! {
        #[test]
        fn finds_what_trying_every_position_finds(
            pieces in proptest::collection::vec((proptest::sample::select(vec!["ab", "思考", "a", "🙂x", "abc ", "b"]), 1usize..7), 0..40),
            min_repeats in 2usize..6,
            min_unit in 1usize..4,
        ) {
            let text: String = pieces.iter().map(|(p, n)| p.repeat(*n)).collect();
            let chars: Vec<char> = text.chars().take(200).collect();
            let sr = ShortRepeat { every_checkpoint: false, window: 200, min_repeats, min_unit };
            proptest::prop_assert_eq!(sr.find(&chars), find_every_position(&sr, &chars));
        }
    }

    fn sr() -> ShortRepeat {
        ShortRepeat {
            every_checkpoint: false,
            window: 200,
            min_repeats: 4,
            min_unit: 2,
        }
    }

    fn run_on(text: &str) -> Result<Detection, String> {
        let mut b = TextBuffer::new();
        b.push_str(text);
        sr().analyze(&b, &[2000], 0, b.len())
    }

    #[test]
    fn finds_a_cjk_stutter_with_unit_boundaries() {
        let text = format!("{}{}", "前".repeat(100), "思考".repeat(10));
        let d = run_on(&text).unwrap();
        assert_eq!(d.period, Some(2));
        assert_eq!(d.repeats, Some(10));
        assert_eq!(d.spans.first(), Some(&Span::new(100, 102)));
        assert_eq!(d.spans.last(), Some(&Span::new(118, 120)));
        assert_eq!(d.repeated.as_deref(), Some("思考"));
    }

    #[test]
    fn single_character_repetition_is_left_alone() {
        for text in [
            "哈".repeat(300),
            ".".repeat(300),
            " ".repeat(300),
            "ab".to_string() + &"哈".repeat(50),
        ] {
            assert!(run_on(&text).is_err(), "{text}");
        }
    }

    #[test]
    fn three_copies_are_a_near_miss() {
        let err = run_on("x-y-abcabcabc").unwrap_err();
        assert_eq!(err, "best unit \"abc\": 3 of 4 repeats");
    }

    #[test]
    fn prefers_the_shorter_unit_on_a_tie_and_most_coverage_overall() {
        // "ab" x8 is also "abab" x4: same coverage, same start -> the shorter unit.
        let d = run_on(&format!("zz{}", "ab".repeat(8))).unwrap();
        assert_eq!((d.period, d.repeats), (Some(2), Some(8)));
        // A longer run elsewhere in the window covers more chars and wins.
        let d = run_on(&format!("{}-{}", "xy".repeat(5), "hello ".repeat(6))).unwrap();
        assert_eq!(d.repeated.as_deref(), Some("hello "));
    }

    #[test]
    fn emoji_offsets_are_chars() {
        let d = run_on(&format!("ok {}", "🙂🔁".repeat(6))).unwrap();
        assert_eq!(d.spans[0], Span::new(3, 5));
        assert_eq!(d.period, Some(2));
    }

    #[test]
    fn only_the_window_is_examined() {
        // The stutter ends 250 chars before the checkpoint: outside the 200-char window.
        let text = format!("{}{}", "然后".repeat(20), "a".repeat(250));
        assert!(run_on(&text).is_err());
    }
}
