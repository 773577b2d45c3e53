//! Python extension module `ember._ember`: import, compile and run from Python.
//!
//! The extension links LLVM statically; rustc's cdylib version script exports only
//! `PyInit__ember`, so LLVM's symbols stay private when torch and jaxlib share the process.

use ember_compiler::ir::DType;
use ember_compiler::runtime::{Program as CpuProgram, TensorView};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::Path;

mod buffers;

/// A host tensor as Python passes it: (data pointer, byte length, shape, dtype name).
type RawTensor = (usize, usize, Vec<usize>, String);
/// An output as `run_raw` returns it: (bytes, shape, dtype name).
type RawOutput<'py> = (Bound<'py, PyBytes>, Vec<usize>, String);

fn err(msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(msg.to_string())
}

/// A run's error: an out-of-range gather index (the runtime's message names the op) is the
/// IndexError torch raises for it; anything else a ValueError.
fn run_err(msg: String) -> PyErr {
    if msg.contains("an index is out of range") {
        pyo3::exceptions::PyIndexError::new_err(msg)
    } else {
        err(msg)
    }
}

/// Version of the Ember native extension: the workspace crate version and the artifact format
/// major it writes (compile caches key on both, so a format change never reloads old artifacts).
#[pyfunction]
fn version() -> String {
    format!("{}+format{}", env!("CARGO_PKG_VERSION"), ember_compiler::artifact::FORMAT_MAJOR)
}

/// Imports a .pt2 archive (or model.json) and returns the torch-dialect module as MLIR text.
#[pyfunction]
fn import_model(py: Python<'_>, path: &str) -> PyResult<String> {
    py.detach(|| ember_compiler::import_path(Path::new(path)).map(|m| m.module.to_string()).map_err(err))
}

/// Compiles a .pt2 archive for `target` (any of `ember compile`'s) into the artifact directory
/// `out_dir`, with target `options` as (name, value) pairs of `ember compile`'s (`("mesh", "x=2")`;
/// a flag's value is empty).
#[pyfunction]
#[pyo3(signature = (path, target, out_dir, options = Vec::new()))]
fn compile(py: Python<'_>, path: &str, target: &str, out_dir: &str, options: Vec<(String, String)>) -> PyResult<()> {
    let mut opts = ember_compiler::CompileOptions::new(target, Path::new(out_dir));
    opts.options.0 = options;
    opts.check().map_err(err)?;
    py.detach(|| {
        let imported = ember_compiler::load(Path::new(path)).map_err(err)?;
        ember_compiler::compile(imported, &opts).map(|_| ()).map_err(err)
    })
}

/// Checks `ember compile`'s target options for `target` without a model (a malformed `--mesh`,
/// an option of another target): raises ValueError with the CLI's message.
#[pyfunction]
fn check_options(target: &str, options: Vec<(String, String)>) -> PyResult<()> {
    let mut opts = ember_compiler::CompileOptions::new(target, Path::new(""));
    opts.options.0 = options;
    opts.check().map(|_| ()).map_err(err)
}

/// Ops of a .pt2 that Ember has no lowering for (`aten.sort`, ...), each once, in program order.
#[pyfunction]
fn unlowered_ops(py: Python<'_>, path: &str) -> PyResult<Vec<String>> {
    py.detach(|| {
        let imported = ember_compiler::import_path(Path::new(path)).map_err(err)?;
        ember_compiler::artifact::unlowered_ops(imported.module).map_err(err)
    })
}

/// The `ember` command line in this process (the wheel's `ember` console script, `ember._cli`):
/// `args` with the program name first; returns the exit code.
#[pyfunction]
fn cli_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(|| ember_tools::main(args))
}

/// A loaded CPU artifact.
#[pyclass(frozen)]
struct Program {
    inner: CpuProgram,
}

#[pymethods]
impl Program {
    #[new]
    fn new(py: Python<'_>, dir: &str) -> PyResult<Self> {
        py.detach(|| {
            let inner = CpuProgram::load(Path::new(dir)).map_err(|e| err(format!("`{dir}`: {e}")))?;
            Ok(Program { inner })
        })
    }

    /// Whether every input and output has a fixed shape (`run_ptrs` applies).
    #[getter]
    fn fixed(&self) -> bool {
        self.inner.is_fixed()
    }

    /// Input (name, dtype, dims) triples; dims are ints or symbol expressions as strings.
    fn inputs(&self) -> Vec<(String, String, Vec<String>)> {
        self.inner.manifest.inputs.iter().map(|i| (i.name.clone(), i.dtype.clone(), i.dims.clone())).collect()
    }

    fn outputs(&self) -> Vec<(String, String, Vec<String>)> {
        self.inner.manifest.outputs.iter().map(|i| (i.name.clone(), i.dtype.clone(), i.dims.clone())).collect()
    }

    /// Runs on inputs given as (data pointer, byte length, shape, dtype) of contiguous host tensors,
    /// read in place. The caller keeps them alive for the call. Returns (bytes, shape, dtype) per
    /// output.
    fn run_raw<'py>(&self, py: Python<'py>, inputs: Vec<RawTensor>) -> PyResult<Vec<RawOutput<'py>>> {
        let mut dtypes = Vec::new();
        for (_, _, _, d) in &inputs {
            dtypes.push(DType::from_mlir_name(d).ok_or_else(|| err(format!("unknown dtype `{d}`")))?);
        }
        let outs = {
            let views: Vec<TensorView> = inputs
                .iter()
                .zip(&dtypes)
                // SAFETY: the Python caller passes live, contiguous buffers of `len` bytes.
                .map(|((ptr, len, shape, _), &dtype)| TensorView {
                    dtype,
                    shape,
                    data: unsafe { std::slice::from_raw_parts(*ptr as *const u8, *len) },
                })
                .collect();
            self.inner.run_views(&views).map_err(run_err)?
        };
        Ok(outs.into_iter().map(|t| (PyBytes::new(py, &t.data), t.shape, t.dtype.mlir_name().to_string())).collect())
    }

    /// Runs as `run_raw`, with output i written into the caller's buffer `outputs[i]` = (address,
    /// byte length) (contiguous, 16-byte aligned, overlapping nothing else): no copy back. A
    /// length that is not the output's size is an error before anything runs.
    fn run_into(&self, py: Python<'_>, inputs: Vec<RawTensor>, outputs: Vec<(usize, usize)>) -> PyResult<()> {
        let mut dtypes = Vec::new();
        for (_, _, _, d) in &inputs {
            dtypes.push(DType::from_mlir_name(d).ok_or_else(|| err(format!("unknown dtype `{d}`")))?);
        }
        if let Some((p, _)) = outputs.iter().find(|&&(p, _)| p % 16 != 0) {
            return Err(err(format!("output buffer {p:#x} is not 16-byte aligned")));
        }
        py.detach(|| {
            let views: Vec<TensorView> = inputs
                .iter()
                .zip(&dtypes)
                // SAFETY: the Python caller passes live, contiguous buffers of `len` bytes (an
                // empty tensor's address may be null, so it gets an empty slice instead).
                .map(|((ptr, len, shape, _), &dtype)| TensorView {
                    dtype,
                    shape,
                    data: if *len == 0 { &[] } else { unsafe { std::slice::from_raw_parts(*ptr as *const u8, *len) } },
                })
                .collect();
            let outs: Vec<(*mut u8, usize)> = outputs.iter().map(|&(p, n)| (p as *mut u8, n)).collect();
            // SAFETY: the caller allocates each output as a fresh contiguous tensor of that length.
            unsafe { self.inner.run_into(&views, &outs) }.map(|_| ()).map_err(run_err)
        })
    }

    /// Runs a program without symbolic dims on inputs and outputs given by address only: the
    /// caller vouches for what `inputs()` / `outputs()` declare (dtype, shape, dense row-major),
    /// as torch.compile's guards do for the graph it compiled; nothing is parsed per call.
    fn run_ptrs(&self, py: Python<'_>, inputs: Vec<usize>, outputs: Vec<usize>) -> PyResult<()> {
        if !self.inner.is_fixed() {
            return Err(err("run_ptrs: the program has symbolic dims; use run_into"));
        }
        if let Some(p) = outputs.iter().find(|&&p| p % 16 != 0) {
            return Err(err(format!("output buffer {p:#x} is not 16-byte aligned")));
        }
        let run = || {
            let ins: Vec<*const u8> = inputs.iter().map(|&p| p as *const u8).collect();
            let outs: Vec<*mut u8> = outputs.iter().map(|&p| p as *mut u8).collect();
            // SAFETY: the caller vouches for the buffers (this method's contract above).
            unsafe { self.inner.run_fixed(&ins, &outs) }.map_err(run_err)
        };
        // Releasing and retaking the GIL costs more than a brief program runs (a 16-element add).
        if self.inner.brief() {
            run()
        } else {
            py.detach(run)
        }
    }
}

/// The eager scheduler's plan cache (`ember.eager`): compiles recorded regions once and
/// replays them, reading inputs and writing outputs in place.
#[pyclass(frozen)]
struct EagerPlans {
    inner: std::sync::Mutex<ember_compiler::eager::PlanCache>,
    handles: std::sync::Mutex<PlanHandles>,
}

/// Plans handed to Python by number (`run` returns one, `run_plan` takes it), so a region replayed
/// op for op skips its conversion and key. Numbers are never reused: after `clear` an old one is
/// simply unknown.
#[derive(Default)]
struct PlanHandles {
    next: u64,
    plans: std::collections::HashMap<u64, std::sync::Arc<CpuProgram>>,
    by_plan: std::collections::HashMap<usize, u64>,
}

impl PlanHandles {
    /// The handle of a plan (a new one the first time the plan is seen).
    fn handle(&mut self, program: std::sync::Arc<CpuProgram>) -> u64 {
        let key = std::sync::Arc::as_ptr(&program) as usize;
        if let Some(&n) = self.by_plan.get(&key) {
            return n;
        }
        self.next += 1;
        let n = self.next;
        self.plans.insert(n, program);
        self.by_plan.insert(key, n);
        n
    }

    fn get(&self, handle: u64) -> Option<std::sync::Arc<CpuProgram>> {
        self.plans.get(&handle).cloned()
    }

    fn clear(&mut self) {
        self.plans.clear();
        self.by_plan.clear();
    }
}

/// Runs a region's plan (never symbolic) on caller-owned buffers (address, bytes): every count
/// and length is checked against the program before anything runs.
fn eager_run_program(
    program: &CpuProgram,
    in_ptrs: &[(usize, usize)],
    out_ptrs: &[(usize, usize)],
) -> Result<(), String> {
    // SAFETY: the caller passes live, contiguous buffers of the stated lengths, the outputs fresh.
    unsafe { program.run_fixed_sized(in_ptrs, out_ptrs) }
}

fn eager_arg(tag: &str, v: &Bound<'_, PyAny>) -> PyResult<ember_compiler::eager::Arg> {
    use ember_compiler::eager::Arg;
    Ok(match tag {
        "n" => Arg::None,
        "t" => Arg::Tensor(v.extract()?),
        "ts" => Arg::Tensors(v.extract()?),
        "ots" => Arg::OptTensors(v.extract()?),
        "i" => Arg::Int(v.extract()?),
        "f" => Arg::Float(v.extract()?),
        "b" => Arg::Bool(v.extract()?),
        "is" => Arg::Ints(v.extract()?),
        "fs" => Arg::Floats(v.extract()?),
        "bs" => Arg::Bools(v.extract()?),
        "s" => Arg::Str(v.extract()?),
        "dt" => {
            let d: String = v.extract()?;
            Arg::DType(DType::from_mlir_name(&d).ok_or_else(|| err(format!("unknown dtype `{d}`")))?)
        }
        t => return Err(err(format!("unknown argument tag `{t}`"))),
    })
}

fn eager_meta((shape, dtype): (Vec<i64>, String)) -> PyResult<ember_compiler::eager::Meta> {
    Ok(ember_compiler::eager::Meta {
        shape,
        dtype: DType::from_mlir_name(&dtype).ok_or_else(|| err(format!("unknown dtype `{dtype}`")))?,
    })
}

/// Registers the process's BLAS for the CPU runtime's GEMM steps: addresses of LP64 Fortran
/// `sgemm_` and `dgemm_`, and of a C `int f(int)` setting the calling thread's BLAS thread
/// count (0 for none). False when one was registered before. The caller vouches for the
/// addresses: `ember._use_torch_threads` passes torch's own, found by name in its loaded library.
#[pyfunction]
fn set_host_blas(sgemm: usize, dgemm: usize, threads_local: usize) -> PyResult<bool> {
    if sgemm == 0 || dgemm == 0 {
        return Err(err("set_host_blas: null function address"));
    }
    // SAFETY: see the doc comment; the library stays loaded while torch is.
    Ok(unsafe { ember_compiler::runtime::set_host_blas(sgemm, dgemm, threads_local) })
}

/// How this extension was built: "release" (the wheel, `maturin develop --release`) or "debug"
/// (`make setup`'s `maturin develop`: optimized, with debug assertions). Benchmarks record it.
#[pyfunction]
fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Whether the CPU runtime's GEMM steps run on a registered host BLAS.
#[pyfunction]
fn host_blas() -> bool {
    ember_compiler::runtime::host_blas()
}

/// Runs the CPU runtime's parallel steps on the process's OpenMP team: addresses of libgomp's
/// `GOMP_parallel`, `omp_get_max_threads` and `omp_in_parallel`. False when one was registered
/// before. The caller vouches for the addresses: `ember._use_torch_threads` passes those of the
/// OpenMP runtime torch's own library resolves.
#[pyfunction]
fn set_host_openmp(parallel: usize, max_threads: usize, in_parallel: usize) -> PyResult<bool> {
    if parallel == 0 || max_threads == 0 || in_parallel == 0 {
        return Err(err("set_host_openmp: null function address"));
    }
    // SAFETY: see the doc comment; the library stays loaded while torch is.
    Ok(unsafe { ember_compiler::runtime::set_host_openmp(parallel, max_threads, in_parallel) })
}

/// Whether the CPU runtime's parallel steps run on a registered OpenMP team.
#[pyfunction]
fn host_openmp() -> bool {
    ember_compiler::runtime::host_openmp()
}

/// Whether Ember's torch dialect defines an ATen op (`aten.add.Tensor`).
#[pyfunction]
fn eager_op_known(target: &str) -> bool {
    ember_compiler::eager::known(target)
}

type EagerOp<'py> = (String, Vec<(String, String, Bound<'py, PyAny>)>, Vec<(Vec<i64>, String)>, String, u32);

fn eager_region(
    ops: Vec<EagerOp<'_>>,
    inputs: Vec<(Vec<i64>, String)>,
    outputs: Vec<usize>,
) -> PyResult<ember_compiler::eager::Region> {
    use ember_compiler::eager::{QueuedOp, Region};
    let mut region = Region {
        inputs: inputs.into_iter().map(eager_meta).collect::<PyResult<_>>()?,
        ops: Vec::with_capacity(ops.len()),
        outputs,
    };
    for (target, args, outs, file, line) in ops {
        let args = args.iter().map(|(n, t, v)| Ok((n.clone(), eager_arg(t, v)?))).collect::<PyResult<_>>()?;
        let outs = outs.into_iter().map(eager_meta).collect::<PyResult<_>>()?;
        region.ops.push(QueuedOp { target, args, outs, file, line });
    }
    Ok(region)
}

#[pymethods]
impl EagerPlans {
    #[new]
    fn new(dir: &str) -> Self {
        EagerPlans {
            inner: std::sync::Mutex::new(ember_compiler::eager::PlanCache::new(dir.into())),
            handles: Default::default(),
        }
    }

    /// Runs a region: `ops` are (target, [(param, tag, value)], [(shape, dtype)], file, line),
    /// `inputs` (shape, dtype) with `in_ptrs` (address, bytes) of contiguous tensors, `outputs` the
    /// value ids to write to `out_ptrs` (contiguous, 16-byte aligned). Returns (cache hit, ops
    /// without a lowering, plan handle for `run_plan`); when that list is not empty nothing ran.
    fn run(
        &self,
        py: Python<'_>,
        ops: Vec<EagerOp<'_>>,
        inputs: Vec<(Vec<i64>, String)>,
        outputs: Vec<usize>,
        in_ptrs: Vec<(usize, usize)>,
        out_ptrs: Vec<(usize, usize)>,
    ) -> PyResult<(bool, Vec<String>, u64)> {
        use ember_compiler::eager::RegionError;
        let region = eager_region(ops, inputs, outputs)?;
        if in_ptrs.len() != region.inputs.len() || out_ptrs.len() != region.outputs.len() {
            return Err(err("eager region: buffer count does not match the region's inputs and outputs"));
        }
        py.detach(|| {
            let mut cache = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let (program, hit) = match cache.get(&region) {
                Ok(x) => x,
                Err(RegionError::Unsupported(ops)) => return Ok((false, ops, 0)),
                Err(RegionError::Failed(m)) => return Err(err(m)),
            };
            let t0 = std::time::Instant::now();
            eager_run_program(&program, &in_ptrs, &out_ptrs).map_err(run_err)?;
            cache.stats.run_seconds += t0.elapsed().as_secs_f64();
            let handle = self.handles.lock().unwrap_or_else(|e| e.into_inner()).handle(program);
            Ok((hit, vec![], handle))
        })
    }

    /// Runs the plan `run` returned as `handle` again, on new buffers (same form as `run`): for a
    /// region equal to that one op for op. Returns False (nothing ran) for an unknown handle.
    fn run_plan(
        &self,
        py: Python<'_>,
        handle: u64,
        in_ptrs: Vec<(usize, usize)>,
        out_ptrs: Vec<(usize, usize)>,
    ) -> PyResult<bool> {
        py.detach(|| {
            let Some(plan) = self.handles.lock().unwrap_or_else(|e| e.into_inner()).get(handle) else {
                return Ok(false);
            };
            let t0 = std::time::Instant::now();
            eager_run_program(&plan, &in_ptrs, &out_ptrs).map_err(run_err)?;
            let mut cache = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            cache.stats.hits += 1;
            cache.stats.run_seconds += t0.elapsed().as_secs_f64();
            Ok(true)
        })
    }

    /// The plan-cache key of a region (same form as `run`).
    #[staticmethod]
    fn key(ops: Vec<EagerOp<'_>>, inputs: Vec<(Vec<i64>, String)>, outputs: Vec<usize>) -> PyResult<String> {
        Ok(eager_region(ops, inputs, outputs)?.key())
    }

    /// Compiles a region (same form as `run`) into an artifact of `target` in `dir`. Returns the
    /// ops without a lowering; when that list is not empty nothing was written.
    #[staticmethod]
    fn write(
        py: Python<'_>,
        ops: Vec<EagerOp<'_>>,
        inputs: Vec<(Vec<i64>, String)>,
        outputs: Vec<usize>,
        target: &str,
        dir: &str,
    ) -> PyResult<Vec<String>> {
        use ember_compiler::eager::RegionError;
        let region = eager_region(ops, inputs, outputs)?;
        match py.detach(|| ember_compiler::eager::write_region(&region, target, std::path::Path::new(dir))) {
            Ok(()) => Ok(vec![]),
            Err(RegionError::Unsupported(ops)) => Ok(ops),
            Err(RegionError::Failed(m)) => Err(err(m)),
        }
    }

    /// Ops of a region (same form as `run`, no outputs) without a CPU lowering.
    #[staticmethod]
    fn unlowered(py: Python<'_>, ops: Vec<EagerOp<'_>>, inputs: Vec<(Vec<i64>, String)>) -> PyResult<Vec<String>> {
        let region = eager_region(ops, inputs, vec![])?;
        py.detach(|| ember_compiler::eager::unlowered(&region)).map_err(err)
    }

    /// (hits, misses, compile seconds, run seconds, cached plans).
    fn stats(&self) -> (u64, u64, f64, f64, usize) {
        let c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (c.stats.hits, c.stats.misses, c.stats.compile_seconds, c.stats.run_seconds, c.len())
    }

    /// Forgets every plan and zeroes the stats.
    fn clear(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.handles.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// The native eager recorder's entry points (`ember/deferred/native.cpp`, a C++ extension built
/// against the installed torch), handed over as a table of C functions: the recorder runs below
/// Python, without the GIL, so it calls Rust directly. One plan cache per process.
#[repr(C)]
struct NativeApi {
    /// 1 when Ember's torch dialect defines the op (`aten.add.Tensor`), else 0.
    known: extern "C" fn(*const std::ffi::c_char) -> i32,
    /// Compiles (or finds) the plan of a region given as `Region::from_json` text: a handle > 0,
    /// -1 when ops have no CPU lowering (their targets, comma-separated, in `err`), 0 on an error.
    compile: extern "C" fn(*const u8, usize, *mut u8, usize) -> i64,
    /// Runs a plan on contiguous buffers (address, bytes): 0, or 1 with the message in `err`.
    run:
        extern "C" fn(i64, *const usize, *const usize, usize, *const usize, *const usize, usize, *mut u8, usize) -> i32,
    /// Writes [hits, misses, compile seconds, run seconds, plans].
    stats: extern "C" fn(*mut f64),
    /// Forgets every plan and zeroes the counters.
    clear: extern "C" fn(),
}

struct NativePlans {
    cache: ember_compiler::eager::PlanCache,
    handles: PlanHandles,
}

fn native_plans() -> std::sync::MutexGuard<'static, NativePlans> {
    static PLANS: std::sync::OnceLock<std::sync::Mutex<NativePlans>> = std::sync::OnceLock::new();
    PLANS
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("ember-native-{}", std::process::id()));
            std::sync::Mutex::new(NativePlans {
                cache: ember_compiler::eager::PlanCache::new(dir),
                handles: PlanHandles::default(),
            })
        })
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn write_err(buf: *mut u8, cap: usize, msg: &str) {
    if buf.is_null() || cap == 0 {
        return;
    }
    let n = msg.len().min(cap - 1);
    // SAFETY: the caller passes a writable buffer of `cap` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr(), buf, n);
        *buf.add(n) = 0;
    }
}

/// Runs `f`, turning a panic into an error: none may unwind into C++.
fn no_unwind<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        Err(format!("internal error (panic): {}", msg.unwrap_or_default()))
    })
}

extern "C" fn native_known(target: *const std::ffi::c_char) -> i32 {
    // SAFETY: the caller passes a NUL-terminated string.
    let t = unsafe { std::ffi::CStr::from_ptr(target) }.to_string_lossy();
    no_unwind(|| Ok(ember_compiler::eager::known(&t) as i32)).unwrap_or(0)
}

extern "C" fn native_compile(text: *const u8, len: usize, errbuf: *mut u8, cap: usize) -> i64 {
    use ember_compiler::eager::{Region, RegionError};
    // SAFETY: the caller passes `len` bytes of UTF-8 JSON.
    let text = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(text, len) }).into_owned();
    let r = no_unwind(|| {
        let region = Region::from_json(&text)?;
        let mut p = native_plans();
        let (program, _) = match p.cache.get(&region) {
            Ok(x) => x,
            Err(RegionError::Unsupported(ops)) => return Ok(Err(ops.join(","))),
            Err(RegionError::Failed(m)) => return Err(m),
        };
        Ok(Ok(p.handles.handle(program) as i64))
    });
    match r {
        Ok(Ok(h)) => h,
        Ok(Err(ops)) => {
            write_err(errbuf, cap, &ops);
            -1
        }
        Err(m) => {
            write_err(errbuf, cap, &m);
            0
        }
    }
}

#[allow(clippy::too_many_arguments)]
extern "C" fn native_run(
    handle: i64,
    in_ptrs: *const usize,
    in_lens: *const usize,
    n_in: usize,
    out_ptrs: *const usize,
    out_lens: *const usize,
    n_out: usize,
    errbuf: *mut u8,
    cap: usize,
) -> i32 {
    // SAFETY: the caller passes arrays of the given lengths (an empty one's address may be null).
    let slice = |p: *const usize, n: usize| if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p, n) } };
    let (ip, il, op, ol) = (slice(in_ptrs, n_in), slice(in_lens, n_in), slice(out_ptrs, n_out), slice(out_lens, n_out));
    let r = no_unwind(|| {
        let plan = native_plans().handles.get(handle as u64).ok_or_else(|| format!("unknown plan {handle}"))?;
        let ins: Vec<(usize, usize)> = ip.iter().copied().zip(il.iter().copied()).collect();
        let outs: Vec<(usize, usize)> = op.iter().copied().zip(ol.iter().copied()).collect();
        let t0 = std::time::Instant::now();
        eager_run_program(&plan, &ins, &outs)?;
        native_plans().cache.stats.run_seconds += t0.elapsed().as_secs_f64();
        Ok(())
    });
    match r {
        Ok(()) => 0,
        Err(m) => {
            write_err(errbuf, cap, &m);
            1
        }
    }
}

extern "C" fn native_stats(out: *mut f64) {
    let p = native_plans();
    let s = &p.cache.stats;
    let v = [s.hits as f64, s.misses as f64, s.compile_seconds, s.run_seconds, p.cache.len() as f64];
    // SAFETY: the caller passes room for 5 values.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), out, 5) };
}

extern "C" fn native_clear() {
    let mut p = native_plans();
    p.cache.clear();
    p.handles.clear();
}

static NATIVE_API: NativeApi = NativeApi {
    known: native_known,
    compile: native_compile,
    run: native_run,
    stats: native_stats,
    clear: native_clear,
};

/// The address of the native recorder's function table (`NativeApi`), for `native.cpp`.
#[pyfunction]
fn eager_native_api() -> usize {
    &NATIVE_API as *const NativeApi as usize
}

#[pymodule]
fn _ember(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(import_model, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(check_options, m)?)?;
    m.add_function(wrap_pyfunction!(unlowered_ops, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_class::<Program>()?;
    m.add_class::<EagerPlans>()?;
    m.add_class::<buffers::OutputSlot>()?;
    m.add_function(wrap_pyfunction!(eager_op_known, m)?)?;
    m.add_function(wrap_pyfunction!(eager_native_api, m)?)?;
    m.add_function(wrap_pyfunction!(set_host_blas, m)?)?;
    m.add_function(wrap_pyfunction!(set_host_openmp, m)?)?;
    m.add_function(wrap_pyfunction!(host_openmp, m)?)?;
    m.add_function(wrap_pyfunction!(host_blas, m)?)?;
    m.add_function(wrap_pyfunction!(build_profile, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
