//! paraphrase-loop's chant rule: a handful of sentences said again and
//! again in any order ("Doing it now. Starting. Let me begin. Doing it.").
//! Neither a periodic tail (the order is random) nor a paraphrase of a
//! block (each sentence is said exactly), but a vocabulary of sentences far
//! smaller than any text has: the newest `n` sentences (outside code and
//! tables) hold at most `n / ratio` distinct ones, in no fixed order (said
//! in one order, or one sentence over and over, they repeat exactly: that
//! is text-loop's).

use std::collections::VecDeque;

use super::blocks::Sentence;

/// Distinct sentences a chant has at most: as many as the sentences held
/// allow at the default ratio (48 / 3). A model can chant a dozen
/// variations ("I'll do it. I'll implement it. I'll start. I'll begin
/// coding. I'll write the code...", can1357/oh-my-pi#8701), more than the
/// handful of eight this was; clean prose, long as it may be, says few of
/// its sentences twice, let alone each of them three times on average.
const MOST: usize = super::blocks::SENTENCES / 3;

/// The longest run of the newest sentences, at least `min` of them, with at
/// most `len / ratio` distinct ones: (sentences, distinct). Only when the
/// newest sentence was said before among those held (clean text passes
/// that test rarely, and never for long).
pub(super) fn chant(sentences: &VecDeque<Sentence>, min: usize, ratio: usize) -> Option<(usize, usize)> {
    let newest = sentences.back()?;
    let n = sentences.len();
    if n < min || !sentences.iter().take(n - 1).any(|s| s.key == newest.key) {
        return None;
    }
    let mut distinct: Vec<u64> = Vec::with_capacity(MOST);
    let mut found = None;
    for (len, s) in sentences.iter().rev().enumerate().map(|(i, s)| (i + 1, s)) {
        if !distinct.contains(&s.key) {
            // A run that has more than what `n` sentences allow cannot come back within them.
            if (distinct.len() + 1) * ratio > n || distinct.len() == MOST {
                break;
            }
            distinct.push(s.key);
        }
        if len >= min && len >= ratio * distinct.len() {
            found = Some(len);
        }
    }
    // The run starts at a sentence it says again (one said once is the text before).
    let mut len = found?;
    let run = |len: usize| sentences.iter().skip(n - len);
    while len > 0
        && run(len)
            .filter(|s| s.key == run(len).next().expect("a run").key)
            .count()
            == 1
    {
        len -= 1;
    }
    let said: Vec<u64> = run(len).map(|s| s.key).collect();
    let mut keys = said.clone();
    keys.sort_unstable();
    keys.dedup();
    // Sentences said in a fixed order repeat exactly (one said again and
    // again too): that is text-loop's, and so is a run that ends in `ratio`
    // copies of a cycle said in a fixed order (the sentences before it, said
    // once or twice, are no chant: they are the text the loop came after,
    // which a run of up to 16 distinct sentences can take in).
    let periodic = (1..=keys.len()).any(|p| (p..said.len()).all(|i| said[i] == said[i - p]));
    let ends_periodic = (1..=keys.len())
        .any(|p| ratio * p <= said.len() && (said.len() + p - ratio * p..said.len()).all(|i| said[i] == said[i - p]));
    (len >= min && !periodic && !ends_periodic).then_some((len, keys.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(keys: &[u64]) -> VecDeque<Sentence> {
        keys.iter()
            .enumerate()
            .map(|(i, &key)| Sentence {
                key,
                start: 10 * i,
                end: 10 * i + 9,
            })
            .collect()
    }

    #[test]
    fn a_handful_said_over_and_over_in_any_order() {
        // Three sentences in a random order, nine times: a chant.
        assert_eq!(chant(&said(&[1, 2, 3, 2, 1, 1, 3, 2, 3]), 9, 3), Some((9, 3)));
        // After clean sentences, the chant's run only.
        assert_eq!(
            chant(&said(&[10, 11, 12, 13, 1, 2, 1, 1, 2, 2, 1, 2, 2]), 9, 3),
            Some((9, 2))
        );
        // In a fixed order they are text-loop's.
        assert_eq!(chant(&said(&[1, 2, 3, 1, 2, 3, 1, 2, 3]), 9, 3), None);
        // Eight are too few; nine distinct or nearly so are text.
        assert_eq!(chant(&said(&[1, 2, 1, 2, 1, 2, 1, 2]), 9, 3), None);
        assert_eq!(chant(&said(&[1, 2, 3, 4, 5, 6, 7, 8, 1]), 9, 3), None);
        // The newest sentence must be a repeat.
        assert_eq!(chant(&said(&[1, 2, 1, 2, 1, 2, 1, 2, 1, 9]), 9, 3), None);
        // A dozen sentences said three times each, in any order: a long chant.
        let mut long: Vec<u64> = Vec::new();
        for round in 0..3u64 {
            long.extend((0..12u64).map(|i| (i * 5 + round * 7) % 12 + 1));
        }
        assert_eq!(chant(&said(&long), 9, 3), Some((36, 12)));
        // Sentences the loop came after, then a cycle of two said in a
        // fixed order: text-loop's, not a chant of eleven.
        let mut after: Vec<u64> = vec![10, 11, 12, 10, 13, 14, 15, 16, 17, 18, 19, 11];
        after.extend([1, 2].repeat(12));
        assert_eq!(chant(&said(&after), 9, 3), None);
        // Seventeen are more than the sentences held can show three times.
        let many: Vec<u64> = (0..48u64).map(|i| (i * 5) % 17 + 1).collect();
        assert_eq!(chant(&said(&many), 9, 3), None);
    }
}
