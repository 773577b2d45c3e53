//! Static verifier of kernel tile plans: every on-chip buffer and every Tensor Engine instruction
//! of a generated NKI kernel against the published NeuronCore-v3 (Trn2) limits. A kernel that
//! breaks one is rejected before its source is written; the message names the group and its line.
//!
//! Allocation is static: a kernel allocates all its tiles once, up front, and keeps them until it
//! returns (Ember's templates are written that way), so capacity is the sum over all tiles. The
//! reference interpreter (`ember.nki_interp`) checks the same limits at run time.

/// Partitions of SBUF and PSUM: the first dim of every on-chip tile.
pub const PARTITIONS: i64 = 128;
/// `nc_matmul` stationary tile `[K, M]`: `K <= 128` (partitions), `M <= 128`.
pub const STATIONARY_FREE_MAX: i64 = 128;
/// `nc_matmul` moving tile `[K, N]`: `N <= 512`.
pub const MOVING_FREE_MAX: i64 = 512;
/// PSUM: 8 banks of 2 KiB per partition; a matmul result (fp32) fits one bank.
pub const PSUM_BANKS: i64 = 8;
pub const PSUM_BANK_BYTES: i64 = 2048;
/// SBUF bytes per partition an NKI kernel may allocate on Trn2: 212,984 of the 229,376 (224 KiB)
/// per partition; the rest is reserved by the Neuron compiler/runtime. Source: AWS's NKI
/// documentation for Trn2 (NeuronCore-v3). `ember.nki_interp` defines the same number.
pub const SBUF_PARTITION_BYTES: i64 = 212_984;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mem {
    Sbuf,
    Psum,
}

/// One on-chip tile: `shape[0]` is the partition dim.
#[derive(Clone, Debug)]
pub struct Buffer {
    pub name: String,
    pub mem: Mem,
    pub shape: Vec<i64>,
    pub elem_bytes: i64,
}

impl Buffer {
    pub fn bytes_per_partition(&self) -> i64 {
        self.shape[1..].iter().product::<i64>() * self.elem_bytes
    }
}

/// A Tensor Engine instruction at its largest use in the kernel (ragged tiles are smaller).
#[derive(Clone, Debug)]
pub enum Engine {
    /// `nc_matmul(dst, stationary [K, M], moving [K, N])`.
    Matmul { at: String, stationary: [i64; 2], moving: [i64; 2] },
    /// `nc_transpose(dst, data [P, F])` on the Tensor Engine: both dims <= 128.
    Transpose { at: String, data: [i64; 2] },
}

/// What the verifier sees of a kernel: its tiles and Tensor Engine instructions.
#[derive(Clone, Debug, Default)]
pub struct TilePlan {
    pub buffers: Vec<Buffer>,
    pub engine: Vec<Engine>,
}

/// Checks a plan; `what` names the kernel, its group and source line. Every violation is listed.
pub fn verify(plan: &TilePlan, what: &str) -> Result<(), String> {
    let mut errs = Vec::new();
    let (mut sbuf, mut banks) = (0i64, 0i64);
    for b in &plan.buffers {
        let per = b.bytes_per_partition();
        if b.shape[0] > PARTITIONS {
            errs.push(format!("tile `{}` {:?} has partition dim {} > {PARTITIONS}", b.name, b.shape, b.shape[0]));
        }
        match b.mem {
            Mem::Sbuf => sbuf += per,
            Mem::Psum => {
                banks += 1;
                if per > PSUM_BANK_BYTES {
                    errs.push(format!(
                        "PSUM tile `{}` {:?} needs {per} bytes per partition > one bank ({PSUM_BANK_BYTES} bytes)",
                        b.name, b.shape
                    ));
                }
            }
        }
    }
    if sbuf > SBUF_PARTITION_BYTES {
        let mut sizes: Vec<String> = plan
            .buffers
            .iter()
            .filter(|b| b.mem == Mem::Sbuf)
            .map(|b| format!("`{}` {}", b.name, b.bytes_per_partition()))
            .collect();
        sizes.truncate(8);
        errs.push(format!(
            "SBUF tiles need {sbuf} bytes per partition > {SBUF_PARTITION_BYTES} usable on Trn2 ({})",
            sizes.join(", ")
        ));
    }
    if banks > PSUM_BANKS {
        errs.push(format!("{banks} PSUM tiles > {PSUM_BANKS} banks"));
    }
    for e in &plan.engine {
        match e {
            Engine::Matmul { at, stationary: [k, m], moving: [k2, n] } => {
                if *k > PARTITIONS || *k2 > PARTITIONS || *m > STATIONARY_FREE_MAX || *n > MOVING_FREE_MAX {
                    errs.push(format!(
                        "nc_matmul `{at}`: stationary [{k}, {m}] / moving [{k2}, {n}] exceed the Tensor Engine's \
                         stationary [{PARTITIONS}, {STATIONARY_FREE_MAX}] / moving [{PARTITIONS}, {MOVING_FREE_MAX}]"
                    ));
                }
            }
            Engine::Transpose { at, data: [p, f] } => {
                if *p > PARTITIONS || *f > PARTITIONS {
                    errs.push(format!("nc_transpose `{at}`: data [{p}, {f}] exceeds the Tensor Engine's [128, 128]"));
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("{what} breaks Trn2 limits:\n  - {}", errs.join("\n  - ")))
    }
}
