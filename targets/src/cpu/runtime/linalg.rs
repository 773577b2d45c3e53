//! `Step::Routine`: the factorizations and solves of the `ten` linalg ops, one matrix of the batch
//! at a time (the leading dims of every operand and result are the same batch), on `faer`.
//!
//! Conventions are LAPACK's, which torch's CPU kernels call: an LU's pivots are 1-based row
//! interchanges (`getrf`'s ipiv) and its `info` the first exactly zero pivot, a Cholesky's `info`
//! the order of the first leading minor that is not positive-definite (`potrf`), Householder
//! reflections with β = -sign(α)·‖x‖ (`geqrf`'s, and faer's), so Q and R match torch's signs.

use crate::cpu::plan::{RoutineKind, RoutineStep};
use ember_ir::types::DType;
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatRef, Side};

/// Runs one linalg step over the buffers `ptrs` whose shapes are `shapes`.
pub(super) fn run(st: &RoutineStep, dtypes: &[DType], shapes: &[Vec<i64>], ptrs: &[*mut u8]) -> Result<(), String> {
    // faer asserts its preconditions; one it has and the guards below miss is an error of this
    // step, not a crash of the caller's process.
    let run = || match dtypes[st.ins[0]] {
        DType::F32 => run_t::<f32>(st, shapes, ptrs),
        DType::F64 => run_t::<f64>(st, shapes, ptrs),
        d => Err(format!(
            "`{}` of {} is not supported by the CPU target (float32 and float64 only)",
            st.kind.name(),
            d.torch_name()
        )),
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|_| {
        Err(format!("internal error: `ten.{}` failed on a {:?} input", st.kind.name(), shapes[st.ins[0]]))
    })
}

/// The element types the runtime factorizes in: torch's CPU kernels compute float32 matrices in
/// float32 (LAPACK's `s` routines), so does this.
trait Elem: faer::traits::RealField + Copy {
    fn to_f64(self) -> f64;
    fn of_f64(x: f64) -> Self;
}
impl Elem for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn of_f64(x: f64) -> Self {
        x as f32
    }
}
impl Elem for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn of_f64(x: f64) -> Self {
        x
    }
}

/// A buffer viewed as a batch of row-major matrices (or vectors) of `per` elements each.
struct Buf {
    ptr: usize,
    rows: usize,
    cols: usize,
}

impl Buf {
    fn matrix(shape: &[i64], ptr: *mut u8) -> Buf {
        let r = shape.len();
        Buf { ptr: ptr as usize, rows: shape[r - 2] as usize, cols: shape[r - 1] as usize }
    }
    fn vector(shape: &[i64], ptr: *mut u8) -> Buf {
        Buf { ptr: ptr as usize, rows: 1, cols: shape[shape.len() - 1] as usize }
    }
    fn scalar(ptr: *mut u8) -> Buf {
        Buf { ptr: ptr as usize, rows: 1, cols: 1 }
    }
    fn per(&self) -> usize {
        self.rows * self.cols
    }
    fn load<T: Elem>(&self, b: usize) -> Mat<T> {
        if self.per() == 0 {
            return Mat::zeros(self.rows, self.cols);
        }
        let base = self.ptr as *const T;
        // SAFETY: the planner sized the buffer as `batch` matrices of this shape.
        let s = unsafe { std::slice::from_raw_parts(base.add(b * self.per()), self.per()) };
        Mat::from_fn(self.rows, self.cols, |i, j| s[i * self.cols + j])
    }
    fn store<T: Elem>(&self, b: usize, m: MatRef<'_, T>) {
        let base = self.ptr as *mut T;
        for i in 0..self.rows {
            for j in 0..self.cols {
                // SAFETY: as in `load`; every step writes its outputs' whole matrices.
                unsafe { *base.add(b * self.per() + i * self.cols + j) = m[(i, j)] };
            }
        }
    }
    fn store_vec<T: Copy>(&self, b: usize, v: &[T]) {
        let base = self.ptr as *mut T;
        for (k, &x) in v.iter().enumerate() {
            unsafe { *base.add(b * self.per() + k) = x };
        }
    }
    fn load_i32(&self, b: usize) -> Vec<i32> {
        let base = self.ptr as *const i32;
        (0..self.per()).map(|k| unsafe { *base.add(b * self.per() + k) }).collect()
    }
}

/// The batch runs in order on the calling thread: a failed check names the first batch element
/// whose info is non-zero, as torch's does, and faer's kernels run sequentially (`Par::Seq`)
/// since the step may itself be inside the pool.
fn run_t<T: Elem>(st: &RoutineStep, shapes: &[Vec<i64>], ptrs: &[*mut u8]) -> Result<(), String> {
    let first = &shapes[st.ins[0]];
    // Every op's first operand is a batch of matrices.
    let batch_rank = first.len() - 2;
    let batch: usize = first[..batch_rank].iter().product::<i64>() as usize;
    let mat = |b: usize| Buf::matrix(&shapes[b], ptrs[b]);
    let vec_ = |b: usize| Buf::vector(&shapes[b], ptrs[b]);
    let mut infos: Vec<i32> = vec![0; batch];
    match st.kind {
        RoutineKind::Cholesky { upper } => {
            let (x, l, info) = (mat(st.ins[0]), mat(st.outs[0]), Buf::scalar(ptrs[st.outs[1]]));
            for (b, slot) in infos.iter_mut().enumerate() {
                let a = x.load::<T>(b);
                // The upper factor of A is the transpose of the lower factor of Aᵀ (real A).
                let a = if upper { a.transpose().to_owned() } else { a };
                let (f, i) = match a.llt(Side::Lower) {
                    Ok(c) => (c.L().to_owned(), 0),
                    // faer's index is the 0-based pivot that failed: potrf's order of the minor.
                    Err(faer::linalg::solvers::LltError::NonPositivePivot { index }) => {
                        (Mat::zeros(a.nrows(), a.ncols()), index as i32 + 1)
                    }
                };
                l.store(b, if upper { f.transpose() } else { f.as_ref() });
                info.store_vec(b, &[i]);
                *slot = i;
            }
        }
        RoutineKind::Lu => {
            let (x, lu, piv, info) = (mat(st.ins[0]), mat(st.outs[0]), vec_(st.outs[1]), Buf::scalar(ptrs[st.outs[2]]));
            for (b, slot) in infos.iter_mut().enumerate() {
                let mut a = x.load::<T>(b);
                let (p, i) = getrf(&mut a);
                lu.store(b, a.as_ref());
                piv.store_vec(b, &p);
                info.store_vec(b, &[i]);
                *slot = i;
            }
        }
        RoutineKind::LuSolve { adjoint } => {
            let (lu, piv, rhs, out) = (mat(st.ins[0]), vec_(st.ins[1]), mat(st.ins[2]), mat(st.outs[0]));
            for b in 0..batch {
                let f = lu.load::<T>(b);
                let p = piv.load_i32(b);
                let mut x = rhs.load::<T>(b);
                let n = f.nrows();
                if p.iter().any(|&q| q < 1 || q as usize > n) {
                    return Err(format!("lu_solve: pivots must be between 1 and {n}, found {p:?}"));
                }
                let par = faer::Par::Seq;
                if !adjoint {
                    // A = P L U: x = U⁻¹ L⁻¹ Pᵀ b, Pᵀ b being getrs's row interchanges in order.
                    for (k, &q) in p.iter().enumerate() {
                        swap_rows(&mut x, k, q as usize - 1);
                    }
                    tri::solve_unit_lower_triangular_in_place(f.as_ref(), x.as_mut(), par);
                    tri::solve_upper_triangular_in_place(f.as_ref(), x.as_mut(), par);
                } else {
                    // Aᵀ = Uᵀ Lᵀ Pᵀ: x = P L⁻ᵀ U⁻ᵀ b, the interchanges undone in reverse.
                    tri::solve_lower_triangular_in_place(f.transpose(), x.as_mut(), par);
                    tri::solve_unit_upper_triangular_in_place(f.transpose(), x.as_mut(), par);
                    for (k, &q) in p.iter().enumerate().rev() {
                        swap_rows(&mut x, k, q as usize - 1);
                    }
                }
                out.store(b, x.as_ref());
            }
        }
        RoutineKind::TriangularSolve { upper, unitriangular } => {
            let (a, rhs, out) = (mat(st.ins[0]), mat(st.ins[1]), mat(st.outs[0]));
            let par = faer::Par::Seq;
            for b in 0..batch {
                let f = a.load::<T>(b);
                let mut x = rhs.load::<T>(b);
                match (upper, unitriangular) {
                    (false, false) => tri::solve_lower_triangular_in_place(f.as_ref(), x.as_mut(), par),
                    (false, true) => tri::solve_unit_lower_triangular_in_place(f.as_ref(), x.as_mut(), par),
                    (true, false) => tri::solve_upper_triangular_in_place(f.as_ref(), x.as_mut(), par),
                    (true, true) => tri::solve_unit_upper_triangular_in_place(f.as_ref(), x.as_mut(), par),
                }
                out.store(b, x.as_ref());
            }
        }
        RoutineKind::Qr { complete } => {
            let (x, q, r) = (mat(st.ins[0]), mat(st.outs[0]), mat(st.outs[1]));
            for b in 0..batch {
                let a = x.load::<T>(b);
                if a.nrows().min(a.ncols()) == 0 {
                    // No reflections: Q is the identity (empty unless `complete`), R all zero.
                    q.store(b, Mat::<T>::identity(q.rows, q.cols).as_ref());
                    r.store(b, Mat::<T>::zeros(r.rows, r.cols).as_ref());
                    continue;
                }
                let f = a.qr();
                if complete {
                    q.store(b, f.compute_Q().as_ref());
                    // faer's R has min(m, n) rows: the complete R's others are zero.
                    let full = Mat::<T>::from_fn(r.rows, r.cols, |i, j| {
                        if i < f.R().nrows() {
                            f.R()[(i, j)]
                        } else {
                            T::of_f64(0.0)
                        }
                    });
                    r.store(b, full.as_ref());
                } else {
                    q.store(b, f.compute_thin_Q().as_ref());
                    r.store(b, f.thin_R());
                }
            }
        }
        RoutineKind::Eigh { upper } => {
            let (x, w, v) = (mat(st.ins[0]), vec_(st.outs[0]), mat(st.outs[1]));
            for b in 0..batch {
                let a = x.load::<T>(b);
                if a.nrows() == 0 {
                    // faer's workspace sizing underflows on an empty matrix: nothing to compute.
                    continue;
                }
                let side = if upper { Side::Upper } else { Side::Lower };
                let e = a.self_adjoint_eigen(side).map_err(|e| {
                    format!("linalg.eigh: the algorithm failed to converge ({e:?}): the input has non-finite values or is ill-conditioned")
                })?;
                let vals: Vec<T> = (0..a.nrows()).map(|k| e.S()[k]).collect();
                w.store_vec(b, &vals);
                v.store(b, e.U());
            }
        }
        RoutineKind::Svd { full_matrices } => {
            let (x, u, s, vh) = (mat(st.ins[0]), mat(st.outs[0]), vec_(st.outs[1]), mat(st.outs[2]));
            for b in 0..batch {
                let a = x.load::<T>(b);
                if a.nrows().min(a.ncols()) == 0 {
                    // No singular values; the full factors are identities (as LAPACK's).
                    u.store(b, Mat::<T>::identity(u.rows, u.cols).as_ref());
                    vh.store(b, Mat::<T>::identity(vh.rows, vh.cols).as_ref());
                    continue;
                }
                let d = if full_matrices { a.svd() } else { a.thin_svd() }.map_err(|e| {
                    format!("linalg.svd: the algorithm failed to converge ({e:?}): the input has non-finite values or is ill-conditioned")
                })?;
                let k = a.nrows().min(a.ncols());
                let vals: Vec<T> = (0..k).map(|i| d.S()[i]).collect();
                u.store(b, d.U());
                s.store_vec(b, &vals);
                vh.store(b, d.V().transpose());
            }
        }
        RoutineKind::Geqrf => {
            let (x, a_out, tau) = (mat(st.ins[0]), mat(st.outs[0]), vec_(st.outs[1]));
            for b in 0..batch {
                let mut a = x.load::<T>(b);
                let k = a.nrows().min(a.ncols());
                if k > 0 {
                    // Block size 1: each reflection's own coefficient, faer's 1/τ (∞ for H = I).
                    let mut coeff = Mat::<T>::zeros(1, k);
                    let par = faer::Par::Seq;
                    let scratch = faer::linalg::qr::no_pivoting::factor::qr_in_place_scratch::<T>(
                        a.nrows(),
                        a.ncols(),
                        1,
                        par,
                        Default::default(),
                    );
                    let mut mem = faer::dyn_stack::MemBuffer::new(scratch);
                    let stack = faer::dyn_stack::MemStack::new(&mut mem);
                    faer::linalg::qr::no_pivoting::factor::qr_in_place(
                        a.as_mut(),
                        coeff.as_mut(),
                        par,
                        stack,
                        Default::default(),
                    );
                    let taus: Vec<T> = (0..k)
                        .map(|j| {
                            let c = coeff[(0, j)].to_f64();
                            T::of_f64(if c.is_finite() { 1.0 / c } else { 0.0 })
                        })
                        .collect();
                    tau.store_vec(b, &taus);
                }
                a_out.store(b, a.as_ref());
            }
        }
        RoutineKind::HouseholderProduct => {
            let (v, tau, q) = (mat(st.ins[0]), vec_(st.ins[1]), mat(st.outs[0]));
            for b in 0..batch {
                let a = v.load::<T>(b);
                let t = tau.load::<T>(b);
                q.store(b, orgqr(&a, t.as_ref().row(0).iter().copied().collect::<Vec<_>>().as_slice()).as_ref());
            }
        }
        RoutineKind::Special(_) => return Err("internal error: a polynomial step reached the linalg runtime".into()),
    }
    if let Some(api) = &st.check {
        if let Some(b) = infos.iter().position(|&i| i != 0) {
            return Err(check_message(api, &st.kind, if batch > 1 { Some(b) } else { None }, infos[b]));
        }
    }
    Ok(())
}

/// LAPACK orgqr: Q = H₀·H₁·…·H_{k-1} applied to the first n columns of the identity,
/// H_j = I - τ_j·v_j·v_jᵀ with v_j = (0.., 1, a[j+1.., j]), built from the last reflection back.
fn orgqr<T: Elem>(a: &Mat<T>, tau: &[T]) -> Mat<T> {
    let (m, n) = (a.nrows(), a.ncols());
    let mut q = Mat::<T>::from_fn(m, n, |i, j| if i == j { T::of_f64(1.0) } else { T::of_f64(0.0) });
    for j in (0..tau.len()).rev() {
        let v = |i: usize| if i == j { T::of_f64(1.0) } else { a[(i, j)] };
        for c in 0..n {
            let mut dot = T::of_f64(0.0);
            for i in j..m {
                dot += v(i) * q[(i, c)];
            }
            let s = tau[j] * dot;
            for i in j..m {
                q[(i, c)] -= s * v(i);
            }
        }
    }
    q
}

fn swap_rows<T: Elem>(x: &mut Mat<T>, a: usize, b: usize) {
    if a != b {
        for j in 0..x.ncols() {
            let t = x[(a, j)];
            x[(a, j)] = x[(b, j)];
            x[(b, j)] = t;
        }
    }
}

/// LU with partial pivoting in place, LAPACK's unblocked `getf2`: the pivot is the first entry of
/// largest magnitude, a column whose pivot is exactly zero is left unscaled (so a singular
/// matrix's U holds its zero and no inf or NaN), and info is the first such column, 1-based.
/// faer's LU divides by a zero pivot, which `det` of a singular matrix would turn into NaN.
fn getrf<T: Elem>(a: &mut Mat<T>) -> (Vec<i32>, i32) {
    let (m, n) = (a.nrows(), a.ncols());
    let k = m.min(n);
    let mut piv = vec![0i32; k];
    let mut info = 0;
    for j in 0..k {
        let mut p = j;
        let mut best = a[(j, j)].to_f64().abs();
        for i in j + 1..m {
            let v = a[(i, j)].to_f64().abs();
            // NaN never compares greater: LAPACK's idamax keeps the first entry then too.
            if v > best {
                best = v;
                p = i;
            }
        }
        piv[j] = p as i32 + 1;
        if a[(p, j)].to_f64() != 0.0 {
            swap_rows(a, j, p);
            let inv = T::of_f64(1.0) / a[(j, j)];
            for i in j + 1..m {
                a[(i, j)] *= inv;
            }
        } else if info == 0 {
            info = j as i32 + 1;
        }
        for i in j + 1..m {
            let l = a[(i, j)];
            for c in j + 1..n {
                a[(i, c)] = a[(i, c)] - l * a[(j, c)];
            }
        }
    }
    (piv, info)
}

/// torch's message for a failed factorization (`_linalg_check_errors`).
fn check_message(api: &str, kind: &RoutineKind, batch: Option<usize>, info: i32) -> String {
    let at = batch.map_or(String::new(), |b| format!("(Batch element {b}): "));
    match kind {
        RoutineKind::Cholesky { .. } => format!(
            "{api}: {at}The factorization could not be completed because the input is not positive-definite (the leading minor of order {info} is not positive-definite)."
        ),
        _ if api.contains("inv") => format!(
            "{api}: {at}The diagonal element {info} is zero, the inversion could not be completed because the input matrix is singular."
        ),
        _ if api.contains("solve") => format!(
            "{api}: {at}The solver failed because the input matrix is singular."
        ),
        _ => format!("{api}: {at}U[{info},{info}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"),
    }
}
