//! One exchange of a conversation as it is recorded: its request and
//! streamed answer written to the session file, the guard's verdicts,
//! and what a stop leaves behind.

use super::*;

impl Exchange<'_> {
    pub(super) fn conv(&self) -> MutexGuard<'_, Conversation> {
        lock(&self.conv)
    }

    /// The session file's name as printed.
    pub fn shown(&self) -> String {
        self.conv().shown.clone()
    }

    /// The request's new turns: tool results, what the agent wrapped
    /// around a user's words (notes), and the words. When the conversation
    /// waits for a task (it is new, or its last answer called no tool), the
    /// last new user words are the prompt and any before them (context an
    /// agent sends first) are notes; otherwise all are notes. A detection
    /// on them ends the response to this request (and to its retries).
    pub(super) fn write_turns(&mut self, req: &Request, start: usize) {
        let new = req.turns.get(start..).unwrap_or_default();
        let said = |t: &&Turn| t.role == Role::User && !t.text.trim().is_empty();
        let mut fired = Vec::new();
        {
            let mut conv = self.conv();
            if new.is_empty() {
                // Asked again: what ended the responses to it ends this one too.
                return;
            }
            if let Some(guard) = conv.guard.as_mut() {
                guard.set_pending(None);
            }
            let prompt_at = match conv.awaiting_prompt {
                true => new.iter().rposition(|t| said(&t)),
                false => None,
            };
            for (i, turn) in new.iter().enumerate() {
                if !matches!(turn.role, Role::User | Role::Tool) {
                    continue;
                }
                for r in &turn.results {
                    let mut result = Event::new(EventKind::ToolResult {
                        id: r.id.clone(),
                        ok: r.ok,
                        output: Some(r.output.clone()).filter(|o| !o.is_null()),
                    });
                    if let Some(stable) = &r.stable {
                        result.extra.insert(STABLE_OUTPUT.into(), stable.clone());
                    }
                    fired.extend(conv.write(result, None));
                }
                for context in &turn.wrapped {
                    fired.extend(conv.write(Event::note(context), None));
                }
                if !said(&turn) {
                    continue;
                }
                let event = if prompt_at == Some(i) {
                    conv.awaiting_prompt = false;
                    Event::new(EventKind::Prompt {
                        text: Some(turn.text.clone()),
                    })
                } else {
                    Event::note(&turn.text)
                };
                fired.extend(conv.write(event, None));
            }
            if let (Some(guard), Some(first)) = (conv.guard.as_mut(), fired.first()) {
                guard.set_pending(Some(first.clone()));
            }
        }
        self.recorder.detections.fetch_add(fired.len(), Ordering::Relaxed);
        if let Some(guard) = &self.recorder.guard {
            let shown = self.shown();
            for d in &fired {
                let stop = Stop::new(d.clone(), Found::Request, None);
                guard.announce(&shown, d, Some(&stop));
            }
        }
    }

    /// Writes decoded items (problems are the upstream's business, and
    /// pass to the client untouched); returns the guard's detections.
    pub fn items(&mut self, items: &mut Vec<Item>, at: Instant) -> Vec<Detection> {
        let mut found = Vec::new();
        let mut conv = lock(&self.conv);
        for item in items.drain(..) {
            let Item::Event(event, _) = item else { continue };
            match &event.kind {
                EventKind::ToolCall { .. } => self.tool_called = true,
                EventKind::Request { id: Some(id) } => self.response_id = Some(id.clone()),
                _ => {}
            }
            self.answer_events += 1;
            found.extend(conv.write(event, Some(at)));
        }
        self.recorder.detections.fetch_add(found.len(), Ordering::Relaxed);
        found
    }

    /// Writes a note (an API error, the guard's stop, a client gone).
    pub fn note(&mut self, text: &str, kind: Option<&str>, extra: &[(&str, Value)]) -> Vec<Detection> {
        let mut event = Event::note(text);
        if let Some(k) = kind {
            event.extra.insert("kind".into(), json!(k));
        }
        for (k, v) in extra {
            event.extra.insert((*k).to_string(), v.clone());
        }
        let found = self.conv().write(event, None);
        self.recorder.detections.fetch_add(found.len(), Ordering::Relaxed);
        found
    }
}

impl Exchange<'_> {
    /// A guarded response begins: a response the guard ends is taken back
    /// from the detectors from here.
    pub fn response_begins(&mut self) {
        if let Some(guard) = self.conv().guard.as_mut() {
            guard.response_begins();
        }
    }

    /// Whether the agent may get `held` (a complete tool call's payloads,
    /// decoded); `Some`: why not.
    pub fn judge(&self, held: &[Event]) -> Option<Stop> {
        self.conv().guard.as_ref()?.judge(held)
    }

    /// A detection on the results this request brought back, which ends
    /// its response before the model's first word.
    pub fn pending_stop(&self) -> Option<Stop> {
        let conv = self.conv();
        let d = conv.guard.as_ref()?.pending()?;
        Some(Stop::new(d.clone(), Found::Request, None))
    }

    /// The guard ended this response for `stop`: the session gets a note
    /// of kind `guard` holding what the agent was told, the detectors
    /// forget the response (see `ConversationGuard`), stderr and the hook
    /// are told, and the conversation is free for its next request.
    pub fn stopped(&mut self, stop: &Stop) {
        let d = &stop.detection;
        let mut extra = vec![("detector", json!(d.detector)), ("reason", json!(d.reason))];
        if matches!(stop.found, Found::Stream | Found::Request) {
            extra.push(("detection_event", json!(d.event)));
        }
        if let Some(call) = &stop.withheld {
            extra.push(("withheld_call", json!({"name": call.name, "args": call.args})));
        }
        self.note(&stop.message(), Some("guard"), &extra);
        {
            let mut conv = self.conv();
            if let Some(guard) = conv.guard.as_mut() {
                guard.take_back_response();
            }
            if let Some(call) = &stop.withheld {
                // Found on a call no file holds: counted here, and in telemetry.
                self.recorder.detections.fetch_add(1, Ordering::Relaxed);
                if let Some(link) = conv.link.as_mut() {
                    let profile = link.info.profile.clone();
                    link.detection(d, &Event::tool_call(&call.name, call.args.clone()), &profile);
                }
            }
        }
        self.release();
        // Found on the request's results: said when they came.
        if let (Some(guard), false) = (&self.recorder.guard, stop.found == Found::Request) {
            guard.announce(&self.shown(), d, Some(stop));
        }
    }

    /// The answer is recorded: the conversation is free for its next request.
    pub fn release(&mut self) {
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        lock(&self.conv).awaiting_prompt = !self.tool_called;
        let mut entries = lock(&self.recorder.entries);
        if let Some(e) = entries.iter_mut().find(|e| Arc::ptr_eq(&e.conv, &self.conv)) {
            e.busy = false;
            e.last_used = Instant::now();
            if self.response_id.is_some() {
                e.last_response = self.response_id.take();
            }
        }
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        self.release();
    }
}
