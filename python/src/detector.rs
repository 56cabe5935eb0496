//! `loopscope.Detector`: one setup's detectors over one stream, pushed
//! event by event from a generation loop.

use std::sync::{Mutex, MutexGuard};

use loopscope_core::{Event, EventKind, Monitor, Profile};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::{Map, Value};

use crate::convert::{format_of, guarded, setup_of, to_json, Recipe, DETACH_BYTES};
use crate::detection::{detections_list, state_dict};

/// One profile's loop detectors over one stream, fed as it arrives.
///
/// `params` overrides parameters ({"text-loop.copies": 4}); `detectors`
/// keeps only these detector ids. Each push_* returns the list of
/// detections that event caused (usually empty); `detections` keeps them
/// all. Thread-safe; pushes of more than a few KB release the GIL.
///
/// The profile defaults to `extended`; the CLI's `loopscope scan`
/// defaults to `seed`. A Detector pickles as its setup: the copy starts
/// fresh, with no events and no detections.
#[pyclass(module = "loopscope")]
pub(crate) struct Detector {
    monitor: Mutex<Monitor>,
    profile: Profile,
    /// The constructor's arguments, for pickling.
    recipe: Recipe,
}

impl Detector {
    fn lock(&self) -> PyResult<MutexGuard<'_, Monitor>> {
        self.monitor
            .lock()
            .map_err(|_| PyRuntimeError::new_err("this Detector failed in another thread; make a new one"))
    }

    /// Pushes one event, with the GIL released when it carries a lot of text.
    fn push_event(&self, py: Python<'_>, event: Event, size: usize) -> PyResult<Py<PyList>> {
        let run = |m: &mut Monitor| guarded(|| m.push(&event).to_vec());
        let found = if size > DETACH_BYTES {
            py.detach(|| self.lock().and_then(|mut m| run(&mut m)))?
        } else {
            run(&mut *self.lock()?)?
        };
        detections_list(py, &found)
    }
}

#[pymethods]
impl Detector {
    #[new]
    #[pyo3(signature = (profile = "extended", params = None, detectors = None))]
    fn new(profile: &str, params: Option<&Bound<'_, PyDict>>, detectors: Option<Vec<String>>) -> PyResult<Detector> {
        let recipe = Recipe::new(profile, params, detectors.clone());
        let setup = setup_of(profile, params, detectors)?;
        Ok(Detector {
            profile: setup.profile,
            monitor: Mutex::new(Monitor::new(&setup)),
            recipe,
        })
    }

    /// Pickles as its setup (profile, params, detectors): the copy starts
    /// fresh, with no events and no detections, so a dataset's cache key
    /// (`datasets.map`) does not change as the original is fed.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.borrow().recipe.reduce(slf.py(), slf.get_type().into_any())
    }

    /// The profile's name.
    #[getter]
    fn profile(&self) -> &'static str {
        self.profile.name()
    }

    /// Every detection so far, in stream order.
    #[getter]
    fn detections(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let found = self.lock()?.detections().to_vec();
        detections_list(py, &found)
    }

    /// Events pushed so far (the index the next event gets).
    #[getter]
    fn events(&self) -> PyResult<usize> {
        Ok(self.lock()?.events())
    }

    /// Bad lines met by `feed`, as (line, reason) pairs.
    #[getter]
    fn problems(&self) -> PyResult<Vec<(u64, String)>> {
        Ok(self
            .lock()?
            .problems()
            .iter()
            .map(|p| (p.line, p.reason.clone()))
            .collect())
    }

    /// A new user prompt: resets every detector. Returns the detections it caused.
    #[pyo3(signature = (text = None))]
    fn push_prompt(&self, py: Python<'_>, text: Option<String>) -> PyResult<Py<PyList>> {
        let size = text.as_ref().map_or(0, String::len);
        self.push_event(py, Event::new(EventKind::Prompt { text }), size)
    }

    /// A new model request (a turn): clears the reasoning and content buffers.
    #[pyo3(signature = (id = None))]
    fn push_request(&self, py: Python<'_>, id: Option<String>) -> PyResult<Py<PyList>> {
        self.push_event(py, Event::new(EventKind::Request { id }), 0)
    }

    /// A delta of the model's reasoning text, with the token ids the server
    /// generated for it where it has them (profile vllm compares ids).
    /// Returns the detections it caused.
    #[pyo3(signature = (text, token_ids = None))]
    fn push_reasoning(&self, py: Python<'_>, text: String, token_ids: Option<Vec<u64>>) -> PyResult<Py<PyList>> {
        let size = text.len() + token_ids.as_ref().map_or(0, |t| t.len() * 8);
        self.push_event(py, with_token_ids(EventKind::Reasoning { text }, token_ids), size)
    }

    /// A delta of the model's answer text, with its token ids where the
    /// server sent them. Returns the detections it caused.
    #[pyo3(signature = (text, token_ids = None))]
    fn push_content(&self, py: Python<'_>, text: String, token_ids: Option<Vec<u64>>) -> PyResult<Py<PyList>> {
        let size = text.len() + token_ids.as_ref().map_or(0, |t| t.len() * 8);
        self.push_event(py, with_token_ids(EventKind::Content { text }, token_ids), size)
    }

    /// Tokens the model generated, as ids, with their text where the caller
    /// has it: profile vllm compares the ids (as vLLM does), the text
    /// detectors read the text (nothing without it). `reasoning`: the ids
    /// are reasoning's, else the answer's. Returns the detections it caused.
    #[pyo3(signature = (ids, text = None, reasoning = false))]
    fn push_tokens(
        &self,
        py: Python<'_>,
        ids: Vec<u64>,
        text: Option<String>,
        reasoning: bool,
    ) -> PyResult<Py<PyList>> {
        let text = text.unwrap_or_default();
        let size = text.len() + ids.len() * 8;
        let kind = if reasoning {
            EventKind::Reasoning { text }
        } else {
            EventKind::Content { text }
        };
        self.push_event(py, with_token_ids(kind, Some(ids)), size)
    }

    /// A tool call: its name, its arguments (a dict or any JSON value) and id.
    #[pyo3(signature = (name, args = None, id = None))]
    fn push_tool_call(
        &self,
        py: Python<'_>,
        name: String,
        args: Option<&Bound<'_, PyAny>>,
        id: Option<String>,
    ) -> PyResult<Py<PyList>> {
        let args = match args {
            None => Value::Object(Map::new()),
            Some(a) => to_json(a, 0)?,
        };
        let event = Event::new(EventKind::ToolCall { name, args, id });
        self.push_event(py, event, 0)
    }

    /// A tool's result: the id of its call, its output (str or JSON), and
    /// `ok=False` when it failed.
    #[pyo3(signature = (id, output = None, ok = true))]
    fn push_tool_result(
        &self,
        py: Python<'_>,
        id: Option<String>,
        output: Option<&Bound<'_, PyAny>>,
        ok: bool,
    ) -> PyResult<Py<PyList>> {
        let output = output.map(|o| to_json(o, 0)).transpose()?;
        let size = match &output {
            Some(Value::String(s)) => s.len(),
            _ => 0,
        };
        self.push_event(py, Event::new(EventKind::ToolResult { id, ok, output }), size)
    }

    /// An event as a native-format dict (`{"type": "reasoning", "text": "…"}`);
    /// a dict that is not an event raises ValueError.
    fn push(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<Py<PyList>> {
        let value = to_json(event, 0)?;
        let parsed =
            Event::from_json(value).map_err(|e| crate::convert::malformed(format!("not an event: {e}"), None))?;
        // A known type whose fields are unreadable (a `content` without its
        // text, a text that is not a string) is an error here, as every
        // other malformed event is: a log keeps it as a warning, a caller
        // pushing it has a bug to hear about.
        if let (EventKind::Other { .. }, Some(warning)) = (&parsed.event.kind, &parsed.warning) {
            return Err(crate::convert::malformed(format!("not an event: {warning}"), None));
        }
        let size = match &parsed.event.kind {
            EventKind::Reasoning { text } | EventKind::Content { text } => text.len(),
            _ => 0,
        };
        self.push_event(py, parsed.event, size)
    }

    /// The next bytes (or str) of a log in any format loopscope reads,
    /// detected from the first bytes unless `format` names one. Records may
    /// be split anywhere across calls; call `finish()` at the end.
    #[pyo3(signature = (data, format = "auto"))]
    fn feed(&self, py: Python<'_>, data: &Bound<'_, PyAny>, format: &str) -> PyResult<Py<PyList>> {
        let choice = format_of(format)?;
        let bytes: Vec<u8> = if let Ok(b) = data.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(s) = data.cast::<PyString>() {
            s.to_cow()?.as_bytes().to_vec()
        } else {
            return Err(PyTypeError::new_err("feed takes bytes or str"));
        };
        let run = |m: &mut Monitor| guarded(|| m.feed(&bytes, choice).to_vec());
        let found = if bytes.len() > DETACH_BYTES {
            py.detach(|| self.lock().and_then(|mut m| run(&mut m)))?
        } else {
            run(&mut *self.lock()?)?
        };
        detections_list(py, &found)
    }

    /// The fed log ended: a last record without its line end is read too.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let found = guarded(|| self.lock().map(|mut m| m.finish().to_vec()))??;
        detections_list(py, &found)
    }

    /// Every detector's state now: a dict with `id`, `status` (`idle`,
    /// `watching`, `clear`, `fired`, `latched`) and its numbers.
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let states = guarded(|| self.lock().map(|m| m.states()))??;
        let dicts: Vec<Bound<'py, PyDict>> = states.iter().map(|s| state_dict(py, s)).collect::<PyResult<_>>()?;
        PyList::new(py, dicts)
    }

    fn __repr__(&self) -> PyResult<String> {
        let m = self.lock()?;
        Ok(format!(
            "<Detector profile={} events={} detections={}>",
            self.profile.name(),
            m.events(),
            m.detections().len()
        ))
    }
}

/// A text event carrying the server's token ids (`token_ids`), if given.
fn with_token_ids(kind: EventKind, token_ids: Option<Vec<u64>>) -> Event {
    let mut e = Event::new(kind);
    if let Some(ids) = token_ids {
        e.extra.insert(
            loopscope_core::event::TOKEN_IDS.into(),
            Value::Array(ids.into_iter().map(Value::from).collect()),
        );
    }
    e
}
