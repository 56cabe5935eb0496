//! `loopscope record --guard` between a plain HTTP client and the scripted
//! upstream, in each API (OpenAI Chat Completions, Responses, Anthropic
//! Messages, Gemini; streamed): a looping text and a tool loop are ended in
//! the API's own terms, with loopscope's words as the answer's last text
//! and a stop reason the SDKs take for a normal end; the looping call never
//! reaches the client; a retry is ended again; a detection on the results a
//! request brings back ends its answer at the model's first word.

mod common;
#[path = "common/proxy.rs"]
mod proxy;
#[path = "common/upstream.rs"]
mod upstream;

use std::path::Path;
use std::time::{Duration, Instant};

use proxy::{events, request, scan, Proxy};
use serde_json::{json, Value};
use upstream::{call, Api, Upstream, LOOP_REPEATS, LOOP_WORDS};

const APIS: [Api; 4] = [Api::Chat, Api::Responses, Api::Anthropic, Api::Gemini];

fn send(p: &Proxy, api: Api, prompt: &str, stream: bool) -> proxy::Response {
    let (path, headers, body) = call(api, prompt, stream);
    send_body(p, &path, &headers, &body)
}

fn send_body(p: &Proxy, path: &str, headers: &[(&str, String)], body: &Value) -> proxy::Response {
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    request(&p.addr, "POST", path, &headers, body.to_string().as_bytes()).unwrap()
}

fn gemini_array(p: &Proxy, prompt: &str) -> proxy::Response {
    let body = json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}]});
    let path = "/gemini/v1beta/models/gemini-test:streamGenerateContent";
    let headers = [("Content-Type", "application/json")];
    request(&p.addr, "POST", path, &headers, body.to_string().as_bytes()).unwrap()
}

fn sse_payloads(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|e| {
            let data: Vec<&str> = e.lines().filter_map(|l| l.trim_end().strip_prefix("data: ")).collect();
            (!data.is_empty()).then(|| serde_json::from_str(&data.join("\n")).unwrap_or(Value::String(data.join("\n"))))
        })
        .collect()
}

#[test]
fn the_guard_ends_a_looping_stream_in_each_apis_terms_and_the_upstream_stops() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    // Paced as a model streams, so stopping early means something.
    *up.pause.lock().unwrap() = Duration::from_millis(1);
    let hooks = tempfile::tempdir().unwrap();
    let hook = format!(
        "echo \"$LOOPSCOPE_DETECTOR $LOOPSCOPE_EVENT $LOOPSCOPE_FILE\" >> {}/hook.log",
        hooks.path().display()
    );
    let p = Proxy::to_apis(&up.url, dir.path(), &["--guard", "extended", "--guard-hook", &hook]);
    let loop_events = LOOP_REPEATS * LOOP_WORDS.len();
    for api in APIS {
        // A clean stream passes the guard unchanged.
        let clean = format!("clean under guard {api:?}");
        let got = send(&p, api, &clean, true);
        assert_eq!(got.body, up.wait_for(&clean).script(), "{api:?}");

        let prompt = format!("loop under guard {api:?}");
        let got = send(&p, api, &prompt, true);
        assert_eq!(got.status, 200);
        let served = up.wait_for(&prompt);
        // The upstream was stopped long before the end of its loop…
        assert!(!served.complete, "{api:?}: the upstream request was not closed");
        assert!(
            served.sent_events < loop_events / 2,
            "{api:?}: sent {} events",
            served.sent_events
        );
        // …and the client got whole events of it, then the API's own end.
        let script = served.script();
        let cut = (0..=served.events.len())
            .map(|n| served.events[..n].concat().len())
            .filter(|&len| got.body.starts_with(&script[..len]))
            .max()
            .unwrap();
        assert!(cut > 0 && cut < script.len(), "{api:?}");
        let end = &got.body[cut..];
        let payloads = sse_payloads(end);
        let text = String::from_utf8_lossy(end);
        // What loopscope stopped and why, as the answer's last text.
        let said = match api {
            Api::Chat => {
                assert_eq!(payloads.last().unwrap(), &json!("[DONE]"), "{text}");
                assert_eq!(payloads[1]["choices"][0]["finish_reason"], "stop", "{text}");
                assert_eq!(payloads[0]["id"], "chatcmpl-scripted");
                payloads[0]["choices"][0]["delta"]["content"].clone()
            }
            Api::Responses => {
                let last = payloads.last().unwrap();
                assert_eq!(last["type"], "response.completed", "{text}");
                assert_eq!(last["response"]["status"], "completed");
                assert_eq!(last["response"]["id"], "resp_scripted");
                let message = last["response"]["output"].as_array().unwrap().last().unwrap();
                message["content"][0]["text"].clone()
            }
            Api::Anthropic => {
                let kinds: Vec<&str> = payloads.iter().map(|v| v["type"].as_str().unwrap()).collect();
                assert_eq!(
                    kinds,
                    [
                        "content_block_stop",
                        "content_block_start",
                        "content_block_delta",
                        "content_block_stop",
                        "message_delta",
                        "message_stop"
                    ],
                    "{text}"
                );
                assert_eq!(payloads[4]["delta"]["stop_reason"], "end_turn");
                payloads[2]["delta"]["text"].clone()
            }
            Api::Gemini => {
                assert_eq!(payloads.len(), 1, "{text}");
                assert_eq!(payloads[0]["candidates"][0]["finishReason"], "STOP", "{text}");
                payloads[0]["candidates"][0]["content"]["parts"][0]["text"].clone()
            }
        };
        // The session holds the stream up to the detection, and the guard's
        // note: what the client was told.
        let session = p.session_of(&prompt);
        let recorded = events(&session);
        let note = recorded
            .iter()
            .find(|e| e["kind"] == "guard")
            .expect("the guard's note");
        let told = note["text"].as_str().unwrap();
        assert!(
            told.starts_with("loopscope stopped a loop: the reasoning repeats"),
            "{told}"
        );
        assert_eq!(said.as_str().unwrap().trim_start(), told, "{api:?}");
        let detector = note["detector"].as_str().unwrap();
        let at = note["detection_event"].as_u64().unwrap();
        let scanned = scan("extended", &session);
        assert_eq!(scanned[0]["detector"], detector, "{api:?}");
        assert_eq!(scanned[0]["event"], at, "{api:?}");
        assert_eq!(
            at as usize,
            recorded.len() - 2,
            "{api:?}: the detection is the last event before the note"
        );
        // The client asks again: the retry is ended again, at the same
        // place, and goes on in the same conversation.
        let again = send(&p, api, &prompt, true);
        assert!(again.body == got.body, "{api:?}: the retry ends as the first ask did");
        up.wait_for_asks(&prompt, 2);
        assert_eq!(p.session_of(&prompt), session, "{api:?}");
        let notes: Vec<Value> = events(&session).into_iter().filter(|e| e["kind"] == "guard").collect();
        assert_eq!(notes.len(), 2, "{api:?}");
        assert_eq!(notes[1]["text"], notes[0]["text"]);
        // The retry's detection is where the file has it.
        let recorded = events(&session);
        let second = recorded.iter().rposition(|e| e["kind"] == "guard").unwrap();
        assert_eq!(recorded[second]["detection_event"], json!(second - 1), "{api:?}");
    }
    let printed = p
        .printed_until(|lines| lines.iter().filter(|l| l.contains("loopscope: guard: ")).count() >= 8)
        .join("\n");
    assert_eq!(printed.matches("loopscope: guard: ").count(), 8, "{printed}");
    assert!(printed.contains("ended the response"), "{printed}");
    // --guard-hook ran once per detection, told which detector, event and session.
    let until = Instant::now() + Duration::from_secs(10);
    let log = loop {
        let log = std::fs::read_to_string(hooks.path().join("hook.log")).unwrap_or_default();
        if log.lines().count() >= 8 || Instant::now() > until {
            break log;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(log.lines().count(), 8, "{log}");
    for line in log.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let noted: Vec<(String, String)> = events(Path::new(fields[2]))
            .into_iter()
            .filter(|e| e["kind"] == "guard")
            .map(|n| {
                (
                    n["detector"].as_str().unwrap().to_string(),
                    n["detection_event"].to_string(),
                )
            })
            .collect();
        assert!(
            noted.contains(&(fields[0].to_string(), fields[1].to_string())),
            "{line}: {noted:?}"
        );
    }
}

#[test]
fn a_guarded_gemini_array_stays_a_json_array() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    *up.pause.lock().unwrap() = Duration::from_millis(1);
    let p = Proxy::to_apis(&up.url, dir.path(), &["--guard", "extended"]);
    let got = gemini_array(&p, "loop as an array");
    let served = up.wait_for("loop as an array");
    assert!(!served.complete);
    let chunks: Vec<Value> = serde_json::from_slice(&got.body).expect("a complete JSON array");
    assert!(chunks.len() < LOOP_REPEATS * LOOP_WORDS.len());
    assert_eq!(chunks.last().unwrap()["candidates"][0]["finishReason"], "STOP");
}

/// The call the scripted upstream makes for a `tool` prompt, and what the
/// client's tool answers each time.
const CALL_ID: &str = "call_1";
const CALL_NAME: &str = "read_file";
const RESULT: &str = "fn main() {}";

fn call_args() -> Value {
    json!({"path": "src/main.rs", "note": "ファイル"})
}

/// A request for `prompt` that sends back `turns` rounds of the call and
/// its result (the same each round), as an agent in a loop does; and how
/// the client's API marks a failed one, for `error`.
fn looping(api: Api, prompt: &str, turns: usize, error: bool) -> (String, Vec<(&'static str, String)>, Value) {
    let (path, headers, mut body) = call(api, prompt, true);
    let args = call_args();
    for _ in 0..turns {
        match api {
            Api::Chat => {
                let m = body["messages"].as_array_mut().unwrap();
                m.push(
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": CALL_ID, "type": "function",
                    "function": {"name": CALL_NAME, "arguments": args.to_string()}}]}),
                );
                m.push(json!({"role": "tool", "tool_call_id": CALL_ID, "content": RESULT}));
            }
            Api::Responses => {
                let i = body["input"].as_array_mut().unwrap();
                i.push(json!({"type": "function_call", "call_id": CALL_ID, "name": CALL_NAME, "arguments": args.to_string()}));
                i.push(json!({"type": "function_call_output", "call_id": CALL_ID, "output": RESULT}));
            }
            Api::Anthropic => {
                let m = body["messages"].as_array_mut().unwrap();
                m.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": CALL_ID, "name": CALL_NAME, "input": args}]}));
                m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": CALL_ID, "is_error": error, "content": RESULT}]}));
            }
            Api::Gemini => {
                let c = body["contents"].as_array_mut().unwrap();
                c.push(json!({"role": "model", "parts": [{"functionCall": {"name": CALL_NAME, "args": args}}]}));
                c.push(json!({"role": "user", "parts": [{"functionResponse": {"name": CALL_NAME, "response": {"output": RESULT}}}]}));
            }
        }
    }
    (path, headers, body)
}

/// The calls a streamed answer hands the client, in any of the APIs.
fn calls_in(api: Api, body: &[u8]) -> usize {
    let payloads = sse_payloads(body);
    payloads
        .iter()
        .filter(|p| match api {
            Api::Chat => p["choices"][0]["delta"]["tool_calls"][0]["id"].is_string(),
            Api::Responses => p["type"] == "response.output_item.done" && p["item"]["type"] == "function_call",
            Api::Anthropic => p["type"] == "content_block_start" && p["content_block"]["type"] == "tool_use",
            Api::Gemini => p["candidates"][0]["content"]["parts"][0]["functionCall"].is_object(),
        })
        .count()
}

/// The last text of a streamed answer and how it says it ended.
fn ending(api: Api, body: &[u8]) -> (String, String) {
    let payloads = sse_payloads(body);
    match api {
        Api::Chat => {
            assert_eq!(payloads.last().unwrap(), &json!("[DONE]"));
            let chunks = &payloads[..payloads.len() - 1];
            let text = chunks
                .iter()
                .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
                .collect::<String>();
            let finish = chunks.last().unwrap()["choices"][0]["finish_reason"]
                .as_str()
                .unwrap()
                .to_string();
            (text, finish)
        }
        Api::Responses => {
            let completed = payloads.last().unwrap();
            assert_eq!(completed["type"], "response.completed");
            let output = completed["response"]["output"].as_array().unwrap();
            let text = output.last().unwrap()["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string();
            (text, completed["response"]["status"].as_str().unwrap().to_string())
        }
        Api::Anthropic => {
            assert_eq!(payloads.last().unwrap()["type"], "message_stop");
            let text = payloads
                .iter()
                .filter_map(|p| p["delta"]["text"].as_str())
                .collect::<String>();
            let delta = &payloads[payloads.len() - 2];
            (text, delta["delta"]["stop_reason"].as_str().unwrap().to_string())
        }
        Api::Gemini => {
            let last = payloads.last().unwrap();
            let text = last["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_string();
            (
                text,
                last["candidates"][0]["finishReason"].as_str().unwrap().to_string(),
            )
        }
    }
}

fn normal_end(api: Api) -> &'static str {
    match api {
        Api::Chat => "stop",
        Api::Responses => "completed",
        Api::Anthropic => "end_turn",
        Api::Gemini => "STOP",
    }
}

#[test]
fn a_tool_loop_is_stopped_before_the_looping_call_reaches_the_client() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    let p = Proxy::to_apis(&up.url, dir.path(), &["--guard", "extended"]);
    for api in APIS {
        let prompt = format!("tool calls via {api:?}");
        let served_before = up.served().len();
        // The first two rounds pass as the upstream sent them.
        for turns in 0..2 {
            let (path, headers, body) = looping(api, &prompt, turns, false);
            let got = send_body(&p, &path, &headers, &body);
            let served = up.served();
            assert!(
                got.body == served.last().unwrap().script(),
                "{api:?} round {turns}: the bytes changed"
            );
            assert_eq!(calls_in(api, &got.body), 1, "{api:?}");
        }
        // The third would repeat the step (call and result) a third time:
        // the client never gets it, and its answer ends normally with why.
        let (path, headers, body) = looping(api, &prompt, 2, false);
        for ask in 0..3 {
            let got = send_body(&p, &path, &headers, &body);
            let text = String::from_utf8_lossy(&got.body);
            assert_eq!(got.status, 200, "{text}");
            assert_eq!(calls_in(api, &got.body), 0, "{api:?} ask {ask}: {text}");
            let (said, finish) = ending(api, &got.body);
            assert_eq!(finish, normal_end(api), "{api:?}: {text}");
            assert!(
                said.ends_with(
                    "loopscope stopped a loop: read_file {path: src/main.rs, note: ファイル} called 3 times \
                     with the same arguments and the same result (tool-loop); this call was not run."
                ),
                "{api:?} ask {ask}: {said:?}"
            );
        }
        assert_eq!(
            up.served().len(),
            served_before + 5,
            "{api:?}: the upstream answered every ask"
        );
        // One conversation: the prompt, the two calls that ran and their
        // results, and a note for each answer the guard ended.
        let session = p.session_of(&prompt);
        let recorded = events(&session);
        let count = |kind: &str| recorded.iter().filter(|e| e["type"] == kind).count();
        assert_eq!(
            (count("prompt"), count("tool_call"), count("tool_result")),
            (1, 2, 2),
            "{api:?}"
        );
        let notes: Vec<&Value> = recorded.iter().filter(|e| e["kind"] == "guard").collect();
        assert_eq!(notes.len(), 3, "{api:?}");
        for note in notes {
            assert_eq!(note["detector"], "tool-loop");
            assert_eq!(note["withheld_call"], json!({"name": CALL_NAME, "args": call_args()}));
            assert!(note.get("detection_event").is_none(), "the call is in no file");
        }
        assert_eq!(
            p.sessions()
                .iter()
                .filter(|f| events(f).iter().any(|e| e["text"] == prompt.as_str()))
                .count(),
            1
        );
    }
    const KEPT: &str = "kept the call from the agent and ended the response";
    let printed = p
        .printed_until(|lines| lines.iter().filter(|l| l.contains(KEPT)).count() >= 12)
        .join("\n");
    assert_eq!(printed.matches(KEPT).count(), 12, "{printed}");
}

#[test]
fn a_detection_on_the_results_a_request_brings_ends_its_answer_at_the_first_word() {
    let up = Upstream::start();
    let dir = tempfile::tempdir().unwrap();
    // error-streak fires on results alone: five failures in a row.
    let p = Proxy::to_apis(
        &up.url,
        dir.path(),
        &["--guard", "extended", "--detectors", "error-streak"],
    );
    let prompt = "tool failures via Anthropic";
    // Each round sends back one more failed call (each a call of its own,
    // so no call's result foretells the next).
    let ask = |rounds: usize| {
        let (path, headers, mut body) = call(Api::Anthropic, prompt, true);
        let m = body["messages"].as_array_mut().unwrap();
        for i in 0..rounds {
            let id = format!("t{i}");
            m.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read_file", "input": {"path": format!("f{i}.rs")}}]}));
            m.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "is_error": true, "content": "no such file"}]}));
        }
        send_body(&p, &path, &headers, &body)
    };
    for rounds in 0..5 {
        assert_eq!(calls_in(Api::Anthropic, &ask(rounds).body), 1, "round {rounds} passes");
    }
    // The fifth failure fires: the answer to it, and to its retry, is
    // loopscope's words before anything the model said.
    for _ in 0..2 {
        let got = ask(5);
        let text = String::from_utf8_lossy(&got.body);
        let payloads = sse_payloads(&got.body);
        assert_eq!(payloads[0]["type"], "message_start", "{text}");
        assert_eq!(payloads[1]["content_block"]["type"], "thinking", "{text}");
        assert!(
            payloads.iter().all(|p| p["delta"]["type"] != "thinking_delta"),
            "{text}"
        );
        assert_eq!(calls_in(Api::Anthropic, &got.body), 0, "{text}");
        let (said, finish) = ending(Api::Anthropic, &got.body);
        assert_eq!(finish, "end_turn");
        assert_eq!(
            said,
            "loopscope stopped a loop: 5 tool results in a row failed, each the same call or the same error (max_consecutive 5) (error-streak)."
        );
    }
    // A request with something new is answered again.
    assert_eq!(calls_in(Api::Anthropic, &ask(6).body), 1);
    let session = p.session_of(prompt);
    let recorded = events(&session);
    let notes: Vec<&Value> = recorded.iter().filter(|e| e["kind"] == "guard").collect();
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0]["detector"], "error-streak");
    // It fired on the fifth result, which the file holds.
    let at = notes[0]["detection_event"].as_u64().unwrap() as usize;
    assert_eq!(recorded[at]["type"], "tool_result");
    assert_eq!(recorded.iter().filter(|e| e["type"] == "tool_result").count(), 6);
    let printed = p
        .printed_until(|lines| lines.iter().any(|l| l.contains("guard: error-streak fired")))
        .join("\n");
    assert_eq!(
        printed.matches("guard: error-streak fired").count(),
        1,
        "said once: {printed}"
    );
}
