//! A tool call as tool-loop's steps keep it: not a copy of its arguments
//! (a deep copy of a JSON value is an allocation per string in it) but the
//! canonical key the other detectors share, and the few chars of the
//! arguments a reason shows.

use std::sync::Arc;

use serde_json::Value;

use super::changes::{bookkeeping, changes};
use crate::detect::keys::{json_head, KeyStyle};
use crate::detect::{quote, Observation};

/// A call as a step keeps it, without a copy of its arguments: its
/// canonical key (`name:args`, shared with the other detectors that keep
/// it), where the name ends in it, and the head of the arguments as the log
/// wrote them (what a reason shows).
#[derive(Clone, Debug)]
pub(super) struct Call {
    key: Arc<str>,
    name_len: usize,
    shown: String,
}

/// Chars of the arguments a reason shows.
const SHOWN: usize = 50;

impl Call {
    pub(super) fn of(obs: &Observation<'_>, name: &str, args: &Value) -> Call {
        Call {
            key: obs
                .shared_call_key(KeyStyle::Canonical)
                .expect("a tool call has a key")
                .clone(),
            name_len: name.len(),
            shown: json_head(args, SHOWN + 1),
        }
    }

    /// Its canonical `name:args` key.
    pub(super) fn key(&self) -> &str {
        &self.key
    }

    pub(super) fn name(&self) -> &str {
        &self.key[..self.name_len]
    }

    /// The call as a reason names it: the name and the head of the arguments.
    pub(super) fn show(&self) -> String {
        format!("{} {}", self.name(), quote(&self.shown, SHOWN))
    }

    /// Whether the call only keeps the agent's plan or thoughts.
    pub(super) fn bookkeeping(&self) -> bool {
        bookkeeping(self.name())
    }

    /// Whether the call may change what another would see. Its arguments
    /// are read back from the canonical key (the same fields and strings
    /// in another key order); arguments that do not read back (nested
    /// deeper than a log line can hold) count as a change, which only
    /// ever ends a stretch early.
    pub(super) fn changes(&self) -> bool {
        match serde_json::from_str::<Value>(&self.key[self.name_len + 1..]) {
            Ok(args) => changes(self.name(), &args),
            Err(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Buffers;
    use crate::event::Event;
    use proptest::prelude::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> Call {
        let event = Event::tool_call(name, args.clone());
        let buffers = Buffers::default();
        Call::of(&Observation::new(0, &event, &buffers, 0, 0), name, &args)
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "(\\PC|[\"\\\\\n\u{0}]){0,12}".prop_map(Value::from),
            prop_oneof![
                Just("rm -rf x"),
                Just("cat a > b"),
                Just("ls"),
                Just("view"),
                Just("edit")
            ]
            .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![Just("command".to_string()), Just("mode".to_string()), "[a-z0-9]{1,6}"],
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// What a step keeps says what the arguments said: the same
        /// reason, and the same verdict on whether the call changes things.
        #[test]
        fn a_call_shows_and_judges_as_its_arguments(
            name in prop_oneof![Just("bash"), Just("edit_file"), Just("str_replace_editor"), Just("read"), Just("a:b")],
            args in arbitrary_json(),
        ) {
            let c = call(name, args.clone());
            prop_assert_eq!(c.name(), name);
            prop_assert_eq!(c.show(), format!("{name} {}", quote(&args.to_string(), SHOWN)));
            prop_assert_eq!(c.changes(), changes(name, &args));
        }
    }

    #[test]
    fn the_head_of_long_arguments_is_cut_at_a_char() {
        let args = json!({"text": "é".repeat(100), "then": "🦀".repeat(100)});
        let c = call("write", args.clone());
        assert!(c.shown.chars().count() > SHOWN && c.shown.len() <= 4 * (SHOWN + 2));
        assert!(args.to_string().starts_with(&c.shown));
    }
}
