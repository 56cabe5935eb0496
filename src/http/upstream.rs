//! The proxy's client side: upstream URLs, connections over TCP or TLS
//! (rustls with the webpki roots) kept in a small pool, and the request
//! sent on one. The TCP socket under each connection is kept apart so a
//! watcher can shut it down from another thread when the client goes away.

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;

use crate::http::{self, HeadError, ResponseHead};

/// Where requests are forwarded: a base URL (`https://api.openai.com/v1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// The URL's path without a trailing slash (`/v1`, or empty).
    pub base_path: String,
}

impl Upstream {
    /// Parses an `http://` or `https://` base URL. Credentials and queries
    /// are refused: the agent's own key variable or header carries a key.
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let bad = |why: &str| format!("upstream {:?}: {why}", shown_url(url));
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("expected an http:// or https:// URL"));
        };
        if rest.contains(['?', '#']) {
            return Err(bad("a base URL has no query or fragment"));
        }
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.contains('@') {
            return Err(bad("credentials do not go in the URL; the agent sends its key"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("an unclosed [IPv6] host"))?;
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| bad("a port from 1 to 65535"))?,
            None if tls => 443,
            None => 80,
        };
        Ok(Upstream {
            tls,
            host,
            port,
            base_path: path.trim_end_matches('/').to_string(),
        })
    }

    /// The URL as it may be printed and recorded.
    pub fn url(&self) -> String {
        format!(
            "{}://{}{}",
            if self.tls { "https" } else { "http" },
            self.host_header(),
            self.base_path
        )
    }

    /// The Host header's value.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => host,
            (_, port) => format!("{host}:{port}"),
        }
    }

    /// The request target upstream for `rest` (path and query after the
    /// route): the base path joined in front, unless `rest` already starts
    /// with it (a client configured with `/v1` itself).
    pub fn target(&self, rest: &str) -> String {
        let rest = if rest.is_empty() || rest.starts_with('?') {
            format!("/{rest}")
        } else {
            rest.to_string()
        };
        let base = &self.base_path;
        let path = rest.split('?').next().unwrap_or_default();
        if base.is_empty() || path == base || path.starts_with(&format!("{base}/")) {
            rest
        } else {
            format!("{base}{rest}")
        }
    }
}

/// A URL without credentials or query, fit to print.
pub fn shown_url(url: &str) -> String {
    let no_query = url.split(['?', '#']).next().unwrap_or_default();
    match no_query.split_once("://") {
        Some((scheme, rest)) => match rest.split('/').next().and_then(|a| a.rsplit_once('@')) {
            Some((_, host)) => format!("{scheme}://…@{host}{}", &rest[rest.find('/').unwrap_or(rest.len())..]),
            None => no_query.to_string(),
        },
        None => no_query.to_string(),
    }
}

/// The bytes of one connection: plain TCP or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => match s.read(buf) {
                // A server that closes without close_notify ends the body
                // as EOF does; a truncation matters only where the framing
                // says more was due, and the body reader says so.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// One connection to an upstream.
pub struct Connection {
    reader: BufReader<Stream>,
    /// The socket under it, to shut down from a watcher.
    tcp: TcpStream,
    /// It served a request before (a failure on it may be a stale keep-alive).
    pub reused: bool,
}

impl Connection {
    /// A handle that ends this connection from another thread.
    pub fn abort_handle(&self) -> io::Result<TcpStream> {
        self.tcp.try_clone()
    }

    /// Sends a request head and body.
    pub fn send(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let w = self.reader.get_mut();
        w.write_all(head)?;
        w.write_all(body)?;
        w.flush()
    }

    /// Where a request (a streamed body) is written.
    pub fn writer(&mut self) -> &mut impl Write {
        self.reader.get_mut()
    }

    /// Reads the response head; `Ok(None)` if the upstream closed first.
    pub fn response_head(&mut self) -> io::Result<Option<ResponseHead>> {
        match http::read_response_head(&mut self.reader) {
            Ok(h) => Ok(h),
            Err(HeadError::Io(e)) => Err(e),
            Err(HeadError::Bad(_, why)) => Err(io::Error::new(io::ErrorKind::InvalidData, why)),
        }
    }

    /// The next piece of the response body.
    pub fn read_body(&mut self, body: &mut http::BodyReader, buf: &mut [u8]) -> io::Result<usize> {
        body.read(&mut self.reader, buf)
    }

    pub fn shutdown(&self) {
        let _ = self.tcp.shutdown(Shutdown::Both);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PoolKey {
    tls: bool,
    host: String,
    port: u16,
}

/// Opens connections to upstreams and keeps idle ones for the next request.
pub struct Client {
    tls: Arc<rustls::ClientConfig>,
    pool: Mutex<HashMap<PoolKey, Vec<(Connection, Instant)>>>,
    pub connect_timeout: Duration,
    /// The longest wait for the next byte from an upstream.
    pub read_timeout: Duration,
}

/// An idle connection older than this is not reused (servers close theirs).
const POOL_IDLE: Duration = Duration::from_secs(30);
/// Idle connections kept per upstream.
const POOL_MAX: usize = 16;

impl Client {
    /// A client trusting the webpki roots, and the certificates in the
    /// PEM file SSL_CERT_FILE names (a company's or a local CA), as curl does.
    pub fn new(connect_timeout: Duration, read_timeout: Duration) -> Result<Client, String> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
            use rustls::pki_types::{pem::PemObject, CertificateDer};
            let shown = loopscope_core::sanitize::path(std::path::Path::new(&file));
            let certs = CertificateDer::pem_file_iter(&file).map_err(|e| format!("SSL_CERT_FILE {shown}: {e}"))?;
            let mut added = 0;
            for cert in certs {
                let cert = cert.map_err(|e| format!("SSL_CERT_FILE {shown}: {e}"))?;
                roots.add(cert).map_err(|e| format!("SSL_CERT_FILE {shown}: {e}"))?;
                added += 1;
            }
            if added == 0 {
                return Err(format!("SSL_CERT_FILE {shown}: no certificate in it"));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Client {
            tls: Arc::new(config),
            pool: Mutex::new(HashMap::new()),
            connect_timeout,
            read_timeout,
        })
    }

    fn key(up: &Upstream) -> PoolKey {
        PoolKey {
            tls: up.tls,
            host: up.host.clone(),
            port: up.port,
        }
    }

    /// An idle pooled connection, or a new one.
    pub fn connect(&self, up: &Upstream) -> io::Result<Connection> {
        if let Some(conn) = self.pooled(up) {
            return Ok(conn);
        }
        self.open(up)
    }

    fn pooled(&self, up: &Upstream) -> Option<Connection> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let idle = pool.get_mut(&Client::key(up))?;
        while let Some((conn, since)) = idle.pop() {
            if since.elapsed() < POOL_IDLE {
                return Some(conn);
            }
        }
        None
    }

    /// A new connection (TCP, then TLS for https).
    pub fn open(&self, up: &Upstream) -> io::Result<Connection> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{} has no address", up.host));
        let addrs = (up.host.as_str(), up.port).to_socket_addrs()?;
        let mut tcp = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.connect_timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    last = io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "timed out: no connection within {} s",
                            self.connect_timeout.as_secs_f64()
                        ),
                    )
                }
                Err(e) => last = e,
            }
        }
        let tcp = tcp.ok_or(last)?;
        // Each event goes out as it comes: no Nagle delay on the way.
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(self.read_timeout))?;
        tcp.set_write_timeout(Some(self.read_timeout))?;
        let handle = tcp.try_clone()?;
        let stream = if up.tls {
            let name = ServerName::try_from(up.host.clone())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: {e}", up.host)))?;
            let conn = rustls::ClientConnection::new(self.tls.clone(), name).map_err(io::Error::other)?;
            Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
        } else {
            Stream::Plain(tcp)
        };
        Ok(Connection {
            reader: BufReader::with_capacity(64 * 1024, stream),
            tcp: handle,
            reused: false,
        })
    }

    /// Keeps a connection whose response was read to its end.
    pub fn give_back(&self, up: &Upstream, mut conn: Connection) {
        if !conn.reader.buffer().is_empty() {
            return; // bytes past the response: not a connection to trust
        }
        conn.reused = true;
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let idle = pool.entry(Client::key(up)).or_default();
        idle.retain(|(_, since)| since.elapsed() < POOL_IDLE);
        if idle.len() < POOL_MAX {
            idle.push((conn, Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_parse_and_join() {
        let u = Upstream::parse("https://api.openai.com/v1/").unwrap();
        assert_eq!((u.tls, u.port, u.base_path.as_str()), (true, 443, "/v1"));
        assert_eq!(u.target("/chat/completions"), "/v1/chat/completions");
        assert_eq!(u.target("/v1/chat/completions?x=1"), "/v1/chat/completions?x=1");
        assert_eq!(u.target("/v1x/models"), "/v1/v1x/models");
        assert_eq!(u.target(""), "/v1/");
        let g = Upstream::parse("http://[::1]:8080").unwrap();
        assert_eq!(
            (g.host.as_str(), g.port, g.host_header()),
            ("::1", 8080, "[::1]:8080".to_string())
        );
        assert_eq!(
            g.target("/v1beta/models/x:streamGenerateContent?alt=sse"),
            "/v1beta/models/x:streamGenerateContent?alt=sse"
        );
        assert_eq!(Upstream::parse("http://h").unwrap().url(), "http://h");
        for bad in [
            "ftp://x",
            "https://user:key@host/v1",
            "https://host/v1?key=secret",
            "http://:80",
            "http://h:99999",
        ] {
            let e = Upstream::parse(bad).unwrap_err();
            assert!(!e.contains("secret") && !e.contains("user:key"), "{e}");
        }
    }

    #[test]
    fn printed_urls_lose_credentials_and_queries() {
        assert_eq!(shown_url("https://u:p@h.com/v1?key=k"), "https://…@h.com/v1");
        assert_eq!(shown_url("http://h/x?key=k"), "http://h/x");
    }
}
