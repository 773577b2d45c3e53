//! Ember's IR: MLIR-style modules of `func.func` ops whose bodies hold ops of Ember's dialects.
//!
//! Dialects (one vocabulary shared by every pass and target):
//! - `torch`: core ATen as imported from torch.export (`torch.aten.add.Tensor`), one table.
//! - `ten`: the small tensor-level dialect targets and the e-graph consume.
//! - `ember`: structure: `ember.fusion_group` regions, `ember.kernel` functions, `ember.yield`.

pub mod attr;
pub mod dialect;
pub mod module;
pub mod parse;
pub mod print;
pub mod sym;
pub mod types;
pub mod verify;

pub use attr::{Attr, Loc};
pub use module::{Attrs, BlockId, Module, OpId, RegionId, Value};
pub use parse::{parse_module, ParseError};
pub use print::print_module;
pub use sym::{Bounds, SymExpr};
pub use types::{DType, Dim, TensorType, Type};
