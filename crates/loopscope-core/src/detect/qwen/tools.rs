//! The service's tool checks: a call's key and streaks (repeats, shell
//! stagnation, read loops, the turn cap, global duplicates, alternation),
//! and what a result changes in them.

use super::*;

impl Service {
    pub(super) fn tool_call(
        &mut self,
        index: usize,
        name: &str,
        args: &Value,
        id: Option<&str>,
        out: &mut Vec<Detection>,
    ) -> bool {
        let name = if name.is_empty() { "undefined_tool_name" } else { name };
        let falsy = match args {
            Value::Null | Value::Bool(false) => true,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            _ => false,
        };
        let args = if falsy {
            Value::Object(serde_json::Map::new())
        } else {
            args.clone()
        };
        let c = resolve(name, &args);
        // Always-on tier.
        let stateful = c.name == STATEFUL;
        if stateful && id.is_some_and(|i| !i.is_empty()) {
            self.pending.push_back((id.unwrap_or_default().to_string(), c.clone()));
            if self.pending.len() > 500 {
                self.pending.pop_front();
            }
        }
        if !stateful {
            let n = self.cap_counts.entry(c.key.clone()).or_default();
            *n += 1;
            self.cap_max = self.cap_max.max(*n);
        }
        // qwen-tool-repeat
        if self.last_key.as_deref() == Some(c.key.as_str()) {
            self.count += 1;
        } else {
            for k in self.last_key.iter().chain(std::iter::once(&c.key)) {
                if let Some(s) = self.polled.get_mut(k) {
                    s.observed = 0;
                    s.unchanged = 0;
                }
            }
            self.last_key = Some(c.key.clone());
            self.count = 1;
            self.repeat_calls.clear();
        }
        self.repeat_calls.push(index);
        if self.count >= 5 {
            let x = self.count - 1;
            let productive = stateful
                && self
                    .polled
                    .get(&c.key)
                    .is_some_and(|s| s.observed >= x && s.unchanged + 1 < x);
            if productive {
                self.count = 1;
                self.repeat_calls = vec![index];
                if let Some(s) = self.polled.get_mut(&c.key) {
                    s.observed = 0;
                    s.unchanged = 0;
                }
            } else {
                let calls = self.repeat_calls.clone();
                let reason = format!("{} identical calls in a row of {}", calls.len(), quote(&c.key, 80));
                let d = Service::tool_detection("qwen-tool-repeat", index, calls, reason);
                self.fire("qwen-tool-repeat", d, out);
                return true;
            }
        }
        // qwen-shell-stagnation
        let inspects = c.name == "run_shell_command"
            && args
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(shell::inspection);
        if inspects {
            self.shell_streak.push(index);
            if self.shell_streak.len() >= 8 {
                let calls = self.shell_streak.clone();
                let reason = format!("{} shell calls in a row only inspect the repository", calls.len());
                let d = Service::tool_detection("qwen-shell-stagnation", index, calls, reason);
                self.fire("qwen-shell-stagnation", d, out);
                return true;
            }
        } else {
            self.shell_streak.clear();
        }
        // qwen-turn-cap
        self.total += 1;
        if self.cap > 0 && self.total > self.cap && (self.explicit || self.total > 10 * self.cap || self.cap_max >= 6) {
            let why = if self.explicit {
                "explicit cap".to_string()
            } else if self.total > 10 * self.cap {
                format!("more than 10 x {}", self.cap)
            } else {
                format!("one call repeated {} times (adaptive)", self.cap_max)
            };
            let reason = format!("call {} > cap {} and {why}", self.total, self.cap);
            let mut d = Service::tool_detection("qwen-turn-cap", index, vec![index], reason);
            d.repeats = Some(self.total);
            d.threshold = Some(self.cap);
            self.fire("qwen-turn-cap", d, out);
            return true;
        }
        if !self.heuristics {
            return false;
        }
        // Heuristic tier.
        self.reset_content();
        self.thoughts.clear();
        let read = read_like(&c.name);
        self.recent.push_back((read, index));
        if self.recent.len() > 15 {
            self.recent.pop_front();
        }
        if !read {
            self.seen_non_read = true;
        }
        if c.name == self.last_name {
            self.same_name.push(index);
        } else {
            self.last_name = c.name.clone();
            self.same_name = vec![index];
        }
        let mut any = false;
        if !stateful {
            let g = self.global.entry(c.key.clone()).or_default();
            g.push(index);
            if g.len() >= 6 {
                let calls = g.clone();
                let reason = format!("{} seen {} times since the prompt", quote(&c.key, 80), calls.len());
                let d = Service::tool_detection("qwen-global-dup", index, calls, reason);
                self.fire("qwen-global-dup", d, out);
                any = true;
            }
        }
        self.alt.push_back((c.key.clone(), index));
        if self.alt.len() > 6 {
            self.alt.pop_front();
        }
        if self.alt.len() == 6 {
            let (a, b) = (&self.alt[0].0, &self.alt[1].0);
            if a != b
                && self
                    .alt
                    .iter()
                    .enumerate()
                    .all(|(i, (k, _))| k == if i % 2 == 0 { a } else { b })
            {
                let calls: Vec<usize> = self.alt.iter().map(|x| x.1).collect();
                let reason = "the last 6 calls alternate between two".to_string();
                let d = Service::tool_detection("qwen-alternation", index, calls, reason);
                self.fire("qwen-alternation", d, out);
                any = true;
            }
        }
        let reads = self.recent.iter().filter(|r| r.0).count();
        if self.seen_non_read && self.recent.len() >= 8 && reads >= 8 {
            let calls: Vec<usize> = self.recent.iter().filter(|r| r.0).map(|r| r.1).collect();
            let reason = format!("{reads} of the last {} calls only read", self.recent.len());
            let d = Service::tool_detection("qwen-read-loop", index, calls, reason);
            self.fire("qwen-read-loop", d, out);
            any = true;
        }
        if self.same_name.len() >= 8 {
            let calls = self.same_name.clone();
            let reason = format!("{} calls of {} in a row", calls.len(), quote(&c.name, 40));
            let d = Service::tool_detection("qwen-stagnation", index, calls, reason);
            self.fire("qwen-stagnation", d, out);
            any = true;
        }
        any
    }

    pub(super) fn tool_result(
        &mut self,
        index: usize,
        id: &str,
        ok: bool,
        output: &Option<Value>,
        out: &mut Vec<Detection>,
    ) -> bool {
        let Some(at) = self.pending.iter().position(|(pid, _)| pid == id) else {
            return false;
        };
        let Some((_, c)) = self.pending.remove(at) else {
            return false;
        };
        let text = match output {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => keys::json(v, KeyStyle::Js),
        };
        let fp = (!ok, strip(&text));
        let s = self.polled.entry(c.key.clone()).or_default();
        let first = s.last.is_none();
        let changed = !first && s.last.as_ref() != Some(&fp);
        if self.last_key.as_deref() == Some(c.key.as_str()) {
            s.observed += 1;
            if first {
                s.last = Some(fp.clone());
            } else if !changed {
                s.unchanged += 1;
            } else {
                s.unchanged = 0;
                s.last = Some(fp.clone());
            }
        } else {
            s.last = Some(fp.clone());
        }
        if changed && self.last_name == c.name {
            self.same_name = vec![index];
        }
        let run = self
            .result_runs
            .entry(c.key.clone())
            .or_insert((fp.clone(), 0, Vec::new()));
        if run.0 == fp {
            run.1 += 1;
        } else {
            *run = (fp, 1, Vec::new());
        }
        run.2.push(index);
        let (n, events) = (run.1, run.2.clone());
        self.cap_max = self.cap_max.max(n);
        if self.heuristics && n >= 6 {
            let reason = format!("{} returned the same result {n} times", quote(&c.key, 80));
            let d = Service::tool_detection("qwen-global-dup", index, events, reason);
            self.fire("qwen-global-dup", d, out);
            return true;
        }
        false
    }
}
