//! Code generation targets. Each target is one module; `cpu` runs here.

pub mod cpu;
