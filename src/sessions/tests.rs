use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| OsString::from(v))
}

#[test]
fn a_stream_inside_a_container_was_active_when_its_container_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    std::fs::write(&db, b"x").unwrap();
    // A time of its own, not the clock's: what is read back is that.
    let written = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&db)
        .unwrap()
        .set_modified(written)
        .unwrap();
    assert_eq!(modified(&db), Some(written));
    assert_eq!(modified(&dir.path().join("store.db#ses_1")), Some(written));
    assert_eq!(modified(&dir.path().join("gone.db#ses_1")), None);
}

#[test]
fn agents_parse_one_several_and_all() {
    assert_eq!(Agent::parse_list("codex").unwrap(), vec![Agent::Codex]);
    assert_eq!(
        Agent::parse_list("codex,claude-code,codex").unwrap(),
        vec![Agent::Codex, Agent::ClaudeCode]
    );
    assert_eq!(Agent::parse_list("all").unwrap().len(), Agent::ALL.len());
    assert!(Agent::parse_list("vim").unwrap_err().contains("unknown agent"));
}

#[test]
fn locations_follow_home_the_agents_own_variables_and_the_override() {
    let env = env_of(&[("HOME", "/h"), ("CODEX_HOME", "/c")]);
    assert_eq!(
        Agent::ClaudeCode.locations(&env),
        vec![PathBuf::from("/h/.claude/projects")]
    );
    assert_eq!(Agent::Codex.locations(&env), vec![PathBuf::from("/c/sessions")]);
    assert_eq!(Agent::GeminiCli.locations(&env), vec![PathBuf::from("/h/.gemini/tmp")]);
    let cline = Agent::Cline.locations(&env);
    assert!(cline.contains(&PathBuf::from("/h/.cline/data/tasks")));
    if cfg!(target_os = "linux") {
        assert!(cline.contains(&PathBuf::from(
            "/h/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"
        )));
    }
    let env = env_of(&[("HOME", "/h"), ("LOOPSCOPE_ROO_CODE_DIR", "/a:/b")]);
    if cfg!(unix) {
        assert_eq!(
            Agent::RooCode.locations(&env),
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }
    assert!(Agent::Codex.locations(&env_of(&[])).is_empty());
}

#[test]
fn ages_and_dates_parse_and_overflow_is_refused() {
    assert_eq!(parse_age("7d").unwrap(), Duration::from_secs(7 * 86_400));
    assert_eq!(parse_age("30m").unwrap(), Duration::from_secs(1800));
    assert!(parse_age("7w").is_err());
    assert!(parse_age("99999999999999999d").is_err());
    assert!(parse_date("2026-11-01").is_ok());
    assert!(parse_date("2026-11-01T12:00:00+02:00").is_ok());
    assert!(parse_date("yesterday").is_err());
}

#[test]
fn sub_agents_are_named_after_their_parent() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("p");
    std::fs::create_dir_all(project.join("s1/subagents")).unwrap();
    let new = project.join("s1/subagents/agent-a1.jsonl");
    std::fs::write(&new, "{}\n").unwrap();
    assert_eq!(parent_session(&new), Some(project.join("s1.jsonl")));
    let old = project.join("agent-b2.jsonl");
    std::fs::write(&old, "{\"sessionId\":\"s0\",\"isSidechain\":true}\n").unwrap();
    assert_eq!(parent_session(&old), Some(project.join("s0.jsonl")));
    let plain = project.join("s0.jsonl");
    std::fs::write(&plain, "{}\n").unwrap();
    assert_eq!(parent_session(&plain), None);
    let s = Session {
        path: new,
        found: true,
        agent: Some(Agent::ClaudeCode),
        parent: Some(project.join("s1.jsonl")),
        unreadable: None,
        title: None,
    };
    assert!(s.label().ends_with("s1.jsonl ▸ agent-a1"), "{}", s.label());
}
