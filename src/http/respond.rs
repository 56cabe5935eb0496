//! Whole answers of a local listener of loopscope's own (the proxy's
//! refusals, `--metrics`): status line, type, length, the body.

use std::io::{self, Write};
use std::net::TcpStream;

/// A whole response: status line, type, length, the body.
pub fn respond(stream: &TcpStream, status: u16, content_type: &str, body: &[u8], close: bool) -> io::Result<()> {
    respond_to(stream, "GET", status, content_type, body, close)
}

/// A whole response to a `method` request (to HEAD: without its body).
pub fn respond_to(
    stream: &TcpStream,
    method: &str,
    status: u16,
    content_type: &str,
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    };
    let mut out = stream;
    let connection = if close { "Connection: close\r\n" } else { "" };
    let allow = if status == 405 { "Allow: GET, HEAD\r\n" } else { "" };
    write!(
        out,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}{connection}\r\n",
        body.len()
    )?;
    if !method.eq_ignore_ascii_case("HEAD") {
        out.write_all(body)?;
    }
    out.flush()
}
