//! OpenClaw's digests (openclaw@2026.9.6, `tool-loop-detection`): the
//! stable JSON of a call's arguments and of its outcome, and what an outcome
//! says beyond its digest (no progress, a terminal exec failure and its
//! failure identity, an unknown tool). OpenClaw compares sha256 hex digests
//! for equality only, so a digest here is XXH3-128 of the same text: equal
//! exactly when OpenClaw's are, without a collision in practice.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::super::js_trim;
use super::super::keys::{js_number, json as json_text, KeyStyle};

/// A digest of a stable JSON text (OpenClaw's `sha256Hex`).
pub(crate) type Digest = u128;

fn digest_of(text: &str) -> Digest {
    twox_hash::XxHash3_128::oneshot(text.as_bytes())
}

/// A call's identity (`hashToolCall`): the tool with the digest of its
/// arguments' stable JSON (strings as they are).
pub(crate) fn call_digest(tool: &str, args: &Value) -> Digest {
    // `tool:sha256(args)`: the name's length first, so no name and
    // arguments run together into another pair.
    let mut out = String::with_capacity(tool.len() + 96);
    out.push_str(&tool.len().to_string());
    out.push(':');
    out.push_str(tool);
    out.push(':');
    write_stable(&mut out, args, false);
    digest_of(&out)
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

/// One field of an object OpenClaw builds to digest: JavaScript's
/// `undefined` is written as the word by its stable JSON.
enum Field<'a> {
    Undefined,
    Null,
    Bool(bool),
    Json(&'a Value),
    /// An object by reference (no `Value` made of a borrowed map).
    Object(&'a Map<String, Value>),
    Text(&'a str),
}

impl<'a> Field<'a> {
    /// `value ?? null`.
    fn or_null(v: Option<&'a Value>) -> Field<'a> {
        match v {
            None | Some(Value::Null) => Field::Null,
            Some(v) => Field::Json(v),
        }
    }

    /// `value` as it is (`undefined` when absent).
    fn of(v: Option<&'a Value>) -> Field<'a> {
        v.map_or(Field::Undefined, Field::Json)
    }
}

/// The digest of an object OpenClaw builds, its keys sorted as stable JSON sorts them.
fn digest_fields(fields: &mut [(&str, Field<'_>)]) -> Digest {
    fields.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    // Room for the texts at once (a tool's output is most of it).
    let texts: usize = fields
        .iter()
        .map(|f| if let Field::Text(t) = f.1 { t.len() } else { 0 })
        .sum();
    let mut out = String::with_capacity(128 + texts + texts / 8);
    out.push('{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(&mut out, k, true);
        out.push(':');
        match v {
            Field::Undefined => out.push_str("undefined"),
            Field::Null => out.push_str("null"),
            Field::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Field::Json(v) => write_stable(&mut out, v, true),
            Field::Object(m) => write_object(&mut out, m, true),
            Field::Text(s) => write_str(&mut out, s, true),
        }
    }
    out.push('}');
    digest_of(&out)
}

/// The digest of a JSON value (`digestToolOutcome`).
fn digest_value(v: &Value) -> Digest {
    let mut out = String::new();
    write_stable(&mut out, v, true);
    digest_of(&out)
}

/// `stableStringify`: object keys sorted by UTF-16 code units at every
/// depth, numbers as JavaScript writes them; `outcome`: strings (and keys)
/// with their untrusted-content marker ids zeroed, as outcome digests are.
fn write_stable(out: &mut String, v: &Value, outcome: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => write_str(out, s, outcome),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_stable(out, item, outcome);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, outcome),
    }
}

/// An object as `stableStringify` writes it.
fn write_object(out: &mut String, map: &Map<String, Value>, outcome: bool) {
    out.push('{');
    let mut entries: Vec<(std::borrow::Cow<'_, str>, &String, &Value)> = map
        .iter()
        .map(|(k, v)| (if outcome { zero_markers(k) } else { k.into() }, k, v))
        .collect();
    entries.sort_by(|a, b| {
        a.0.encode_utf16()
            .cmp(b.0.encode_utf16())
            .then_with(|| a.1.encode_utf16().cmp(b.1.encode_utf16()))
    });
    for (i, (k, _, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k, false);
        out.push(':');
        write_stable(out, v, outcome);
    }
    out.push('}');
}

/// A string as `JSON.stringify` writes it, markers zeroed when `outcome`
/// (escaped in place: serde_json's `to_string` made a string per value and
/// was the profile's top cost on tool-heavy logs).
fn write_str(out: &mut String, s: &str, outcome: bool) {
    let s = if outcome { zero_markers(s) } else { s.into() };
    out.push('"');
    crate::detect::keys::write_escaped(out, &s);
    out.push('"');
}

const OPEN: &str = "<<<EXTERNAL_UNTRUSTED_CONTENT id=";
const END: &str = "<<<END_EXTERNAL_UNTRUSTED_CONTENT id=";
const ZERO_ID: &str = "0000000000000000";

/// OpenClaw's untrusted-content markers with their 16-hex id replaced by
/// zeros where both ids agree and the quoting is consistent (the regex in
/// `digestToolOutcome`, with its back-references, read by hand).
fn zero_markers(s: &str) -> std::borrow::Cow<'_, str> {
    // One searcher for every string (`str::contains` builds one per call).
    static OPEN_FINDER: LazyLock<memchr::memmem::Finder<'static>> = LazyLock::new(|| memchr::memmem::Finder::new(OPEN));
    if OPEN_FINDER.find(s.as_bytes()).is_none() {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut done = 0; // bytes of `s` already in `out`
    let mut from = 0; // where the next match may start
    while let Some(found) = s[from..].find(OPEN) {
        let start = from + found;
        match marker_at(s, start) {
            Some((end, id_at, end_id_at, replace)) => {
                if replace {
                    out.push_str(&s[done..id_at]);
                    out.push_str(ZERO_ID);
                    out.push_str(&s[id_at + 16..end_id_at]);
                    out.push_str(ZERO_ID);
                    done = end_id_at + 16;
                }
                from = end;
            }
            None => from = start + 1,
        }
    }
    out.push_str(&s[done..]);
    out.into()
}

/// A whole marker pair starting at `start`: (its end, the opening id's
/// offset, the closing id's offset, whether the callback replaces it).
fn marker_at(s: &str, start: usize) -> Option<(usize, usize, usize, bool)> {
    let b = s.as_bytes();
    let mut at = start + OPEN.len();
    let escapes = b[at..].iter().take_while(|&&c| c == b'\\').count();
    at += escapes;
    if b.get(at) != Some(&b'"') {
        return None;
    }
    at += 1;
    let id = s.get(at..at + 16)?;
    if !id.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)) {
        return None;
    }
    let id_at = at;
    at += 16;
    let close = format!("{}\">>>", "\\".repeat(escapes));
    if !s[at..].starts_with(&close) {
        return None;
    }
    at += close.len();
    // The middle holds no marker: it ends at the first one, which must close.
    let middle_from = at;
    let next_open = s[at..].find(OPEN).map(|i| at + i);
    let next_end = s[at..].find(END).map(|i| at + i)?;
    if next_open.is_some_and(|o| o < next_end) {
        return None;
    }
    let middle = &s[middle_from..next_end];
    at = next_end + END.len();
    let quote = format!("{}\"", "\\".repeat(escapes));
    if !s[at..].starts_with(&quote) {
        return None;
    }
    at += quote.len();
    if s.get(at..at + 16) != Some(id) {
        return None;
    }
    let end_id_at = at;
    at += 16;
    if !s[at..].starts_with(&close) {
        return None;
    }
    at += close.len();
    let period = escapes + 1;
    let odd_escapes = escapes & (escapes + 1) != 0;
    let bad_quote = quote_runs(middle).any(|run| run % period != 0);
    Some((at, id_at, end_id_at, !(odd_escapes || bad_quote)))
}

/// The length of each `\\*"` run not preceded by a backslash (`(?<!\\)\\*"`).
fn quote_runs(s: &str) -> impl Iterator<Item = usize> + '_ {
    let b = s.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if b[i] == b'\\' && (i == 0 || b[i - 1] != b'\\') {
                let run = b[i..].iter().take_while(|&&c| c == b'\\').count();
                if b.get(i + run) == Some(&b'"') {
                    i += run + 1;
                    return Some(run + 1);
                }
                i += run;
            } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\\') {
                i += 1;
                return Some(1);
            } else {
                i += 1;
            }
        }
        None
    })
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
pub(crate) fn outcome(tool: &str, args: &Value, ok: bool, output: Option<&Value>) -> Outcome {
    if !ok {
        let message = match output {
            None => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => json_text(v, KeyStyle::Js),
        };
        // `error.message || error.name`
        let text = if message.is_empty() { "Error" } else { message.as_str() };
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
        Value::Object(m) if m.contains_key("content") || m.contains_key("details") => {
            let details = m.get("details").and_then(Value::as_object).unwrap_or(&empty);
            (details, content_text(m.get("content")).into())
        }
        Value::String(s) => (&empty, js_trim(s).into()),
        other => (&empty, js_trim(&json_text(other, KeyStyle::Js)).to_string().into()),
    };
    result_outcome(tool, args, details, &text)
}

/// `"error:" + digest(text)`: no result digest starts so (stable JSON does not).
fn digest_error(text: &str) -> Digest {
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str("error:");
    write_str(&mut out, text, true);
    digest_of(&out)
}

/// The `text` of every content entry with string `type` and `text`, joined and trimmed.
fn content_text(content: Option<&Value>) -> String {
    let Some(Value::Array(items)) = content else {
        return String::new();
    };
    let texts: Vec<&str> = items
        .iter()
        .filter(|e| e.get("type").is_some_and(Value::is_string))
        .filter_map(|e| e.get("text").and_then(Value::as_str))
        .collect();
    js_trim(&texts.join("\n")).to_string()
}

/// A trimmed non-empty string field (`normalizeNullableString`).
fn nonblank<'a>(details: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    details
        .get(key)
        .and_then(Value::as_str)
        .map(js_trim)
        .filter(|s| !s.is_empty())
}

fn result_outcome(tool: &str, args: &Value, details: &Map<String, Value>, text: &str) -> Outcome {
    let status = details.get("status").and_then(Value::as_str);
    if status == Some("blocked") && details.get("deniedReason").and_then(Value::as_str) == Some("tool-loop") {
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
    if tool == "write" && details.get("changed") == Some(&Value::Bool(false)) {
        return Outcome {
            result: Some(digest_fields(&mut [("status", Field::Text("unchanged"))])),
            no_progress: true,
            ..Outcome::default()
        };
    }
    let action = args.get("action").and_then(Value::as_str);
    if tool == "process" && args.is_object() && matches!(action, Some("poll" | "log")) {
        let d = |k: &str| details.get(k);
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
    if send_like(tool, action, args) {
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
    let s = |k: &str| details.get(k).and_then(Value::as_str);
    let digest = match status {
        "running" => digest_fields(&mut [
            ("status", Field::Text(status)),
            ("tail", Field::Text(s("tail").unwrap_or(""))),
        ]),
        "completed" | "failed" => {
            let output = nonblank(details, "aggregated").unwrap_or(text);
            let exit = details.get("exitCode").filter(|v| v.is_number());
            let timed_out = details.get("timedOut") == Some(&Value::Bool(true));
            let digest = digest_fields(&mut [
                ("status", Field::Text(status)),
                ("exitCode", Field::or_null(exit)),
                ("timedOut", Field::Bool(timed_out)),
                ("output", Field::Text(output)),
            ]);
            let code = exit.and_then(Value::as_f64).filter(|c| c.is_finite() && *c != 0.0);
            if let Some(code) = code {
                if !timed_out
                    && !output.is_empty()
                    && output != format!("(Command exited with code {})", js_number(code))
                {
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

/// An exec failure's output with timestamps, durations, attempts and pids as `#`.
fn volatile_free(output: &str) -> String {
    let mut shape = output.to_string();
    for pattern in VOLATILE.iter() {
        if let std::borrow::Cow::Owned(s) = pattern.replace_all(&shape, "#") {
            shape = s;
        }
    }
    shape
}

/// `sessions_send`, or `message` with a sending action (provider plugins'
/// own send tools are not known to a log).
fn send_like(tool: &str, action: Option<&str>, args: &Value) -> bool {
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
    tool == "sessions_send" || (tool == "message" && args.is_object() && action.is_some_and(|a| SEND.contains(&a)))
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
            let is_str = |k: &str| m.get(k).is_some_and(Value::is_string);
            let message_like = is_str("id")
                && is_str("text")
                && (is_str("direction")
                    || is_str("senderId")
                    || is_str("accountId")
                    || m.get("conversation").is_some_and(Value::is_object));
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

/// `/unknown tool[:\s]+["']?([a-z0-9_.-]+)["']?/i`
fn unknown_tool_first(s: &str) -> Option<&str> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("unknown tool") {
        let mut at = from + i + "unknown tool".len();
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
        from += i + 1;
    }
    None
}

/// `/tool\s+["']?([a-z0-9_.-]+)["']?\s+(?:not found|is not available)/i`
fn tool_not_found(s: &str) -> Option<&str> {
    let lower = s.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("tool") {
        let start = from + i;
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
        if at > gap && (lower[at..].starts_with("not found") || lower[at..].starts_with("is not available")) {
            return Some(name);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn args_key_order_does_not_matter_and_names_are_normalised() {
        assert_eq!(
            call_digest("read", &json!({"a": 1, "b": [1.0, "x"]})),
            call_digest("read", &json!({"b": [1, "x"], "a": 1}))
        );
        assert_ne!(
            call_digest("read", &json!({"a": 1})),
            call_digest("grep", &json!({"a": 1}))
        );
        assert_eq!(tool_name(" Bash "), "exec");
        assert_eq!(tool_name(""), "tool");
        assert_eq!(tool_name("Web_Fetch"), "web_fetch");
    }

    #[test]
    fn unknown_tools_are_named_as_openclaw_reads_them() {
        assert_eq!(unknown_tool("Unknown tool: Web_Fetch").as_deref(), Some("web_fetch"));
        assert_eq!(unknown_tool("unknown tool \"x.y\" requested").as_deref(), Some("x.y"));
        assert_eq!(unknown_tool("Tool 'grep' not found").as_deref(), Some("grep"));
        assert_eq!(
            unknown_tool("the tool  fetch is not available").as_deref(),
            Some("fetch")
        );
        assert_eq!(unknown_tool("unknown toolbox"), None);
        assert_eq!(unknown_tool("Tool grep failed"), None);
        assert_eq!(unknown_tool("未知 unknown tool：x"), None);
        assert_eq!(unknown_tool(""), None);
    }

    #[test]
    fn exec_failures_share_an_identity_across_durations() {
        let run = |cmd: &str, out: &str| {
            outcome(
                "exec",
                &json!({"command": cmd}),
                true,
                Some(
                    &json!({"content": [{"type": "text", "text": out}], "details": {"status": "completed", "exitCode": 1, "aggregated": out}}),
                ),
            )
        };
        let a = run("npm test", "FAIL\nDone in 1.00s at 12:00:01 pid 42");
        let b = run("npm test -- x", "FAIL\nDone in 2.53s at 12:00:09 pid 7");
        assert_ne!(a.result, b.result);
        assert!(a.failure_identity.is_some());
        assert_eq!(a.failure_identity, b.failure_identity);
        let ok = run("npm test", "(Command exited with code 1)");
        assert_eq!(ok.failure_identity, None);
    }

    #[test]
    fn outcomes_follow_the_spec_mapping() {
        let read = json!({"path": "a"});
        assert!(!outcome("read", &read, true, None).recorded());
        let e = outcome("read", &read, false, None);
        assert_eq!(e.result, outcome("read", &read, false, Some(&json!("Error"))).result);
        assert!(e.no_progress);
        // A text result and the same text as OpenClaw's result object agree.
        assert_eq!(
            outcome("read", &read, true, Some(&json!(" hi \n"))).result,
            outcome(
                "read",
                &read,
                true,
                Some(&json!({"content": [{"type": "text", "text": "hi"}]}))
            )
            .result
        );
        // An error and a result with the same text differ.
        assert_ne!(
            outcome("read", &read, true, Some(&json!("x"))).result,
            outcome("read", &read, false, Some(&json!("x"))).result
        );
        let veto = json!({"details": {"status": "blocked", "deniedReason": "tool-loop"}});
        assert!(outcome("read", &read, true, Some(&veto)).veto);
        let w = outcome("write", &read, true, Some(&json!({"details": {"changed": false}})));
        assert!(w.no_progress);
        // Sending: ids and the text are not hashed.
        let send = json!({"action": "send"});
        assert_eq!(
            outcome(
                "message",
                &send,
                true,
                Some(&json!({"content": [{"type": "text", "text": "m1"}], "details": {"ok": true, "messageId": "1"}}))
            )
            .result,
            outcome(
                "message",
                &send,
                true,
                Some(&json!({"content": [{"type": "text", "text": "m2"}], "details": {"ok": true, "messageId": "2"}}))
            )
            .result
        );
        // CJK and emoji are text like any other.
        assert_ne!(
            outcome("read", &read, true, Some(&json!("思考 👩‍💻"))).result,
            outcome("read", &read, true, Some(&json!("思考 👩"))).result
        );
    }

    #[test]
    fn untrusted_markers_lose_their_ids_when_consistent() {
        let wrap = |id: &str, end: &str, body: &str| {
            format!(
                "<<<EXTERNAL_UNTRUSTED_CONTENT id=\"{id}\">>>{body}<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\"{end}\">>>"
            )
        };
        let a = wrap("0123456789abcdef", "0123456789abcdef", "page");
        let b = wrap("fedcba9876543210", "fedcba9876543210", "page");
        assert_eq!(zero_markers(&a), zero_markers(&b));
        assert_eq!(zero_markers(&a), wrap(ZERO_ID, ZERO_ID, "page"));
        // Ids that differ, or a stray quote inside, keep the text as it is.
        let c = wrap("0123456789abcdef", "fedcba9876543210", "page");
        assert_eq!(zero_markers(&c), c);
        let d = "<<<EXTERNAL_UNTRUSTED_CONTENT id=\\\"0123456789abcdef\\\">>>say \"x\"<<<END_EXTERNAL_UNTRUSTED_CONTENT id=\\\"0123456789abcdef\\\">>>".to_string();
        assert_eq!(zero_markers(&d), d);
        assert_eq!(zero_markers("plain"), "plain");
    }
}
