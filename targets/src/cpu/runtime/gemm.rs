//! GEMM steps: the strided batched product through the `gemm` crate, the host BLAS or oneDNN,
//! and f16/bf16 products accumulated in f32. Which library runs a product is a speed choice made
//! here; the numerics each must match are torch's.

use super::blas::{self, BlasOperand, HOST_BLAS};
use super::pool;
use super::Program;
use crate::cpu::plan::GemmStep;
use ember_ir::types::DType;
use std::path::Path;

impl Program {
    pub(super) fn gemm(
        &self,
        g: &GemmStep,
        [ldims, lstr, rdims, rstr]: &[Vec<i64>; 4],
        ptrs: &[*mut u8],
    ) -> Result<(), String> {
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
        let threads = pool::threads();
        let fits_i32 = [m, n, k].iter().all(|&d| d <= i32::MAX as usize);
        // An rhs read through its transpose (nn.Linear's `x @ W.T` on a weight passed at run time:
        // eager regions, torch.compile graphs) is copied row-major first where the copy is
        // amortized over enough rows (`transpose_rows`, 8×8 register blocks): the crate reads a
        // transposed rhs slowly. Weights known at compile time are stored transposed instead
        // (compiler::cpu).
        let packs = rrs == 1 && rcs as usize >= k && m >= 256 && k * n >= 1 << 16 && rbs.iter().all(|&s| s == 0);
        // Where the crate's kernels are wider, it takes products with a row-major rhs, and with a
        // copied one up to 2²² weight elements: 0.92–0.96x MKL's transposed product (256×256·
        // 256×1024: 773–969 µs against 815–1290, 512×768·768×3072: 13.8 ms against 14.9; BERT
        // through torch.compile 16.8 → 14.8 ms), where the copy (~0.8 ns an element) made
        // 256×4096·4096×4096 1.03x. Not a short contraction into a large output (an MLP's weight
        // gradient, 4096×256·256×4096: 1.07–1.11x, where 2048×512·512×2048 took 0.93x and
        // 512×256·256×2048 0.90x). A small transposed rhs read in place ties with MKL
        // (32×64·64×300: 49 µs against 48) and stays there.
        let crate_first =
            (rcs == 1 || (packs && k * n <= 1 << 22)) && blas::crate_kernels_wider() && (k >= 512 || m * n < 1 << 22);
        // oneDNN's f32 GEMM (`OneDnn`) before the host BLAS: inside torch through torch.compile,
        // interleaved in one process on an AVX2 EPYC, the MLP case took 0.84x Inductor's time
        // on it and 0.91x on MKL, BERT-small 0.91x and 0.95x, a GPT-2 block 0.94x and 0.96x. On
        // rayon's pool (the CLI) the crate splits a product better than blocks of single-threaded
        // calls do, up to large ones: `ember run` of the GPT-2 block (512×768·768×3072 and
        // smaller) took 3-5 % longer on oneDNN, the MLP's (2³⁴ multiply-adds each) 10-20 % less.
        let large = [nb, m, n, k].iter().map(|&d| d as u128).product::<u128>() >= 1 << 32;
        // Element offsets of block [rows, cols] of product bi in the lhs, the rhs and the output.
        let block = |bi: usize, rows: &std::ops::Range<usize>, cols: &std::ops::Range<usize>| {
            let (lo, ro) = batch_offsets(bi, &batch, &lbs, &rbs);
            (lo + rows.start as isize * lrs, ro + cols.start as isize * rcs, bi * m * n + rows.start * n + cols.start)
        };
        let (a, b) = (BlasOperand::of(lrs, lcs, m, k), BlasOperand::of(rrs, rcs, k, n));
        let host_blas = HOST_BLAS.get().filter(|_| fits_i32 && !crate_first);
        // oneDNN's product of two row-major operands is slow for short lhs where MKL's is not
        // (inside torch, interleaved: 256×4096·4096×4096 110 ms against 73, 256×1024·1024×1024
        // 7.0 against 4.3, 64×4096·4096×4096 25 against 20; from 384 rows on they tie or oneDNN
        // wins: 1024×2048·2048×2048 53 against 61): an MLP's input gradient takes it.
        let row_major_short = m <= 256 && matches!((a, b), (Some(a), Some(b)) if a.trans == b'N' && b.trans == b'N');
        let dnnl = onednn().filter(|_| {
            dt == DType::F32
                && !crate_first
                && (pool::host_openmp() || large)
                && !(row_major_short && host_blas.is_some())
        });
        if let (Some(dnnl), Some(a), Some(b)) = (dnnl, a, b) {
            let part = |bi: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
                let (lo, ro, oo) = block(bi, &rows, &cols);
                // SAFETY: offsets stay inside the operands (rows < m, cols < n, bi < nb); oneDNN
                // is row-major, so `BlasOperand`'s (trans, ld) read the same layouts.
                unsafe {
                    (dnnl.sgemm)(
                        a.trans as i8,
                        b.trans as i8,
                        rows.len() as i64,
                        cols.len() as i64,
                        k as i64,
                        1.0,
                        (lhs as *const f32).offset(lo),
                        a.ld as i64,
                        (rhs as *const f32).offset(ro),
                        b.ld as i64,
                        0.0,
                        (out as *mut f32).add(oo),
                        n as i64,
                    );
                }
            };
            split_calls([nb, m, n, k], threads, 1 << 22, dnnl.set_threads(), part);
            return Ok(());
        }
        if let Some(blas) = host_blas {
            if let (Some(a), Some(b)) = (a, b) {
                let part = |bi: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>| {
                    let (lo, ro, oo) = block(bi, &rows, &cols);
                    // SAFETY: offsets stay inside the operands (rows < m, cols < n, bi < nb).
                    unsafe {
                        let (l, r) =
                            ((lhs as *const u8).offset(lo * es as isize), (rhs as *const u8).offset(ro * es as isize));
                        blas.run(dt, rows.len(), cols.len(), k, l, a, r, b, (out as *mut u8).add(oo * es), n);
                    }
                };
                split_calls([nb, m, n, k], threads, 1 << 22, blas.set_threads(), part);
                return Ok(());
            }
        }
        let (mut rcs, mut rrs) = (rcs, rrs);
        let mut pack = None;
        if packs {
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
        // Rows `rows` and columns `cols` of product `bi`.
        let part = |bi: usize, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, par: gemm::Parallelism| {
            let (lo, ro) = batch_offsets(bi, &batch, &lbs, &rbs);
            let (lo, ro) = (lo + rows.start as isize * lrs, ro + cols.start as isize * rcs);
            let oo = bi * m * n + rows.start * n + cols.start;
            let (pm, pn) = (rows.len(), cols.len());
            // SAFETY: offsets stay inside the operands (rows < m, cols < n, bi < nb).
            unsafe {
                let (dst, lhs, rhs) = (
                    (out as *mut u8).add(oo * es),
                    (lhs as *const u8).offset(lo * es as isize),
                    (rhs as *const u8).offset(ro * es as isize),
                );
                match dt {
                    DType::F32 => gemm::gemm(
                        pm,
                        pn,
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
                        pm,
                        pn,
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
        let one = |bi: usize, par: gemm::Parallelism| part(bi, 0..m, 0..n, par);
        // Waking the pool costs more than it saves below `small` multiply-adds: inside torch (a
        // host BLAS registered) 2^20 (tiny GPT-2's LM head: 42 µs split, 19 on this thread; its
        // 8 attention products of 16×16×16 wake torch's OpenMP team, whose spinning then slows
        // the next kernels), else 2^18.
        let small = if HOST_BLAS.get().is_some() { 1 << 20 } else { 64 * 64 * 64 };
        if nb > 1 && threads > 1 && nb * m * n * k >= small && (nb.is_multiple_of(threads) || nb >= 4 * threads) {
            // Many small products (attention's per-head GEMMs): one per task, no split inside,
            // so the pool synchronizes once instead of once per product.
            pool::for_each(nb, &|bi| one(bi, gemm::Parallelism::None));
        } else if pool::host_openmp() && threads > 1 && m * n * k >= small {
            // On torch's OpenMP team the crate's own rayon threads would contend with the team's
            // spinning ones (and start a pool torch does not know of): blocks of the product, one
            // per team thread.
            split_over_pool(nb, m, n, threads, &|| {}, |bi, r, c| part(bi, r, c, gemm::Parallelism::None));
        } else {
            // One thread (torch.set_num_threads(1), or RAYON_NUM_THREADS=1) means one thread.
            let split = threads > 1 && m * n * k >= small && !pool::host_openmp();
            let par = if split { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
            (0..nb).for_each(|bi| one(bi, par));
        }
        drop(pack);
        Ok(())
    }
}

/// A batched f16/bf16 product, accumulated in f32 and rounded once, as torch's CPU kernels do.
/// Operands are element offsets and strides into 2-byte buffers (addresses as `usize`).
pub(super) struct NarrowProduct<'a> {
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
        let (m, n, k) = (self.m, self.n, self.k);
        let threads = pool::threads();
        if !self.wide_out && acc.len() < self.nb * m * n {
            acc.resize(self.nb * m * n, 0.0);
        }
        // An f32 result accumulates in place; a narrow one in the kept scratch, rounded after.
        let accp = if self.wide_out { self.out } else { acc.as_ptr() as usize };
        let bf16 = onednn().and_then(|d| d.gemm_bf16).filter(|_| self.dt == DType::BF16);
        if let (Some(gemm_bf16), Some(a), Some(b)) =
            (bf16, BlasOperand::of(self.lrs, self.lcs, m, k), BlasOperand::of(self.rrs, self.rcs, k, n))
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
                    gemm_bf16(
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
            split_calls([self.nb, m, n, k], threads, 1 << 18, onednn().unwrap().set_threads(), product);
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
                pool::for_each(self.nb, &|bi| one(bi, gemm::Parallelism::None));
            } else {
                (0..self.nb).for_each(|bi| one(bi, gemm::Parallelism::Rayon(0)));
            }
        }
        if self.wide_out {
            return;
        }
        let (dt, out) = (self.dt, self.out);
        let acc = &acc[..self.nb * m * n];
        pool::for_each(acc.len().div_ceil(1 << 14), &|i| {
            let c = &acc[i << 14..((i + 1) << 14).min(acc.len())];
            // SAFETY: `out` holds nb·m·n narrow elements; chunk i covers [i·2¹⁴, ..+c.len()).
            let dst = unsafe { std::slice::from_raw_parts_mut((out as *mut u16).add(i << 14), c.len()) };
            narrow_into(dt, c, dst);
        });
    }
}

/// oneDNN's row-major f32 GEMM (`dnnl_sgemm`).
pub(super) type DnnlSgemm =
    unsafe extern "C" fn(i8, i8, i64, i64, i64, f32, *const f32, i64, *const f32, i64, f32, *mut f32, i64) -> i32;

/// oneDNN's row-major bf16 GEMM into f32 (`dnnl_gemm_bf16bf16f32`).
pub(super) type DnnlGemmBf16 =
    unsafe extern "C" fn(i8, i8, i64, i64, i64, f32, *const u16, i64, *const u16, i64, f32, *mut f32, i64) -> i32;

/// oneDNN, when this process can load it. Its f32 GEMM's JIT kernels take the CPU's widest
/// vectors on AMD too, where MKL runs its generic AVX2 code: on an AVX2 EPYC, 2 threads,
/// 4096×4096·4096×1024 took 223 ms against MKL's 257, 512×768·768×3072 14.4 against 16.3,
/// 256×256·256×1024 0.89 against 1.00 (medians, interleaved). The bf16 GEMM is the only
/// one torch's CPU speed comes from (the `gemm` crate has no bf16, and converting operands to
/// f32 halves the speed of CPUs with bf16 instructions).
pub(super) struct OneDnn {
    _lib: libloading::Library,
    sgemm: DnnlSgemm,
    /// None where oneDNN has no bf16 GEMM for this CPU.
    gemm_bf16: Option<DnnlGemmBf16>,
    /// The OpenMP runtime oneDNN threads with (per calling thread), when found.
    omp: Option<OneDnnOmp>,
}

#[derive(Clone, Copy)]
struct OneDnnOmp {
    set_num_threads: unsafe extern "C" fn(i32),
    get_max_threads: unsafe extern "C" fn() -> i32,
}

impl OneDnn {
    /// Sets the calling thread's OpenMP thread count for oneDNN and returns the previous one
    /// (`split_calls`), where its OpenMP runtime was found.
    fn set_threads(&self) -> Option<impl Fn(i32) -> i32 + Sync> {
        // SAFETY: per-thread OpenMP settings of the runtime oneDNN was loaded with.
        self.omp.map(|omp| {
            move |t| unsafe {
                let prev = (omp.get_max_threads)();
                (omp.set_num_threads)(t);
                prev
            }
        })
    }
}

/// Where oneDNN is looked for, in order: `$EMBER_ONEDNN` (a path to `libdnnl.so.3`), the
/// loader's search path, then the `lib/` of the Python environment Ember uses (`$EMBER_PYTHON`,
/// else ~/.cache/ember/venv, where `make setup` installs the `onednn-cpu-gomp` wheel).
pub(super) fn onednn() -> Option<&'static OneDnn> {
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
            // SAFETY: oneDNN's initializers have no preconditions; the symbols have the C types
            // above.
            let lib = unsafe { libloading::Library::new(&p) }.ok()?;
            let sgemm = *unsafe { lib.get::<DnnlSgemm>(b"dnnl_sgemm") }.ok()?;
            let gemm_bf16 = *unsafe { lib.get::<DnnlGemmBf16>(b"dnnl_gemm_bf16bf16f32") }.ok()?;
            // Found through the library's dependencies (libgomp for the gomp build).
            let omp = (|| unsafe {
                Some(OneDnnOmp {
                    set_num_threads: *lib.get::<unsafe extern "C" fn(i32)>(b"omp_set_num_threads").ok()?,
                    get_max_threads: *lib.get::<unsafe extern "C" fn() -> i32>(b"omp_get_max_threads").ok()?,
                })
            })();
            // oneDNN implements the bf16 GEMM only where the CPU has AVX-512 (no AVX512-BF16
            // needed); elsewhere it returns `dnnl_unimplemented` and leaves C as it was, so a
            // 1×1×1 product decides once whether it runs here.
            let (one, mut c) = (0x3F80u16, 0f32);
            // SAFETY: 1×1 operands and result, leading dims 1.
            let status = unsafe { gemm_bf16(b'N' as i8, b'N' as i8, 1, 1, 1, 1.0, &one, 1, &one, 1, 0.0, &mut c, 1) };
            let gemm_bf16 = (status == 0 && c == 1.0).then_some(gemm_bf16);
            Some(OneDnn { _lib: lib, sgemm, gemm_bf16, omp })
        })
    })
    .as_ref()
}

/// The [rows, cols] matrix at element offset `off` of the 2-byte buffer `base` (strides `rs`,
/// `cs`), widened to a dense row-major f32 matrix.
pub(super) fn widen(dt: DType, base: usize, off: isize, rows: usize, cols: usize, rs: isize, cs: isize) -> Vec<f32> {
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
pub(super) fn narrow_into(dt: DType, src: &[f32], dst: &mut [u16]) {
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

/// Runs `part(product, rows, cols)` over `nb` products of [m, n] (contraction k) through a
/// library that threads itself (MKL, oneDNN), every call single-threaded where `set_threads`
/// can say so. Without it every product runs on the calling thread, threaded by the library.
pub(super) fn split_calls(
    [nb, m, n, k]: [usize; 4],
    threads: usize,
    small: usize,
    set_threads: Option<impl Fn(i32) -> i32 + Sync>,
    part: impl Fn(usize, std::ops::Range<usize>, std::ops::Range<usize>) + Sync,
) {
    let Some(set_threads) = set_threads else {
        (0..nb).for_each(|bi| part(bi, 0..m, 0..n));
        return;
    };
    // Handing a product to the pool costs more than it saves below `small` multiply-adds (a
    // sleeping worker's wake-up: a 2^21 one took 168 µs split, 58 µs on the calling thread), and
    // the library's own threads must stay idle: their OpenMP team spins after each call and
    // slowed the kernels that followed on rayon's (a GPT-2 block's LayerNorm after a GEMM: 0.1 ->
    // 2.9 ms). One thread, here; the caller's thread is the user's (torch's own matmuls run on
    // it too), so its setting is put back after.
    if threads < 2 || nb * m * n * k < small {
        let prev = set_threads(1);
        (0..nb).for_each(|bi| part(bi, 0..m, 0..n));
        set_threads(prev);
        return;
    }
    // On torch's OpenMP team (`pool`) the library's threads are the team's (oneDNN's libgomp is
    // torch's: one soname, loaded once), so nothing spins against Ember's kernels, and one
    // threaded call splits a product better than row blocks, which each pack the whole rhs
    // (BERT's 256×1024×256 on MKL: 0.36 ms threaded, 0.45-0.55 split; GPT-2 LM's 1024×8192·
    // 8192×512 logits gradient on oneDNN: 89 ms in 4 blocks). Batches stay one product per task.
    if nb < threads && pool::host_openmp() {
        (0..nb).for_each(|bi| part(bi, 0..m, 0..n));
        return;
    }
    split_over_pool(
        nb,
        m,
        n,
        threads,
        &|| {
            set_threads(1);
        },
        part,
    );
}

/// Runs `part(product, rows, cols)` over `nb` products of [m, n] on the pool, each task
/// calling `single` first (its library at one thread) on rayon's: whole products per task when there are
/// at least as many as threads, else each product's longer side in blocks of 16 (whole vector
/// registers), 2 per thread.
pub(super) fn split_over_pool(
    nb: usize,
    m: usize,
    n: usize,
    threads: usize,
    single: &(dyn Fn() + Sync),
    part: impl Fn(usize, std::ops::Range<usize>, std::ops::Range<usize>) + Sync,
) {
    // Inside an OpenMP team's region MKL and oneDNN see it and run single-threaded by
    // themselves; a setting would also stick to the caller's thread, which is a team member
    // there (the user's: torch's own matmuls run on it).
    let omp = pool::host_openmp();
    let single = || {
        if !omp {
            single()
        }
    };
    if nb >= threads {
        pool::for_each(nb, &|bi| {
            single();
            part(bi, 0..m, 0..n)
        });
        return;
    }
    let (len, by_rows) = if n >= m { (n, false) } else { (m, true) };
    let per = len.div_ceil(2 * threads).div_ceil(16) * 16;
    let blocks = len.div_ceil(per);
    pool::for_each(nb * blocks, &|t| {
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
pub(super) fn batch_offsets(bi: usize, batch: &[i64], lbs: &[i64], rbs: &[i64]) -> (isize, isize) {
    let (mut rem, mut lo, mut ro) = (bi as i64, 0i64, 0i64);
    for j in (0..batch.len()).rev() {
        let ix = rem % batch[j];
        rem /= batch[j];
        lo += ix * lbs[j];
        ro += ix * rbs[j];
    }
    (lo as isize, ro as isize)
}

/// dst[r·n + c] = src[c·col_stride + r] for r < k, c < n: the row-major [k, n] copy of a
/// matrix stored column by column. f32 goes through 8×8 blocks transposed in AVX registers:
/// each block reads 8 lines and writes 8, where an element-wise copy walking a power-of-two
/// stride (a 256- or 1024-float weight) keeps evicting its own lines (256×1024: 0.54 ms).
/// Column bands of 64 are split over the pool.
pub(super) fn transpose_rows<T: Copy + Send + Sync + 'static>(
    src: usize,
    col_stride: isize,
    k: usize,
    n: usize,
    dst: usize,
) {
    const B: usize = 64;
    #[cfg(target_arch = "x86_64")]
    let avx =
        std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() && std::arch::is_x86_feature_detected!("avx");
    pool::for_each(n.div_ceil(B), &|cb| {
        let (src, dst) = (src as *const T, dst as *mut T);
        let (c0, c1) = (cb * B, ((cb + 1) * B).min(n));
        let mut c = c0;
        #[cfg(target_arch = "x86_64")]
        if avx {
            while c + 8 <= c1 {
                let mut r = 0;
                while r + 8 <= k {
                    // SAFETY: the block's 8 source columns and 8 destination rows are inside the
                    // operands (c + 8 <= n, r + 8 <= k), and T is f32 here.
                    unsafe {
                        transpose8x8(
                            src.offset(c as isize * col_stride + r as isize) as *const f32,
                            col_stride,
                            dst.add(r * n + c) as *mut f32,
                            n as isize,
                        )
                    };
                    r += 8;
                }
                for cc in c..c + 8 {
                    for rr in r..k {
                        unsafe { *dst.add(rr * n + cc) = *src.offset(cc as isize * col_stride + rr as isize) };
                    }
                }
                c += 8;
            }
        }
        for r0 in (0..k).step_by(B) {
            let r1 = (r0 + B).min(k);
            for cc in c..c1 {
                for r in r0..r1 {
                    unsafe { *dst.add(r * n + cc) = *src.offset(cc as isize * col_stride + r as isize) };
                }
            }
        }
    });
}

/// Rows `src + i·ss` (8 floats each, i < 8) written as columns: row j of the result, at
/// `dst + j·ds`, holds element j of every source row (unpack, shuffle and lane permutes).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose8x8(src: *const f32, ss: isize, dst: *mut f32, ds: isize) {
    use std::arch::x86_64::*;
    let r: [__m256; 8] = std::array::from_fn(|i| _mm256_loadu_ps(src.offset(i as isize * ss)));
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    let out = [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ];
    for (j, v) in out.into_iter().enumerate() {
        _mm256_storeu_ps(dst.offset(j as isize * ds), v);
    }
}
