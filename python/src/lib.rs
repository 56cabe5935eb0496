//! `loopscope._loopscope`: the Python face of loopscope-core. The public
//! API is re-exported, documented and typed by the `loopscope` package
//! (python/loopscope); this crate only converts values and errors.
//!
//! Every call into the core runs under `catch_unwind`, so a bug surfaces
//! as a `RuntimeError`, never as a crashed interpreter; work over a few KB
//! runs with the GIL released, so threads pushing into their own
//! detectors run in parallel.

mod convert;
mod detection;
mod detector;
mod scanner;

use pyo3::prelude::*;

#[pymodule]
fn _loopscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    convert::add_exceptions(m)?;
    m.add_class::<detector::Detector>()?;
    m.add_class::<detection::PyDetection>()?;
    m.add_class::<scanner::Scanner>()?;
    m.add_function(wrap_pyfunction!(scanner::scan, m)?)?;
    m.add_function(wrap_pyfunction!(scanner::scan_messages, m)?)?;
    m.add_function(wrap_pyfunction!(scanner::profiles, m)?)?;
    m.add_function(wrap_pyfunction!(scanner::detectors, m)?)?;
    m.add_function(wrap_pyfunction!(scanner::_engine_seconds, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
