//! `--otlp` and `--metrics` from flags and the environment: the exporter's
//! thread and the metrics endpoint, started before the command reads.

use std::sync::Arc;
use std::time::Duration;

use loopscope::telemetry::otlp::{self, Config, Exporter};
use loopscope::telemetry::{serve, Metrics, Telemetry};

use super::flags::{MetricsFlags, OtlpFlags};

/// What the flags ask for; `idle_after`: how long a quiet session counts as active.
pub fn telemetry(otlp: &OtlpFlags, metrics: Option<&MetricsFlags>, idle_after: Duration) -> Result<Telemetry, String> {
    let env = |k: &str| std::env::var(k).ok();
    let exporter = match Config::resolve(otlp.otlp.as_deref(), otlp.otlp_protocol.as_deref(), &env)? {
        Some(config) => Some(Exporter::start(config, otlp::warn_on_stderr())?),
        None => None,
    };
    let metrics = match metrics.and_then(|m| m.metrics.map(|addr| (addr, &m.allow_hosts))) {
        Some((addr, allow_hosts)) => {
            let m = Arc::new(Metrics::new(idle_after, exporter.clone()));
            let bound = serve::start(addr, m.clone(), allow_hosts)?;
            eprintln!("loopscope: serving metrics at http://{bound}/metrics");
            Some(m)
        }
        None => None,
    };
    Ok(Telemetry {
        otlp: exporter,
        metrics,
    })
}
