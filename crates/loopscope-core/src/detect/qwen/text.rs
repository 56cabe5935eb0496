//! The service's text checks: content and thoughts (the chant history,
//! repeated thoughts), and the JavaScript string operations they mirror.

use super::*;

impl Service {
    pub(super) fn content(&mut self, obs: &Observation<'_>, text: &str, out: &mut Vec<Detection>) -> bool {
        if !self.heuristics {
            return false;
        }
        let classes = Classifier::get(false).classify(text);
        if classes.fences > 0 || classes.structural || classes.divider {
            self.reset_content();
        }
        let was = self.in_code_block;
        if classes.fences % 2 == 1 {
            self.in_code_block = !self.in_code_block;
        }
        if was || self.in_code_block || classes.divider {
            return false;
        }
        self.analyse(obs, Channel::Content, text, out)
    }

    pub(super) fn analyse(
        &mut self,
        obs: &Observation<'_>,
        channel: Channel,
        text: &str,
        out: &mut Vec<Detection>,
    ) -> bool {
        let Some(c) = self.history.append(text) else {
            return false;
        };
        let at = obs.buffers.channel(channel).map(|b| b.len());
        let mut d = Detection::new("qwen-chant", obs.index, channel, at);
        d.repeats = Some(c.positions.len());
        d.repeated = Some(c.chunk.clone());
        let rule = match c.rule {
            chant::Rule::Clustered { avg_distance } => {
                d.avg_distance = Some(avg_distance);
                format!("the last 10 are {avg_distance:.1} units apart on average (max 75)")
            }
            chant::Rule::Periodic { stride, region } => {
                d.period = Some(stride);
                format!(
                    "equally spaced every {stride} units over a verified region of {} units ({}..{})",
                    region.1 - region.0,
                    region.0,
                    region.1
                )
            }
        };
        d.reason = format!(
            "the 50-unit chunk {} occurs {} times in the recent content and reasoning; {rule}",
            quote(&c.chunk, 50),
            c.positions.len()
        );
        self.fire("qwen-chant", d, out);
        true
    }

    pub(super) fn thought(&mut self, obs: &Observation<'_>, text: &str, out: &mut Vec<Detection>) -> bool {
        if !self.heuristics {
            return false;
        }
        let parsed;
        let (subject, description): (&str, &str) = if self.parsed_thoughts {
            parsed = parse_thought(text);
            (&parsed.0, &parsed.1)
        } else {
            ("", text)
        };
        // The oldest signature's buffer is reused once fifty are kept.
        let mut sig = if self.thoughts.len() >= 50 {
            self.thoughts.pop_front().map(|t| t.0).unwrap_or_default()
        } else {
            Vec::new()
        };
        sig.clear();
        lower_utf16(js_trim(subject), usize::MAX, &mut sig);
        sig.push(u16::from(b'|'));
        lower_utf16(js_trim(description), 200, &mut sig);
        self.thoughts.push_back((sig, obs.index));
        let n = self.thoughts.len();
        if n >= 3
            && self.thoughts[n - 1].0 == self.thoughts[n - 2].0
            && self.thoughts[n - 2].0 == self.thoughts[n - 3].0
        {
            let events: Vec<usize> = self.thoughts.iter().skip(n - 3).map(|t| t.1).collect();
            let mut d = Detection::new(
                "qwen-thoughts",
                obs.index,
                Channel::Reasoning,
                Some(obs.buffers.reasoning.len()),
            );
            d.repeats = Some(3);
            d.events = events;
            d.repeated = Some(String::from_utf16_lossy(&self.thoughts[n - 1].0));
            d.reason = format!(
                "3 thoughts in a row with the signature {}",
                quote(&String::from_utf16_lossy(&self.thoughts[n - 1].0), 60)
            );
            self.fire("qwen-thoughts", d, out);
            return true;
        }
        let joined;
        let text = match (subject.is_empty(), description.is_empty()) {
            (true, true) => return false,
            (true, false) => description,
            (false, true) => subject,
            (false, false) => {
                joined = format!("{subject} {description}");
                joined.as_str()
            }
        };
        self.analyse(obs, Channel::Reasoning, text, out)
    }
}

/// `text.toLowerCase()` as UTF-16, at most `max` units of it, appended to
/// `out` (ASCII, most reasoning, without building a lowercase copy).
pub(super) fn lower_utf16(text: &str, max: usize, out: &mut Vec<u16>) {
    if text.is_ascii() {
        out.extend(text.bytes().take(max).map(|b| u16::from(b.to_ascii_lowercase())));
    } else {
        out.extend(text.to_lowercase().encode_utf16().take(max));
    }
}

/// `parseThought`: the first `**subject**`, and the rest as the description.
pub(super) fn parse_thought(t: &str) -> (String, String) {
    let Some(s) = t.find("**") else {
        return (String::new(), t.to_string());
    };
    let Some(e) = t[s + 2..].find("**").map(|e| s + 2 + e) else {
        return (String::new(), t.to_string());
    };
    let subject = js_trim(&t[s + 2..e]).to_string();
    let description = format!("{}{}", &t[..s], &t[e + 2..]);
    (subject, js_trim(&description).to_string())
}
