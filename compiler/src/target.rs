//! One [`Target`] implementation per target (`cpu`, `tpu`, `trainium`), found by name in
//! [`TARGETS`], and the compile and run entries every caller (the CLI, the Python extension, the
//! eager plan cache) goes through.

use crate::frontend::Imported;
use ember_ir::{Module, Value};
use ember_passes::egraph::cost::{self, CostTable};
use ember_passes::PassContext;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An option of `ember compile` (`--NAME`), owned by one target.
pub struct TargetOption {
    pub name: &'static str,
    /// The values it takes; empty for a flag or a free-form value (checked by [`Target::check`]).
    pub values: &'static [&'static str],
    /// At this value the option changes nothing, so other targets accept it too.
    pub default: Option<&'static str>,
    /// The error when another target is given it; `{target}` is that target's name.
    pub elsewhere: &'static str,
}

/// Target options as given, in order: (`mesh`, `x=2`); a flag's value is empty; a repeatable
/// option (`shard`) appears once per use.
#[derive(Clone, Debug, Default)]
pub struct Options(pub Vec<(String, String)>);

impl Options {
    pub fn flag(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn values(&self, name: &str) -> Vec<String> {
        self.0.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect()
    }
}

/// What `ember run` did: lines for the user, and the exit code of a runner in another process.
pub struct Ran {
    pub notes: Vec<String>,
    pub exit_code: i32,
}

/// Everything Ember knows about one target. Options arrive checked ([`CompileOptions::check`]).
pub trait Target: Sync {
    fn name(&self) -> &'static str;

    fn options(&self) -> &'static [TargetOption] {
        &[]
    }

    /// Option errors names and value lists cannot catch (a malformed `--mesh`), found before the
    /// model is read.
    fn check(&self, _opts: &Options) -> Result<(), String> {
        Ok(())
    }

    /// The cost model the e-graph optimizer extracts kernels with.
    fn cost_table(&self) -> &'static CostTable {
        cost::table(self.name()).expect("every target has a cost table")
    }

    /// The context this target's passes run in: `fuse` extracts with its cost model.
    fn pass_context(&self) -> PassContext {
        PassContext::new(self.cost_table().target)
    }

    /// Whether a fusion group of `kind` stays a group (the target has a kernel or composite for
    /// it); the others are inlined.
    fn keeps(&self, kind: &str, opts: &Options) -> bool;

    /// The common pipeline, the e-graph optimizer with this target's cost model, and the groups
    /// it does not keep inlined. Returns the results of `@main`'s inlined groups: the kernel
    /// boundaries the optimizer chose.
    fn lower(&self, m: &mut Module, opts: &Options) -> Result<Vec<Value>, String> {
        let mut cx = self.pass_context();
        crate::artifact::lower(m, &mut cx)?;
        self.rewrite(m, opts)?;
        crate::artifact::optimize(m, &mut cx)?;
        let main = m.func_by_name("main");
        let mut boundaries = vec![];
        for f in m.funcs() {
            let b = ember_passes::egraph::inline_groups(m, f, &|kind| self.keeps(kind, opts));
            if Some(f) == main {
                boundaries = b;
            }
        }
        Ok(boundaries)
    }

    /// Rewrites the lowered `ten` module before the optimizer sees it (trainium's `--auto-cast`).
    fn rewrite(&self, _m: &mut Module, _opts: &Options) -> Result<(), String> {
        Ok(())
    }

    /// Rewrites a lowered module for what the device lacks (dtypes). Returns the new dtype of
    /// every `@main` argument (`argN`) and result (`outN`) it changed.
    fn legalize(&self, _m: &mut Module, _opts: &Options) -> Result<BTreeMap<String, String>, String> {
        Ok(BTreeMap::new())
    }

    /// Compiles `model` into the artifact directory `out` (its files and `manifest.json`, written
    /// atomically). Returns lines for the user (warnings first, prefixed `warning: `).
    fn compile(&self, model: Imported, out: &Path, opts: &Options) -> Result<Vec<String>, String>;

    /// `ember run` on one of this target's artifacts: `.npz` inputs to `.npz` outputs, `repeat`
    /// timed runs after a warm-up when above 1.
    fn run(&self, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<Ran, String>;
}

/// Every target, in the order `ember compile --help` lists them.
pub static TARGETS: &[&dyn Target] = &[&crate::cpu::Cpu, &crate::tpu::Tpu, &crate::trainium::Trainium];

pub fn names() -> Vec<&'static str> {
    TARGETS.iter().map(|t| t.name()).collect()
}

pub fn lookup(name: &str) -> Result<&'static dyn Target, String> {
    TARGETS
        .iter()
        .copied()
        .find(|t| t.name() == name)
        .ok_or_else(|| format!("unknown target `{name}` (known: {})", names().join(", ")))
}

/// The target option `name` and the target that owns it.
fn option(name: &str) -> Option<(&'static dyn Target, &'static TargetOption)> {
    TARGETS.iter().find_map(|&t| t.options().iter().find(|o| o.name == name).map(|o| (t, o)))
}

/// The values option `name` takes (empty for flags, free-form values and unknown names).
pub fn option_values(name: &str) -> &'static [&'static str] {
    option(name).map(|(_, o)| o.values).unwrap_or(&[])
}

/// What `ember compile` does; the model itself is [`compile`]'s argument.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    pub target: String,
    /// The artifact directory; an existing one is replaced only if it is an Ember artifact.
    pub out: PathBuf,
    pub options: Options,
    /// `--report`: also write `out/report/` (fusion.md, .dot, .svg) titled with this model name.
    pub report: Option<String>,
}

impl CompileOptions {
    pub fn new(target: &str, out: &Path) -> Self {
        CompileOptions { target: target.into(), out: out.into(), options: Options::default(), report: None }
    }

    /// The target, after checking every option: known, this target's (or another's at its
    /// default), with a value it takes.
    pub fn check(&self) -> Result<&'static dyn Target, String> {
        let target = lookup(&self.target)?;
        for (name, value) in &self.options.0 {
            let (owner, o) = option(name).ok_or_else(|| format!("unknown option `--{name}`"))?;
            if owner.name() != target.name() {
                if o.default != Some(value.as_str()) {
                    return Err(o.elsewhere.replace("{target}", target.name()));
                }
            } else if !o.values.is_empty() && !o.values.contains(&value.as_str()) {
                return Err(format!("--{name} `{value}`: not one of {}", o.values.join(", ")));
            }
        }
        target.check(&self.options)?;
        Ok(target)
    }
}

/// Compiles a model as `opts` says. Returns lines for the user: what was written, warnings.
pub fn compile(model: Imported, opts: &CompileOptions) -> Result<Vec<String>, String> {
    let target = opts.check()?;
    let report = opts.report.as_ref().map(|name| (model.module.clone(), name));
    let mut notes = target.compile(model, &opts.out, &opts.options)?;
    if let Some((module, name)) = report {
        notes.push(crate::artifact::write_report(&opts.out, module, target, name)?);
    }
    Ok(notes)
}

/// `ember run`: runs the artifact in `dir` with its target.
pub fn run(dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<Ran, String> {
    let h = crate::artifact::read_header(dir).map_err(|e| e.0)?;
    let target = TARGETS.iter().find(|t| t.name() == h.target).ok_or_else(|| {
        let names = names();
        let (last, rest) = names.split_last().expect("targets");
        format!("target `{}` is not built yet: this Ember runs {} and {last} artifacts only", h.target, rest.join(", "))
    })?;
    target.run(dir, inputs, outputs, repeat)
}
