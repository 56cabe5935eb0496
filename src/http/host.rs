//! Which `Host` a local listener answers (the proxy's and `--metrics`'):
//! a page in a browser on this machine can reach 127.0.0.1 under a name of
//! its own that resolves there (DNS rebinding), and the browser sends that
//! name as the Host. So a loopback listener answers only `localhost`, a
//! literal loopback address (127.0.0.0/8, `[::1]`), each with an optional
//! port, and the names the user gave with `--allow-host`. Parsing is
//! strict: `127.evil.example` and `127.0.0.1.nip.io` are names, not
//! addresses.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The Host names a listener answers besides its own.
#[derive(Clone, Debug, Default)]
pub struct HostCheck {
    /// Off when the listener was exposed on purpose (`--allow-remote`, a
    /// `--metrics` address that is not loopback): any Host then.
    pub enabled: bool,
    /// `--allow-host` names, lowercase, without a port.
    pub allowed: Vec<String>,
}

impl HostCheck {
    pub fn new(enabled: bool, allowed: &[String]) -> HostCheck {
        HostCheck {
            enabled,
            allowed: allowed.iter().map(|n| normalize(n)).collect(),
        }
    }

    /// Whether a request with this Host header (None: none sent) is answered.
    pub fn admits(&self, host: Option<&str>) -> bool {
        if !self.enabled {
            return true;
        }
        let Some(name) = host.and_then(name_of) else {
            return false;
        };
        is_loopback_name(name) || self.allowed.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// The refusal's words.
    pub fn refusal(&self, what: &str, remote_flag: &str) -> String {
        format!(
            "{what} answers requests addressed to this machine only (Host must be localhost or a loopback address); \
             name others with --allow-host NAME, or see {remote_flag}"
        )
    }
}

/// `--allow-host` as given: a name (a port, if any, is not part of it).
fn normalize(name: &str) -> String {
    let name = name.trim();
    match name_of(name) {
        Some(n) => n.to_ascii_lowercase(),
        None => name.to_ascii_lowercase(),
    }
}

/// The name of a Host value: `name`, `name:port`, `[v6]` or `[v6]:port`;
/// None when the value is not one of those shapes (a port is 1 to 5
/// digits up to 65535; no spaces, no userinfo, no path).
pub fn name_of(host: &str) -> Option<&str> {
    let host = host.trim();
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        v6.parse::<Ipv6Addr>().ok()?;
        (&host[..v6.len() + 2], port)
    } else {
        match host.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) || p.parse::<u32>().ok()? > 65535 {
            return None;
        }
    }
    let ok_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'[' | b']' | b':');
    if name.is_empty() || !name.bytes().all(ok_char) {
        return None;
    }
    Some(name)
}

/// `localhost`, a dotted-quad address in 127.0.0.0/8, or `[::1]`.
fn is_loopback_name(name: &str) -> bool {
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    if let Some(v6) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    }
    // std's parser takes exactly four decimal octets: no `127.1`, no hex,
    // no trailing name.
    name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_and_allowed_ones_pass() {
        let check = HostCheck::new(true, &["Proxy.Internal".to_string()]);
        for ok in [
            "localhost",
            "LOCALHOST:8700",
            "127.0.0.1",
            "127.0.0.1:9",
            "127.5.6.7:65535",
            "[::1]",
            "[::1]:8700",
            "proxy.internal",
            "proxy.internal:443",
        ] {
            assert!(check.admits(Some(ok)), "{ok}");
        }
        for bad in [
            "127.evil.example",
            "127.0.0.1.nip.io",
            "127.0.0.1.nip.io:80",
            "127.1",
            "0x7f.0.0.1",
            "localhost.evil.example",
            "evil.example",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "127.0.0.1:80:80",
            "[::1",
            "[::2]:80",
            "[::ffff:10.0.0.1]",
            "::1",
            "user@127.0.0.1",
            "127.0.0.1/x",
            "",
            "10.0.0.1",
            "0.0.0.0",
        ] {
            assert!(!check.admits(Some(bad)), "{bad}");
        }
        assert!(!check.admits(None), "a request without Host");
        assert!(HostCheck::new(false, &[]).admits(Some("anything.example")));
    }
}
