//! The popcount twin and the fast path's words against char-by-char reading.

use super::*;

#[test]
fn bits_set_counts_like_count_ones() {
    let mut x = 0x9E37_79B9_7F4A_7C15_u128;
    for shift in 0..130 {
        for v in [0, u128::MAX, 1u128 << (shift % 128), x, !x, x >> shift.min(127)] {
            assert_eq!(bits_set(v), v.count_ones() as usize, "{v:#x}");
        }
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (x >> 17);
    }
}

/// The words of text with no block end, char by char: runs of letters
/// and digits, lowercased, folded.
fn reference_words(text: &str) -> Vec<u64> {
    let mut words = Vec::new();
    let mut word = None;
    for c in text.chars() {
        if c.is_alphanumeric() {
            let w = c.to_lowercase().fold(word.unwrap_or(0), |w, l| fold(w, u32::from(l)));
            word = Some(w);
        } else if let Some(w) = word.take() {
            words.push(w);
        }
    }
    words.extend(word);
    words
}

proptest::proptest! {
    /// However a text is cut into deltas, the open block holds its
    /// words as read char by char (the fast path writes them straight
    /// into the block's list, a word that ends in a delta's last byte
    /// or the next delta's first included).
    #[test]
    fn words_are_read_as_char_by_char_whatever_the_cuts(
        pieces in proptest::collection::vec(
            proptest::sample::select(vec!["a", "Zz", "q9", "7", " ", "  ", ",", "-", "é", "Ü", "\u{a0}", "\t", "x1y", "(", "')"]),
            0..300,
        ),
        cuts in proptest::collection::vec(1usize..40, 1..20),
    ) {
        let text: String = pieces.concat();
        let mut blocks = Blocks::default();
        let (mut at, mut k) = (0, 0);
        while at < text.len() {
            let mut end = (at + cuts[k % cuts.len()]).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            blocks.read(&text[at..end], 1, 8, |_, _| None);
            (at, k) = (end, k + 1);
        }
        let mut words = blocks.open.words.clone();
        if blocks.open.in_word {
            words.push(blocks.open.word);
        }
        proptest::prop_assert_eq!(words, reference_words(&text));
    }
}
