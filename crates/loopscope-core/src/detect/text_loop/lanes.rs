//! text-loop's short-period lanes: for each period p up to [`SHORT`], how
//! many positions in a row have a char code equal to the code p before
//! (saturating at 255), stepped once per char of the normalized view. An
//! upper bound of the true run (codes fold chars that are not ASCII), so a
//! lane below its trigger means no periodic tail of its period worth a
//! look; a lane at its trigger sends the position to the exact check.
//!
//! Sixteen byte lanes are one SSE2 register, where the step is a handful of
//! vector instructions written with the intrinsics: written as arrays, the
//! compiler kept them in a vector register or not depending on the code
//! around them, and the quiet loop that lost them was twice as slow. Other
//! targets step the same lanes as arrays, with the same results.

use super::scan::SHORT;

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use portable as backend;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use sse2 as backend;

/// Per period p (lane p - 1), the run at which a tail deserves a look.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Triggers {
    runs: [u8; SHORT],
    lanes: backend::Lanes,
}

impl Triggers {
    pub(crate) fn new(runs: [u8; SHORT]) -> Triggers {
        Triggers {
            runs,
            lanes: backend::from_bytes(runs),
        }
    }

    /// The trigger of period `p` (1 to SHORT).
    pub(crate) fn of(&self, p: usize) -> usize {
        usize::from(self.runs[p - 1])
    }
}

/// The codes of the last SHORT view chars (newest first) and the runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lanes {
    codes: backend::Lanes,
    runs: backend::Lanes,
}

impl Default for Lanes {
    /// A request's start: every code 0, every run 0.
    fn default() -> Lanes {
        let zero = backend::from_bytes([0; SHORT]);
        Lanes {
            codes: zero,
            runs: zero,
        }
    }
}

/// A code in every lane, ready to load (a table of them spares the hot
/// loop the three instructions of a broadcast).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub(crate) struct Splat([u8; SHORT]);

impl Splat {
    pub(crate) const fn of(cv: u8) -> Splat {
        Splat([cv; SHORT])
    }
}

impl Lanes {
    /// One char of code `cv`: the lanes after it, and whether some lane
    /// has reached its trigger.
    #[inline(always)]
    pub(crate) fn step(self, cv: u8, triggers: &Triggers) -> (Lanes, bool) {
        self.step_splat(&Splat::of(cv), cv, triggers)
    }

    /// [`Lanes::step`] with the code also given in every lane.
    #[inline(always)]
    pub(crate) fn step_splat(self, splat: &Splat, cv: u8, triggers: &Triggers) -> (Lanes, bool) {
        let (codes, runs, any) = backend::step(self.codes, self.runs, splat, cv, triggers.lanes);
        (Lanes { codes, runs }, any)
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use super::{Splat, SHORT};
    use std::arch::x86_64::{
        __m128i, _mm_adds_epu8, _mm_and_si128, _mm_cmpeq_epi8, _mm_cvtsi32_si128, _mm_load_si128, _mm_max_epu8,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi8, _mm_slli_si128,
    };

    pub(super) type Lanes = __m128i;

    pub(super) fn from_bytes(b: [u8; SHORT]) -> Lanes {
        let b = b.map(|x| x as i8);
        // SAFETY: this module is compiled only where the build enables SSE2.
        unsafe {
            _mm_set_epi8(
                b[15], b[14], b[13], b[12], b[11], b[10], b[9], b[8], b[7], b[6], b[5], b[4], b[3], b[2], b[1], b[0],
            )
        }
    }

    #[inline(always)]
    pub(super) fn step(codes: Lanes, runs: Lanes, splat: &Splat, cv: u8, triggers: Lanes) -> (Lanes, Lanes, bool) {
        // SAFETY: this module is compiled only where the build enables
        // SSE2; a Splat is 16 bytes aligned to 16.
        unsafe {
            let splat = _mm_load_si128((&raw const splat.0).cast::<__m128i>());
            step_sse2(codes, runs, splat, cv, triggers)
        }
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn step_sse2(codes: Lanes, runs: Lanes, splat: Lanes, cv: u8, triggers: Lanes) -> (Lanes, Lanes, bool) {
        let equal = _mm_cmpeq_epi8(codes, splat);
        let runs = _mm_and_si128(_mm_adds_epu8(runs, _mm_set1_epi8(1)), equal);
        // A lane at or over its trigger: max(run, trigger) == run.
        let reached = _mm_cmpeq_epi8(_mm_max_epu8(runs, triggers), runs);
        let codes = _mm_or_si128(_mm_slli_si128::<1>(codes), _mm_cvtsi32_si128(i32::from(cv)));
        (codes, runs, _mm_movemask_epi8(reached) != 0)
    }
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
mod portable {
    use super::{Splat, SHORT};

    pub(super) type Lanes = [u8; SHORT];

    pub(super) fn from_bytes(b: [u8; SHORT]) -> Lanes {
        b
    }

    #[inline(always)]
    pub(super) fn step(old: Lanes, mut runs: Lanes, _: &Splat, cv: u8, triggers: Lanes) -> (Lanes, Lanes, bool) {
        let mut any = 0u8;
        for k in 0..SHORT {
            let equal = 0u8.wrapping_sub(u8::from(old[k] == cv));
            runs[k] = runs[k].saturating_add(1) & equal;
            any |= u8::from(runs[k] >= triggers[k]);
        }
        let mut codes = [0u8; SHORT];
        codes[1..].copy_from_slice(&old[..SHORT - 1]);
        codes[0] = cv;
        (codes, runs, any != 0)
    }

    #[cfg(test)]
    mod tests {
        //! The vector backend against this one, on text with short loops.
        use super::super::{backend, Lanes, Triggers};
        use super::*;

        #[test]
        fn both_backends_step_alike() {
            let triggers: [u8; SHORT] = std::array::from_fn(|k| (2 * (k + 1)) as u8);
            let t = Triggers::new(triggers);
            let text = "abababab xyzxyzxyzxyz 思考思考思考思考 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa the end";
            let (mut lanes, mut codes, mut runs) = (Lanes::default(), [0u8; SHORT], [0u8; SHORT]);
            for c in text.chars() {
                let cv = c as u32 as u8;
                let (next, any) = lanes.step(cv, &t);
                let (next_codes, next_runs, portable_any) = step(codes, runs, &Splat::of(cv), cv, triggers);
                assert_eq!(any, portable_any, "at {c:?}");
                assert_eq!(
                    format!("{:?}", next.runs),
                    format!("{:?}", backend::from_bytes(next_runs))
                );
                assert_eq!(
                    format!("{:?}", next.codes),
                    format!("{:?}", backend::from_bytes(next_codes))
                );
                (lanes, codes, runs) = (next, next_codes, next_runs);
            }
        }
    }
}
