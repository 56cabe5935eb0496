//! An event's kind read from its JSON object: each `type`'s fields, typed,
//! with errors that name the field and what it should have been.

use serde_json::{Map, Value};

use super::EventKind;

/// The kind of a known `type` and the keys it took its fields from.
pub(super) fn read_kind(
    type_name: &str,
    fields: &Map<String, Value>,
) -> Result<(EventKind, &'static [&'static str]), String> {
    let f = Fields { fields, type_name };
    Ok(match type_name {
        "meta" => (EventKind::Meta, &[]),
        "prompt" => (
            EventKind::Prompt {
                text: f.opt_string("text")?,
            },
            &["text"],
        ),
        "request" => (
            EventKind::Request {
                id: f.opt_string("id")?,
            },
            &["id"],
        ),
        "reasoning" => (
            EventKind::Reasoning {
                text: f.string("text")?,
            },
            &["text"],
        ),
        "content" => (
            EventKind::Content {
                text: f.string("text")?,
            },
            &["text"],
        ),
        "note" => (
            EventKind::Note {
                text: f.string("text")?,
            },
            &["text"],
        ),
        "tool_call" => (
            EventKind::ToolCall {
                name: f.string("name")?,
                // A call without arguments is a call with none.
                args: fields.get("args").cloned().unwrap_or(Value::Object(Map::new())),
                id: f.opt_string("id")?,
            },
            &["name", "args", "id"],
        ),
        "tool_result" => (
            EventKind::ToolResult {
                id: f.opt_string("id")?,
                ok: f.bool_or("ok", true)?,
                output: fields.get("output").cloned(),
            },
            &["id", "ok", "output"],
        ),
        "loop_check" => (
            EventKind::LoopCheck {
                confidence: f.opt_number("confidence")?,
                analysis: f.opt_string("analysis")?,
                detector: f.opt_string("detector")?,
                model: f.opt_string("model")?,
                stage: f.opt_number("stage")?.map(|n| n.clamp(0.0, 255.0) as u8),
            },
            &["confidence", "analysis", "detector", "model", "stage"],
        ),
        _ => (
            EventKind::Other {
                type_name: type_name.to_string(),
            },
            &[],
        ),
    })
}

/// Reads typed fields of an event object, with errors that name them.
struct Fields<'a> {
    fields: &'a Map<String, Value>,
    type_name: &'a str,
}

impl Fields<'_> {
    fn wrong(&self, key: &str, want: &str, v: &Value) -> String {
        format!(
            "`{}` event: `{key}` must be {want}, not {}",
            self.type_name,
            json_kind(v)
        )
    }

    fn string(&self, key: &str) -> Result<String, String> {
        match self.fields.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.wrong(key, "a string", v)),
            None => Err(format!("`{}` event without `{key}`", self.type_name)),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, String> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.wrong(key, "a string", v)),
        }
    }

    fn bool_or(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.wrong(key, "true or false", v)),
        }
    }

    fn opt_number(&self, key: &str) -> Result<Option<f64>, String> {
        match self.fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(v) => Err(self.wrong(key, "a number or null", v)),
        }
    }
}

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
