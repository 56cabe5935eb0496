//! text-loop's long periods: a k-gram seen again proposes its distance as
//! a candidate period, checked char by char and followed one char at a time
//! until the text stops repeating at that distance.

use super::{at, Held, MAX_CANDIDATES, SHORT};

/// Follows the candidates one char further; drops the broken ones.
pub(super) fn follow(held: &mut Held<'_>, v: u32, i: usize, first: usize) {
    let mut k = 0;
    while k < held.candidates.len() {
        let (p, run) = held.candidates[k];
        if i >= first + p && at(held.ring, i - p) == v {
            held.candidates[k].1 = run + 1;
            k += 1;
        } else {
            held.candidates.swap_remove(k);
        }
    }
}

/// The k-gram ending at `i` was seen ending at `q`: distance `i - q`
/// becomes a candidate period if the k-grams really are equal.
pub(super) fn propose(held: &mut Held<'_>, q: usize, i: usize, first: usize) {
    let d = i - q;
    let ring = &*held.ring;
    if d <= SHORT
        || d > held.max_period
        || held.candidates.iter().any(|&(p, _)| p == d)
        || q < first + SHORT - 1
        || !(0..SHORT).all(|k| at(ring, q - k) == at(ring, i - k))
    {
        return;
    }
    // How far back the text already agrees at this distance.
    let mut run = 0;
    while run < 8 * d && i >= first + d + run && at(ring, i - run) == at(ring, i - run - d) {
        run += 1;
    }
    if held.candidates.len() >= MAX_CANDIDATES {
        // Keep the best followed ones.
        let worst = (0..held.candidates.len())
            .min_by_key(|&k| held.candidates[k].1 * 1000 / held.candidates[k].0.max(1))
            .expect("not empty");
        held.candidates.swap_remove(worst);
    }
    held.candidates.push((d, run));
}
