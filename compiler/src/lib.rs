//! Ember's compiler library: the torch.export frontend, the pipeline driver and artifacts.
//! This crate is the API boundary: the CLI and the Python extension call only what it exports.

pub mod artifact;
pub mod cpu;
pub mod eager;
pub mod frontend;
pub mod npz;
pub mod scratch;
pub mod tpu;
pub mod trainium;
mod zip_entry;

pub use frontend::{import_path, ImportError, Imported};

/// Writes `bytes` to `path` through a temporary file and a rename, so a failure never leaves a
/// half-written output behind.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = scratch::sibling(path, "tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
