//! Output buffers a compiled graph keeps for its next call.
//!
//! A training step's graphs return tensors that die within the step (the backward frees each
//! saved activation after its last use). Allocated by torch, each came back from glibc's heap as
//! fresh pages: freeing them shrinks the heap past its trim threshold and the next step grows it
//! again, and a page fault costs about 3.5 µs on this machine (the ResNet training step took
//! 12-17 thousand of them). An [`OutputSlot`] hands out one output's memory as a torch tensor
//! (through DLPack) and takes it back when torch frees it, so the next call writes memory that is
//! already paged in. A slot keeps one spare: a graph holds at most one set of its outputs' memory
//! beyond what is alive, freed with the graph.

use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor};
use dlpark::metadata::Dynamic;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// One output's memory.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a block owns its allocation alone; whichever thread drops it frees it.
unsafe impl Send for Block {}

impl Block {
    fn new(layout: Layout) -> Option<Block> {
        // SAFETY: the layout's size is non-zero (`OutputSlot::new`).
        NonNull::new(unsafe { std::alloc::alloc(layout) }).map(|ptr| Block { ptr, layout })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `Block::new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

type Spare = Arc<Mutex<Option<Block>>>;

/// A block lent to a tensor: torch drops it (DLPack's deleter) when the tensor's storage dies,
/// on whichever thread frees it, and it becomes its slot's spare unless the slot has one.
struct Lease {
    block: Option<Block>,
    spare: Spare,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
        if spare.is_none() {
            *spare = self.block.take();
        }
    }
}

/// Hands out one graph output's memory as a torch tensor of a fixed shape, strides and dtype.
#[pyclass(frozen)]
pub struct OutputSlot {
    spare: Spare,
    layout: Layout,
    shape: Vec<i64>,
    strides: Vec<i64>,
    dtype: DLDataType,
    from_dlpack: Py<PyAny>,
}

#[pymethods]
impl OutputSlot {
    /// Tensors of `shape` and `strides` (in elements, non-negative) and DLPack dtype (`code`,
    /// `bits`), made by `from_dlpack` (`torch._C._from_dlpack`).
    #[new]
    fn new(shape: Vec<i64>, strides: Vec<i64>, code: u8, bits: u8, from_dlpack: Py<PyAny>) -> PyResult<Self> {
        if shape.len() != strides.len() || shape.iter().chain(&strides).any(|&d| d < 0) {
            return Err(PyValueError::new_err(format!("not a layout: shape {shape:?}, strides {strides:?}")));
        }
        // The elements the layout spans (none if a dim is empty), at whole bytes each.
        let span = if shape.contains(&0) {
            Some(0)
        } else {
            shape
                .iter()
                .zip(&strides)
                .try_fold(1i64, |n, (&d, &s)| (d - 1).checked_mul(s).and_then(|x| n.checked_add(x)))
        };
        let nbytes = span
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| n.checked_mul(usize::from(bits).div_ceil(8)))
            .ok_or_else(|| PyValueError::new_err(format!("the layout {shape:?} / {strides:?} overflows")))?;
        // Aligned as torch's CPU allocator aligns (Ember's kernels need 16 bytes).
        let layout = Layout::from_size_align(nbytes.max(1), 64).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let dtype = DLDataType { code: DLDataTypeCode(code), bits, lanes: 1 };
        Ok(OutputSlot { spare: Arc::default(), layout, shape, strides, dtype, from_dlpack })
    }

    /// A tensor over the spare block, or over a new one.
    fn __call__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        let block = match spare {
            Some(b) => b,
            None => Block::new(self.layout)
                .ok_or_else(|| PyMemoryError::new_err(format!("cannot allocate {} bytes", self.layout.size())))?,
        };
        let data = block.ptr.as_ptr().cast();
        let lease = Box::new(Lease { block: Some(block), spare: Arc::clone(&self.spare) });
        let mut tensor = Dynamic::new(self.shape.as_slice(), self.strides.as_slice())
            .initialize_as::<DLManagedTensor>(lease)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        tensor
            .set_data(data)
            .set_device(DLDevice { device_type: DLDeviceType::CPU, device_id: 0 })
            .set_dtype(self.dtype);
        // SAFETY: data, device, dtype, shape and strides are set; the lease owns the memory.
        let capsule = unsafe { tensor.finish() }.into_pyobject(py)?;
        self.from_dlpack.bind(py).call1((capsule,))
    }
}
