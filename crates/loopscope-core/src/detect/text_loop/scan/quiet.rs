//! text-loop's quiet path: the common case, stepped through on its own
//! (a function of its own, so that its state stays in registers rather
//! than in the stack slots of the whole hot loop, with the k-gram table
//! as a fixed-size array and the class checks in one table): ASCII that
//! folds nothing, opens no fence, follows no candidate, proposes no period
//! and brings no short period near a loop, so nothing but the state can
//! change. Most text is read here.

use super::{Held, Hot, Kgram, DIGIT, GEAR, LOOKUP, NORMAL, SHORT, SPACE, TABLE, TICK};

/// In [`QUIET`], a byte the quiet path stops before.
const STOP: u16 = 0x8000;

/// Per class of the last char kept (its low bits: a space or a digit) and
/// byte: the byte as the view has it (high byte) and its class (low
/// byte), or [`STOP`] when the general path must take it (not ASCII, a
/// backtick, or a space or digit after one of its class, which folds).
const QUIET: [[u16; 256]; 4] = {
    let mut t = [[STOP; 256]; 4];
    let mut last = 0;
    while last < 4 {
        let mut b = 0;
        while b < 128 {
            let class = super::ASCII[b];
            let folds = class & (SPACE | DIGIT) != 0 && class == last as u8;
            if class != TICK && !folds {
                t[last][b] = (NORMAL[b] as u16) << 8 | class as u16;
            }
            b += 1;
        }
        last += 1;
    }
    t
};

/// Steps through the quiet prefix of `bytes` (the state in `hot`, the text
/// and the k-gram table in `held`); stops before the first char that is
/// not the quiet case. The bytes read.
#[inline(never)]
pub(super) fn quiet_ascii(hot: &mut Hot, held: &mut Held<'_>, bytes: &[u8]) -> usize {
    // The table is made with the ring, before the first char (an empty
    // delta may come first: nothing to read).
    let Ok(seen) = <&mut [u32; TABLE]>::try_from(&mut *held.seen) else {
        return 0;
    };
    let ring = &mut *held.ring;
    let mask = ring.len() - 1;
    let trigger = held.trigger.by_lane;
    // Positions are numbered from the request's origin, wrapping at 32 bits
    // (an entry keeps 24 of them).
    let base = (hot.origin as u32).wrapping_add(1);
    let start = hot.len;
    let (mut i, mut last, mut lanes, mut hash) = (start, hot.last, hot.lanes, hot.hash);
    for &b in bytes {
        let quiet = QUIET[usize::from(last & (SPACE | DIGIT))][usize::from(b)];
        if quiet == STOP {
            break;
        }
        let v = (quiet >> 8) as u8;
        // An ASCII char is its own code.
        let (runs, any) = lanes.next(i, v, &trigger);
        if any {
            break;
        }
        let next_hash = (hash << 4) ^ GEAR[usize::from(v & 0x7F)];
        // A k-gram from the SHORT-th char of the request on; each one is
        // recorded, and looked up at every LOOKUP-th position.
        if i + 1 >= SHORT {
            let kgram = Kgram::of(next_hash);
            let at = base.wrapping_add(i as u32);
            // A k-gram seen `d` back, if that is still in the ring
            // (`d <= mask`: i - d is at or after the ring's first char).
            if i.is_multiple_of(LOOKUP) && kgram.distance(seen[kgram.slot], at).wrapping_sub(1) < i.min(mask) {
                break;
            }
            seen[kgram.slot] = kgram.entry(at);
        }
        ring[i & mask] = u32::from(v);
        lanes.commit(i, v, runs);
        (hash, last) = (next_hash, quiet as u8);
        i += 1;
    }
    let read = i - start;
    if read > 0 {
        hot.ticks = 0;
    }
    (hot.len, hot.last, hot.lanes, hot.hash) = (i, last, lanes, hash);
    read
}

#[cfg(test)]
mod tests {
    use super::super::{Held, Hot, Kgram, Lanes, Triggers, ASCII, GEAR, NORMAL};
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    /// The state the quiet path first kept, besides the text and table:
    /// the codes of the last SHORT chars newest first and the runs by
    /// period (`p - 1`).
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Old {
        len: usize,
        last: u8,
        codes: [u8; SHORT],
        runs: [u8; SHORT],
        hash: u64,
    }

    /// The lanes as [`Lanes`] lays them out at position `len`.
    fn lanes_of(old: &Old) -> Lanes {
        let mut lanes = Lanes::default();
        for k in (0..SHORT).rev() {
            // The code k + 1 back, at position len - 1 - k (or before the request: 0).
            let at = old.len.wrapping_sub(1 + k);
            let (runs, _) = lanes.next(at, old.codes[k], &[u8::MAX; SHORT]);
            lanes.commit(at, old.codes[k], runs);
        }
        let mut runs = [0; SHORT];
        for p in 1..=SHORT {
            runs[SHORT - p] = old.runs[p - 1];
        }
        lanes.commit(old.len.wrapping_sub(1), old.codes[0], runs);
        lanes
    }

    /// The old layout read back from [`Lanes`] at position `len`.
    fn old_of(hot: &Hot) -> Old {
        let lanes = hot.lanes;
        let at = hot.len % SHORT;
        let window = &lanes.codes[at..at + SHORT];
        Old {
            len: hot.len,
            last: hot.last,
            codes: std::array::from_fn(|k| window[SHORT - 1 - k]),
            runs: std::array::from_fn(|k| lanes.runs[SHORT - 1 - k]),
            hash: hot.hash,
        }
    }

    /// One step of the lanes as first written: the codes shifted, newest first.
    fn lanes_step(
        old: [u8; SHORT],
        mut runs: [u8; SHORT],
        cv: u8,
        trigger: &[u8; SHORT],
    ) -> ([u8; SHORT], [u8; SHORT], bool) {
        let mut any = 0u8;
        for k in 0..SHORT {
            let equal = 0u8.wrapping_sub(u8::from(old[k] == cv));
            runs[k] = runs[k].saturating_add(1) & equal;
            any |= u8::from(runs[k] >= trigger[k]);
        }
        let mut shifted = [0u8; SHORT];
        shifted[1..].copy_from_slice(&old[..SHORT - 1]);
        shifted[0] = cv;
        (shifted, runs, any != 0)
    }

    /// The quiet path as it was first written, char by char inside the hot
    /// loop: what the fast one must do exactly.
    fn reference(
        old: &mut Old,
        origin: u64,
        trigger: &[u8; SHORT],
        seen: &mut [u32],
        ring: &mut [u32],
        bytes: &[u8],
    ) -> usize {
        let (mut i, mut last, mut codes, mut lanes, mut hash) = (old.len, old.last, old.codes, old.runs, old.hash);
        let base = (origin as u32).wrapping_add(1);
        let (mask, held_len) = (ring.len() - 1, ring.len());
        let mut read = bytes.len();
        for (k, &b) in bytes.iter().enumerate() {
            if b >= 0x80 {
                read = k;
                break;
            }
            let class = ASCII[usize::from(b)];
            if (class == TICK) | ((class & (SPACE | DIGIT) != 0) & (class == last)) {
                read = k;
                break;
            }
            let v = NORMAL[usize::from(b)];
            let (next_codes, next_lanes, any) = lanes_step(codes, lanes, v, trigger);
            if any {
                read = k;
                break;
            }
            let next_hash = (hash << 4) ^ GEAR[usize::from(v)];
            let kgram = Kgram::of(next_hash);
            let at = base.wrapping_add(i as u32);
            if i + 1 >= SHORT && i.is_multiple_of(LOOKUP) {
                let d = kgram.distance(seen[kgram.slot], at);
                if d > 0 && d <= i && i - d >= (i + 1).saturating_sub(held_len) {
                    read = k;
                    break;
                }
            }
            ring[i & mask] = u32::from(v);
            if i + 1 >= SHORT {
                seen[kgram.slot] = kgram.entry(at);
            }
            (codes, lanes, hash, last) = (next_codes, next_lanes, next_hash, class);
            i += 1;
        }
        *old = Old {
            len: i,
            last,
            codes,
            runs: lanes,
            hash,
        };
        read
    }

    /// A state as the hot loop may leave it: any position, class, codes
    /// and runs below their triggers, a table of any entries, and the
    /// triggers.
    fn state() -> impl Strategy<Value = (Old, u64, Vec<u32>, Vec<u32>, [u8; SHORT])> {
        (
            0usize..3000,
            prop_oneof![Just(0u8), Just(SPACE), Just(DIGIT), Just(TICK)],
            prop::array::uniform16(prop_oneof![Just(b'a'), Just(b'b'), Just(b' '), Just(b'0'), any::<u8>()]),
            prop::array::uniform16(0u8..8),
            any::<u64>(),
            0u64..5000,
            prop::collection::vec(any::<u32>(), TABLE),
            prop::collection::vec(
                prop_oneof![Just(u32::from(b'a')), Just(u32::from(b' ')), 0u32..200],
                1024,
            ),
        )
            .prop_map(|(len, last, codes, runs, hash, origin, seen, ring)| {
                // Triggers above every run: a state the quiet path may start in.
                let trigger = std::array::from_fn(|k| [39, 4, 6, 8, 10][k.min(4)].max(runs[k] + 1));
                (
                    Old {
                        len,
                        last,
                        codes,
                        runs,
                        hash,
                    },
                    origin,
                    seen,
                    ring,
                    trigger,
                )
            })
    }

    #[test]
    fn an_empty_delta_first_reads_nothing() {
        let mut stream = super::super::Stream::default();
        let triggers = Triggers::new([9; SHORT]);
        for text in ["", "", "abc", ""] {
            assert!(stream.read(text, 5000, &triggers, |_| 3, |_, _, _, _| None).is_none());
        }
        assert_eq!(stream.first(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The quiet path stops where it always did and leaves the same
        /// state, text and table, whatever the state it starts in.
        #[test]
        fn the_fast_quiet_path_does_what_it_did(
            (old, origin, seen, ring, trigger) in state(),
            text in "([a-z]{1,8}[ .,]|ab|abab|aaaa|[0-9] |`|  |é|\\PC){0,60}",
            plant in any::<bool>(),
        ) {
            let mut seen = seen;
            // Entries that propose: the k-grams of the text itself, a little back.
            if plant {
                let mut h = old.hash;
                for (k, b) in text.bytes().filter(|b| *b < 0x80).enumerate() {
                    h = (h << 4) ^ GEAR[usize::from(NORMAL[usize::from(b)])];
                    let at = (origin as u32).wrapping_add(1).wrapping_add((old.len + k) as u32);
                    let kgram = Kgram::of(h);
                    seen[kgram.slot] = kgram.entry(at.wrapping_sub(7 + (k as u32 % 40)));
                }
            }
            let (mut ref_state, mut ref_seen, mut ref_ring) = (old, seen.clone(), ring.clone());
            let ref_read = reference(&mut ref_state, origin, &trigger, &mut ref_seen, &mut ref_ring, text.as_bytes());

            let mut hot = Hot { len: old.len, last: old.last, lanes: lanes_of(&old), hash: old.hash, origin, ..Hot::default() };
            prop_assert_eq!(old_of(&hot), old, "the layouts convert");
            let (mut seen, mut ring) = (seen, ring);
            let triggers = Triggers::new(trigger);
            let (mut candidates, mut exact, mut skews, mut best) = (Vec::new(), [0; SHORT], VecDeque::new(), (0, 0));
            let mut held = Held {
                ring: &mut ring,
                seen: &mut seen,
                candidates: &mut candidates,
                exact: &mut exact,
                trigger: &triggers,
                skews: &mut skews,
                best: &mut best,
                max_period: 5000,
            };
            let read = quiet_ascii(&mut hot, &mut held, text.as_bytes());
            prop_assert_eq!(read, ref_read);
            prop_assert_eq!(old_of(&hot), ref_state);
            prop_assert!(seen == ref_seen, "k-gram tables differ");
            prop_assert!(ring == ref_ring, "rings differ");
        }
    }
}
