//! Whole inputs: `loopscope.scan`, `scan_messages`, and `Scanner`, which
//! resolves a setup once and scans many trajectories with it (a dataset's
//! rows, on a Ray or Spark worker).

use std::io::Cursor;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use loopscope_core::{Event, EventKind, Format, FormatChoice, Monitor, Profile, Scanned, Setup};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use serde_json::Value;

use crate::convert::{format_of, guarded, py_error, setup_of, to_json, to_py, Recipe};
use crate::detection::detections_list;

/// Scans many trajectories or files with one setup, resolved once.
///
/// `params` overrides parameters ({"text-loop.copies": 4}); `detectors`
/// keeps only these detector ids. Every method releases the GIL while it
/// scans, so one Scanner serves many threads. The profile defaults to
/// `extended`; the CLI's `loopscope scan` defaults to `seed`. A Scanner
/// pickles (as its setup).
#[pyclass(module = "loopscope", frozen)]
pub(crate) struct Scanner {
    setup: Setup,
    /// The constructor's arguments, for pickling.
    recipe: Recipe,
}

/// How often a scan running without the GIL takes it back to see whether
/// Ctrl-C was pressed (Python runs its signal handlers only then).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Runs a scan with the GIL released, checking for signals now and then
/// (`PyErr_CheckSignals`, with the GIL taken back for that moment): Ctrl-C
/// (KeyboardInterrupt), or any exception a signal handler raises, ends the
/// scan and is raised in place of its result.
fn interruptible(
    py: Python<'_>,
    scan: impl FnOnce(&mut dyn FnMut(bool) -> bool) -> Result<Scanned, loopscope_core::Error> + Send,
) -> PyResult<Scanned> {
    let mut raised: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut last = Instant::now();
        let mut stop = |interrupted: bool| {
            if raised.is_some() {
                return true;
            }
            if !interrupted && last.elapsed() < SIGNAL_CHECK {
                return false;
            }
            last = Instant::now();
            raised = Python::attach(|py| py.check_signals()).err();
            raised.is_some()
        };
        guarded(|| scan(&mut stop))
    });
    if let Some(e) = raised {
        return Err(e);
    }
    result?.map_err(py_error)
}

impl Scanner {
    fn bytes(&self, py: Python<'_>, bytes: Vec<u8>, choice: FormatChoice) -> PyResult<Scanned> {
        let setup = &self.setup;
        interruptible(py, |stop| {
            loopscope_core::scan_until(Cursor::new(bytes), choice, None, setup, stop)
        })
    }

    fn source(&self, py: Python<'_>, source: &Bound<'_, PyAny>, choice: FormatChoice) -> PyResult<Scanned> {
        if let Ok(b) = source.cast::<PyBytes>() {
            return self.bytes(py, b.as_bytes().to_vec(), choice);
        }
        let path: PathBuf = source
            .extract()
            .map_err(|_| PyTypeError::new_err("scan takes a path (str or os.PathLike) or bytes"))?;
        let setup = &self.setup;
        interruptible(py, |stop| loopscope_core::scan_path_until(&path, choice, setup, stop))
    }

    /// A trajectory given as a Python value, or as its JSON text.
    fn value(&self, py: Python<'_>, value: &Bound<'_, PyAny>, choice: FormatChoice) -> PyResult<Scanned> {
        let bytes = if let Ok(s) = value.cast::<PyString>() {
            s.to_cow()?.as_bytes().to_vec()
        } else if let Ok(b) = value.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else {
            to_json(value, 0)?.to_string().into_bytes()
        };
        self.bytes(py, bytes, choice)
    }
}

#[pymethods]
impl Scanner {
    #[new]
    #[pyo3(signature = (profile = "extended", params = None, detectors = None))]
    fn new(profile: &str, params: Option<&Bound<'_, PyDict>>, detectors: Option<Vec<String>>) -> PyResult<Scanner> {
        Ok(Scanner {
            recipe: Recipe::new(profile, params, detectors.clone()),
            setup: setup_of(profile, params, detectors)?,
        })
    }

    /// Pickles as its setup (profile, params, detectors): a Scanner holds
    /// no state between scans, so the copy is the same Scanner.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.get().recipe.reduce(slf.py(), slf.get_type().into_any())
    }

    /// The profile's name.
    #[getter]
    fn profile(&self) -> &'static str {
        self.setup.profile.name()
    }

    /// Scans a whole log: a path (str or os.PathLike) or its bytes.
    #[pyo3(signature = (source, format = "auto"))]
    fn scan(&self, py: Python<'_>, source: &Bound<'_, PyAny>, format: &str) -> PyResult<Py<PyList>> {
        let scanned = self.source(py, source, format_of(format)?)?;
        detections_list(py, &scanned.detections)
    }

    /// Scans one trajectory held as a list of chat messages.
    fn scan_messages(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<Py<PyList>> {
        let value = to_json(messages, 0)?;
        if !value.is_array() {
            return Err(PyTypeError::new_err("scan_messages takes a list of message dicts"));
        }
        let scanned = self.bytes(
            py,
            value.to_string().into_bytes(),
            FormatChoice::Fixed(Format::Messages),
        )?;
        detections_list(py, &scanned.detections)
    }

    /// Scans one trajectory in any shape a dataset row holds: a message
    /// list, a document with `messages` (or `trajectory`, ATIF `steps`…),
    /// as a Python value or as JSON text.
    #[pyo3(signature = (value, format = "auto"))]
    fn scan_value(&self, py: Python<'_>, value: &Bound<'_, PyAny>, format: &str) -> PyResult<Py<PyList>> {
        let scanned = self.value(py, value, format_of(format)?)?;
        detections_list(py, &scanned.detections)
    }

    /// The detections of `scan_value` as the `loop_*` columns a dataset
    /// row gets: a dict with `loop`, `loop_detector`, `loop_event`,
    /// `loop_onset`, `loop_reason`, `loop_count`, `loop_detections` (the
    /// `scan --json` records as a JSON list) and `loop_events` (events read).
    #[pyo3(signature = (value, format = "auto"))]
    fn row<'py>(&self, py: Python<'py>, value: &Bound<'py, PyAny>, format: &str) -> PyResult<Bound<'py, PyDict>> {
        let scanned = self.value(py, value, format_of(format)?)?;
        row_of(py, &scanned)
    }

    /// The same columns for a session file (a path).
    #[pyo3(signature = (path, format = "auto"))]
    fn file_row<'py>(&self, py: Python<'py>, path: &Bound<'py, PyAny>, format: &str) -> PyResult<Bound<'py, PyDict>> {
        let scanned = self.source(py, path, format_of(format)?)?;
        row_of(py, &scanned)
    }

    fn __repr__(&self) -> String {
        format!("<Scanner profile={}>", self.setup.profile.name())
    }
}

/// A scan as a dataset row's loop columns (see `Scanner.row`).
fn row_of<'py>(py: Python<'py>, scanned: &Scanned) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let first = scanned.detections.first();
    d.set_item("loop", first.is_some())?;
    d.set_item("loop_detector", first.map(|f| f.detector))?;
    d.set_item("loop_event", first.map(|f| f.event))?;
    d.set_item("loop_onset", first.and_then(|f| f.onset))?;
    d.set_item("loop_reason", first.map(|f| f.reason.as_str()))?;
    d.set_item("loop_count", scanned.detections.len())?;
    let records: Vec<Value> = scanned
        .detections
        .iter()
        .map(|x| serde_json::to_value(x).unwrap_or(Value::Null))
        .collect();
    d.set_item("loop_detections", Value::Array(records).to_string())?;
    d.set_item("loop_events", scanned.events)?;
    Ok(d)
}

/// Scans a whole input: a path (str or os.PathLike) or the bytes of a log.
#[pyfunction]
#[pyo3(signature = (source, profile = "extended", format = "auto", params = None, detectors = None))]
pub(crate) fn scan(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    profile: &str,
    format: &str,
    params: Option<&Bound<'_, PyDict>>,
    detectors: Option<Vec<String>>,
) -> PyResult<Py<PyList>> {
    Scanner::new(profile, params, detectors)?.scan(py, source, format)
}

/// Scans one trajectory given as a list of chat messages.
#[pyfunction]
#[pyo3(signature = (messages, profile = "extended", params = None, detectors = None))]
pub(crate) fn scan_messages(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    profile: &str,
    params: Option<&Bound<'_, PyDict>>,
    detectors: Option<Vec<String>>,
) -> PyResult<Py<PyList>> {
    Scanner::new(profile, params, detectors)?.scan_messages(py, messages)
}

/// The profiles' names.
#[pyfunction]
pub(crate) fn profiles() -> Vec<&'static str> {
    Profile::ALL.iter().map(|p| p.name()).collect()
}

/// The detectors a profile runs, with their parameters' defaults under it.
#[pyfunction]
#[pyo3(signature = (profile = "extended"))]
pub(crate) fn detectors(py: Python<'_>, profile: &str) -> PyResult<Py<PyList>> {
    let setup = setup_of(profile, None, None)?;
    let out = PyList::empty(py);
    for c in &setup.detectors {
        let d = PyDict::new(py);
        d.set_item("id", c.info.id)?;
        d.set_item("rule", c.info.rule)?;
        let params = PyDict::new(py);
        for (name, value) in c.params.iter() {
            params.set_item(name, to_py(py, &value.to_json())?)?;
        }
        d.set_item("params", params)?;
        out.append(d)?;
    }
    Ok(out.unbind())
}

/// For python/benches: seconds the engine alone takes over `deltas`
/// (reasoning deltas after one request), with no Python call per delta.
#[pyfunction]
#[pyo3(signature = (deltas, profile = "extended"))]
pub(crate) fn _engine_seconds(py: Python<'_>, deltas: Vec<String>, profile: &str) -> PyResult<f64> {
    let setup = setup_of(profile, None, None)?;
    let events: Vec<Event> = std::iter::once(Event::request())
        .chain(deltas.into_iter().map(|text| Event::new(EventKind::Reasoning { text })))
        .collect();
    py.detach(|| {
        guarded(|| {
            let mut m = Monitor::new(&setup);
            let start = std::time::Instant::now();
            for e in &events {
                m.push(e);
            }
            start.elapsed().as_secs_f64()
        })
    })
}
