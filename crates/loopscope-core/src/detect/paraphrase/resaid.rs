//! paraphrase-loop's re-said rule: a thought said again and again with
//! three or more words of each short sentence changed, which leaves each
//! copy under `similarity` alike with the one before ("Wait, the last row
//! has 51 columns." / "Actually, the final line has 51 cells."), yet the
//! copies keep drawing their words from the same few synonyms. Such a loop
//! is a run of copies each *loosely* alike with the one before (three
//! fifths of `similarity`) whose newest copy says no word that the copies
//! before it had not said at its place in the cycle. A list, a form letter
//! or a drift that keeps finding new words brings a new word with every
//! item, so its newest copy never passes; a drift that runs out of new
//! words is caught when one comes back.

use super::blocks::Block;
use super::{block_jaccard, may_be_alike};

/// A run of loosely alike copies whose newest copy said nothing new.
pub(super) struct Resaid {
    /// Index (in the blocks kept) of the run's first block.
    pub(super) from: usize,
    /// Each block's similarity with the one a cycle before, oldest first.
    pub(super) sims: Vec<usize>,
}

/// The run of blocks ending with the newest, each at least `loose` alike
/// with the block `k` before it, as far back as the blocks kept go: a loop
/// when it holds at least `need` blocks (the copies the rule asks for) and
/// its newest copy says only what the copies before it said.
pub(super) fn resaid(done: &mut [Block], k: usize, need: usize, loose: usize) -> Option<Resaid> {
    let n = done.len();
    let mut sims = Vec::new();
    // Each block from the newest back, against the block a cycle before.
    while sims.len() + k < n {
        let i = n - 1 - sims.len();
        if !may_be_alike(&done[i], &done[i - k], loose) {
            break;
        }
        let s = block_jaccard(done, i, i - k);
        if s < loose {
            break;
        }
        sims.push(s);
    }
    // r alike blocks and the k before the first of them.
    let from = n - sims.len() - k;
    if n - from < need || !said_before(&done[from..], k) {
        return None;
    }
    sims.reverse();
    Some(Resaid { from, sims })
}

/// Whether the newest copy of a cycle of `k` blocks (the last `k` of
/// `run`, a run of loosely alike copies) says only words (shingles) that
/// the copies before it in the run said: each of its blocks only what the
/// blocks at its place in the cycle said.
fn said_before(run: &[Block], k: usize) -> bool {
    let mut said: Vec<u64> = Vec::new();
    (run.len() - k..run.len()).all(|newest| {
        said.clear();
        let mut at = newest;
        while at >= k {
            at -= k;
            said.extend_from_slice(&run[at].shingles);
        }
        said.sort_unstable();
        run[newest].shingles.iter().all(|x| said.binary_search(x).is_ok())
    })
}

/// Whether blocks of text are prose: no inline code, path or identifier (a
/// backtick, a slash or backslash, an underscore). A list of paths or names
/// is built from the same parts over and over (`spotter_web/live/session_live`,
/// `test/spotter_web/live/session_live_test`): each item names another
/// thing in words the list has said before, and says no thought again.
/// (Loops that quote code are left to the other rules, which compare
/// copies more strictly.)
pub(super) fn prose(text: &str) -> bool {
    !text.contains(['`', '/', '\\', '_'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(words: &[u64]) -> Block {
        Block::for_test(words)
    }

    #[test]
    fn the_newest_copy_must_say_nothing_new() {
        // A B (cycle 2), then copies with words swapped among synonyms.
        let run = [
            block(&[1, 2, 3, 4, 5, 6]),
            block(&[10, 11, 12, 13, 14, 15]),
            block(&[1, 2, 7, 4, 8, 6]),
            block(&[10, 11, 16, 13, 17, 15]),
            block(&[1, 2, 7, 4, 5, 6]),
            block(&[10, 11, 12, 13, 17, 15]),
        ];
        assert!(said_before(&run, 2));
        // A word at the other place of the cycle is no word said before.
        let mut moved = run.clone();
        moved[5] = block(&[10, 11, 12, 13, 3, 15]);
        assert!(!said_before(&moved, 2));
    }

    #[test]
    fn a_run_needs_the_copies_and_nothing_new() {
        // Four copies of one block, three of its six words changed each time
        // among the same synonyms (50 % alike, under 55 %, over 33 %).
        let copies = [
            block(&[1, 2, 3, 4, 5, 6]),
            block(&[1, 2, 3, 7, 8, 9]),
            block(&[1, 2, 3, 4, 5, 6]),
            block(&[1, 2, 3, 7, 8, 9]),
        ];
        let mut done = copies.to_vec();
        let found = resaid(&mut done, 1, 4, 33).expect("four copies, the last said before");
        assert_eq!((found.from, found.sims), (0, vec![33, 33, 33]));
        // Three copies are fewer than the four a cycle of one needs.
        assert!(resaid(&mut done[1..].to_vec(), 1, 4, 33).is_none());
        // A list brings a new word with each item.
        let mut list = vec![
            block(&[1, 2, 3, 4, 5, 6]),
            block(&[1, 2, 3, 4, 5, 7]),
            block(&[1, 2, 3, 4, 5, 8]),
            block(&[1, 2, 3, 4, 5, 9]),
        ];
        assert!(resaid(&mut list, 1, 4, 33).is_none());
        // Where the copies stop being alike, the run stops.
        let mut late = vec![block(&[20, 21, 22, 23, 24, 25])];
        late.extend(copies.iter().cloned());
        assert_eq!(resaid(&mut late, 1, 4, 33).map(|r| r.from), Some(1));
    }

    #[test]
    fn paths_and_code_are_no_prose() {
        assert!(prose("Wait, the last row has 51 columns."));
        assert!(prose("等等，最后一行有 51 列。"));
        for text in ["- `lib/a.ex` (3 lines)", "see src\\main.rs", "the field last_enc_ms"] {
            assert!(!prose(text), "{text}");
        }
    }
}
