//! The host BLAS (sgemm/dgemm pointers handed in by the Python extension, e.g. numpy's OpenBLAS):
//! registration and the call glue, with operands given as (trans, ld) of a strided matrix. A
//! process-wide table, so it lives apart from any one program.

use ember_ir::types::DType;

/// A Fortran-interface BLAS GEMM (`sgemm_`/`dgemm_`, LP64): column-major, arguments by pointer.
pub(super) type FortranGemm<T> = unsafe extern "C" fn(
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

pub(super) static HOST_BLAS: std::sync::OnceLock<HostBlas> = std::sync::OnceLock::new();

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

/// Whether the gemm crate's kernels are wider than the host BLAS's here: MKL (torch's BLAS on
/// x86) takes its AVX-512 code on Intel CPUs only, and its generic AVX2 kernels elsewhere, while
/// the crate uses AVX-512 wherever the CPU has it. On this project's AMD EPYC (Zen 4) the crate
/// ran products with a row-major rhs in 0.82–0.95x MKL's time (512×768×3072: 11.9 ms, MKL
/// 14.6), and a tiny one (32×64×192) in 9 µs against MKL's 12. Unmeasured on Intel.
pub(super) fn crate_kernels_wider() -> bool {
    static WIDER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDER.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let id = std::arch::x86_64::__cpuid(0);
            let intel = [id.ebx, id.edx, id.ecx] == [0x756e_6547, 0x4965_6e69, 0x6c65_746e]; // "GenuineIntel"
            std::arch::is_x86_feature_detected!("avx512f") && !intel
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// How a row-major-indexed matrix operand [rows, cols] with strides (rs, cs) is read by a
/// column-major BLAS as its transpose [cols, rows]: untransposed when rows are contiguous in
/// memory (cs = 1), transposed when columns are (rs = 1). None for any other layout.
#[derive(Clone, Copy)]
pub(super) struct BlasOperand {
    pub(super) trans: u8,
    pub(super) ld: i32,
}

impl BlasOperand {
    pub(super) fn of(rs: isize, cs: isize, rows: usize, cols: usize) -> Option<BlasOperand> {
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
    /// Sets the calling thread's BLAS thread count and returns the previous one
    /// (`gemm::split_calls`); None where the BLAS has no per-thread setting: it then threads
    /// itself and every product runs on the calling thread.
    pub(super) fn set_threads(&self) -> Option<impl Fn(i32) -> i32 + Sync> {
        // SAFETY: `set_host_blas`'s contract; a thread-local setting, returning the previous one.
        self.threads_local.map(|local| move |t| unsafe { local(t) })
    }

    /// dst[m, n] (row-major, row stride ldd) = lhs[m, k] · rhs[k, n]. Column-major BLAS computes
    /// the transpose, dstᵀ[n, m] = rhsᵀ · lhsᵀ, and a row-major matrix is its transpose
    /// column-major.
    ///
    /// # Safety
    /// The pointers must address the operands as `a` and `b` describe, and `dst` m rows of ldd.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run(
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
