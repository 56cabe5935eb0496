//! config.rs's tests: settings files, profiles and parameters, and their errors' kinds.
use super::*;

fn value(s: &Setup, id: &str, name: &str) -> Value {
    let c = s.detectors.iter().find(|c| c.info.id == id).unwrap();
    c.params.iter().find(|(n, _)| *n == name).unwrap().1.clone()
}

#[test]
fn profiles_choose_detectors_and_defaults() {
    let seed = Setup::profile(Profile::Seed);
    assert_eq!(seed.detectors.len(), 11);
    let g = Setup::profile(Profile::GeminiCli);
    assert_eq!(g.ids(), vec!["tool-repeat", "chunk-chant", "llm-judge"]);
    assert_eq!(value(&g, "llm-judge", "initial_interval"), Value::Count(10));
    assert_eq!(value(&seed, "llm-judge", "initial_interval"), Value::Count(3));
    assert_eq!(value(&g, "tool-repeat", "max_cycle"), Value::Count(5));
    assert_eq!(value(&seed, "tool-repeat", "max_cycle"), Value::Count(1));
}

#[test]
fn set_overrides_config_which_overrides_defaults() {
    let choices = Choices {
        sets: vec!["block-cycle.min_matches=9".into()],
        ..Choices::default()
    };
    let s = Setup::resolve_with(&choices, "[block-cycle]\nmin_matches = 8\nmax_period = 20\n").unwrap();
    assert_eq!(value(&s, "block-cycle", "min_matches"), Value::Count(9));
    assert_eq!(value(&s, "block-cycle", "max_period"), Value::Count(20));
}

#[test]
fn config_chooses_profile_and_detectors_unless_flags_do() {
    let text = "profile = \"gemini-cli\"\ndetectors = [\"chunk-chant\"]\n";
    let s = Setup::resolve_with(&Choices::default(), text).unwrap();
    assert_eq!((s.profile, s.ids()), (Profile::GeminiCli, vec!["chunk-chant"]));
    let flags = Choices {
        profile: Some(Profile::Seed),
        detectors: Some(vec!["max-turns".into()]),
        ..Choices::default()
    };
    let s = Setup::resolve_with(&flags, text).unwrap();
    assert_eq!((s.profile, s.ids()), (Profile::Seed, vec!["max-turns"]));
}

#[test]
fn mistakes_get_clear_messages() {
    let err = |c: Choices, t: &str| Setup::resolve_with(&c, t).unwrap_err().to_string();
    assert!(err(Choices::default(), "colour = 1").contains("unknown key \"colour\""));
    assert!(err(Choices::default(), "[block-cycle]\nmin_match = 3").contains("no parameter \"min_match\""));
    assert!(err(Choices::default(), "[block-cycle]\nmin_matches = \"x\"").contains("min_matches"));
    assert!(err(Choices::default(), "profile = [").contains("line 1"));
    let sets = |s: &str| Choices {
        sets: vec![s.into()],
        ..Choices::default()
    };
    assert!(err(sets("nope.x=1"), "").contains("unknown detector \"nope\""));
    assert!(err(sets("block-cycle=1"), "").contains("ID.PARAM=VALUE"));
    assert!(err(sets("tool-repeat.key=yaml"), "").contains("canonical, js"));
    let gem = Choices {
        profile: Some(Profile::GeminiCli),
        detectors: Some(vec!["block-cycle".into()]),
        ..Choices::default()
    };
    assert!(err(gem, "").contains("not in profile gemini-cli"));
}

#[test]
fn the_default_config_reads_back_to_the_same_setup() {
    let s = Setup::profile(Profile::GeminiCli);
    let text = s.to_toml();
    let back = Setup::resolve_with(&Choices::default(), &text).unwrap();
    assert_eq!(back.profile, Profile::GeminiCli);
    for (a, b) in s.detectors.iter().zip(&back.detectors) {
        assert_eq!(a.params, b.params);
    }
}

#[test]
fn a_changed_config_says_what_changed_and_reads_back_to_the_same_setup() {
    let choices = Choices {
        detectors: Some(vec!["block-cycle".into(), "list-cycle".into()]),
        sets: vec!["block-cycle.min_matches=21".into()],
        ..Choices::default()
    };
    let s = Setup::resolve_with(&choices, "").unwrap();
    let text = s.to_toml();
    assert!(!text.contains("Every value below is the default"), "{text}");
    assert!(text.contains("1 change from profile seed's defaults"), "{text}");
    let marked: Vec<&str> = text.lines().filter(|l| l.contains("# changed (default ")).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(
        marked[0].starts_with("min_matches = 21  # changed (default 6); "),
        "{text}"
    );
    assert!(text.contains("detectors = [\"block-cycle\", \"list-cycle\"]"), "{text}");
    let back = Setup::resolve_with(&Choices::default(), &text).unwrap();
    assert_eq!(back.ids(), s.ids());
    assert!(
        back.diff().contains(&"block-cycle.min_matches: 6 -> 21".to_string()),
        "{:?}",
        back.diff()
    );
    // The defaults alone still say so, and name no selection.
    let plain = Setup::profile(Profile::Seed).to_toml();
    assert!(plain.contains("Every value below is the default") && !plain.contains("detectors ="));
}

#[test]
fn a_mistyped_detector_gets_the_nearest_id_not_the_whole_list() {
    let message = |ids: &[&str]| {
        let choices = Choices {
            detectors: Some(ids.iter().map(|s| s.to_string()).collect()),
            ..Choices::default()
        };
        Setup::resolve_with(&choices, "").map(|_| ()).unwrap_err().to_string()
    };
    let near = message(&["list-cylce"]);
    assert!(
        near.starts_with("unknown detector \"list-cylce\" (did you mean list-cycle? "),
        "{near}"
    );
    let far = message(&["bogus"]);
    assert!(
        !far.contains("did you mean") && far.contains("loopscope detectors --profile"),
        "{far}"
    );
    assert!(far.chars().count() < 120, "{far}");
}
