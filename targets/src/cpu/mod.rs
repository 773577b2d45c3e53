//! The CPU target: `ten` ops become LLVM loop kernels, matmuls call the `gemm` crate.

pub mod codegen;
mod layout;
pub mod plan;
pub mod runtime;

pub use runtime::{host_blas, host_openmp, set_host_blas, set_host_openmp, HostTensor, Manifest, Program, TensorView};
