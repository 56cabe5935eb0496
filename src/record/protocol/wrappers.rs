//! What a user wrote, apart from the context agents send in the same
//! message, each piece wrapped in a tag of the agent's own: Claude Code's
//! `<system-reminder>` blocks before the prompt, gemini-cli's
//! `<session_context>`, Codex's `<environment_context>` and
//! `<user_instructions>`. The prompt is what is left; the rest are notes.

/// A tag name agents wrap context in: lower-case words joined by `-` or
/// `_` (`system-reminder`, `session_context`), which no HTML element a
/// person would type has.
fn agent_tag(name: &str) -> bool {
    name.contains(['-', '_'])
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The element `<name …>…</name>` that `text` starts with (leading space
/// skipped): its length, if `name` is an agent's tag.
fn leading_element(text: &str) -> Option<usize> {
    let rest = text.strip_prefix('<')?;
    let name_end = rest.find(|c: char| c == '>' || c.is_whitespace())?;
    let name = &rest[..name_end];
    if !agent_tag(name) {
        return None;
    }
    let close = format!("</{name}>");
    let end = text.find(&close)?;
    Some(end + close.len())
}

/// The element `<name …>…</name>` that `text` ends with: where it starts.
fn trailing_element(text: &str) -> Option<usize> {
    let body = text.strip_suffix('>')?;
    let open = body.rfind("</")?;
    let name = &body[open + 2..];
    if !agent_tag(name) {
        return None;
    }
    let start = text[..open]
        .match_indices(&format!("<{name}"))
        .map(|(i, _)| i)
        .filter(|&i| text[i + 1 + name.len()..].starts_with(|c: char| c == '>' || c.is_whitespace()))
        .last()?;
    Some(start)
}

/// One text part as (what the user wrote, the wrapped pieces around it).
fn split_part(part: &str) -> (&str, Vec<&str>) {
    let mut wrapped = Vec::new();
    let mut rest = part.trim();
    while let Some(len) = leading_element(rest) {
        wrapped.push(&rest[..len]);
        rest = rest[len..].trim_start();
    }
    let mut after = Vec::new();
    while let Some(start) = trailing_element(rest) {
        after.push(&rest[start..]);
        rest = rest[..start].trim_end();
    }
    wrapped.extend(after.into_iter().rev());
    (rest, wrapped)
}

/// A user message's text parts as what the user wrote (the rest, joined
/// by a line break as the parts are) and the pieces agents wrapped.
pub fn split(parts: &[&str]) -> (String, Vec<String>) {
    let mut own = Vec::new();
    let mut wrapped = Vec::new();
    for part in parts {
        let (words, pieces) = split_part(part);
        if pieces.is_empty() {
            // Untouched: the user's own spacing stays as it was.
            own.push(*part);
            continue;
        }
        wrapped.extend(pieces.into_iter().map(str::to_string));
        if !words.is_empty() {
            own.push(words);
        }
    }
    (own.join("\n"), wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_reminders_are_wrapped_and_the_prompt_is_what_is_left() {
        let parts = [
            "<system-reminder>\nAvailable agent types for the Agent tool:\n- claude: …\n</system-reminder>",
            "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-11-28.\n</system-reminder>\n",
            "What does notes.txt say? Read it and answer. 请用中文 🙏",
        ];
        let (own, wrapped) = split(&parts);
        assert_eq!(own, "What does notes.txt say? Read it and answer. 请用中文 🙏");
        assert_eq!(wrapped.len(), 2);
        assert!(wrapped[1].ends_with("</system-reminder>"));
    }

    #[test]
    fn pieces_before_and_after_the_words_in_one_part_and_tags_with_attributes() {
        let (own, wrapped) = split(&[
            "<session_context>\nThis is the Gemini CLI.\n</session_context>\n\nfix <b>the</b> test\n<system-reminder kind=\"todo\">use the todo list</system-reminder>",
        ]);
        assert_eq!(own, "fix <b>the</b> test");
        assert_eq!(
            wrapped,
            [
                "<session_context>\nThis is the Gemini CLI.\n</session_context>",
                "<system-reminder kind=\"todo\">use the todo list</system-reminder>"
            ]
        );
    }

    #[test]
    fn what_a_person_types_stays_whole() {
        for text in [
            "<div>hello</div>",
            "<b>bold</b> please",
            "  indented\nlines  ",
            "<system-reminder> never closed",
            "compare a < b and c > d",
        ] {
            assert_eq!(split(&[text]), (text.to_string(), Vec::new()), "{text}");
        }
        // A message of wrapped context only has no words of the user's.
        let (own, wrapped) = split(&["<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"]);
        assert_eq!((own.as_str(), wrapped.len()), ("", 1));
    }
}
