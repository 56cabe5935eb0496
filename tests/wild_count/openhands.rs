//! OpenHands V0 trajectories: one JSON array of actions and observations;
//! an observation names the action it answers (`cause`).

use std::collections::HashSet;

use super::{str_at, Truth};
use serde_json::Value;

/// Agent actions that are not tool calls: its messages and its finish
/// (text), and bookkeeping.
const NOT_CALLS: [&str; 5] = ["message", "finish", "system", "recall", "condensation"];

pub fn count(text: &str) -> Result<Truth, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let items = doc.as_array().ok_or("not an array")?;
    let mut call_ids = HashSet::new();
    let mut prompts = 0;
    for v in items.iter().filter(|v| v.get("action").is_some()) {
        let action = str_at(v, "action").unwrap_or_default();
        match str_at(v, "source") {
            Some("user") if action == "message" => prompts += 1,
            Some("agent") if !NOT_CALLS.contains(&action) => {
                call_ids.insert(v.get("id").cloned().unwrap_or_default());
            }
            _ => {}
        }
    }
    // A result is an observation caused by a call.
    let (mut results, mut failed) = (0, 0);
    for o in items.iter().filter(|v| v.get("observation").is_some()) {
        if !o.get("cause").is_some_and(|c| call_ids.contains(c)) {
            continue;
        }
        results += 1;
        let exit = o.pointer("/extras/metadata/exit_code").and_then(Value::as_i64);
        let bad = str_at(o, "observation") == Some("error")
            || o.get("success").and_then(Value::as_bool) == Some(false)
            || exit.is_some_and(|c| c != 0);
        failed += usize::from(bad);
    }
    Ok(Truth::exact(prompts, call_ids.len(), results, failed))
}
