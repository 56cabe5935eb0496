//! text-loop's quiet path: the common case of a channel's text (ASCII that
//! opens no fence while no period is followed; runs of spaces and digits
//! folded on the way) stepped with its state in registers. A char whose
//! step has more to do (a short period near a loop, a k-gram seen before)
//! is stepped and handed over for the rest; the general path takes every
//! char the quiet path does not step.

use super::super::lanes::Splat;
use super::{
    fold, gear, Held, Hot, Kgram, Stepped, Triggers, CLASS, DIGIT, LOOKUP, NORMAL, SHORT, SPACE, TABLE, TICK, WIDE,
};

/// What the quiet path needs of a byte, in one table (one base register
/// instead of several keeps its state in registers).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Byte {
    /// The view char in every lane.
    splat: Splat,
    /// `gear` of the view char.
    gear: u64,
    /// The view char (an ASCII byte is its own char and code).
    view: u8,
    /// The classes that stop the quiet path at the byte after this one:
    /// this byte's own if it is a space or a digit (one more of the same
    /// folds), a backtick's, and that of a byte that is not ASCII.
    stops: u8,
    /// This byte's class, tested against the last byte's `stops`.
    class: u8,
}

/// Always a stop: a backtick (a fence may open) and a byte that is not
/// ASCII (a char the general path decodes).
const ALWAYS: u8 = TICK | WIDE;

/// The table on a page of its own: the quiet loop's working set (the
/// ring, the k-gram table, this) about fills the first-level cache, and
/// with the table wherever the linker put it the loop's speed moved by up
/// to 15 % from one build to the next (the same code, other addresses).
#[repr(C, align(4096))]
struct Page<T>(T);

static BYTES_PAGE: Page<[Byte; 256]> = Page(BYTES_TABLE);
const BYTES: &[Byte; 256] = &BYTES_PAGE.0;

const BYTES_TABLE: [Byte; 256] = {
    let mut t = [Byte {
        splat: Splat::of(0),
        gear: 0,
        view: 0,
        stops: ALWAYS,
        class: WIDE,
    }; 256];
    let mut b = 0;
    while b < 128 {
        let v = NORMAL[b];
        t[b] = Byte {
            splat: Splat::of(v),
            gear: gear(v as u32),
            view: v,
            stops: CLASS[b] | ALWAYS,
            class: CLASS[b],
        };
        b += 1;
    }
    t
};

/// The common case, stepped through with its state in locals: ASCII that
/// opens no fence and follows no candidate, folds on the way. Stops after
/// the first char whose step has more to do (a short period near a loop, a
/// k-gram seen before: that char is stepped and handed over with what is
/// left for [`super::finish`]), or before the first char it does not step
/// (the general path takes it); the bytes read. Positions before SHORT - 1
/// (no k-gram yet) are the general path's.
pub(super) fn quiet_ascii(hot: &mut Hot, held: &mut Held<'_>, bytes: &[u8]) -> (usize, Option<Handed>) {
    let mut read = 0;
    let mut handed;
    loop {
        let run;
        (run, handed) = quiet_run(hot, held.ring, held.seen, held.trigger, &bytes[read..]);
        read += run;
        if handed.is_some() {
            break;
        }
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
    (read, handed)
}

/// A char the quiet path stepped and hands over: its view char and what
/// its step left to do.
pub(super) struct Handed {
    pub(super) view: u32,
    pub(super) stepped: Stepped,
}

/// The quiet path up to a char it does not step (a fold among them), or
/// through the first one it hands over: no call, no allocation, no bounds
/// check, and each char's state written once, before the test that may end
/// the run (no copy of the state before it is kept), so that its state
/// stays in registers; the bytes read.
#[inline(never)]
fn quiet_run(
    hot: &mut Hot,
    ring: &mut [u32],
    seen: &mut [u32],
    triggers: &Triggers,
    bytes: &[u8],
) -> (usize, Option<Handed>) {
    debug_assert!(hot.len + 1 >= SHORT);
    let (mut lanes, mut hash) = (hot.lanes, hot.hash);
    // What stops the next byte: its class in the last one's stops.
    let mut stops = hot.last | ALWAYS;
    let seen: &mut [u32; TABLE] = seen.try_into().expect("the k-gram table is allocated");
    // The ring's length is a power of two.
    let mask = ring.len() - 1;
    let base = (hot.origin as u32).wrapping_add(1);
    let mut read = 0;
    let mut handed = None;
    'stretches: while read < bytes.len() {
        // Up to the ring's end, where positions wrap.
        let i0 = hot.len + read;
        let cells = &mut ring[i0 & mask..];
        let n = cells.len().min(bytes.len() - read);
        let (cells, src) = (&mut cells[..n], &bytes[read..read + n]);
        for j in 0..n {
            let byte = &BYTES[usize::from(src[j])];
            if byte.class & stops != 0 {
                read += j;
                break 'stretches;
            }
            let any;
            (lanes, any) = lanes.step_splat(&byte.splat, byte.view, triggers);
            let i = i0 + j;
            cells[j] = u32::from(byte.view);
            hash = (hash << 4) ^ byte.gear;
            stops = byte.stops;
            let kgram = Kgram::of(hash);
            let at = base.wrapping_add(i as u32);
            // A k-gram seen before: a period to propose (whether it is still
            // held is for `finish` to tell; a stale entry with the same tag
            // is rare).
            let mut seen_at = 0;
            if i.is_multiple_of(LOOKUP) {
                seen_at = kgram.distance(seen[kgram.slot], at);
            }
            seen[kgram.slot] = kgram.entry(at);
            if any | (seen_at != 0) {
                read += j + 1;
                handed = Some(Handed {
                    view: u32::from(byte.view),
                    stepped: Stepped { any, seen_at },
                });
                break 'stretches;
            }
        }
        read += n;
    }
    if read > 0 {
        hot.last = stops & !ALWAYS;
    }
    hot.len += read;
    (hot.lanes, hot.hash) = (lanes, hash);
    (read, handed)
}
