//! Redirects of the judge's endpoint: followed within its origin only
//! (scheme, host and port), so the conversation and the API key never go
//! anywhere the user did not name.

/// Redirects within the endpoint's origin followed per request.
pub const MAX_REDIRECTS: usize = 5;

/// `scheme://host:port` of a URL (the port said even when it is the
/// scheme's default), lowercased: what a redirect may not change.
pub(super) fn origin(url: &str) -> Option<String> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
    Some(format!("{scheme}://{host}:{port}"))
}

/// Where a redirect's `Location` points, from `url`: an absolute URL, a
/// path on the same host, or a path relative to the current one.
pub(super) fn redirect_target(url: &str, location: &str) -> Option<String> {
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
