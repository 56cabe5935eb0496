//! Gemini `streamGenerateContent`: SSE (CRLF), bare JSONL, or a streamed
//! JSON array. `thought: true` parts are reasoning; function calls arrive
//! whole, or (Vertex) as `partialArgs` built up by JSON path.

use serde_json::{Map, Value};

use super::array::ArraySplitter;
use super::sse::{deliver, Handler, Payload, StreamDecoder};
use super::{str_of, Args, Decoder, Format, Item, Out};

pub fn decoder() -> StreamDecoder<Gemini> {
    StreamDecoder::new(Gemini::default(), Format::Gemini)
}

/// A function call whose arguments are being streamed.
#[derive(Debug, Default)]
struct Partial {
    name: String,
    id: Option<String>,
    args: Value,
}

#[derive(Debug, Default)]
pub struct Gemini {
    response: Option<String>,
    started: bool,
    partial: Option<Partial>,
}

/// Sets `value` at a JSON path like `$.a.b[2].c` (appending to a string
/// when `append`), creating objects and arrays on the way.
/// Bounds on a `partialArgs` path: arguments are small, and an index or a
/// depth beyond these would only make memory or the stack run out.
const MAX_PATH_INDEX: usize = 10_000;
const MAX_PATH_DEPTH: usize = 64;

fn set_path(root: &mut Value, path: &str, value: Value, append: bool) -> Result<(), String> {
    let mut node = root;
    let path = path.trim_start_matches('$');
    let mut parts: Vec<Result<String, usize>> = Vec::new();
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        let (key, rest) = seg.split_once('[').map_or((seg, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            parts.push(Ok(key.to_string()));
        }
        for idx in rest.split('[').filter(|s| !s.is_empty()) {
            match idx.trim_end_matches(']').parse::<usize>() {
                Ok(i) if i <= MAX_PATH_INDEX => parts.push(Err(i)),
                Ok(_) | Err(_) => {
                    return Err(format!(
                        "a partialArgs path index over {MAX_PATH_INDEX} ({idx:?}); part skipped"
                    ))
                }
            }
        }
    }
    if parts.len() > MAX_PATH_DEPTH {
        return Err(format!(
            "a partialArgs path deeper than {MAX_PATH_DEPTH} levels; part skipped"
        ));
    }
    for part in parts {
        node = match part {
            Ok(key) => {
                if !node.is_object() {
                    *node = Value::Object(Map::new());
                }
                node.as_object_mut().expect("object").entry(key).or_insert(Value::Null)
            }
            Err(i) => {
                if !node.is_array() {
                    *node = Value::Array(Vec::new());
                }
                let arr = node.as_array_mut().expect("array");
                while arr.len() <= i {
                    arr.push(Value::Null);
                }
                &mut arr[i]
            }
        };
    }
    match (append, node.as_str(), value.as_str()) {
        (true, Some(old), Some(new)) => *node = Value::String(format!("{old}{new}")),
        _ => *node = value,
    }
    Ok(())
}

impl Gemini {
    fn finish_partial(&mut self, out: &mut Out<'_>) {
        if let Some(p) = self.partial.take() {
            let args = if p.args.is_null() {
                Value::Object(Map::new())
            } else {
                p.args
            };
            out.tool_call(p.id.as_deref(), &p.name, Args::Json(args));
        }
    }

    fn function_call(&mut self, fc: &Value, out: &mut Out<'_>) {
        let streamed = fc.get("partialArgs").is_some() || fc.get("willContinue").and_then(Value::as_bool) == Some(true);
        if let Some(name) = str_of(fc, "name") {
            if !streamed {
                self.finish_partial(out);
                let args = fc.get("args").cloned().unwrap_or(Value::Object(Map::new()));
                out.tool_call(str_of(fc, "id"), name, Args::Json(args));
                return;
            }
            self.finish_partial(out);
            self.partial = Some(Partial {
                name: name.to_string(),
                id: str_of(fc, "id").map(str::to_string),
                args: Value::Null,
            });
        }
        if let (Some(parts), Some(p)) = (fc.get("partialArgs").and_then(Value::as_array), self.partial.as_mut()) {
            for pa in parts {
                let path = str_of(pa, "jsonPath").unwrap_or("$");
                let value = ["stringValue", "numberValue", "boolValue"]
                    .iter()
                    .find_map(|k| pa.get(*k).cloned())
                    .unwrap_or(Value::Null);
                let append = value.is_string();
                if let Err(why) = set_path(&mut p.args, path, value, append) {
                    out.warn(why);
                }
            }
        }
        // An empty functionCall ends the streamed one.
        if fc.as_object().is_some_and(|o| o.is_empty()) {
            self.finish_partial(out);
        }
    }
}

impl Handler for Gemini {
    fn payload(&mut self, _event: Option<&str>, v: Value, out: &mut Out<'_>) {
        if let Some(e) = v.get("error") {
            out.note(format!("provider error: {}", str_of(e, "message").unwrap_or("unknown")));
            return;
        }
        let id = str_of(&v, "responseId").map(str::to_string);
        if !self.started || (id.is_some() && id != self.response) {
            self.finish_partial(out);
            self.started = true;
            out.request(id.as_deref());
            self.response = id;
        }
        let parts = v
            .get("candidates")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("content"))
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            self.part(part, out);
        }
        // Every chunk may carry running counts; the finished one has the total.
        let finished = v
            .get("candidates")
            .and_then(|c| c.get(0))
            .is_some_and(|c| c.get("finishReason").is_some_and(|f| !f.is_null()));
        if let Some(meta) = v.get("usageMetadata").filter(|_| finished) {
            let count = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
            out.usage_event(count("candidatesTokenCount") + count("thoughtsTokenCount"));
        }
    }

    fn finish(&mut self, out: &mut Out<'_>) {
        self.finish_partial(out);
    }
}

impl Gemini {
    /// One content part; shared with gemini-cli's `Content[]` files.
    pub fn part(&mut self, part: &Value, out: &mut Out<'_>) {
        if let Some(text) = str_of(part, "text") {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                out.reasoning(text);
            } else {
                out.content(text);
            }
        }
        if let Some(fc) = part.get("functionCall") {
            self.function_call(fc, out);
        }
        if let Some(fr) = part.get("functionResponse") {
            let response = fr.get("response");
            let ok = response.is_none_or(|r| r.get("error").is_none());
            out.tool_result(str_of(fr, "id").or(str_of(fr, "name")), ok, response.cloned());
        }
        if let Some(code) = part.get("executableCode") {
            out.tool_call(None, "code_execution", Args::Json(code.clone()));
        }
        if let Some(r) = part.get("codeExecutionResult") {
            let ok = str_of(r, "outcome") == Some("OUTCOME_OK");
            out.tool_result(None, ok, r.get("output").cloned());
        }
    }
}

/// Gemini's JSON-array stream (`streamGenerateContent` without `alt=sse`).
pub struct GeminiArray {
    splitter: ArraySplitter,
    handler: Gemini,
}

pub fn array_decoder() -> GeminiArray {
    GeminiArray {
        splitter: ArraySplitter::default(),
        handler: Gemini::default(),
    }
}

impl Decoder for GeminiArray {
    fn set_max_record(&mut self, bytes: usize) {
        self.splitter.max_record = bytes.max(1);
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Item>) {
        let handler = &mut self.handler;
        self.splitter.feed(bytes, |line, element| {
            let data = String::from_utf8_lossy(element);
            deliver(
                handler,
                Payload {
                    event: None,
                    data: &data,
                    line,
                },
                out,
            );
        });
        super::report_overlong(
            std::mem::take(&mut self.splitter.overlong),
            self.splitter.max_record,
            out,
        );
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.handler.finish(&mut Out::new(out, 0));
    }

    fn format(&self) -> Option<Format> {
        Some(Format::Gemini)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_paths_build_arguments() {
        let mut v = Value::Null;
        set_path(&mut v, "$.location", json!("San "), true).unwrap();
        set_path(&mut v, "$.location", json!("Francisco"), true).unwrap();
        set_path(&mut v, "$.days[1].temp", json!(3), false).unwrap();
        assert_eq!(v, json!({"location":"San Francisco","days":[null,{"temp":3}]}));
    }

    #[test]
    fn huge_indexes_and_deep_paths_are_refused() {
        let mut v = json!({"a": 1});
        assert!(set_path(&mut v, "$.days[1000000000]", json!(1), false).is_err());
        assert!(set_path(&mut v, "$.days[99999999999999999999999]", json!(1), false).is_err());
        assert!(set_path(&mut v, &format!("${}", ".a".repeat(100)), json!(1), false).is_err());
        assert_eq!(v, json!({"a": 1}));
    }
}
