//! Third-party code that may panic on hostile input — the parquet crate on
//! a damaged file (issue 43: 1 in 300 seeded 4-byte mutations of a real
//! dataset made it panic) — runs inside `contain`: the panic becomes an
//! error the caller reports as a bad input in one line, and the panic's own
//! message (a backtrace hint, the crate's source path) is not printed.
//!
//! The message is kept off stderr by a panic hook installed once, which
//! hands every other panic to the hook that was there before; hooks that
//! do more than print (the viewer's, which restores the terminal) ask
//! [`is_contained`] first.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many [`contain`] calls this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether a panic on this thread now would be caught by `contain`.
pub fn is_contained() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Runs `f`; a panic inside it is returned as its message.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))] // only Parquet is contained now
pub(crate) fn contain<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !is_contained() {
                previous(info);
            }
        }));
    });
    DEPTH.with(|d| d.set(d.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    result.map_err(|payload| {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "an internal error".to_string());
        crate::sanitize::line(&text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_an_error_and_what_follows_is_not_contained() {
        assert_eq!(contain(|| 7), Ok(7));
        let r: Result<(), String> = contain(|| panic!("index out of bounds: the len is 3 but the index is 9"));
        assert_eq!(r.unwrap_err(), "index out of bounds: the len is 3 but the index is 9");
        assert!(!is_contained());
        let nested = contain(|| contain(|| -> u8 { panic!("inner") }).unwrap_err());
        assert_eq!(nested.as_deref(), Ok("inner"));
        assert!(!is_contained());
    }
}
