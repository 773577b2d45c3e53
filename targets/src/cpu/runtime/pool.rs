//! The threads a program's steps split over: rayon's pool, or the OpenMP team of the process
//! Ember runs in when one was registered (`set_host_openmp`: PyTorch's libgomp, which torch's
//! own ops and Inductor's kernels run on).
//!
//! Why two: an OpenMP team spins after each parallel region, so inside a torch process rayon's
//! workers and torch's threads took the same 2 cores in turns; Ember's kernels ran 1.1-1.5x
//! slower interleaved with torch's ops than alone (a LayerNorm + softmax: 4.0 vs 2.75 ms, the
//! latter with OMP_WAIT_POLICY=passive, which in turn slowed torch's small ops 6x). On torch's
//! team, a spinning thread picks Ember's next chunk up instead, and `torch.set_num_threads` sets
//! Ember's thread count too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// libgomp's entry to a parallel region: runs `f(data)` on every thread of a team of
/// `threads` (0: the calling thread's setting), the caller among them, and returns after all.
type GompParallel = unsafe extern "C" fn(
    f: unsafe extern "C" fn(*mut std::ffi::c_void),
    data: *mut std::ffi::c_void,
    threads: u32,
    flags: u32,
);

struct OpenMp {
    parallel: GompParallel,
    max_threads: unsafe extern "C" fn() -> i32,
    in_parallel: unsafe extern "C" fn() -> i32,
}

static OPENMP: OnceLock<OpenMp> = OnceLock::new();

/// Runs every later split on the process's OpenMP team instead of rayon's pool. Returns false
/// when one was registered already.
///
/// # Safety
/// The addresses must be libgomp's `GOMP_parallel`, `omp_get_max_threads` and
/// `omp_in_parallel` (of one runtime), staying loaded for the life of the process.
pub unsafe fn set_host_openmp(parallel: usize, max_threads: usize, in_parallel: usize) -> bool {
    let omp = unsafe {
        OpenMp {
            parallel: std::mem::transmute::<usize, GompParallel>(parallel),
            max_threads: std::mem::transmute::<usize, unsafe extern "C" fn() -> i32>(max_threads),
            in_parallel: std::mem::transmute::<usize, unsafe extern "C" fn() -> i32>(in_parallel),
        }
    };
    OPENMP.set(omp).is_ok()
}

/// Whether splits run on a registered OpenMP team.
pub fn host_openmp() -> bool {
    OPENMP.get().is_some()
}

/// Threads a split can use from the calling thread (1 inside an OpenMP region: libgomp runs
/// nested regions on one thread).
pub fn threads() -> usize {
    match OPENMP.get() {
        // SAFETY: `set_host_openmp`'s contract.
        Some(omp) if unsafe { (omp.in_parallel)() } != 0 => 1,
        Some(omp) => unsafe { (omp.max_threads)() }.max(1) as usize,
        None => rayon::current_num_threads(),
    }
}

/// Runs `f(i)` for every i < n across the threads, the caller among them; chunks are taken in
/// order by whichever thread is free.
pub fn for_each(n: usize, f: &(dyn Fn(usize) + Sync)) {
    if n == 0 {
        return;
    }
    if n == 1 {
        return f(0);
    }
    let Some(omp) = OPENMP.get() else {
        use rayon::prelude::*;
        return (0..n).into_par_iter().for_each(f);
    };
    struct Region<'a> {
        next: AtomicUsize,
        n: usize,
        f: &'a (dyn Fn(usize) + Sync),
        panic: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>,
    }
    unsafe extern "C" fn member(data: *mut std::ffi::c_void) {
        // SAFETY: `data` is the `Region` below, alive until GOMP_parallel returns.
        let r = unsafe { &*(data as *const Region) };
        // A panic must not unwind into C: the first one is kept and resumed on the caller.
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loop {
            let i = r.next.fetch_add(1, Ordering::Relaxed);
            if i >= r.n {
                break;
            }
            (r.f)(i);
        }));
        if let Err(p) = res {
            r.next.store(r.n, Ordering::Relaxed);
            r.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(p);
        }
    }
    let r = Region { next: AtomicUsize::new(0), n, f, panic: std::sync::Mutex::new(None) };
    let team = threads().min(n) as u32;
    // SAFETY: `set_host_openmp`'s contract; `member` reads `r` only while the region runs.
    unsafe { (omp.parallel)(member, &r as *const Region as *mut std::ffi::c_void, team, 0) };
    if let Some(p) = r.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(p);
    }
}

/// Runs a program's step loop where its splits cost least: on the caller with an OpenMP team
/// (it joins each region), else on one of rayon's workers when `splits` (a caller outside the
/// pool that hands each split step to it pays a worker's wake-up and its own per step; a worker
/// splits by pushing onto its own queue and working along).
pub fn run_steps<R: Send>(splits: bool, steps: impl FnOnce() -> R) -> R {
    if !splits || host_openmp() || rayon::current_thread_index().is_some() || rayon::current_num_threads() < 2 {
        return steps();
    }
    let job = AssertSend(steps);
    rayon::scope(move |_| job.call())
}

/// The step loop borrows raw buffer pointers, which are only read and written through the
/// kernels' own disjoint ranges; it runs on one thread at a time.
struct AssertSend<F>(F);
unsafe impl<F> Send for AssertSend<F> {}
impl<F: FnOnce() -> R, R> AssertSend<F> {
    fn call(self) -> R {
        (self.0)()
    }
}
