//! A call's arguments as the SDK's `_event_eq` compares them (the validated
//! action, a dict: key order does not matter, numbers compare by value),
//! straight on the parsed JSON: equal exactly when their canonical keys
//! (`keys::call_key` with `KeyStyle::Canonical`, which this profile used to
//! write for every call) are equal, without writing them. A call without
//! arguments (`null`) compares as `{}`.

use serde_json::{Map, Value};

use super::window::{combine, fold, same_text};

/// Whether the canonical JSON of `a` and `b` is the same text.
pub(super) fn same_args(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Object(m)) | (Value::Object(m), Value::Null) => m.is_empty(),
        _ => same(a, b),
    }
}

/// A hash of the canonical JSON of `args`: arguments [`same_args`] hash alike.
pub(super) fn hash_args(args: &Value) -> u64 {
    match args {
        Value::Null => object_hash(std::iter::empty(), 0),
        _ => hash(args),
    }
}

/// Two values whose canonical JSON is one text: the same type and
/// - numbers of one `f64` value (the key writes `as_f64` as JavaScript
///   does, the shortest digits that read back as it: one text per value,
///   `-0` and `0` both "0");
/// - strings of the same chars (escaping is one-to-one);
/// - arrays item by item; objects with the same keys (the key writes them
///   sorted, and a map's keys are unique) and the same value at each.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64().unwrap_or(0.0) == y.as_f64().unwrap_or(0.0),
        (Value::String(x), Value::String(y)) => same_text(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && same_objects(x, y),
        _ => false,
    }
}

/// Maps of one length with the same keys and equal values at each.
fn same_objects(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    // Calls of one tool mostly write their keys in one order: pair by
    // pair, and by lookup from the first key out of step (the keys before
    // it are the same in both, so the rest of x's must be in the rest of y).
    for (at, ((k1, v1), (k2, v2))) in x.iter().zip(y).enumerate() {
        if !same_text(k1, k2) {
            // A few keys: a look along them costs less than hashing one.
            let find = |k: &String| match y.len() {
                0..=8 => y.iter().skip(at).find(|(k2, _)| same_text(k2, k)).map(|(_, v)| v),
                _ => y.get(k),
            };
            return x.iter().skip(at).all(|(k, v)| find(k).is_some_and(|w| same(v, w)));
        }
        if !same(v1, v2) {
            return false;
        }
    }
    true
}

fn hash(v: &Value) -> u64 {
    match v {
        Value::Null => 0x6e75_6c6c,
        Value::Bool(b) => combine([0x626f_6f6c, u64::from(*b)]),
        // `+ 0.0` makes -0 the 0 it is written as.
        Value::Number(n) => combine([0x6e75_6d62, (n.as_f64().unwrap_or(0.0) + 0.0).to_bits()]),
        Value::String(s) => fold(0x7374_7269, s.as_bytes()),
        Value::Array(items) => combine([
            items.iter().fold(0x6172_7261, |h, item| combine([h, hash(item)])),
            items.len() as u64,
        ]),
        Value::Object(map) => object_hash(map.iter(), map.len()),
    }
}

/// Order does not count: the entries' hashes are summed.
fn object_hash<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>, len: usize) -> u64 {
    let sum = entries.fold(0u64, |h, (k, v)| {
        h.wrapping_add(combine([fold(0x6b65_7973, k.as_bytes()), hash(v)]))
    });
    combine([combine([0x6f62_6a65, sum]), len as u64])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::keys::{call_key, KeyStyle};

    /// The key the profile wrote before: a call without arguments as `{}`.
    fn key(v: &Value) -> String {
        match v {
            Value::Null => "t:{}".to_string(),
            _ => call_key("t", v, KeyStyle::Canonical),
        }
    }

    /// Small values over few keys and numbers, so equal pairs are common.
    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(Value::from),
            prop_oneof![
                Just(1.0f64),
                Just(-0.0),
                Just(0.0),
                Just(1.5),
                Just(1e21),
                Just(9007199254740993.0)
            ]
            .prop_map(Value::from),
            Just(Value::from(9007199254740993u64)),
            "[ab\"é😀]{0,2}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::vec(("[abc]", inner), 0..4)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Equal exactly when the canonical keys are; equal ones hash alike.
        #[test]
        fn same_args_is_equal_canonical_keys(a in value(), b in value()) {
            let equal = key(&a) == key(&b);
            proptest::prop_assert_eq!(same_args(&a, &b), equal);
            proptest::prop_assert_eq!(same_args(&a, &a), true);
            if equal {
                proptest::prop_assert_eq!(hash_args(&a), hash_args(&b));
            }
        }
    }

    proptest::proptest! {
        /// The word-wise comparison is `==`, at every length.
        #[test]
        fn same_text_is_equality(a in "[ab]{0,20}", b in "[ab]{0,20}", c in "\\PC{0,24}") {
            proptest::prop_assert_eq!(same_text(&a, &b), a == b);
            proptest::prop_assert!(same_text(&c, &c.clone()));
            let longer = format!("{c}x");
            proptest::prop_assert!(!same_text(&c, &longer));
        }
    }

    #[test]
    fn key_order_and_number_spelling_do_not_count() {
        let a: Value = serde_json::from_str(r#"{"path":"a.py","limit":50,"x":{"b":1.0,"a":[1,2]}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"x":{"a":[1.0,2],"b":1},"limit":5e1,"path":"a.py"}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"x":{"a":[2,1],"b":1},"limit":50,"path":"a.py"}"#).unwrap();
        assert!(same_args(&a, &b) && hash_args(&a) == hash_args(&b));
        assert!(!same_args(&a, &c));
        assert!(same_args(&Value::Null, &serde_json::json!({})));
        assert!(!same_args(&Value::Null, &serde_json::json!([])));
        assert_eq!(hash_args(&Value::Null), hash_args(&serde_json::json!({})));
    }
}
