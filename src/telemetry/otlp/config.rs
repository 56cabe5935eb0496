//! Where and how detections are sent: `--otlp` and the standard exporter
//! variables (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`, `OTEL_LOGS_EXPORTER`),
//! read as the OpenTelemetry SDKs read them.

use std::time::Duration;

use super::proto::KeyValue;

/// The OTLP encoding over HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf`: what every receiver takes (Phoenix takes only this).
    Protobuf,
    /// `http/json`.
    Json,
}

impl Protocol {
    pub fn parse(text: &str) -> Result<Protocol, String> {
        match text.trim() {
            "http/protobuf" => Ok(Protocol::Protobuf),
            "http/json" => Ok(Protocol::Json),
            "grpc" => Err("OTLP over gRPC is not supported: use http/protobuf (port 4318 on a Collector)".to_string()),
            other => Err(format!(
                "unknown OTLP protocol {other:?} (known: http/protobuf, http/json)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Protobuf => "http/protobuf",
            Protocol::Json => "http/json",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }
}

/// Everything the exporter needs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where spans go (`…/v1/traces`).
    pub traces_url: String,
    /// Where evaluation events go (`…/v1/logs`); None: not sent.
    pub logs_url: Option<String>,
    pub protocol: Protocol,
    /// Sent with every request (an `Authorization` among them: never printed).
    pub headers: Vec<(String, String)>,
    /// The longest one request may take.
    pub timeout: Duration,
    /// `service.name` and the like.
    pub resource: Vec<KeyValue>,
    /// Spans and events waiting to be sent, at most; more are dropped (counted).
    pub queue: usize,
    /// Spans and events per request, at most.
    pub batch: usize,
    /// How long a first item waits for others to share its request.
    pub delay: Duration,
    /// Notes for the user (settings that were ignored).
    pub notes: Vec<String>,
}

/// The OpenTelemetry SDKs' defaults: 2048 queued, 512 per request.
pub const QUEUE: usize = 2048;
pub const BATCH: usize = 512;
/// Shorter than the SDKs' 5 s: a detection is news.
pub const DELAY: Duration = Duration::from_secs(1);
/// `OTEL_EXPORTER_OTLP_TIMEOUT`'s default (10 s).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// `%XX` sequences decoded (the variables' values are URL-encoded).
fn percent_decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((hi * 16 + lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `key1=value1,key2=value2` (W3C Baggage without properties).
fn pairs(var: &str, text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (n, item) in text.split(',').enumerate() {
        if item.trim().is_empty() {
            continue;
        }
        // The value may be a secret: say where the entry is, not what it holds.
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| format!("{var}: entry {} has no '=' (expected key=value,key=value)", n + 1))?;
        let key = percent_decode(k.trim());
        if key.is_empty() {
            return Err(format!("{var}: entry {} has an empty key", n + 1));
        }
        out.push((key, percent_decode(v.trim())));
    }
    Ok(out)
}

/// The signal's URL: a base URL gets `/v1/{signal}`; one that already
/// ends in `/v1/traces` or `/v1/logs` names the traces' and the logs' place.
fn signal_url(base: &str, signal: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    for known in ["/v1/traces", "/v1/logs"] {
        if let Some(root) = base.strip_suffix(known) {
            return format!("{root}/v1/{signal}");
        }
    }
    format!("{base}/v1/{signal}")
}

fn check_url(what: &str, url: &str) -> Result<(), String> {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    let host = url.split("://").nth(1).unwrap_or_default();
    if !scheme_ok || host.is_empty() || host.starts_with('/') {
        return Err(format!(
            "{what} {:?} is not an http:// or https:// URL (e.g. http://localhost:4318)",
            loopscope_core::sanitize::line(url)
        ));
    }
    Ok(())
}

impl Config {
    /// The configuration from `--otlp` and `--otlp-protocol` over the
    /// environment; `Ok(None)` when nothing asks for an export.
    pub fn resolve(
        flag: Option<&str>,
        protocol_flag: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Config>, String> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let traces_url = match (
            flag,
            var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            var("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(f), _, _) => {
                check_url("--otlp", f)?;
                signal_url(f, "traces")
            }
            _ if disabled => return Ok(None),
            (None, Some(t), _) => {
                check_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &t)?;
                t.trim().to_string()
            }
            (None, None, Some(base)) => {
                check_url("OTEL_EXPORTER_OTLP_ENDPOINT", &base)?;
                signal_url(&base, "traces")
            }
            (None, None, None) => return Ok(None),
        };
        let logs_url = if var("OTEL_LOGS_EXPORTER").is_some_and(|v| v.trim() == "none") {
            None
        } else {
            match (flag, var("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")) {
                (None, Some(l)) => {
                    check_url("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", &l)?;
                    Some(l.trim().to_string())
                }
                _ => Some(signal_url(&traces_url, "logs")),
            }
        };
        let protocol = match protocol_flag
            .map(str::to_string)
            .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
        {
            Some(p) => Protocol::parse(&p)?,
            None => Protocol::Protobuf,
        };
        let mut headers = Vec::new();
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            if let Some(v) = var(name) {
                headers.extend(pairs(name, &v)?);
            }
        }
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT").or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT")) {
            Some(ms) => Duration::from_millis(
                ms.trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| format!("OTEL_EXPORTER_OTLP_TIMEOUT: {ms:?} is not a number of milliseconds"))?,
            ),
            None => TIMEOUT,
        };
        let mut notes = Vec::new();
        if let Some(c) = var("OTEL_EXPORTER_OTLP_COMPRESSION").filter(|c| c.trim() != "none") {
            notes.push(format!(
                "OTEL_EXPORTER_OTLP_COMPRESSION={}: not supported; sending uncompressed",
                loopscope_core::sanitize::line(&c)
            ));
        }
        Ok(Some(Config {
            traces_url,
            logs_url,
            protocol,
            headers,
            timeout,
            resource: resource(&var)?,
            queue: QUEUE,
            batch: BATCH,
            delay: DELAY,
            notes,
        }))
    }
}

/// `service.name` (`OTEL_SERVICE_NAME`, else `loopscope`), `service.version`,
/// and `OTEL_RESOURCE_ATTRIBUTES` (Phoenix's project is
/// `openinference.project.name` there).
fn resource(var: &dyn Fn(&str) -> Option<String>) -> Result<Vec<KeyValue>, String> {
    let mut attrs: Vec<(String, String)> = match var("OTEL_RESOURCE_ATTRIBUTES") {
        Some(v) => pairs("OTEL_RESOURCE_ATTRIBUTES", &v)?,
        None => Vec::new(),
    };
    if let Some(name) = var("OTEL_SERVICE_NAME") {
        attrs.retain(|(k, _)| k != "service.name");
        attrs.push(("service.name".into(), name.trim().to_string()));
    }
    if !attrs.iter().any(|(k, _)| k == "service.name") {
        attrs.push(("service.name".into(), "loopscope".into()));
    }
    attrs.push(("service.version".into(), env!("CARGO_PKG_VERSION").into()));
    Ok(attrs.iter().map(|(k, v)| KeyValue::string(k, v.as_str())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_base_url_gets_the_signal_paths_and_a_full_one_is_kept() {
        let c = Config::resolve(Some("http://localhost:6006/"), None, &env(&[]))
            .unwrap()
            .unwrap();
        assert_eq!(c.traces_url, "http://localhost:6006/v1/traces");
        assert_eq!(c.logs_url.as_deref(), Some("http://localhost:6006/v1/logs"));
        assert_eq!(c.protocol, Protocol::Protobuf);
        let c = Config::resolve(
            Some("https://cloud.langfuse.com/api/public/otel/v1/traces"),
            None,
            &env(&[]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.traces_url, "https://cloud.langfuse.com/api/public/otel/v1/traces");
        assert_eq!(
            c.logs_url.as_deref(),
            Some("https://cloud.langfuse.com/api/public/otel/v1/logs")
        );
    }

    #[test]
    fn the_standard_variables_configure_it() {
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Basic%20cGs6c2s=,x-team = loops ",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_SERVICE_NAME", "loop-watch"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "openinference.project.name=agents,service.name=x",
            ),
            ("OTEL_LOGS_EXPORTER", "none"),
        ]);
        let c = Config::resolve(None, None, &vars).unwrap().unwrap();
        assert_eq!(c.traces_url, "http://collector:4318/v1/traces");
        assert_eq!(c.logs_url, None);
        assert_eq!(c.protocol, Protocol::Json);
        assert_eq!(
            c.headers,
            [
                ("Authorization".to_string(), "Basic cGs6c2s=".to_string()),
                ("x-team".to_string(), "loops".to_string())
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        let names: Vec<(&str, String)> = c
            .resource
            .iter()
            .map(|kv| (kv.key.as_str(), format!("{:?}", kv.value)))
            .collect();
        assert!(names[0].0 == "openinference.project.name" && names[1].1.contains("loop-watch"));
    }

    #[test]
    fn nothing_asked_nothing_sent_and_bad_settings_are_one_line() {
        assert!(Config::resolve(None, None, &env(&[])).unwrap().is_none());
        let off = env(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ]);
        assert!(Config::resolve(None, None, &off).unwrap().is_none());
        assert!(
            Config::resolve(Some("http://c:4318"), None, &off).unwrap().is_some(),
            "the flag wins"
        );
        let e = Config::resolve(Some("localhost:4318"), None, &env(&[])).unwrap_err();
        assert!(e.contains("not an http:// or https:// URL"), "{e}");
        let e = Config::resolve(Some("http://c"), Some("grpc"), &env(&[])).unwrap_err();
        assert!(e.contains("gRPC is not supported"), "{e}");
        let secret = env(&[("OTEL_EXPORTER_OTLP_HEADERS", "Authorization Basic s3cret")]);
        let e = Config::resolve(Some("http://c"), None, &secret).unwrap_err();
        assert!(e.contains("entry 1 has no '='") && !e.contains("s3cret"), "{e}");
    }
}
