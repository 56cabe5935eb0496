//! Gemini `generateContent` / `streamGenerateContent`: `systemInstruction`
//! and `contents` (results as `functionResponse` parts), the model in the
//! path; a whole answer is one chunk; a stream ends with a chunk whose
//! candidate has a `finishReason` (and, as a JSON array, its closing `]`).

use serde_json::{json, Value};

use super::{after, frame, CallTracker, Request, Role, Shape, Terminator, ToolOutcome, Turn};
use loopscope_core::formats::str_of;

/// The text parts of a `Content` (thoughts left out).
fn text_parts(content: Option<&Value>) -> Vec<&str> {
    content
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
        .filter_map(|p| str_of(p, "text"))
        .collect()
}

/// The model named in a path like `/v1beta/models/gemini-2.5-pro:streamGenerateContent`.
fn model_of(path: &str) -> Option<String> {
    let last = path.rsplit('/').next()?;
    let (model, _) = last.split_once(':')?;
    (!model.is_empty()).then(|| model.to_string())
}

pub fn request(path: &str, body: &Value) -> Request {
    // Code Assist (gemini-cli signed in with Google) wraps the request.
    let (inner, model) = match body.get("request").filter(|r| r.get("contents").is_some()) {
        Some(inner) => (inner, str_of(body, "model").map(str::to_string)),
        None => (body, model_of(path)),
    };
    let system = text_parts(inner.get("systemInstruction").or(inner.get("system_instruction"))).join("\n");
    let mut turns = vec![Turn::new(Role::System, system.clone())];
    for c in inner.get("contents").and_then(Value::as_array).into_iter().flatten() {
        if str_of(c, "role") == Some("model") {
            turns.push(Turn::new(Role::Assistant, String::new()));
            continue;
        }
        let mut turn = Turn::message(Role::User, &text_parts(Some(c)));
        for p in c.get("parts").and_then(Value::as_array).into_iter().flatten() {
            if let Some(fr) = p.get("functionResponse") {
                let response = fr.get("response").cloned().unwrap_or(Value::Null);
                let ok = response.get("error").is_none();
                turn.results.push(ToolOutcome::new(
                    str_of(fr, "id").or_else(|| str_of(fr, "name")),
                    ok,
                    response,
                ));
            }
        }
        turns.push(turn);
    }
    Request::new(model.or_else(|| model_of(path)), &system, turns)
}

/// The response's ids, and whether a candidate already finished.
#[derive(Default)]
pub struct End {
    response_id: Value,
    model_version: Value,
    /// Answer text was passed on: loopscope's words start a new paragraph.
    texted: bool,
    finished: bool,
}

/// The parts of a chunk's first candidate.
fn parts(data: &Value) -> impl Iterator<Item = &Value> {
    data.get("candidates")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("content"))
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Whether a chunk's first candidate has finished.
fn finished(data: &Value) -> bool {
    let finish = data
        .get("candidates")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("finishReason"));
    finish.is_some_and(|f| !f.is_null())
}

impl Terminator for End {
    fn saw(&mut self, _event: Option<&str>, data: &Value) {
        if let Some(id) = data.get("responseId") {
            self.response_id = id.clone();
        }
        if let Some(v) = data.get("modelVersion") {
            self.model_version = v.clone();
        }
        self.texted |= parts(data).any(|p| {
            p.get("thought").and_then(Value::as_bool) != Some(true) && str_of(p, "text").is_some_and(|t| !t.is_empty())
        });
        self.finished |= finished(data);
    }

    fn end(&mut self, shape: Shape, text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.finished {
            let text = after(self.texted, text);
            let mut last = json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            });
            for (key, v) in [("modelVersion", &self.model_version), ("responseId", &self.response_id)] {
                if !v.is_null() {
                    last[key] = v.clone();
                }
            }
            out.extend(frame(shape, None, &last));
            self.finished = true;
        }
        if shape == Shape::Array {
            out.extend_from_slice(b"\r\n]");
        }
        out
    }
}

/// A function call streamed in pieces (`partialArgs`, `willContinue`) and
/// not yet ended (by an empty `functionCall`, another call, or the finish).
/// Most calls come whole in one part.
#[derive(Default)]
pub struct Calls {
    open: bool,
}

impl CallTracker for Calls {
    fn saw(&mut self, _event: Option<&str>, data: &Value) {
        for fc in parts(data).filter_map(|p| p.get("functionCall")) {
            let pieces =
                fc.get("partialArgs").is_some() || fc.get("willContinue").and_then(Value::as_bool) == Some(true);
            self.open = pieces;
        }
        if finished(data) {
            self.open = false;
        }
    }

    fn open(&self) -> bool {
        self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_become_turns_and_the_path_names_the_model() {
        let r = request(
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            &json!({"systemInstruction": {"parts": [{"text": "sys"}]}, "contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"error": "denied"}}}]}
            ]}),
        );
        assert_eq!(r.model.as_deref(), Some("gemini-2.5-pro"));
        assert_eq!(r.turns[0].text, "sys");
        assert_eq!(r.turns[3].results[0].id.as_deref(), Some("ls"));
        assert!(!r.turns[3].results[0].ok);
        let wrapped = request(
            "/v1internal:streamGenerateContent",
            &json!({"model": "gemini-3-pro", "request": {"contents": []}}),
        );
        assert_eq!(wrapped.model.as_deref(), Some("gemini-3-pro"));
    }

    #[test]
    fn an_array_stream_gets_a_last_element_with_the_text_and_its_bracket() {
        let mut end = End::default();
        end.saw(
            None,
            &json!({"responseId": "r", "candidates": [{"content": {"parts": [{"text": "x"}]}}]}),
        );
        let text = String::from_utf8(end.end(Shape::Array, "loopscope stopped a loop: 试验")).unwrap();
        assert!(text.starts_with(",\r\n{") && text.ends_with("}\r\n]"), "{text}");
        let last: Value = serde_json::from_str(&text[3..text.len() - 3]).unwrap();
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(
            last["candidates"][0]["content"]["parts"][0]["text"],
            "\n\nloopscope stopped a loop: 试验"
        );
        assert_eq!(last["responseId"], "r");
    }

    #[test]
    fn an_sse_stream_whose_call_was_held_ends_with_the_text_alone() {
        let mut end = End::default();
        let mut calls = Calls::default();
        let thought =
            json!({"responseId": "r", "candidates": [{"content": {"parts": [{"text": "hm", "thought": true}]}}]});
        end.saw(None, &thought);
        calls.saw(None, &thought);
        // A whole call is complete in its one chunk: nothing stays open.
        calls.saw(
            None,
            &json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "read_file", "args": {}}}]}}]}),
        );
        assert!(!calls.open());
        calls.saw(
            None,
            &json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "ls", "willContinue": true}}]}}]}),
        );
        assert!(calls.open(), "a call streamed in pieces");
        calls.saw(
            None,
            &json!({"candidates": [{"content": {"parts": [{"functionCall": {}}]}}]}),
        );
        assert!(!calls.open());
        let text = String::from_utf8(end.end(Shape::Sse, "stopped")).unwrap();
        let data: Value = serde_json::from_str(text.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(data["candidates"][0]["content"]["parts"], json!([{"text": "stopped"}]));
        assert_eq!(data["candidates"][0]["finishReason"], "STOP");
    }
}
