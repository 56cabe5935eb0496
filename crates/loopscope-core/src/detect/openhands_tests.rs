//! openhands.rs's tests: the V0 controller's stuck checks.
use super::*;
use serde_json::json;

#[test]
fn python_equality_of_json_values() {
    assert!(py_eq(&json!({"a": 1, "b": true}), &json!({"b": 1.0, "a": true})));
    assert!(py_eq(&json!(0), &json!(false)));
    assert!(!py_eq(&json!("1"), &json!(1)));
    assert!(!py_eq(&json!([1, 2]), &json!([2, 1])));
    assert!(!py_eq(&json!(null), &json!(0)));
}

/// The original `is_stuck`, over the whole filtered history at every
/// check: the reference the incremental window must agree with.
enum Item {
    Action(Action, usize),
    Obs(Obs, usize),
}

fn reference(filtered: &[Item]) -> Option<(&'static str, Vec<usize>)> {
    if filtered.len() < 3 {
        return None;
    }
    let lastn = |n: usize| {
        let (mut a, mut o) = (Vec::new(), Vec::new());
        for item in filtered.iter().rev() {
            match item {
                Item::Action(x, e) if a.len() < n => a.push((x, *e)),
                Item::Obs(x, e) if o.len() < n => o.push((x, *e)),
                _ => {}
            }
        }
        (a, o)
    };
    let events = |a: &[(&Action, usize)], o: &[(&Obs, usize)]| {
        let mut v: Vec<usize> = a.iter().map(|x| x.1).chain(o.iter().map(|x| x.1)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (actions, obs) = lastn(4);
    if actions.len() == 4
        && obs.len() == 4
        && actions.iter().all(|a| action_eq(actions[0].0, a.0))
        && obs.iter().all(|o| obs_eq(obs[0].0, o.0))
    {
        return Some(("repeating_action_observation", events(&actions, &obs)));
    }
    if actions.len() >= 3
        && obs.len() >= 3
        && actions[..3].iter().all(|a| action_eq(actions[0].0, a.0))
        && obs[..3].iter().all(|o| matches!(o.0, Obs::Error { .. }))
    {
        return Some(("repeating_action_error", events(&actions[..3], &obs[..3])));
    }
    let messages: Vec<(usize, &Action, usize)> = filtered
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            Item::Action(a @ Action::Message { .. }, e) => Some((i, a, *e)),
            _ => None,
        })
        .collect();
    if messages.len() >= 3 {
        let last = &messages[messages.len() - 3..];
        if last.iter().all(|m| action_eq(last[0].1, m.1))
            && !filtered[last[0].0 + 1..last[2].0]
                .iter()
                .any(|i| matches!(i, Item::Obs(..)))
        {
            return Some(("monologue", last.iter().map(|m| m.2).collect()));
        }
    }
    if filtered.len() >= 6 {
        let (a6, o6) = lastn(6);
        if a6.len() == 6 && o6.len() == 6 {
            let ab_a = action_eq(a6[0].0, a6[2].0)
                && action_eq(a6[0].0, a6[4].0)
                && action_eq(a6[1].0, a6[3].0)
                && action_eq(a6[1].0, a6[5].0);
            let ab_o = obs_eq(o6[0].0, o6[2].0)
                && obs_eq(o6[0].0, o6[4].0)
                && obs_eq(o6[1].0, o6[3].0)
                && obs_eq(o6[1].0, o6[5].0);
            if ab_a && ab_o {
                return Some(("repeating_action_observation_pattern", events(&a6, &o6)));
            }
        }
    }
    if filtered.len() >= 10 {
        let cond: Vec<(usize, usize)> = filtered
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Item::Obs(Obs::Condensation { .. }, e) => Some((i, *e)),
                _ => None,
            })
            .collect();
        if cond.len() >= 10 {
            let last = &cond[cond.len() - 10..];
            for w in last.windows(2) {
                if !filtered[w[0].0 + 1..w[1].0]
                    .iter()
                    .any(|i| !matches!(i, Item::Obs(Obs::Condensation { .. }, _)))
                {
                    return Some(("context_window_error", last.iter().map(|c| c.1).collect()));
                }
            }
        }
    }
    None
}

fn action(k: u8) -> Action {
    match k % 4 {
        0 => Action::Message { content: "same".into() },
        1 => Action::Cmd {
            command: "ls".into(),
            is_input: false,
            thought: String::new(),
        },
        2 => Action::Mcp {
            name: "read".into(),
            args: json!({"path": "a"}),
            thought: String::new(),
        },
        _ => Action::Mcp {
            name: "read".into(),
            args: json!({"path": "b"}),
            thought: String::new(),
        },
    }
}

fn observation(k: u8) -> Obs {
    match k % 4 {
        0 => Obs::Error { content: "boom".into() },
        1 => Obs::Condensation { content: "c".into() },
        2 => Obs::CmdOutput {
            command: "ls".into(),
            exit_code: 0,
        },
        _ => Obs::Mcp {
            content: "x".into(),
            name: "read".into(),
            args: json!({"path": "a"}),
        },
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// The window agrees with the original at every check, whatever
    /// mix of actions, observations, messages and condensations.
    #[test]
    fn the_incremental_window_agrees_with_the_whole_history(
        steps in proptest::collection::vec((proptest::bool::ANY, 0u8..8), 0..80)
    ) {
        let (mut all, mut window) = (Vec::new(), History::default());
        for (i, (is_action, k)) in steps.into_iter().enumerate() {
            if is_action {
                all.push(Item::Action(action(k), i));
                window.action(action(k), i);
            } else {
                all.push(Item::Obs(observation(k), i));
                window.observation(observation(k), i);
            }
            let stuck = Stuck { headless: false, history: window.clone(), pending: Vec::new(), request: None };
            proptest::prop_assert_eq!(stuck.is_stuck(), reference(&all));
        }
    }
}

#[test]
fn the_window_stays_small_over_a_long_task() {
    let mut h = History::default();
    for i in 0..100_000 {
        h.action(action((i % 7) as u8), i);
        h.observation(observation((i % 5) as u8), i);
    }
    assert_eq!(h.len, 200_000);
    assert!(h.actions.len() <= 6 && h.observations.len() <= 6);
    assert!(h.messages.len() <= 3 && h.condensations.len() <= 10);
}
