//! qwen-code's content history (`qwen-chant`): one history of UTF-16 units
//! shared by content and reasoning, a 4000-unit window, 50-unit chunks, and
//! two rules — clustered (10 occurrences at most 75 apart on average) and
//! periodic (equal strides verified over at least 1000 units).

const CHUNK: usize = 50;
const WINDOW: usize = 4000;
const CLUSTER: usize = 10;
const MAX_AVG_DISTANCE: usize = 75;
const MIN_REGION: usize = 1000;
/// Physically kept beyond the window before trimming (qwen keeps up to
/// 5000 and trims to 4000; only the window is ever looked at).
const KEEP: usize = 8000;

/// Why the history fired.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rule {
    Clustered { avg_distance: f64 },
    Periodic { stride: usize, region: (usize, usize) },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Chant {
    pub chunk: String,
    /// Positions (UTF-16 units since the last content reset).
    pub positions: Vec<usize>,
    pub rule: Rule,
}

/// The history's memory of chunks: what qwen keeps as a map from each
/// chunk's hash to its positions, as chains instead — every position links
/// to the previous position whose hash fell in the same bucket — with no
/// list (or allocation) per chunk. An entry packs a position with its
/// hash's tag, so one load both ends a chain that left the window and
/// skips positions of other chunks. Only the window is ever looked at, so
/// only the last `RING` positions keep their links.
#[derive(Clone, Debug, Default)]
struct Chains {
    /// Bucket -> the latest entry whose hash fell in it.
    head: Vec<u64>,
    /// `position % RING` -> the entry its bucket held before it.
    link: Vec<u64>,
}

/// Chunk starts in a window: fewer than `WINDOW`, so a link within the
/// window is never overwritten.
const RING: usize = 4096;
const BUCKET_BITS: u32 = 14;
const TAG_BITS: u32 = 24;
const TAG: u64 = (1 << TAG_BITS) - 1;
/// No entry (no position reaches it).
const EMPTY: u64 = u64::MAX;

impl Chains {
    fn ready(&mut self) {
        if self.head.is_empty() {
            self.head = vec![EMPTY; 1 << BUCKET_BITS];
            self.link = vec![EMPTY; RING];
        }
    }

    /// Records position `i` with hash `key`; returns the entry before it
    /// in its bucket.
    fn insert(&mut self, key: u64, i: usize) -> u64 {
        let b = (key >> (64 - BUCKET_BITS)) as usize;
        let entry = ((i as u64) << TAG_BITS) | (key & TAG);
        let previous = std::mem::replace(&mut self.head[b], entry);
        self.link[i % RING] = previous;
        previous
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct History {
    /// Units from `base` on (positions are counted since the last reset).
    units: Vec<u16>,
    base: usize,
    /// Units appended since the last reset.
    len: usize,
    index: usize,
    chains: Chains,
    /// The rolling hash of the chunk at `hashed.0`, when it is known.
    hashed: Option<(usize, u64)>,
    /// Reused for the positions of the chunk being looked at.
    found: Vec<usize>,
}

/// A polynomial hash of 50 units, rolled one unit at a time; mixed before
/// it is used as a key so the table's buckets spread.
const BASE: u64 = 0x100_0000_01B3;

fn hash(chunk: &[u16]) -> u64 {
    chunk
        .iter()
        .fold(0, |h, &u| h.wrapping_mul(BASE).wrapping_add(u64::from(u) + 1))
}

/// `BASE` to the power `CHUNK - 1`: the weight of the unit that leaves.
const LEAVING: u64 = {
    let mut w = 1u64;
    let mut k = 1;
    while k < CHUNK {
        w = w.wrapping_mul(BASE);
        k += 1;
    }
    w
};

fn mixed(h: u64) -> u64 {
    let h = (h ^ (h >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

impl History {
    pub(crate) fn reset(&mut self) {
        *self = History::default();
    }

    fn window_start(&self) -> usize {
        self.len.saturating_sub(WINDOW)
    }

    /// At least a window's worth appended since the last reset.
    fn saturated(&self) -> bool {
        self.len >= WINDOW
    }

    fn at(&self, pos: usize) -> &[u16] {
        &self.units[pos - self.base..pos - self.base + CHUNK]
    }

    fn unit(&self, pos: usize) -> u16 {
        self.units[pos - self.base]
    }

    /// The hash of the chunk at `i`: rolled from the one before when it
    /// was the last computed, else computed whole.
    fn hash_at(&mut self, i: usize) -> u64 {
        let h = match self.hashed {
            Some((j, h)) if j + 1 == i => {
                let out = u64::from(self.unit(j)) + 1;
                let inn = u64::from(self.unit(i + CHUNK - 1)) + 1;
                h.wrapping_sub(out.wrapping_mul(LEAVING))
                    .wrapping_mul(BASE)
                    .wrapping_add(inn)
            }
            Some((j, h)) if j == i => h,
            _ => hash(self.at(i)),
        };
        self.hashed = Some((i, h));
        h
    }

    /// Appends `text` and analyses the new chunks; the first rule that
    /// holds stops the analysis (qwen latches then).
    pub(crate) fn append(&mut self, text: &str) -> Option<Chant> {
        // A UTF-16 text has at most as many units as UTF-8 bytes.
        self.units.reserve(text.len());
        self.units.extend(text.encode_utf16());
        self.len = self.base + self.units.len();
        let ws = self.window_start();
        if ws > self.base + KEEP {
            // Keep the unit before the window too: the rolling hash lets it go.
            let cut = ws - 1 - self.base;
            self.units.drain(..cut);
            self.base += cut;
        }
        self.chains.ready();
        self.index = self.index.max(ws);
        while self.index + CHUNK <= self.len {
            let i = self.index;
            let key = mixed(self.hash_at(i));
            // The earlier positions of this chunk in the window, oldest first.
            let mut found = std::mem::take(&mut self.found);
            found.clear();
            let mut entry = self.chains.insert(key, i);
            while entry != EMPTY {
                let p = (entry >> TAG_BITS) as usize;
                if p < ws {
                    break;
                }
                if entry & TAG == key & TAG && self.at(p) == self.at(i) {
                    found.push(p);
                }
                entry = self.chains.link[p % RING];
            }
            // Under test, every seventh chunk is also looked up by brute force.
            #[cfg(test)]
            if i.is_multiple_of(7) {
                assert_eq!(
                    found.iter().rev().copied().collect::<Vec<_>>(),
                    (ws..i).filter(|&p| self.at(p) == self.at(i)).collect::<Vec<_>>(),
                    "the chains and a search of the whole window disagree at {i}"
                );
            }
            if found.is_empty() {
                self.found = found;
                self.index += 1;
                continue;
            }
            found.reverse();
            found.push(i);
            if let Some(rule) = self.rules(&found) {
                return Some(Chant {
                    chunk: String::from_utf16_lossy(self.at(i)),
                    positions: found,
                    rule,
                });
            }
            self.found = found;
            self.index += 1;
        }
        None
    }

    fn rules(&self, p: &[usize]) -> Option<Rule> {
        if p.len() >= CLUSTER {
            let last = &p[p.len() - CLUSTER..];
            let span = last[CLUSTER - 1] - last[0];
            if span <= MAX_AVG_DISTANCE * (CLUSTER - 1) {
                return Some(Rule::Clustered {
                    avg_distance: span as f64 / (CLUSTER - 1) as f64,
                });
            }
        }
        if p.len() < 3 {
            return None;
        }
        let n = p.len();
        let stride = p[n - 1] - p[n - 2];
        let mut f = n - 2;
        while f > 0 && p[f] - p[f - 1] == stride {
            f -= 1;
        }
        let m = n - f;
        let end = p[n - 1] + CHUNK;
        let start = if m >= 5 {
            p[f]
        } else if m >= 3 && self.saturated() {
            self.window_start()
        } else {
            return None;
        };
        if stride == 0 || end - start < MIN_REGION || start < self.base {
            return None;
        }
        let periodic = (start..end.saturating_sub(stride)).all(|i| self.unit(i) == self.unit(i + stride));
        periodic.then_some(Rule::Periodic {
            stride,
            region: (start, end),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 16, max_shrink_iters: 64, ..Default::default() })]

        /// Every chunk's earlier positions, found through the chains, are
        /// the ones a search of the whole window finds (asserted inside
        /// `append` under test), over texts full of repeats — a tiny
        /// alphabet, periodic stretches, CJK and emoji (two units) — fed
        /// in deltas of any size, past the window and the trimming.
        #[test]
        fn chains_find_what_a_search_of_the_window_finds(
            pieces in proptest::collection::vec((0u8..5, 1usize..400), 1..30)
        ) {
            // Letters from a xorshift walk: no repeats but the motif's.
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            let mut letters = |n: usize, from: &[char]| -> String {
                (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        from[(x % from.len() as u64) as usize]
                    })
                    .collect()
            };
            let latin: Vec<char> = ('a'..='z').collect();
            let wide = ['思', '考', '问', '题', '🤔', '🎉'];
            let motif = "a motif of sixty-odd units that comes back now and then, far apart";
            let mut h = History::default();
            for (kind, n) in pieces {
                let text: String = match kind {
                    0 => letters(n * 5, &latin),
                    1 => motif.to_string(),
                    2 => letters(n, &wide),
                    3 => "ab".repeat(n),
                    _ => format!("{}{motif}", letters(n, &latin)),
                };
                if h.append(&text).is_some() {
                    h.reset();
                }
            }
        }
    }

    #[test]
    fn a_short_unit_fires_on_its_tenth_occurrence() {
        // A unit without inner repeats: a pseudo-random walk over letters.
        let unit = |n: usize| -> String {
            let mut x = 7u32;
            (0..n)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    char::from(b'a' + ((x >> 16) % 26) as u8)
                })
                .collect()
        };
        let mut h = History::default();
        let short = unit(60);
        let fired: Vec<bool> = (0..10).map(|_| h.append(&short).is_some()).collect();
        assert_eq!(
            fired.iter().position(|f| *f),
            Some(9),
            "the 10th copy of a 60-unit unit"
        );
        // A 200-unit unit needs a 1000-unit verified periodic region.
        let mut h = History::default();
        let unit = unit(200);
        let fired: Vec<bool> = (0..6).map(|_| h.append(&unit).is_some()).collect();
        assert_eq!(fired, vec![false, false, false, false, false, true], "the 6th copy");
    }
}
