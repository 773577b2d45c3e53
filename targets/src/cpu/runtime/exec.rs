//! Execution: one call walks the plan's steps over the arena, splitting kernels across the pool
//! (`pool`) and sorting rows itself for `Step::Sort`. Separate from loading so the per-call path reads
//! on its own.

use super::{pool, Arena, HostTensor, KernelFn, Manifest, Program, TensorView, WeightInfo};
use crate::cpu::plan::{BufKind, RoutineKind, Step};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, Ordering};

impl Program {
    /// With `into`, outputs go to the caller's memory and the returned tensors carry shapes only.
    pub(super) fn run_inner(
        &self,
        inputs: &[TensorView],
        into: Option<&[(*mut u8, usize)]>,
    ) -> Result<Vec<HostTensor>, String> {
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
                let (ptr, len) = into[oi];
                if len != nbytes[o.buf] {
                    return Err(format!(
                        "output {oi} (`{}`): the buffer given holds {len} bytes, its shape {:?} needs {}",
                        o.name, shapes[o.buf], nbytes[o.buf]
                    ));
                }
                if man.buffers[o.buf].kind == BufKind::Temp {
                    out_ptr.entry(o.buf).or_insert(ptr);
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
                if !(v.as_ptr() as usize).is_multiple_of(16) {
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
                    Some(s) => arena.slot_ptr(s),
                    None => return Err(format!("buffer {b} ({bytes} bytes) is never written")),
                },
            };
        }
        // The inputs are borrowed: an output computed over its input gets a copy of it.
        // SAFETY: both hold `nbytes[x]` bytes (the input checked above, the output allocated
        // or checked for its size, which `plan::in_place` made the input's).
        unsafe { share_in_place(man, &mut ptrs, &nbytes) };
        // After the buffers: the status slot where a kernel stores the message of a gather
        // whose index was out of range (codegen's `ret`); checked after every kernel.
        let status = AtomicPtr::<std::ffi::c_char>::new(std::ptr::null_mut());
        ptrs.push(&status as *const _ as *mut u8);
        let work: Vec<i64> = man.steps.iter().map(|st| step_work(st, &shapes)).collect();
        let splits = work.iter().any(|&w| w >= SPLIT_WORK);
        pool::run_steps(splits, || self.run_steps(&ptrs, &status, &shapes, &sym_vals, &eval, &work))?;
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
                if ptrs[o.buf] != into[oi].0 && bytes > 0 {
                    // SAFETY: `into[oi]` was checked to hold `bytes` above.
                    unsafe { std::ptr::copy_nonoverlapping(ptrs[o.buf], into[oi].0, bytes) };
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

    /// The plan's steps in order over the buffer table `ptrs` (its last entry is `status`).
    fn run_steps(
        &self,
        ptrs: &[*mut u8],
        status: &AtomicPtr<std::ffi::c_char>,
        shapes: &[Vec<i64>],
        sym_vals: &[i64],
        eval: &dyn Fn(&SymExpr) -> Result<i64, String>,
        work: &[i64],
    ) -> Result<(), String> {
        let man = &self.manifest;
        static PROFILE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let profile = *PROFILE.get_or_init(|| std::env::var_os("EMBER_PROFILE").is_some());
        for (si, step) in man.steps.iter().enumerate() {
            let t0 = profile.then(std::time::Instant::now);
            match step {
                Step::Kernel { out, split, columns, .. } => {
                    let f = self.kernels[si].expect("a kernel step has its function from load");
                    let outer = shapes[*out].get(*split).copied().unwrap_or(1);
                    run_kernel(f, ptrs, sym_vals, outer, work[si], *columns);
                    let err = status.load(Ordering::Acquire);
                    if !err.is_null() {
                        // SAFETY: a NUL-terminated constant of the kernel library, which `self` keeps loaded.
                        return Err(unsafe { std::ffi::CStr::from_ptr(err) }.to_string_lossy().into_owned());
                    }
                }
                Step::Gemm(g) => match &self.gemm_consts[si] {
                    Some(dims) => self.gemm(g, dims, ptrs)?,
                    None => {
                        let exprs = self.gemm_exprs[si].as_ref().expect("parsed at load");
                        let ev = |v: &[SymExpr]| -> Result<Vec<i64>, String> { v.iter().map(eval).collect() };
                        self.gemm(g, &[ev(&exprs[0])?, ev(&exprs[1])?, ev(&exprs[2])?, ev(&exprs[3])?], ptrs)?
                    }
                },
                &Step::Sort { out, src, dim, descending } => {
                    argsort(self.dtypes[src], &shapes[src], dim, descending, ptrs[src], ptrs[out])?
                }
                Step::Routine(l) => match l.kind {
                    RoutineKind::Special(kind) => {
                        let elems = shapes[l.outs[0]].iter().product::<i64>() as usize;
                        let (x, n, out) = (ptrs[l.ins[0]], ptrs[l.ins[1]], ptrs[l.outs[0]]);
                        super::special::run(kind, self.dtypes[l.outs[0]], elems, x, n, out)?
                    }
                    _ => super::linalg::run(l, &self.dtypes, shapes, ptrs)?,
                },
            }
            if let Some(t0) = t0 {
                let (kind, out) = match step {
                    Step::Kernel { name, out, .. } => (name.clone(), *out),
                    Step::Gemm(g) => ("gemm".to_string(), g.out),
                    Step::Sort { out, .. } => ("sort".to_string(), *out),
                    Step::Routine(l) => (l.kind.name().to_string(), l.outs[0]),
                };
                eprintln!("step {si:>3} {kind:<6} out {:?} {:.3} ms", shapes[out], t0.elapsed().as_secs_f64() * 1e3);
            }
        }
        Ok(())
    }

    /// `run_into` for a program without symbols, on addresses only: shapes, sizes and the
    /// buffer table were worked out once (at load, and at the first call for the arena), so a
    /// call patches the inputs' and outputs' addresses into the table and runs the steps. The
    /// torch.compile backend's per-call path, where torch's guards vouch for the inputs.
    ///
    /// # Safety
    /// `inputs[i]` must hold input i as the manifest declares it (dtype, shape, dense row-major)
    /// and `outputs[i]` be writable memory of output i's size, aligned to 16 bytes, overlapping
    /// no input or other output, except that an output computed in place (`Manifest::in_place`)
    /// may be its input's very memory: the call then updates that input.
    pub unsafe fn run_fixed(&self, inputs: &[*const u8], outputs: &[*mut u8]) -> Result<(), String> {
        let man = &self.manifest;
        let fx = self.fixed.as_ref().ok_or("run_fixed: the program has symbolic dims")?;
        if inputs.len() != man.inputs.len() || outputs.len() != man.outputs.len() {
            return Err(format!(
                "the model takes {} inputs and {} outputs, got {} and {}",
                man.inputs.len(),
                man.outputs.len(),
                inputs.len(),
                outputs.len()
            ));
        }
        let mut guard = self.arena.lock().unwrap_or_else(|e| e.into_inner());
        // A table is only built over an arena planned for these shapes (below): with one, the
        // shapes need no comparison per call.
        if guard.as_ref().is_none_or(|a| a.template.is_empty() && a.shapes != fx.shapes) {
            *guard = Some(Arena::plan(man, fx.shapes.clone(), &fx.nbytes));
        }
        let arena = guard.as_mut().unwrap();
        if arena.template.is_empty() {
            arena.template = self.template(arena, &fx.nbytes)?;
        }
        let mut ptrs: Vec<*mut u8> = Vec::with_capacity(arena.template.len() + 1);
        ptrs.extend(arena.template.iter().map(|&p| p as *mut u8));
        for (x, &p) in man.inputs.iter().zip(inputs) {
            ptrs[x.buf] = p as *mut u8;
        }
        // The first output of a computed buffer is where its kernel writes (as `run_inner`).
        for (o, &p) in man.outputs.iter().zip(outputs).rev() {
            if man.buffers[o.buf].kind == BufKind::Temp {
                ptrs[o.buf] = p;
            }
        }
        // SAFETY: the caller's contract: both hold the buffer's bytes.
        unsafe { share_in_place(man, &mut ptrs, &fx.nbytes) };
        let status = AtomicPtr::<std::ffi::c_char>::new(std::ptr::null_mut());
        ptrs.push(&status as *const _ as *mut u8);
        let eval = |e: &SymExpr| e.eval(&|_| None).ok_or_else(|| format!("cannot evaluate `{e}`"));
        pool::run_steps(fx.splits, || self.run_steps(&ptrs, &status, &fx.shapes, &[], &eval, &fx.work))?;
        for (o, &p) in man.outputs.iter().zip(outputs) {
            let bytes = fx.nbytes[o.buf];
            if ptrs[o.buf] != p && bytes > 0 {
                // SAFETY: the caller's contract: `p` holds this output's bytes.
                unsafe { std::ptr::copy_nonoverlapping(ptrs[o.buf], p, bytes) };
            }
        }
        Ok(())
    }

    /// `run_fixed` on buffers given with their byte lengths, each checked against the program's
    /// (the eager scheduler's entry: its buffers are tensors it allocated from a region's metas,
    /// and a region's program never has symbolic dims).
    ///
    /// # Safety
    /// Each buffer must be live and hold its stated length; outputs writable, not overlapping an
    /// input or another output.
    pub unsafe fn run_fixed_sized(&self, inputs: &[(usize, usize)], outputs: &[(usize, usize)]) -> Result<(), String> {
        let man = &self.manifest;
        let fx = self.fixed.as_ref().ok_or("run_fixed_sized: the program has symbolic dims")?;
        // (Counts are `run_fixed`'s check, before anything runs.)
        for (i, (x, &(_, n))) in man.inputs.iter().zip(inputs).enumerate() {
            if n != fx.nbytes[x.buf] {
                return Err(format!("input {i} holds {n} bytes, the program reads {}", fx.nbytes[x.buf]));
            }
        }
        for (i, (o, &(p, n))) in man.outputs.iter().zip(outputs).enumerate() {
            if n != fx.nbytes[o.buf] {
                return Err(format!("output {i} holds {n} bytes, the program writes {}", fx.nbytes[o.buf]));
            }
            if n > 0 && p % 16 != 0 {
                return Err(format!("output {i}'s buffer {p:#x} is not 16-byte aligned"));
            }
        }
        let ins: Vec<*const u8> = inputs.iter().map(|&(p, _)| p as *const u8).collect();
        let outs: Vec<*mut u8> = outputs.iter().map(|&(p, _)| p as *mut u8).collect();
        // SAFETY: the caller's contract, with every length checked above.
        unsafe { self.run_fixed(&ins, &outs) }
    }

    /// The fixed path's buffer table: weights' and arena slots' addresses, 0 for inputs and outputs.
    fn template(&self, arena: &mut Arena, nbytes: &[usize]) -> Result<Vec<usize>, String> {
        let man = &self.manifest;
        let weight_buf: HashMap<usize, &WeightInfo> = man.weights.iter().map(|w| (w.buf, w)).collect();
        let output = |b: usize| man.outputs.iter().any(|o| o.buf == b);
        let mut t = vec![0usize; man.buffers.len()];
        for (b, buf) in man.buffers.iter().enumerate() {
            t[b] = match buf.kind {
                BufKind::Arg(_) if man.inputs.iter().any(|x| x.buf == b) => 0,
                BufKind::Arg(_) => {
                    let w = weight_buf
                        .get(&b)
                        .ok_or_else(|| format!("buffer {b} is an argument with no input or weight"))?;
                    if (w.bytes as u128) < nbytes[b] as u128 {
                        return Err(format!(
                            "weight `{}` has {} bytes in the manifest, but its type needs {}",
                            w.name, w.bytes, nbytes[b]
                        ));
                    }
                    // SAFETY: checked at load to lie inside the mapped file.
                    unsafe { self.weights.as_ref().unwrap().as_ptr().add(w.offset as usize) as usize }
                }
                BufKind::Temp if output(b) => 0,
                BufKind::Temp => match arena.slot_of[b] {
                    Some(s) => arena.slot_ptr(s) as usize,
                    None => return Err(format!("buffer {b} ({} bytes) is never written", nbytes[b])),
                },
            };
        }
        Ok(t)
    }
}

/// Points each input an output is computed over (`Manifest::in_place`) at that output's memory,
/// holding a copy of the input unless the caller passed the input's memory as the output.
///
/// # Safety
/// `ptrs` holds each buffer's address, each valid for `nbytes` of it.
unsafe fn share_in_place(man: &Manifest, ptrs: &mut [*mut u8], nbytes: &[usize]) {
    for &(out, x) in &man.in_place {
        if ptrs[out] != ptrs[x] && nbytes[x] > 0 {
            // SAFETY: the caller's; distinct buffers of one call do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(ptrs[x], ptrs[out], nbytes[x]) };
        }
        ptrs[x] = ptrs[out];
    }
}

/// Stable argsort of each row along `dim` of the dense `[outer, n, inner]` view of `src`
/// (torch's order: NaN after every number, before them when descending), written as int64.
pub(super) fn argsort(
    dt: DType,
    shape: &[i64],
    dim: usize,
    descending: bool,
    src: *const u8,
    out: *mut u8,
) -> Result<(), String> {
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
            pool::for_each(rows, &run);
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

/// Elements of the largest buffer a step reads or writes: its share of the work (a row group's
/// first root may be a small reduction, [rows], while its rows are long).
fn step_work(step: &Step, shapes: &[Vec<i64>]) -> i64 {
    let elems = |b: &usize| shapes[*b].iter().product::<i64>();
    match step {
        Step::Kernel { out, also, args, .. } => std::iter::once(out).chain(also).chain(args).map(elems).max(),
        Step::Gemm(g) => [g.out, g.lhs.buf, g.rhs.buf].iter().map(elems).max(),
        Step::Sort { src, .. } => Some(elems(src)),
        Step::Routine(l) => l.ins.iter().chain(&l.outs).map(elems).max(),
    }
    .unwrap_or(1)
    .max(1)
}

/// What a call of a program without symbols needs to know of its buffers, worked out at load.
pub(super) struct FixedPlan {
    shapes: Vec<Vec<i64>>,
    nbytes: Vec<usize>,
    /// Each step's `step_work`.
    work: Vec<i64>,
    splits: bool,
    /// Little enough work that a call takes about a microsecond (see `Program::brief`).
    pub(super) brief: bool,
}

impl FixedPlan {
    /// None for a program with symbols (or a size no memory holds: `run_inner` says which).
    pub(super) fn new(man: &Manifest, dims: &[Vec<SymExpr>], dtypes: &[DType]) -> Option<FixedPlan> {
        if !man.symbols.is_empty() {
            return None;
        }
        let shapes: Vec<Vec<i64>> =
            dims.iter().map(|d| d.iter().map(|e| e.eval(&|_| None)).collect::<Option<_>>()).collect::<Option<_>>()?;
        let nbytes = shapes
            .iter()
            .zip(dtypes)
            .map(|(s, dt)| s.iter().try_fold(dt.byte_size(), |n, &d| n.checked_mul(usize::try_from(d).ok()?)))
            .collect::<Option<Vec<usize>>>()?;
        let work: Vec<i64> = man.steps.iter().map(|st| step_work(st, &shapes)).collect();
        let splits = work.iter().any(|&w| w >= SPLIT_WORK);
        let brief = man.steps.len() <= 4 && work.iter().sum::<i64>() < BRIEF_WORK;
        Some(FixedPlan { shapes, nbytes, work, splits, brief })
    }
}

/// Elements a brief program's steps touch at most.
const BRIEF_WORK: i64 = 1 << 12;

/// Steps with less work than this run on one thread.
const SPLIT_WORK: i64 = 1 << 15;

pub(super) struct Shared(*const *mut u8, *const i64);
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// Splits the outermost dim across the thread pool when there is enough work.
pub(super) fn run_kernel(f: KernelFn, ptrs: &[*mut u8], syms: &[i64], outer: i64, work: i64, columns: bool) {
    let sh = Shared(ptrs.as_ptr(), syms.as_ptr());
    let threads = if work < SPLIT_WORK || outer < 2 { 1 } else { pool::threads() as i64 };
    if threads < 2 {
        unsafe { f(sh.0, sh.1, 0, outer) };
        return;
    }
    // A column kernel reads every row for each chunk of columns: one chunk per thread, in whole
    // register tiles (`COLUMN_TILE`); others take four chunks per thread to balance load.
    let per = if columns {
        let tile = crate::cpu::plan::COLUMN_TILE;
        ((outer + threads - 1) / threads + tile - 1) / tile * tile
    } else {
        let chunks = (threads * 4).min(outer);
        (outer + chunks - 1) / chunks
    };
    let sh = &sh;
    pool::for_each(((outer + per - 1) / per) as usize, &|c| {
        let lo = c as i64 * per;
        unsafe { f(sh.0, sh.1, lo, (lo + per).min(outer)) }
    });
}
