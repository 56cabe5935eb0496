//! `paraphrase-loop` (profile `extended`): a cycle of blocks (sentences or
//! lines) that keep coming back with *nearly* the same words — what an
//! exact periodic tail misses when a model re-says its last thoughts with
//! small changes. Blocks end at sentence punctuation or a newline, so the
//! verdict depends only on the text, never on delta boundaries. Each block
//! is a set of word shingles (words, or for CJK, pairs of chars); a loop is
//! a run of at least `copies` × k blocks each at least `similarity` alike
//! with the block k earlier (k = 1 to `max_cycle`), with enough words to mean
//! something. Alike is weighed: a word that most earlier blocks hold (the
//! formula of legal prose, `claim`, `wherein`, `said`) counts for less than
//! one the text had not said, so clauses that share their formula but not
//! their content are not copies. A table row's shingles are its cells.
//!
//! The re-said rule (resaid.rs): copies only loosely alike, three words of
//! a short sentence changed, whose newest copy says nothing the copies
//! before it had not said.
//!
//! The chant rule: the newest `chant_sentences` or more sentences of any
//! length hold a few distinct ones (up to 16), each said `chant_ratio`
//! times on average, in any order.

use super::params::{Default, Kind, ParamSpec, Params, Profile};
use super::{
    Buffers, Detection, DetectorInfo, Evidence, Family, Kinds, Observation, PerChannel, PromptScoped, Rule, Span,
    Status, TextReader, TEXT_KINDS,
};
use crate::event::Channel;
use blocks::{Block, Blocks, Closed};

mod blocks;
mod chant;
mod resaid;

pub(crate) static INFO: DetectorInfo = DetectorInfo {
    id: "paraphrase-loop",
    family: Family::Continuous,
    channel: Channel::Reasoning,
    rule: "the last `copies` x k blocks (sentences or lines of at least `min_words` words) of the reasoning or \
           content form copies of a cycle of k <= `max_cycle` blocks (a copy more for k = 1 and k >= 5), each at \
           least `similarity` percent alike \
           (shingle Jaccard of the k blocks ending there with the k before, each word weighed down by how many \
           earlier blocks hold it; a table row's cells as its shingles), and not all exactly equal (exact repeats \
           are text-loop's); or, in prose (no backtick, slash or underscore), at least as many copies each block \
           at least three fifths of `similarity` alike with its counterpart, the newest copy saying no word its \
           counterparts before had not said (three words of a short sentence changed among the same synonyms); \
           or the last `chant_sentences` or more sentences (outside code and tables) are at most 16 distinct ones \
           said `chant_ratio` times each on average, in any order",
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
            Default::Count(55),
            "percent of shared shingles (weighed) for two copies to be alike",
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
        ParamSpec::new(
            "chant_sentences",
            Kind::Count { min: 4 },
            Default::Count(9),
            "fewest sentences in a row that a chant of a handful of sentences needs",
        ),
        ParamSpec::new(
            "chant_ratio",
            Kind::Count { min: 2 },
            Default::Count(3),
            "times each sentence of a chant is said on average",
        ),
    ],
    group: None,
    build,
};

fn build(p: &Params) -> Box<dyn super::Detector> {
    PromptScoped::boxed(ParaphraseLoop {
        copies: p.count("copies"),
        similarity: p.count("similarity"),
        max_cycle: p.count("max_cycle"),
        min_words: p.count("min_words"),
        chant_sentences: p.count("chant_sentences"),
        chant_ratio: p.count("chant_ratio"),
        blocks: PerChannel::default(),
    })
}

/// The union of sets, sorted, into `out`.
fn union_into(sets: &[Block], out: &mut Vec<u64>) {
    out.clear();
    for s in sets {
        out.extend_from_slice(&s.shingles);
    }
    out.sort_unstable();
    out.dedup();
}

/// Weighted Jaccard (percent) of two sorted sets: the weight of what they
/// share over the weight of what either has.
fn weighted_jaccard(a: &[u64], b: &[u64], weight: impl Fn(u64) -> u32) -> usize {
    let (mut i, mut j, mut shared, mut all) = (0, 0, 0u64, 0u64);
    while i < a.len() || j < b.len() {
        let (x, both) = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x == y => {
                i += 1;
                j += 1;
                (x, true)
            }
            (Some(&x), Some(&y)) if x < y => {
                i += 1;
                (x, false)
            }
            (Some(&x), None) => {
                i += 1;
                (x, false)
            }
            (_, Some(&y)) => {
                j += 1;
                (y, false)
            }
            (None, None) => unreachable!("one side has more"),
        };
        let w = u64::from(weight(x));
        all += w;
        if both {
            shared += w;
        }
    }
    (shared * 100).checked_div(all).unwrap_or(0) as usize
}

fn jaccard(a: &[u64], b: &[u64]) -> usize {
    weighted_jaccard(a, b, |_| 1)
}

/// Jaccard (percent) of blocks `x` and `y`: short ones compared all with
/// all (no sorting), longer ones sorted once and merged.
fn block_jaccard(done: &mut [Block], x: usize, y: usize) -> usize {
    const SMALL: usize = 24;
    let (a, b) = (&done[x].shingles, &done[y].shingles);
    if a.len() <= SMALL && b.len() <= SMALL {
        let shared: usize = a.iter().map(|x| b.iter().filter(|&y| y == x).count()).sum();
        let all = a.len() + b.len() - shared;
        return (shared * 100).checked_div(all).unwrap_or(0);
    }
    done[x].sort();
    done[y].sort();
    jaccard(&done[x].shingles, &done[y].shingles)
}

/// Whether two blocks can be `percent` alike at all, from the signature
/// bound alone (never rejects a pair that is).
fn may_be_alike(a: &Block, b: &Block, percent: usize) -> bool {
    let bound = a.shared_bound(b).min(b.shingles.len());
    bound * 100 >= percent * (a.shingles.len() + b.shingles.len() - bound)
}

#[derive(Clone, Debug)]
pub(crate) struct ParaphraseLoop {
    copies: usize,
    similarity: usize,
    max_cycle: usize,
    min_words: usize,
    chant_sentences: usize,
    chant_ratio: usize,
    blocks: PerChannel<Blocks>,
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
    // Each block must be three fifths as alike with its counterpart as the
    // copies are with each other (cheap, and most text fails it at once).
    let loose = similarity * 3 / 5;
    for k in 1..=max_cycle {
        // One block said again needs a copy more (the clauses of a list or
        // of claims share their formula block after block), and so does a
        // paragraph of five or six (a clause quoted again with amendments,
        // as an appeal quotes each request's claim 1, is said three times).
        let copies = if k == 1 || k >= 5 { copies + 1 } else { copies };
        let need = copies * k;
        if n < need {
            continue;
        }
        // Each alike position compares 2k blocks, so a run of r positions
        // covers r + 2k - 1 blocks: `enough` positions hold `copies` cycles.
        let enough = (need + 1).saturating_sub(2 * k).max(1);
        // First block by block, from the newest back, each with the block k
        // before: the copies must line up (loosely: a longer exact cycle
        // seen through a shorter window does not). Cheap, and clean text
        // fails it at once (mostly on the signatures alone).
        let mut blockwise = Vec::new();
        while blockwise.len() < enough && blockwise.len() + 2 * k <= n {
            let i = n - 1 - blockwise.len();
            if !may_be_alike(&b.done[i], &b.done[i - k], loose) {
                break;
            }
            let block = block_jaccard(&mut b.done, i, i - k);
            if block < loose {
                break;
            }
            blockwise.push(block);
        }
        // Then copy with copy, where that could be enough: the k blocks
        // ending at i against the k before them (one short sentence may
        // change two of its six words).
        let mut sims = Vec::new();
        if blockwise.len() == enough {
            let (mut ours, mut theirs) = std::mem::take(&mut b.scratch);
            for (run, &block) in blockwise.iter().enumerate() {
                let i = n - 1 - run;
                let s = match (k, b.weighs()) {
                    // Every word weighs the same: the block's own Jaccard.
                    (1, false) => block,
                    (1, true) => {
                        b.done[i].sort();
                        b.done[i - 1].sort();
                        weighted_jaccard(&b.done[i].shingles, &b.done[i - 1].shingles, |x| b.weight(x))
                    }
                    _ => {
                        union_into(&b.done[i + 1 - k..=i], &mut ours);
                        union_into(&b.done[i + 1 - 2 * k..=i - k], &mut theirs);
                        weighted_jaccard(&ours, &theirs, |x| b.weight(x))
                    }
                };
                if s < similarity {
                    break;
                }
                sims.push(s);
            }
            b.scratch = (ours, theirs);
        }
        // The status: blocks in a row alike (block by block where the copies
        // were not compared).
        let run = if blockwise.len() == enough {
            sims.len()
        } else {
            blockwise.len()
        };
        if run + 1 > b.best.1 {
            b.best = (k, run + 1);
        }
        let first = n - need;
        // Or, where the copies are only loosely alike (three words of a
        // short sentence changed), the thought re-said among the same few
        // words (resaid.rs), in prose.
        let resaid = if sims.len() < enough && blockwise.len() == enough {
            resaid::resaid(&mut b.done, k, need, loose).filter(|r| {
                obs.buffers.channel(channel).is_some_and(|text| {
                    b.done[r.from..]
                        .iter()
                        .all(|x| resaid::prose(&text.slice(x.start..x.end)))
                })
            })
        } else {
            None
        };
        if sims.len() < enough && resaid.is_none() {
            continue;
        }
        let stretch = &b.done[first..];
        // Text that repeats exactly (with this cycle or a shorter one, or
        // word for word block by block) is text-loop's to report. Read back
        // from the buffer, only here, where a detection is at stake.
        let folded: Vec<String> = match obs.buffers.channel(channel) {
            Some(text) => stretch
                .iter()
                .map(|x| {
                    text.slice(x.start..x.end)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect(),
            None => Vec::new(),
        };
        let exact = |p: usize| folded.len() == stretch.len() && folded.iter().skip(p).zip(&folded).all(|(x, y)| x == y);
        // Any period up to half the stretch: two lines said in turn (A B A
        // B, seen as a cycle of one) repeat exactly too.
        if (1..=k.max(stretch.len() / 2)).any(exact) || blockwise.iter().all(|&s| s == 100) {
            return None;
        }
        // Items of a list are no thought said again.
        if folded.len() == stretch.len() && enumeration(&folded, k) {
            return None;
        }
        let mut d = Detection::new(INFO.id, obs.index, channel, Some(b.chars));
        d.period = Some(k);
        d.threshold = Some(copies);
        d.evidence = Evidence::Copies;
        let cycle = if k == 1 { "block" } else { "blocks" };
        let percents = |sims: &[usize]| sims.iter().map(|s| format!("{s}%")).collect::<Vec<_>>().join(" ");
        if let Some(r) = resaid {
            let run = &b.done[r.from..];
            d.repeats = Some(run.len() / k);
            d.onset = Some(run[0].start);
            d.spans = run.iter().map(|x| Span::new(x.start, x.end)).collect();
            let low = r.sims.iter().copied().min().unwrap_or(100);
            d.reason = format!(
                "the {} keeps re-saying a cycle of {k} {cycle} with its words changed: {} copies, each block at \
                 least {low}% alike with the one {k} before (needs {loose}%, less than the {similarity}% of a \
                 paraphrase; per block: {}), and the last copy says no word the copies before it had not said at \
                 its place, from char {}",
                channel.as_str(),
                run.len() / k,
                percents(&r.sims),
                run[0].start
            );
            return Some(d);
        }
        d.repeats = Some(copies);
        d.onset = Some(stretch[0].start);
        d.spans = stretch.iter().map(|x| Span::new(x.start, x.end)).collect();
        sims.reverse();
        let low = sims.iter().copied().min().unwrap_or(100);
        d.reason = format!(
            "the {} keeps re-saying a cycle of {k} {cycle} in other words: {copies} copies, each block at least {low}% \
             alike with the one {k} before (needs {similarity}%; per block: {}), from char {}",
            channel.as_str(),
            percents(&sims),
            stretch[0].start
        );
        return Some(d);
    }
    None
}

/// Places at most where the copies of an item of a list differ (a path's
/// last two folders, a field's name and type): three or more changed words
/// are a paraphrase.
const MAX_SLOTS: usize = 2;

/// Whether the copies of every block of the cycle (`folded`: the stretch's
/// blocks, white space folded) are the items of a list: the same words at
/// the same places but for one or two places, where every copy says what
/// no copy before it said there (`jobs/types`, `obsidian/types`,
/// `profiles/types`; `touchesBegan`, `touchesMoved`, `touchesEnded`). A
/// thought said again in other words reuses its words (or changes three or
/// more, or moves them), and a drift of one word that keeps finding new
/// ones is caught a copy later, when one comes back.
fn enumeration(folded: &[String], k: usize) -> bool {
    (0..k).all(|j| {
        let copies: Vec<Vec<String>> = folded.iter().skip(j).step_by(k).map(|b| words(b)).collect();
        let n = copies[0].len();
        if n == 0 || copies.iter().any(|c| c.len() != n) {
            return false;
        }
        let varying: Vec<usize> = (0..n)
            .filter(|&i| copies.iter().any(|c| c[i] != copies[0][i]))
            .collect();
        if varying.is_empty() || varying.len() > MAX_SLOTS {
            return false;
        }
        copies
            .iter()
            .enumerate()
            .skip(1)
            .all(|(x, c)| varying.iter().any(|&i| copies[..x].iter().all(|e| e[i] != c[i])))
    })
}

/// A block's words in order, lowercased (a CJK char is a word).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if blocks::is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

impl TextReader for ParaphraseLoop {
    fn restart(&mut self) {
        self.blocks.each(Blocks::restart);
    }

    fn read(&mut self, channel: Channel, text: &str, obs: &Observation<'_>) -> Option<Detection> {
        let (copies, similarity, max_cycle, min_words) = (self.copies, self.similarity, self.max_cycle, self.min_words);
        let (chant_sentences, chant_ratio) = (self.chant_sentences, self.chant_ratio);
        let keep = 2 * copies * max_cycle;
        self.blocks
            .get_mut(channel)
            .read(text, min_words, keep, |blocks, closed: Closed| {
                let cycle = if closed.block {
                    check(blocks, copies, similarity, max_cycle, channel, obs)
                } else {
                    None
                };
                cycle.or_else(|| {
                    closed
                        .sentence
                        .then(|| chanting(blocks, chant_sentences, chant_ratio, channel, obs))
                        .flatten()
                })
            })
    }
}

/// The newest sentences are a chant of a handful of them.
fn chanting(b: &Blocks, min: usize, ratio: usize, channel: Channel, obs: &Observation<'_>) -> Option<Detection> {
    let (len, distinct) = chant::chant(&b.sentences, min, ratio)?;
    let run: Vec<_> = b.sentences.iter().skip(b.sentences.len() - len).collect();
    let mut d = Detection::new(INFO.id, obs.index, channel, Some(b.chars));
    d.period = Some(distinct);
    d.repeats = Some(len / distinct);
    d.threshold = Some(ratio);
    d.onset = Some(run[0].start);
    d.spans = run.iter().map(|x| Span::new(x.start, x.end)).collect();
    d.evidence = Evidence::Copies;
    let times = format!("{}.{}", len / distinct, len * 10 / distinct % 10);
    d.reason = if distinct == 1 {
        format!(
            "the {} keeps re-saying one sentence: its last {len} sentences are that one (needs {min}, with at most \
             one of every {ratio} new), from char {}",
            channel.as_str(),
            run[0].start
        )
    } else {
        format!(
            "the {} keeps re-saying {distinct} sentences in any order: its last {len} sentences are those, each \
             said {times} times on average (needs {ratio}), from char {}",
            channel.as_str(),
            run[0].start
        )
    };
    Some(d)
}

impl Rule for ParaphraseLoop {
    const ID: &'static str = "paraphrase-loop";
    const KINDS: Kinds = TEXT_KINDS;

    fn observe(&mut self, obs: &Observation<'_>) -> Option<Detection> {
        self.observe_text(obs)
    }

    fn reset(&mut self) {
        TextReader::restart(self);
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
