//! Loads a CPU artifact (manifest, `kernels.so`, `weights.bin`) and runs it.
//!
//! Symbols are bound from the input shapes at each call, so any size inside the bounds runs the
//! same code. Weights are memory-mapped and read in place; temporaries are allocated once per
//! loaded program and reused while shapes stay the same.

use super::plan::{BufKind, Buffer, GemmStep, Step};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

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
    /// Size and SHA-256 of every other file of the artifact, checked at load (`checksum`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, crate::checksum::FileSum>,
}

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
    kernels: HashMap<String, KernelFn>,
    weights: Option<memmap2::Mmap>,
    dims: Vec<Vec<SymExpr>>,
    /// Per step: a GEMM's operand dims and strides (lhs dims, lhs strides, rhs dims, rhs strides).
    gemm_exprs: Vec<Option<[Vec<SymExpr>; 4]>>,
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
    slots: Vec<Vec<u64>>,
    /// Slot of each temp buffer (None for arguments).
    slot_of: Vec<Option<usize>>,
}

impl Arena {
    /// Greedy first-fit over the step order: a temp's slot is free again after its last reader.
    fn plan(man: &Manifest, shapes: Vec<Vec<i64>>, nbytes: &[usize]) -> Arena {
        let n = man.buffers.len();
        let mut first = vec![usize::MAX; n];
        let mut last = vec![0usize; n];
        for (i, st) in man.steps.iter().enumerate() {
            let (out, reads): (usize, Vec<usize>) = match st {
                Step::Kernel { out, args, also, .. } => {
                    for &o in also {
                        first[o] = first[o].min(i);
                        last[o] = last[o].max(i);
                    }
                    (*out, args.clone())
                }
                Step::Gemm(g) => (g.out, vec![g.lhs.buf, g.rhs.buf]),
                Step::Sort { out, src, .. } => (*out, vec![*src]),
            };
            first[out] = first[out].min(i);
            last[out] = last[out].max(i);
            for r in reads {
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
        Arena { shapes, slots: slots.into_iter().map(|(w, _)| vec![0u64; w]).collect(), slot_of }
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
        let mut kernels = HashMap::new();
        for s in &manifest.steps {
            if let Step::Kernel { name, .. } = s {
                let f: libloading::Symbol<KernelFn> =
                    unsafe { lib.get(name.as_bytes()) }.map_err(|e| format!("kernels.so lacks `{name}`: {e}"))?;
                kernels.insert(name.clone(), *f);
            }
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
        let dims = manifest.buffers.iter().map(|b| parse_dims(&b.dims)).collect::<Result<_, _>>()?;
        let dtypes = manifest.buffers.iter().map(|b| parse_dtype(&b.dtype)).collect::<Result<_, _>>()?;
        let gemm_exprs = manifest
            .steps
            .iter()
            .map(|st| match st {
                Step::Gemm(g) => Ok(Some([
                    parse_dims(&g.lhs.dims)?,
                    parse_dims(&g.lhs.strides)?,
                    parse_dims(&g.rhs.dims)?,
                    parse_dims(&g.rhs.strides)?,
                ])),
                Step::Kernel { .. } | Step::Sort { .. } => Ok(None),
            })
            .collect::<Result<_, String>>()?;
        Ok(Program {
            manifest,
            _lib: lib,
            kernels,
            weights,
            dims,
            gemm_exprs,
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

    pub fn run(&self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, String> {
        let views: Vec<TensorView> = inputs.iter().map(|t| t.view()).collect();
        self.run_views(&views)
    }

    pub fn run_views(&self, inputs: &[TensorView]) -> Result<Vec<HostTensor>, String> {
        self.run_inner(inputs, None)
    }

    /// Runs with every output written into caller memory (`outputs[i]` holds output i's bytes,
    /// dense row-major), so an embedding runtime (the eager scheduler) hands its own tensors
    /// to the kernels and nothing is copied back. Returns the output shapes.
    ///
    /// # Safety
    /// Each `outputs[i]` must point at writable memory of output i's byte size, aligned to 16
    /// bytes, not overlapping an input or another output.
    pub unsafe fn run_into(&self, inputs: &[TensorView], outputs: &[*mut u8]) -> Result<Vec<Vec<usize>>, String> {
        if outputs.len() != self.manifest.outputs.len() {
            return Err(format!(
                "the model has {} outputs, got {} output buffers",
                self.manifest.outputs.len(),
                outputs.len()
            ));
        }
        Ok(self.run_inner(inputs, Some(outputs))?.into_iter().map(|t| t.shape).collect())
    }

    /// With `into`, outputs go to the caller's memory and the returned tensors carry shapes only.
    fn run_inner(&self, inputs: &[TensorView], into: Option<&[*mut u8]>) -> Result<Vec<HostTensor>, String> {
        for (i, t) in inputs.iter().enumerate() {
            let need = t.shape.iter().try_fold(t.dtype.byte_size(), |n, &d| n.checked_mul(d));
            if need.is_none_or(|n| t.data.len() < n) {
                let need = need.map_or("more than memory can address".to_string(), |n| n.to_string());
                return Err(format!("input {i} holds {} bytes, its shape {:?} needs {need}", t.data.len(), t.shape));
            }
        }
        let env = self.bind(inputs)?;
        let man = &self.manifest;
        let sym_vals: Vec<i64> = man.symbols.iter().map(|s| env[&s.name]).collect();
        let eval = |e: &SymExpr| -> Result<i64, String> {
            e.eval(&|s| env.get(s).copied())
                .ok_or_else(|| format!("cannot evaluate `{e}` (it overflows 64 bits or divides by zero)"))
        };
        let shapes: Vec<Vec<i64>> =
            self.dims.iter().map(|d| d.iter().map(&eval).collect::<Result<_, _>>()).collect::<Result<_, _>>()?;
        // Every size below is this buffer's byte count: checked once here, since input sizes
        // and unbounded symbols can make any product overflow.
        let nbytes: Vec<usize> = shapes
            .iter()
            .zip(&self.dtypes)
            .enumerate()
            .map(|(b, (s, dt))| {
                s.iter().try_fold(dt.byte_size(), |n, &d| n.checked_mul(usize::try_from(d).ok()?)).ok_or_else(|| {
                    format!("buffer {b} would have shape {s:?}, which is negative or larger than memory can address")
                })
            })
            .collect::<Result<_, _>>()?;
        let mut guard = self.arena.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|a| a.shapes != shapes) {
            *guard = Some(Arena::plan(man, shapes.clone(), &nbytes));
        }
        let arena = guard.as_mut().unwrap();
        let mut ptrs: Vec<*mut u8> = vec![std::ptr::null_mut(); man.buffers.len()];
        // Kernels write outputs straight into the memory handed back to the caller (no copy);
        // malloc's alignment (16 bytes) covers every element type.
        let mut out_data: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut out_ptr: HashMap<usize, *mut u8> = HashMap::new();
        for (oi, o) in man.outputs.iter().enumerate() {
            if let Some(into) = into {
                if man.buffers[o.buf].kind == BufKind::Temp {
                    out_ptr.entry(o.buf).or_insert(into[oi]);
                }
                continue;
            }
            if man.buffers[o.buf].kind == BufKind::Temp && !out_data.contains_key(&o.buf) {
                let bytes = nbytes[o.buf];
                // A kernel writes every element of its buffer: zeroing it first would only add
                // a pass over memory (a GEMM's output stays zeroed, whatever the GEMM does).
                let by_kernel = man
                    .steps
                    .iter()
                    .any(|st| matches!(st, Step::Kernel { out, also, .. } if *out == o.buf || also.contains(&o.buf)));
                let v = if by_kernel && bytes > 0 { Vec::with_capacity(bytes) } else { vec![0u8; bytes.max(1)] };
                if v.as_ptr() as usize % 16 != 0 {
                    return Err("the allocator returned memory below 16-byte alignment".into());
                }
                out_data.insert(o.buf, v);
            }
        }
        let input_buf: HashMap<usize, usize> = man.inputs.iter().enumerate().map(|(i, x)| (x.buf, i)).collect();
        let weight_buf: HashMap<usize, &WeightInfo> = man.weights.iter().map(|w| (w.buf, w)).collect();
        for (b, buf) in man.buffers.iter().enumerate() {
            let bytes = nbytes[b];
            ptrs[b] = match buf.kind {
                BufKind::Arg(_) if input_buf.contains_key(&b) => inputs[input_buf[&b]].data.as_ptr() as *mut u8,
                BufKind::Arg(_) => {
                    let w = weight_buf
                        .get(&b)
                        .ok_or_else(|| format!("buffer {b} is an argument with no input or weight"))?;
                    if (w.bytes as u128) < bytes as u128 {
                        return Err(format!(
                            "weight `{}` has {} bytes in the manifest, but its type needs {bytes}",
                            w.name, w.bytes
                        ));
                    }
                    // Kernels and GEMMs never write argument buffers; the map stays read-only.
                    unsafe { self.weights.as_ref().unwrap().as_ptr().add(w.offset as usize) as *mut u8 }
                }
                BufKind::Temp if out_data.contains_key(&b) => out_data.get_mut(&b).unwrap().as_mut_ptr(),
                BufKind::Temp if out_ptr.contains_key(&b) => out_ptr[&b],
                BufKind::Temp => match arena.slot_of[b] {
                    Some(s) => arena.slots[s].as_mut_ptr() as *mut u8,
                    None => return Err(format!("buffer {b} ({bytes} bytes) is never written")),
                },
            };
        }
        // After the buffers: the status slot where a kernel stores the message of a gather
        // whose index was out of range (codegen's `ret`); checked after every kernel.
        let status = std::sync::atomic::AtomicPtr::<std::ffi::c_char>::new(std::ptr::null_mut());
        ptrs.push(&status as *const _ as *mut u8);
        let profile = std::env::var_os("EMBER_PROFILE").is_some();
        for (si, step) in man.steps.iter().enumerate() {
            let t0 = profile.then(std::time::Instant::now);
            match step {
                Step::Kernel { name, out, also, args } => {
                    let f = self.kernels[name];
                    let outer = shapes[*out].first().copied().unwrap_or(1);
                    // A row group's first root may be a small reduction ([rows]) while its rows
                    // are long: the work is the largest buffer it reads or writes.
                    let work: i64 = std::iter::once(out)
                        .chain(also)
                        .chain(args)
                        .map(|&b| shapes[b].iter().product::<i64>())
                        .max()
                        .unwrap_or(1)
                        .max(1);
                    run_kernel(f, &ptrs, &sym_vals, outer, work);
                    let err = status.load(std::sync::atomic::Ordering::Acquire);
                    if !err.is_null() {
                        // SAFETY: a NUL-terminated constant of the kernel library, which `self` keeps loaded.
                        return Err(unsafe { std::ffi::CStr::from_ptr(err) }.to_string_lossy().into_owned());
                    }
                }
                Step::Gemm(g) => self.gemm(g, self.gemm_exprs[si].as_ref().expect("parsed at load"), &ptrs, &eval)?,
                &Step::Sort { out, src, dim, descending } => {
                    argsort(self.dtypes[src], &shapes[src], dim, descending, ptrs[src], ptrs[out])?
                }
            }
            if let Some(t0) = t0 {
                let (kind, out) = match step {
                    Step::Kernel { name, out, .. } => (name.clone(), *out),
                    Step::Gemm(g) => ("gemm".to_string(), g.out),
                    Step::Sort { out, .. } => ("sort".to_string(), *out),
                };
                eprintln!("step {si:>3} {kind:<6} out {:?} {:.3} ms", shapes[out], t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (&b, v) in out_data.iter_mut() {
            if v.is_empty() {
                // SAFETY: every step has run, and the kernel that computes buffer `b` wrote all of
                // its bytes (the capacity it was allocated with).
                unsafe { v.set_len(nbytes[b]) };
            }
        }
        if let Some(into) = into {
            // An argument returned as is, or a value returned twice, is copied to its slot.
            let mut shapes_out = Vec::new();
            for (oi, o) in man.outputs.iter().enumerate() {
                let shape: Vec<usize> = shapes[o.buf].iter().map(|&d| d as usize).collect();
                let bytes = nbytes[o.buf];
                if ptrs[o.buf] != into[oi] && bytes > 0 {
                    unsafe { std::ptr::copy_nonoverlapping(ptrs[o.buf], into[oi], bytes) };
                }
                shapes_out.push(HostTensor { dtype: self.dtypes[o.buf], shape, data: Vec::new() });
            }
            return Ok(shapes_out);
        }
        Ok(man
            .outputs
            .iter()
            .map(|o| {
                let shape: Vec<usize> = shapes[o.buf].iter().map(|&d| d as usize).collect();
                let bytes = nbytes[o.buf];
                // An output returned twice, or an argument returned as is, is copied.
                let data = match out_data.remove(&o.buf) {
                    Some(mut v) => {
                        v.truncate(bytes);
                        v
                    }
                    None => unsafe { std::slice::from_raw_parts(ptrs[o.buf], bytes) }.to_vec(),
                };
                HostTensor { dtype: self.dtypes[o.buf], shape, data }
            })
            .collect())
    }

    fn gemm(
        &self,
        g: &GemmStep,
        exprs: &[Vec<SymExpr>; 4],
        ptrs: &[*mut u8],
        eval: &dyn Fn(&SymExpr) -> Result<i64, String>,
    ) -> Result<(), String> {
        let ld = |v: &[SymExpr]| -> Result<Vec<i64>, String> { v.iter().map(eval).collect() };
        let (ldims, lstr, rdims, rstr) = (ld(&exprs[0])?, ld(&exprs[1])?, ld(&exprs[2])?, ld(&exprs[3])?);
        let (m, k, n) = (ldims[g.lhs_free] as usize, ldims[g.lhs_contract] as usize, rdims[g.rhs_free] as usize);
        let batch: Vec<i64> = g.lhs_batch.iter().map(|&d| ldims[d]).collect();
        let nb: i64 = batch.iter().product();
        let dt = self.dtypes[g.out];
        let es = dt.byte_size();
        if m == 0 || n == 0 || batch.contains(&0) {
            return Ok(());
        }
        if k == 0 {
            // An empty contraction is zero; temporaries are reused, so write the zeros.
            let bytes = nb.max(1) as usize * m * n * es;
            unsafe { std::ptr::write_bytes(ptrs[g.out], 0, bytes) };
            return Ok(());
        }
        // Batch dims the rhs broadcasts (stride 0) and the lhs walks contiguously extend m: one
        // larger GEMM instead of several small ones (a Linear on a [b, t, d] input).
        let (mut m, mut batch) = (m, batch);
        let mut lbs: Vec<i64> = g.lhs_batch.iter().map(|&d| lstr[d]).collect();
        let mut rbs: Vec<i64> = g.rhs_batch.iter().map(|&d| rstr[d]).collect();
        while let (Some(&sz), Some(&ls), Some(&rs)) = (batch.last(), lbs.last(), rbs.last()) {
            if rs != 0 || ls != m as i64 * lstr[g.lhs_free] {
                break;
            }
            m *= sz as usize;
            batch.pop();
            lbs.pop();
            rbs.pop();
        }
        let nb = batch.iter().product::<i64>().max(1) as usize;
        let (lcs, lrs, rcs, rrs) = (
            lstr[g.lhs_contract] as isize,
            lstr[g.lhs_free] as isize,
            rstr[g.rhs_free] as isize,
            rstr[g.rhs_contract] as isize,
        );
        let (out, lhs, mut rhs) = (ptrs[g.out] as usize, ptrs[g.lhs.buf] as usize, ptrs[g.rhs.buf] as usize);
        let in_dt = self.dtypes[g.lhs.buf];
        let narrow = matches!(in_dt, DType::F16 | DType::BF16);
        if self.dtypes[g.rhs.buf] != in_dt || (in_dt != dt && !(narrow && dt == DType::F32)) {
            return Err(format!(
                "matmul of {} and {} into {} is not supported by the CPU target",
                in_dt.torch_name(),
                self.dtypes[g.rhs.buf].torch_name(),
                dt.torch_name()
            ));
        }
        if narrow {
            let p = NarrowProduct {
                dt: in_dt,
                wide_out: dt == DType::F32,
                nb,
                m,
                n,
                k,
                batch: &batch,
                lbs: &lbs,
                rbs: &rbs,
                lhs,
                lrs,
                lcs,
                rhs,
                rrs,
                rcs,
                out,
            };
            p.run(&mut self.narrow_acc.lock().unwrap_or_else(|e| e.into_inner()));
            return Ok(());
        }
        if !matches!(dt, DType::F32 | DType::F64) {
            return Err(format!("matmul in {} is not supported by the CPU target yet", dt.torch_name()));
        }
        let threads = rayon::current_num_threads();
        let fits_i32 = [m, n, k].iter().all(|&d| d <= i32::MAX as usize);
        if let Some(blas) = HOST_BLAS.get().filter(|_| fits_i32) {
            if let (Some(a), Some(b)) = (BlasOperand::of(lrs, lcs, m, k), BlasOperand::of(rrs, rcs, k, n)) {
                let (batch, lbs, rbs) = (&batch, &lbs, &rbs);
                let part = |bi: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
                    let (lo, ro) = batch_offsets(bi, batch, lbs, rbs);
                    let (lo, ro) = (lo + rows.start as isize * lrs, ro + cols.start as isize * rcs);
                    let oo = bi * m * n + rows.start * n + cols.start;
                    // SAFETY: offsets stay inside the operands (rows < m, cols < n, bi < nb).
                    unsafe {
                        let (l, r) =
                            ((lhs as *const u8).offset(lo * es as isize), (rhs as *const u8).offset(ro * es as isize));
                        blas.run(dt, rows.len(), cols.len(), k, l, a, r, b, (out as *mut u8).add(oo * es), n);
                    }
                };
                blas.split(nb, m, n, k, threads, part);
                return Ok(());
            }
        }
        let (mut rcs, mut rrs) = (rcs, rrs);
        // An rhs read through its transpose (nn.Linear's `x @ W.T` on a weight passed at run time:
        // eager regions, torch.compile graphs) packs slowly: for large products a row-major copy
        // costs less than it saves (measured on the GPT-2 block's 512×768×3072: 21.9 → ~11 ms).
        // Weights known at compile time are stored transposed instead (compiler::cpu).
        let mut pack = None;
        if rrs == 1 && rcs as usize >= k && m >= 256 && k * n >= 1 << 16 && rbs.iter().all(|&s| s == 0) {
            let mut buf = self.pack.lock().unwrap_or_else(|e| e.into_inner());
            let words = (k * n * es).div_ceil(8);
            if buf.len() < words {
                buf.resize(words, 0);
            }
            let dst = buf.as_mut_ptr() as usize;
            match dt {
                DType::F32 => transpose_rows::<f32>(rhs, rcs, k, n, dst),
                _ => transpose_rows::<f64>(rhs, rcs, k, n, dst),
            }
            (rhs, rcs, rrs) = (dst, 1, n as isize);
            pack = Some(buf);
        }
        let one = |bi: usize, par: gemm::Parallelism| {
            let (lo, ro) = batch_offsets(bi, &batch, &lbs, &rbs);
            let oo = bi * m * n;
            unsafe {
                let (dst, lhs, rhs) = (
                    (out as *mut u8).add(oo * es),
                    (lhs as *const u8).offset(lo * es as isize),
                    (rhs as *const u8).offset(ro * es as isize),
                );
                match dt {
                    DType::F32 => gemm::gemm(
                        m,
                        n,
                        k,
                        dst as *mut f32,
                        1,
                        n as isize,
                        false,
                        lhs as *const f32,
                        lcs,
                        lrs,
                        rhs as *const f32,
                        rcs,
                        rrs,
                        0.0f32,
                        1.0f32,
                        false,
                        false,
                        false,
                        par,
                    ),
                    _ => gemm::gemm(
                        m,
                        n,
                        k,
                        dst as *mut f64,
                        1,
                        n as isize,
                        false,
                        lhs as *const f64,
                        lcs,
                        lrs,
                        rhs as *const f64,
                        rcs,
                        rrs,
                        0.0f64,
                        1.0f64,
                        false,
                        false,
                        false,
                        par,
                    ),
                }
            }
        };
        if nb > 1 && threads > 1 && (nb % threads == 0 || nb >= 4 * threads) {
            // Many small products (attention's per-head GEMMs): one per task, no split inside,
            // so the pool synchronizes once instead of once per product.
            use rayon::prelude::*;
            (0..nb).into_par_iter().for_each(|bi| one(bi, gemm::Parallelism::None));
        } else {
            let par = if m * n * k >= 64 * 64 * 64 { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
            (0..nb).for_each(|bi| one(bi, par));
        }
        drop(pack);
        Ok(())
    }
}

/// A batched f16/bf16 product, accumulated in f32 and rounded once, as torch's CPU kernels do.
/// Operands are element offsets and strides into 2-byte buffers (addresses as `usize`).
struct NarrowProduct<'a> {
    dt: DType,
    /// The result is the f32 accumulator itself (`ten.dot_general {dtype = f32}`), not rounded.
    wide_out: bool,
    nb: usize,
    m: usize,
    n: usize,
    k: usize,
    batch: &'a [i64],
    lbs: &'a [i64],
    rbs: &'a [i64],
    lhs: usize,
    lrs: isize,
    lcs: isize,
    rhs: usize,
    rrs: isize,
    rcs: isize,
    out: usize,
}

impl NarrowProduct<'_> {
    /// Runs the product with `acc` as its f32 accumulator (grown as needed, never shrunk).
    fn run(&self, acc: &mut Vec<f32>) {
        use rayon::prelude::*;
        let (m, n, k) = (self.m, self.n, self.k);
        let threads = rayon::current_num_threads();
        if !self.wide_out && acc.len() < self.nb * m * n {
            acc.resize(self.nb * m * n, 0.0);
        }
        // An f32 result accumulates in place; a narrow one in the kept scratch, rounded after.
        let accp = if self.wide_out { self.out } else { acc.as_ptr() as usize };
        let dnnl = onednn().filter(|_| self.dt == DType::BF16);
        if let (Some(dnnl), Some(a), Some(b)) =
            (dnnl, BlasOperand::of(self.lrs, self.lcs, m, k), BlasOperand::of(self.rrs, self.rcs, k, n))
        {
            // oneDNN multiplies the bf16 operands in place (AVX512-BF16/AMX where the CPU has
            // them: torch's own bf16 GEMM speed) into the f32 accumulator, threading itself.
            // Block [rows, cols] of product bi.
            let product = |bi: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
                let (lo, ro) = batch_offsets(bi, self.batch, self.lbs, self.rbs);
                let (lo, ro) = (lo + rows.start as isize * self.lrs, ro + cols.start as isize * self.rcs);
                // SAFETY: offsets stay inside the operands (rows < m, cols < n, bi < nb); the
                // block of `acc` it writes. oneDNN is row-major, so `BlasOperand`'s (trans, ld)
                // read the same layouts.
                unsafe {
                    let (l, r) = ((self.lhs as *const u16).offset(lo), (self.rhs as *const u16).offset(ro));
                    let c = (accp as *mut f32).add(bi * m * n + rows.start * n + cols.start);
                    let (bm, bn) = (rows.len() as i64, cols.len() as i64);
                    (dnnl.gemm_bf16)(
                        a.trans as _,
                        b.trans as _,
                        bm,
                        bn,
                        k as i64,
                        1.0,
                        l,
                        a.ld as i64,
                        r,
                        b.ld as i64,
                        0.0,
                        c,
                        n as i64,
                    );
                }
            };
            // Every call single-threaded on rayon's pool (whole products per task when there are
            // several, else the longer side in blocks of 16, 2 per thread), never an OpenMP team:
            // its threads spin after each call and slowed the rayon kernels that followed
            // (a GPT-2 block's LayerNorm after a GEMM: 0.1 -> 2.9 ms, measured).
            match dnnl.omp_set_num_threads.filter(|_| threads > 1 && self.nb * m * n * k >= 1 << 18) {
                // SAFETY: a per-thread OpenMP setting.
                Some(one_thread) => split_over_pool(self.nb, m, n, threads, &|| unsafe { one_thread(1) }, product),
                None => (0..self.nb).for_each(|bi| product(bi, 0..m, 0..n)),
            }
        } else {
            // Converted operands: each product's operands widened to dense f32, then the f32 GEMM.
            let blas = HOST_BLAS.get().filter(|_| [m, n, k].iter().all(|&d| d <= i32::MAX as usize));
            let one = |bi: usize, par: gemm::Parallelism| {
                let (lo, ro) = batch_offsets(bi, self.batch, self.lbs, self.rbs);
                let a = widen(self.dt, self.lhs, lo, m, k, self.lrs, self.lcs);
                let b = widen(self.dt, self.rhs, ro, k, n, self.rrs, self.rcs);
                // SAFETY: `a`, `b` are dense [m, k] and [k, n]; product bi's [m, n] block of `acc`.
                unsafe {
                    let c = (accp as *mut f32).add(bi * m * n);
                    match blas {
                        Some(blas) => blas.run(
                            DType::F32,
                            m,
                            n,
                            k,
                            a.as_ptr() as _,
                            BlasOperand { trans: b'N', ld: k.max(1) as i32 },
                            b.as_ptr() as _,
                            BlasOperand { trans: b'N', ld: n.max(1) as i32 },
                            c as _,
                            n,
                        ),
                        None => gemm::gemm(
                            m,
                            n,
                            k,
                            c,
                            1,
                            n as isize,
                            false,
                            a.as_ptr(),
                            1,
                            k as isize,
                            b.as_ptr(),
                            1,
                            n as isize,
                            0.0f32,
                            1.0f32,
                            false,
                            false,
                            false,
                            par,
                        ),
                    }
                }
            };
            if self.nb > 1 && threads > 1 {
                (0..self.nb).into_par_iter().for_each(|bi| one(bi, gemm::Parallelism::None));
            } else {
                (0..self.nb).for_each(|bi| one(bi, gemm::Parallelism::Rayon(0)));
            }
        }
        if self.wide_out {
            return;
        }
        let (dt, out) = (self.dt, self.out);
        acc[..self.nb * m * n].par_chunks(1 << 14).enumerate().for_each(|(i, c)| {
            // SAFETY: `out` holds nb·m·n narrow elements; chunk i covers [i·2¹⁴, ..+c.len()).
            let dst = unsafe { std::slice::from_raw_parts_mut((out as *mut u16).add(i << 14), c.len()) };
            narrow_into(dt, c, dst);
        });
    }
}

/// oneDNN's row-major bf16 GEMM into f32 (`dnnl_gemm_bf16bf16f32`).
type DnnlGemmBf16 =
    unsafe extern "C" fn(i8, i8, i64, i64, i64, f32, *const u16, i64, *const u16, i64, f32, *mut f32, i64) -> i32;

/// oneDNN, when this process can load it: the bf16 GEMMs' library (the `gemm` crate has no
/// bf16, and converting operands to f32 halves the speed of CPUs with bf16 instructions).
struct OneDnn {
    _lib: libloading::Library,
    gemm_bf16: DnnlGemmBf16,
    /// The OpenMP runtime oneDNN threads with (its `omp_set_num_threads`, per calling thread).
    omp_set_num_threads: Option<unsafe extern "C" fn(i32)>,
}

/// Where oneDNN is looked for, in order: `$EMBER_ONEDNN` (a path to `libdnnl.so.3`), the
/// loader's search path, then the `lib/` of the Python environment Ember uses (`$EMBER_PYTHON`,
/// else ~/.cache/ember/venv, where `make setup` installs the `onednn-cpu-gomp` wheel).
fn onednn() -> Option<&'static OneDnn> {
    static DNNL: std::sync::OnceLock<Option<OneDnn>> = std::sync::OnceLock::new();
    DNNL.get_or_init(|| {
        let mut paths: Vec<std::path::PathBuf> = std::env::var_os("EMBER_ONEDNN").map(Into::into).into_iter().collect();
        paths.push("libdnnl.so.3".into());
        let python = std::env::var_os("EMBER_PYTHON").map(std::path::PathBuf::from);
        let venv = python
            .as_deref()
            .and_then(|p| p.parent()?.parent())
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/ember/venv")));
        paths.extend(venv.map(|v| v.join("lib/libdnnl.so.3")));
        paths.into_iter().find_map(|p| {
            // SAFETY: oneDNN's initializers have no preconditions; the symbol has the C type above.
            let lib = unsafe { libloading::Library::new(&p) }.ok()?;
            let gemm_bf16 = *unsafe { lib.get::<DnnlGemmBf16>(b"dnnl_gemm_bf16bf16f32") }.ok()?;
            // Found through the library's dependencies (libgomp for the gomp build).
            let omp_set_num_threads =
                unsafe { lib.get::<unsafe extern "C" fn(i32)>(b"omp_set_num_threads") }.ok().map(|f| *f);
            Some(OneDnn { _lib: lib, gemm_bf16, omp_set_num_threads })
        })
    })
    .as_ref()
}

/// Whether f16/bf16 GEMMs find oneDNN (bf16 runs on it; f16 and the rest widen to f32).
pub fn onednn_loaded() -> bool {
    onednn().is_some()
}

/// The [rows, cols] matrix at element offset `off` of the 2-byte buffer `base` (strides `rs`,
/// `cs`), widened to a dense row-major f32 matrix.
fn widen(dt: DType, base: usize, off: isize, rows: usize, cols: usize, rs: isize, cs: isize) -> Vec<f32> {
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
    let mut v = vec![0f32; rows * cols];
    let src = base as *const u16;
    let mut row = vec![0u16; cols];
    for (r, out) in v.chunks_mut(cols.max(1)).enumerate() {
        for (c, b) in row.iter_mut().enumerate() {
            // SAFETY: the caller's strides address the operand's elements.
            *b = unsafe { *src.offset(off + r as isize * rs + c as isize * cs) };
        }
        // half's slice conversions use F16C where the CPU has it (detected at run time).
        match dt {
            DType::BF16 => row.reinterpret_cast::<half::bf16>().convert_to_f32_slice(out),
            _ => row.reinterpret_cast::<half::f16>().convert_to_f32_slice(out),
        }
    }
    v
}

/// f32 values rounded (to nearest even) into f16/bf16 bit patterns.
fn narrow_into(dt: DType, src: &[f32], dst: &mut [u16]) {
    use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
    if dt == DType::BF16 {
        // Round to nearest even on the bit pattern (NaN stays a quiet NaN): branch-free, so
        // LLVM vectorizes it, where half's per-element conversion does not.
        dst.iter_mut().zip(src).for_each(|(d, &s)| {
            let b = s.to_bits();
            let r = (b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16) as u16;
            *d = if s.is_nan() { ((b >> 16) as u16) | 0x40 } else { r };
        });
    } else {
        dst.reinterpret_cast_mut::<half::f16>().convert_from_f32_slice(src);
    }
}

/// Runs `part(product, rows, cols)` over `nb` products of [m, n] on rayon's pool, each task
/// calling `single` first (its library at one thread): whole products per task when there are
/// at least as many as threads, else each product's longer side in blocks of 16 (whole vector
/// registers), 2 per thread.
fn split_over_pool(
    nb: usize,
    m: usize,
    n: usize,
    threads: usize,
    single: &(dyn Fn() + Sync),
    part: impl Fn(usize, std::ops::Range<usize>, std::ops::Range<usize>) + Sync,
) {
    use rayon::prelude::*;
    if nb >= threads {
        (0..nb).into_par_iter().for_each(|bi| {
            single();
            part(bi, 0..m, 0..n)
        });
        return;
    }
    let (len, by_rows) = if n >= m { (n, false) } else { (m, true) };
    let per = len.div_ceil(2 * threads).div_ceil(16) * 16;
    let blocks = len.div_ceil(per);
    (0..nb * blocks).into_par_iter().for_each(|t| {
        single();
        let (bi, c) = (t / blocks, t % blocks);
        let r = c * per..((c + 1) * per).min(len);
        if by_rows {
            part(bi, r, 0..n)
        } else {
            part(bi, 0..m, r)
        }
    });
}

/// Element offsets of product `bi`'s lhs and rhs in a batched GEMM (batch dims row-major).
fn batch_offsets(bi: usize, batch: &[i64], lbs: &[i64], rbs: &[i64]) -> (isize, isize) {
    let (mut rem, mut lo, mut ro) = (bi as i64, 0i64, 0i64);
    for j in (0..batch.len()).rev() {
        let ix = rem % batch[j];
        rem /= batch[j];
        lo += ix * lbs[j];
        ro += ix * rbs[j];
    }
    (lo as isize, ro as isize)
}

/// A Fortran-interface BLAS GEMM (`sgemm_`/`dgemm_`, LP64): column-major, arguments by pointer.
type FortranGemm<T> = unsafe extern "C" fn(
    *const u8,
    *const u8,
    *const i32,
    *const i32,
    *const i32,
    *const T,
    *const T,
    *const i32,
    *const T,
    *const i32,
    *const T,
    *mut T,
    *const i32,
);

/// The BLAS of the process Ember runs in, when it registered one (`set_host_blas`).
pub struct HostBlas {
    sgemm: FortranGemm<f32>,
    dgemm: FortranGemm<f64>,
    /// Sets the calling thread's BLAS thread count (MKL's `MKL_Set_Num_Threads_Local`).
    threads_local: Option<unsafe extern "C" fn(i32) -> i32>,
}

static HOST_BLAS: std::sync::OnceLock<HostBlas> = std::sync::OnceLock::new();

/// Registers the process's BLAS for GEMM steps. Inside a PyTorch process that is torch's own
/// (MKL on x86), which is faster than the `gemm` crate and reads transposed operands in place.
/// With `threads_local` (0 for none) every call runs single-threaded on rayon's pool, split
/// over its threads: a BLAS thread pool of its own (OpenMP) spins after each call and slows the
/// kernels that follow on rayon's threads. Returns false when one was registered already.
///
/// # Safety
/// `sgemm` and `dgemm` must be the addresses of LP64 Fortran-interface `sgemm_` and `dgemm_`,
/// and `threads_local` 0 or that of a C `int f(int)` setting the calling thread's BLAS thread
/// count, all staying loaded for the life of the process.
pub unsafe fn set_host_blas(sgemm: usize, dgemm: usize, threads_local: usize) -> bool {
    let blas = unsafe {
        HostBlas {
            sgemm: std::mem::transmute::<usize, FortranGemm<f32>>(sgemm),
            dgemm: std::mem::transmute::<usize, FortranGemm<f64>>(dgemm),
            threads_local: (threads_local != 0)
                .then(|| std::mem::transmute::<usize, unsafe extern "C" fn(i32) -> i32>(threads_local)),
        }
    };
    HOST_BLAS.set(blas).is_ok()
}

/// Whether GEMM steps run on a registered host BLAS.
pub fn host_blas() -> bool {
    HOST_BLAS.get().is_some()
}

/// How a row-major-indexed matrix operand [rows, cols] with strides (rs, cs) is read by a
/// column-major BLAS as its transpose [cols, rows]: untransposed when rows are contiguous in
/// memory (cs = 1), transposed when columns are (rs = 1). None for any other layout.
#[derive(Clone, Copy)]
struct BlasOperand {
    trans: u8,
    ld: i32,
}

impl BlasOperand {
    fn of(rs: isize, cs: isize, rows: usize, cols: usize) -> Option<BlasOperand> {
        let fits = |ld: isize, min: usize| ld >= min.max(1) as isize && ld <= i32::MAX as isize;
        if cs == 1 && fits(rs, cols) {
            Some(BlasOperand { trans: b'N', ld: rs as i32 })
        } else if rs == 1 && fits(cs, rows) {
            Some(BlasOperand { trans: b'T', ld: cs as i32 })
        } else if rows == 1 && cs == 1 {
            Some(BlasOperand { trans: b'N', ld: cols.max(1) as i32 })
        } else if cols == 1 && rs == 1 {
            Some(BlasOperand { trans: b'T', ld: rows.max(1) as i32 })
        } else {
            None
        }
    }
}

impl HostBlas {
    /// Runs `part(product, rows, cols)` over `nb` products of [m, n] (contraction k): whole
    /// products per rayon task when there are several, else each product's rows or columns
    /// split over the pool, every call single-threaded. Without `threads_local` the BLAS
    /// threads itself and every product runs on the calling thread.
    fn split(
        &self,
        nb: usize,
        m: usize,
        n: usize,
        k: usize,
        threads: usize,
        part: impl Fn(usize, std::ops::Range<usize>, std::ops::Range<usize>) + Sync,
    ) {
        let Some(local) = self.threads_local.filter(|_| threads > 1 && nb * m * n * k >= 1 << 18) else {
            (0..nb).for_each(|bi| part(bi, 0..m, 0..n));
            return;
        };
        // SAFETY: `set_host_blas`'s contract; a thread-local setting, idempotent.
        split_over_pool(
            nb,
            m,
            n,
            threads,
            &|| {
                unsafe { local(1) };
            },
            part,
        );
    }

    /// dst[m, n] (row-major, row stride ldd) = lhs[m, k] · rhs[k, n]. Column-major BLAS computes
    /// the transpose, dstᵀ[n, m] = rhsᵀ · lhsᵀ, and a row-major matrix is its transpose
    /// column-major.
    ///
    /// # Safety
    /// The pointers must address the operands as `a` and `b` describe, and `dst` m rows of ldd.
    #[allow(clippy::too_many_arguments)]
    unsafe fn run(
        &self,
        dt: DType,
        m: usize,
        n: usize,
        k: usize,
        lhs: *const u8,
        a: BlasOperand,
        rhs: *const u8,
        b: BlasOperand,
        dst: *mut u8,
        ldd: usize,
    ) {
        let (mi, ni, ki) = (m as i32, n as i32, k as i32);
        let ldc = ldd.max(1) as i32;
        unsafe {
            match dt {
                DType::F32 => (self.sgemm)(
                    &b.trans,
                    &a.trans,
                    &ni,
                    &mi,
                    &ki,
                    &1.0f32,
                    rhs as *const f32,
                    &b.ld,
                    lhs as *const f32,
                    &a.ld,
                    &0.0f32,
                    dst as *mut f32,
                    &ldc,
                ),
                _ => (self.dgemm)(
                    &b.trans,
                    &a.trans,
                    &ni,
                    &mi,
                    &ki,
                    &1.0f64,
                    rhs as *const f64,
                    &b.ld,
                    lhs as *const f64,
                    &a.ld,
                    &0.0f64,
                    dst as *mut f64,
                    &ldc,
                ),
            }
        }
    }
}

/// Stable argsort of each row along `dim` of the dense `[outer, n, inner]` view of `src`
/// (torch's order: NaN after every number, before them when descending), written as int64.
fn argsort(dt: DType, shape: &[i64], dim: usize, descending: bool, src: *const u8, out: *mut u8) -> Result<(), String> {
    use rayon::prelude::*;
    let n = shape[dim] as usize;
    let outer: usize = shape[..dim].iter().product::<i64>() as usize;
    let inner: usize = shape[dim + 1..].iter().product::<i64>() as usize;
    let rows = outer * inner;
    if n == 0 || rows == 0 {
        return Ok(());
    }
    let (src, out) = (src as usize, out as usize);
    fn sort_rows<T: Copy + PartialOrd + Send + Sync>(
        src: usize,
        out: usize,
        n: usize,
        inner: usize,
        rows: usize,
        descending: bool,
        nan: fn(T) -> bool,
    ) {
        let run = |r: usize| {
            let (o, i) = (r / inner, r % inner);
            let base = o * n * inner + i;
            let at = |k: usize| unsafe { *(src as *const T).add(base + k * inner) };
            let mut idx: Vec<usize> = (0..n).collect();
            // NaN sorts as the largest value; ties keep their order (a stable sort).
            let key = |a: T, b: T| match (nan(a), nan(b)) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
            };
            if descending {
                idx.sort_by(|&a, &b| key(at(b), at(a)));
            } else {
                idx.sort_by(|&a, &b| key(at(a), at(b)));
            }
            for (k, &j) in idx.iter().enumerate() {
                unsafe { *(out as *mut i64).add(base + k * inner) = j as i64 };
            }
        };
        if rows * n >= 1 << 14 {
            (0..rows).into_par_iter().for_each(run);
        } else {
            (0..rows).for_each(run);
        }
    }
    match dt {
        DType::F32 => sort_rows::<f32>(src, out, n, inner, rows, descending, f32::is_nan),
        DType::F64 => sort_rows::<f64>(src, out, n, inner, rows, descending, f64::is_nan),
        DType::F16 => sort_rows::<half::f16>(src, out, n, inner, rows, descending, half::f16::is_nan),
        DType::BF16 => sort_rows::<half::bf16>(src, out, n, inner, rows, descending, half::bf16::is_nan),
        DType::I64 => sort_rows::<i64>(src, out, n, inner, rows, descending, |_| false),
        DType::I32 => sort_rows::<i32>(src, out, n, inner, rows, descending, |_| false),
        DType::I16 => sort_rows::<i16>(src, out, n, inner, rows, descending, |_| false),
        DType::I8 => sort_rows::<i8>(src, out, n, inner, rows, descending, |_| false),
        DType::U8 | DType::Bool => sort_rows::<u8>(src, out, n, inner, rows, descending, |_| false),
        d => return Err(format!("sort of {} is not supported by the CPU target yet", d.torch_name())),
    }
    Ok(())
}

/// dst[r·n + c] = src[c·col_stride + r] for r < k, c < n: the row-major [k, n] copy of a
/// matrix stored column by column, in 64×64 tiles (both sides stay in L1), tiles split over
/// rayon's pool by column bands.
fn transpose_rows<T: Copy + Send + Sync>(src: usize, col_stride: isize, k: usize, n: usize, dst: usize) {
    use rayon::prelude::*;
    const B: usize = 64;
    (0..n.div_ceil(B)).into_par_iter().for_each(|cb| {
        let (src, dst) = (src as *const T, dst as *mut T);
        let (c0, c1) = (cb * B, ((cb + 1) * B).min(n));
        for r0 in (0..k).step_by(B) {
            let r1 = (r0 + B).min(k);
            for c in c0..c1 {
                for r in r0..r1 {
                    unsafe { *dst.add(r * n + c) = *src.offset(c as isize * col_stride + r as isize) };
                }
            }
        }
    });
}

struct Shared(*const *mut u8, *const i64);
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// Splits the outermost dim across the thread pool when there is enough work.
fn run_kernel(f: KernelFn, ptrs: &[*mut u8], syms: &[i64], outer: i64, work: i64) {
    let sh = Shared(ptrs.as_ptr(), syms.as_ptr());
    let threads = rayon::current_num_threads() as i64;
    if work < 1 << 15 || outer < 2 || threads < 2 {
        unsafe { f(sh.0, sh.1, 0, outer) };
        return;
    }
    let chunks = (threads * 4).min(outer);
    let per = (outer + chunks - 1) / chunks;
    let sh = &sh;
    rayon::scope(|s| {
        for c in 0..chunks {
            let (lo, hi) = (c * per, ((c + 1) * per).min(outer));
            if lo < hi {
                s.spawn(move |_| unsafe { f(sh.0, sh.1, lo, hi) });
            }
        }
    });
}
