// The native recorder of `ember.eager()`: ATen ops reach Ember's eager scheduler without a Python
// frame per op.
//
// Deferred values are tensors of their own TensorImpl (`Deferred`) on torch's `Lazy` dispatch key,
// reporting device cpu: every op on them reaches `dispatch` below, a boxed kernel. Inside an
// `ember.eager()` block the key is also in the thread's included set, so ops on ordinary CPU
// tensors (parameters, inputs) reach it too. Autograd runs above the key as usual: backward ops
// arrive here like forward ones. An op is recorded as plain data (its operator, argument values,
// value ids), its result metadata comes from torch's meta kernels (cached per signature), and it
// returns new `Deferred` tensors at once. A flush (a sync point, the optimizer step's end, leaving
// the block, the queue cap) turns the queued ops into a region, compiles it once through Rust (the
// `NativeApi` table of the `_ember` extension) and replays it from a cache keyed by the op stream;
// every `Deferred` tensor still referenced then becomes an ordinary CPU tensor in place (its
// storage set, its dispatch key swapped to CPU), views as views of their base's memory.
//
// In-place ops are recorded in their functional form: a `Deferred` target takes the new value, a
// real one gets a pending write that the flush applies. A write that another live tensor must see
// (to a view, or to a tensor with live views) flushes first and then writes real memory. Ops Ember
// cannot compile, random ops, ops returning non-tensors (`.item()`) and factories run with torch
// eager on real tensors, after a flush when they read deferred values.

#include <Python.h>

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

constexpr auto kKey = c10::DispatchKey::Lazy;

// The `_ember` extension's table (tools/python/src/lib.rs, `NativeApi`).
struct Api {
  int (*known)(const char*);
  int64_t (*compile)(const uint8_t*, size_t, uint8_t*, size_t);
  int (*run)(int64_t, const size_t*, const size_t*, size_t, const size_t*, const size_t*, size_t, uint8_t*, size_t);
  void (*stats)(double*);
  void (*clear)();
};
const Api* g_api = nullptr;

// The thread's included keys without `Lazy`. `tls_set_dispatch_key_included(Lazy, false)` would
// leave its backend bit behind, and that bit alone routes every CPU op back here.
void exclude_key() {
  auto s = c10::impl::tls_local_dispatch_key_set();
  s.included_ = s.included_.remove(kKey).remove_backend(c10::BackendComponent::LazyBit);
  c10::impl::_force_tls_local_dispatch_key_set(s);
}

// Recording off for a scope: meta inference, torch eager, materialization.
// Also below autograd: values computed or written here are the ops' own, which autograd above
// the key already accounted for (a flush from Python, at an optimizer step's end, included).
struct Unrecorded {
  c10::impl::LocalDispatchKeySet saved;
  at::AutoDispatchBelowADInplaceOrView below;
  Unrecorded() : saved(c10::impl::tls_local_dispatch_key_set()) { exclude_key(); }
  ~Unrecorded() { c10::impl::_force_tls_local_dispatch_key_set(saved); }
};

uint64_t g_epoch = 1;

struct Deferred : c10::TensorImpl {
  int64_t vid;       // value id in region `epoch`; -1 once materialized
  uint64_t epoch;
  // The tensor whose memory this one views (a view op, `detach`); null for a value of its own.
  c10::intrusive_ptr<c10::TensorImpl> root;
  bool viewed = false;  // a view or alias of this tensor was made
  // On a root: its views and aliases, and how many writes through them this region recorded.
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl>> aliases;
  int writes = 0;  // (a root is materialized at the region's end, so this counts one region)

  Deferred(int64_t v, c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset, caffe2::TypeMeta dt)
      : c10::TensorImpl(c10::DispatchKeySet(kKey), dt, c10::Device(c10::kCPU)), vid(v), epoch(g_epoch) {
    set_sizes_and_strides(sizes, strides, offset);
    set_storage_access_should_throw();
  }

  bool pending() const { return vid >= 0; }

  // Called when the last strong reference goes; the object itself lives on while weak ones (the
  // recorder's) exist, and must not keep its root alive meanwhile.
  void release_resources() override {
    root.reset();
    aliases.clear();
    c10::TensorImpl::release_resources();
  }

  // From here on an ordinary CPU tensor over `real`'s memory.
  void materialize(const at::Tensor& real) {
    storage_ = real.storage();
    storage_access_should_throw_ = false;
    set_sizes_and_strides(real.sizes(), real.strides(), real.storage_offset());
    key_set_ = key_set_.remove_backend(c10::BackendComponent::LazyBit) | c10::DispatchKeySet(c10::BackendComponent::CPUBit);
    vid = -1;
    root.reset();
  }

  c10::intrusive_ptr<c10::TensorImpl> alias(const c10::VariableVersion& vc, bool allow_change) const;

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(const c10::VariableVersion& vc, bool allow_change) const override {
    if (!pending()) return c10::TensorImpl::shallow_copy_and_detach(vc, allow_change);
    return alias(vc, allow_change);
  }
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(c10::VariableVersion&& vc, bool allow_change) const override {
    if (!pending()) return c10::TensorImpl::shallow_copy_and_detach(std::move(vc), allow_change);
    return alias(vc, allow_change);
  }
};

Deferred* deferred_of(const at::Tensor& t) {
  if (!t.defined() || !t.key_set().has(kKey)) return nullptr;
  auto* d = dynamic_cast<Deferred*>(t.unsafeGetTensorImpl());
  return d && d->pending() && d->epoch == g_epoch ? d : nullptr;
}

// ---- per-operator facts ------------------------------------------------------------------------

enum Route { kRecord, kEager, kLike, kInplace, kInplaceView };

struct OpInfo {
  const c10::OperatorHandle* op;
  std::string target;  // aten.add.Tensor
  Route route = kRecord;
  bool view = false;      // returns an alias of its first argument
  bool known = false;     // Ember's torch dialect defines it
  bool unsupported = false;  // a region with it failed to compile for the CPU target
  int mask_arg = -1;      // position of `output_mask`
  bool alias = false;     // `detach`, `alias`, `lift_fresh`: the same value
  bool decomp = false;    // has a decomposition in `decompose`
  bool active = false;    // being run by `inplace` (its functional form must not come back to it)
  bool warn = false;      // runs with torch eager for want of a lowering: say so once
  const c10::OperatorHandle* functional = nullptr;  // of an in-place or out= op
  std::vector<int> writes;  // positions of arguments written (out=)
};

// By operator: the handle a kernel is given is not always the same object.
std::unordered_map<c10::OperatorHandle, OpInfo*> g_infos;

const c10::OperatorHandle* find_functional(const c10::FunctionSchema& s, bool inplace) {
  // `add_.Tensor` -> `add.Tensor`; `mul.out` -> the overload of `mul` with the same arguments but
  // `out`. Types are compared without alias annotations.
  std::string base = s.name();
  if (inplace) base = base.substr(0, base.size() - 1);
  std::vector<std::string> want;
  for (const auto& a : s.arguments()) {
    if (!inplace && a.alias_info() && a.alias_info()->isWrite()) continue;
    want.push_back(a.type()->str());
  }
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name != base) continue;
    auto h = c10::Dispatcher::singleton().findOp(name);
    if (!h || !h->hasSchema()) continue;
    const auto& fs = h->schema();
    if (fs.arguments().size() != want.size() || fs.is_mutable()) continue;
    bool same = true;
    for (size_t i = 0; i < want.size() && same; i++) same = fs.arguments()[i].type()->str() == want[i];
    if (same) return new c10::OperatorHandle(*h);
  }
  return nullptr;
}

const std::unordered_set<std::string>& random_ops() {
  static const std::unordered_set<std::string> s = {
      "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::normal", "aten::normal_",
      "aten::uniform", "aten::uniform_", "aten::bernoulli", "aten::bernoulli_", "aten::native_dropout",
      "aten::multinomial", "aten::exponential_", "aten::random_", "aten::rand_like", "aten::randn_like",
      "aten::randint_like", "aten::cauchy_", "aten::geometric_", "aten::log_normal_"};
  return s;
}

const std::unordered_set<std::string>& like_ops() {
  static const std::unordered_set<std::string> s = {
      "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_empty",
      "aten::new_empty_strided", "aten::new_zeros", "aten::new_ones", "aten::new_full", "aten::empty_strided",
      "aten::empty", "aten::zeros", "aten::ones", "aten::full", "aten::scalar_tensor", "aten::arange"};
  return s;
}

bool known_target(const std::string& target) { return g_api && g_api->known(target.c_str()) != 0; }

// `add.Scalar` and the like: torch's implementation calls the `Tensor` overload with the number
// as a tensor, which the region reads as an input.
bool forwards_to_tensor(const c10::OperatorName& name) {
  // `fill.Scalar` is `empty_like(self).fill_(value)` instead.
  if (name.overload_name == "Tensor" || name.name == "aten::fill") return false;
  return c10::Dispatcher::singleton().findOp({name.name, "Tensor"}).has_value();
}

// The ops `decompose` rewrites.
bool has_decomposition(const std::string& target) {
  static const std::unordered_set<std::string> decomps = {
      "aten.addcmul.default", "aten.addcdiv.default", "aten.lerp.Scalar", "aten.add.Tensor", "aten.sub.Tensor",
      "aten.threshold_backward.default", "aten.mse_loss.default", "aten.mse_loss_backward.default", "aten.t.default", "aten.zero.default"};
  return decomps.count(target) > 0;
}

OpInfo* info_of(const c10::OperatorHandle& op) {
  auto it = g_infos.find(op);
  if (it != g_infos.end()) return it->second;
  auto* in = new OpInfo();
  in->op = new c10::OperatorHandle(op);
  const auto& s = op.schema();
  const std::string& name = s.name();
  auto ns = name.substr(0, name.find("::"));
  auto base = name.substr(name.find("::") + 2);
  in->target = ns + "." + base + "." + (s.overload_name().empty() ? "default" : s.overload_name());
  bool returns_tensors = !s.returns().empty();
  for (const auto& r : s.returns()) {
    auto k = r.type()->kind();
    if (k != c10::TypeKind::TensorType && !(k == c10::TypeKind::ListType && r.type()->containedType(0)->kind() == c10::TypeKind::TensorType))
      returns_tensors = false;
  }
  for (size_t i = 0; i < s.arguments().size(); i++) {
    const auto& a = s.arguments()[i];
    if (a.name() == "output_mask") in->mask_arg = (int)i;
    if (a.alias_info() && a.alias_info()->isWrite()) in->writes.push_back((int)i);
  }
  bool first_written = !in->writes.empty() && in->writes[0] == 0;
  in->view = !s.returns().empty() && s.returns()[0].alias_info() && in->writes.empty();
  in->known = ns == "aten" && known_target(in->target);
  in->alias = name == "aten::detach" || name == "aten::alias" || name == "aten::lift_fresh";
  in->decomp = has_decomposition(in->target);
  if (ns != "aten" || !returns_tensors || random_ops().count(name)) {
    in->route = kEager;
  } else if (like_ops().count(name)) {
    in->route = kLike;
  } else if (!in->writes.empty()) {
    bool meta_only = op.hasTag(at::Tag::inplace_view);
    in->functional = in->writes.size() == 1 ? find_functional(s, first_written && base.back() == '_') : nullptr;
    in->route = meta_only ? kInplaceView : kInplace;
    if (!in->functional) in->route = kEager;
  } else if (!in->known && !in->alias && !in->decomp) {
    in->route = kEager;
    in->warn = true;
  }
  g_infos.emplace(op, in);
  return in;
}

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "f32";
    case at::kDouble: return "f64";
    case at::kHalf: return "f16";
    case at::kBFloat16: return "bf16";
    case at::kLong: return "i64";
    case at::kInt: return "i32";
    case at::kShort: return "i16";
    case at::kChar: return "i8";
    case at::kByte: return "ui8";
    case at::kBool: return "i1";
    default: return nullptr;
  }
}

std::string short_target(const std::string& target) {
  const std::string d = ".default";
  return target.size() > d.size() && target.compare(target.size() - d.size(), d.size(), d) == 0 ? target.substr(0, target.size() - d.size())
                                                                                                : target;
}

// Once per op, at the op's first eager run or its region's failed compile.
void warn_unlowered(const std::string& target) {
  static std::unordered_set<std::string> warned;
  if (warned.insert(target).second)
    TORCH_WARN("ember.eager: `", short_target(target), "` has no Ember CPU lowering; it runs with torch eager");
}

// ---- the region being recorded -----------------------------------------------------------------

// Small vectors inline (most tensors have up to 5 dims, most arguments one id): recording makes
// several per op, and heap allocations were a large share of its cost.
using Dims = c10::SmallVector<int64_t, 5>;

struct Value {
  Dims sizes, strides;
  int64_t offset = 0;
  at::ScalarType dtype;
};

// One argument of a recorded op: its tag (the scheduler's, see `Region::from_json`) and value;
// tensors are value ids (`ids`), skipped placement arguments have tag 0.
struct Arg {
  const char* tag = nullptr;
  c10::IValue v;     // as the region sees it
  c10::IValue orig;  // as the op was called (torch eager runs it so)
  c10::SmallVector<int64_t, 1> ids;  // -2 for a None in an optional-tensor list
};

struct Op {
  OpInfo* info;
  std::vector<Arg> args;
  c10::SmallVector<int64_t, 1> outs;
  std::vector<bool> hidden;  // results the caller did not ask for (`output_mask`)
};

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (auto x : v) h = (h ^ (uint64_t)x) * 0x100000001b3ULL;
    return (size_t)h;
  }
};

struct Plan {
  int64_t handle = 0;  // > 0: compiled; -1: has ops without a CPU lowering
};

struct Pending {
  at::Tensor target;
  int64_t vid;
  int64_t order = 0;  // when the target first got a pending write: regions list writes in this order
};

struct Stats {
  int64_t hits = 0, misses = 0, ops_aliased = 0;
  double flush_seconds = 0;  // flushes' wall time: compile, run, materialization
  int64_t ops_recorded = 0, ops_eager = 0, flushes = 0, values_written = 0, regions_interpreted = 0;
  std::unordered_map<std::string, int64_t> flush_reasons;
  std::unordered_map<std::string, int64_t> eager_ops;
};

struct Recorder {
  std::vector<Value> values;
  std::vector<Op> ops;
  std::vector<at::Tensor> inputs;  // undefined for a lifted Python number (`lifted`)
  std::vector<int64_t> input_vids;
  // Python numbers read as rank-0 inputs: (input position, value). They become tensors only at
  // the flush, packed into one buffer per dtype (a tensor per number cost ~0.3 µs each to record).
  std::vector<std::pair<size_t, double>> lifted;
  std::vector<at::Tensor> inputs_kept;  // real tensors read through another input (their ids stay theirs)
  std::unordered_map<c10::TensorImpl*, int64_t> input_of;  // real tensor -> value id
  std::unordered_set<c10::StorageImpl*> input_storages;
  std::unordered_map<c10::StorageImpl*, Pending> pending;
  int64_t next_write = 0;
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl>> live;
  std::vector<int64_t> key;
  std::vector<int64_t> key_scratch;  // `record`'s buffer for one op's part of `key`
  std::unordered_map<std::vector<int64_t>, Plan, VecHash> plans;
  std::unordered_map<uint64_t, std::vector<c10::IValue>> metas;
  Stats stats;
  int64_t cap = 4096;
  bool log = false;
  // The repeated-subsequence heuristic (a loop without sync points): once the queue holds the
  // same op sequence twice in a row it is flushed, and the running hash of that sequence becomes
  // a cut: later queues flush as soon as they reach it, so each loop iteration is one region and
  // replays one plan. Repeats shorter than `kMinPeriod` ops are layers of one model.
  std::vector<uint64_t> sigs;
  uint64_t prefix = 0;
  std::vector<size_t> candidates;
  std::unordered_set<uint64_t> cuts;
  const char* cut = nullptr;  // flush at the next op, for this reason
  void after_record(uint64_t sig);
  void explain(const char* reason, const std::vector<int64_t>& full, size_t n_out);

  int64_t new_value(c10::IntArrayRef sizes, c10::IntArrayRef strides, int64_t offset, at::ScalarType dt) {
    Value v;
    v.sizes.assign(sizes.begin(), sizes.end());
    v.strides.assign(strides.begin(), strides.end());
    v.offset = offset;
    v.dtype = dt;
    values.push_back(std::move(v));
    return (int64_t)values.size() - 1;
  }

  bool empty() const { return ops.empty() && pending.empty(); }
  void flush(const char* reason);
  void reset();
};

Recorder g_rec;
std::thread::id g_owner;  // the thread that last entered a block

c10::intrusive_ptr<c10::TensorImpl> Deferred::alias(const c10::VariableVersion& vc, bool allow_change) const {
  auto* self = const_cast<Deferred*>(this);
  auto r = root ? root : c10::intrusive_ptr<c10::TensorImpl>::reclaim_copy(self);
  static_cast<Deferred*>(r.get())->viewed = true;
  self->viewed = true;
  auto impl = c10::make_intrusive<Deferred>(vid, sizes(), strides(), storage_offset(), dtype());
  impl->root = r;
  static_cast<Deferred*>(r.get())->aliases.emplace_back(c10::intrusive_ptr<c10::TensorImpl>(impl));
  impl->set_version_counter(vc);
  impl->set_allow_tensor_metadata_change(allow_change);
  g_rec.live.emplace_back(c10::intrusive_ptr<c10::TensorImpl>(impl));
  return impl;
}

at::Tensor wrap(int64_t vid, const at::Tensor* view_of = nullptr) {
  const auto& v = g_rec.values[vid];
  auto impl = c10::make_intrusive<Deferred>(vid, v.sizes, v.strides, v.offset, c10::scalarTypeToTypeMeta(v.dtype));
  if (view_of) {
    auto* base = static_cast<Deferred*>(view_of->unsafeGetTensorImpl());
    impl->root = base->root ? base->root : c10::intrusive_ptr<c10::TensorImpl>::reclaim_copy(base);
    auto* root = static_cast<Deferred*>(impl->root.get());
    root->viewed = true;
    root->aliases.emplace_back(c10::intrusive_ptr<c10::TensorImpl>(impl));
  }
  g_rec.live.emplace_back(c10::intrusive_ptr<c10::TensorImpl>(impl));
  return at::Tensor(std::move(impl));
}

// ---- materialization --------------------------------------------------------------------------

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

void json_float(std::ostringstream& o, double x) {
  if (std::isnan(x)) o << "\"nan\"";
  else if (std::isinf(x)) o << (x > 0 ? "\"inf\"" : "\"-inf\"");
  else {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", x);
    o << buf;
    if (!strpbrk(buf, ".eE")) o << ".0";
  }
}

void json_meta(std::ostringstream& o, const Value& v) {
  o << "[[";
  for (size_t i = 0; i < v.sizes.size(); i++) o << (i ? "," : "") << v.sizes[i];
  o << "],\"" << dtype_name(v.dtype) << "\"]";
}

// `[item(0),item(1),...]`.
template <class F>
void json_list(std::ostringstream& o, size_t n, F item) {
  o << "[";
  for (size_t j = 0; j < n; j++) {
    if (j) o << ",";
    item(j);
  }
  o << "]";
}

// Region ids: inputs first, then every op's results in order (`Region::from_json`).
std::string region_json(const std::vector<int64_t>& rid, const std::vector<int64_t>& outputs) {
  auto& r = g_rec;
  std::ostringstream o;
  o << "{\"inputs\":";
  json_list(o, r.input_vids.size(), [&](size_t i) { json_meta(o, r.values[r.input_vids[i]]); });
  o << ",\"ops\":[";
  for (size_t k = 0; k < r.ops.size(); k++) {
    const auto& op = r.ops[k];
    const auto& args = op.info->op->schema().arguments();
    o << (k ? "," : "") << "[\"" << op.info->target << "\",[";
    bool first = true;
    for (size_t i = 0; i < op.args.size(); i++) {
      const auto& a = op.args[i];
      if (!a.tag) continue;
      o << (first ? "" : ",") << "[\"" << args[i].name() << "\",\"" << a.tag << "\",";
      first = false;
      std::string t = a.tag;
      if (t == "n") o << "null";
      else if (t == "t") o << rid[a.ids[0]];
      else if (t == "ts" || t == "ots") {
        json_list(o, a.ids.size(), [&](size_t j) {
          if (a.ids[j] < 0) o << "null";
          else o << rid[a.ids[j]];
        });
      } else if (t == "i") o << a.v.toInt();
      else if (t == "f") json_float(o, a.v.toDouble());
      else if (t == "b") o << (a.v.toBool() ? "true" : "false");
      else if (t == "is") {
        auto l = a.v.toIntVector();
        json_list(o, l.size(), [&](size_t j) { o << l[j]; });
      } else if (t == "fs") {
        auto l = a.v.toDoubleVector();
        json_list(o, l.size(), [&](size_t j) { json_float(o, l[j]); });
      } else if (t == "bs") {
        auto l = a.v.toBoolList();
        json_list(o, l.size(), [&](size_t j) { o << (l.get(j) ? "true" : "false"); });
      } else if (t == "s") o << "\"" << json_escape(a.v.toStringRef()) << "\"";
      else if (t == "dt") o << "\"" << dtype_name(a.v.toScalarType()) << "\"";
      o << "]";
    }
    o << "],";
    json_list(o, op.outs.size(), [&](size_t j) { json_meta(o, r.values[op.outs[j]]); });
    o << "]";
  }
  o << "],\"outputs\":";
  json_list(o, outputs.size(), [&](size_t i) { o << rid[outputs[i]]; });
  o << "}";
  return o.str();
}

// Runs the region's ops with torch eager (ops without a CPU lowering): the value of every id.
std::vector<at::Tensor> interpret() {
  auto& r = g_rec;
  std::vector<at::Tensor> val(r.values.size());
  Unrecorded off;
  for (size_t i = 0; i < r.input_vids.size(); i++) val[r.input_vids[i]] = r.inputs[i];
  for (auto [i, x] : r.lifted) val[r.input_vids[i]] = at::scalar_tensor(x, at::TensorOptions().dtype(r.values[r.input_vids[i]].dtype));
  for (const auto& op : r.ops) {
    torch::jit::Stack st;
    for (size_t i = 0; i < op.args.size(); i++) {
      const auto& a = op.args[i];
      std::string t = a.tag ? a.tag : "";
      if (t == "t") st.push_back(val[a.ids[0]]);
      else if (t == "ts") {
        std::vector<at::Tensor> l;
        for (auto id : a.ids) l.push_back(val[id]);
        st.push_back(l);
      } else if (t == "ots") {
        c10::List<std::optional<at::Tensor>> l;
        for (auto id : a.ids) l.push_back(id < 0 ? std::optional<at::Tensor>() : std::optional<at::Tensor>(val[id]));
        st.push_back(l);
      } else st.push_back((int)i == op.info->mask_arg ? a.v : a.orig);
    }
    op.info->op->callBoxed(&st);
    size_t k = 0;
    for (const auto& o : st) {
      if (o.isTensor()) val[op.outs[k++]] = o.toTensor();
      else if (o.isTensorList())
        for (const auto& t : o.toTensorList()) val[op.outs[k++]] = t;
    }
  }
  return val;
}

int64_t span(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (size_t i = 0; i < sizes.size(); i++) {
    if (sizes[i] == 0) return 0;
    n += (sizes[i] - 1) * strides[i];
  }
  return n;
}

void Recorder::reset() {
  values.clear();
  ops.clear();
  inputs.clear();
  input_vids.clear();
  lifted.clear();
  inputs_kept.clear();
  input_of.clear();
  input_storages.clear();
  pending.clear();
  live.clear();
  key.clear();
  sigs.clear();
  prefix = 0;
  candidates.clear();
  cut = nullptr;
  g_epoch++;
}

constexpr size_t kMinPeriod = 8;

inline uint64_t step_hash(uint64_t h, uint64_t sig) { return (h ^ sig) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL; }

void Recorder::after_record(uint64_t sig) {
  sigs.push_back(sig);
  prefix = step_hash(prefix, sig);
  size_t n = sigs.size();
  if (cuts.count(prefix)) {
    cut = "repeat";
    return;
  }
  // Periods start at the queue's start (an iteration boundary: a training step's queue starts
  // after the optimizer step, so its identical layers do not count as iterations).
  if (n > kMinPeriod && sig == sigs[0]) candidates.push_back(n - 1);
  std::vector<size_t> keep;
  for (size_t p : candidates) {
    if (n == 2 * p && std::equal(sigs.begin(), sigs.begin() + p, sigs.begin() + p)) {
      uint64_t h = 0;
      for (size_t i = 0; i < p; i++) h = step_hash(h, sigs[i]);
      cuts.insert(h);
      cut = "repeat";
      return;
    }
    if (2 * p > n) keep.push_back(p);
  }
  candidates.swap(keep);
  if ((int64_t)n >= cap) cut = "queue cap";
}

// The op a key position belongs to: its index and operator (op segments end with -30; the
// region inputs an op reads are registered just before its own entries, as -3 ... -4).
std::pair<size_t, const OpInfo*> op_at(const std::vector<int64_t>& key, size_t pos) {
  size_t k = 0, start = 0;
  for (size_t i = 0; i < pos && i < key.size(); i++)
    if (key[i] == -30) k++, start = i + 1;
  size_t i = start;
  while (i < key.size() && key[i] == -3) {
    while (i < key.size() && key[i] != -4) i++;
    i++;
  }
  return {k, i < key.size() && key[i] != -7 ? reinterpret_cast<const OpInfo*>(key[i]) : nullptr};
}

// Directories whose frames are machinery between the user's line and the recorder (torch's,
// ember's), set by `init`.
std::vector<std::string> g_internal_dirs;

// The user's line that is running now (`file:line`: the innermost Python frame outside torch and
// ember), or "" when the thread runs no Python. Only the flush log asks (torch's bindings release
// the GIL around an op, so it is taken back here).
std::string user_line() {
  if (!Py_IsInitialized()) return "";
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string out;
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f && out.empty()) {
    PyCodeObject* code = PyFrame_GetCode(f);
    PyObject* name = PyObject_GetAttrString((PyObject*)code, "co_filename");
    const char* file = name ? PyUnicode_AsUTF8(name) : nullptr;
    if (file) {
      std::string fn = file;
      bool internal = fn.starts_with("<frozen");
      for (auto& d : g_internal_dirs) internal = internal || fn.starts_with(d);
      if (!internal) out = fn + ":" + std::to_string(PyFrame_GetLineNumber(f));
    }
    PyErr_Clear();
    Py_XDECREF(name);
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  PyGILState_Release(gil);
  return out;
}

// `EMBER_EAGER_LOG=1`: each flush, its reason, the user's line, and on a cache miss where it first
// differs from the nearest cached region (the longest common prefix of their keys).
void Recorder::explain(const char* reason, const std::vector<int64_t>& full, size_t n_out) {
  auto it = plans.find(full);
  std::string what = it != plans.end() && it->second.handle != 0 ? "plan cache hit" : "miss";
  if (it == plans.end() || it->second.handle == 0) {
    size_t best = 0;
    const std::vector<int64_t>* nearest = nullptr;
    for (const auto& [k, p] : plans) {
      size_t n = std::mismatch(k.begin(), k.end(), full.begin(), full.end()).first - k.begin();
      if (!nearest || n > best) best = n, nearest = &k;
    }
    if (nearest) {
      auto [i, here] = op_at(full, best);
      auto there = op_at(*nearest, best).second;
      std::ostringstream o;
      o << "; the nearest cached region differs at op " << i << " (`" << (here ? here->target : "the outputs")
        << "` here, `" << (there ? there->target : "the outputs") << "` there"
        << (here && here == there ? ": its arguments or their shapes" : "") << ")";
      what += o.str();
    } else {
      what += " (no region cached yet)";
    }
  }
  std::string line = user_line();
  fprintf(stderr, "ember.eager: flush (%s) at %s: %zu ops, %zu inputs, %zu outputs, %zu pending writes; %s\n", reason,
          line.empty() ? "an unknown line" : line.c_str(), ops.size(), inputs.size(), n_out, pending.size(), what.c_str());
}

void Recorder::flush(const char* reason) {
  if (empty()) {
    if (!live.empty() || !values.empty()) reset();
    return;
  }
  stats.flushes++;
  stats.flush_reasons[reason]++;
  struct Timer {
    double& total;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Timer() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } timer{stats.flush_seconds};
  // What must be written: every live deferred tensor's own memory (views: their root's), and
  // every pending write.
  std::vector<c10::intrusive_ptr<c10::TensorImpl>> alive;
  for (auto& w : live) {
    auto s = w.lock();
    if (!s) continue;
    auto* d = static_cast<Deferred*>(s.get());
    if (d->pending() && d->epoch == g_epoch) alive.push_back(std::move(s));
  }
  std::vector<int64_t> outputs;
  std::unordered_map<int64_t, size_t> out_index;
  auto want = [&](int64_t vid) {
    if (out_index.emplace(vid, outputs.size()).second) outputs.push_back(vid);
  };
  for (auto& s : alive) {
    auto* d = static_cast<Deferred*>(s.get());
    if (!d->root) want(d->vid);
    else want(static_cast<Deferred*>(d->root.get())->vid);
  }
  // In the order the writes were first made (the map's own order follows addresses, which would
  // make the same program's regions differ from run to run).
  std::vector<Pending> writes;
  for (auto& [_, p] : pending) writes.push_back(p);
  std::sort(writes.begin(), writes.end(), [](const Pending& a, const Pending& b) { return a.order < b.order; });
  for (auto& p : writes) want(p.vid);
  if (outputs.empty()) {
    // Nobody holds a result and nothing is written: the region's ops are dead.
    reset();
    return;
  }
  std::vector<int64_t> full = key;
  full.push_back(-7);
  full.insert(full.end(), outputs.begin(), outputs.end());
  if (log) explain(reason, full, outputs.size());
  auto& plan = plans[full];
  std::vector<at::Tensor> result(outputs.size());
  bool interpreted = false;
  if (plan.handle != 0) stats.hits++;
  else stats.misses++;
  if (plan.handle == 0) {
    std::vector<int64_t> rid(values.size(), -1);
    for (size_t i = 0; i < input_vids.size(); i++) rid[input_vids[i]] = (int64_t)i;
    int64_t next = (int64_t)input_vids.size();
    for (auto& op : ops)
      for (auto o : op.outs) rid[o] = next++;
    auto text = region_json(rid, outputs);
    uint8_t err[4096];
    int64_t h = g_api->compile((const uint8_t*)text.data(), text.size(), err, sizeof err);
    if (h == 0) {
      // Never a wrong result: the region runs with torch eager, and says why once.
      TORCH_WARN_ONCE("ember.eager: a region failed to compile and runs with torch eager: ", (const char*)err);
      if (log) fprintf(stderr, "ember.eager: a region failed to compile: %s\n", (const char*)err);
      h = -1;
    }
    else if (h < 0) {
      // Remembered, so later occurrences run with torch eager and the rest of their regions
      // compiles (the compiler names ops without a `.default` overload).
      std::string missing = "," + std::string((const char*)err) + ",";
      for (auto& op : ops)
        if (missing.find("," + short_target(op.info->target) + ",") != std::string::npos) {
          op.info->unsupported = true;
          warn_unlowered(op.info->target);
        }
    }
    plan.handle = h;
  }
  if (plan.handle > 0) {
    std::vector<at::Tensor> dense(inputs.size());
    std::vector<size_t> ip(inputs.size()), il(inputs.size()), op(outputs.size()), ol(outputs.size());
    {
      Unrecorded off;
      for (size_t i = 0; i < inputs.size(); i++) {
        if (!inputs[i].defined()) continue;  // lifted: below
        dense[i] = inputs[i].is_contiguous() ? inputs[i] : inputs[i].contiguous();
        ip[i] = (size_t)dense[i].data_ptr();
        il[i] = dense[i].nbytes();
      }
      for (at::ScalarType dt : {at::kFloat, at::kDouble}) {
        size_t n = 0;
        for (auto [i, x] : lifted) n += values[input_vids[i]].dtype == dt;
        if (n == 0) continue;
        at::Tensor buf = at::empty({(int64_t)n}, at::TensorOptions().dtype(dt));
        size_t k = 0, es = buf.element_size();
        for (auto [i, x] : lifted) {
          if (values[input_vids[i]].dtype != dt) continue;
          if (dt == at::kFloat) buf.data_ptr<float>()[k] = (float)x;
          else buf.data_ptr<double>()[k] = x;
          ip[i] = (size_t)buf.data_ptr() + k * es;
          il[i] = es;
          k++;
        }
        dense.push_back(buf);  // kept alive for the run
      }
      for (size_t i = 0; i < outputs.size(); i++) {
        const auto& v = values[outputs[i]];
        result[i] = at::empty(v.sizes, at::TensorOptions().dtype(v.dtype));
        op[i] = (size_t)result[i].data_ptr();
        ol[i] = result[i].nbytes();
      }
    }
    uint8_t err[4096];
    if (g_api->run(plan.handle, ip.data(), il.data(), ip.size(), op.data(), ol.data(), op.size(), err, sizeof err) != 0) {
      reset();
      TORCH_CHECK(false, "ember.eager: a region failed to run: ", (const char*)err);
    }
  } else {
    auto val = interpret();
    for (size_t i = 0; i < outputs.size(); i++) result[i] = val[outputs[i]];
    interpreted = true;
    stats.regions_interpreted++;
  }
  stats.values_written += (int64_t)outputs.size();
  // Deferred tensors become CPU tensors: roots over their value laid out as their metadata says,
  // views over their root's memory.
  Unrecorded off;
  std::unordered_map<c10::TensorImpl*, at::Tensor> real;
  std::vector<bool> shared(outputs.size(), false);  // a live tensor now uses the result's memory
  auto materialize_root = [&](Deferred* d) -> at::Tensor {
    auto it = real.find(d);
    if (it != real.end()) return it->second;
    auto& buf = result[out_index.at(d->vid)];
    std::vector<int64_t> sizes(d->sizes().begin(), d->sizes().end()), strides(d->strides().begin(), d->strides().end());
    int64_t off = d->storage_offset();
    at::Tensor t;
    if (!interpreted && off == 0 && d->is_contiguous() && buf.sizes() == d->sizes()) {
      t = buf;
      shared[out_index.at(d->vid)] = true;
    } else {
      auto storage = at::empty({off + span(sizes, strides)}, buf.options());
      t = storage.as_strided(sizes, strides, off);
      t.copy_(buf);
    }
    real[d] = t;
    d->materialize(t);
    return t;
  };
  for (auto& s : alive) {
    auto* d = static_cast<Deferred*>(s.get());
    if (!d->root) materialize_root(d);
  }
  for (auto& s : alive) {
    auto* d = static_cast<Deferred*>(s.get());
    if (!d->root) continue;
    auto* r = static_cast<Deferred*>(d->root.get());
    at::Tensor base = r->pending() ? materialize_root(r) : real.at(r);
    d->materialize(base.as_strided(d->sizes(), d->strides(), d->storage_offset()));
  }
  // A written tensor takes over its result's memory (`set_`) when nothing else sees that memory
  // (no live tensor over it, no other write of the value, not an interpreted value that may alias
  // another) and it alone holds its storage, whole and dense, as the Python recorder's `_assign`
  // does: an optimizer step's parameters and moments, copied otherwise (~2.4 MB a step for the
  // benchmark's MLP).
  std::vector<int> writers(outputs.size(), 0);
  for (auto& p : writes) writers[out_index.at(p.vid)]++;
  // The region's inputs are let go first: a weight read through its transpose (`input_vid`) would
  // otherwise look shared.
  ops.clear();
  inputs.clear();
  inputs_kept.clear();
  at::NoGradGuard no_grad;
  for (auto& p : writes) {
    size_t i = out_index.at(p.vid);
    const at::Tensor& v = result[i];
    at::Tensor& t = p.target;
    if (!interpreted && !shared[i] && writers[i] == 1 && t.has_storage() && t.storage().use_count() == 1 &&
        t.storage_offset() == 0 && t.is_contiguous() && t.sizes() == v.sizes() && t.dtype() == v.dtype() &&
        t.storage().nbytes() == v.nbytes()) {
      t.set_(v);
    } else {
      t.copy_(v);
    }
  }
  reset();
}

// ---- recording ----------------------------------------------------------------------------------

inline void mix(uint64_t& h, uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; }

void key_tensor(uint64_t& h, const at::Tensor& t) {
  if (!t.defined()) return mix(h, 0x404);
  mix(h, (uint64_t)t.scalar_type() + (t.unsafeGetTensorImpl()->is_wrapped_number() ? 1000 : 0));
  for (auto s : t.sizes()) mix(h, (uint64_t)s);
  mix(h, 0x5eed);
  for (auto s : t.strides()) mix(h, (uint64_t)s);
  mix(h, (uint64_t)t.storage_offset());
}

int64_t record_transpose(int64_t base);

// Whether any defined tensor among the arguments (lists included) satisfies `pred`.
template <class F>
bool any_tensor(c10::ArrayRef<c10::IValue> args, F pred) {
  for (const auto& a : args) {
    if (a.isTensor()) {
      if (a.toTensor().defined() && pred(a.toTensor())) return true;
    } else if (a.isTensorList()) {
      for (const at::Tensor& t : a.toTensorList())
        if (t.defined() && pred(t)) return true;
    } else if (a.isOptionalTensorList()) {
      for (std::optional<at::Tensor> t : a.toOptionalTensorList())
        if (t.has_value() && t->defined() && pred(*t)) return true;
    }
  }
  return false;
}

// The pending write to a real tensor's memory, if any, and whether `t` reads it as written (the
// same tensor, or the same geometry) or is another alias of that memory.
const Pending* pending_of(const at::Tensor& t, bool* same) {
  auto& r = g_rec;
  if (r.pending.empty() || !t.has_storage() || deferred_of(t)) return nullptr;
  auto it = r.pending.find(t.storage().unsafeGetStorageImpl());
  if (it == r.pending.end()) return nullptr;
  const auto& p = it->second.target;
  *same = p.unsafeGetTensorImpl() == t.unsafeGetTensorImpl() ||
          (p.sizes() == t.sizes() && p.strides() == t.strides() && p.storage_offset() == t.storage_offset());
  return &it->second;
}

// The value id a real tensor reads as: a pending write to its memory, or a region input.
int64_t input_vid(const at::Tensor& t) {
  auto& r = g_rec;
  bool same = false;
  if (const Pending* p = pending_of(t, &same)) {
    if (same) return p->vid;
    r.flush("aliased read of a pending write");
  }
  auto it = r.input_of.find(t.unsafeGetTensorImpl());
  if (it != r.input_of.end()) return it->second;
  if (t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0)) {
    // A transposed real matrix (a Linear's `weight.t()`): its matrix and a recorded transpose,
    // which the region's GEMMs read in place, where a dense copy would cost a pass per flush.
    at::Tensor base;
    {
      Unrecorded off;
      base = t.t();
    }
    int64_t bv = input_vid(base);
    int64_t v = record_transpose(bv);
    r.input_of[t.unsafeGetTensorImpl()] = v;
    r.inputs_kept.push_back(t);
    return v;
  }
  int64_t v = r.new_value(t.sizes(), t.strides(), t.storage_offset(), t.scalar_type());
  r.inputs.push_back(t);
  r.input_vids.push_back(v);
  r.input_of[t.unsafeGetTensorImpl()] = v;
  if (t.has_storage()) r.input_storages.insert(t.storage().unsafeGetStorageImpl());
  r.key.push_back(-3);
  r.key.push_back((int64_t)t.scalar_type());
  for (auto s : t.sizes()) r.key.push_back(s);
  r.key.push_back(-4);
  return v;
}

at::Tensor to_meta(const at::Tensor& t) {
  // A wrapped number stays itself (a CPU scalar, which meta kernels accept beside meta tensors):
  // its promotion rules differ from a rank-0 tensor's.
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
  auto m = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
  if (t.storage_offset()) m = m.as_strided(t.sizes(), t.strides(), t.storage_offset());
  return m;
}

bool float_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kDouble; }

// Runs an op with torch eager on real tensors (flushing first when it reads deferred values or
// memory with a pending write, or writes memory the queue reads).
void run_eager(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info, bool flush) {
  auto& r = g_rec;
  r.stats.ops_eager++;
  r.stats.eager_ops[info->target]++;
  if ((info->warn || info->unsupported) && c10::impl::tls_is_dispatch_key_included(kKey)) warn_unlowered(info->target);
  if (flush && !r.empty()) r.flush(info->target.c_str());
  TORCH_CHECK(!any_tensor(torch::jit::last(*stack, op.schema().arguments().size()), deferred_of), "ember.eager: `",
              info->target, "` reads a deferred tensor that no region computed (an earlier region failed)");
  Unrecorded off;
  op.callBoxed(stack);
}

bool reads_deferred_or_pending(torch::jit::Stack* stack, size_t nargs, bool* writes_input, const OpInfo* info) {
  auto& r = g_rec;
  auto args = torch::jit::last(*stack, nargs);
  for (int w : info->writes) {
    const auto& a = args[w];
    if (a.isTensor() && a.toTensor().has_storage() && r.input_storages.count(a.toTensor().storage().unsafeGetStorageImpl()))
      *writes_input = true;
  }
  return any_tensor(args, [&](const at::Tensor& t) {
    return deferred_of(t) || (t.has_storage() && r.pending.count(t.storage().unsafeGetStorageImpl()));
  });
}

void record(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info);

// In-place and out= ops: the functional form, recorded (or run) through the dispatcher, then
// assigned to the written tensor.
constexpr int kMaxWritesThroughViews = 16;

// The root's multi-index (one int64 tensor per root dim, each shaped like the alias) of each
// element of an alias of it, from their sizes, strides and offsets; null when the root's layout
// is not dense (then the write goes through memory). Cached per layout pair.
using Indices = c10::List<std::optional<at::Tensor>>;
std::map<std::vector<int64_t>, std::shared_ptr<Indices>> g_alias_indices;

std::shared_ptr<Indices> alias_indices(const Deferred* root, const c10::TensorImpl* alias) {
  std::vector<int64_t> key;
  for (const c10::TensorImpl* t : {static_cast<const c10::TensorImpl*>(root), alias}) {
    key.push_back(t->dim());
    for (auto x : t->sizes()) key.push_back(x);
    for (auto x : t->strides()) key.push_back(x);
    key.push_back(t->storage_offset());
  }
  auto it = g_alias_indices.find(key);
  if (it != g_alias_indices.end()) return it->second;
  if (g_alias_indices.size() >= 1024) g_alias_indices.clear();  // a bound, not an LRU: layouts rarely vary
  auto rs = root->sizes(), rst = root->strides();
  int64_t rd = root->dim();
  std::vector<int64_t> order(rd);
  for (int64_t i = 0; i < rd; i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rst[a] > rst[b]; });
  auto as = alias->sizes(), ast = alias->strides();
  int64_t n = alias->numel(), ad = alias->dim();
  std::vector<at::Tensor> idx;
  std::vector<int64_t*> ptr;
  {
    Unrecorded off;
    for (int64_t d = 0; d < rd; d++) {
      idx.push_back(at::empty(as, at::TensorOptions().dtype(at::kLong)));
      ptr.push_back(idx.back().data_ptr<int64_t>());
    }
  }
  std::vector<int64_t> a(ad, 0);
  for (int64_t e = 0; e < n; e++) {
    int64_t s = alias->storage_offset() - root->storage_offset();
    for (int64_t k = 0; k < ad; k++) s += a[k] * ast[k];
    int64_t rem = s;
    for (int64_t d : order) {
      int64_t i = rs[d] == 1 ? 0 : rem / rst[d];
      if (i < 0 || i >= rs[d]) return g_alias_indices[key] = nullptr;
      ptr[d][e] = i;
      rem -= i * rst[d];
    }
    if (rem != 0) return g_alias_indices[key] = nullptr;
    for (int64_t k = ad - 1; k >= 0; k--) {
      if (++a[k] < as[k]) break;
      a[k] = 0;
    }
  }
  auto list = std::make_shared<Indices>();
  for (auto& t : idx) list->push_back(std::move(t));
  return g_alias_indices[key] = list;
}

at::Tensor as_tensor(c10::TensorImpl* t) { return at::Tensor(c10::intrusive_ptr<c10::TensorImpl>::reclaim_copy(t)); }

// A recorded write of `value` to `target`, a view of `root` or the root itself with live views:
// the root takes the value scattered at the target's elements, and every live alias is read
// again from it (as torch's functionalization does), so all of them see the write.
void write_through(Deferred* root, Deferred* target, const at::Tensor& value) {
  root->writes++;
  at::Tensor root_new = target == root ? value : at::index_put(as_tensor(root), *alias_indices(root, target), value, false);
  root->vid = deferred_of(root_new)->vid;
  std::vector<c10::weak_intrusive_ptr<c10::TensorImpl>> keep;
  for (auto& w : root->aliases) {
    auto a = w.lock();
    if (!a) continue;
    keep.push_back(w);
    auto* ad = static_cast<Deferred*>(a.get());
    if (!ad->pending() || ad->epoch != g_epoch) continue;
    if (ad == target) {
      ad->vid = deferred_of(value)->vid;
      continue;
    }
    auto ix = alias_indices(root, ad);
    if (!ix) {
      // Checked for the target only: this alias is read back through a flush instead.
      g_rec.flush("write through an alias");
      return;
    }
    ad->vid = deferred_of(at::index(root_new, *ix))->vid;
  }
  root->aliases.swap(keep);
}

// Whether an op's functional form reaches the recorder as an op Ember compiles (torch implements
// some functional forms by cloning and calling the in-place op).
bool recordable(const c10::OperatorHandle& f) {
  OpInfo* fi = info_of(f);
  if (fi->decomp) return true;
  if (fi->route != kRecord || fi->unsupported || fi->active) return false;
  if (f.hasKernelForDispatchKey(kKey)) return true;
  if (!f.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd)) return true;
  return forwards_to_tensor(f.operator_name());
}

void inplace(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info) {
  auto& r = g_rec;
  const auto& s = op.schema();
  size_t nargs = s.arguments().size();
  if (info->active || !recordable(*info->functional)) {
    bool writes_input = false;
    bool deps = reads_deferred_or_pending(stack, nargs, &writes_input, info);
    run_eager(op, stack, info, deps || writes_input);
    return;
  }
  struct Active {
    OpInfo* i;
    explicit Active(OpInfo* i) : i(i) { i->active = true; }
    ~Active() { i->active = false; }
  } active(info);
  auto args = torch::jit::last(*stack, nargs);
  int w = info->writes[0];
  at::Tensor target = args[w].toTensor();
  auto* d = deferred_of(target);
  Deferred* root = d && (d->root || d->viewed) ? (d->root ? static_cast<Deferred*>(d->root.get()) : d) : nullptr;
  if (root && (root->writes >= kMaxWritesThroughViews || !alias_indices(root, d))) {
    // Another live tensor shares this memory and the write cannot be recorded (too many on one
    // root this region, or a layout the scatter does not cover): make them all real, then
    // write real memory.
    r.flush("write through an alias");
    d = nullptr;
    root = nullptr;
  }
  // In place: the same arguments; out=: all but the written one.
  torch::jit::Stack fs;
  for (size_t i = 0; i < nargs; i++)
    if (w == 0 || (int)i != w) fs.push_back(args[i]);
  info->functional->callBoxed(&fs);  // back through dispatch: recorded, decomposed or eager
  TORCH_CHECK(fs.size() == 1 && fs[0].isTensor(), "ember.eager: `", info->target, "` writes more than one tensor");
  at::Tensor value = fs[0].toTensor();
  TORCH_CHECK(value.sizes() == target.sizes() || w != 0, "ember.eager: in-place `", info->target, "`: result ", value.sizes(),
              " does not fit into ", target.sizes());
  auto* dv = deferred_of(value);
  if (w != 0 && value.sizes() != target.sizes()) {
    // out= of another shape: torch resizes it.
    if (!r.empty()) r.flush("resized out=");
    Unrecorded off;
    at::Tensor rv = value;
    target.resize_(rv.sizes());
    target.copy_(rv);
  } else if (d && dv && root) {
    write_through(root, d, value);
  } else if (d && dv) {
    d->vid = dv->vid;  // the target takes the new value
  } else if (!d && dv && target.has_storage()) {
    auto* st = target.storage().unsafeGetStorageImpl();
    auto it = r.pending.find(st);
    if (it != r.pending.end() && it->second.target.unsafeGetTensorImpl() != target.unsafeGetTensorImpl()) {
      r.flush("partial in-place write");
      // The value was materialized by the flush: write it now.
      Unrecorded off;
      target.copy_(value);
    } else if (it != r.pending.end()) {
      it->second.vid = dv->vid;
    } else {
      r.pending[st] = Pending{target, dv->vid, r.next_write++};
    }
  } else {
    // The functional form ran eagerly (its value is real), or the target is deferred and the
    // value real: write it the ordinary way.
    if (d || deferred_of(value)) r.flush("in-place write of a real value");
    Unrecorded off;
    target.copy_(value);
  }
  torch::jit::drop(*stack, nargs);
  stack->push_back(target);
}

// `t_`, `unsqueeze_`, `transpose_`...: the functional view, then the target takes its metadata.
void inplace_view(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info) {
  size_t nargs = op.schema().arguments().size();
  at::Tensor target = torch::jit::peek(*stack, 0, nargs).toTensor();
  auto* d = deferred_of(target);
  if (d && info->target == "aten.detach_.default") {
    // Autograd's metadata only (handled above this key): the value stays.
    torch::jit::drop(*stack, nargs);
    stack->push_back(target);
    return;
  }
  if (!d || d->root || d->viewed || info->active || !recordable(*info->functional)) {
    run_eager(op, stack, info, true);
    return;
  }
  torch::jit::Stack fs(torch::jit::last(*stack, nargs).begin(), torch::jit::last(*stack, nargs).end());
  size_t naliases = d->aliases.size();
  info->active = true;
  try {
    info->functional->callBoxed(&fs);
  } catch (...) {
    info->active = false;
    throw;
  }
  info->active = false;
  // The functional view's result is this tensor's next state, not another alias of it.
  d->viewed = false;
  d->aliases.erase(d->aliases.begin() + std::min(naliases, d->aliases.size()), d->aliases.end());
  at::Tensor value = fs[0].toTensor();
  auto* dv = deferred_of(value);
  if (!dv) {
    torch::jit::drop(*stack, nargs);
    stack->push_back(target);
    run_eager(op, stack, info, true);
    return;
  }
  d->vid = dv->vid;
  d->set_sizes_and_strides(value.sizes(), value.strides(), value.storage_offset());
  torch::jit::drop(*stack, nargs);
  stack->push_back(target);
}

constexpr int64_t kSmallIndex = 1 << 16;

// Ops whose Scalar arguments scale tensors (an optimizer's step size, a momentum): recorded as
// ops on rank-0 inputs, so a changing value does not recompile, in the CPU kernel's evaluation
// order so results match torch eager.
bool decompose(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info) {
  size_t nargs = op.schema().arguments().size();
  auto args = torch::jit::last(*stack, nargs);
  const auto& t = info->target;
  at::Tensor out;
  if (t == "aten.addcmul.default" || t == "aten.addcdiv.default") {
    const auto& x = args[0].toTensor();
    const auto& t1 = args[1].toTensor();
    const auto& t2 = args[2].toTensor();
    auto value = args[3].toScalar();
    if (!float_dtype(x.scalar_type()) || value.isComplex()) return false;
    at::Tensor m = value.equal(1) ? t1 : at::mul(t1, value);
    out = at::add(x, t == "aten.addcmul.default" ? at::mul(m, t2) : at::div(m, t2));
  } else if (t == "aten.lerp.Scalar") {
    const auto& x = args[0].toTensor();
    const auto& end = args[1].toTensor();
    auto w = args[2].toScalar();
    if (!float_dtype(x.scalar_type()) || w.isComplex()) return false;
    double wv = w.toDouble();
    at::Tensor d = at::sub(end, x);
    out = std::abs(wv) < 0.5 ? at::add(x, at::mul(d, w)) : at::sub(end, at::mul(d, 1 - wv));
  } else if (t == "aten.add.Tensor" || t == "aten.sub.Tensor") {
    auto alpha = args[2].toScalar();
    if (alpha.equal(1) || !args[1].isTensor()) return false;
    const auto& x = args[0].toTensor();
    if (!float_dtype(x.scalar_type())) return false;
    at::Tensor y = at::mul(args[1].toTensor(), alpha);
    out = t == "aten.add.Tensor" ? at::add(x, y) : at::sub(x, y);
  } else if (t == "aten.threshold_backward.default") {
    const auto& grad = args[0].toTensor();
    at::Tensor zero;
    {
      Unrecorded off;
      zero = at::zeros({}, grad.options());
    }
    out = at::where(at::le(args[1].toTensor(), args[2].toScalar()), zero, grad);
  } else if (t == "aten.zero.default") {
    out = at::fill(args[0].toTensor(), 0);
  } else if (t == "aten.t.default") {
    const auto& x = args[0].toTensor();
    out = x.dim() == 2 ? at::transpose(x, 0, 1) : at::alias(x);
  } else if (t == "aten.mse_loss.default") {
    const auto& a = args[0].toTensor();
    at::Tensor d = at::sub(a, args[1].toTensor());
    at::Tensor sq = at::mul(d, d);
    int64_t reduction = args[2].toInt();
    out = reduction == 1 ? at::mean(sq) : reduction == 2 ? at::sum(sq) : sq;
  } else if (t == "aten.mse_loss_backward.default") {
    const auto& a = args[1].toTensor();
    int64_t reduction = args[3].toInt();
    double norm = reduction == 1 ? 2.0 / (double)a.numel() : 2.0;
    out = at::mul(at::mul(at::sub(a, args[2].toTensor()), norm), args[0].toTensor());
  } else {
    return false;
  }
  torch::jit::drop(*stack, nargs);
  stack->push_back(out);
  return true;
}

void dispatch(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  auto& r = g_rec;
  OpInfo* info = info_of(op);
  size_t nargs = op.schema().arguments().size();
  bool recording = c10::impl::tls_is_dispatch_key_included(kKey);
  if (!recording) {
    // Outside a block nothing is deferred (leaving it flushes): the op runs as it is. Another
    // thread, while a block records, must not flush its queue.
    TORCH_CHECK(g_owner == std::this_thread::get_id() || !any_tensor(torch::jit::last(*stack, nargs), deferred_of),
                "ember.eager: `", info->target,
                "` reads a deferred tensor on another thread than the block's; read it there first (`.cpu()`)");
    run_eager(op, stack, info, true);
    return;
  }
  if (info->alias) {
    // `detach`/`alias` of a deferred value: another tensor of the same value and memory.
    const auto& x = torch::jit::peek(*stack, 0, nargs).toTensor();
    if (auto* d = deferred_of(x)) {
      r.stats.ops_aliased++;
      auto a = d->alias(x.unsafeGetTensorImpl()->version_counter(), true);
      torch::jit::drop(*stack, nargs);
      stack->push_back(at::Tensor(std::move(a)));
      return;
    }
    run_eager(op, stack, info, false);
    return;
  }
  if (r.cut) {
    // A cut decided at the previous op: now, after Python dropped that statement's temporaries.
    const char* why = r.cut;
    r.cut = nullptr;
    r.flush(why);
  }
  switch (info->route) {
    case kEager: {
      bool writes_input = false;
      bool deps = reads_deferred_or_pending(stack, nargs, &writes_input, info);
      run_eager(op, stack, info, deps || writes_input);
      return;
    }
    case kLike: {
      bool writes_input = false;
      bool deps = reads_deferred_or_pending(stack, nargs, &writes_input, info);
      if (!deps) {
        run_eager(op, stack, info, false);
        return;
      }
      // Only metadata is read: placeholders of the deferred tensors.
      for (size_t i = stack->size() - nargs; i < stack->size(); i++) {
        auto& a = (*stack)[i];
        if (a.isTensor() && deferred_of(a.toTensor())) {
          at::Tensor t = a.toTensor();
          Unrecorded off;
          a = at::empty_strided(t.sizes(), t.strides(), t.options());
        }
      }
      run_eager(op, stack, info, false);
      return;
    }
    case kInplace:
      inplace(op, stack, info);
      return;
    case kInplaceView:
      inplace_view(op, stack, info);
      return;
    case kRecord:
      break;
  }
  if (info->unsupported) {
    run_eager(op, stack, info, true);
    return;
  }
  // Bookkeeping on small real tensors (step counters, token ids, masks), and real views: torch
  // eager, no flush.
  auto args = torch::jit::last(*stack, nargs);
  bool all_real = true, small = true, lists = false;
  for (const auto& a : args) {
    if (a.isTensor() && a.toTensor().defined()) {
      const auto& t = a.toTensor();
      if (!t.is_cpu() && !deferred_of(t)) {
        // Meta or other devices' tensors (a fake-tensor trace inside the block): not Ember's,
        // and on to their own kernel from here (from the top, a tracing mode would see it again).
        op.redispatchBoxed(ks.remove_backend(c10::BackendComponent::LazyBit), stack);
        return;
      }
      if (deferred_of(t) || (t.has_storage() && !r.pending.empty() && r.pending.count(t.storage().unsafeGetStorageImpl()))) {
        all_real = false;
        break;
      }
      if (t.numel() > 1 && (t.is_floating_point() || t.numel() > kSmallIndex)) small = false;
    } else if (a.isTensorList() || a.isOptionalTensorList()) {
      lists = true;
    }
  }
  if (all_real && !lists && (small || info->view)) {
    run_eager(op, stack, info, false);
    return;
  }
  if (info->decomp && decompose(op, stack, info)) return;
  record(op, stack, info);
}

// A read of memory with a pending write by another tensor (a view of it, its base) flushes
// before the op's arguments become value ids, so they all belong to one region.
void settle(c10::ArrayRef<c10::IValue> args) {
  bool same = false;
  if (any_tensor(args, [&](const at::Tensor& t) { return pending_of(t, &same) && !same; }))
    g_rec.flush("aliased read of a pending write");
}

// `transpose.int(base, 0, 1)` of a region value, recorded directly (see `input_vid`).
int64_t record_transpose(int64_t base) {
  auto& r = g_rec;
  static const c10::OperatorHandle* op = new c10::OperatorHandle(c10::Dispatcher::singleton().findSchemaOrThrow("aten::transpose", "int"));
  Op rec;
  rec.info = info_of(*op);
  rec.args.resize(3);
  rec.args[0].tag = "t";
  rec.args[0].ids = {base};
  for (int i = 1; i < 3; i++) {
    rec.args[i].tag = "i";
    rec.args[i].v = rec.args[i].orig = c10::IValue((int64_t)(i - 1));
  }
  Value b = r.values[base];
  int64_t v = r.new_value({b.sizes[1], b.sizes[0]}, {b.strides[1], b.strides[0]}, b.offset, b.dtype);
  rec.outs.push_back(v);
  r.key.insert(r.key.end(), {(int64_t)rec.info, -14, base, -22, 0, -22, 1, -30});
  r.ops.push_back(std::move(rec));
  return v;
}

void record(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpInfo* info) {
  auto& r = g_rec;
  const auto& schema = op.schema();
  size_t nargs = schema.arguments().size();
  auto args = torch::jit::last(*stack, nargs);
  settle(args);
  // The float dtype a Python number scaling a tensor is passed in as (a rank-0 input, so its
  // value is not compiled in).
  at::ScalarType lift = at::ScalarType::Undefined;
  for (const auto& a : args)
    if (a.isTensor() && a.toTensor().defined() && !a.toTensor().unsafeGetTensorImpl()->is_wrapped_number() &&
        float_dtype(a.toTensor().scalar_type())) {
      lift = a.toTensor().scalar_type();
      break;
    }
  uint64_t h = 0xcbf29ce484222325ULL;
  mix(h, (uint64_t)info);
  Op rec;
  rec.info = info;
  rec.args.resize(nargs);
  // This op's part of the region key, in a buffer kept across ops (a re-entrant call, which
  // recording never makes today, would get a fresh one).
  struct Scratch {
    std::vector<int64_t>& home;
    std::vector<int64_t> v;
    explicit Scratch(std::vector<int64_t>& h) : home(h) {
      v.swap(home);
      v.clear();
    }
    ~Scratch() { v.swap(home); }
  } scratch(r.key_scratch);
  auto& key_part = scratch.v;
  key_part.push_back((int64_t)info);
  for (size_t i = 0; i < nargs; i++) {
    const auto& a = args[i];
    // The real type: a ScalarType, Layout or MemoryFormat is an int to TorchScript.
    const auto& type = schema.arguments()[i].real_type();
    Arg& ra = rec.args[i];
    // Deferred tensors are kept by value id only: a queued op must not keep them alive.
    if (!(a.isTensor() && deferred_of(a.toTensor())) && !a.isTensorList() && !a.isOptionalTensorList()) ra.orig = a;
    auto kind = type->kind();
    if (kind == c10::TypeKind::OptionalType) kind = type->castRaw<c10::OptionalType>()->getElementType()->kind();
    if (a.isNone() || (a.isTensor() && !a.toTensor().defined())) {
      ra.tag = "n";
      key_part.push_back(-10);
      mix(h, 0x404);
      continue;
    }
    if (a.isTensor()) {
      const auto& t = a.toTensor();
      key_tensor(h, t);
      const char* dn = dtype_name(t.scalar_type());
      if (!dn) {
        run_eager(op, stack, info, true);
        return;
      }
      if (t.unsafeGetTensorImpl()->is_wrapped_number() && t.scalar_type() != at::kBool) {
        if (lift != at::ScalarType::Undefined && (t.scalar_type() == at::kDouble || t.scalar_type() == at::kLong)) {
          // A wrapped number is a CPU scalar of double or int64: read in place.
          double x = t.scalar_type() == at::kDouble ? *static_cast<const double*>(t.const_data_ptr())
                                                     : (double)*static_cast<const int64_t*>(t.const_data_ptr());
          int64_t v = r.new_value({}, {}, 0, lift);
          r.lifted.emplace_back(r.inputs.size(), x);
          r.inputs.emplace_back();
          r.input_vids.push_back(v);
          r.key.insert(r.key.end(), {-3, (int64_t)lift, -4});  // as `input_vid` keys a rank-0 input
          ra.orig = c10::IValue();  // not kept: its number is
          ra.tag = "t";
          ra.ids = {v};
          key_part.push_back(-11);
          key_part.push_back(v);
          continue;
        }
        // A number in an integer op: compiled in.
        Unrecorded off;
        auto x = t.item();
        if (x.isIntegral(false)) {
          ra.tag = "i";
          ra.v = x.toLong();
          key_part.push_back(-12);
          key_part.push_back(x.toLong());
        } else {
          ra.tag = "f";
          ra.v = x.toDouble();
          double dv = x.toDouble();
          int64_t bits;
          memcpy(&bits, &dv, 8);
          key_part.push_back(-13);
          key_part.push_back(bits);
        }
        continue;
      }
      auto* d = deferred_of(t);
      int64_t v = d ? d->vid : input_vid(t);
      ra.tag = "t";
      ra.ids = {v};
      key_part.push_back(-14);
      key_part.push_back(v);
      continue;
    }
    if (a.isTensorList() || a.isOptionalTensorList()) {
      bool opt = a.isOptionalTensorList();
      ra.tag = opt ? "ots" : "ts";
      key_part.push_back(opt ? -15 : -16);
      auto add = [&](const at::Tensor& t) {
        key_tensor(h, t);
        auto* d = deferred_of(t);
        int64_t v = d ? d->vid : input_vid(t);
        ra.ids.push_back(v);
        key_part.push_back(v);
      };
      bool bad = false;
      if (opt) {
        for (std::optional<at::Tensor> t : a.toOptionalTensorList()) {
          if (t.has_value() && t->defined()) {
            if (!dtype_name(t->scalar_type())) bad = true;
            else add(*t);
          } else {
            ra.ids.push_back(-2);
            key_part.push_back(-2);
            mix(h, 0x405);
          }
        }
      } else {
        for (at::Tensor t : a.toTensorList()) {
          if (!dtype_name(t.scalar_type())) bad = true;
          else add(t);
        }
      }
      if (bad) {
        run_eager(op, stack, info, true);
        return;
      }
      key_part.push_back(-17);
      mix(h, 0x1157);
      continue;
    }
    // Non-tensor arguments: in the key as the compiled code sees them.
    if (kind == c10::TypeKind::DeviceObjType || kind == c10::TypeKind::LayoutType || kind == c10::TypeKind::MemoryFormatType) {
      ra.tag = nullptr;
      continue;
    }
    ra.v = a;
    if (kind == c10::TypeKind::ScalarTypeType) {
      if (!dtype_name(a.toScalarType())) {
        run_eager(op, stack, info, true);
        return;
      }
      ra.tag = "dt";
      key_part.push_back(-20);
      key_part.push_back(a.toInt());
      mix(h, 0x2000 + a.toInt());
      continue;
    }
    auto push_double = [&](double x) {
      int64_t bits;
      memcpy(&bits, &x, 8);
      key_part.push_back(bits);
      mix(h, (uint64_t)bits);
    };
    if (a.isBool()) {
      ra.tag = "b";
      key_part.push_back(-21);
      key_part.push_back(a.toBool());
      mix(h, 0x2100 + a.toBool());
    } else if (a.isInt() || a.isSymInt()) {
      ra.tag = "i";
      ra.v = a.isSymInt() ? c10::IValue(a.toSymInt().guard_int(__FILE__, __LINE__)) : a;
      key_part.push_back(-22);
      key_part.push_back(ra.v.toInt());
      mix(h, (uint64_t)ra.v.toInt());
    } else if (a.isDouble()) {
      ra.tag = "f";
      key_part.push_back(-23);
      push_double(a.toDouble());
    } else if (a.isIntList() || a.isSymIntList()) {
      ra.tag = "is";
      std::vector<int64_t> l;
      if (a.isIntList()) l = a.toIntVector();
      else
        for (const auto& x : a.toSymIntVector()) l.push_back(x.guard_int(__FILE__, __LINE__));
      ra.v = l;
      key_part.push_back(-24);
      key_part.push_back((int64_t)l.size());
      for (auto x : l) {
        key_part.push_back(x);
        mix(h, (uint64_t)x);
      }
      mix(h, 0x715);
    } else if (a.isDoubleList()) {
      ra.tag = "fs";
      key_part.push_back(-25);
      auto l = a.toDoubleVector();
      key_part.push_back((int64_t)l.size());
      for (auto x : l) push_double(x);
    } else if (a.isBoolList()) {
      ra.tag = "bs";
      key_part.push_back(-26);
      auto l = a.toBoolList();
      key_part.push_back((int64_t)l.size());
      for (size_t j = 0; j < l.size(); j++) {
        key_part.push_back(l.get(j));
        mix(h, l.get(j) ? 0x31 : 0x30);
      }
    } else if (a.isString()) {
      ra.tag = "s";
      key_part.push_back(-27);
      for (char c : a.toStringRef()) {
        key_part.push_back(c);
        mix(h, (uint64_t)c);
      }
      key_part.push_back(-28);
    } else {
      // Anything else (a Generator, a Storage...): torch eager.
      run_eager(op, stack, info, true);
      return;
    }
  }
  // Result metadata from the meta kernels, once per signature. With an `output_mask` the region
  // computes every result; the ones not asked for are returned undefined.
  int mask = info->mask_arg;
  std::vector<bool> hidden;
  if (mask >= 0) {
    auto l = args[mask].toBoolList();
    for (size_t j = 0; j < l.size(); j++) hidden.push_back(!l.get(j));
    if (std::find(hidden.begin(), hidden.end(), true) != hidden.end()) {
      c10::List<bool> all;
      for (size_t j = 0; j < l.size(); j++) all.push_back(true);
      rec.args[mask].v = all;
      mix(h, 0x4a5c);
      // key_part keeps the caller's mask: the compiled code is the same, the outputs differ.
      key_part.push_back(-29);
      for (bool x : hidden) key_part.push_back(x);
    } else {
      hidden.clear();
    }
  }
  auto it = r.metas.find(h);
  if (it == r.metas.end()) {
    torch::jit::Stack meta;
    for (size_t i = 0; i < nargs; i++) {
      const auto& a = args[i];
      if ((int)i == mask && !hidden.empty()) meta.push_back(rec.args[mask].v);
      else if (a.isTensor() && a.toTensor().defined()) meta.push_back(to_meta(a.toTensor()));
      else if (a.isTensorList()) {
        std::vector<at::Tensor> l;
        for (const auto& t : a.toTensorList()) l.push_back(to_meta(t));
        meta.push_back(l);
      } else if (a.isOptionalTensorList()) {
        c10::List<std::optional<at::Tensor>> l;
        for (std::optional<at::Tensor> t : a.toOptionalTensorList())
          l.push_back(t.has_value() && t->defined() ? std::optional<at::Tensor>(to_meta(*t)) : std::optional<at::Tensor>());
        meta.push_back(l);
      } else meta.push_back(a);
    }
    try {
      Unrecorded off;
      op.callBoxed(&meta);
    } catch (const std::exception& e) {
      // No meta kernel (value-dependent shapes: nonzero, boolean indexing; a Python meta kernel's
      // NotImplementedError arrives as its message): torch eager. Other errors are the user's.
      if (!dynamic_cast<const c10::NotImplementedError*>(&e) && !strstr(e.what(), "NotImplementedError")) throw;
      r.metas[h] = {c10::IValue()};
      run_eager(op, stack, info, true);
      return;
    }
    std::vector<c10::IValue> outs;
    for (auto& o : meta) {
      if (o.isTensor()) {
        if (!dtype_name(o.toTensor().scalar_type())) {
          outs = {c10::IValue()};
          break;
        }
        outs.push_back(o);
      } else if (o.isTensorList()) {
        outs.push_back(o);
      } else {
        outs = {c10::IValue()};
        break;
      }
    }
    it = r.metas.emplace(h, std::move(outs)).first;
  }
  if (it->second.size() == 1 && it->second[0].isNone()) {
    run_eager(op, stack, info, true);
    return;
  }
  // Record.
  r.key.insert(r.key.end(), key_part.begin(), key_part.end());
  bool is_view = info->view && args[0].isTensor() && deferred_of(args[0].toTensor());
  at::Tensor view_base = is_view ? args[0].toTensor() : at::Tensor();
  torch::jit::drop(*stack, nargs);
  size_t k = 0;
  for (const auto& o : it->second) {
    if (o.isTensor()) {
      const auto& m = o.toTensor();
      int64_t v = r.new_value(m.sizes(), m.strides(), m.storage_offset(), m.scalar_type());
      rec.outs.push_back(v);
      if (!hidden.empty() && hidden[k]) stack->push_back(at::Tensor());
      else stack->push_back(wrap(v, is_view ? &view_base : nullptr));
      k++;
    } else {
      std::vector<at::Tensor> l;
      for (const auto& mt : o.toTensorList()) {
        const at::Tensor& m = mt;
        int64_t v = r.new_value(m.sizes(), m.strides(), m.storage_offset(), m.scalar_type());
        rec.outs.push_back(v);
        l.push_back(wrap(v, is_view ? &view_base : nullptr));
      }
      stack->push_back(l);
    }
  }
  r.key.push_back(-30);
  r.ops.push_back(std::move(rec));
  r.stats.ops_recorded++;
  r.after_record(h);
}

// ---- the Python-facing ops ------------------------------------------------------------------

// Ops torch implements for every backend in terms of others (CompositeExplicitAutograd) run that
// implementation on `Lazy` too, and for views it reads storage. Those Ember compiles as they are
// (views, `_to_copy`), and `detach`/`alias`, are recorded instead; with a Scalar argument they are
// left to it: it passes the number as a tensor, which the region reads as an input.
void register_kernels() {
  static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::Lazy, __FILE__, __LINE__);
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
    if (name.name.rfind("aten::", 0) != 0) continue;
    auto h = c10::Dispatcher::singleton().findOp(name);
    if (!h || !h->hasSchema()) continue;
    if (!h->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd) ||
        h->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) || h->hasKernelForDispatchKey(kKey))
      continue;
    const auto& s = h->schema();
    std::string base = name.name.substr(6);
    std::string target = "aten." + base + "." + (name.overload_name.empty() ? "default" : name.overload_name);
    bool alias = base == "detach" || base == "alias" || base == "lift_fresh";
    if (base.rfind("_foreach_", 0) == 0) continue;  // per tensor: each reaches the recorder
    // In-place and out= ops all come here (`inplace`: torch's would write memory a deferred
    // tensor does not have); functional ones when Ember compiles them as they are.
    if (!alias && !s.is_mutable() && !has_decomposition(target) && (!known_target(target) || forwards_to_tensor(name))) continue;
    // The library keeps the name's pointer: the strings live as long as the process.
    auto* n = new std::string(name.overload_name.empty() ? base : base + "." + name.overload_name);
    lib->impl(n->c_str(), torch::CppFunction::makeFromBoxedFunction<&dispatch>());
  }
}

void init(int64_t api, std::vector<std::string> internal_dirs) {
  if (g_api) return;
  g_api = reinterpret_cast<const Api*>(api);
  g_internal_dirs = std::move(internal_dirs);
  register_kernels();
}

// Recording on for this thread; `cap` < 0 keeps the block's settings (re-entering after an op
// a decomposition ran eagerly).
void enter(int64_t cap, bool log) {
  g_owner = std::this_thread::get_id();
  if (cap >= 0) {
    g_rec.cap = cap;
    g_rec.log = log;
  }
  c10::impl::tls_set_dispatch_key_included(kKey, true);
}

void leave() { exclude_key(); }

void flush(std::string reason) { g_rec.flush(reason.c_str()); }

bool is_deferred(const at::Tensor& t) { return deferred_of(t) != nullptr; }

bool recording() { return c10::impl::tls_is_dispatch_key_included(kKey); }

// Whether reading `t`'s memory needs a flush first: it is deferred, or a write to it is pending.
bool needs_flush(const at::Tensor& t) {
  if (deferred_of(t)) return true;
  return t.defined() && t.has_storage() && g_rec.pending.count(t.storage().unsafeGetStorageImpl()) > 0;
}

// Whether the recorder handles an op itself (a decomposition in `decompose`, `detach`, factories,
// in-place ops, random ops): no Python decomposition is registered for it.
bool handles(std::string target) {
  auto dot = target.rfind('.');
  auto base = target.substr(0, dot);
  auto name = "aten::" + base.substr(base.find('.') + 1);
  auto ov = target.substr(dot + 1);
  auto h = c10::Dispatcher::singleton().findOp({name, ov == "default" ? "" : ov});
  if (!h) return false;
  OpInfo* in = info_of(*h);
  return in->decomp || in->alias || in->route == kLike || in->route == kInplace || in->route == kInplaceView ||
         random_ops().count(name) > 0 || !h->schema().returns().size() || h->schema().is_mutable();
}

std::vector<double> stats() {
  double s[5] = {0, 0, 0, 0, 0};
  if (g_api) g_api->stats(s);
  auto& st = g_rec.stats;
  return {(double)st.ops_recorded, (double)st.ops_eager, (double)st.flushes, (double)st.values_written,
          (double)st.regions_interpreted, (double)st.hits, (double)st.misses, s[2], s[3], s[4], (double)st.ops_aliased,
          st.flush_seconds};
}

// `name\tcount` lines (`state._counts` reads them).
std::string counts_text(const std::unordered_map<std::string, int64_t>& counts) {
  std::ostringstream o;
  for (auto& [k, v] : counts) o << k << "\t" << v << "\n";
  return o.str();
}

std::string flush_reasons() { return counts_text(g_rec.stats.flush_reasons); }

std::string eager_ops() { return counts_text(g_rec.stats.eager_ops); }

void reset_stats(bool clear_plans) {
  g_rec.stats = Stats();
  if (clear_plans) {
    g_rec.plans.clear();
    if (g_api) g_api->clear();
  }
}

}  // namespace

TORCH_LIBRARY(ember_native, m) {
  m.def("init(int api, str[] internal_dirs) -> ()", &init);
  m.def("enter(int cap, bool log) -> ()", &enter);
  m.def("leave() -> ()", &leave);
  m.def("flush(str reason) -> ()", &flush);
  m.def("is_deferred(Tensor t) -> bool", &is_deferred);
  m.def("recording() -> bool", &recording);
  m.def("needs_flush(Tensor t) -> bool", &needs_flush);
  m.def("handles(str target) -> bool", &handles);
  m.def("stats() -> float[]", &stats);
  m.def("flush_reasons() -> str", &flush_reasons);
  m.def("eager_ops() -> str", &eager_ops);
  m.def("reset_stats(bool clear_plans) -> ()", &reset_stats);
}

TORCH_LIBRARY_IMPL(_, Lazy, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&dispatch>()); }
