//! OpenClaw's digests (openclaw@2026.9.6, `tool-loop-detection`): the
//! stable JSON of a call's arguments and of its outcome, and what an outcome
//! says beyond its digest (no progress, a terminal exec failure and its
//! failure identity, an unknown tool). OpenClaw compares sha256 hex digests
//! for equality only, so a digest here is XXH3-128 of the canonical form of
//! the same stable JSON (stable.rs): equal exactly when OpenClaw's are,
//! without a collision in practice.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::js_trim;
use super::super::keys::{js_number, json as json_text, KeyStyle};
use super::stable::{digest_fields, digest_value, digest_with, Field, CALL, ERROR};

/// A digest of a stable JSON text (OpenClaw's `sha256Hex`).
pub(crate) type Digest = u128;

/// A call's identity (`hashToolCall`): the tool with the digest of its
/// arguments' stable JSON (strings as they are).
pub(crate) fn call_digest(tool: &str, args: &Value) -> Digest {
    digest_with(|c| {
        c.tag(CALL);
        c.raw(tool);
        c.value(args, false);
    })
}

/// A field of an object: looked for key by key in a small one (hashing
/// the key cost more than the look; results and arguments have few).
pub(super) fn field<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 8 {
        map.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// A call's `args.action` when a string.
pub(crate) fn action(args: &Value) -> Option<&str> {
    field(args.as_object()?, "action").and_then(Value::as_str)
}

/// OpenClaw's tool name (`normalizeToolPolicyName`): trimmed, lower-cased,
/// `bash` is `exec`; a call without a name is `tool`.
pub(crate) fn tool_name(name: &str) -> String {
    if name.is_empty() {
        return "tool".to_string();
    }
    let lower = js_trim(name).to_lowercase();
    match lower.as_str() {
        "bash" => "exec".to_string(),
        "apply-patch" => "apply_patch".to_string(),
        "cron" => "automations".to_string(),
        _ => lower,
    }
}

/// What the guard records of an outcome (`hashToolOutcome`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    /// `resultHash`; `None` with `veto` false: nothing is recorded.
    pub result: Option<Digest>,
    /// `outcomeKind === "tool-loop-veto"`: the guard's own block.
    pub veto: bool,
    /// `outcomeKind === "terminal-exec-failure"`, with its failure identity.
    pub failure_identity: Option<Digest>,
    /// Errors and unchanged writes.
    pub no_progress: bool,
    /// The tool an "unknown tool" error names, lower-cased.
    pub unknown_tool: Option<String>,
}

impl Outcome {
    /// Whether anything is recorded.
    pub fn recorded(&self) -> bool {
        self.result.is_some() || self.veto
    }
}

/// The outcome of a call of `tool` with `args` whose log result is `ok`
/// with `output` (spec §10: a failure is an `Error` with the output as its
/// message; a string is a text result; an object with `content` or
/// `details` is OpenClaw's own result; other JSON is its text).
#[cfg(test)]
pub(crate) fn outcome(tool: &str, args: &Value, ok: bool, output: Option<&Value>) -> Outcome {
    outcome_of(tool, action(args), args.is_object(), ok, output)
}

/// [`outcome`] from what it reads of the arguments: their `action`, and
/// whether they are an object (what a call keeps until its result).
pub(crate) fn outcome_of(tool: &str, action: Option<&str>, object: bool, ok: bool, output: Option<&Value>) -> Outcome {
    if !ok {
        let message: std::borrow::Cow<'_, str> = match output {
            None => "".into(),
            Some(Value::String(s)) => s.as_str().into(),
            Some(v) => json_text(v, KeyStyle::Js).into(),
        };
        // `error.message || error.name`
        let text = if message.is_empty() { "Error" } else { &message };
        return Outcome {
            result: Some(digest_error(text)),
            no_progress: true,
            unknown_tool: unknown_tool(text),
            ..Outcome::default()
        };
    }
    let Some(output) = output else {
        return Outcome::default();
    };
    let empty = Map::new();
    // A string output is read where it is (no copy per result).
    let (details, text): (&Map<String, Value>, std::borrow::Cow<'_, str>) = match output {
        Value::Object(m) if field(m, "content").is_some() || field(m, "details").is_some() => {
            let details = field(m, "details").and_then(Value::as_object).unwrap_or(&empty);
            (details, content_text(field(m, "content")))
        }
        Value::String(s) => (&empty, js_trim(s).into()),
        other => {
            let json = json_text(other, KeyStyle::Js);
            let text = match js_trim(&json) {
                trimmed if trimmed.len() == json.len() => json.into(),
                trimmed => trimmed.to_string().into(),
            };
            (&empty, text)
        }
    };
    result_outcome(tool, action, object, details, &text)
}

/// `"error:" + digest(text)`: no result digest starts so (stable JSON does not).
fn digest_error(text: &str) -> Digest {
    digest_with(|c| {
        c.tag(ERROR);
        c.str(text, true);
    })
}

/// The `text` of every content entry with string `type` and `text`, joined and trimmed.
fn content_text(content: Option<&Value>) -> std::borrow::Cow<'_, str> {
    let Some(Value::Array(items)) = content else {
        return "".into();
    };
    let mut texts = items.iter().filter_map(|e| {
        let e = e.as_object()?;
        field(e, "type").filter(|t| t.is_string())?;
        field(e, "text").and_then(Value::as_str)
    });
    let Some(first) = texts.next() else {
        return "".into();
    };
    // One text (most results) is read where it is.
    match texts.next() {
        None => js_trim(first).into(),
        Some(second) => {
            let mut joined = format!("{first}\n{second}");
            for t in texts {
                joined.push('\n');
                joined.push_str(t);
            }
            js_trim(&joined).to_string().into()
        }
    }
}

/// A trimmed non-empty string field (`normalizeNullableString`).
fn nonblank<'a>(details: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    field(details, key)
        .and_then(Value::as_str)
        .map(js_trim)
        .filter(|s| !s.is_empty())
}

fn result_outcome(tool: &str, action: Option<&str>, object: bool, details: &Map<String, Value>, text: &str) -> Outcome {
    let status = field(details, "status").and_then(Value::as_str);
    if status == Some("blocked") && field(details, "deniedReason").and_then(Value::as_str) == Some("tool-loop") {
        return Outcome {
            veto: true,
            ..Outcome::default()
        };
    }
    if tool == "exec" {
        if let Some(o) = exec_outcome(details, status, text) {
            return o;
        }
    }
    if tool == "write" && field(details, "changed") == Some(&Value::Bool(false)) {
        return Outcome {
            result: Some(digest_fields(&mut [("status", Field::Text("unchanged"))])),
            no_progress: true,
            ..Outcome::default()
        };
    }
    if tool == "process" && object && matches!(action, Some("poll" | "log")) {
        let d = |k: &str| field(details, k);
        let mut fields = vec![
            ("action", Field::Text(action.unwrap_or_default())),
            ("status", Field::of(d("status"))),
            ("exitCode", Field::or_null(d("exitCode"))),
            ("exitSignal", Field::or_null(d("exitSignal"))),
            ("text", Field::Text(text)),
        ];
        if action == Some("poll") {
            fields.push(("aggregated", Field::or_null(d("aggregated"))));
        } else {
            fields.push(("totalLines", Field::or_null(d("totalLines"))));
            fields.push(("totalChars", Field::or_null(d("totalChars"))));
            fields.push(("truncated", Field::or_null(d("truncated"))));
        }
        return result(digest_fields(&mut fields));
    }
    if send_like(tool, action, object) {
        return result(digest_value(&strip_volatile(&Value::Object(details.clone()))));
    }
    result(digest_fields(&mut [
        ("details", Field::Object(details)),
        ("text", Field::Text(text)),
    ]))
}

fn result(digest: Digest) -> Outcome {
    Outcome {
        result: Some(digest),
        ..Outcome::default()
    }
}

/// `hashExecToolOutcome` and the terminal failure rule; `None` falls through.
fn exec_outcome(details: &Map<String, Value>, status: Option<&str>, text: &str) -> Option<Outcome> {
    let status = status?;
    let s = |k: &str| field(details, k).and_then(Value::as_str);
    let digest = match status {
        "running" => digest_fields(&mut [
            ("status", Field::Text(status)),
            ("tail", Field::Text(s("tail").unwrap_or(""))),
        ]),
        "completed" | "failed" => {
            let output = nonblank(details, "aggregated").unwrap_or(text);
            let exit = field(details, "exitCode").filter(|v| v.is_number());
            let timed_out = field(details, "timedOut") == Some(&Value::Bool(true));
            let digest = digest_fields(&mut [
                ("status", Field::Text(status)),
                ("exitCode", Field::or_null(exit)),
                ("timedOut", Field::Bool(timed_out)),
                ("output", Field::Text(output)),
            ]);
            let code = exit.and_then(Value::as_f64).filter(|c| c.is_finite() && *c != 0.0);
            if let Some(code) = code {
                let bare_exit = output
                    .strip_prefix("(Command exited with code ")
                    .and_then(|rest| rest.strip_suffix(')'))
                    .is_some_and(|n| n == js_number(code));
                if !timed_out && !output.is_empty() && !bare_exit {
                    let shape = volatile_free(output);
                    let identity = digest_fields(&mut [
                        ("status", Field::Text(status)),
                        ("exitCode", Field::Json(exit.expect("a code is a number"))),
                        ("timedOut", Field::Bool(false)),
                        ("output", Field::Text(&shape)),
                    ]);
                    return Some(Outcome {
                        result: Some(digest),
                        failure_identity: Some(identity),
                        ..Outcome::default()
                    });
                }
            }
            digest
        }
        "approval-pending" | "approval-unavailable" => {
            let opt = |k: &str| s(k).map_or(Field::Null, Field::Text);
            digest_fields(&mut [
                ("status", Field::Text(status)),
                ("reason", opt("reason")),
                ("host", opt("host")),
                ("command", Field::Text(s("command").unwrap_or(""))),
                ("warningText", Field::Text(s("warningText").unwrap_or(""))),
            ])
        }
        _ => return None,
    };
    Some(result(digest))
}

/// JavaScript's whitespace, for the patterns below (`\s` with the `u` flag).
const JS_SPACE: &str =
    r"[\t\n\x0B\x0C\r \u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}]";

/// `VOLATILE_EXEC_FAILURE_PATTERNS`: `\d` and `\b` are ASCII in JavaScript.
static VOLATILE: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    let d = "[0-9]";
    [
        format!(
            r"(?i){d}{{4}}-{d}{{2}}-{d}{{2}}[t ]{d}{{2}}:{d}{{2}}:{d}{{2}}(?:\.{d}{{1,6}})?(?:z|[+-]{d}{{2}}:{d}{{2}})?"
        ),
        format!(r"{d}{{1,2}}:{d}{{2}}:{d}{{2}}(?:\.{d}{{1,6}})?"),
        format!(r"(?i)(?-u:\b)(?:attempt|retry)(?-u:\b)(?:[#:=]|{JS_SPACE})*{d}+"),
        format!(r"(?i)(?-u:\b){d}+(?:\.{d}+)?{JS_SPACE}?(?:ns|us|ms|seconds?|minutes?|hours?|s)(?-u:\b)"),
        format!(r"(?i)(?-u:\b)(?:pid|ppid)(?-u:\b)(?:[#:=]|{JS_SPACE})*{d}+"),
    ]
    .iter()
    .map(|p| Regex::new(p).expect("a valid pattern"))
    .collect()
});

/// An exec failure's output with timestamps, durations, attempts and pids
/// as `#`. A pattern is not run on a text without what every match of it
/// holds (a `:` for the times, the words for attempts and pids, a digit for
/// all): most outputs need one or two of the five.
fn volatile_free(output: &str) -> std::borrow::Cow<'_, str> {
    let mut shape: std::borrow::Cow<'_, str> = output.into();
    for (i, pattern) in VOLATILE.iter().enumerate() {
        let b = shape.as_bytes();
        let possible = b.iter().any(u8::is_ascii_digit)
            && match i {
                0 | 1 => memchr::memchr(b':', b).is_some(),
                2 => find_ascii_ci(&shape, "attempt", 0).is_some() || find_ascii_ci(&shape, "retry", 0).is_some(),
                4 => find_ascii_ci(&shape, "pid", 0).is_some(),
                _ => true,
            };
        if !possible {
            continue;
        }
        if let std::borrow::Cow::Owned(s) = pattern.replace_all(&shape, "#") {
            shape = s.into();
        }
    }
    shape
}

/// `sessions_send`, or `message` with a sending action (provider plugins'
/// own send tools are not known to a log).
fn send_like(tool: &str, action: Option<&str>, object: bool) -> bool {
    const SEND: [&str; 9] = [
        "send",
        "broadcast",
        "reply",
        "thread-reply",
        "sendWithEffect",
        "sendAttachment",
        "upload-file",
        "sticker",
        "poll",
    ];
    tool == "sessions_send" || (tool == "message" && object && action.is_some_and(|a| SEND.contains(&a)))
}

/// `stripVolatileSendIds`: ids, receipts and times out, at every depth.
fn strip_volatile(v: &Value) -> Value {
    const VOLATILE_KEYS: [&str; 18] = [
        "messageId",
        "message_id",
        "messageIds",
        "platformMessageId",
        "platformMessageIds",
        "fileId",
        "file_id",
        "fileKey",
        "pollId",
        "poll_id",
        "receipt",
        "runId",
        "idempotencyKey",
        "ts",
        "timestamp",
        "sentAt",
        "deliveredAt",
        "createdAt",
    ];
    match v {
        Value::Array(items) => Value::Array(items.iter().map(strip_volatile).collect()),
        Value::Object(m) => {
            let is_str = |k: &str| field(m, k).is_some_and(Value::is_string);
            let message_like = is_str("id")
                && is_str("text")
                && (is_str("direction")
                    || is_str("senderId")
                    || is_str("accountId")
                    || field(m, "conversation").is_some_and(Value::is_object));
            Value::Object(
                m.iter()
                    .filter(|(k, _)| !(VOLATILE_KEYS.contains(&k.as_str()) || message_like && *k == "id"))
                    .map(|(k, v)| (k.clone(), strip_volatile(v)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// `extractUnknownToolName`: the tool an error names as unknown, lower-cased.
pub(crate) fn unknown_tool(error: &str) -> Option<String> {
    let raw = js_trim(error);
    if raw.is_empty() {
        return None;
    }
    let name = unknown_tool_first(raw).or_else(|| tool_not_found(raw))?;
    Some(name.to_ascii_lowercase())
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

fn name_at(s: &str, at: usize) -> &str {
    let len = s.as_bytes()[at..].iter().take_while(|&&c| is_name_byte(c)).count();
    &s[at..at + len]
}

/// JavaScript whitespace at `at`, with its length in bytes.
fn space_at(s: &str, at: usize) -> Option<usize> {
    s[at..]
        .chars()
        .next()
        .filter(|&c| super::super::js_space(c))
        .map(char::len_utf8)
}

/// Where `word` (lower-case ASCII) next occurs in `s` from `from`, in any
/// ASCII case (the patterns' `/i`; ASCII lower-casing keeps byte offsets).
fn find_ascii_ci(s: &str, word: &str, from: usize) -> Option<usize> {
    let (hay, w) = (s.as_bytes(), word.as_bytes());
    let first = w[0];
    let mut at = from;
    while at + w.len() <= hay.len() {
        let i = memchr::memchr2(first, first.to_ascii_uppercase(), &hay[at..=hay.len() - w.len()])?;
        let start = at + i;
        if hay[start..start + w.len()].eq_ignore_ascii_case(w) {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

/// `/unknown tool[:\s]+["']?([a-z0-9_.-]+)["']?/i`
fn unknown_tool_first(s: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(start) = find_ascii_ci(s, "unknown tool", from) {
        let mut at = start + "unknown tool".len();
        let gap = at;
        while at < s.len() {
            if s.as_bytes()[at] == b':' {
                at += 1;
            } else if let Some(n) = space_at(s, at) {
                at += n;
            } else {
                break;
            }
        }
        if at > gap {
            if matches!(s.as_bytes().get(at), Some(b'"' | b'\'')) {
                at += 1;
            }
            let name = if at < s.len() { name_at(s, at) } else { "" };
            if !name.is_empty() {
                return Some(name);
            }
        }
        from = start + 1;
    }
    None
}

/// `/tool\s+["']?([a-z0-9_.-]+)["']?\s+(?:not found|is not available)/i`
fn tool_not_found(s: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(start) = find_ascii_ci(s, "tool", from) {
        from = start + 1;
        let mut at = start + 4;
        let gap = at;
        while let Some(n) = space_at(s, at) {
            at += n;
        }
        if at == gap {
            continue;
        }
        if matches!(s.as_bytes().get(at), Some(b'"' | b'\'')) {
            at += 1;
        }
        let name = if at < s.len() { name_at(s, at) } else { "" };
        if name.is_empty() {
            continue;
        }
        at += name.len();
        if matches!(s.as_bytes().get(at), Some(b'"' | b'\'')) {
            at += 1;
        }
        let gap = at;
        while let Some(n) = space_at(s, at) {
            at += n;
        }
        let rest = &s.as_bytes()[at..];
        let starts = |w: &str| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w.as_bytes());
        if at > gap && (starts("not found") || starts("is not available")) {
            return Some(name);
        }
    }
    None
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
