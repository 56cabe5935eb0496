//! An event's extra fields: what its line held beyond what its kind models.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// The fields of an event its kind does not model (meta keys, unknown
/// fields), in file order: a JSON object, used as one through `Deref`.
/// It is boxed and made only when the event has any. Most events have
/// none, and an inline map (serde_json keeps keys in order: an `IndexMap`
/// with its hasher state, 72 bytes) made every event a third larger and
/// seeded a hasher for each.
#[derive(Clone, Default)]
pub struct Extra(Option<Box<Map<String, Value>>>);

/// What an event without extra fields reads as.
static NO_FIELDS: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl Extra {
    /// The fields as a JSON object of their own.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        self.0.as_deref().unwrap_or(&NO_FIELDS)
    }
}

impl DerefMut for Extra {
    /// Makes the map on first use: writing a field is rare.
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(fields: Map<String, Value>) -> Extra {
        Extra((!fields.is_empty()).then(|| Box::new(fields)))
    }
}

impl IntoIterator for Extra {
    type Item = (String, Value);
    type IntoIter = serde_json::map::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.into_map().into_iter()
    }
}

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = serde_json::map::Iter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.deref().iter()
    }
}

/// Equal when the fields are: an emptied map equals none at all.
impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_made_on_first_write_and_read_like_a_map() {
        let mut extra = Extra::default();
        assert!(extra.0.is_none() && extra.is_empty() && extra.get("model").is_none());
        assert_eq!(extra, Extra::from(Map::new()));
        extra.insert("model".into(), json!("m"));
        extra.insert("kind".into(), json!("condensation"));
        assert_eq!(extra["model"], "m");
        let keys: Vec<&String> = (&extra).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["model", "kind"], "file order is kept");
        assert_ne!(extra, Extra::default());
        extra.clear();
        assert_eq!(extra, Extra::default(), "an emptied map equals none");
        assert_eq!(format!("{extra:?}"), format!("{:?}", Map::new()));
    }

    #[test]
    fn an_event_without_fields_is_small() {
        // The reason the map is boxed: every event of a stream is moved
        // from its line to the engines.
        assert_eq!(std::mem::size_of::<Extra>(), std::mem::size_of::<usize>());
    }
}
