//! The top-level fields of a JSON document read only in part: how a
//! pretty-printed document (of any size) is told apart from its start.

use serde_json::Value;

/// The top-level fields of a JSON object whose text may be cut short:
/// scalars with their values, containers as `null` (only their presence
/// matters to `object_kind`). Iterative, so any depth is fine. The flag
/// says whether the object's closing brace was reached.
pub fn top_level_fields(text: &str) -> (Value, bool) {
    let mut fields = serde_json::Map::new();
    let b = text.as_bytes();
    let mut i = match b.iter().position(|&c| c == b'{') {
        Some(p) => p + 1,
        None => return (Value::Object(fields), false),
    };
    // Reads a JSON string starting at `at` (the quote); returns its end.
    let string_end = |at: usize| -> Option<usize> {
        let mut j = at + 1;
        while j < b.len() {
            match b[j] {
                b'\\' => j += 2,
                b'"' => return Some(j + 1),
                _ => j += 1,
            }
        }
        None
    };
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        match b.get(i) {
            Some(b'}') => return (Value::Object(fields), true),
            Some(b'"') => {}
            _ => return (Value::Object(fields), false),
        }
        let Some(key_end) = string_end(i) else {
            return (Value::Object(fields), false);
        };
        let key: String = serde_json::from_str(&text[i..key_end]).unwrap_or_default();
        i = key_end;
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b':') {
            i += 1;
        }
        // The value: a string, a container (skipped by depth), or a scalar.
        let start = i;
        let value = match b.get(i) {
            None => return (Value::Object(fields), false),
            Some(b'"') => {
                let Some(end) = string_end(i) else {
                    return (Value::Object(fields), false);
                };
                i = end;
                serde_json::from_str(&text[start..end]).unwrap_or(Value::Null)
            }
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                loop {
                    match b.get(i) {
                        None => {
                            fields.insert(key, Value::Null);
                            return (Value::Object(fields), false);
                        }
                        Some(b'"') => match string_end(i) {
                            Some(end) => i = end,
                            None => {
                                fields.insert(key, Value::Null);
                                return (Value::Object(fields), false);
                            }
                        },
                        Some(b'{' | b'[') => {
                            depth += 1;
                            i += 1;
                        }
                        Some(b'}' | b']') => {
                            depth -= 1;
                            i += 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
                Value::Null
            }
            Some(_) => {
                while i < b.len() && !matches!(b[i], b',' | b'}') && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                serde_json::from_str(&text[start..i]).unwrap_or(Value::Null)
            }
        };
        fields.insert(key, value);
    }
}
