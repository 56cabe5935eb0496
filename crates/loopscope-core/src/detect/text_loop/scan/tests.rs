//! The quiet path against the general one: every periodic tail offered to
//! the judge, the best tail and the map back to original offsets must be
//! the same whether the common case is stepped in the quiet loop or char
//! by char.

use super::*;
use std::cell::RefCell;

/// What one way of reading saw: each tail offered to the judge (period,
/// start, end, copies, copies needed, original offset of its end), then the
/// best tail and the original offset of every view index held.
fn read_all<const QUIET: bool>(
    pieces: &[String],
    reject_every: bool,
) -> Vec<(usize, usize, usize, usize, usize, usize)> {
    // The extended profile's default copies.
    let needed = |p: usize| crate::detect::text_loop::needed(p, 3, 5);
    let trigger = crate::detect::text_loop::triggers(3, 5);
    let seen = RefCell::new(Vec::new());
    let mut stream = Stream::default();
    for (k, piece) in pieces.iter().enumerate() {
        if k % 7 == 6 {
            // A new request now and then: positions start past the old ones.
            stream.restart();
        }
        let found = stream.read::<QUIET>(piece, 300, &trigger, needed, |s, tail, n, need| {
            seen.borrow_mut()
                .push((tail.period, tail.start, tail.end, n, need, s.offset(tail.end)));
            // Judged a loop: the read stops there, and goes on with the next delta.
            (!reject_every && n % 2 == 0)
                .then(|| Detection::new("text-loop", 0, crate::event::Channel::Reasoning, None))
        });
        let mut seen = seen.borrow_mut();
        seen.push((
            usize::MAX,
            found.is_some().into(),
            stream.best().0,
            stream.best().1,
            stream.hot.len,
            0,
        ));
        let first = stream.first();
        seen.extend(
            (first..stream.hot.len)
                .step_by(5)
                .map(|v| (v, stream.offset(v), stream.at(v) as usize, 0, 0, 1)),
        );
    }
    seen.into_inner()
}

/// Text made of prose, loops of short and long units, digit and space runs,
/// backticks and chars that are not ASCII.
fn piece() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let unit = prop_oneof![
        Just("ab".to_string()),
        Just("思考".to_string()),
        Just("the cache layer retries ".to_string()),
        Just("item 12 of 40,  ".to_string()),
        Just("`x` ".to_string()),
        "[a-e ]{1,6}",
        "[a-z0-9 .\\n]{17,40}",
        "[a-zé思 `0-9]{1,20}",
    ];
    (unit, 1usize..12).prop_map(|(u, times)| u.repeat(times))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// The quiet path reads exactly as the general path does: the same tails
    /// judged (as loops or not), the same best tail, the same offsets.
    #[test]
    fn the_quiet_path_reads_like_the_general_path(
        pieces in proptest::collection::vec(piece(), 1..40),
        reject_every in proptest::bool::ANY,
    ) {
        let quiet = read_all::<true>(&pieces, reject_every);
        let general = read_all::<false>(&pieces, reject_every);
        proptest::prop_assert_eq!(quiet, general);
    }
}
