//! The parts of torch.export's serialized schema (major 8) that Ember reads.
//! Source: `torch/_export/serde/schema.py`. Arguments stay as JSON values and are decoded by the
//! importer, so an unexpected argument kind is reported with the node that holds it.

use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;

#[derive(Deserialize)]
pub struct ExportedProgram {
    pub graph_module: GraphModule,
    #[serde(default)]
    pub range_constraints: BTreeMap<String, RangeConstraint>,
    pub schema_version: SchemaVersion,
    #[serde(default)]
    pub torch_version: Option<String>,
}

#[derive(Deserialize)]
pub struct SchemaVersion {
    pub major: i64,
    pub minor: i64,
}

#[derive(Deserialize)]
pub struct RangeConstraint {
    pub min_val: Option<Json>,
    pub max_val: Option<Json>,
}

#[derive(Deserialize)]
pub struct GraphModule {
    pub graph: Graph,
    pub signature: GraphSignature,
}

#[derive(Deserialize)]
pub struct Graph {
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub tensor_values: BTreeMap<String, TensorMeta>,
    #[serde(default)]
    pub sym_int_values: BTreeMap<String, Json>,
}

#[derive(Deserialize)]
pub struct Node {
    pub target: String,
    pub inputs: Vec<NamedArgument>,
    pub outputs: Vec<Json>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The user's line, when the program is built in memory (an eager region) rather than read
    /// from a file whose nodes carry `stack_trace` metadata.
    #[serde(skip)]
    pub source: Option<ember_ir::attr::Loc>,
}

#[derive(Deserialize)]
pub struct NamedArgument {
    pub name: String,
    pub arg: Json,
    #[serde(default)]
    pub kind: Option<i64>,
}

#[derive(Deserialize, Clone)]
pub struct TensorMeta {
    pub dtype: i64,
    pub sizes: Vec<Json>,
    #[serde(default)]
    pub strides: Vec<Json>,
    #[serde(default)]
    pub storage_offset: Option<Json>,
}

#[derive(Deserialize)]
pub struct GraphSignature {
    pub input_specs: Vec<BTreeMap<String, Json>>,
    pub output_specs: Vec<BTreeMap<String, Json>>,
}

#[derive(Deserialize)]
pub struct WeightsConfig {
    pub config: BTreeMap<String, WeightEntry>,
}

#[derive(Deserialize)]
pub struct WeightEntry {
    pub path_name: String,
    #[serde(default)]
    pub use_pickle: bool,
    pub tensor_meta: TensorMeta,
}
