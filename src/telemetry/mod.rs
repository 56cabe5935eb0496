//! Detections where teams already look: `--otlp` sends them as
//! OpenTelemetry ([`otlp`]), `--metrics` serves counters for Prometheus
//! ([`metrics`], [`serve`]). The commands hold a [`Telemetry`] and one
//! [`SessionLink`] per session they read, and tell it what they read and
//! found; neither ever waits on the network.

mod link;
pub mod metrics;
pub mod otlp;
pub mod serve;

use std::sync::Arc;

pub use link::{metered, SessionLink, SharedLink};
pub use metrics::{Metrics, Read};
pub use otlp::{Exporter, SessionInfo, SessionTrace};

/// Where a command's detections and counts go; empty when neither flag was given.
#[derive(Clone, Default)]
pub struct Telemetry {
    pub otlp: Option<Exporter>,
    pub metrics: Option<Arc<Metrics>>,
}

impl Telemetry {
    pub fn is_empty(&self) -> bool {
        self.otlp.is_none() && self.metrics.is_none()
    }

    /// The link of one session. `at_end`: the whole session is read at
    /// once (`scan`), so its trace's root is sent when it is finished.
    pub fn session(&self, info: SessionInfo, at_end: bool) -> SessionLink {
        // A session whose agent is not known yet is counted once its format is.
        if let (Some(m), false) = (&self.metrics, info.agent.is_empty()) {
            m.session_seen(&info.agent);
        }
        SessionLink {
            pending: Read::default(),
            trace: self.otlp.as_ref().map(|_| SessionTrace::new(info.clone(), at_end)),
            base_agent: info.agent.clone(),
            info,
            telemetry: self.clone(),
        }
    }

    /// Sends what is left; says what was sent (stderr), if anything was to be.
    pub fn finish(&self) {
        if let Some(x) = &self.otlp {
            let summary = x.shutdown();
            // The warnings first (their printer waited for stderr), then the count.
            otlp::flush_warnings(std::time::Duration::from_secs(2));
            if summary.spans + summary.events + summary.dropped + summary.rejected > 0 {
                eprintln!("loopscope: {}", summary.line());
            }
        }
    }
}
