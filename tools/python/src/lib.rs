//! Python extension module `ember._ember`.
//!
//! Kept deliberately small: the Python-facing API lives in the `ember`
//! package (tools/python/python/ember), which re-exports what is defined here.

use pyo3::prelude::*;

/// Version of the Ember native extension (the workspace crate version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _ember(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
