//! `--otlp`: detections sent as OpenTelemetry over OTLP/HTTP, on a thread
//! of their own. The commands hand over spans and events and never wait:
//! a bounded queue takes them (what does not fit is dropped and counted,
//! so a collector that is down never blocks a command or grows its
//! memory), the thread sends them in batches, retries with backoff what
//! the collector could not take for now (connection errors, timeouts, 408,
//! 429, 5xx), and sends what is left when the command ends, within the
//! request timeout.

pub mod config;
pub mod json;
pub mod proto;
mod send;
pub mod spans;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

pub use config::{Config, Protocol};
pub use send::traces_body;
pub use spans::{Item, SessionInfo, SessionTrace, SpanContext};

/// Where the exporter's warnings go (stderr, or the viewer's status line).
pub type Warn = Box<dyn FnMut(String) + Send>;

/// What was sent and what was not, for the user and for `/metrics`.
#[derive(Debug, Default)]
pub struct Stats {
    pub spans_sent: AtomicU64,
    pub events_sent: AtomicU64,
    /// Dropped because the queue was full.
    pub dropped_queue_full: AtomicU64,
    /// Dropped after the collector refused them, or did not answer in time.
    pub dropped_failed: AtomicU64,
    /// Accepted by the collector's answer but rejected in its partial success.
    pub rejected: AtomicU64,
    /// Requests sent again after a failure.
    pub retries: AtomicU64,
}

impl Stats {
    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    fn dropped(&self) -> u64 {
        Stats::get(&self.dropped_queue_full) + Stats::get(&self.dropped_failed)
    }
}

struct State {
    queue: VecDeque<Item>,
    /// When the oldest waiting item came (its batch leaves `delay` later).
    since: Option<Instant>,
    /// The command is ending: send what is left, then stop.
    closing: bool,
    /// Retries wait no later than this once it is (the request timeout after the end began).
    deadline: Option<Instant>,
    /// The thread has stopped.
    done: bool,
    /// Items taken by the thread and not yet sent or dropped.
    in_flight: usize,
    /// The end's deadline passed: what was left is counted dropped, and
    /// the thread counts nothing more (each item is counted once).
    abandoned: bool,
    /// How long the command has waited on the exporter (for room, and at
    /// its end) since the collector last took something: once that is the
    /// request timeout, it waits no more, so a collector that hangs or is
    /// gone costs a command the timeout in all, however much it found.
    waited: Duration,
}

struct Shared {
    config: Config,
    state: Mutex<State>,
    /// Items arrived, or the command is ending.
    wake: Condvar,
    /// The thread stopped.
    finished: Condvar,
    stats: Stats,
    warn: Mutex<Warn>,
    /// Evaluation events are not sent (no logs endpoint, or it refused them).
    logs_off: std::sync::atomic::AtomicBool,
    /// The collector's last request failed (and is being retried).
    failing: std::sync::atomic::AtomicBool,
    /// A batch left the queue: room for more.
    room: Condvar,
    /// Wait for room while the collector takes what it is sent (`scan`:
    /// a whole file's detections are not news that must go at once);
    /// otherwise, and always while it fails, a full queue drops.
    wait_for_room: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn warn(&self, text: String) {
        self.say(format!("warning: otlp: {text}"));
    }

    /// Something to know that is no failure.
    fn note(&self, text: String) {
        self.say(format!("otlp: {text}"));
    }

    /// The thread is done with `count` items of a batch; `count_them`
    /// counts how they went, unless the end gave up on them (and counted
    /// them dropped) meanwhile.
    fn settle(&self, count: usize, count_them: impl FnOnce()) {
        if let Ok(mut st) = self.state.lock() {
            if !st.abandoned {
                if !self.failing.load(Ordering::Relaxed) {
                    // The collector took (or refused) it: the command's patience is whole again.
                    st.waited = Duration::ZERO;
                }
                count_them();
                st.in_flight = st.in_flight.saturating_sub(count);
            }
        }
    }

    fn say(&self, text: String) {
        if let Ok(mut w) = self.warn.lock() {
            w(text);
        }
    }
}

/// A handle on the exporter; clones share it.
#[derive(Clone)]
pub struct Exporter {
    shared: Arc<Shared>,
}

/// Prints to stderr, as every warning of a headless command, from a
/// thread of its own: `scan` writes through a locked stderr while it runs,
/// and the exporter's thread must never wait for that lock (it held the
/// warning's lock meanwhile, which the scan then waited for: a hang).
/// [`flush_warnings`] lets them out before the command's last words.
pub fn warn_on_stderr() -> Warn {
    let printer = printer();
    Box::new(move |text| {
        if let Ok(mut n) = printer.pending.lock() {
            *n += 1;
        }
        let sent = printer.tx.lock().map(|tx| tx.send(text).is_ok()).unwrap_or(false);
        if !sent {
            printer.printed();
        }
    })
}

struct Printer {
    tx: Mutex<std::sync::mpsc::Sender<String>>,
    /// Warnings sent and not yet printed.
    pending: Mutex<usize>,
    drained: Condvar,
}

impl Printer {
    fn printed(&self) {
        if let Ok(mut n) = self.pending.lock() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.drained.notify_all();
            }
        }
    }
}

fn printer() -> &'static Printer {
    static PRINTER: std::sync::OnceLock<Printer> = std::sync::OnceLock::new();
    PRINTER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let spawned = std::thread::Builder::new().name("otlp-warnings".into()).spawn(move || {
            for text in rx {
                eprintln!("loopscope: {}", loopscope_core::sanitize::text(&text));
                printer().printed();
            }
        });
        if spawned.is_err() {
            // No thread: the channel's sends fail and are counted printed.
        }
        Printer {
            tx: Mutex::new(tx),
            pending: Mutex::new(0),
            drained: Condvar::new(),
        }
    })
}

/// Waits (at most `within`) until the warnings sent so far are printed.
pub fn flush_warnings(within: Duration) {
    let printer = printer();
    let deadline = Instant::now() + within;
    let Ok(mut n) = printer.pending.lock() else { return };
    while *n > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        n = match printer.drained.wait_timeout(n, left) {
            Ok((n, _)) => n,
            Err(_) => return,
        };
    }
}

impl Exporter {
    /// Starts the sending thread.
    pub fn start(config: Config, warn: Warn) -> Result<Exporter, String> {
        let logs_off = config.logs_url.is_none();
        let notes = config.notes.clone();
        let shared = Arc::new(Shared {
            config,
            state: Mutex::new(State {
                queue: VecDeque::new(),
                since: None,
                closing: false,
                deadline: None,
                done: false,
                in_flight: 0,
                abandoned: false,
                waited: Duration::ZERO,
            }),
            wake: Condvar::new(),
            finished: Condvar::new(),
            stats: Stats::default(),
            warn: Mutex::new(warn),
            logs_off: logs_off.into(),
            failing: false.into(),
            room: Condvar::new(),
            wait_for_room: false.into(),
        });
        for n in notes {
            shared.note(n);
        }
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || send::run(&worker))
            .map_err(|e| format!("cannot start the OTLP exporter: {e}"))?;
        Ok(Exporter { shared })
    }

    /// Let a full queue hold the caller back while the collector takes
    /// what it is sent, rather than drop (for `scan`, which is not live).
    pub fn wait_for_room(&self) {
        self.shared.wait_for_room.store(true, Ordering::Relaxed);
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    /// Where warnings go from now on (the viewer takes them while it runs).
    pub fn set_warn(&self, warn: Warn) {
        if let Ok(mut w) = self.shared.warn.lock() {
            *w = warn;
        }
    }

    /// Queues one detection's spans and events, never waiting: all of them,
    /// or (the queue full) none, counted as dropped.
    pub fn submit(&self, items: Vec<Item>) {
        let logs_off = self.shared.logs_off.load(Ordering::Relaxed);
        let items: Vec<Item> = items
            .into_iter()
            .filter(|i| !(logs_off && matches!(i, Item::Log(_))))
            .collect();
        if items.is_empty() {
            return;
        }
        let Ok(mut st) = self.shared.state.lock() else { return };
        let cap = self.shared.config.queue;
        let patience = self.shared.config.timeout;
        while !st.closing
            && st.queue.len() + items.len() > cap
            && items.len() <= cap
            && self.shared.wait_for_room.load(Ordering::Relaxed)
            && !self.shared.failing.load(Ordering::Relaxed)
            && st.waited < patience
        {
            // Bounded: the collector takes something within the timeout, or this stops waiting.
            let began = Instant::now();
            let slice = Duration::from_millis(100).min(patience - st.waited);
            st = match self.shared.room.wait_timeout(st, slice) {
                Ok((st, _)) => st,
                Err(_) => return,
            };
            st.waited += began.elapsed();
        }
        if st.closing || st.queue.len() + items.len() > cap {
            let first_drop = Stats::get(&self.shared.stats.dropped_queue_full) == 0;
            let out_of_patience = st.waited >= patience;
            Stats::add(&self.shared.stats.dropped_queue_full, items.len());
            drop(st);
            let url = loopscope_core::sanitize::line(&self.shared.config.traces_url);
            if first_drop && out_of_patience {
                self.shared.warn(format!(
                    "cannot send to {url}: it took nothing within {} s (OTEL_EXPORTER_OTLP_TIMEOUT); dropping what comes (counted)",
                    patience.as_secs_f64()
                ));
            } else if first_drop {
                self.shared.warn(format!(
                    "{} spans and events are waiting to be sent to {url}; dropping what comes until they are (counted)",
                    self.shared.config.queue,
                ));
            }
            return;
        }
        st.since.get_or_insert_with(Instant::now);
        st.queue.extend(items);
        drop(st);
        self.shared.wake.notify_one();
    }

    /// Sends what is queued and stops the thread. It waits while the
    /// collector takes what it is sent, and no longer than the request
    /// timeout in all without that (counting what the command waited for
    /// room before): retries stop then, a request under way is not waited
    /// for, and what is still unsent is dropped and counted, each item once.
    pub fn shutdown(&self) -> Summary {
        let patience = self.shared.config.timeout;
        if let Ok(mut st) = self.shared.state.lock() {
            st.closing = true;
            st.deadline = Some(Instant::now() + patience.saturating_sub(st.waited));
            self.shared.room.notify_all();
            self.shared.wake.notify_all();
            while !st.done {
                let left = patience.saturating_sub(st.waited);
                if left.is_zero() {
                    let unsent = st.queue.len() + st.in_flight;
                    Stats::add(&self.shared.stats.dropped_failed, unsent);
                    st.queue.clear();
                    st.in_flight = 0;
                    st.abandoned = true;
                    drop(st);
                    self.shared.warn(format!(
                        "cannot send to {}: it took nothing within {} s (OTEL_EXPORTER_OTLP_TIMEOUT); {unsent} spans and events left unsent",
                        loopscope_core::sanitize::line(&self.shared.config.traces_url),
                        patience.as_secs_f64()
                    ));
                    return self.summary();
                }
                let began = Instant::now();
                st = match self
                    .shared
                    .finished
                    .wait_timeout(st, left.min(Duration::from_millis(100)))
                {
                    Ok((st, _)) => st,
                    Err(_) => return self.summary(),
                };
                st.waited += began.elapsed();
                // Taken meanwhile: the retries' deadline moves with it.
                st.deadline = Some(Instant::now() + patience.saturating_sub(st.waited));
            }
        }
        self.summary()
    }

    pub fn summary(&self) -> Summary {
        let s = &self.shared.stats;
        Summary {
            url: self.shared.config.traces_url.clone(),
            logs_url: self.shared.config.logs_url.clone(),
            protocol: self.shared.config.protocol,
            spans: Stats::get(&s.spans_sent),
            events: Stats::get(&s.events_sent),
            dropped: s.dropped(),
            rejected: Stats::get(&s.rejected),
        }
    }
}

/// What an export came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    pub url: String,
    pub logs_url: Option<String>,
    pub protocol: Protocol,
    pub spans: u64,
    pub events: u64,
    pub dropped: u64,
    pub rejected: u64,
}

impl Summary {
    /// "sent 12 spans to URL and 6 evaluation events to URL (http/protobuf); 3 dropped".
    pub fn line(&self) -> String {
        let mut text = format!(
            "otlp: sent {} spans to {}",
            self.spans,
            loopscope_core::sanitize::line(&self.url)
        );
        if let (n @ 1.., Some(logs)) = (self.events, &self.logs_url) {
            text.push_str(&format!(
                " and {n} evaluation events to {}",
                loopscope_core::sanitize::line(logs)
            ));
        }
        text.push_str(&format!(" ({})", self.protocol.name()));
        if self.dropped > 0 {
            text.push_str(&format!(
                "; {} dropped (not sent: see the warnings above)",
                self.dropped
            ));
        }
        if self.rejected > 0 {
            text.push_str(&format!("; {} rejected by the collector", self.rejected));
        }
        text
    }
}

/// How long a batch waits before it is sent anyway.
fn batch_due(st: &State, delay: Duration) -> Option<Instant> {
    st.since.map(|t| t + delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A collector that takes connections and never answers.
    fn silent() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming().map_while(Result::ok) {
                held.push(s);
            }
        });
        url
    }

    #[test]
    fn a_collector_that_never_answers_bounds_the_queue_and_counts_the_rest() {
        let mut config = Config::resolve(Some(&silent()), None, &|_| None).unwrap().unwrap();
        config.queue = 4;
        config.batch = 2;
        config.timeout = Duration::from_millis(200);
        let x = Exporter::start(config, Box::new(|_| {})).unwrap();
        let span = Item::Span(proto::Span::default());
        for _ in 0..100 {
            x.submit(vec![span.clone()]);
        }
        let queued = x.shared.state.lock().unwrap().queue.len();
        assert!(queued <= 4, "{queued}");
        let dropped = Stats::get(&x.stats().dropped_queue_full);
        // At most the queue and one batch in flight were kept.
        assert!(dropped >= 100 - 4 - 2, "{dropped}");
        let summary = x.shutdown();
        assert_eq!(summary.spans, 0);
        assert_eq!(summary.dropped, 100, "every span is accounted for: {summary:?}");
    }
}
