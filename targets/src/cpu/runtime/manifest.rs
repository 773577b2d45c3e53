//! `manifest.json`: what the compiler writes next to `kernels.so` and `weights.bin` and the runtime
//! reads back. Its own file because the compiler builds these types too (`compiler::cpu`).

use crate::cpu::plan::{Buffer, Step};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SymbolInfo {
    pub name: String,
    pub min: i64,
    pub max: Option<i64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IoInfo {
    pub name: String,
    pub buf: usize,
    pub dtype: String,
    pub dims: Vec<String>,
    /// `input NAME` / `buffer NAME` for a functionalized in-place update (not a user output).
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

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WeightInfo {
    pub name: String,
    pub buf: usize,
    pub offset: u64,
    pub bytes: u64,
    /// weights.bin holds this 2-D weight's transpose: only GEMMs read it, and they read it
    /// transposed (see `compiler::cpu::store_weights_for_gemm`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transposed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: String,
    pub target: String,
    pub ember_version: String,
    /// The LLVM CPU name and feature string the code was compiled for; checked at load.
    pub cpu: String,
    pub cpu_features: Vec<String>,
    pub source_hash: String,
    pub symbols: Vec<SymbolInfo>,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    pub weights: Vec<WeightInfo>,
    pub buffers: Vec<Buffer>,
    pub steps: Vec<Step>,
    /// (output buffer, input buffer): outputs whose kernel computes them in the memory of the
    /// input they update (`plan::in_place`). The runtime hands the kernels one address for both:
    /// the caller's input when it passes that input's memory as the output, otherwise the
    /// output's memory holding a copy of the input.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_place: Vec<(usize, usize)>,
    /// Size and SHA-256 of every other file of the artifact, checked at load (`checksum`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, crate::checksum::FileSum>,
}
