//! Which kinds of event a detector looks at: the engine hands a detector
//! only those, so the many guards that count tool calls or requests cost
//! nothing per text delta (most of a stream).

use crate::event::EventKind;

/// A set of event kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kinds(u16);

impl Kinds {
    /// Every kind: a detector that says nothing sees every event.
    pub(crate) const ALL: Kinds = Kinds(u16::MAX);
    /// `prompt`.
    pub(crate) const PROMPT: Kinds = Kinds(1 << 0);
    /// `request`.
    pub(crate) const REQUEST: Kinds = Kinds(1 << 1);
    /// Reasoning deltas.
    pub(crate) const REASONING: Kinds = Kinds(1 << 2);
    /// Content deltas.
    pub(crate) const CONTENT: Kinds = Kinds(1 << 3);
    /// Tool calls.
    pub(crate) const TOOL_CALL: Kinds = Kinds(1 << 4);
    /// Tool results.
    pub(crate) const TOOL_RESULT: Kinds = Kinds(1 << 5);
    /// Requests, tool calls and tool results: the turns and steps a tool
    /// guard counts.
    pub(crate) const TOOL_TURNS: Kinds = Kinds::REQUEST.and(Kinds::TOOL_CALL).and(Kinds::TOOL_RESULT);
    /// Recorded judge verdicts (`loop_check`).
    pub(crate) const LOOP_CHECK: Kinds = Kinds(1 << 6);
    /// Notes, meta lines and anything else.
    const OTHER: Kinds = Kinds(1 << 7);

    /// The kind of `kind`, as a set of one.
    pub(crate) fn of(kind: &EventKind) -> Kinds {
        match kind {
            EventKind::Prompt { .. } => Kinds::PROMPT,
            EventKind::Request { .. } => Kinds::REQUEST,
            EventKind::Reasoning { .. } => Kinds::REASONING,
            EventKind::Content { .. } => Kinds::CONTENT,
            EventKind::ToolCall { .. } => Kinds::TOOL_CALL,
            EventKind::ToolResult { .. } => Kinds::TOOL_RESULT,
            EventKind::LoopCheck { .. } => Kinds::LOOP_CHECK,
            _ => Kinds::OTHER,
        }
    }

    /// Both sets.
    pub(crate) const fn and(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// Whether the sets share a kind.
    pub(crate) fn meets(self, other: Kinds) -> bool {
        self.0 & other.0 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Event;

    #[test]
    fn every_kind_is_in_all_and_each_modelled_kind_is_its_own() {
        let events = [
            Event::prompt("p"),
            Event::request(),
            Event::reasoning("r"),
            Event::content("c"),
            Event::tool_call("t", serde_json::json!({})),
            Event::tool_result(true),
            Event::note("n"),
        ];
        let sets: Vec<Kinds> = events.iter().map(|e| Kinds::of(&e.kind)).collect();
        for (i, a) in sets.iter().enumerate() {
            assert!(Kinds::ALL.meets(*a));
            for (j, b) in sets.iter().enumerate() {
                assert_eq!(a.meets(*b), i == j, "{i} {j}");
            }
        }
        assert!(Kinds::TOOL_CALL.and(Kinds::REQUEST).meets(Kinds::REQUEST));
    }
}
