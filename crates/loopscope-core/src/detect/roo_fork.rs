//! Profile `roo-fork` (compat.md): the dead-loop detector of a Roo Code fork
//! (kkkqkx123/Roo-Code@1ce5e59d) — the checkpoint design of profile `seed`,
//! as that code really runs it: UTF-16 lengths, only CJK short units, each
//! checkpoint's segment cut at the checkpoint, and a period check that
//! steps by the period (one residue class). Those differences are why it
//! is not a parameterisation of short-repeat and block-cycle: each would
//! need switches that change what the rule is.

use super::params::{Default, Kind, ParamSpec, Profile};
use super::{js_space, js_trim};
use super::{Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PromptScoped, Rule, Span, Status};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "roo-fork-dead-loop",
    family: Family::Compat,
    channel: Channel::Reasoning,
    rule: "at `checkpoint1` UTF-16 units of a request's reasoning: a CJK unit of `min_unit`..6 units repeated `min_repeats` times back to back in the last `window`; at `checkpoint2` and `checkpoint3`: the text since the previous checkpoint, cut at this one, as list lines (numbering stripped) or paragraph blocks, whose last elements repeat with a period up to `max_period` (stepping by the period) `min_period_elements` - 1 times",
    profiles: &[Profile::RooFork],
    params: &[
        ParamSpec::new("checkpoint1", Kind::Count { min: 1 }, Default::Count(1000), "first checkpoint (short sequences)"),
        ParamSpec::new("checkpoint2", Kind::Count { min: 1 }, Default::Count(2000), "second checkpoint (lists, paragraphs)"),
        ParamSpec::new("checkpoint3", Kind::Count { min: 1 }, Default::Count(4000), "third checkpoint (lists, paragraphs)"),
        ParamSpec::new("window", Kind::Count { min: 1 }, Default::Count(200), "units examined for short sequences"),
        ParamSpec::new("min_unit", Kind::Count { min: 1 }, Default::Count(2), "shortest repeated unit"),
        ParamSpec::new("min_repeats", Kind::Count { min: 2 }, Default::Count(4), "back-to-back copies of a short unit"),
        ParamSpec::new("min_period_elements", Kind::Count { min: 2 }, Default::Count(6), "elements needed for the period check"),
        ParamSpec::new("max_period", Kind::Count { min: 1 }, Default::Count(50), "longest period tried"),
    ],
    group: None,
    build: |p| {
        PromptScoped::boxed(DeadLoop {
            checkpoints: [p.count("checkpoint1"), p.count("checkpoint2"), p.count("checkpoint3")],
            window: p.count("window"),
            min_unit: p.count("min_unit"),
            min_repeats: p.count("min_repeats"),
            min_elements: p.count("min_period_elements"),
            max_period: p.count("max_period"),
            units: 0,
            marked: [false; 3],
        })
    },
};

/// The longest short unit tried.
const MAX_UNIT: usize = 6;

#[derive(Clone)]
struct DeadLoop {
    checkpoints: [usize; 3],
    window: usize,
    min_unit: usize,
    min_repeats: usize,
    min_elements: usize,
    max_period: usize,
    /// UTF-16 length of the request's reasoning so far.
    units: usize,
    marked: [bool; 3],
}

/// `^\s*\d+\.\s*` removed from a line.
fn strip_number(line: &str) -> &str {
    let rest = line.trim_start_matches(js_space);
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || !rest[digits..].starts_with('.') {
        return line;
    }
    rest[digits + 1..].trim_start_matches(js_space)
}

/// What a check found: its kind (the fork's name), details and evidence.
struct Hit {
    kind: &'static str,
    details: String,
    /// Back-to-back copies of a short unit: (start, unit) in UTF-16 units of the buffer.
    unit: Option<(usize, usize, usize)>,
}

impl DeadLoop {
    /// The fork's period check: the smallest period `p` with `E[i] == E[i - p]`
    /// for enough steps back from the end, stepping by `p`.
    fn period(&self, e: &[String]) -> Option<usize> {
        let m = e.len();
        if m < self.min_elements {
            return None;
        }
        (1..=self.max_period.min(m / 2)).find(|&p| {
            let (mut c, mut i) = (0, m - 1);
            while i >= p && e[i] == e[i - p] {
                c += 1;
                i -= p;
            }
            c + 1 >= self.min_elements
        })
    }

    fn short_sequence(&self, msg: &[u16]) -> Option<Hit> {
        let n = msg.len();
        let from = n.saturating_sub(self.window);
        let f = &msg[from..];
        let l = f.len();
        for u in self.min_unit..=MAX_UNIT.min(l / 4) {
            let mut s = 0;
            while s + self.min_repeats * u < l {
                let unit = &f[s..s + u];
                let text = String::from_utf16_lossy(unit);
                if js_trim(&text).chars().any(|c| ('\u{4e00}'..='\u{9fa5}').contains(&c)) {
                    let mut copies = 1;
                    while s + (copies + 1) * u <= l && f[s + copies * u..s + (copies + 1) * u] == *unit {
                        copies += 1;
                    }
                    if copies >= self.min_repeats {
                        return Some(Hit {
                            kind: "shortSequenceLoop",
                            details: format!("检测到短序列循环：重复单元 \"{text}\""),
                            unit: Some((from + s, u, copies)),
                        });
                    }
                }
                s += 1;
            }
        }
        None
    }

    fn segment(&self, msg: &[u16], from: usize, to: usize) -> Option<Hit> {
        let text = String::from_utf16_lossy(&msg[from.min(msg.len())..to.min(msg.len())]);
        let lines: Vec<String> = text
            .split('\n')
            .map(strip_number)
            .filter(|l| !js_trim(l).is_empty())
            .map(str::to_string)
            .collect();
        if let Some(p) = self.period(&lines) {
            return Some(Hit {
                kind: "orderedListRepetition",
                details: format!("检测到有序列表重复，周期长度：{p}"),
                unit: None,
            });
        }
        let blocks: Vec<String> = text
            .split(['.', '。', ';', '；', '！', '!', '？', '?', '\n'])
            .filter(|b| !js_trim(b).is_empty())
            .map(str::to_string)
            .collect();
        self.period(&blocks).map(|p| Hit {
            kind: "paragraphRepetition",
            details: format!("检测到段落重复，周期长度：{p}"),
            unit: None,
        })
    }

    fn detect(&mut self, msg: &[u16]) -> Option<(Hit, usize)> {
        let n = msg.len();
        let [c1, c2, c3] = self.checkpoints;
        if n >= c1 && !self.marked[0] {
            self.marked[0] = true;
            if let Some(h) = self.short_sequence(msg) {
                return Some((h, c1));
            }
        }
        if n >= c2 && !self.marked[1] {
            self.marked[1] = true;
            if let Some(h) = self.segment(msg, c1, n.min(c2)) {
                return Some((h, c2));
            }
        }
        if n >= c3 && !self.marked[2] {
            self.marked[2] = true;
            if let Some(h) = self.segment(msg, c2, n.min(c3)) {
                return Some((h, c3));
            }
        }
        None
    }
}

impl Rule for DeadLoop {
    const ID: &'static str = "roo-fork-dead-loop";
    const KINDS: Kinds = Kinds::REQUEST.and(Kinds::REASONING);

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.reset();
                None
            }
            EventKind::Reasoning { text } => {
                self.units += text.encode_utf16().count();
                // Only a checkpoint not yet run needs the text.
                let due = self
                    .checkpoints
                    .iter()
                    .zip(&self.marked)
                    .any(|(&c, &m)| !m && self.units >= c);
                if !due {
                    return None;
                }
                let msg: Vec<u16> = obs.buffers.reasoning.to_string_lossless().encode_utf16().collect();
                let (hit, checkpoint) = self.detect(&msg)?;
                let len = obs.buffers.reasoning.len();
                let mut d = Detection::new(Self::ID, obs.index, Channel::Reasoning, Some(len));
                d.checkpoint = Some(checkpoint);
                if let Some((start, u, copies)) = hit.unit {
                    // UTF-16 offsets to chars for the highlight.
                    let to_char = |unit: usize| String::from_utf16_lossy(&msg[..unit]).chars().count();
                    d.spans = (0..copies)
                        .map(|k| Span::new(to_char(start + k * u), to_char(start + (k + 1) * u)))
                        .collect();
                    d.period = Some(u);
                    d.repeats = Some(copies);
                    d.threshold = Some(self.min_repeats);
                    d.evidence = Evidence::Copies;
                }
                d.repeated = Some(hit.kind.to_string());
                d.reason = format!(
                    "\"检测到死循环：{}。任务已终止\" (dead loop detected: {}; the task is aborted) at checkpoint {checkpoint}",
                    hit.details, hit.kind
                );
                Some(d)
            }
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.units = 0;
        self.marked = [false; 3];
    }

    fn progress(&self, _: &Buffers) -> Status {
        match self.checkpoints.iter().zip(&self.marked).find(|(_, m)| !**m) {
            Some((c, _)) => Status::Idle {
                detail: format!("runs at {c} UTF-16 units of reasoning ({} so far)", self.units),
            },
            None => Status::Idle {
                detail: "every checkpoint of this request has run".to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl() -> DeadLoop {
        DeadLoop {
            checkpoints: [1000, 2000, 4000],
            window: 200,
            min_unit: 2,
            min_repeats: 4,
            min_elements: 6,
            max_period: 50,
            units: 0,
            marked: [false; 3],
        }
    }

    #[test]
    fn the_period_check_steps_by_the_period() {
        let e = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(dl().period(&e("X,a,X,b,X,c,X,d,X,e,X")), Some(2), "one residue class");
        assert_eq!(dl().period(&e("a,b,a,b,a")), None, "too few elements");
        assert_eq!(dl().period(&e("q,a,a,a,a,a,a")), Some(1));
    }

    #[test]
    fn only_cjk_units_count_as_short_sequences() {
        let utf16 = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
        assert!(dl().short_sequence(&utf16(&"然后".repeat(5))).is_some());
        assert!(dl().short_sequence(&utf16(&"ha".repeat(20))).is_none());
        assert_eq!(strip_number("  12. item"), "item");
        assert_eq!(strip_number("12 item"), "12 item");
    }
}
