//! Which request asks again what the last one asked: agents retry a
//! request as it was, or with words added to their last message, and the
//! retry goes on in the same conversation.

use super::super::protocol::{Request, Role, Turn};

/// A request as a retry would repeat it: its turns but the last (hashed),
/// and the last one's words. Agents ask again as they asked, or with words
/// added to their last message (Claude Code: "[Your previous response had
/// no visible output…]"; gemini-cli: "[System: You previously generated
/// thoughts but failed to provide a final user-facing response…]"); such a
/// retry goes on in the same conversation.
#[derive(Default)]
pub(super) struct LastAsk {
    turns: usize,
    before_last: u64,
    last_role: Option<Role>,
    last_words: String,
}

fn turns_hash(turns: &[Turn]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for t in turns {
        (t.role, &t.text, &t.wrapped).hash(&mut h);
        for r in &t.results {
            (&r.id, r.ok, r.output.to_string()).hash(&mut h);
        }
    }
    h.finish()
}

impl LastAsk {
    pub(super) fn of(req: &Request) -> LastAsk {
        let n = req.turns.len();
        LastAsk {
            turns: n,
            before_last: turns_hash(&req.turns[..n.saturating_sub(1)]),
            last_role: req.turns.last().map(|t| t.role),
            last_words: req.turns.last().map(|t| t.text.clone()).unwrap_or_default(),
        }
    }

    /// The words `again` adds to the last message when it asks this again.
    pub(super) fn added_by(&self, again: &LastAsk) -> Option<String> {
        let asks_again = again.turns == self.turns
            && again.last_role == Some(Role::User)
            && !self.last_words.is_empty()
            && again.last_words.len() > self.last_words.len()
            && again.last_words.starts_with(&self.last_words)
            && again.before_last == self.before_last;
        asks_again.then(|| again.last_words[self.last_words.len()..].trim().to_string())
    }
}
