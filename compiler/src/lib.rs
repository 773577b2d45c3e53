//! Ember's compiler library: the torch.export frontend, the targets and their artifacts.
//! This crate is the API boundary: the CLI and the Python extension call only what it exports:
//! [`load`] a model, [`compile`] it for a target ([`CompileOptions`]), [`run`] an artifact,
//! [`Pipeline`] for `ember opt`, and the CPU runtime ([`runtime`]) for in-process callers.

pub mod artifact;
pub mod cpu;
pub mod eager;
pub mod frontend;
pub mod npz;
pub mod python;
pub mod scratch;
pub mod target;
pub mod tpu;
pub mod trainium;
mod zip_entry;

pub use ember_ir as ir;
pub use frontend::{import_path, ImportError, Imported};
pub use target::{compile, run, CompileOptions, Ran, Target};

/// The CPU runtime: a loaded artifact ([`runtime::Program`]) runs in this process.
pub mod runtime {
    pub use ember_targets::cpu::{
        host_blas, host_openmp, set_host_blas, set_host_openmp, HostTensor, Program, TensorView,
    };
}

/// Reads a model: an `.mlir` module (parsed and verified; without weights, so every argument must
/// be an `ember.input`) or a torch.export archive (`.pt2`, or a bare `model.json`).
pub fn load(path: &std::path::Path) -> Result<Imported, String> {
    if path.extension().is_some_and(|e| e == "mlir") {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let m = ember_ir::parse_module(&text).map_err(|e| format!("{}:{e}", path.display()))?;
        if let Err(errs) = ember_ir::verify::verify(&m) {
            let lines: Vec<String> = errs.iter().map(|e| format!("  {e}")).collect();
            return Err(format!("`{}` does not verify:\n{}", path.display(), lines.join("\n")));
        }
        return Ok(Imported { module: m, weights: vec![] });
    }
    import_path(path).map_err(|e| e.to_string())
}

/// A pass pipeline by name (`canonicalize,cse,dce`), as `ember opt` runs it.
pub struct Pipeline(Vec<&'static ember_passes::PassInfo>);

impl Pipeline {
    /// Every pass: (name, doc line).
    pub fn passes() -> impl Iterator<Item = (&'static str, &'static str)> {
        ember_passes::PASSES.iter().map(|p| (p.name, p.doc))
    }

    /// Parses `a,b,c`, rejecting unknown names before anything runs.
    pub fn parse(spec: &str) -> Result<Pipeline, String> {
        ember_passes::parse_pipeline(spec).map(Pipeline).map_err(|e| e.to_string())
    }

    /// Runs the passes in order, verifying after each; `after_each` sees the IR after every
    /// pass. Returns what each run of the e-graph optimizer (`fuse`) did, rendered.
    pub fn run(
        &self,
        m: &mut ir::Module,
        after_each: &mut dyn FnMut(&str, &ir::Module),
    ) -> Result<Vec<String>, String> {
        let mut cx = ember_passes::PassContext::for_module(m);
        ember_passes::run_pipeline(m, &self.0, &mut cx, after_each).map_err(|e| e.to_string())?;
        Ok(cx.rendered_traces())
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a failure never leaves a
/// half-written output behind. A symlink is written through to its target; a device or FIFO
/// (`-o /dev/null`) is written directly, since a rename would replace it with a regular file (as
/// root, that turns /dev/null into a file every later `2>/dev/null` writes into).
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let path = &std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return std::fs::write(path, bytes);
    }
    let tmp = scratch::sibling(path, "tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn write_atomic_keeps_fifos_and_symlinks() {
        let dir = crate::scratch::temp_dir("write-atomic").unwrap();
        let fifo = dir.join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        super::write_atomic(&fifo, b"through").unwrap();
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");
        assert_eq!(reader.join().unwrap(), b"through");

        let target = dir.join("target");
        std::fs::write(&target, b"old").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        super::write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the symlink was replaced");
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
