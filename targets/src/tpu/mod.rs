//! The TPU target: a module in the `ten` dialect becomes StableHLO text for XLA.
//!
//! There is no TPU runtime in this crate. `ember compile --target tpu` writes an artifact directory
//! (`module.stablehlo.mlir`, `weights.bin`, `manifest.json`, described by [`Manifest`]); the Python
//! module `ember.xla` hands the text to a PJRT client (jaxlib's CPU client in tests, a TPU client
//! on a TPU host) with the weights and inputs as arguments.
//!
//! Fusion groups (`ember.fusion_group`) of a named kind become `stablehlo.composite "ember.<kind>"`
//! ops with a private decomposition function; `loop` and plain `gemm` groups are inlined.
//! [`sharding`] adds Shardy annotations for a device mesh; [`buckets`] turns symbolic dims into
//! padded static buckets. VHLO portable artifacts are written by `ember.xla` (jaxlib), called by
//! the CLI's `--portable`.

pub mod buckets;
pub mod sharding;
pub mod stablehlo;

pub use stablehlo::{emit, emit_with};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `precision` of f32 `dot_general`s (`--precision`). A TPU's DEFAULT rounds f32 operands to one
/// bf16 pass, HIGH to three, HIGHEST computes in f32; XLA's CPU backend computes f32 either way,
/// so here only the emitted attribute differs (snapshot-tested, unverifiable without a TPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    Default,
    High,
    /// Ember's default: numerics match torch's f32 matmuls.
    #[default]
    Highest,
}

impl Precision {
    pub const NAMES: [&'static str; 3] = ["default", "high", "highest"];
    pub fn parse(s: &str) -> Option<Precision> {
        match s {
            "default" => Some(Precision::Default),
            "high" => Some(Precision::High),
            "highest" => Some(Precision::Highest),
            _ => None,
        }
    }
    /// The StableHLO enum value.
    pub fn attr(self) -> &'static str {
        match self {
            Precision::Default => "DEFAULT",
            Precision::High => "HIGH",
            Precision::Highest => "HIGHEST",
        }
    }
}

/// Flags of `ember compile --target tpu`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// `--mesh` and `--shard`: emit Shardy annotations for SPMD partitioning.
    pub shard: Option<sharding::Options>,
    pub precision: Precision,
}

/// The symbol values a bucket was compiled for, and its StableHLO.
pub type EmittedBucket = (BTreeMap<String, i64>, stablehlo::Emitted);

/// StableHLO for `@main`: one module when its shapes are static; with symbolic dims, one per
/// padded bucket (see [`buckets`]), each with the symbol values it was compiled for.
pub fn emit_buckets(m: &ember_ir::Module, opts: &Options) -> Result<Vec<EmittedBucket>, String> {
    let f = m.func_by_name("main").ok_or("the module has no `@main` function")?;
    if buckets::used_symbols(m, f).is_empty() {
        return Ok(vec![(BTreeMap::new(), emit_with(m, opts)?)]);
    }
    if opts.shard.is_some() {
        return Err("--mesh with symbolic dims: sharding a model with dynamic shapes is not built yet (the shardings would differ per bucket); export with static shapes to shard it".into());
    }
    buckets::specialized(m, f)?.into_iter().map(|(env, s)| Ok((env, emit_with(&s, opts)?))).collect()
}

/// A user input: argument `arg` of `@main`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IoInfo {
    pub name: String,
    /// Argument index in `@main` (for outputs: the result index).
    pub arg: usize,
    pub dtype: String,
    pub dims: Vec<String>,
    /// Sharded artifacts: per dim, the mesh axis it is split over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<sharding::Spec>,
    /// Outputs only: `input NAME` / `buffer NAME` for a functionalized in-place update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutates: Option<String>,
    /// Complex (complex64/complex128 in `.npz` files): `dtype` and `dims` are its real view's,
    /// (real, imaginary) pairs in a trailing dim of 2.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub complex: bool,
    /// The seed of the graph's random ops (`ember_seed`, int64 scalar): `ember run` seeds it
    /// with torch's default seed when the inputs do not give it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rng_seed: bool,
}

/// A weight (parameter, buffer or constant): argument `arg`, `bytes` bytes at `offset` in
/// `weights.bin` (row-major, little-endian; every offset 64-byte aligned).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct WeightInfo {
    pub name: String,
    pub arg: usize,
    pub offset: u64,
    pub bytes: u64,
    pub dtype: String,
    pub dims: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<sharding::Spec>,
}

/// One axis of the device mesh (`sdy.mesh`); device ids are row-major over the axes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MeshAxis {
    pub name: String,
    pub size: i64,
}

/// `manifest.json` of a tpu artifact. `format_version` and `target` come first, as every reader
/// checks them before anything else (`ember_compiler::artifact::read_header`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format_version: String,
    pub target: String,
    pub ember_version: String,
    /// SHA-256 of the imported (torch-dialect) module's text.
    pub source_hash: String,
    /// The StableHLO file in the artifact directory; its entry function is `@main`.
    pub module: String,
    /// `@main`'s arguments in order are the inputs and weights below, by their `arg`.
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    pub weights: Vec<WeightInfo>,
    /// Sharded artifacts (`--mesh`): the mesh, and the rules that chose the shardings. The module
    /// then runs SPMD-partitioned on `product(size)` devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<Vec<MeshAxis>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Vec<sharding::Rule>>,
    /// Models with symbolic dims: the padded buckets, smallest first (`module` is the largest).
    /// The runner binds each symbol from the inputs' dims, runs the first bucket whose sizes all
    /// fit, padding inputs with zeros at the end of each symbolic dim and slicing the outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<Bucket>>,
    /// Padded buckets: the `@main` argument (an int64 scalar) that receives each symbol's true
    /// size, against which reductions over its dim ignore the padding.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, usize>,
    /// `--portable`: a VHLO portable artifact (versioned MLIR bytecode) next to every module.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vhlo: Option<Vhlo>,
}

/// The VHLO portable artifacts of an artifact: `files[module]` is the bytecode of `module`,
/// serialized for StableHLO `version` (by `python -m ember.xla portable`, i.e. jaxlib).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Vhlo {
    pub version: String,
    pub files: BTreeMap<String, String>,
}

/// One padded bucket: the StableHLO module compiled with each symbol set to `symbols[s]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Bucket {
    pub symbols: BTreeMap<String, i64>,
    pub module: String,
}
