//! The `ember` dialect: structure shared by the optimizer and every target.
//!
//! - `ember.fusion_group`: one region whose ops become one kernel; operands are the values it reads
//!   from outside, results are what its `ember.yield` returns. Attributes say why it exists
//!   (`kind`, the rules that formed it) so reports can explain it.
//! - `ember.yield`: terminator of a fusion group.

use super::infer::Rule::Trust;
use super::OpDef;

#[rustfmt::skip]
pub static OPS: &[OpDef] = &[
    OpDef { name: "ember.fusion_group", sig: "(Tensor[] inputs, *, str kind, str[]? rules=None, str? activation=None, int? dim=None, float? eps=None, float? scale=None, str? approximate=None, bool? safe=None) -> Tensor[]", rule: Trust, doc: "One kernel: the region's block arguments are `inputs`; results are what its ember.yield returns. `kind` and its parameters (ARCHITECTURE.md, the fusion-group contract) name what it computes; `rules` the rewrites that formed it." },
    OpDef { name: "ember.yield", sig: "(Tensor[] values) -> ()", rule: Trust, doc: "Terminator of an ember.fusion_group: its results." },
];
