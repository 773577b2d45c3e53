//! Python extension module `ember._ember`: import, compile and run from Python.
//!
//! The extension links LLVM statically; rustc's cdylib version script exports only
//! `PyInit__ember`, so LLVM's symbols stay private when torch and jaxlib share the process.

use ember_ir::types::DType;
use ember_targets::cpu::{Program as CpuProgram, TensorView};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::Path;

fn err(msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(msg.to_string())
}

/// Version of the Ember native extension (the workspace crate version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Imports a .pt2 archive (or model.json) and returns the torch-dialect module as MLIR text.
#[pyfunction]
fn import_model(py: Python<'_>, path: &str) -> PyResult<String> {
    py.detach(|| ember_compiler::import_path(Path::new(path)).map(|m| m.module.to_string()).map_err(err))
}

/// Compiles a .pt2 archive for `target` into the artifact directory `out_dir`.
#[pyfunction]
fn compile(py: Python<'_>, path: &str, target: &str, out_dir: &str) -> PyResult<()> {
    if target != "cpu" {
        return Err(err(format!("target `{target}` is not built yet: this Ember compiles for cpu only")));
    }
    py.detach(|| {
        let imported = ember_compiler::import_path(Path::new(path)).map_err(err)?;
        ember_compiler::cpu::compile(imported, Path::new(out_dir)).map(|_| ()).map_err(err)
    })
}

/// Ops of a .pt2 that Ember has no lowering for (`aten.sort`, ...), each once, in program order.
#[pyfunction]
fn unlowered_ops(py: Python<'_>, path: &str) -> PyResult<Vec<String>> {
    py.detach(|| {
        let imported = ember_compiler::import_path(Path::new(path)).map_err(err)?;
        ember_compiler::artifact::unlowered_ops(imported.module).map_err(err)
    })
}

/// A loaded CPU artifact.
#[pyclass(frozen)]
struct Program {
    inner: CpuProgram,
}

#[pymethods]
impl Program {
    #[new]
    fn new(py: Python<'_>, dir: &str) -> PyResult<Self> {
        py.detach(|| CpuProgram::load(Path::new(dir)).map(|inner| Program { inner }).map_err(err))
    }

    /// Input (name, dtype, dims) triples; dims are ints or symbol expressions as strings.
    fn inputs(&self) -> Vec<(String, String, Vec<String>)> {
        self.inner.manifest.inputs.iter().map(|i| (i.name.clone(), i.dtype.clone(), i.dims.clone())).collect()
    }

    fn outputs(&self) -> Vec<(String, String, Vec<String>)> {
        self.inner.manifest.outputs.iter().map(|i| (i.name.clone(), i.dtype.clone(), i.dims.clone())).collect()
    }

    /// Runs on inputs given as (data pointer, byte length, shape, dtype) of contiguous host tensors,
    /// read in place. The caller keeps them alive for the call. Returns (bytes, shape, dtype) per
    /// output.
    fn run_raw<'py>(&self, py: Python<'py>, inputs: Vec<(usize, usize, Vec<usize>, String)>) -> PyResult<Vec<(Bound<'py, PyBytes>, Vec<usize>, String)>> {
        let mut dtypes = Vec::new();
        for (_, _, _, d) in &inputs {
            dtypes.push(DType::from_mlir_name(d).ok_or_else(|| err(format!("unknown dtype `{d}`")))?);
        }
        let outs = {
            let views: Vec<TensorView> = inputs
                .iter()
                .zip(&dtypes)
                // SAFETY: the Python caller passes live, contiguous buffers of `len` bytes.
                .map(|((ptr, len, shape, _), &dtype)| TensorView { dtype, shape, data: unsafe { std::slice::from_raw_parts(*ptr as *const u8, *len) } })
                .collect();
            self.inner.run_views(&views).map_err(err)?
        };
        Ok(outs.into_iter().map(|t| (PyBytes::new(py, &t.data), t.shape, t.dtype.mlir_name().to_string())).collect())
    }
}

#[pymodule]
fn _ember(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(import_model, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(unlowered_ops, m)?)?;
    m.add_class::<Program>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
