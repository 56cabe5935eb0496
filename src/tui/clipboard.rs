//! Copying to the system clipboard through the terminal (OSC 52), which
//! works over SSH and inside tmux (with `set-clipboard on`) without any
//! clipboard library. The text is base64-encoded, so nothing in it reaches
//! the terminal as a control sequence.

/// Terminals drop larger OSC 52 payloads; longer text is cut to this.
pub const MAX_COPY: usize = 512 * 1024;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (RFC 4648).
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The escape sequence that puts `text` (cut at a char boundary to
/// [`MAX_COPY`] bytes) on the clipboard.
pub fn osc52(text: &str) -> String {
    let cut = (0..=text.len().min(MAX_COPY))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("\x1b]52;c;{}\x07", base64(&text.as_bytes()[..cut]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_rfc_4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
        assert_eq!(base64("思".as_bytes()), "5oCd");
    }

    #[test]
    fn the_sequence_carries_no_raw_control_characters() {
        let s = osc52("\u{1b}]0;evil\u{7}");
        assert!(s.starts_with("\u{1b}]52;c;") && s.ends_with('\u{7}'));
        assert!(!s[7..s.len() - 1].chars().any(|c| c.is_control()));
        let long = "思".repeat(MAX_COPY);
        assert!(osc52(&long).len() < MAX_COPY * 2);
    }
}
