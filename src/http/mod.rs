//! HTTP/1.1, written once for every part of loopscope that speaks it: the
//! record proxy (both sides), the `--metrics` endpoint, and the posts to
//! the judge's and an OTLP receiver's endpoints.
//!
//! - the framing ([`framing`], re-exported here): heads read with limits
//!   (httparse), bodies by Content-Length, chunked coding or the end of
//!   the connection, hop-by-hop headers, chunks written;
//! - [`listener`]: a loopback listener's connection slots, per-address
//!   shares and head deadlines; [`host`]: which `Host` it answers (DNS
//!   rebinding); [`respond`]: its whole answers;
//! - [`upstream`]: the proxy's client connections (TCP or TLS, pooled),
//!   with connect and read deadlines; [`inflate`]: compressed answers read;
//! - [`endpoint`]: a POST to a configured endpoint with a deadline,
//!   redirects followed within its origin only.

pub mod endpoint;
mod framing;
pub mod host;
pub mod inflate;
pub mod listener;
pub mod respond;
pub mod upstream;

pub use framing::*;
