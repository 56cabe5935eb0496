//! What the four model APIs stream (OpenAI Chat Completions, Responses,
//! Anthropic Messages, Gemini), built from what the model "says": the
//! scripted servers of the tests (`upstream`, the `record` tests' model;
//! `agent_model`, the real agents' model) write their answers with it.

#![allow(dead_code)]

use serde_json::{json, Value};

/// What the model "says", in the order it says it.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Reasoning(String),
    Content(String),
    /// A tool call: its id, name and arguments.
    Call(String, String, Value),
}

pub fn sse(event: Option<&str>, data: &Value) -> Vec<u8> {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n").into_bytes(),
        None => format!("data: {data}\n\n").into_bytes(),
    }
}

pub fn args_pieces(args: &Value) -> Vec<String> {
    let text = args.to_string();
    let chars: Vec<char> = text.chars().collect();
    let third = chars.len().div_ceil(3);
    chars.chunks(third).map(|c| c.iter().collect()).collect()
}

pub fn chat_stream(id: &str, model: &str, steps: &[Step]) -> Vec<Vec<u8>> {
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    // Calls of one answer are told apart by their index.
    let mut calls = 0;
    for s in steps {
        match s {
            Step::Reasoning(t) => out.push(chunk(json!({"reasoning_content": t}), Value::Null)),
            Step::Content(t) => out.push(chunk(json!({"content": t}), Value::Null)),
            Step::Call(id, name, args) => {
                let index = calls;
                calls += 1;
                for (i, piece) in args_pieces(args).iter().enumerate() {
                    let call = if i == 0 {
                        json!({"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": piece}})
                    } else {
                        json!({"index": index, "function": {"arguments": piece}})
                    };
                    out.push(chunk(json!({"tool_calls": [call]}), Value::Null));
                }
            }
        }
    }
    out.push(chunk(json!({}), json!(if calls > 0 { "tool_calls" } else { "stop" })));
    out.push(sse(None, &json!({"id": id, "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
        "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": steps.len(), "total_tokens": steps.len() + 5}})));
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

pub fn chat_whole(id: &str, model: &str, steps: &[Step]) -> Value {
    let mut reasoning = String::new();
    let mut content = String::new();
    let mut calls = Vec::new();
    for s in steps {
        match s {
            Step::Reasoning(t) => reasoning.push_str(t),
            Step::Content(t) => content.push_str(t),
            Step::Call(id, name, args) => calls
                .push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})),
        }
    }
    let mut message = json!({"role": "assistant", "content": content, "reasoning_content": reasoning});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({"id": id, "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": 5, "completion_tokens": steps.len(), "total_tokens": steps.len() + 5}})
}

pub fn responses_stream(id: &str, model: &str, steps: &[Step]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut seq = 0;
    let mut ev = |data: Value, out: &mut Vec<Vec<u8>>| {
        let mut data = data;
        data["sequence_number"] = json!(seq);
        seq += 1;
        let kind = data["type"].as_str().unwrap().to_string();
        out.push(sse(Some(&kind), &data));
    };
    let base = json!({"id": id, "object": "response", "created_at": 1_700_000_000, "model": model, "status": "in_progress", "output": []});
    ev(json!({"type": "response.created", "response": base}), &mut out);
    let mut items: Vec<Value> = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let index = items.len();
        match &steps[i] {
            Step::Reasoning(_) => {
                let id = format!("rs_{index}");
                ev(
                    json!({"type": "response.output_item.added", "output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
                    &mut out,
                );
                ev(
                    json!({"type": "response.reasoning_summary_part.added", "item_id": id, "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                    &mut out,
                );
                let mut text = String::new();
                while let Some(Step::Reasoning(t)) = steps.get(i) {
                    text.push_str(t);
                    ev(
                        json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": index, "summary_index": 0, "delta": t}),
                        &mut out,
                    );
                    i += 1;
                }
                let item = json!({"id": id, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]});
                ev(
                    json!({"type": "response.output_item.done", "output_index": index, "item": item}),
                    &mut out,
                );
                items.push(item);
            }
            Step::Content(_) => {
                let id = format!("msg_{index}");
                ev(
                    json!({"type": "response.output_item.added", "output_index": index, "item": {"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}}),
                    &mut out,
                );
                ev(
                    json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                    &mut out,
                );
                let mut text = String::new();
                while let Some(Step::Content(t)) = steps.get(i) {
                    text.push_str(t);
                    ev(
                        json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": t}),
                        &mut out,
                    );
                    i += 1;
                }
                ev(
                    json!({"type": "response.output_text.done", "item_id": id, "output_index": index, "content_index": 0, "text": text}),
                    &mut out,
                );
                let item = json!({"id": id, "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
                ev(
                    json!({"type": "response.output_item.done", "output_index": index, "item": item}),
                    &mut out,
                );
                items.push(item);
            }
            Step::Call(call_id, name, args) => {
                let id = format!("fc_{index}");
                ev(
                    json!({"type": "response.output_item.added", "output_index": index, "item": {"id": id, "type": "function_call", "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}}),
                    &mut out,
                );
                for piece in args_pieces(args) {
                    ev(
                        json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": piece}),
                        &mut out,
                    );
                }
                let item = json!({"id": id, "type": "function_call", "call_id": call_id, "name": name, "arguments": args.to_string(), "status": "completed"});
                ev(
                    json!({"type": "response.output_item.done", "output_index": index, "item": item}),
                    &mut out,
                );
                items.push(item);
                i += 1;
            }
        }
    }
    let mut done = base.clone();
    done["status"] = json!("completed");
    done["output"] = Value::Array(items);
    done["usage"] = json!({"input_tokens": 5, "output_tokens": steps.len(), "total_tokens": steps.len() + 5,
        "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}});
    ev(json!({"type": "response.completed", "response": done}), &mut out);
    out
}

pub fn anthropic_blocks(steps: &[Step]) -> Vec<(Value, Vec<Value>)> {
    // Each block: its start and its deltas.
    let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
    for s in steps {
        let (kind, delta) = match s {
            Step::Reasoning(t) => ("thinking", json!({"type": "thinking_delta", "thinking": t})),
            Step::Content(t) => ("text", json!({"type": "text_delta", "text": t})),
            Step::Call(id, name, args) => {
                let deltas = args_pieces(args)
                    .into_iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect();
                blocks.push((json!({"type": "tool_use", "id": id, "name": name, "input": {}}), deltas));
                continue;
            }
        };
        match blocks.last_mut() {
            Some((start, deltas)) if start["type"] == kind => deltas.push(delta),
            _ => {
                let start = match kind {
                    "thinking" => json!({"type": "thinking", "thinking": "", "signature": ""}),
                    _ => json!({"type": "text", "text": ""}),
                };
                blocks.push((start, vec![delta]));
            }
        }
    }
    blocks
}

pub fn anthropic_stream(id: &str, model: &str, steps: &[Step]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut ev = |data: Value| {
        let kind = data["type"].as_str().unwrap().to_string();
        out.push(sse(Some(&kind), &data));
    };
    ev(
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    let blocks = anthropic_blocks(steps);
    let called = blocks.iter().any(|(b, _)| b["type"] == "tool_use");
    for (index, (start, deltas)) in blocks.into_iter().enumerate() {
        let thinking = start["type"] == "thinking";
        ev(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for d in deltas {
            ev(json!({"type": "content_block_delta", "index": index, "delta": d}));
        }
        if thinking {
            ev(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}}),
            );
        }
        ev(json!({"type": "content_block_stop", "index": index}));
    }
    ev(
        json!({"type": "message_delta", "delta": {"stop_reason": if called { "tool_use" } else { "end_turn" }, "stop_sequence": null},
        "usage": {"output_tokens": steps.len()}}),
    );
    ev(json!({"type": "message_stop"}));
    out
}

pub fn anthropic_whole(id: &str, model: &str, steps: &[Step]) -> Value {
    let blocks: Vec<Value> = anthropic_blocks(steps)
        .into_iter()
        .map(|(mut start, deltas)| {
            let mut json_text = String::new();
            for d in deltas {
                match d["type"].as_str() {
                    Some("thinking_delta") => {
                        start["thinking"] = json!(format!(
                            "{}{}",
                            start["thinking"].as_str().unwrap(),
                            d["thinking"].as_str().unwrap()
                        ))
                    }
                    Some("text_delta") => {
                        start["text"] = json!(format!(
                            "{}{}",
                            start["text"].as_str().unwrap(),
                            d["text"].as_str().unwrap()
                        ))
                    }
                    _ => json_text.push_str(d["partial_json"].as_str().unwrap()),
                }
            }
            if start["type"] == "tool_use" {
                start["input"] = serde_json::from_str(&json_text).unwrap();
            }
            start
        })
        .collect();
    let called = blocks.iter().any(|b| b["type"] == "tool_use");
    json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": blocks,
        "stop_reason": if called { "tool_use" } else { "end_turn" }, "stop_sequence": null,
        "usage": {"input_tokens": 5, "output_tokens": steps.len()}})
}

pub fn gemini_chunks(id: &str, path: &str, steps: &[Step]) -> Vec<Value> {
    let model = path
        .split("/models/")
        .nth(1)
        .and_then(|m| m.split(':').next())
        .unwrap_or("gemini")
        .to_string();
    let mut chunks: Vec<Value> = steps
        .iter()
        .map(|s| {
            let part = match s {
                Step::Reasoning(t) => json!({"text": t, "thought": true}),
                Step::Content(t) => json!({"text": t}),
                Step::Call(_, name, args) => json!({"functionCall": {"name": name, "args": args}}),
            };
            json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}],
                "usageMetadata": {"promptTokenCount": 5}, "modelVersion": model, "responseId": id})
        })
        .collect();
    chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": steps.len(), "totalTokenCount": steps.len() + 5},
        "modelVersion": model, "responseId": id}));
    chunks
}
