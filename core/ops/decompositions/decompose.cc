// The decomposition registry, the mode switches and the Graph scratch helper.
#include "core/ops/decompositions/decompose.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ops/kernel_registry.h"
#include "core/util/checked_math.h"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar::decompose {
namespace {

struct Registry {
  std::unordered_map<uint32_t, DecompositionFn> by_op;
  std::vector<std::string> names;
};

const Registry& registry() {
  static const Registry instance = [] {
    std::vector<Decomposition> table;
    add_activation_decompositions(table);
    add_normalization_decompositions(table);
    add_window_decompositions(table);
    add_elementwise_decompositions(table);
    add_layout_decompositions(table);
    add_math_decompositions(table);
    add_gradient_decompositions(table);
    add_optimizer_decompositions(table);
    Registry r;
    for (const Decomposition& d : table) {
      r.by_op[detail::intern_op(d.op)] = d.fn;
      r.names.emplace_back(d.op);
    }
    std::sort(r.names.begin(), r.names.end());
    return r;
  }();
  return instance;
}

// The environment's mode, and per-device overrides. |g_any_force| is true
// whenever some device may be forced, so that forced() costs one load
// otherwise.
std::mutex g_mutex;
bool g_environment_read = false;
Mode g_environment = Mode::kFallback;
std::unordered_map<const Device*, Mode> g_devices;
std::atomic<bool> g_any_force{false};
std::atomic<bool> g_environment_checked{false};
std::atomic<uint64_t> g_count{0};

void update_flags_locked() {
  bool force = g_environment == Mode::kForce;
  for (const auto& [device, mode] : g_devices) force = force || mode == Mode::kForce;
  g_any_force.store(force, std::memory_order_release);
}

void read_environment_locked() {
  g_environment = parse_mode(std::getenv("OAR_DECOMPOSE"));
  g_environment_read = true;
  g_environment_checked.store(true, std::memory_order_release);
  update_flags_locked();
}

Mode mode_locked(const Device& device) {
  if (!g_environment_read) read_environment_locked();
  auto it = g_devices.find(&device);
  return it != g_devices.end() ? it->second : g_environment;
}

// Whether |t| is row-major (an empty tensor is).
bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t.ndim; i-- > 0;) {
    if (t.shape[i] == 0) return true;
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

std::vector<oar_attr_t> raw(std::initializer_list<Attr> attrs) {
  std::vector<oar_attr_t> out;
  out.reserve(attrs.size());
  for (const Attr& a : attrs) out.push_back(a.attr);
  return out;
}

}  // namespace

Mode parse_mode(const char* text) {
  if (text == nullptr) return Mode::kFallback;
  if (std::strcmp(text, "0") == 0 || std::strcmp(text, "off") == 0) return Mode::kOff;
  if (std::strcmp(text, "force") == 0) return Mode::kForce;
  return Mode::kFallback;
}

void reload_environment() {
  std::lock_guard<std::mutex> lock(g_mutex);
  read_environment_locked();
}

Mode device_mode(const Device& device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return mode_locked(device);
}

void set_device_mode(const Device& device, Mode mode) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_environment_read) read_environment_locked();
  g_devices[&device] = mode;
  update_flags_locked();
}

void clear_device_mode(const Device& device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_devices.erase(&device);
  update_flags_locked();
}

bool has_decomposition(std::string_view op) {
  const auto& names = registry().names;
  return std::binary_search(names.begin(), names.end(), std::string(op));
}

std::vector<std::string> decomposed_operators() { return registry().names; }

uint64_t decomposition_count() { return g_count.load(std::memory_order_relaxed); }

bool forced(const Device& device) {
  if (!g_environment_checked.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_environment_read) read_environment_locked();
  }
  if (!g_any_force.load(std::memory_order_acquire)) return false;
  return device_mode(device) == Mode::kForce;
}

bool run_decomposition(Stream& stream, const OpId& op, const DLTensor* inputs, size_t num_inputs,
                       DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs,
                       size_t num_attrs, bool have_kernel) {
  if (op.schema() == nullptr) return false;
  const Registry& r = registry();
  auto it = r.by_op.find(op.value());
  if (it == r.by_op.end()) return false;
  const Mode mode = device_mode(stream.device());
  if (mode == Mode::kOff || (have_kernel && mode != Mode::kForce)) return false;

  const ops::OpSchema& schema = *op.schema();
  // The same checks, in the same order, as a kernel call gets.
  ops::check_dtypes(schema, inputs, num_inputs, outputs, num_outputs);
  std::vector<std::vector<int64_t>> shapes =
      ops::infer_shapes(schema, inputs, num_inputs, attrs, num_attrs);
  bool any_output = false;
  for (size_t i = 0; i < num_outputs; ++i) {
    const DLTensor& out = outputs[i];
    if (i < shapes.size() && (size_t(out.ndim) != shapes[i].size() ||
                              !std::equal(shapes[i].begin(), shapes[i].end(), out.shape))) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": output " +
                                                   std::to_string(i) +
                                                   " does not have the shape the schema infers");
    }
    if (!is_contiguous(out)) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT,
                  std::string(schema.name) + ": output " + std::to_string(i) +
                      " is not contiguous and the kernel writes contiguous outputs only");
    }
    any_output = any_output || numel(out) > 0;
  }
  if (!any_output && num_outputs > 0) return true;  // nothing to compute
  g_count.fetch_add(1, std::memory_order_relaxed);
  Graph graph(stream, schema, inputs, num_inputs, outputs, num_outputs, attrs, num_attrs);
  it->second(graph);
  return true;
}

// ---- Graph ----

Graph::Graph(Stream& stream, const ops::OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
             DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs)
    : stream_(stream), attrs_(schema, attrs, num_attrs), outputs_(outputs) {
  (void)num_outputs;
  static const OpId copy_op("copy");
  for (size_t i = 0; i < num_inputs; ++i) {
    const DLTensor& t = inputs[i];
    if (is_contiguous(t)) {
      inputs_.push_back(own(t, std::vector<int64_t>(t.shape, t.shape + t.ndim)));
      continue;
    }
    const DLTensor* copy = empty(std::vector<int64_t>(t.shape, t.shape + t.ndim), t.dtype);
    DLTensor out = *copy;
    dispatch(stream_, copy_op, &t, 1, &out, 1);
    inputs_.push_back(copy);
  }
}

DLTensor* Graph::own(const DLTensor& base, std::vector<int64_t> shape) {
  owned_.push_back(Owned{base, std::move(shape)});
  Owned& o = owned_.back();
  o.dl.ndim = int32_t(o.shape.size());
  o.dl.shape = o.shape.data();
  o.dl.strides = nullptr;
  return &o.dl;
}

const DLTensor* Graph::empty(std::vector<int64_t> shape, DLDataType dtype) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  buffers_.push_back(stream_.device().allocate(uint64_t(count) * dtype_size(dtype), &stream_));
  DLTensor base{};
  base.data = buffers_.back().memory();
  base.byte_offset = buffers_.back().offset();
  base.device = stream_.device().dlpack_device();
  base.dtype = dtype;
  return own(base, std::move(shape));
}

const DLTensor* Graph::full(std::vector<int64_t> shape, double value, DLDataType dtype) {
  static const OpId fill_op("fill");
  const DLTensor* t = empty(std::move(shape), dtype);
  call_into(fill_op, {}, t, {Attr("value", value)});
  return t;
}

const DLTensor* Graph::view(const DLTensor* t, std::vector<int64_t> shape) {
  return own(*t, std::move(shape));
}

const DLTensor* Graph::call(const OpId& op, const std::vector<const DLTensor*>& inputs,
                            std::initializer_list<Attr> attrs, DLDataType out_dtype) {
  const ops::OpSchema& schema = *op.schema();
  std::vector<DLTensor> in;
  in.reserve(inputs.size());
  for (const DLTensor* t : inputs) in.push_back(*t);
  std::vector<oar_attr_t> a = raw(attrs);
  std::vector<std::vector<int64_t>> shapes =
      ops::infer_shapes(schema, in.data(), in.size(), a.data(), a.size());
  DLDataType data = in[schema.rule == ops::DtypeRule::kWhere ? 1 : 0].dtype;
  std::vector<DLDataType> dtypes = ops::output_dtypes(schema, data);
  if (out_dtype.bits != 0) dtypes[0] = out_dtype;
  DLTensor out = *empty(shapes[0], dtypes[0]);
  const DLTensor* result = &owned_.back().dl;
  dispatch(stream_, op, in.data(), in.size(), &out, 1, a.data(), a.size());
  return result;
}

void Graph::call_into(const OpId& op, const std::vector<const DLTensor*>& inputs,
                      const DLTensor* out, std::initializer_list<Attr> attrs) {
  std::vector<DLTensor> in;
  in.reserve(inputs.size());
  for (const DLTensor* t : inputs) in.push_back(*t);
  std::vector<oar_attr_t> a = raw(attrs);
  DLTensor o = *out;
  dispatch(stream_, op, in.data(), in.size(), &o, 1, a.data(), a.size());
}

DLDataType Graph::compute_type(DLDataType dtype) {
  if (dtype == dtype::f16 || dtype == dtype::bf16) return dtype::f32;
  return dtype;
}

const DLTensor* Graph::widen(const DLTensor* t) {
  static const OpId cast_op("cast");
  DLDataType wide = compute_type(t->dtype);
  if (wide == t->dtype) return t;
  return call(cast_op, {t}, {}, wide);
}

void Graph::finish(const OpId& op, const std::vector<const DLTensor*>& inputs, const DLTensor* out,
                   std::initializer_list<Attr> attrs) {
  static const OpId cast_op("cast");
  DLDataType wide = compute_type(out->dtype);
  if (wide == out->dtype) {
    call_into(op, inputs, out, attrs);
    return;
  }
  const DLTensor* result = call(op, inputs, attrs);
  call_into(cast_op, {result}, out);
}

// ---- Steps several decompositions share ----

#define OAR_OP(var, name) static const OpId var(name)

void store(Graph& g, const DLTensor* t, const DLTensor* out) {
  OAR_OP(copy, "copy");
  OAR_OP(cast, "cast");
  g.call_into(t->dtype == out->dtype ? copy : cast, {t}, out);
}

const DLTensor* row_sum(Graph& g, const DLTensor* t, int64_t axis) {
  OAR_OP(sum, "sum");
  OAR_OP(concat, "concat");
  // Each sum adds at most kBlock terms: a plugin's sum may be a plain running
  // f32 sum (within the accumulate tolerance, acc·Σ|terms|), whose error the
  // cancellation in dy − Σ dy·y and the norms' column sums magnify past the
  // normalized tolerance on long rows; a tree of short sums errs like a
  // pairwise sum (docs/ops.md, "Primitives and decompositions").
  constexpr int64_t kBlock = 16;
  const int r = t->ndim;
  std::vector<int64_t> axes{axis};
  const int a = r == 0 ? 0 : int(axis < 0 ? axis + r : axis);
  const int64_t length = r == 0 ? 1 : t->shape[a];
  int64_t pre = 1, post = 1;
  for (int d = 0; d < a; ++d) pre *= t->shape[d];
  for (int d = a + 1; d < r; ++d) post *= t->shape[d];
  if (length <= kBlock || pre * post == 0) {
    return g.call(sum, {t}, {Attr("axes", axes), Attr("keepdim", true)});
  }
  // length ≤ c·span: c ≤ kBlock chunks of span = kBlock^k terms; the row is
  // padded with zeros to c·span.
  int64_t span = kBlock;
  while (span * kBlock < length) span *= kBlock;
  const int64_t chunks = (length + span - 1) / span;
  const DLTensor* x = g.view(t, {pre, length, post});
  if (chunks * span > length) {
    const DLTensor* zeros = g.full({pre, chunks * span - length, post}, 0.0, t->dtype);
    x = g.call(concat, {x, zeros}, {Attr("axis", int64_t(1))});
  }
  const std::vector<int64_t> inner{2}, outer{1};
  for (int64_t n = chunks * span; n > chunks; n /= kBlock) {
    x = g.call(sum, {g.view(x, {pre, n / kBlock, kBlock, post})},
               {Attr("axes", inner), Attr("keepdim", false)});
  }
  x = g.call(sum, {x}, {Attr("axes", outer), Attr("keepdim", false)});
  std::vector<int64_t> kept(t->shape, t->shape + r);
  kept[size_t(a)] = 1;
  return g.view(x, kept);
}

const DLTensor* row_mean(Graph& g, const DLTensor* x) {
  OAR_OP(div, "div");
  const int64_t length = x->ndim == 0 ? 1 : x->shape[x->ndim - 1];
  return g.call(div, {row_sum(g, x, -1), g.scalar(double(length), x->dtype)});
}

RowStats row_stats(Graph& g, const DLTensor* x, double eps, bool centred) {
  OAR_OP(sub, "sub");
  OAR_OP(mul, "mul");
  OAR_OP(add, "add");
  OAR_OP(rsqrt, "rsqrt");
  const DLTensor* c = centred ? g.call(sub, {x, row_mean(g, x)}) : x;
  const DLTensor* var = row_mean(g, g.call(mul, {c, c}));
  const DLTensor* rstd = g.call(rsqrt, {g.call(add, {var, g.scalar(eps, x->dtype)})});
  return {c, rstd};
}

AttentionScores attention_scores(Graph& g, const DLTensor* q, const DLTensor* k) {
  OAR_OP(matmul, "matmul");
  OAR_OP(mul, "mul");
  OAR_OP(le, "le");
  OAR_OP(where, "where");
  OAR_OP(arange, "arange");
  const DLDataType t = q->dtype;
  const int r = q->ndim;
  const int64_t lq = q->shape[r - 2], lk = k->shape[r - 2], d = q->shape[r - 1];
  double scale = g.attrs().get_float("scale");
  if (scale == 0) scale = d > 0 ? 1.0 / std::sqrt(double(d)) : 1.0;
  AttentionScores a{nullptr, nullptr, g.scalar(scale, t)};
  a.scores = g.call(mul, {g.call(matmul, {q, k}, {Attr("transpose_b", true)}), a.scale});
  if (!g.attrs().get_bool("causal")) return a;
  const std::string alignment = g.attrs().get_string("causal_alignment");
  if (alignment != "bottom_right" && alignment != "top_left") {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "scaled_dot_product_attention: causal_alignment must be bottom_right or "
                "top_left, not \"" +
                    alignment + "\"");
  }
  const int64_t shift = alignment == "bottom_right" ? lk - lq : 0;
  // Key j is visible to query i when j <= i + shift.
  const DLTensor* rows = g.empty({lq}, dtype::i64);
  g.call_into(arange, {}, rows, {Attr("start", double(shift)), Attr("end", double(shift + lq))});
  const DLTensor* cols = g.empty({lk}, dtype::i64);
  g.call_into(arange, {}, cols, {Attr("end", double(lk))});
  const DLTensor* limit = g.view(rows, {lq, 1});
  const DLTensor* mask = g.call(le, {g.view(cols, {1, lk}), limit});
  a.scores = g.call(where, {mask, a.scores, g.scalar(-std::numeric_limits<double>::infinity(), t)});
  // Query i sees key 0 when 0 <= i + shift.
  if (shift < 0 && lk > 0) a.row_visible = g.call(le, {g.scalar(0, dtype::i64), limit});
  return a;
}

const DLTensor* pad_hw(Graph& g, const DLTensor* x, int64_t ph, int64_t pw, double value) {
  OAR_OP(concat, "concat");
  const int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
  if (ph > 0) {
    const DLTensor* rows = g.full({n, c, ph, w}, value, x->dtype);
    x = g.call(concat, {rows, x, rows}, {Attr("axis", int64_t(2))});
  }
  if (pw > 0) {
    const DLTensor* cols = g.full({n, c, h + 2 * ph, pw}, value, x->dtype);
    x = g.call(concat, {cols, x, cols}, {Attr("axis", int64_t(3))});
  }
  return x;
}

const DLTensor* window_tap(Graph& g, const DLTensor* padded, int64_t h0, int64_t w0, int64_t oh,
                           int64_t ow, int64_t sh, int64_t sw) {
  OAR_OP(slice, "slice");
  const DLTensor* rows = g.call(slice, {padded},
                                {Attr("axis", int64_t(2)), Attr("start", h0),
                                 Attr("end", h0 + (oh - 1) * sh + 1), Attr("step", sh)});
  return g.call(slice, {rows},
                {Attr("axis", int64_t(3)), Attr("start", w0), Attr("end", w0 + (ow - 1) * sw + 1),
                 Attr("step", sw)});
}

const DLTensor* bit_view(Graph& g, const DLTensor* t, DLDataType dtype) {
  // The view is a fresh tensor the graph owns (Graph::view), so retyping it
  // leaves |t| alone.
  DLTensor* v =
      const_cast<DLTensor*>(g.view(t, std::vector<int64_t>(t->shape, t->shape + t->ndim)));
  v->dtype = dtype;
  return v;
}

#undef OAR_OP

}  // namespace oar::decompose
