//! Per-target cost models: time estimated from bytes moved and FLOPs against one table of numbers
//! per target, each with its source. Only the CPU table can be checked against measurement here
//! (`tools/bench/bench_egraph.py` compares estimates with measured kernel times).
//!
//! A node is costed as if it ran as its own kernel: it reads its tensor operands and writes its
//! result once. A composite is one kernel over its inputs and output, so recognizing one pays
//! exactly when it saves memory traffic or launches, which is what fusion buys on every target.

use super::lang::{type_of, ENode, EG};
use ember_ir::dialect::ten::{Class, Cost, TenOp};
use ember_ir::{SymExpr, TensorType};

pub struct CostTable {
    pub target: &'static str,
    /// Dense matmul throughput for f32 operands (FLOP/s).
    pub matmul_flops: f64,
    /// Elementwise/vector throughput (FLOP/s).
    pub vector_flops: f64,
    /// Main-memory bandwidth (bytes/s).
    pub mem_bw: f64,
    /// Fixed cost of one kernel (launch, DMA setup, loop prologue) in seconds.
    pub kernel_overhead: f64,
    /// On-chip memory one kernel can keep a working set in (bytes).
    pub on_chip: f64,
    /// Whether a matmul kernel reads operands through layout views (transposes, reshapes) of
    /// computed values; when false only views of weights join a `gemm` group.
    pub matmul_reads_views: bool,
    /// Whether a `gemm` group's epilogue is a pass of its own over the product (a library GEMM,
    /// then a kernel): an elementwise tail whose one reader is another gemm group's epilogue
    /// then moves there (`partition`), saving the product's write and read.
    pub epilogue_pass: bool,
    pub sources: &'static [&'static str],
}

#[rustfmt::skip]
pub static TABLES: &[CostTable] = &[
    CostTable {
        target: "cpu",
        matmul_flops: 320e9, vector_flops: 134e9, mem_bw: 22e9, kernel_overhead: 3e-6, on_chip: 2.0 * 1024.0 * 1024.0, matmul_reads_views: true, epilogue_pass: true,
        sources: &[
            "matmul 320 GFLOP/s: torch.mm 4096x1024x4096 f32, 2 threads, measured on this machine (tools/bench/results/cpu.md roofline)",
            "memory 22 GB/s: copy bandwidth measured on this machine (same run)",
            "vector 134 GFLOP/s: 2 cores x 32 f32 FLOP/cycle (AVX-512 FMA) x 2.1 GHz (/proc/cpuinfo), not measured",
            "kernel overhead 3 us: rayon dispatch of one step, EMBER_PROFILE on small kernels",
            "on-chip 2 MiB: L2 per core (working set a row-grouped kernel keeps in cache)",
        ],
    },
    CostTable {
        target: "tpu",
        matmul_flops: 918e12 / 6.0, vector_flops: 918e12 / 64.0, mem_bw: 1638e9, kernel_overhead: 2e-6, on_chip: 128.0 * 1024.0 * 1024.0, matmul_reads_views: true, epilogue_pass: false,
        sources: &[
            "TPU v6e (Trillium), one chip: 918 TFLOP/s bf16, HBM 1638 GB/s, two 256x256 MXUs (cloud.google.com/tpu/docs/v6e)",
            "f32 matmul at precision HIGHEST is emulated with 6 bf16 passes: 918/6 TFLOP/s (assumption, XLA's bf16_6x)",
            "vector unit 128 lanes x 8 sublanes: taken as 1/64 of MXU peak (assumption)",
            "TPU7x (Ironwood) for comparison: 2307 TFLOP/s bf16, HBM 7380 GB/s per chip (cloud.google.com/tpu/docs/tpu7x); select with target tpu7x",
            "VMEM 128 MiB and 2 us per fusion launch: assumptions, not from a published spec",
        ],
    },
    CostTable {
        target: "tpu7x",
        matmul_flops: 2307e12 / 6.0, vector_flops: 2307e12 / 64.0, mem_bw: 7380e9, kernel_overhead: 2e-6, on_chip: 128.0 * 1024.0 * 1024.0, matmul_reads_views: true, epilogue_pass: false,
        sources: &["TPU7x (Ironwood), one chip: 2307 TFLOP/s bf16, HBM 7380 GB/s (cloud.google.com/tpu/docs/tpu7x); same assumptions as tpu"],
    },
    CostTable {
        target: "trainium",
        matmul_flops: 20e12, vector_flops: 1e12, mem_bw: 368e9, kernel_overhead: 1.3e-6, on_chip: 24.0 * 1024.0 * 1024.0, matmul_reads_views: false, epilogue_pass: false,
        sources: &[
            "Trainium2, one NeuronCore-v3: TensorE 128x128 at 2.4 GHz, ~20 FP32 TFLOP/s (~79 BF16) (AWS Trn2 architecture docs, via ../shared/brief.md)",
            "VectorE ~1 FP32 TFLOP/s; ScalarE ~1.2 (same source)",
            "16 DMA queues ~368 GB/s per core, ~1.3 us fixed cost per DMA (same source)",
            "SBUF 24 MiB per core: 128 partitions x 192 KiB; 212,984 B per partition usable by kernels (same source)",
        ],
    },
];

pub fn table(target: &str) -> Option<&'static CostTable> {
    TABLES.iter().find(|t| t.target == target)
}

/// Symbols are costed at this size (their bounds are not known to the e-graph).
const SYMBOL_SIZE: i64 = 64;

pub fn numel(t: &TensorType) -> f64 {
    t.numel().eval(&|_| Some(SYMBOL_SIZE)).unwrap_or(SYMBOL_SIZE) as f64
}

pub fn bytes(t: &TensorType) -> f64 {
    numel(t) * t.dtype.byte_size() as f64
}

pub fn dim(e: &SymExpr) -> f64 {
    e.eval(&|_| Some(SYMBOL_SIZE)).unwrap_or(SYMBOL_SIZE) as f64
}

/// FLOPs of a `dot_general` with result `out` contracting `lhs` over `contract`.
pub fn dot_flops(out: &TensorType, lhs: &TensorType, contract: &[i64]) -> f64 {
    2.0 * numel(out) * contract.iter().map(|&d| dim(&lhs.dims[d as usize])).product::<f64>()
}

impl CostTable {
    /// Seconds of one kernel doing `matmul` and `vector` FLOPs and moving `bytes`.
    pub fn time(&self, matmul: f64, vector: f64, bytes: f64) -> f64 {
        self.kernel_overhead + (matmul / self.matmul_flops + vector / self.vector_flops).max(bytes / self.mem_bw)
    }
}

/// Ops that cost nothing alone: values a consumer computes from indices.
fn is_free(n: &ENode) -> bool {
    match n.ten() {
        Some(t) => t.class() == Class::Free,
        None => matches!(n.op.as_str(), "input" | "opaque" | "result"),
    }
}

/// Arithmetic per output element: transcendental functions are inline polynomials in the CPU
/// codegen (range reduction plus a degree-6..9 polynomial, about 20 operations; a library call on
/// other targets costs similar), division and square roots a few; everything else one.
pub fn flops_per_element(op: Option<TenOp>) -> f64 {
    match op.map(TenOp::cost) {
        Some(Cost::Transcendental) => 20.0,
        Some(Cost::Divide) => 4.0,
        Some(Cost::Simple) | None => 1.0,
    }
}

/// (FLOPs, bytes) of one node run as its own kernel.
pub fn work(eg: &EG, n: &ENode) -> (f64, f64) {
    let ty = &eg.analysis.types[&n.ty];
    let ins: f64 = n.args.iter().filter(|&&a| eg[a].data.konst.is_none()).map(|&a| bytes(&type_of(eg, a))).sum();
    let io = ins + bytes(ty);
    let flops = if n.ten() == Some(TenOp::DotGeneral) {
        dot_flops(ty, &type_of(eg, n.args[0]), &super::rules::ints(eg, n, "lhs_contract"))
    } else if n.op.as_str() == "ember.attention" {
        let (q, k, v) = (type_of(eg, n.args[0]), type_of(eg, n.args[1]), type_of(eg, n.args[2]));
        let tk = dim(&k.dims[k.rank() - 2]);
        let d = dim(&q.dims[q.rank() - 1]);
        let dv = dim(&v.dims[v.rank() - 1]);
        2.0 * numel(&q) / d * tk * (d + dv)
    } else {
        numel(ty) * flops_per_element(n.ten())
    };
    (flops, io)
}

/// Estimated seconds of one node run alone on `t`.
pub fn node_time(eg: &EG, n: &ENode, t: &CostTable) -> f64 {
    if is_free(n) {
        return 1e-12;
    }
    let (flops, io) = work(eg, n);
    if n.ten() == Some(TenOp::DotGeneral) || n.op.as_str() == "ember.attention" {
        t.time(flops, 0.0, io)
    } else {
        t.time(0.0, flops, io)
    }
}

/// egg cost function: the summed time of a node and the nodes below it.
pub struct TimeCost<'a> {
    pub eg: &'a EG,
    pub table: &'static CostTable,
    /// Composites cost infinity: extraction of the plain decomposition, for group bodies.
    pub plain: bool,
}

impl egg::CostFunction<super::lang::ENode> for TimeCost<'_> {
    type Cost = f64;
    fn cost<C: FnMut(egg::Id) -> f64>(&mut self, n: &ENode, mut costs: C) -> f64 {
        if self.plain && n.op.as_str().starts_with("ember.") {
            return f64::INFINITY;
        }
        let own = node_time(self.eg, n, self.table);
        n.args.iter().fold(own, |acc, &a| acc + costs(a))
    }
}
