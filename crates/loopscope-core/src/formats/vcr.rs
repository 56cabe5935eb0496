//! VCR cassettes (YAML `interactions:`, as pydantic-ai, simonw/llm and
//! vcrpy record them): one HTTP exchange per interaction. Each response
//! body is a stream in one of the API formats; the prompt is in the first
//! request body, and each later request body carries the tool results of
//! the calls before it.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::whole::{DocHandler, WholeDecoder};
use super::{detect, str_of, Decoded, Format, Out};

pub fn decoder(format: Format) -> WholeDecoder<Cassette> {
    WholeDecoder::new(Cassette::default(), parse_yaml, format)
}

/// Deeper YAML is refused before it is loaded: the loader and the
/// conversion recurse, and a 40 KB cassette could overflow the stack.
pub const MAX_YAML_DEPTH: usize = 64;

/// Aliases a document may use, at most.
pub const MAX_YAML_ALIASES: usize = 10_000;

/// What expanding aliases may add to a document, in [`node_cost`] units
/// (about bytes of memory), at least: more is allowed up to the size of
/// the document itself, so aliases can at most double it. The loader copies
/// an anchored node at every alias, so without this a 455-byte cassette of
/// nested aliases (a "billion laughs") expanded to 1.28 GB.
pub const YAML_ALIAS_BUDGET: u64 = 1 << 20;

/// The memory a loaded node costs, roughly: a fixed part and its text.
fn node_cost(scalar_len: usize) -> u64 {
    64 + scalar_len as u64
}

/// Walks the YAML events without building anything (the parser itself is
/// a state machine) to check the nesting depth and what aliases would
/// expand to, before the loader builds (and copies) anything: limits on
/// alias count and expansion as YAML loaders that face untrusted input
/// have (go-yaml's alias ratio, SnakeYAML's alias limit).
fn check_structure(text: &str) -> Result<(), String> {
    use std::collections::HashMap;
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    // Open collections: (anchor, cost so far).
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut anchored: HashMap<usize, u64> = HashMap::new();
    let (mut own, mut from_aliases, mut aliases) = (0u64, 0u64, 0usize);
    loop {
        let (event, mark) = parser.next_token().map_err(|e| format!("not valid YAML ({e})"))?;
        // The cost a complete node adds to its parent, with its anchor.
        let done = match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                own += node_cost(0);
                open.push((anchor, node_cost(0)));
                if open.len() > MAX_YAML_DEPTH {
                    return Err(format!(
                        "YAML nested deeper than {MAX_YAML_DEPTH} levels (line {})",
                        mark.line()
                    ));
                }
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            Event::Scalar(value, _, anchor, _) => {
                own += node_cost(value.len());
                Some((anchor, node_cost(value.len())))
            }
            Event::Alias(id) => {
                aliases += 1;
                let cost = anchored.get(&id).copied().unwrap_or(node_cost(0));
                from_aliases = from_aliases.saturating_add(cost);
                if aliases > MAX_YAML_ALIASES {
                    return Err(format!(
                        "YAML with more than {MAX_YAML_ALIASES} aliases (line {}); refused as a bad input",
                        mark.line()
                    ));
                }
                if from_aliases > YAML_ALIAS_BUDGET.max(own) {
                    return Err(format!(
                        "YAML aliases that expand to more than the document itself (line {}: an alias bomb?); \
                         refused as a bad input",
                        mark.line()
                    ));
                }
                Some((0, cost))
            }
            Event::StreamEnd => return Ok(()),
            _ => None,
        };
        if let Some((anchor, cost)) = done {
            if anchor != 0 {
                anchored.insert(anchor, cost);
            }
            if let Some(parent) = open.last_mut() {
                parent.1 = parent.1.saturating_add(cost);
            }
        }
    }
}

/// A YAML document as JSON.
pub fn parse_yaml(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not valid UTF-8 ({e})"))?;
    check_structure(text)?;
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not valid YAML ({e})"))?;
    Ok(docs.first().map(to_json).unwrap_or(Value::Null))
}

fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Value::String(s.clone()), Value::Number),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    other => format!("{other:?}"),
                };
                m.insert(key, to_json(v));
            }
            Value::Object(m)
        }
        _ => Value::Null,
    }
}

#[derive(Debug, Default)]
pub struct Cassette {
    done: usize,
    results: HashSet<String>,
}

/// A JSON body stored as a string (or already structured).
fn body_json(body: Option<&Value>) -> Option<Value> {
    match body? {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Object(m) => match m.get("string") {
            Some(Value::String(s)) => serde_json::from_str(s).ok(),
            _ => Some(Value::Object(m.clone())),
        },
        _ => None,
    }
}

/// The text of a message's content, in any of the APIs' shapes.
fn content_text(c: Option<&Value>) -> Option<String> {
    match c? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let t: Vec<&str> = parts
                .iter()
                .filter(|p| matches!(str_of(p, "type"), None | Some("text" | "input_text")))
                .filter_map(|p| str_of(p, "text"))
                .collect();
            (!t.is_empty()).then(|| t.join("\n"))
        }
        _ => None,
    }
}

/// The last user message of a request body (chat, Responses, Anthropic, Gemini).
fn prompt_of(body: &Value) -> Option<String> {
    if let Some(s) = str_of(body, "input") {
        return Some(s.to_string());
    }
    let turns = body
        .get("messages")
        .or(body.get("input"))
        .or(body.get("contents"))
        .and_then(Value::as_array)?;
    turns
        .iter()
        .rev()
        .filter(|m| str_of(m, "role") == Some("user"))
        .find_map(|m| {
            content_text(m.get("content")).or_else(|| {
                let parts = m.get("parts")?.as_array()?;
                let t: Vec<&str> = parts.iter().filter_map(|p| str_of(p, "text")).collect();
                (!t.is_empty()).then(|| t.join("\n"))
            })
        })
}

/// Tool results in a request body: (id, ok, output), in order.
fn results_of(body: &Value) -> Vec<(String, bool, Value)> {
    let mut out = Vec::new();
    let turns = body
        .get("messages")
        .or(body.get("input"))
        .or(body.get("contents"))
        .and_then(Value::as_array);
    for m in turns.into_iter().flatten() {
        if str_of(m, "role") == Some("tool") {
            let id = str_of(m, "tool_call_id").unwrap_or_default();
            out.push((id.to_string(), true, m.get("content").cloned().unwrap_or(Value::Null)));
        }
        if str_of(m, "type") == Some("function_call_output") {
            let id = str_of(m, "call_id").unwrap_or_default();
            out.push((id.to_string(), true, m.get("output").cloned().unwrap_or(Value::Null)));
        }
        for b in m.get("content").and_then(Value::as_array).into_iter().flatten() {
            if str_of(b, "type") == Some("tool_result") {
                let ok = b.get("is_error").and_then(Value::as_bool) != Some(true);
                let id = str_of(b, "tool_use_id").unwrap_or_default();
                out.push((id.to_string(), ok, b.get("content").cloned().unwrap_or(Value::Null)));
            }
        }
        for p in m.get("parts").and_then(Value::as_array).into_iter().flatten() {
            if let Some(fr) = p.get("functionResponse") {
                let id = str_of(fr, "id").or(str_of(fr, "name")).unwrap_or_default();
                let response = fr.get("response").cloned().unwrap_or(Value::Null);
                let ok = response.get("error").is_none();
                out.push((id.to_string(), ok, response));
            }
        }
    }
    out
}

impl DocHandler for Cassette {
    fn document(&mut self, doc: Value, out: &mut Out<'_>) {
        let interactions = doc
            .get("interactions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, it) in interactions.iter().enumerate().skip(self.done) {
            self.done += 1;
            out.line = i as u64 + 1;
            let request = body_json(it.get("request").and_then(|r| r.get("body")));
            if let Some(body) = &request {
                if i == 0 {
                    if let Some(p) = prompt_of(body) {
                        out.prompt(&p);
                    }
                }
                for (id, ok, output) in results_of(body) {
                    if self.results.insert(id.clone()) {
                        out.tool_result(Some(&id), ok, Some(output));
                    }
                }
            }
            let response = it.get("response").and_then(|r| r.get("body"));
            let text = match response {
                Some(Value::Object(m)) => m.get("string").and_then(Value::as_str).unwrap_or_default().to_string(),
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            match detect::classify(text.as_bytes(), true, None) {
                Ok(Some(kind)) if !kind.is_container() => {
                    let decoded = Decoded::from_bytes(text.as_bytes(), &mut *kind.build());
                    for e in decoded.events {
                        out.item(super::Item::Event(e, out.line));
                    }
                    // Line 0: the reason names the interaction (a cassette has
                    // no line to go to; the record would be named twice).
                    for mut p in decoded.problems {
                        p.reason = format!("interaction {} response, line {}: {}", i + 1, p.line, p.reason);
                        p.line = 0;
                        out.item(super::Item::Problem(p));
                    }
                }
                _ if text.trim().is_empty() => {}
                _ => out.item(super::Item::Problem(super::Problem {
                    line: 0,
                    reason: format!(
                        "interaction {}: the response body is not a stream loopscope reads",
                        i + 1
                    ),
                    skipped: false,
                })),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` anchors, each a list of nine aliases of the one before.
    fn laughs(levels: usize) -> String {
        let mut s = "interactions:\n- request: {}\n  a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n".to_string();
        for i in 1..levels {
            let refs = vec![format!("*a{}", i - 1); 9].join(",");
            s += &format!("  a{i}: &a{i} [{refs}]\n");
        }
        s
    }

    #[test]
    fn an_alias_bomb_is_refused_before_anything_is_copied() {
        // 9^5 copies (400 bytes) pass the budget; 9^11 would be terabytes.
        for levels in [6, 7, 9, 12] {
            let Err(err) = parse_yaml(laughs(levels).as_bytes()) else {
                panic!("{levels} levels loaded")
            };
            assert!(err.contains("an alias bomb?"), "{levels}: {err}");
        }
        // A few levels of reuse are a document like any other.
        let v = parse_yaml(laughs(3).as_bytes()).unwrap();
        assert_eq!(v["interactions"][0]["a2"][8][8][8], "lol");
    }

    #[test]
    fn aliases_are_counted() {
        let mut s = "interactions:\n- x: &x 1\n  refs: [".to_string();
        s += &vec!["*x"; MAX_YAML_ALIASES + 1].join(",");
        s += "]\n";
        let Err(err) = parse_yaml(s.as_bytes()) else {
            panic!("loaded")
        };
        assert!(err.contains("more than 10000 aliases"), "{err}");
    }

    #[test]
    fn a_cassette_that_reuses_its_headers_by_anchor_still_loads() {
        // PyYAML writes an object met twice as an anchor and aliases
        // (`&id001`, `*id001`), as vcrpy cassettes do for shared headers.
        let mut s = "interactions:\n".to_string();
        for i in 0..200 {
            let headers = if i == 0 {
                "&id001\n      content-type: [application/json]\n      user-agent: [python-httpx/0.27]".to_string()
            } else {
                "*id001".to_string()
            };
            s += &format!(
                "- request:\n    body: '{{\"messages\":[{{\"role\":\"user\",\"content\":\"q{i}\"}}]}}'\n    headers: {headers}\n  response:\n    body: {{string: ''}}\n"
            );
        }
        let v = parse_yaml(s.as_bytes()).unwrap();
        assert_eq!(
            v["interactions"][199]["request"]["headers"]["content-type"][0],
            "application/json"
        );
    }
}
