use super::*;
use proptest::prelude::*;

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

/// Pieces of text: words short and long, white space of every kind, what
/// ends blocks, backticks and bars, CJK, emoji and other letters.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9]{1,20}",
        2 => prop::sample::select(vec![" ", "  ", "\t", "\r\n", "\n", "\u{a0}", "\u{3000}"]).prop_map(str::to_string),
        2 => prop::sample::select(vec![".", "!", "?", ";", ",", "(12). ", "`", "```", "|", "| a | b |"])
            .prop_map(str::to_string),
        1 => prop::sample::select(vec!["思考", "。", "한국어", "カタカナ", "🙂", "é", "İstanbul", "naïve"])
            .prop_map(str::to_string),
    ]
}

proptest! {
    /// The chant key built as words come (in the byte loop, at a word's
    /// end, at a CJK pair) is the key of the block's words in order, as
    /// it was computed when the block closed: every block's, in any cut.
    #[test]
    fn the_key_built_as_words_come_is_the_key_of_the_words(
        pieces in prop::collection::vec(piece(), 1..60),
        cut in 1usize..30,
    ) {
        let text: String = pieces.concat();
        let chars: Vec<char> = text.chars().collect();
        let mut blocks = Blocks::default();
        for delta in chars.chunks(cut).map(|c| c.iter().collect::<String>()) {
            blocks.read(&delta, 1, 8, |_, _| None);
            // (A table row has no key: its words are cells.)
            let open = &blocks.open;
            if !open.row {
                let want = open.words.iter().fold(0, |key, &w| chain(key, w));
                prop_assert_eq!(open.key, want);
            }
        }
    }
}
