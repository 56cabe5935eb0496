//! OpenAI Chat Completions streams (`chat.completion.chunk`), SSE or bare
//! JSONL, as DeepSeek, Qwen, GLM, Kimi, OpenRouter, Groq, vLLM, Mistral and
//! others send them; and Ollama's native `/api/chat` NDJSON.

use std::collections::BTreeMap;

use serde_json::Value;

use super::sse::{Handler, StreamDecoder};
use super::{str_of, Args, Format, Out};
use crate::event::Ts;
use crate::event::TOKEN_IDS;

pub fn decoder() -> StreamDecoder<OpenAiChat> {
    StreamDecoder::new(OpenAiChat::default(), Format::OpenaiChat)
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct Call {
    id: String,
    name: String,
    args: String,
}

/// Splits `<think>…</think>` out of answer text, across deltas: a tag may
/// arrive in pieces ("<thi", "nk>").
#[derive(Debug, Default)]
pub struct ThinkTags {
    inside: bool,
    pending: String,
}

impl ThinkTags {
    pub fn split(&mut self, text: &str, out: &mut Out<'_>) {
        let mut s = std::mem::take(&mut self.pending);
        s.push_str(text);
        loop {
            let tag = if self.inside { "</think>" } else { "<think>" };
            if let Some(i) = s.find(tag) {
                self.emit(&s[..i], out);
                s = s[i + tag.len()..].to_string();
                self.inside = !self.inside;
                continue;
            }
            let keep = (1..tag.len()).rev().find(|&k| s.ends_with(&tag[..k])).unwrap_or(0);
            self.emit(&s[..s.len() - keep], out);
            self.pending = s[s.len() - keep..].to_string();
            return;
        }
    }

    pub fn flush(&mut self, out: &mut Out<'_>) {
        let rest = std::mem::take(&mut self.pending);
        self.emit(&rest, out);
    }

    fn emit(&self, text: &str, out: &mut Out<'_>) {
        if self.inside {
            out.reasoning(text);
        } else {
            out.content(text);
        }
    }
}

#[derive(Debug, Default)]
pub struct OpenAiChat {
    started: bool,
    response: Option<String>,
    /// Calls by (choice index, tool-call index).
    calls: BTreeMap<(u64, u64), Call>,
    think: ThinkTags,
    /// A reasoning field was seen: `<think>` tags are then plain text.
    reasoning_fields: bool,
    /// Token ids of chunks without text, for the response's next text event.
    held_ids: Vec<Value>,
}

fn error_message(v: &Value) -> String {
    let e = v.get("error").unwrap_or(v);
    let msg = str_of(e, "message")
        .map(str::to_string)
        .unwrap_or_else(|| e.to_string());
    match str_of(e, "code").or(str_of(e, "type")) {
        Some(code) => format!("provider error ({code}): {msg}"),
        None => format!("provider error: {msg}"),
    }
}

impl OpenAiChat {
    fn flush_calls(&mut self, choice: Option<u64>, out: &mut Out<'_>) {
        let keys: Vec<(u64, u64)> = self
            .calls
            .keys()
            .filter(|k| choice.is_none_or(|c| k.0 == c))
            .copied()
            .collect();
        for k in keys {
            if let Some(call) = self.calls.remove(&k) {
                let name = if call.name.is_empty() { "unknown" } else { &call.name };
                out.tool_call(Some(&call.id), name, Args::Text(&call.args));
            }
        }
    }

    fn fragment(&mut self, key: (u64, u64), id: Option<&str>, name: Option<&str>, args: Option<&str>) {
        let call = self.calls.entry(key).or_default();
        // Providers repeat ids and names, or send "" on continuations: keep the first real one.
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            if call.id.is_empty() {
                call.id = id.to_string();
            }
        }
        if let Some(name) = name.filter(|s| !s.is_empty()) {
            if call.name.is_empty() {
                call.name = name.to_string();
            }
        }
        if let Some(a) = args {
            call.args.push_str(a);
        }
    }

    fn delta(&mut self, choice: u64, delta: &Value, out: &mut Out<'_>) {
        // Reasoning: the first field present wins; the others repeat it.
        if let Some(t) = delta.get("reasoning_content").and_then(Value::as_str) {
            self.reasoning_fields = true;
            out.reasoning(t);
        } else if let Some(t) = delta.get("reasoning").and_then(Value::as_str) {
            self.reasoning_fields = true;
            out.reasoning(t);
        } else if let Some(details) = delta.get("reasoning_details").and_then(Value::as_array) {
            for d in details {
                if let Some(t) = str_of(d, "text").or(str_of(d, "summary")) {
                    self.reasoning_fields = true;
                    out.reasoning(t);
                }
            }
        }
        match delta.get("content") {
            Some(Value::String(t)) if self.reasoning_fields => out.content(t),
            Some(Value::String(t)) => self.think.split(t, out),
            // Mistral: an array of thinking and text items.
            Some(Value::Array(items)) => {
                for item in items {
                    match str_of(item, "type") {
                        Some("thinking") => {
                            for t in item.get("thinking").and_then(Value::as_array).into_iter().flatten() {
                                out.reasoning(str_of(t, "text").unwrap_or_default());
                            }
                        }
                        _ => out.content(str_of(item, "text").unwrap_or_default()),
                    }
                }
            }
            _ => {}
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, tc) in calls.iter().enumerate() {
                let index = tc.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
                let f = tc.get("function");
                self.fragment(
                    (choice, index),
                    str_of(tc, "id"),
                    f.and_then(|f| str_of(f, "name")),
                    f.and_then(|f| str_of(f, "arguments")),
                );
            }
        }
        if let Some(f) = delta.get("function_call") {
            self.fragment((choice, 0), None, str_of(f, "name"), str_of(f, "arguments"));
        }
    }

    /// Ollama's native chat stream: whole `message` objects per chunk.
    fn ollama(&mut self, v: &Value, out: &mut Out<'_>) {
        out.ts = str_of(v, "created_at").and_then(Ts::from_rfc3339);
        if !self.started {
            self.started = true;
            out.request(None);
        }
        let m = v.get("message").unwrap_or(&Value::Null);
        out.reasoning(str_of(m, "thinking").unwrap_or_default());
        out.content(str_of(m, "content").unwrap_or_default());
        for tc in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let f = tc.get("function").unwrap_or(&Value::Null);
            let args = f.get("arguments").cloned().unwrap_or(Value::Null);
            out.tool_call(
                str_of(tc, "id"),
                str_of(f, "name").unwrap_or("unknown"),
                Args::Json(args),
            );
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.started = false;
            if let Some(n) = v.get("eval_count").and_then(Value::as_u64) {
                out.usage_event(n);
            }
        }
    }
}

impl Handler for OpenAiChat {
    fn payload(&mut self, event: Option<&str>, v: Value, out: &mut Out<'_>) {
        if event == Some("error") || v.get("error").is_some_and(|e| !e.is_null()) {
            out.note(error_message(&v));
            return;
        }
        if v.get("message").is_some() && v.get("done").is_some() {
            self.ollama(&v, out);
            return;
        }
        let id = str_of(&v, "id").map(str::to_string);
        if !self.started || (id.is_some() && id != self.response) {
            self.flush_calls(None, out);
            self.think.flush(out);
            self.started = true;
            self.reasoning_fields = false;
            self.held_ids.clear();
            out.request(id.as_deref());
            self.response = id;
        }
        for (pos, choice) in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = choice.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
            if let Some(delta) = choice.get("delta") {
                let from = out.mark();
                self.delta(index, delta, out);
                // vLLM with `return_token_ids`: the chunk's generated token ids,
                // on the choice (or, in some servers, on the delta).
                let ids = choice.get(TOKEN_IDS).or(delta.get(TOKEN_IDS));
                if let Some(ids) = ids.and_then(Value::as_array) {
                    out.token_ids(from, ids, &mut self.held_ids);
                }
            }
            if choice.get("finish_reason").is_some_and(|f| !f.is_null()) {
                self.flush_calls(Some(index), out);
            }
        }
        // With `stream_options.include_usage`: a last chunk with the counts.
        if let Some(n) = v
            .get("usage")
            .and_then(|u| u.get("completion_tokens"))
            .and_then(Value::as_u64)
        {
            out.usage_event(n);
        }
    }

    fn done(&mut self, out: &mut Out<'_>) {
        self.flush_calls(None, out);
        self.think.flush(out);
    }

    fn finish(&mut self, out: &mut Out<'_>) {
        self.done(out);
    }
}

#[cfg(test)]
mod tests {
    use crate::event::EventKind;
    use crate::formats::Decoded;
    use serde_json::json;

    fn kinds(input: &str) -> Vec<EventKind> {
        Decoded::from_bytes(input.as_bytes(), &mut super::decoder())
            .events
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }

    #[test]
    fn think_tags_split_across_deltas() {
        let chunk = |t: &str| {
            format!(
                "data: {}\n\n",
                json!({"id":"r","choices":[{"index":0,"delta":{"content":t}}]})
            )
        };
        let input: String = ["<thi", "nk>plan a", "nd b</th", "ink>answer"]
            .iter()
            .map(|t| chunk(t))
            .collect();
        let got = kinds(&input);
        let text: Vec<String> = got
            .iter()
            .filter_map(|k| match k {
                EventKind::Reasoning { text } => Some(format!("R:{text}")),
                EventKind::Content { text } => Some(format!("C:{text}")),
                _ => None,
            })
            .collect();
        assert_eq!(text.concat(), "R:plan aR:nd bC:answer");
    }
}
