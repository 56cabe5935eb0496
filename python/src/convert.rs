//! Values and errors across the boundary: Python values as JSON and back,
//! core errors as Python exceptions, panics as `RuntimeError`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use loopscope_core::{Error, ErrorKind, FormatChoice, Setup};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyboardInterrupt, PyOSError, PyPermissionError, PyRuntimeError,
    PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

/// Inputs larger than this are worked on with the GIL released: below it,
/// releasing and taking it back again costs more than the work.
pub(crate) const DETACH_BYTES: usize = 4096;
/// Python values nested deeper than this are refused, not recursed into.
pub(crate) const MAX_DEPTH: usize = 256;

/// Runs core code, turning a panic into a `RuntimeError`.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        PyRuntimeError::new_err(format!("loopscope internal error (please report it): {what}"))
    })
}

// The package's exceptions: each a ValueError (what they replace, so
// `except ValueError` still catches them), told apart by the core error's
// kind. `__module__` is `loopscope`, where they are re-exported.
create_exception!(
    loopscope,
    UnknownProfileError,
    PyValueError,
    "A profile name loopscope does not have (loopscope.profiles() lists them)."
);
create_exception!(
    loopscope,
    UnknownDetectorError,
    PyValueError,
    "A detector id that does not exist, or that the chosen profile does not run."
);
create_exception!(
    loopscope,
    UnknownParameterError,
    PyValueError,
    "A parameter its detector does not have (\"text-loop.nope\")."
);
create_exception!(
    loopscope,
    InvalidValueError,
    PyValueError,
    "A value that does not fit its parameter (\"text-loop.copies\": \"many\")."
);
create_exception!(
    loopscope,
    MalformedInputError,
    PyValueError,
    "An input that is not what it should be (an event dict without its type, \
a broken file); `line` is its 1-based line when known, else None."
);
create_exception!(
    loopscope,
    UnsupportedFormatError,
    PyValueError,
    "An input no importer reads, a format name that does not exist, or a \
format this build leaves out."
);

/// The exception classes above, added to the module.
pub(crate) fn add_exceptions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("UnknownProfileError", py.get_type::<UnknownProfileError>())?;
    m.add("UnknownDetectorError", py.get_type::<UnknownDetectorError>())?;
    m.add("UnknownParameterError", py.get_type::<UnknownParameterError>())?;
    m.add("InvalidValueError", py.get_type::<InvalidValueError>())?;
    m.add("MalformedInputError", py.get_type::<MalformedInputError>())?;
    m.add("UnsupportedFormatError", py.get_type::<UnsupportedFormatError>())?;
    Ok(())
}

/// A core error as the Python exception of its kind (never chosen by its
/// message's words); the message is the CLI's.
pub(crate) fn py_error(e: Error) -> PyErr {
    let message = e.to_string();
    match e.kind() {
        ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
        ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
        ErrorKind::UnknownProfile => UnknownProfileError::new_err(message),
        ErrorKind::UnknownDetector => UnknownDetectorError::new_err(message),
        ErrorKind::UnknownParameter => UnknownParameterError::new_err(message),
        ErrorKind::InvalidValue => InvalidValueError::new_err(message),
        ErrorKind::UnsupportedFormat => UnsupportedFormatError::new_err(message),
        ErrorKind::Malformed { line } => malformed(message, line),
        ErrorKind::Stopped => PyKeyboardInterrupt::new_err(message),
        // Io, and any kind a later core adds: an OSError is the honest
        // general answer for "could not run on this input".
        _ => PyOSError::new_err(message),
    }
}

/// A [`MalformedInputError`] with its `line` attribute (None when unknown).
pub(crate) fn malformed(message: String, line: Option<usize>) -> PyErr {
    let err = MalformedInputError::new_err(message);
    Python::attach(|py| {
        // Setting an attribute on a fresh exception cannot fail but for
        // memory; the exception is raised without it then.
        let _ = err.value(py).setattr("line", line);
    });
    err
}

/// A Python value as JSON: dicts (string keys), lists, tuples, strings,
/// numbers, booleans and None.
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "value nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    // bool before int: True is an int in Python.
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        let f: f64 = obj.extract()?;
        return Ok(serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, v) in d.iter() {
            let key = match k.cast::<PyString>() {
                Ok(s) => s.to_cow()?.into_owned(),
                Err(_) => k.str()?.to_cow()?.into_owned(),
            };
            m.insert(key, to_json(&v, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| to_json(&v, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|v| to_json(&v, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    let kind = obj.get_type().name()?.to_string();
    Err(PyTypeError::new_err(format!("a {kind} is not a JSON value")))
}

/// JSON as the Python value `json.loads` would give.
pub(crate) fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (_, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items: Vec<Bound<'py, PyAny>> = a.iter().map(|x| to_py(py, x)).collect::<PyResult<_>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// A setup from the Python arguments: a profile name, detector ids and
/// `{"ID.PARAM": value}` overrides (values as `--set` takes them, or
/// Python numbers, booleans and lists of numbers).
pub(crate) fn setup_of(
    profile: &str,
    params: Option<&Bound<'_, PyDict>>,
    detectors: Option<Vec<String>>,
) -> PyResult<Setup> {
    let mut overrides = Vec::new();
    if let Some(p) = params {
        for (k, v) in p.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("params keys are strings like \"text-loop.copies\""))?;
            overrides.push((key, param_text(&v)?));
        }
    }
    let pairs: Vec<(&str, &str)> = overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let ids: Vec<&str> = detectors.iter().flatten().map(String::as_str).collect();
    loopscope_core::setup(profile, &ids, &pairs).map_err(py_error)
}

pub(crate) fn param_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(match to_json(v, 0)? {
        Value::String(s) => s,
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    })
}

pub(crate) fn format_of(name: &str) -> PyResult<FormatChoice> {
    FormatChoice::parse(name).map_err(py_error)
}

/// A Detector's or Scanner's constructor arguments, kept to pickle it: the
/// params as a copy of the caller's dict (a later change to that dict does
/// not reach the copy).
pub(crate) struct Recipe {
    profile: String,
    params: Option<Py<PyDict>>,
    detectors: Option<Vec<String>>,
}

impl Recipe {
    pub(crate) fn new(profile: &str, params: Option<&Bound<'_, PyDict>>, detectors: Option<Vec<String>>) -> Recipe {
        Recipe {
            profile: profile.to_string(),
            params: params.and_then(|p| p.copy().ok()).map(Bound::unbind),
            detectors,
        }
    }

    /// `(cls, (profile, params, detectors))`, what `__reduce__` returns.
    pub(crate) fn reduce<'py>(&self, py: Python<'py>, cls: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let params = self.params.as_ref().map(|p| p.bind(py).copy()).transpose()?;
        let args = (self.profile.as_str(), params, self.detectors.clone()).into_pyobject(py)?;
        Ok(PyTuple::new(py, [cls, args.into_any()])?.into_any())
    }
}
