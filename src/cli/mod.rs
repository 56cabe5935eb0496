//! The `loopscope` command line, apart from the library: flags, and the
//! runners that turn them into library calls.

pub mod batch;
pub mod complete;
pub mod export;
pub mod flags;
pub mod hook;
pub mod live;
pub mod man;
pub mod record;
