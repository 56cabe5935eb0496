//! The native reader never panics and never depends on how input is split.

use loopscope::formats::native::NativeDecoder;
use loopscope::formats::{Decoded, Decoder, Item};
use proptest::prelude::*;

fn feed_in_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Item> {
    let mut dec = NativeDecoder::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    for c in cuts {
        dec.feed(&bytes[at..c.max(at)], &mut out);
        at = c.max(at);
    }
    dec.feed(&bytes[at..], &mut out);
    dec.finish(&mut out);
    out
}

const SAMPLE: &str = "{\"type\":\"prompt\",\"text\":\"修复\"}\n{\"type\":\"reasoning\",\"text\":\"🙂 a\"}\r\nnot json\n\n{\"type\":\"tool_call\",\"name\":\"t\",\"args\":{\"b\":1,\"a\":2}}\n{\"type\":\"content\",\"text\":\"end\"}";

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let d = Decoded::from_bytes(&bytes, &mut NativeDecoder::new());
        let lines = bytes.split(|&b| b == b'\n').count() as u64;
        prop_assert!(d.problems.iter().all(|p| p.line >= 1 && p.line <= lines));
    }

    #[test]
    fn splitting_the_input_anywhere_gives_the_same_items(cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let whole = feed_in_pieces(SAMPLE.as_bytes(), &[]);
        prop_assert_eq!(feed_in_pieces(SAMPLE.as_bytes(), &cuts), whole);
    }

    #[test]
    fn truncated_files_keep_every_complete_line(cut in 0usize..SAMPLE.len()) {
        let bytes = &SAMPLE.as_bytes()[..cut];
        let d = Decoded::from_bytes(bytes, &mut NativeDecoder::new());
        // The lines before the cut are read exactly; the cut line adds at most one item.
        let whole_lines = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let complete = Decoded::from_bytes(&bytes[..whole_lines], &mut NativeDecoder::new());
        prop_assert_eq!(&d.events[..complete.events.len()], &complete.events[..]);
        prop_assert_eq!(&d.problems[..complete.problems.len()], &complete.problems[..]);
        prop_assert!(d.events.len() + d.problems.len() <= complete.events.len() + complete.problems.len() + 1);
    }
}

#[test]
fn sample_reads_as_expected() {
    let d = Decoded::from_bytes(SAMPLE.as_bytes(), &mut NativeDecoder::new());
    assert_eq!(d.events.len(), 4);
    assert_eq!(d.problems.len(), 1);
    assert_eq!(d.problems[0].line, 3);
}
