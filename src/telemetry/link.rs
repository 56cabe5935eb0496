//! One session's part in the telemetry: its trace and its labels, and a
//! feed that counts what is read on its way to the detectors.

use std::sync::{Arc, Mutex};

use super::{Read, SessionInfo, SessionTrace, Telemetry};
use crate::replay::feed::{Feed, Sink};
use crate::replay::follow::FileNews;
use loopscope_core::detect::Detection;
use loopscope_core::event::Event;

/// One session's part: its trace and its labels.
pub struct SessionLink {
    pub info: SessionInfo,
    pub(super) trace: Option<SessionTrace>,
    pub(super) telemetry: Telemetry,
    /// The agent named for the sessions followed (`tail --latest AGENT`);
    /// empty: each session's format names it.
    pub base_agent: String,
    /// What was read before the agent was known (counted under it then).
    pub(super) pending: Read,
}

impl SessionLink {
    /// The importer is known now: the agent label, if none was set.
    pub fn set_format(&mut self, format: &str) {
        if self.info.format.is_empty() {
            self.info.format = format.to_string();
        }
        if self.info.agent.is_empty() {
            self.info.agent = format.to_string();
            if let Some(m) = &self.telemetry.metrics {
                m.session_seen(&self.info.agent);
            }
            let pending = std::mem::take(&mut self.pending);
            self.read(pending, true);
        }
        if let Some(t) = self.trace.as_mut() {
            t.info = self.info.clone();
        }
    }

    /// An event was read (its time bounds the session's trace).
    pub fn saw(&mut self, e: &Event) {
        if let Some(t) = self.trace.as_mut() {
            t.saw(e);
        }
    }

    /// The session's first and last clock times (Unix seconds), known
    /// without seeing each event.
    pub fn span_times(&mut self, first: f64, last: f64) {
        if let Some(t) = self.trace.as_mut() {
            for s in [first, last] {
                if s.is_finite() && s > 0.0 {
                    t.saw_time((s * 1e9) as u64);
                }
            }
        }
    }

    /// What a look at the session read; `live`: it grew while followed.
    pub fn read(&mut self, read: Read, live: bool) {
        if self.info.agent.is_empty() {
            self.pending.events += read.events;
            self.pending.bytes += read.bytes;
            self.pending.bad_lines += read.bad_lines;
            return;
        }
        if let Some(m) = &self.telemetry.metrics {
            m.read(&self.info.id, &self.info.agent, read, live);
        }
    }

    /// A detection announced, fired at `event` under `profile`.
    pub fn detection(&mut self, d: &Detection, event: &Event, profile: &str) {
        if let Some(m) = &self.telemetry.metrics {
            m.detection(d.detector, profile, &self.info.agent);
        }
        if let (Some(t), Some(x)) = (self.trace.as_mut(), &self.telemetry.otlp) {
            x.submit(t.detection(d, event, profile));
        }
    }

    /// The session is done with (read to its end, or left): its trace's
    /// root goes if it is owed; it is no longer active.
    pub fn finish(&mut self) {
        if let (Some(t), Some(x)) = (self.trace.as_mut(), &self.telemetry.otlp) {
            if let Some(root) = t.finish() {
                x.submit(vec![root]);
            }
        }
        if let Some(m) = &self.telemetry.metrics {
            m.session_ended(&self.info.id);
        }
    }
}

/// A session's link shared by the thread that reads it (counts) and the
/// one that runs its detectors (detections).
#[derive(Clone)]
pub struct SharedLink(Arc<Mutex<SessionLink>>);

impl std::fmt::Debug for SharedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedLink")
    }
}

impl SharedLink {
    pub fn new(link: SessionLink) -> SharedLink {
        SharedLink(Arc::new(Mutex::new(link)))
    }

    pub fn with<R>(&self, f: impl FnOnce(&mut SessionLink) -> R) -> R {
        let mut link = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut link)
    }

    pub fn telemetry(&self) -> Telemetry {
        self.with(|l| l.telemetry.clone())
    }
}

/// A feed that tells `link` what it carries (the importer, events, bad
/// lines, bytes) before passing it on; `Read` stops here. A followed
/// `--latest` session switching to another starts a new link.
pub fn metered(mut sink: Sink, link: SharedLink) -> Sink {
    Box::new(move |feed| {
        match &feed {
            Feed::Format(f) => link.with(|l| l.set_format(f.name())),
            Feed::Events(events) => link.with(|l| {
                for e in events {
                    l.saw(e);
                }
                l.read(
                    Read {
                        events: events.len() as u64,
                        ..Read::default()
                    },
                    true,
                );
            }),
            Feed::Problems(p) => link.with(|l| {
                let bad = p.iter().filter(|p| p.skipped).count() as u64;
                l.read(
                    Read {
                        bad_lines: bad,
                        ..Read::default()
                    },
                    true,
                )
            }),
            Feed::Read(bytes) => {
                link.with(|l| {
                    l.read(
                        Read {
                            bytes: *bytes,
                            ..Read::default()
                        },
                        true,
                    )
                });
                return true;
            }
            Feed::File(FileNews::Switched(path)) => link.with(|l| {
                l.finish();
                let info = SessionInfo {
                    name: loopscope_core::sanitize::path(path),
                    id: path.display().to_string(),
                    agent: l.base_agent.clone(),
                    format: String::new(),
                    profile: l.info.profile.clone(),
                };
                let base = l.base_agent.clone();
                *l = l.telemetry.session(info, false);
                l.base_agent = base;
            }),
            _ => {}
        }
        sink(feed)
    })
}
