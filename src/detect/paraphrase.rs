//! `paraphrase-loop` (profile `extended`): a cycle of blocks (sentences or
//! lines) that keep coming back with *nearly* the same words — what an
//! exact periodic tail misses when a model re-says its last thoughts with
//! small changes. Blocks end at sentence punctuation or a newline, so the
//! verdict depends only on the text, never on delta boundaries. Each block
//! is a set of word shingles (words, or for CJK, pairs of chars); a loop is
//! a run of at least `copies` × k blocks each at least `similarity` alike
//! with the block k earlier (k = 1 to `max_cycle`), with enough words to mean
//! something.

use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{
    channel_text, Buffers, Detection, DetectorInfo, Family, Observation, PerChannel, PromptScoped, Rule, Span, Status,
};
use crate::event::{Channel, EventKind};

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "paraphrase-loop",
    family: Family::Continuous,
    channel: Channel::Reasoning,
    rule: "the last `copies` x k blocks (sentences or lines of at least `min_words` words) of the reasoning or \
           content form copies of a cycle of k <= `max_cycle` blocks, each at least `similarity` percent alike \
           (shingle Jaccard of the k blocks ending there with the k before), and not all exactly equal (exact \
           repeats are text-loop's)",
    profiles: &[Profile::Extended],
    params: &[
        ParamSpec::new(
            "copies",
            Kind::Count { min: 2 },
            Default::Count(3),
            "copies of the cycle of blocks that make a loop",
        ),
        ParamSpec::new(
            "similarity",
            Kind::Count { min: 1 },
            Default::Count(70),
            "percent of shared shingles for two blocks to be alike",
        ),
        ParamSpec::new(
            "max_cycle",
            Kind::Count { min: 1 },
            Default::Count(6),
            "most blocks in one cycle",
        ),
        ParamSpec::new(
            "min_words",
            Kind::Count { min: 1 },
            Default::Count(6),
            "shingles a block needs to count",
        ),
    ],
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    PromptScoped::boxed(ParaphraseLoop {
        copies: p.count("copies"),
        similarity: p.count("similarity"),
        max_cycle: p.count("max_cycle"),
        min_words: p.count("min_words"),
        blocks: PerChannel::default(),
    })
}

#[derive(Clone, Debug)]
struct Block {
    start: usize,
    end: usize,
    /// Sorted, without repeats: sets compared by merging, no hashing.
    shingles: Vec<u64>,
    exact: u64,
}

/// One channel of the current request, cut into blocks.
#[derive(Clone, Debug, Default)]
struct Blocks {
    /// Chars read, and where the open block started.
    chars: usize,
    open_start: usize,
    open: String,
    done: Vec<Block>,
    /// Best (cycle, blocks in a row alike) so far, for the status.
    best: (usize, usize),
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ac00}'..='\u{d7af}')
}

/// Words (lowercase) and, for CJK runs, char pairs; sorted, no repeats.
fn shingles(text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_cjk: Option<char> = None;
    let flush = |word: &mut String, out: &mut Vec<u64>| {
        if !word.is_empty() {
            out.push(fnv(word));
            word.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut out);
            if let Some(p) = prev_cjk {
                out.push(fnv(&format!("{p}{c}")));
            }
            prev_cjk = Some(c);
        } else {
            prev_cjk = None;
            if c.is_alphanumeric() {
                // Numbers stay as they are: items that differ by a number
                // (sizes, ids) are different items; counters are text-loop's.
                word.extend(c.to_lowercase());
            } else {
                flush(&mut word, &mut out);
            }
        }
    }
    flush(&mut word, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// The union of sorted sets, sorted.
fn union(sets: &[Block]) -> Vec<u64> {
    let mut all: Vec<u64> = sets.iter().flat_map(|s| s.shingles.iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn jaccard(a: &[u64], b: &[u64]) -> usize {
    // Both sorted: count the shared ones by merging.
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let all = a.len() + b.len() - shared;
    (shared * 100).checked_div(all).unwrap_or(0)
}

#[derive(Clone, Debug)]
pub(crate) struct ParaphraseLoop {
    copies: usize,
    similarity: usize,
    max_cycle: usize,
    min_words: usize,
    blocks: PerChannel<Blocks>,
}

impl ParaphraseLoop {
    fn read(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection> {
        let (copies, similarity, max_cycle, min_words) = (self.copies, self.similarity, self.max_cycle, self.min_words);
        let blocks = self.blocks.get_mut(channel);
        for c in text.chars() {
            blocks.chars += 1;
            blocks.open.push(c);
            let ends = matches!(c, '\n' | '.' | '!' | '?' | '。' | '！' | '？' | '；' | ';');
            if !ends || blocks.open.len() > 16 * 1024 {
                if blocks.open.len() > 16 * 1024 {
                    blocks.open.clear();
                    blocks.open_start = blocks.chars;
                }
                continue;
            }
            let text = std::mem::take(&mut blocks.open);
            let start = std::mem::replace(&mut blocks.open_start, blocks.chars);
            let shingles = shingles(&text);
            if shingles.len() < min_words {
                continue;
            }
            let exact = fnv(text.trim());
            // A block starts at its first char that is not white space.
            let start = start + text.chars().take_while(|c| c.is_whitespace()).count();
            blocks.done.push(Block {
                start,
                end: blocks.chars,
                shingles,
                exact,
            });
            if blocks.done.len() > 4 * copies * max_cycle + 8 {
                let drop = blocks.done.len() - 2 * copies * max_cycle;
                blocks.done.drain(..drop);
            }
            if let Some(d) = check(blocks, copies, similarity, max_cycle, channel, obs) {
                return Some(d);
            }
        }
        None
    }
}

/// The newest blocks end in a cycle of near-duplicates.
fn check(
    b: &mut Blocks,
    copies: usize,
    similarity: usize,
    max_cycle: usize,
    channel: Channel,
    obs: &Observation<'_>,
) -> Option<Detection> {
    let n = b.done.len();
    for k in 1..=max_cycle {
        let need = copies * k;
        if n < need {
            break;
        }
        // Blocks in a row, from the newest back, alike with the block k before.
        let mut run = 0;
        let mut sims = Vec::new();
        let mut blockwise = Vec::new();
        // Compared copy with copy: the k blocks ending at i against the k
        // before them (one short sentence may change two of its six words).
        let copy = |end: usize| -> Vec<u64> { union(&b.done[end + 1 - k..=end]) };
        while run + 2 * k <= n {
            let i = n - 1 - run;
            // The copies must line up block by block (loosely: a longer
            // exact cycle seen through a shorter window does not), checked
            // first because it is cheap and clean text fails it at once.
            let block = jaccard(&b.done[i].shingles, &b.done[i - k].shingles);
            if block < similarity / 2 {
                break;
            }
            let s = jaccard(&copy(i), &copy(i - k));
            if s < similarity {
                break;
            }
            sims.push(s);
            blockwise.push(block);
            run += 1;
        }
        if run + 1 > b.best.1 {
            b.best = (k, run + 1);
        }
        // Each alike position compares 2k blocks, so a run of r covers
        // r + 2k - 1 blocks: enough when that holds `copies` cycles.
        if run == 0 || run + 2 * k - 1 < need {
            continue;
        }
        let first = n - need;
        let stretch = &b.done[first..];
        // Text that repeats exactly (with this cycle or a shorter one, or
        // word for word block by block) is text-loop's to report.
        let exact = |p: usize| {
            stretch
                .iter()
                .skip(p)
                .zip(stretch.iter())
                .all(|(x, y)| x.exact == y.exact)
        };
        if (1..=k).any(exact) || blockwise.iter().all(|&s| s == 100) {
            return None;
        }
        let mut d = Detection::new(INFO.id, obs.index, channel, Some(b.chars));
        d.period = Some(k);
        d.repeats = Some(copies);
        d.threshold = Some(copies);
        d.onset = Some(stretch[0].start);
        d.spans = stretch.iter().map(|x| Span::new(x.start, x.end)).collect();
        sims.reverse();
        let low = sims.iter().copied().min().unwrap_or(100);
        d.reason = format!(
            "the {} keeps re-saying a cycle of {k} {} in other words: {copies} copies, each block at least {low}% \
             alike with the one {k} before (needs {similarity}%; per block: {}), from char {}",
            channel.as_str(),
            if k == 1 { "block" } else { "blocks" },
            sims.iter().map(|s| format!("{s}%")).collect::<Vec<_>>().join(" "),
            stretch[0].start
        );
        return Some(d);
    }
    None
}

impl Rule for ParaphraseLoop {
    const ID: &'static str = "paraphrase-loop";

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        match &obs.event.kind {
            EventKind::Request { .. } => {
                self.blocks = PerChannel::default();
                None
            }
            kind => {
                let (channel, text) = channel_text(kind)?;
                self.read(channel, text, obs)
            }
        }
    }

    fn reset(&mut self) {
        self.blocks = PerChannel::default();
    }

    fn progress(&self, _buffers: &Buffers) -> Status {
        let (k, run) = self.blocks.reasoning.best.max(self.blocks.content.best);
        match run.checked_div(k) {
            None => Status::Watching {
                current: 0,
                threshold: self.copies,
                detail: "no alike blocks yet".to_string(),
            },
            Some(copies) => Status::Watching {
                current: copies,
                threshold: self.copies,
                detail: format!(
                    "{run} blocks in a row alike with the one {k} before ({copies} of {} copies)",
                    self.copies
                ),
            },
        }
    }
}
