//! The connection slots of a local listener (the proxy's and `--metrics`'),
//! and what keeps slow clients from holding them all:
//!
//! - a request head must arrive whole within [`HEAD_TIME`] of its first
//!   byte (hyper's `header_read_timeout`, nginx's `client_header_timeout`);
//!   a client that has sent part of one is answered 408 and closed then;
//! - one client address holds at most a share of the slots (nginx's
//!   `limit_conn` per `$binary_remote_addr`);
//! - when every slot (or every slot of that address) is taken, the
//!   connection that has waited longest for a request head (idle between
//!   requests, or still sending one) is closed to make room, as nginx
//!   drains its idle connections when it runs out; only when every
//!   connection is busy with a request is the newcomer answered 503.
//!
//! So connections trickling bytes can delay a real request by no more than
//! the time it takes to close one of them.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::http::{self, HeadError, RequestHead};

/// The longest a request head may take from its first byte to its last.
pub const HEAD_TIME: Duration = Duration::from_secs(10);

/// How many connections a listener serves at once.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max: usize,
    /// The most from one client address.
    pub per_address: usize,
}

/// A connection to serve (with its slot), or one that found no slot (to
/// answer 503 with the reason and close).
pub enum Served<'a> {
    One(&'a TcpStream, &'a Slot),
    TooMany(&'a TcpStream, &'a str),
}

struct Entry {
    ip: IpAddr,
    /// To close it when it must make room (shared, not a second descriptor).
    stream: Arc<TcpStream>,
    /// Since when it waits for a request head; None while it is busy with one.
    waiting_since: Option<Instant>,
    /// Closed to make room; its thread is on its way out.
    evicted: bool,
}

#[derive(Default)]
struct Table {
    open: HashMap<u64, Entry>,
}

/// One connection's place in the table; its drop frees it.
pub struct Slot {
    id: u64,
    table: Arc<Mutex<Table>>,
}

impl Slot {
    /// Waiting for a request head: may be closed to make room.
    pub fn waiting(&self) {
        self.set(Some(Instant::now()));
    }

    /// A request head is in: busy until the answer is out.
    pub fn busy(&self) {
        self.set(None);
    }

    fn set(&self, since: Option<Instant>) {
        if let Ok(mut t) = self.table.lock() {
            if let Some(e) = t.open.get_mut(&self.id) {
                e.waiting_since = since;
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut t) = self.table.lock() {
            t.open.remove(&self.id);
        }
    }
}

/// Connections closed to make room, for tests and the curious.
pub static EVICTED: AtomicU64 = AtomicU64::new(0);

impl Table {
    /// Room for a connection from `ip`: Err(why) when there is none.
    fn admit(&mut self, ip: IpAddr, limits: Limits) -> Result<(), String> {
        let live = |e: &&Entry| !e.evicted;
        let from_ip = self.open.values().filter(live).filter(|e| e.ip == ip).count();
        if from_ip >= limits.per_address {
            return self.evict(Some(ip)).ok_or_else(|| {
                format!(
                    "too many connections from {ip} at once ({} busy with requests)",
                    limits.per_address
                )
            });
        }
        if self.open.values().filter(live).count() >= limits.max {
            return self
                .evict(None)
                .ok_or_else(|| format!("too many connections at once ({} busy with requests)", limits.max));
        }
        Ok(())
    }

    /// Closes the connection (of `ip`, if given) that has waited longest for a head.
    fn evict(&mut self, ip: Option<IpAddr>) -> Option<()> {
        let oldest = self
            .open
            .values_mut()
            .filter(|e| !e.evicted && ip.is_none_or(|ip| e.ip == ip))
            .filter(|e| e.waiting_since.is_some())
            .min_by_key(|e| e.waiting_since)?;
        oldest.evicted = true;
        let _ = oldest.stream.shutdown(Shutdown::Both);
        EVICTED.fetch_add(1, Ordering::Relaxed);
        Some(())
    }
}

/// Binds the listener `flag` (`--listen`, `--metrics`) names; the address
/// bound (a port 0 made real) comes back with it.
pub fn bind(flag: &str, addr: SocketAddr) -> Result<(TcpListener, SocketAddr), String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("{flag} {addr}: {}", loopscope_core::io_reason(&e)))?;
    let bound = listener.local_addr().map_err(|e| loopscope_core::io_reason(&e))?;
    Ok((listener, bound))
}

/// Accepts connections until the process ends, each served on a thread of
/// its own (named `name`) within `limits`.
pub fn accept(listener: TcpListener, name: &str, limits: Limits, serve: impl Fn(Served<'_>) + Send + Sync + 'static) {
    let serve = Arc::new(serve);
    let table = Arc::new(Mutex::new(Table::default()));
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(_) => {
                // Out of file descriptors and the like: wait, don't spin.
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let ip = stream.peer_addr().map(|a| a.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let stream = Arc::new(stream);
        let handle = stream.clone();
        let admitted = match table.lock() {
            Ok(mut t) => t.admit(ip, limits).map(|()| {
                next_id += 1;
                t.open.insert(
                    next_id,
                    Entry {
                        ip,
                        stream: handle,
                        waiting_since: Some(Instant::now()),
                        evicted: false,
                    },
                );
                next_id
            }),
            Err(_) => return,
        };
        let id = match admitted {
            Ok(id) => id,
            Err(why) => {
                // Never wait on a client that does not read its refusal.
                let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                serve(Served::TooMany(&stream, &why));
                continue;
            }
        };
        let slot = Slot {
            id,
            table: table.clone(),
        };
        let serve = serve.clone();
        let spawned = std::thread::Builder::new().name(name.into()).spawn(move || {
            serve(Served::One(&stream, &slot));
            drop(slot);
        });
        if spawned.is_err() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Reads the next request head on a connection: the first byte may take
/// `idle` (a kept-alive connection between requests), the whole head
/// [`HEAD_TIME`] from its first byte; past that, a 408. `Ok(None)`: the
/// connection ended or stayed idle (closed without a word, as servers do).
pub fn read_head_in_time(
    reader: &mut BufReader<TcpStream>,
    slot: &Slot,
    idle: Duration,
) -> Result<Option<RequestHead>, HeadError> {
    slot.waiting();
    let mut timed = Timed {
        inner: reader,
        idle,
        whole: HEAD_TIME,
        deadline: None,
    };
    let head = match http::read_request_head(&mut timed) {
        Err(HeadError::Io(e)) if timed.deadline.is_some() && is_timeout(&e) => Err(HeadError::Bad(
            408,
            format!("the request head did not arrive within {} s", HEAD_TIME.as_secs()),
        )),
        Err(HeadError::Io(e)) if is_timeout(&e) => Ok(None),
        other => other,
    };
    slot.busy();
    head
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
}

/// A connection's reader whose reads time out at a deadline set by the first byte.
struct Timed<'a> {
    inner: &'a mut BufReader<TcpStream>,
    idle: Duration,
    whole: Duration,
    deadline: Option<Instant>,
}

impl Read for Timed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let have = self.fill_buf()?;
            let n = have.len().min(buf.len());
            buf[..n].copy_from_slice(&have[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Timed<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.inner.buffer().is_empty() {
            let wait = match self.deadline {
                None => self.idle,
                Some(d) => d.saturating_duration_since(Instant::now()),
            };
            if wait.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the request head took too long",
                ));
            }
            self.inner.get_ref().set_read_timeout(Some(wait))?;
        }
        let got = !self.inner.fill_buf()?.is_empty();
        if got && self.deadline.is_none() {
            self.deadline = Some(Instant::now() + self.whole);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ip: [u8; 4], waiting: Option<Instant>) -> Entry {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        Entry {
            ip: IpAddr::from(ip),
            stream: Arc::new(stream),
            waiting_since: waiting,
            evicted: false,
        }
    }

    #[test]
    fn a_full_table_closes_the_longest_waiting_connection_or_refuses() {
        let limits = Limits { max: 4, per_address: 2 };
        let t0 = Instant::now();
        let mut t = Table::default();
        t.open.insert(1, entry([127, 0, 0, 1], Some(t0)));
        t.open.insert(2, entry([127, 0, 0, 1], None));
        // 127.0.0.1 is at its share: its waiting one makes room.
        assert!(t.admit(IpAddr::from([127, 0, 0, 1]), limits).is_ok());
        assert!(t.open[&1].evicted && !t.open[&2].evicted);
        t.open.insert(5, entry([127, 0, 0, 1], None));
        // Again: both of its live ones are busy, so no room for that address.
        let why = t.admit(IpAddr::from([127, 0, 0, 1]), limits).unwrap_err();
        assert!(why.contains("from 127.0.0.1"), "{why}");
        // Another address has room until the table is full of busy ones.
        t.open.insert(3, entry([127, 0, 0, 2], None));
        t.open.insert(4, entry([127, 0, 0, 3], None));
        assert!(t.admit(IpAddr::from([127, 0, 0, 4]), limits).is_err());
        t.open.get_mut(&3).unwrap().waiting_since = Some(t0);
        assert!(t.admit(IpAddr::from([127, 0, 0, 4]), limits).is_ok());
        assert!(t.open[&3].evicted);
    }
}
