//! The four model APIs the proxy records: which a request is (from its
//! path), what its body says (model, the conversation's first messages,
//! its turns), a whole (non-streamed) answer as the payloads the stream
//! importer reads, and how a guarded response is ended in each API's terms.

pub mod anthropic;
pub mod gemini;
pub mod openai_chat;
pub mod openai_responses;
pub mod wrappers;

use std::hash::{Hash, Hasher};

use serde_json::Value;

use loopscope_core::formats::detect::Kind;
use loopscope_core::formats::str_of;

/// A model API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    OpenaiChat,
    OpenaiResponses,
    Anthropic,
    Gemini,
}

impl Protocol {
    /// The API a POST to `path` (without its query) speaks, if it is one recorded.
    pub fn of_path(path: &str) -> Option<Protocol> {
        let last = path.rsplit('/').next().unwrap_or_default();
        if path.ends_with("/chat/completions") || path.ends_with("/api/chat") {
            Some(Protocol::OpenaiChat)
        } else if last == "responses" {
            Some(Protocol::OpenaiResponses)
        } else if last == "messages" {
            Some(Protocol::Anthropic)
        } else if last.ends_with(":generateContent") || last.ends_with(":streamGenerateContent") {
            Some(Protocol::Gemini)
        } else {
            None
        }
    }

    /// The importer's name for it (`--format`).
    pub fn name(self) -> &'static str {
        self.kind().format().name()
    }

    /// The importer of its streams.
    pub fn kind(self) -> Kind {
        match self {
            Protocol::OpenaiChat => Kind::OpenaiChat,
            Protocol::OpenaiResponses => Kind::OpenaiResponses,
            Protocol::Anthropic => Kind::Anthropic,
            Protocol::Gemini => Kind::Gemini,
        }
    }

    /// What a request body says.
    pub fn parse_request(self, path: &str, body: &Value) -> Request {
        match self {
            Protocol::OpenaiChat => openai_chat::request(body),
            Protocol::OpenaiResponses => openai_responses::request(body),
            Protocol::Anthropic => anthropic::request(body),
            Protocol::Gemini => gemini::request(path, body),
        }
    }

    /// A whole answer as the stream payloads that would have carried it.
    pub fn whole_payloads(self, body: &Value) -> Vec<Value> {
        match self {
            Protocol::OpenaiChat => openai_chat::whole(body),
            Protocol::OpenaiResponses => openai_responses::whole(body),
            Protocol::Anthropic => anthropic::whole(body),
            Protocol::Gemini => vec![body.clone()],
        }
    }

    /// A fresh terminator for one guarded response.
    pub fn terminator(self) -> Box<dyn Terminator> {
        match self {
            Protocol::OpenaiChat => Box::<openai_chat::End>::default(),
            Protocol::OpenaiResponses => Box::<openai_responses::End>::default(),
            Protocol::Anthropic => Box::<anthropic::End>::default(),
            Protocol::Gemini => Box::<gemini::End>::default(),
        }
    }

    /// A fresh tracker of the tool calls of one guarded response.
    pub fn call_tracker(self) -> Box<dyn CallTracker> {
        match self {
            Protocol::OpenaiChat => Box::<openai_chat::Calls>::default(),
            Protocol::OpenaiResponses => Box::<openai_responses::Calls>::default(),
            Protocol::Anthropic => Box::<anthropic::Calls>::default(),
            Protocol::Gemini => Box::<gemini::Calls>::default(),
        }
    }
}

/// Who said a turn of the conversation a request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    User,
    /// The model's own earlier answers (recorded when they streamed).
    Assistant,
    /// Tool results sent back on their own.
    Tool,
}

/// A tool's result, as a request carries it back to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutcome {
    pub id: Option<String>,
    pub ok: bool,
    pub output: Value,
    /// What detectors compare instead of `output`, where parts of it change
    /// on every call whatever the call did (Codex's chunk id and wall time).
    pub stable: Option<Value>,
}

impl ToolOutcome {
    pub fn new(id: Option<&str>, ok: bool, output: Value) -> ToolOutcome {
        ToolOutcome {
            id: id.map(str::to_string),
            ok,
            output,
            stable: None,
        }
    }
}

/// One message (or input item) of a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub role: Role,
    /// Its text (for a user: what they wrote, without what the agent
    /// wrapped around it).
    pub text: String,
    /// A user message's context that the agent wrapped in tags of its own
    /// (see [`wrappers`]).
    pub wrapped: Vec<String>,
    pub results: Vec<ToolOutcome>,
}

impl Turn {
    pub fn new(role: Role, text: String) -> Turn {
        Turn {
            role,
            text,
            wrapped: Vec::new(),
            results: Vec::new(),
        }
    }

    /// A message of these text parts; a user's has what the agent wrapped
    /// apart from what the user wrote.
    pub fn message(role: Role, parts: &[&str]) -> Turn {
        if role != Role::User {
            return Turn::new(role, parts.join("\n"));
        }
        let (text, wrapped) = wrappers::split(parts);
        Turn {
            wrapped,
            ..Turn::new(role, text)
        }
    }
}

/// What a request body says, for the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub model: Option<String>,
    /// Which conversation it belongs to: a hash of its first messages
    /// (the system prompt and the user messages before the first answer).
    pub key: u64,
    pub turns: Vec<Turn>,
    /// The Responses API's `previous_response_id`: the conversation is kept upstream.
    pub previous_response: Option<String>,
}

impl Request {
    /// A request of `turns`, keyed by its system text and the user
    /// messages before the model's first answer (the task as first given).
    pub fn new(model: Option<String>, system: &str, turns: Vec<Turn>) -> Request {
        let first: Vec<(&str, &[String])> = turns
            .iter()
            .take_while(|t| t.role != Role::Assistant)
            .filter(|t| t.role == Role::User)
            .map(|t| (t.text.as_str(), t.wrapped.as_slice()))
            .collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (system, first).hash(&mut h);
        Request {
            model,
            key: h.finish(),
            turns,
            previous_response: None,
        }
    }
}

/// How a streamed body is cut into payloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Server-sent events, ended by a blank line.
    Sse,
    /// One JSON payload per line (Ollama's NDJSON, bare chunks).
    Lines,
    /// A streamed JSON array (Gemini without `alt=sse`).
    Array,
}

/// Ends a guarded response cleanly: it sees each payload passed to the
/// client, then writes what the API sends at a normal end, loopscope's
/// words as the last text of the answer and a stop reason the SDKs take
/// for an ordinary end (never a tool call: the agent would run it).
pub trait Terminator: Send {
    /// A payload the client received (its SSE event name, its data).
    fn saw(&mut self, event: Option<&str>, data: &Value);
    /// The bytes that end the response, with `text` (what loopscope
    /// stopped and why) as its last text, where the answer is still open.
    fn end(&mut self, shape: Shape, text: &str) -> Vec<u8>;
}

/// Follows the tool calls of a guarded response as its payloads arrive
/// (passed on or held back), so a call is held until it is complete: its
/// arguments come in pieces, and the agent must get all of a call or none.
pub trait CallTracker: Send {
    /// A payload of the response (its SSE event name, its data).
    fn saw(&mut self, event: Option<&str>, data: &Value);
    /// A call has begun and is not complete yet.
    fn open(&self) -> bool;
}

/// `text` after what the answer already said, on a paragraph of its own.
pub fn after(said: bool, text: &str) -> String {
    if said {
        format!("\n\n{text}")
    } else {
        text.to_string()
    }
}

/// One payload's bytes in a stream of this shape (an SSE event with an
/// optional `event:` line, a line, or an array element after a comma).
pub fn frame(shape: Shape, event: Option<&str>, data: &Value) -> Vec<u8> {
    match shape {
        Shape::Sse => {
            let mut out = String::new();
            if let Some(e) = event {
                out.push_str(&format!("event: {e}\n"));
            }
            out.push_str(&format!("data: {data}\n\n"));
            out.into_bytes()
        }
        Shape::Lines => format!("{data}\n").into_bytes(),
        Shape::Array => format!(",\r\n{data}").into_bytes(),
    }
}

/// The text of a message's content: a string, or its text parts joined.
pub fn text_of(content: Option<&Value>) -> String {
    text_parts(content).join("\n")
}

/// The text parts of a message's content (a string is one).
pub fn text_parts(content: Option<&Value>) -> Vec<&str> {
    match content {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| matches!(str_of(p, "type"), None | Some("text" | "input_text" | "output_text")))
            .filter_map(|p| p.as_str().or_else(|| str_of(p, "text")))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_api() {
        let of = Protocol::of_path;
        assert_eq!(of("/v1/chat/completions"), Some(Protocol::OpenaiChat));
        assert_eq!(of("/api/chat"), Some(Protocol::OpenaiChat));
        assert_eq!(of("/v1/responses"), Some(Protocol::OpenaiResponses));
        assert_eq!(of("/v1/messages"), Some(Protocol::Anthropic));
        assert_eq!(of("/v1/messages/count_tokens"), None);
        assert_eq!(
            of("/v1beta/models/gemini-2.5-pro:streamGenerateContent"),
            Some(Protocol::Gemini)
        );
        assert_eq!(of("/v1beta/models/gemini-2.5-pro:countTokens"), None);
        assert_eq!(of("/v1/models"), None);
    }

    #[test]
    fn the_key_is_the_system_text_and_the_first_user_messages() {
        let turns = |later: &str| {
            vec![
                Turn::new(Role::System, "be brief".into()),
                Turn::new(Role::User, "fix the test".into()),
                Turn::new(Role::Assistant, String::new()),
                Turn::new(Role::User, later.into()),
            ]
        };
        let a = Request::new(None, "be brief", turns("and now?"));
        let b = Request::new(Some("m".into()), "be brief", turns("something else"));
        let c = Request::new(None, "be verbose", turns("and now?"));
        assert_eq!(a.key, b.key);
        assert_ne!(a.key, c.key);
        // Agents that send their context first: the task that follows tells them apart.
        let task = |t: &str| {
            vec![
                Turn::new(Role::User, "<environment>".into()),
                Turn::new(Role::User, t.into()),
            ]
        };
        assert_ne!(
            Request::new(None, "", task("a")).key,
            Request::new(None, "", task("b")).key
        );
    }
}
