//! Code generation targets. Each target is one module; `cpu` runs here, `tpu` emits StableHLO.

pub mod cpu;
pub mod tpu;
