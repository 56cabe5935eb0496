//! Redirects of an endpoint loopscope sends to (the judge's, an OTLP
//! receiver's): followed within its origin only (scheme, host and port),
//! so what is sent and the keys in its headers never go anywhere the user
//! did not name, and no other host's answer is taken for the endpoint's.

use std::time::Duration;

use ureq::http::Response;
use ureq::Body;

/// The client for posts to an endpoint: `timeout` bounds each request,
/// from connecting to the answer's last byte; an error status is an
/// answer to read, not an error; redirects are left to
/// [`post_within_origin`] (ureq would follow them to any host, with every
/// header but Authorization).
pub fn agent(timeout: Duration, user_agent: Option<&str>) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(0);
    match user_agent {
        Some(name) => config.user_agent(name),
        None => config,
    }
    .build()
    .new_agent()
}

/// Redirects within the endpoint's origin followed per request.
pub const MAX_REDIRECTS: usize = 5;

/// Why a request got no answer from the endpoint.
#[derive(Debug)]
pub enum PostError {
    /// It could not be sent (connection, timeout, protocol).
    Request(ureq::Error),
    /// A redirect that is not followed (to another origin, to no URL, too many).
    Redirect(String),
}

/// POSTs `body` with `headers` to `url`, following redirects within the
/// endpoint's origin only, each with the same method, headers and body
/// (a 301/302/303 would turn an API call into a GET without its body).
/// `agent` must not follow redirects itself (`max_redirects(0)`): ureq
/// follows them to any host, with every header but Authorization.
pub fn post_within_origin(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response<Body>, PostError> {
    let mut url = url.to_string();
    let mut hops = 0;
    loop {
        let mut req = agent.post(&url);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let resp = req.send(body).map_err(PostError::Request)?;
        let status = resp.status().as_u16();
        if !(300..400).contains(&status) || status == 304 {
            return Ok(resp);
        }
        let location = resp
            .headers()
            .get("location")
            .and_then(|l| l.to_str().ok())
            .unwrap_or_default();
        let Some(next) = redirect_target(&url, location) else {
            return Err(PostError::Redirect(format!(
                "HTTP {status}: a redirect to {} that is no URL, not followed",
                loopscope_core::detect::quote(location, 60)
            )));
        };
        if origin(&next) != origin(&url) {
            return Err(PostError::Redirect(format!(
                "HTTP {status}: the endpoint redirects to another origin ({}), not followed: \
                 what is sent, and the keys with it, go to the endpoint only",
                loopscope_core::sanitize::line(&origin(&next).unwrap_or_default())
            )));
        }
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(PostError::Redirect(format!(
                "HTTP {status}: more than {MAX_REDIRECTS} redirects"
            )));
        }
        url = next;
    }
}

/// `scheme://host:port` of a URL (the port said even when it is the
/// scheme's default), lowercased: what a redirect may not change.
pub fn origin(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some(format!("{scheme}://{host}:{port}"))
}

/// Where a redirect's `Location` points, from `url`: an absolute URL, a
/// path on the same host, or a path relative to the current one.
pub fn redirect_target(url: &str, location: &str) -> Option<String> {
    let location = location.trim();
    if location.is_empty() {
        return None;
    }
    if location.contains("://") {
        return origin(location).map(|_| location.to_string());
    }
    let uri: ureq::http::Uri = url.parse().ok()?;
    let base = format!("{}://{}", uri.scheme_str()?, uri.authority()?);
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{}://{rest}", uri.scheme_str()?));
    }
    if location.starts_with('/') {
        return Some(format!("{base}{location}"));
    }
    let dir = uri.path().rsplit_once('/').map_or("", |(d, _)| d);
    Some(format!("{base}{dir}/{location}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_keeps_the_origin_or_changes_it() {
        let url = "http://127.0.0.1:8000/v1/chat/completions";
        assert_eq!(origin(url).as_deref(), Some("http://127.0.0.1:8000"));
        assert_eq!(
            origin("HTTPS://API.Example.com/v1").as_deref(),
            Some("https://api.example.com:443")
        );
        assert_eq!(
            origin("https://api.example.com:443/x"),
            origin("https://api.example.com/y")
        );
        let t = |loc| redirect_target(url, loc);
        assert_eq!(t("/v2/chat").as_deref(), Some("http://127.0.0.1:8000/v2/chat"));
        assert_eq!(t("other").as_deref(), Some("http://127.0.0.1:8000/v1/chat/other"));
        assert_eq!(t("//evil.example/v1").as_deref(), Some("http://evil.example/v1"));
        assert_eq!(
            t("https://127.0.0.1:8000/v1").as_deref(),
            Some("https://127.0.0.1:8000/v1")
        );
        assert_ne!(
            origin(&t("https://127.0.0.1:8000/v1").unwrap()),
            origin(url),
            "the scheme is part of it"
        );
        assert_eq!(t(""), None);
    }
}
