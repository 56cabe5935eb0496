//! What every command's output shares, below the modules that print: how
//! counts, reasons and input errors are worded (the viewer, `scan`,
//! `report`, `watch`), and the schema version of the JSON records.

/// The version of the `--json` records (`type` names the record); bumped
/// when a field changes meaning or goes away, not when one is added.
pub const SCHEMA: u32 = 1;

/// "1 detection", "2 detections", "0 matches": a count and its noun, the
/// noun plural unless the count is one (English nouns ending in s, x, ch
/// or sh take -es). Every count the viewer, `scan` and `report` print
/// goes through it.
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {}", plural(n, noun))
}

/// A reason for one line, its distinguishing part first: a detector
/// that quotes the agent's own message first (qwen-code's `"A potential
/// loop was detected…" (loop_type X) — what repeated`) reads `what
/// repeated (loop_type X) · "A potential loop…"`, so rows cut at 80
/// columns differ. Other reasons are as they are.
pub fn distinguishing_first(reason: &str) -> String {
    static QUOTED_FIRST: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = QUOTED_FIRST
        .get_or_init(|| regex::Regex::new(r#"^(?s)(.*?)("[^"]*") \(([^()]*)\) — (.+)$"#).expect("a valid pattern"));
    match re.captures(reason) {
        Some(c) => format!("{}{} ({}) · {}", &c[1], &c[4], &c[3], &c[2]),
        None => reason.to_string(),
    }
}

/// An input error as one clear line: "not a format loopscope reads
/// (tried …)" lists some 30 formats and variants (~500 chars), which a
/// message line cuts in its middle; it is said short, pointing at the
/// list `--format` has in `--help`. Other messages are as they are.
pub fn clear_error(msg: &str) -> String {
    const UNKNOWN: &str = "not a format loopscope reads (tried ";
    match msg.find(UNKNOWN) {
        Some(at) if msg.ends_with(')') => format!(
            "{}not a format loopscope reads (`--help` lists the formats `--format` takes)",
            &msg[..at]
        ),
        _ => msg.to_string(),
    }
}

/// The noun as a count of `n` needs it ("line" or "lines").
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        return noun.to_string();
    }
    // "bad line" → "bad lines": the last word takes the plural.
    let es = ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end));
    format!("{noun}{}", if es { "es" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_message_goes_after_what_repeated() {
        let qwen =
            "\"A potential loop was detected.\" (loop_type action_stagnation) — 8 calls of \"run_tests\" in a row";
        assert_eq!(
            distinguishing_first(qwen),
            "8 calls of \"run_tests\" in a row (loop_type action_stagnation) · \"A potential loop was detected.\""
        );
        let status = format!("at event 64: {qwen}");
        assert!(distinguishing_first(&status).starts_with("at event 64: 8 calls of"));
        let plain = "2 blocks repeat: 8 consecutive blocks (needs 6)";
        assert_eq!(distinguishing_first(plain), plain);
    }

    #[test]
    fn counts_say_one_thing_in_the_singular() {
        assert_eq!(count(1, "detection"), "1 detection");
        assert_eq!(count(0, "detection"), "0 detections");
        assert_eq!(count(2, "match"), "2 matches");
        assert_eq!(count(1, "bad line"), "1 bad line");
        assert_eq!(count(3, "bad line"), "3 bad lines");
    }
}
