use super::*;
use crate::record::protocol::{Role, Turn};

fn req(turns: &[(Role, &str)]) -> Request {
    let turns = turns.iter().map(|(r, t)| Turn::new(*r, t.to_string())).collect();
    Request::new(Some("gpt/4o mini".into()), "sys", turns)
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_conversation_goes_on_in_one_file_and_a_busy_twin_gets_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new(dir.path(), None).unwrap();
    let first = req(&[(Role::System, "sys"), (Role::User, "fix 测试 🎉")]);
    let a = rec.begin(Protocol::OpenaiChat, &first, "http://up");
    // The same first messages while `a` streams: a parallel sub-agent.
    let b = rec.begin(Protocol::OpenaiChat, &first, "http://up");
    let (pa, pb) = (a.conv().path.clone(), b.conv().path.clone());
    assert_ne!(pa, pb);
    assert!(
        pa.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .ends_with("-gpt-4o-mini.jsonl"),
        "{pa:?}"
    );
    drop(a);
    drop(b);
    let next = req(&[
        (Role::System, "sys"),
        (Role::User, "fix 测试 🎉"),
        (Role::Assistant, ""),
        (Role::User, "thanks; now the docs"),
    ]);
    let c = rec.begin(Protocol::OpenaiChat, &next, "http://up");
    assert!(c.conv().path == pa || c.conv().path == pb);
    let path = c.conv().path.clone();
    drop(c);
    let events = lines(&path);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["meta", "prompt", "prompt"]);
    assert_eq!(events[1]["text"], "fix 测试 🎉");
    assert_eq!(events[0]["api"], "openai-chat");
    assert_eq!(rec.conversations.load(Ordering::Relaxed), 2);
}

#[test]
fn a_retried_request_adds_nothing_and_results_after_calls_are_not_prompts() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new(dir.path(), None).unwrap();
    let first = req(&[(Role::User, "go")]);
    let path = {
        let x = rec.begin(Protocol::OpenaiChat, &first, "u");
        let path = x.conv().path.clone();
        path
    };
    drop(rec.begin(Protocol::OpenaiChat, &first, "u"));
    {
        let mut x = rec.begin(Protocol::OpenaiChat, &first, "u");
        let mut items = vec![Item::Event(Event::tool_call("ls", json!({})), 1)];
        x.items(&mut items, Instant::now());
    }
    let mut with_result = req(&[
        (Role::User, "go"),
        (Role::Assistant, ""),
        (Role::Tool, ""),
        (Role::User, "also this"),
    ]);
    with_result.turns[2]
        .results
        .push(super::super::protocol::ToolOutcome::new(
            Some("c1"),
            false,
            json!("boom"),
        ));
    drop(rec.begin(Protocol::OpenaiChat, &with_result, "u"));
    let kinds: Vec<String> = lines(&path)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["meta", "prompt", "tool_call", "tool_result", "note"]);
}

#[test]
fn file_names_are_safe_and_never_reuse_a_file() {
    assert_eq!(file_safe("../../etc/passwd"), "etc-passwd");
    assert_eq!(file_safe("模型"), "unknown-model");
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("x.jsonl"), "mine").unwrap();
    let (p, _) = create_new(dir.path(), "x").unwrap();
    assert!(p.ends_with("x-2.jsonl"));
    assert_eq!(fs::read_to_string(dir.path().join("x.jsonl")).unwrap(), "mine");
}

fn kinds_and_texts(path: &Path) -> Vec<(String, String)> {
    lines(path)
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().or(e["type"].as_str()).unwrap().to_string();
            (kind, e["text"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

#[test]
fn claude_codes_retry_with_words_added_goes_on_in_the_same_conversation() {
    // Claude Code's first message: its reminders, then what the user typed;
    // asked again after an answer it could not show, with words added.
    let reminder = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-11-28.\n</system-reminder>\n";
    let body = |blocks: &[&str], more: &[Value]| {
        let content: Vec<Value> = blocks.iter().map(|t| json!({"type": "text", "text": t})).collect();
        let mut messages = vec![json!({"role": "user", "content": content})];
        messages.extend(more.iter().cloned());
        json!({"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are Claude Code."}], "messages": messages})
    };
    let parse = |v: &Value| Protocol::Anthropic.parse_request("/v1/messages", v);
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new(dir.path(), None).unwrap();
    let first = parse(&body(&[reminder, "What does notes.txt say? 请用中文 🙏"], &[]));
    let path = rec.begin(Protocol::Anthropic, &first, "u").conv().path.clone();
    let retry = parse(&body(
        &[
            reminder,
            "What does notes.txt say? 请用中文 🙏\n",
            "[Your previous response had no visible output. Please continue and produce a user-visible response.]",
        ],
        &[],
    ));
    assert_eq!(rec.begin(Protocol::Anthropic, &retry, "u").conv().path, path);
    // Its next request repeats the words added: the same conversation still.
    let next = parse(&body(
        &[
            reminder,
            "What does notes.txt say? 请用中文 🙏\n",
            "[Your previous response had no visible output. Please continue and produce a user-visible response.]",
        ],
        &[
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hello"}]}),
        ],
    ));
    assert_eq!(rec.begin(Protocol::Anthropic, &next, "u").conv().path, path);
    assert_eq!(rec.conversations.load(Ordering::Relaxed), 1);
    let got = kinds_and_texts(&path);
    let kinds: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["meta", "note", "prompt", "retry", "tool_result"]);
    assert_eq!(got[1].1, reminder.trim());
    assert_eq!(got[2].1, "What does notes.txt say? 请用中文 🙏");
    assert!(got[3].1.starts_with("[Your previous response had no visible output."));
}

#[test]
fn gemini_clis_session_context_is_a_note_and_its_retry_goes_on_in_the_same_conversation() {
    let body = |parts: &[&str]| {
        let parts: Vec<Value> = parts.iter().map(|t| json!({"text": t})).collect();
        json!({"contents": [{"role": "user", "parts": parts}]})
    };
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    let context =
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n</session_context>";
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new(dir.path(), None).unwrap();
    let first = Protocol::Gemini.parse_request(path, &body(&[context, "fix the test"]));
    let file = rec.begin(Protocol::Gemini, &first, "u").conv().path.clone();
    let words = "\n[System: You previously generated thoughts but failed to provide a final user-facing response.]";
    let retry = Protocol::Gemini.parse_request(path, &body(&[context, "fix the test", words]));
    assert_eq!(rec.begin(Protocol::Gemini, &retry, "u").conv().path, file);
    // The same retry once more adds nothing.
    assert_eq!(rec.begin(Protocol::Gemini, &retry, "u").conv().path, file);
    let got = kinds_and_texts(&file);
    assert_eq!(
        got[1..],
        [
            ("note".to_string(), context.to_string()),
            ("prompt".to_string(), "fix the test".to_string()),
            ("retry".to_string(), words.trim().to_string()),
        ]
    );
    // Another task with the same context is another conversation.
    let other = Protocol::Gemini.parse_request(path, &body(&[context, "fix the build"]));
    assert_ne!(rec.begin(Protocol::Gemini, &other, "u").conv().path, file);
}

#[test]
fn finished_conversations_are_let_go_past_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Recorder::new(dir.path(), None).unwrap();
    for i in 0..MAX_KEPT * 3 {
        let r = req(&[(Role::User, &format!("task {i} ✅"))]);
        drop(rec.begin(Protocol::OpenaiChat, &r, "http://up"));
    }
    let kept = lock(&rec.entries).len();
    assert!(kept <= MAX_KEPT, "{kept} conversations kept");
    // The newest goes on in its own file; an old one let go starts a new one.
    let files = fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, MAX_KEPT * 3);
    let newest = req(&[
        (Role::User, &format!("task {} ✅", MAX_KEPT * 3 - 1)),
        (Role::Assistant, "done"),
        (Role::User, "and now?"),
    ]);
    drop(rec.begin(Protocol::OpenaiChat, &newest, "http://up"));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), MAX_KEPT * 3);
}

#[test]
fn a_session_stops_growing_at_its_limit_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recorder::new(dir.path(), None).unwrap();
    rec.max_session = 1024;
    let mut turns = vec![(Role::User, "start 🚀".to_string())];
    let mut path = None;
    for i in 0..40 {
        let t: Vec<(Role, &str)> = turns.iter().map(|(r, s)| (*r, s.as_str())).collect();
        let x = rec.begin(Protocol::OpenaiChat, &req(&t), "http://up");
        path = Some(x.conv().path.clone());
        drop(x);
        turns.push((Role::Assistant, "ok".to_string()));
        turns.push((Role::User, format!("more words, part {i}, 詳しく")));
    }
    let path = path.unwrap();
    let size = fs::metadata(&path).unwrap().len();
    assert!(size <= 1024 + 300, "{size}");
    let events = lines(&path);
    assert_eq!(events.last().unwrap()["kind"], "max-session");
    assert_eq!(events.iter().filter(|e| e["kind"] == "max-session").count(), 1);
}
