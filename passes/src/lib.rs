//! Passes over Ember's IR and the pass manager that runs them by name, like `mlir-opt`
//! (`ember opt --passes=canonicalize,cse,dce`). Every pass is a plain function on a module and
//! the [`PassContext`] its pipeline threads through; the registry below is the one list of them.

pub mod egraph;
mod lower;
mod simplify;

pub use lower::{lowered_ops, RNG_SEED};

use ember_ir::verify::{verify, VerifyError};
use ember_ir::Module;

pub struct PassInfo {
    pub name: &'static str,
    pub doc: &'static str,
    pub run: fn(&mut Module, &mut PassContext) -> Result<(), String>,
}

/// What the passes of one pipeline run share: the options they read and what they report. The
/// caller makes one per compilation and reads the traces afterwards, so nothing travels in module
/// attributes or thread-locals.
pub struct PassContext {
    /// The target and limits of the e-graph optimizer (`fuse`).
    pub egraph: egraph::Options,
    /// What each `fuse` run did, in order.
    pub traces: Vec<egraph::Trace>,
}

impl PassContext {
    /// A context whose `fuse` extracts with the cost model of `target`.
    pub fn new(target: &str) -> PassContext {
        PassContext { egraph: egraph::Options::new(target), traces: Vec::new() }
    }

    /// A context for the target a module names (`ember.target`, which compiled artifacts'
    /// `module.mlir` carry), cpu when it names none: what `ember opt` optimizes a module for.
    pub fn for_module(m: &Module) -> PassContext {
        match m.attrs.get("ember.target") {
            Some(ember_ir::Attr::Str(t)) => PassContext::new(t),
            _ => PassContext::new("cpu"),
        }
    }

    /// The traces as `ember opt --trace` prints them.
    pub fn rendered_traces(&self) -> Vec<String> {
        self.traces.iter().map(|t| t.render(&self.egraph.limits)).collect()
    }
}

#[rustfmt::skip]
pub static PASSES: &[PassInfo] = &[
    PassInfo { name: "canonicalize", doc: "Remove no-op ops (aliases, clones, same-shape views and expands, identity permutes, dtype-preserving copies, metadata asserts).", run: |m, _| simplify::canonicalize(m) },
    PassInfo { name: "cse", doc: "Merge ops with equal names, operands and attributes (pure ops only).", run: |m, _| simplify::cse(m) },
    PassInfo { name: "dce", doc: "Delete ops whose results are unused (pure ops only).", run: |m, _| simplify::dce(m) },
    PassInfo { name: "fuse", doc: "E-graph optimization: algebra and layout rewrites, composites (softmax, norms, GELU/SiLU, attention), extraction by the cost model of the module's `ember.target` (default cpu), then kernels as ember.fusion_group (gemm, loop, composites).", run: egraph::fuse_pass },
    PassInfo { name: "torch-to-ten", doc: "Lower torch ops to the ten dialect (explicit broadcasts, conversions, constants); ops without a lowering stay.", run: |m, _| lower::torch_to_ten(m) },
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
    cx: &mut PassContext,
    after_each: &mut dyn FnMut(&str, &Module),
) -> Result<(), PipelineError> {
    for p in passes {
        (p.run)(m, cx).map_err(|msg| PipelineError::Failed { pass: p.name.into(), msg })?;
        verify(m).map_err(|errors| PipelineError::Verify { after: p.name.into(), errors })?;
        after_each(p.name, m);
    }
    Ok(())
}
