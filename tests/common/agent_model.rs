//! The scripted model the real agents talk to (tests/real_agents.rs):
//! one server on 127.0.0.1 per run, playing one script whatever the
//! agent asks, in the agent's own API (OpenAI Chat Completions, Responses,
//! Anthropic Messages, Gemini; streamed or whole). A call is made with
//! one of the tools the agent offers (its read tool, else its shell), with
//! arguments built from that tool's schema; requests that offer no tools
//! (titles, summaries, routers) get a short answer, or JSON filled from
//! the schema they ask for. Where the conversation stands is read from
//! the request itself (the results it sends back), so retries and
//! auxiliary requests do not move the script on.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

#[path = "wire.rs"]
mod wire;
use wire::Step;

/// What the model does, turn after turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// One call that reads notes.txt, then a short answer.
    Clean,
    /// The same call with the same arguments every turn, this many times,
    /// then an answer.
    ToolLoop(usize),
    /// The same, on a file that does not exist: every result an error.
    FailLoop(usize),
    /// The reasoning repeats a paragraph and the answer another, in small
    /// deltas; no call.
    TextLoop,
    /// One answer with this many identical calls side by side (read
    /// notes.txt), then an answer.
    ParallelLoop(usize),
}

/// How the agent acts on the model's answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Tool calls (every agent but the two below).
    Tools,
    /// aider: no tools; edits are SEARCH/REPLACE blocks in the answer, and
    /// a block that does not match is answered with an error (reflected).
    AiderEdits,
    /// mini-swe-agent: a run ends only when the model submits.
    MiniSubmit,
}

/// The file the read tool reads, and the one that is not there.
pub const NOTES: &str = "notes.txt";
pub const MISSING: &str = "missing.txt";
pub const NOTES_TEXT: &str = "hello from the scripted test 🧪 试验\n";

const TOOL_REASONING: &str = "I will read notes.txt again to check what it says before I answer.";
const REASON_PARA: &str = "Let me check whether the configuration file was loaded before the tests ran, \
                           because the failure suggests the settings were not applied at all. ";
const CONTENT_PARA: &str = "The answer depends on the configuration file, so I need to look at the \
                            configuration file again and then decide what the answer depends on. ";
const CLEAN_REASONING: &str = "The user wants to know what notes.txt says. I will read it once and then answer.";
pub const CLEAN_ANSWER: &str = "notes.txt holds one line: hello from the scripted test. Nothing else needs doing.";
const AUX_ANSWER: &str = "Scripted reply";
/// Chars per streamed delta.
const DELTA: usize = 8;
/// What mini-swe-agent's submit command echoes.
pub const MINI_SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";

/// The wire an agent speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

/// One request the model answered.
#[derive(Clone, Debug)]
pub struct Asked {
    pub method: String,
    pub path: String,
    pub api: Option<Api>,
    /// What it answered: `aux`, `aux-json`, `call`, `answer`, `text-loop`, …
    pub kind: String,
    /// The call it made (name, arguments).
    pub call: Option<(String, Value)>,
    pub body: Value,
}

pub struct AgentModel {
    pub url: String,
    pub addr: SocketAddr,
    asked: Arc<Mutex<Vec<Asked>>>,
    stop: Arc<AtomicBool>,
}

impl AgentModel {
    /// A server playing `script` for an agent working in `work` (where
    /// notes.txt is).
    pub fn start(script: Script, dialect: Dialect, work: &Path) -> AgentModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let play = Arc::new(Play {
            script,
            dialect,
            work: work.to_path_buf(),
            answers: AtomicUsize::new(0),
        });
        let (log, stopping) = (asked.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (log, play) = (log.clone(), play.clone());
                std::thread::spawn(move || serve(stream, &log, &play));
            }
        });
        AgentModel {
            url: format!("http://{addr}"),
            addr,
            asked,
            stop,
        }
    }

    /// Every request answered so far.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    /// The calls the model made, in order.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.asked().into_iter().filter_map(|a| a.call).collect()
    }
}

impl Drop for AgentModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

struct Play {
    script: Script,
    dialect: Dialect,
    work: PathBuf,
    /// Ids of answers given, so each is unique.
    answers: AtomicUsize,
}

/// A request read off the wire.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Reads one request (None: the client went away or sent nonsense). The
/// head is at most 1 MiB; a body comes by length or chunked, and may be
/// gzip-, deflate- or zstd-encoded.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let (mut length, mut chunked, mut encoding) = (0usize, false, String::new());
    let mut head = line.len();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        head += h.len();
        if head > 1 << 20 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((n, v)) = h.split_once(':') {
            let (n, v) = (n.trim().to_ascii_lowercase(), v.trim());
            match n.as_str() {
                "content-length" => length = v.parse().ok()?,
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                "content-encoding" => encoding = v.to_ascii_lowercase(),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end).ok()?;
                break;
            }
            let mut chunk = vec![0u8; n];
            r.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).ok()?;
        }
    } else {
        body.resize(length, 0);
        r.read_exact(&mut body).ok()?;
    }
    let body = match encoding.as_str() {
        "gzip" => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out).ok()?;
            out
        }
        "deflate" => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&body[..]).read_to_end(&mut out).ok()?;
            out
        }
        "zstd" => zstd::stream::decode_all(&body[..]).ok()?,
        _ => body,
    };
    Some(Request { method, path, body })
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Asked>>, play: &Play) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    while let Some(req) = read_request(&mut r) {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let answer = answer(&req, &body, play);
        log.lock().unwrap().push(Asked {
            method: req.method.clone(),
            path: req.path.clone(),
            api: answer.api,
            kind: answer.kind.clone(),
            call: answer.call.clone(),
            body,
        });
        let ok = match &answer.body {
            Body::Json(v) => {
                let data = v.to_string();
                let head = format!(
                    "HTTP/1.1 {} OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    answer.status,
                    data.len()
                );
                // A HEAD (Claude Code's first request) gets the head alone:
                // a body after it would be read as the next answer on a
                // kept connection (a proxy sends its next request again).
                let body = if req.method == "HEAD" { "" } else { data.as_str() };
                w.write_all(head.as_bytes())
                    .and_then(|()| w.write_all(body.as_bytes()))
                    .and_then(|()| w.flush())
                    .is_ok()
            }
            Body::Events(content_type, events) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n"
                );
                let mut ok = w.write_all(head.as_bytes()).is_ok();
                for e in events {
                    let chunk = [format!("{:x}\r\n", e.len()).as_bytes(), e, b"\r\n"].concat();
                    ok = ok && w.write_all(&chunk).and_then(|()| w.flush()).is_ok();
                }
                ok && w.write_all(b"0\r\n\r\n").and_then(|()| w.flush()).is_ok()
            }
        };
        if !ok {
            return;
        }
    }
}

enum Body {
    Json(Value),
    /// Content type and the events, each written as it is.
    Events(&'static str, Vec<Vec<u8>>),
}

struct Answer {
    status: u16,
    api: Option<Api>,
    kind: String,
    call: Option<(String, Value)>,
    body: Body,
}

impl Answer {
    fn json(kind: &str, v: Value) -> Answer {
        Answer {
            status: 200,
            api: None,
            kind: kind.to_string(),
            call: None,
            body: Body::Json(v),
        }
    }
}

/// The API of a POST, by its path.
fn api_of(path: &str) -> Option<Api> {
    let p = path.split('?').next().unwrap_or_default();
    if p.ends_with("/chat/completions") {
        Some(Api::Chat)
    } else if p.ends_with("/responses") {
        Some(Api::Responses)
    } else if p.ends_with("/messages") {
        Some(Api::Anthropic)
    } else if p.contains(":streamGenerateContent") || p.contains(":generateContent") {
        Some(Api::Gemini)
    } else {
        None
    }
}

fn answer(req: &Request, body: &Value, play: &Play) -> Answer {
    let path = req.path.split('?').next().unwrap_or_default();
    if req.method != "POST" {
        return models_list(path);
    }
    if path.ends_with("/count_tokens") {
        return Answer::json("count", json!({"input_tokens": 1000}));
    }
    if path.contains(":countTokens") {
        return Answer::json("count", json!({"totalTokens": 1000}));
    }
    let Some(api) = api_of(&req.path) else {
        let mut a = Answer::json(
            "unknown",
            json!({"error": {"message": format!("scripted model: no API at {path}")}}),
        );
        a.status = 404;
        return a;
    };
    let stream = match api {
        Api::Gemini => req.path.contains(":streamGenerateContent"),
        _ => body["stream"] == json!(true),
    };
    let (kind, steps) = plan(api, body, play);
    let call = steps.iter().find_map(|s| match s {
        Step::Call(_, name, args) => Some((name.clone(), args.clone())),
        _ => None,
    });
    let n = play.answers.fetch_add(1, Ordering::SeqCst);
    let model = body["model"]
        .as_str()
        .map(str::to_string)
        .or_else(|| {
            path.split("/models/")
                .nth(1)
                .and_then(|m| m.split(':').next())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "scripted".to_string());
    const SSE: &str = "text/event-stream";
    let body = match (api, stream) {
        (Api::Chat, true) => Body::Events(SSE, wire::chat_stream(&format!("chatcmpl-{n}"), &model, &steps)),
        (Api::Chat, false) => Body::Json(wire::chat_whole(&format!("chatcmpl-{n}"), &model, &steps)),
        (Api::Responses, true) => Body::Events(SSE, wire::responses_stream(&format!("resp_{n}"), &model, &steps)),
        (Api::Responses, false) => {
            let events = wire::responses_stream(&format!("resp_{n}"), &model, &steps);
            let last = String::from_utf8(events.last().unwrap().clone()).unwrap();
            let data = last.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            let completed: Value = serde_json::from_str(data).unwrap();
            Body::Json(completed["response"].clone())
        }
        (Api::Anthropic, true) => Body::Events(SSE, wire::anthropic_stream(&format!("msg_{n}"), &model, &steps)),
        (Api::Anthropic, false) => Body::Json(wire::anthropic_whole(&format!("msg_{n}"), &model, &steps)),
        (Api::Gemini, true) => Body::Events(
            SSE,
            wire::gemini_chunks(&format!("gem_{n}"), &req.path, &steps)
                .iter()
                .map(|c| format!("data: {c}\r\n\r\n").into_bytes())
                .collect(),
        ),
        (Api::Gemini, false) => {
            let chunks = wire::gemini_chunks(&format!("gem_{n}"), &req.path, &steps);
            let parts: Vec<Value> = chunks
                .iter()
                .flat_map(|c| {
                    c["candidates"][0]["content"]["parts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .filter(|p| p["text"] != json!(""))
                .collect();
            let mut whole = chunks.last().unwrap().clone();
            whole["candidates"][0]["content"]["parts"] = Value::Array(parts);
            Body::Json(whole)
        }
    };
    Answer {
        status: 200,
        api: Some(api),
        kind,
        call,
        body,
    }
}

/// GETs: the model lists some agents ask for first.
fn models_list(path: &str) -> Answer {
    let names = [
        "scripted",
        "gpt-5",
        "claude-sonnet-4-5",
        "gemini-2.5-flash",
        "qwen3-coder-plus",
    ];
    if path.contains("v1beta") {
        let models: Vec<Value> = names
            .iter()
            .map(|m| json!({"name": format!("models/{m}"), "displayName": m, "supportedGenerationMethods": ["generateContent", "streamGenerateContent"]}))
            .collect();
        return Answer::json("models", json!({"models": models}));
    }
    let data: Vec<Value> = names
        .iter()
        .map(|m| json!({"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "scripted", "type": "model", "display_name": m}))
        .collect();
    Answer::json("models", json!({"object": "list", "data": data, "has_more": false}))
}

/// `text` cut into deltas of [`DELTA`] chars.
fn deltas(text: &str, step: fn(String) -> Step) -> Vec<Step> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(DELTA).map(|c| step(c.iter().collect())).collect()
}

/// What to answer, and a word for what it is.
fn plan(api: Api, body: &Value, play: &Play) -> (String, Vec<Step>) {
    if let Some(schema) = schema_asked(api, body) {
        let filled = if schema.is_object() && schema != json!({}) {
            fill(&schema, 0)
        } else {
            json!({"ok": true})
        };
        return ("aux-json".into(), vec![Step::Content(filled.to_string())]);
    }
    let tools = tools_of(api, body);
    let plain = play.dialect == Dialect::AiderEdits;
    if tools.is_empty() && !plain {
        return ("aux".into(), vec![Step::Content(AUX_ANSWER.into())]);
    }
    let done = results_sent(api, body);
    let id = format!("call_{}", play.answers.load(Ordering::SeqCst));
    let reasoning = |t: &str| deltas(t, Step::Reasoning);
    let content = |t: &str| deltas(t, Step::Content);
    let call = |file: &str| {
        let (name, args) = pick_tool(&tools, &play.work, file);
        Step::Call(id.clone(), name, args)
    };
    let final_answer = |n: usize| -> (String, Vec<Step>) {
        if play.dialect == Dialect::MiniSubmit {
            let submit = Step::Call(id.clone(), "bash".into(), json!({"command": MINI_SUBMIT}));
            return ("submit".into(), [reasoning("Done; I submit."), vec![submit]].concat());
        }
        let text = match play.script {
            Script::Clean => CLEAN_ANSWER.to_string(),
            _ => format!("I read notes.txt {n} times; it says hello."),
        };
        ("answer".into(), [reasoning("Enough reading."), content(&text)].concat())
    };
    match (play.script, play.dialect) {
        (Script::TextLoop, _) => (
            "text-loop".into(),
            [reasoning(&REASON_PARA.repeat(8)), content(&CONTENT_PARA.repeat(12))].concat(),
        ),
        (Script::Clean, Dialect::AiderEdits) => ("edit".into(), content(&aider_edit(true))),
        (Script::ToolLoop(_) | Script::FailLoop(_), Dialect::AiderEdits) => {
            ("edit-no-match".into(), content(&aider_edit(false)))
        }
        (Script::Clean, _) if done == 0 => ("call".into(), [reasoning(CLEAN_REASONING), vec![call(NOTES)]].concat()),
        (Script::ToolLoop(turns), _) if done < turns => {
            ("call".into(), [reasoning(TOOL_REASONING), vec![call(NOTES)]].concat())
        }
        (Script::ParallelLoop(calls), _) if done == 0 => {
            let (name, args) = pick_tool(&tools, &play.work, NOTES);
            let same: Vec<Step> = (0..calls)
                .map(|i| Step::Call(format!("{id}_{i}"), name.clone(), args.clone()))
                .collect();
            ("parallel-calls".into(), [reasoning(TOOL_REASONING), same].concat())
        }
        (Script::FailLoop(turns), _) if done < turns => {
            ("call".into(), [reasoning(TOOL_REASONING), vec![call(MISSING)]].concat())
        }
        _ => final_answer(done),
    }
}

/// An aider answer editing notes.txt: a block that matches the file, or
/// one whose SEARCH text is not in it (aider refuses it and asks again).
fn aider_edit(matching: bool) -> String {
    let search = if matching {
        NOTES_TEXT.trim_end()
    } else {
        "goodbye from a line that is not there"
    };
    format!(
        "I will change the greeting in notes.txt.\n\nnotes.txt\n```\n<<<<<<< SEARCH\n{search}\n=======\nhello from the edited test\n>>>>>>> REPLACE\n```\n"
    )
}

/// The tools a request offers: (name, parameter schema).
fn tools_of(api: Api, body: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for t in body["tools"].as_array().into_iter().flatten() {
        match api {
            Api::Chat => {
                if let Some(name) = t["function"]["name"].as_str() {
                    out.push((name.to_string(), t["function"]["parameters"].clone()));
                }
            }
            Api::Responses => {
                if t["type"] == "function" {
                    if let Some(name) = t["name"].as_str() {
                        out.push((name.to_string(), t["parameters"].clone()));
                    }
                }
            }
            Api::Anthropic => {
                if let Some(name) = t["name"].as_str() {
                    if t.get("input_schema").is_some() {
                        out.push((name.to_string(), t["input_schema"].clone()));
                    }
                }
            }
            Api::Gemini => {
                let decls = t["functionDeclarations"]
                    .as_array()
                    .or(t["function_declarations"].as_array());
                for d in decls.into_iter().flatten() {
                    if let Some(name) = d["name"].as_str() {
                        let schema = if d["parametersJsonSchema"].is_object() {
                            d["parametersJsonSchema"].clone()
                        } else {
                            d["parameters"].clone()
                        };
                        out.push((name.to_string(), schema));
                    }
                }
            }
        }
    }
    out
}

/// How many tool results the conversation has sent back so far.
fn results_sent(api: Api, body: &Value) -> usize {
    let items = |key: &str| body[key].as_array().cloned().unwrap_or_default();
    match api {
        Api::Chat => items("messages")
            .iter()
            .filter(|m| m["role"] == "tool" || m["role"] == "function")
            .count(),
        Api::Responses => items("input")
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            })
            .count(),
        Api::Anthropic => items("messages")
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .count(),
        Api::Gemini => items("contents")
            .iter()
            .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
            .filter(|p| p.get("functionResponse").is_some() || p.get("function_response").is_some())
            .count(),
    }
}

/// The JSON schema a request asks its answer to follow, if it asks for JSON.
fn schema_asked(api: Api, body: &Value) -> Option<Value> {
    match api {
        Api::Gemini => {
            let gc = if body["generationConfig"].is_object() {
                &body["generationConfig"]
            } else {
                &body["generation_config"]
            };
            if gc["responseMimeType"] == "application/json"
                || gc.get("responseSchema").is_some()
                || gc.get("responseJsonSchema").is_some()
            {
                return Some(
                    gc.get("responseJsonSchema")
                        .or(gc.get("responseSchema"))
                        .cloned()
                        .unwrap_or(json!({})),
                );
            }
            None
        }
        Api::Chat => match body["response_format"]["type"].as_str() {
            Some("json_schema") => Some(body["response_format"]["json_schema"]["schema"].clone()),
            Some("json_object") => Some(json!({})),
            _ => None,
        },
        Api::Responses => {
            (body["text"]["format"]["type"] == "json_schema").then(|| body["text"]["format"]["schema"].clone())
        }
        // Claude Code asks for a title this way.
        Api::Anthropic => (body["output_config"]["format"]["type"] == "json_schema")
            .then(|| body["output_config"]["format"]["schema"].clone()),
    }
}

/// A value that satisfies a (JSON or Gemini) schema.
fn fill(schema: &Value, depth: usize) -> Value {
    if depth > 6 || !schema.is_object() {
        return json!("ok");
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = schema["anyOf"].as_array().and_then(|e| e.first()) {
        return fill(first, depth + 1);
    }
    match type_of(schema).as_str() {
        "object" => {
            let props = schema["properties"].as_object().cloned().unwrap_or_default();
            Value::Object(props.iter().map(|(k, v)| (k.clone(), fill(v, depth + 1))).collect())
        }
        "array" => json!([]),
        "number" | "integer" => json!(0),
        "boolean" => json!(false),
        _ => json!("ok"),
    }
}

/// A schema's type, lower case; `["string", "null"]` is a string.
fn type_of(schema: &Value) -> String {
    let t = match &schema["type"] {
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| !t.eq_ignore_ascii_case("null"))
            .unwrap_or("string"),
        Value::String(t) => t.as_str(),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    t.to_ascii_lowercase()
}

const READ_NAMES: [&str; 7] = [
    "read",
    "read_file",
    "readfile",
    "view",
    "file_read",
    "fs_read",
    "read_text_file",
];
const EDITOR_NAMES: [&str; 4] = [
    "file_editor",
    "str_replace_editor",
    "developer__text_editor",
    "text_editor",
];
const SHELL_NAMES: [&str; 10] = [
    "bash",
    "shell",
    "run_shell_command",
    "shell_command",
    "exec_command",
    "execute_bash",
    "terminal",
    "developer__shell",
    "exec",
    "run_command",
];
const PATH_PROPS: [&str; 8] = [
    "file_path",
    "absolute_path",
    "filePath",
    "path",
    "file",
    "filename",
    "target_file",
    "directory",
];

/// The call that reads `file` in `work` with the tools offered: a read
/// tool, an editor's view, else a shell running `cat`.
pub fn pick_tool(tools: &[(String, Value)], work: &Path, file: &str) -> (String, Value) {
    let find = |names: &[&str]| tools.iter().find(|(n, _)| names.contains(&n.to_lowercase().as_str()));
    let target = work.join(file).display().to_string();
    let (tool, kind) = match (find(&READ_NAMES), find(&EDITOR_NAMES), find(&SHELL_NAMES)) {
        (Some(t), _, _) => (t, "read"),
        (None, Some(t), _) => (t, "editor"),
        (None, None, Some(t)) => (t, "shell"),
        _ => (
            tools
                .iter()
                .find(|(n, _)| n.to_lowercase().contains("read"))
                .unwrap_or(&tools[0]),
            "read",
        ),
    };
    let props = tool.1["properties"].as_object().cloned().unwrap_or_default();
    let mut args = Map::new();
    if kind != "shell" {
        if let Some(p) = PATH_PROPS.iter().find(|p| props.contains_key(**p)) {
            args.insert(p.to_string(), json!(target));
        }
        if kind == "editor" && props.contains_key("command") {
            args.insert("command".into(), json!("view"));
        }
    } else {
        if let Some(p) = ["command", "cmd", "commands"].iter().find(|p| props.contains_key(**p)) {
            let cmd = format!("cat {file}");
            let v = if type_of(&props[*p]) == "array" {
                json!(["bash", "-lc", cmd])
            } else {
                json!(cmd)
            };
            args.insert(p.to_string(), v);
        }
        if props.contains_key("workdir") {
            args.insert("workdir".into(), json!(work.display().to_string()));
        }
    }
    for p in tool.1["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if args.contains_key(p) {
            continue;
        }
        let low = p.to_lowercase();
        let v =
            if low.contains("description") || ["reason", "justification", "summary", "title"].contains(&low.as_str()) {
                json!("Read notes.txt")
            } else {
                fill(&props.get(p).cloned().unwrap_or(json!({})), 0)
            };
        args.insert(p.to_string(), v);
    }
    (tool.0.clone(), Value::Object(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_tool_is_picked_by_its_schema_and_a_shell_runs_cat() {
        let work = Path::new("/w");
        let tools = vec![
            (
                "Bash".to_string(),
                json!({"properties": {"command": {"type": "string"}}, "required": ["command"]}),
            ),
            (
                "Read".to_string(),
                json!({"properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
            ),
        ];
        assert_eq!(
            pick_tool(&tools, work, NOTES),
            ("Read".into(), json!({"file_path": "/w/notes.txt"}))
        );
        let codex = vec![(
            "exec_command".to_string(),
            json!({"properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}}, "required": ["cmd"]}),
        )];
        assert_eq!(
            pick_tool(&codex, work, MISSING),
            (
                "exec_command".into(),
                json!({"cmd": "cat missing.txt", "workdir": "/w"})
            )
        );
    }
}
