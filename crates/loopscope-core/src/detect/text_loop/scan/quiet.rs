//! text-loop's quiet path: the common case of a channel's text (ASCII
//! that opens no fence, proposes and follows no period and brings no short
//! period near a loop; runs of spaces and digits folded on the way)
//! stepped with its state in registers. The general path takes every char
//! it stops at.

use super::super::lanes::Splat;
use super::{fold, gear, Held, Hot, Kgram, Triggers, CLASS, DIGIT, LOOKUP, NORMAL, SHORT, SPACE, TABLE, TICK};

/// What the quiet path needs of an ASCII byte, in one table (one base
/// register instead of three keeps its state in registers).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Byte {
    /// The view char in every lane.
    splat: Splat,
    /// `gear` of the view char.
    gear: u64,
    class: u8,
    view: u8,
}

const BYTES: [Byte; 128] = {
    let mut t = [Byte {
        splat: Splat::of(0),
        gear: 0,
        class: 0,
        view: 0,
    }; 128];
    let mut b = 0;
    while b < 128 {
        let v = NORMAL[b];
        t[b] = Byte {
            splat: Splat::of(v),
            gear: gear(v as u32),
            class: CLASS[b],
            view: v,
        };
        b += 1;
    }
    t
};

/// The common case, stepped through with its state in locals: ASCII that
/// opens no fence, follows no candidate, proposes no period and brings no
/// short period near a loop, so nothing but the state and the folds can
/// change. Stops before the first char that is not that case (the general
/// path takes it); the bytes read. Positions before SHORT - 1 (no k-gram
/// yet) are the general path's.
pub(super) fn quiet_ascii(hot: &mut Hot, held: &mut Held<'_>, bytes: &[u8]) -> usize {
    let mut read = 0;
    loop {
        read += quiet_run(hot, held.ring, held.seen, held.trigger, &bytes[read..]);
        // A space or a digit after one of its class: folded away with the
        // ones of its class after it.
        let Some(&b) = bytes.get(read) else {
            break;
        };
        let class = CLASS[usize::from(b)];
        if class & (SPACE | DIGIT) == 0 || class != hot.last {
            break;
        }
        let run = bytes[read..]
            .iter()
            .take_while(|&&b| CLASS[usize::from(b)] == class)
            .count();
        fold(&mut hot.skew, held.skews, hot.len, run);
        read += run;
    }
    if read > 0 {
        hot.ticks = 0;
    }
    read
}

/// The quiet path up to a char it does not step (a fold among them): no
/// call, no allocation, no bounds check, so that its state stays in
/// registers; the bytes read.
#[inline(never)]
fn quiet_run(hot: &mut Hot, ring: &mut [u32], seen: &mut [u32], triggers: &Triggers, bytes: &[u8]) -> usize {
    debug_assert!(hot.len + 1 >= SHORT);
    let (mut last, mut lanes, mut hash) = (hot.last, hot.lanes, hot.hash);
    let seen: &mut [u32; TABLE] = seen.try_into().expect("the k-gram table is allocated");
    // The ring's length is a power of two: its mask is also the farthest
    // back a held k-gram can be.
    let mask = ring.len() - 1;
    let base = (hot.origin as u32).wrapping_add(1);
    let mut read = 0;
    'stretches: while read < bytes.len() {
        // Up to the ring's end, where positions wrap.
        let i0 = hot.len + read;
        let cells = &mut ring[i0 & mask..];
        let n = cells.len().min(bytes.len() - read);
        let (cells, src) = (&mut cells[..n], &bytes[read..read + n]);
        for j in 0..n {
            let Some(byte) = BYTES.get(usize::from(src[j])) else {
                read += j;
                break 'stretches;
            };
            // An ASCII char is its own code.
            let (next_lanes, any) = lanes.step_splat(&byte.splat, byte.view, triggers);
            if (byte.class & (last | TICK) != 0) | any {
                read += j;
                break 'stretches;
            }
            let i = i0 + j;
            let next_hash = (hash << 4) ^ byte.gear;
            let kgram = Kgram::of(next_hash);
            let at = base.wrapping_add(i as u32);
            if i.is_multiple_of(LOOKUP) {
                // A k-gram seen before, still held: a period to propose.
                let d = kgram.distance(seen[kgram.slot], at);
                if d.wrapping_sub(1) < i.min(mask) {
                    read += j;
                    break 'stretches;
                }
            }
            cells[j] = u32::from(byte.view);
            seen[kgram.slot] = kgram.entry(at);
            (lanes, hash, last) = (next_lanes, next_hash, byte.class);
        }
        read += n;
    }
    hot.len += read;
    (hot.last, hot.lanes, hot.hash) = (last, lanes, hash);
    read
}
