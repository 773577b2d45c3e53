//! Code generation targets. Each target is one module; `cpu` runs here, `tpu` emits StableHLO, `trainium`
//! HLO (through the tpu emitter) plus NKI kernels.

pub mod checksum;
pub mod cpu;
pub mod tpu;
pub mod trainium;
