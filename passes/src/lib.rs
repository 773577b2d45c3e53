//! Passes over Ember's IR and the pass manager that runs them by name, like `mlir-opt`
//! (`ember opt --passes=canonicalize,cse,dce`). Every pass is a plain function on a module; the
//! registry below is the one list of them.

pub mod egraph;
mod lower;
mod simplify;

use ember_ir::verify::{verify, VerifyError};
use ember_ir::Module;

pub struct PassInfo {
    pub name: &'static str,
    pub doc: &'static str,
    pub run: fn(&mut Module) -> Result<(), String>,
}

#[rustfmt::skip]
pub static PASSES: &[PassInfo] = &[
    PassInfo { name: "canonicalize", doc: "Remove no-op ops (aliases, clones, same-shape views and expands, identity permutes, dtype-preserving copies, metadata asserts).", run: simplify::canonicalize },
    PassInfo { name: "cse", doc: "Merge ops with equal names, operands and attributes (pure ops only).", run: simplify::cse },
    PassInfo { name: "dce", doc: "Delete ops whose results are unused (pure ops only).", run: simplify::dce },
    PassInfo { name: "fuse", doc: "E-graph optimization: algebra and layout rewrites, composites (softmax, norms, GELU/SiLU, attention), extraction by the cost model of the module's `ember.target` (default cpu), then kernels as ember.fusion_group (gemm, loop, composites).", run: egraph::fuse_pass },
    PassInfo { name: "torch-to-ten", doc: "Lower torch ops to the ten dialect (explicit broadcasts, conversions, constants); ops without a lowering stay.", run: lower::torch_to_ten },
];

pub fn lookup(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}

#[derive(Debug)]
pub enum PipelineError {
    UnknownPass(String),
    Failed { pass: String, msg: String },
    Verify { after: String, errors: Vec<VerifyError> },
}

impl std::fmt::Display for PipelineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PipelineError::UnknownPass(p) => {
                let names: Vec<&str> = PASSES.iter().map(|p| p.name).collect();
                write!(f, "unknown pass `{p}`; available passes: {}", names.join(", "))
            }
            PipelineError::Failed { pass, msg } => write!(f, "pass `{pass}` failed: {msg}"),
            PipelineError::Verify { after, errors } => {
                write!(f, "the IR does not verify after `{after}`:")?;
                for e in errors {
                    write!(f, "\n  {e}")?;
                }
                Ok(())
            }
        }
    }
}

/// Parses `a,b,c` into passes, rejecting unknown names before anything runs.
pub fn parse_pipeline(spec: &str) -> Result<Vec<&'static PassInfo>, PipelineError> {
    spec.split(',')
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(|s| lookup(s).ok_or_else(|| PipelineError::UnknownPass(s.to_string())))
        .collect()
}

/// Runs passes in order, verifying after each; `after_each` sees the IR after every pass.
pub fn run_pipeline(
    m: &mut Module,
    passes: &[&PassInfo],
    after_each: &mut dyn FnMut(&str, &Module),
) -> Result<(), PipelineError> {
    for p in passes {
        (p.run)(m).map_err(|msg| PipelineError::Failed { pass: p.name.into(), msg })?;
        verify(m).map_err(|errors| PipelineError::Verify { after: p.name.into(), errors })?;
        after_each(p.name, m);
    }
    Ok(())
}
