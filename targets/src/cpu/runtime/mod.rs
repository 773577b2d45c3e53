//! Loads a CPU artifact (manifest, `kernels.so`, `weights.bin`) and runs it.
//!
//! Symbols are bound from the input shapes at each call, so any size inside the bounds runs the
//! same code. Weights are memory-mapped and read in place; temporaries are allocated once per
//! loaded program and reused while shapes stay the same.

use super::plan::{BufKind, Step};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use std::collections::HashMap;
use std::path::Path;

mod manifest;
pub use manifest::{IoInfo, Manifest, SymbolInfo, WeightInfo};
mod blas;
mod exec;
mod gemm;
pub use blas::{host_blas, set_host_blas, HostBlas};
mod linalg;
mod pool;
mod special;
pub use pool::{host_openmp, set_host_openmp};

/// A dense row-major host tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// A borrowed dense row-major tensor (zero-copy input from numpy or torch).
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    pub dtype: DType,
    pub shape: &'a [usize],
    pub data: &'a [u8],
}

impl HostTensor {
    pub fn view(&self) -> TensorView<'_> {
        TensorView { dtype: self.dtype, shape: &self.shape, data: &self.data }
    }
}

type KernelFn = unsafe extern "C" fn(*const *mut u8, *const i64, i64, i64);

pub struct Program {
    pub manifest: Manifest,
    _lib: libloading::Library,
    /// Step i's kernel (None for a GEMM or a sort).
    kernels: Vec<Option<KernelFn>>,
    /// Shapes and sizes of a program without symbols, computed at load (`exec::FixedPlan`).
    fixed: Option<exec::FixedPlan>,
    weights: Option<memmap2::Mmap>,
    dims: Vec<Vec<SymExpr>>,
    /// Per step: a GEMM's operand dims and strides (lhs dims, lhs strides, rhs dims, rhs strides).
    gemm_exprs: Vec<Option<[Vec<SymExpr>; 4]>>,
    /// The same, evaluated, where no symbol appears: a call then evaluates nothing.
    gemm_consts: Vec<Option<[Vec<i64>; 4]>>,
    dtypes: Vec<DType>,
    /// Temporaries for the last seen shapes, reused by the next call with the same shapes.
    arena: std::sync::Mutex<Option<Arena>>,
    /// Scratch for a GEMM rhs repacked row-major at run time (see `fn gemm`), kept across calls.
    pack: std::sync::Mutex<Vec<u64>>,
    /// The f32 accumulator of f16/bf16 GEMMs, kept across calls (fresh pages cost more than the
    /// product's own memory traffic).
    narrow_acc: std::sync::Mutex<Vec<f32>>,
}

/// Memory for temporaries: buffers whose lifetimes do not overlap share one slot.
struct Arena {
    shapes: Vec<Vec<i64>>,
    /// `run_fixed`'s buffer table with the weights' and these slots' addresses filled in
    /// (inputs and outputs are the caller's per call); empty until a fixed run builds it.
    template: Vec<usize>,
    slots: Vec<Vec<u64>>,
    /// Slot of each temp buffer (None for arguments).
    slot_of: Vec<Option<usize>>,
}

/// Words in a cache line.
const LINE_WORDS: usize = 8;

impl Arena {
    /// Greedy first-fit over the step order: a temp's slot is free again after its last reader.
    fn plan(man: &Manifest, shapes: Vec<Vec<i64>>, nbytes: &[usize]) -> Arena {
        let n = man.buffers.len();
        let mut first = vec![usize::MAX; n];
        let mut last = vec![0usize; n];
        for (i, st) in man.steps.iter().enumerate() {
            for w in st.writes() {
                first[w] = first[w].min(i);
                last[w] = last[w].max(i);
            }
            for r in st.reads() {
                last[r] = last[r].max(i);
            }
        }
        // Outputs get fresh memory each call (it becomes the returned tensor), not arena slots.
        for o in &man.outputs {
            first[o.buf] = usize::MAX;
        }
        let bytes = |b: usize| nbytes[b].div_ceil(8) + 1;
        let mut slots: Vec<(usize, usize)> = Vec::new(); // (words, free after step)
        let mut slot_of = vec![None; n];
        let mut order: Vec<usize> =
            (0..n).filter(|&b| man.buffers[b].kind == BufKind::Temp && first[b] != usize::MAX).collect();
        order.sort_by_key(|&b| first[b]);
        for b in order {
            let need = bytes(b);
            let pick = slots.iter().position(|&(_, free_after)| free_after < first[b] && free_after != usize::MAX);
            let s = match pick {
                Some(s) => {
                    slots[s].0 = slots[s].0.max(need);
                    s
                }
                None => {
                    slots.push((need, 0));
                    slots.len() - 1
                }
            };
            slots[s].1 = last[b];
            slot_of[b] = Some(s);
        }
        // Each slot starts at its own offset within a page: large allocations are page-aligned
        // alike, and a kernel reading one slot at the same in-page offset as it writes another
        // stalls on 4K aliasing (a batch norm backward pass over 8 MB: 1.8 ms where the same
        // pass between staggered slots took 0.3). The offset is whole cache lines past a 64-byte
        // boundary (malloc's large blocks start 16 bytes into a page): MKL wrote a product
        // 16 bytes off a cache line 1.2x slower (4096x4096·4096x1024: 236 ms against 200).
        let slots =
            slots.into_iter().enumerate().map(|(s, (w, _))| vec![0u64; w + Arena::skew(s) + LINE_WORDS]).collect();
        Arena { shapes, template: Vec::new(), slots, slot_of }
    }

    /// Words before slot `s`'s data: a different multiple of 64 bytes per slot.
    fn skew(s: usize) -> usize {
        (s % 31 + 1) * LINE_WORDS
    }

    /// Slot `s`'s data: 64-byte aligned.
    fn slot_ptr(&mut self, s: usize) -> *mut u8 {
        let slot = &mut self.slots[s];
        let addr = slot.as_ptr() as usize;
        let lead = (addr.next_multiple_of(LINE_WORDS * 8) - addr) / 8;
        let p = slot[lead + Arena::skew(s)..].as_mut_ptr() as *mut u8;
        debug_assert!((p as usize).is_multiple_of(LINE_WORDS * 8));
        p
    }
}

fn parse_dims(v: &[String]) -> Result<Vec<SymExpr>, String> {
    v.iter().map(|d| SymExpr::parse(d).map_err(|e| e.to_string())).collect()
}

fn parse_dtype(s: &str) -> Result<DType, String> {
    DType::from_mlir_name(s).ok_or_else(|| format!("unknown dtype `{s}` in manifest"))
}

/// Host CPU features as LLVM spells them (`+avx2`), for the load-time check.
pub fn host_features() -> Vec<String> {
    let (_, _, f) = match super::codegen::host_machine() {
        Ok(x) => x,
        Err(_) => return vec![],
    };
    f.split(',').filter(|x| x.starts_with('+')).map(|x| x.to_string()).collect()
}

impl Program {
    pub fn load(dir: &Path) -> Result<Program, String> {
        let text = std::fs::read_to_string(dir.join("manifest.json"))
            .map_err(|e| format!("cannot read manifest.json: {e}"))?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| format!("manifest.json is malformed: {e}"))?;
        let host = host_features();
        let missing: Vec<&String> = manifest.cpu_features.iter().filter(|f| !host.contains(f)).collect();
        if !missing.is_empty() {
            return Err(format!(
                "this artifact was compiled for a CPU with features this machine lacks ({}); recompile it here",
                missing.iter().take(8).map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
        // Before anything is mapped or run: a damaged kernels.so would be executed.
        crate::checksum::verify(dir, &manifest.format_version, &manifest.files)?;
        let so = dir.join("kernels.so");
        // SAFETY: the library is Ember's own generated code; it has no initializers.
        let lib = unsafe { libloading::Library::new(&so) }.map_err(|e| format!("cannot load {}: {e}", so.display()))?;
        let mut kernels = Vec::new();
        for s in &manifest.steps {
            kernels.push(match s {
                Step::Kernel { name, .. } => {
                    let f: libloading::Symbol<KernelFn> =
                        unsafe { lib.get(name.as_bytes()) }.map_err(|e| format!("kernels.so lacks `{name}`: {e}"))?;
                    Some(*f)
                }
                Step::Gemm(_) | Step::Sort { .. } | Step::Routine(_) => None,
            });
        }
        let weights = if manifest.weights.is_empty() {
            None
        } else {
            let f =
                std::fs::File::open(dir.join("weights.bin")).map_err(|e| format!("cannot open weights.bin: {e}"))?;
            // SAFETY: read-only map of the artifact's own weights file.
            let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("cannot map weights.bin: {e}"))?;
            for w in &manifest.weights {
                if w.offset.checked_add(w.bytes).is_none_or(|end| end > map.len() as u64) {
                    return Err(format!("weights.bin is truncated: `{}` runs past its end", w.name));
                }
            }
            Some(map)
        };
        let dims: Vec<Vec<SymExpr>> = manifest.buffers.iter().map(|b| parse_dims(&b.dims)).collect::<Result<_, _>>()?;
        let dtypes: Vec<DType> = manifest.buffers.iter().map(|b| parse_dtype(&b.dtype)).collect::<Result<_, _>>()?;
        let gemm_exprs: Vec<Option<[Vec<SymExpr>; 4]>> = manifest
            .steps
            .iter()
            .map(|st| match st {
                Step::Gemm(g) => Ok(Some([
                    parse_dims(&g.lhs.dims)?,
                    parse_dims(&g.lhs.strides)?,
                    parse_dims(&g.rhs.dims)?,
                    parse_dims(&g.rhs.strides)?,
                ])),
                Step::Kernel { .. } | Step::Sort { .. } | Step::Routine(_) => Ok(None),
            })
            .collect::<Result<_, String>>()?;
        let gemm_consts = gemm_exprs
            .iter()
            .map(|e: &Option<[Vec<SymExpr>; 4]>| {
                let eval = |v: &Vec<SymExpr>| v.iter().map(|x| x.eval(&|_| None)).collect::<Option<Vec<i64>>>();
                let [a, b, c, d] = e.as_ref()?;
                Some([eval(a)?, eval(b)?, eval(c)?, eval(d)?])
            })
            .collect();
        let fixed = exec::FixedPlan::new(&manifest, &dims, &dtypes);
        Ok(Program {
            fixed,
            manifest,
            _lib: lib,
            kernels,
            weights,
            dims,
            gemm_exprs,
            gemm_consts,
            dtypes,
            arena: std::sync::Mutex::new(None),
            pack: std::sync::Mutex::new(Vec::new()),
            narrow_acc: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Binds symbols from input shapes and checks every input against its declared type.
    fn bind(&self, inputs: &[TensorView]) -> Result<HashMap<String, i64>, String> {
        let man = &self.manifest;
        if inputs.len() != man.inputs.len() {
            return Err(format!("the model takes {} inputs, got {}", man.inputs.len(), inputs.len()));
        }
        let mut env: HashMap<String, i64> = HashMap::new();
        for (i, (t, info)) in inputs.iter().zip(&man.inputs).enumerate() {
            let want = self.dtypes[info.buf];
            if t.dtype != want {
                return Err(format!(
                    "input {i} (`{}`) must be {}, got {}",
                    info.name,
                    want.torch_name(),
                    t.dtype.torch_name()
                ));
            }
            let dims = &self.dims[info.buf];
            if dims.len() != t.shape.len() {
                return Err(format!(
                    "input {i} (`{}`) must have rank {}, got shape {:?}",
                    info.name,
                    dims.len(),
                    t.shape
                ));
            }
            for (d, &n) in dims.iter().zip(t.shape) {
                if let SymExpr::Sym(s) = d {
                    let n = i64::try_from(n).map_err(|_| {
                        format!("input {i} (`{}`): size {n} for `{s}` does not fit in 64 bits", info.name)
                    })?;
                    if let Some(&old) = env.get(s) {
                        if old != n {
                            return Err(format!(
                                "input {i} (`{}`): size {n} for `{s}` disagrees with {old} from an earlier input",
                                info.name
                            ));
                        }
                    }
                    env.insert(s.clone(), n);
                }
            }
        }
        for s in &man.symbols {
            let v = *env
                .get(&s.name)
                .ok_or_else(|| format!("symbol `{}` is not a plain input dim; cannot bind it", s.name))?;
            if v < s.min || s.max.is_some_and(|m| v > m) {
                let hi = s.max.map(|m| m.to_string()).unwrap_or_else(|| "inf".into());
                return Err(format!("size {v} for `{}` is outside the compiled range [{}, {hi}]", s.name, s.min));
            }
        }
        for (i, (t, info)) in inputs.iter().zip(&man.inputs).enumerate() {
            let dims = &self.dims[info.buf];
            let want: Vec<i64> = dims.iter().map(|d| d.eval(&|s| env.get(s).copied()).unwrap_or(-1)).collect();
            if want.iter().zip(t.shape).any(|(&w, &n)| i64::try_from(n) != Ok(w)) {
                return Err(format!("input {i} (`{}`) must have shape {want:?}, got {:?}", info.name, t.shape));
            }
        }
        Ok(env)
    }

    /// Whether no dim is symbolic (`run_fixed` applies).
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }

    /// Whether a call of this program without symbols is over in about a microsecond (a few
    /// steps over a few thousand elements): too short to be worth releasing the caller's GIL.
    pub fn brief(&self) -> bool {
        self.fixed.as_ref().is_some_and(|f| f.brief)
    }

    pub fn run(&self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, String> {
        let views: Vec<TensorView> = inputs.iter().map(|t| t.view()).collect();
        self.run_views(&views)
    }

    pub fn run_views(&self, inputs: &[TensorView]) -> Result<Vec<HostTensor>, String> {
        self.run_inner(inputs, None)
    }

    /// Runs with every output written into caller memory (`outputs[i]` = (address, byte length)
    /// receives output i, dense row-major), so an embedding runtime (torch.compile, the eager
    /// scheduler) hands its own tensors to the kernels and nothing is copied back. A length that
    /// is not the output's size (for symbolic dims, at these inputs' sizes) is an error before
    /// anything runs. Returns the output shapes.
    ///
    /// # Safety
    /// Each `outputs[i]` must point at writable memory of its stated length, aligned to 16 bytes,
    /// not overlapping an input or another output.
    pub unsafe fn run_into(
        &self,
        inputs: &[TensorView],
        outputs: &[(*mut u8, usize)],
    ) -> Result<Vec<Vec<usize>>, String> {
        if outputs.len() != self.manifest.outputs.len() {
            return Err(format!(
                "the model has {} outputs, got {} output buffers",
                self.manifest.outputs.len(),
                outputs.len()
            ));
        }
        Ok(self.run_inner(inputs, Some(outputs))?.into_iter().map(|t| t.shape).collect())
    }
}
