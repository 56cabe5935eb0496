//! Importer throughput on ~4 MB of each format (`cargo bench --bench importers`).
//! Importing must never be the bottleneck: compare with the engine bench.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use loopscope_core::formats::detect::Kind;
use loopscope_core::formats::Decoded;
use serde_json::json;

const TARGET: usize = 4 << 20;

fn words(i: usize) -> String {
    const W: &[&str] = &[
        "the", "parser", "returns", "early", "on", "empty", "input", "so", "check", "config",
    ];
    (0..6)
        .map(|k| W[(i * 7 + k * 3) % W.len()])
        .collect::<Vec<_>>()
        .join(" ")
        + " "
}

/// Repeats `make(i)` until the text is about TARGET bytes.
fn build(make: impl Fn(usize) -> String) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < TARGET {
        s.push_str(&make(i));
        i += 1;
    }
    s
}

fn inputs() -> Vec<(&'static str, Kind, String)> {
    let sse = |v: serde_json::Value| format!("data: {v}\n\n");
    vec![
        (
            "openai-chat SSE",
            Kind::OpenaiChat,
            build(|i| sse(json!({"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"reasoning_content": words(i)}}]}))),
        ),
        (
            "openai-responses SSE",
            Kind::OpenaiResponses,
            build(|i| format!("event: response.output_text.delta\n{}", sse(json!({"type":"response.output_text.delta","item_id":"m","delta": words(i)})))),
        ),
        (
            "anthropic SSE",
            Kind::Anthropic,
            build(|i| format!("event: content_block_delta\n{}", sse(json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking": words(i)}})))),
        ),
        (
            "gemini SSE",
            Kind::Gemini,
            build(|i| sse(json!({"candidates":[{"content":{"role":"model","parts":[{"text": words(i), "thought": true}]}}],"responseId":"r"}))).replace('\n', "\r\n"),
        ),
        (
            "claude-code JSONL",
            Kind::ClaudeCode,
            build(|i| {
                json!({"type":"assistant","uuid":i,"parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00.000Z","requestId":format!("r{}", i / 5),
                       "message":{"role":"assistant","content":[{"type":"text","text": words(i).repeat(20)}]}})
                .to_string()
                    + "\n"
            }),
        ),
        (
            "codex rollout",
            Kind::Codex,
            build(|i| {
                json!({"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":format!("{{\"command\":[\"cat\",\"f{i}\"]}}"),"call_id":format!("c{i}")}})
                    .to_string()
                    + "\n"
            }),
        ),
        (
            "gemini-cli JSONL",
            Kind::GeminiCliJsonl,
            build(|i| json!({"id":format!("m{i}"),"timestamp":"2026-01-01T00:00:00.000Z","type":"gemini","content": words(i).repeat(20)}).to_string() + "\n"),
        ),
        (
            "pi session JSONL",
            Kind::PiSession,
            // An assistant turn, then its tool's result, as sessions alternate them.
            build(|i| {
                let parent = if i == 0 { serde_json::Value::Null } else { json!(format!("e{}", i - 1)) };
                let message = if i % 2 == 0 {
                    json!({"role":"assistant","content":[{"type":"thinking","thinking": words(i).repeat(10)},{"type":"toolCall","id":format!("c{i}"),"name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse","usage":{"output":20}})
                } else {
                    json!({"role":"toolResult","toolCallId":format!("c{}", i - 1),"content":[{"type":"text","text": words(i).repeat(30)}],"isError":false})
                };
                json!({"type":"message","id":format!("e{i}"),"parentId":parent,"timestamp":"2026-01-01T00:00:00.000Z","message":message}).to_string() + "\n"
            }),
        ),
        (
            "copilot-cli events",
            Kind::CopilotEvents,
            build(|i| {
                json!({"type":"assistant.message","data":{"messageId":format!("m{i}"),"content": words(i).repeat(20),"toolRequests":[]},"id":format!("e{i}"),"timestamp":"2026-01-01T00:00:00.000Z","parentId":null})
                    .to_string()
                    + "\n"
            }),
        ),
        (
            "opencode rows",
            Kind::OpencodeLines,
            build(|i| {
                json!({"row":"part","time":1,"data":{"id":format!("p{i}"),"messageID":"m","type":"text","text": words(i).repeat(20)}}).to_string() + "\n"
            }),
        ),
        (
            "openhands events",
            Kind::OpenhandsEvents,
            build(|i| {
                json!({"id":format!("e{i}"),"timestamp":"2026-01-01T00:00:00","source":"agent","thought":[{"type":"text","text": words(i).repeat(20)}],"tool_call":{"id":format!("c{i}"),"name":"terminal","arguments":"{\"command\":\"ls\"}"},"llm_response_id":format!("r{i}"),"kind":"ActionEvent"})
                    .to_string()
                    + "\n"
            }),
        ),
        (
            "claude-trace pairs",
            Kind::ClaudeTrace,
            build(|i| {
                let sse = format!("event: content_block_delta\ndata: {}\n\n", json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text": words(i).repeat(20)}}));
                json!({"request":{"timestamp":1.0,"url":"u","body":{"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"go"}]}},"response":{"status_code":200,"body_raw":sse},"logged_at":"x"}).to_string() + "\n"
            }),
        ),
        (
            "otel spans",
            Kind::Otel,
            build(|i| {
                let out = json!([{"role":"assistant","parts":[{"type":"text","content": words(i).repeat(20)}]}]).to_string();
                json!({"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":format!("{i:016x}"),"name":"chat m","startTimeUnixNano":"1000000000",
                    "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.output.messages","value":{"stringValue":out}}]}]}]}]})
                .to_string()
                    + "\n"
            }),
        ),
        ("cline ui_messages", Kind::ClineUi, {
            let items: Vec<serde_json::Value> = (0..20_000)
                .map(|i| json!({"ts": 1_760_000_000_000i64 + i, "type":"say","say": if i % 2 == 0 {"reasoning"} else {"text"}, "text": words(i as usize).repeat(30)}))
                .collect();
            serde_json::to_string(&items).unwrap()
        }),
    ]
}

fn importers(c: &mut Criterion) {
    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    for (name, kind, text) in inputs() {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                Decoded::from_bytes(black_box(text.as_bytes()), &mut *kind.build())
                    .events
                    .len()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, importers);
criterion_main!(benches);
