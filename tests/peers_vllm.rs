//! Profile `vllm` (issue 42): vLLM's `repetition_detection` over token ids
//! — ids a log carries (`token_ids`), ids of `--tokenizer` (a tokenizer.json
//! built here, no download), or one delta as one token with a one-line
//! caveat — and its parameters, listing and errors on the command line.

mod common;

use std::path::Path;

use serde_json::{json, Value};

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = common::loopscope_at_root().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn write_events(dir: &Path, name: &str, events: &[Value]) -> String {
    let path = dir.join(name);
    let text: String = events.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// (detector, event, period) of each detection `scan --json` reports.
fn scan(file: &str, extra: &[&str]) -> (Vec<(String, u64, u64)>, String) {
    let mut args = vec!["scan", "--json", "--profile", "vllm"];
    args.extend_from_slice(extra);
    args.push(file);
    let (code, out, err) = cli(&args);
    assert!(matches!(code, 0 | 1), "exit {code}: {err}");
    let found = out
        .lines()
        .map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            (
                d["detector"].as_str().unwrap().to_string(),
                d["event"].as_u64().unwrap(),
                d["period"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    (found, err)
}

const SETS: [&str; 6] = [
    "--set",
    "vllm-repetition.min_pattern_size=2",
    "--set",
    "vllm-repetition.max_pattern_size=8",
    "--set",
    "vllm-repetition.min_count=3",
];

/// A word-level tokenizer.json (Hugging Face's format): whitespace and
/// punctuation split, CJK words and emoji their own tokens.
fn tokenizer(dir: &Path) -> String {
    let doc = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {
            "type": "WordLevel",
            "vocab": {"[UNK]": 0, "the": 1, "loop": 2, "again": 3, "思考": 4, "🎉": 5, ".": 6},
            "unk_token": "[UNK]"
        }
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn token_ids_in_the_log_are_the_tokens() {
    let dir = tempfile::tempdir().unwrap();
    // Two ids per delta: the text of each delta differs, the ids repeat.
    let events = [
        json!({"type": "request"}),
        json!({"type": "content", "text": "思考", "token_ids": [4, 5]}),
        json!({"type": "content", "text": "🎉 a", "token_ids": [4, 5]}),
        json!({"type": "content", "text": "b", "token_ids": [4, 5]}),
        json!({"type": "content", "text": "c", "token_ids": [4, 5]}),
    ];
    let file = write_events(dir.path(), "ids.jsonl", &events);
    let (found, err) = scan(&file, &SETS);
    assert_eq!(found, vec![("vllm-repetition".to_string(), 3, 2)], "{err}");
    // Every text event had ids: nothing to say about exactness.
    assert!(err.is_empty(), "{err}");
    // One id differs in the last copy: no stop.
    let mut near = events.to_vec();
    near[3] = json!({"type": "content", "text": "b", "token_ids": [4, 6]});
    near.truncate(4);
    let file = write_events(dir.path(), "near.jsonl", &near);
    assert_eq!(scan(&file, &SETS).0, vec![]);
}

#[test]
fn without_ids_a_tokenizer_counts_the_tokens_and_without_either_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer(dir.path());
    // Three deltas of one sentence: 3 tokens each with the tokenizer (a
    // 3-token pattern 3 times), one "token" each without it (a run of 3,
    // which min_pattern_size 2 cannot stop before 6).
    let events = [
        json!({"type": "request"}),
        json!({"type": "reasoning", "text": "the loop again"}),
        json!({"type": "reasoning", "text": "the loop again"}),
        json!({"type": "content", "text": "the loop again"}),
    ];
    let file = write_events(dir.path(), "text.jsonl", &events);
    let mut with_tokenizer = SETS.to_vec();
    with_tokenizer.extend(["--tokenizer", tok.as_str()]);
    let (found, err) = scan(&file, &with_tokenizer);
    assert_eq!(found, vec![("vllm-repetition".to_string(), 3, 3)], "{err}");
    assert!(err.is_empty(), "{err}");

    let (found, err) = scan(&file, &SETS);
    assert_eq!(found, vec![]);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("cannot run exactly"), "{err}");
    assert!(
        lines[0].contains("token_ids") && lines[0].contains("--tokenizer"),
        "{err}"
    );

    // CJK and emoji through the tokenizer: "思考 🎉 ." is 3 tokens.
    let cjk = [
        json!({"type": "request"}),
        json!({"type": "content", "text": "思考 🎉 ."}),
        json!({"type": "content", "text": "思考 🎉 ."}),
        json!({"type": "content", "text": "思考 🎉 ."}),
    ];
    let file = write_events(dir.path(), "cjk.jsonl", &cjk);
    assert_eq!(
        scan(&file, &with_tokenizer).0,
        vec![("vllm-repetition".to_string(), 3, 3)]
    );
}

#[test]
fn one_delta_one_token_by_its_text_with_cjk_and_emoji() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = vec![json!({"type": "request"})];
    for _ in 0..3 {
        for t in ["思", "考", "🎉"] {
            events.push(json!({"type": "content", "text": t}));
        }
    }
    let file = write_events(dir.path(), "deltas.jsonl", &events);
    let sets = [
        "--set",
        "vllm-repetition.min_pattern_size=1",
        "--set",
        "vllm-repetition.max_pattern_size=4",
        "--set",
        "vllm-repetition.min_count=3",
    ];
    let (found, err) = scan(&file, &sets);
    assert_eq!(found, vec![("vllm-repetition".to_string(), 9, 3)]);
    assert!(err.contains("9 text events carry no token_ids"), "{err}");
}

#[test]
fn the_listing_explains_the_parameters_and_that_vllm_has_it_off() {
    let (code, out, err) = cli(&["detectors", "--profile", "vllm"]);
    assert_eq!(code, 0, "{err}");
    for name in ["max_pattern_size", "min_pattern_size", "min_count", "min_tokens"] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
    assert!(out.contains("Off in vLLM"), "{out}");
    let (_, out, _) = cli(&["detectors", "--profile", "vllm", "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    let det = &doc["detectors"][0];
    assert_eq!(det["id"], "vllm-repetition");
    let names: Vec<&str> = det["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["max_pattern_size", "min_pattern_size", "min_count", "min_tokens"]
    );
}

#[test]
fn parameters_vllm_refuses_switch_it_off_and_a_bad_tokenizer_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = vec![json!({"type": "request"})];
    events.extend((0..20).map(|_| json!({"type": "content", "text": "z"})));
    let file = write_events(dir.path(), "z.jsonl", &events);
    // min_count 1: vLLM rejects the request; the check never runs.
    let off = [
        "--set",
        "vllm-repetition.max_pattern_size=4",
        "--set",
        "vllm-repetition.min_count=1",
    ];
    assert_eq!(scan(&file, &off).0, vec![]);
    // max_pattern_size 0 is vLLM's default: off.
    assert_eq!(scan(&file, &["--set", "vllm-repetition.max_pattern_size=0"]).0, vec![]);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"model\": 7}").unwrap();
    for path in [
        bad.display().to_string(),
        dir.path().join("absent.json").display().to_string(),
    ] {
        let (code, out, err) = cli(&["scan", "--profile", "vllm", "--tokenizer", &path, &file]);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty());
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--tokenizer"), "{err}");
    }
}

#[test]
fn a_chat_completions_stream_with_token_ids_keeps_them() {
    // vLLM with "return_token_ids": true puts each chunk's ids on its choice.
    let dir = tempfile::tempdir().unwrap();
    let mut sse = String::new();
    let chunk = |delta: Value, ids: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": delta, "token_ids": ids, "finish_reason": null}]})
    };
    sse += &format!(
        "data: {}\n\n",
        chunk(json!({"role": "assistant", "content": ""}), json!([]))
    );
    for (text, ids) in [
        ("ab", json!([7, 8])),
        ("ab", json!([7, 8])),
        ("a", json!([7])),
        ("b", json!([8])),
    ] {
        sse += &format!("data: {}\n\n", chunk(json!({"content": text}), ids));
    }
    sse += "data: [DONE]\n\n";
    let path = dir.path().join("chat.sse");
    std::fs::write(&path, sse).unwrap();
    let file = path.display().to_string();
    let (code, out, err) = cli(&["convert", "--format", "openai-chat", &file]);
    assert_eq!(code, 0, "{err}");
    let ids: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "content")
        .map(|e| e["token_ids"].clone())
        .collect();
    assert_eq!(ids, vec![json!([7, 8]), json!([7, 8]), json!([7]), json!([8])]);
    // [7 8] three times over four deltas: the 4th content delta completes it.
    let sets = [
        "--format",
        "openai-chat",
        "--set",
        "vllm-repetition.min_pattern_size=2",
        "--set",
        "vllm-repetition.max_pattern_size=4",
        "--set",
        "vllm-repetition.min_count=3",
    ];
    let (found, err) = scan(&file, &sets);
    assert_eq!(found.len(), 1, "{found:?} {err}");
    assert_eq!(found[0].2, 2);
    assert!(err.is_empty(), "{err}");
}
