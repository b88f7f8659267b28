// The cuda plugin's operators (operators.h): each call is checked on the
// calling thread (tensors inside allocations of the call's device, attributes
// the kernels cannot take), then becomes one launch. Tensors arrive
// contiguous except copy's input (docs/ops.md, Contiguity); binary operators,
// comparisons and where broadcast through a Geo of element strides. The hip
// plugin compiles this file too: messages name the plugin (OAR_PLUGIN_NAME).
#include "operators.h"

#include <string>
#include <vector>

#include "oar/dtype.hpp"

namespace oar::cuda {
namespace {

constexpr int kMaxDims = sdk::kMaxDims;

// Mirrors Geo and ReduceGeo of kernels/kernels.cu.
struct Geo {
  int64_t rank = 0;
  int64_t numel = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[4][kMaxDims] = {};
};
struct ReduceGeo {
  int64_t outputs = 0;
  int64_t count = 0;
  int64_t kept_rank = 0;
  int64_t kept_shape[kMaxDims] = {};
  int64_t kept_strides[kMaxDims] = {};
  int64_t reduced_rank = 0;
  int64_t reduced_shape[kMaxDims] = {};
  int64_t reduced_strides[kMaxDims] = {};
};
static_assert(sizeof(Geo) == 8 * (2 + kMaxDims + 4 * kMaxDims), "Geo is kernels.cu's layout");
static_assert(sizeof(ReduceGeo) == 8 * (4 + 4 * kMaxDims), "ReduceGeo is kernels.cu's layout");

Launcher& launcher_of(const sdk::KernelCall& call) {
  return *static_cast<Launcher*>(call.user_data);
}

// The kernels' name of a dtype: f32, f16, bf16, i32, i64.
std::string tag(DLDataType t) {
  switch (ops::dtype_bit(t)) {
    case ops::kF32:
      return "f32";
    case ops::kF16:
      return "f16";
    case ops::kBF16:
      return "bf16";
    case ops::kI32:
      return "i32";
    case ops::kI64:
      return "i64";
    default:
      throw sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                       OAR_PLUGIN_NAME ": no kernel for dtype " + dtype_name(t));
  }
}

// The width tag of the moves (fill, copy, where): b8, b16, b32, b64.
std::string width(DLDataType t) {
  const int bits = t.bits * t.lanes;
  sdk::require(bits == 8 || bits == 16 || bits == 32 || bits == 64, OAR_STATUS_INVALID_ARGUMENT,
               OAR_PLUGIN_NAME ": no kernel moves " + std::to_string(bits) + "-bit elements");
  return "b" + std::to_string(bits);
}

// Every tensor of the call lies in an allocation of the call's device.
void check_tensors(const sdk::KernelCall& call) {
  const Launcher& launcher = launcher_of(call);
  for (size_t i = 0; i < call.num_inputs(); ++i) {
    launcher.check_tensor(call.call, call.input(i), "input");
  }
  for (size_t i = 0; i < call.num_outputs(); ++i) {
    launcher.check_tensor(call.call, call.output(i), "output");
  }
}

int64_t numel(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];  // byte_span checked it fits
  return n;
}

// The device address of |t|'s first element.
uint64_t address(const DLTensor& t) {
  return uint64_t(reinterpret_cast<uintptr_t>(t.data)) + t.byte_offset;
}

// The Geo of |N| operands (views[0] the output) broadcast to the output.
template <int N>
Geo geo_of(const sdk::TensorView (&views)[N]) {
  const sdk::Loop<N> loop = sdk::make_loop(views);
  Geo g;
  g.rank = loop.ndim;
  g.numel = loop.numel();
  for (int d = 0; d < loop.ndim; ++d) {
    g.shape[d] = loop.shape[d];
    for (int k = 0; k < N; ++k) g.strides[k][d] = loop.strides[k][d];
  }
  return g;
}

// Launches an elementwise kernel whose parameters are |N - 1| inputs, the
// output and the Geo (views[0] is the output).
template <int N>
void launch_geo(const sdk::KernelCall& call, const std::string& kernel,
                const sdk::TensorView (&views)[N]) {
  const Geo g = geo_of(views);
  if (g.numel == 0) return;
  ArgPack args;
  for (int k = 1; k < N; ++k) args.add(uint64_t(reinterpret_cast<uintptr_t>(views[k].data)));
  args.add(uint64_t(reinterpret_cast<uintptr_t>(views[0].data)));
  args.add(g);
  launcher_of(call).launch(call.call, kernel.c_str(), grid_for_items(uint64_t(g.numel)), args);
}

// A contiguous kernel (x, y, n).
void launch_contiguous(const sdk::KernelCall& call, const std::string& kernel, const DLTensor& x,
                       const DLTensor& y) {
  const int64_t n = numel(y);
  if (n == 0) return;
  ArgPack args;
  args.add(address(x)).add(address(y)).add(uint64_t(n));
  launcher_of(call).launch(call.call, kernel.c_str(), grid_for_items(uint64_t(n)), args);
}

void unary_body(const sdk::KernelCall& call) {
  check_tensors(call);
  std::string op = call.schema.name;
  if (op == "gelu") {
    const std::string approximate = call.attrs.get_string("approximate");
    sdk::require(approximate == "none" || approximate == "tanh", OAR_STATUS_INVALID_ARGUMENT,
                 "gelu: approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
    if (approximate == "tanh") op = "gelu_tanh";
  }
  launch_contiguous(call, "oar_" + op + "_" + tag(call.input(0).dtype), call.input(0),
                    call.output(0));
}

// Binary operators and comparisons: (a, b, y, geo).
void binary_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const sdk::TensorView views[3] = {sdk::view_of(call.output(0)), sdk::view_of(call.input(0)),
                                    sdk::view_of(call.input(1))};
  launch_geo(call, std::string("oar_") + call.schema.name + "_" + tag(call.input(0).dtype), views);
}

void where_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const sdk::TensorView views[4] = {sdk::view_of(call.output(0)), sdk::view_of(call.input(0)),
                                    sdk::view_of(call.input(1)), sdk::view_of(call.input(2))};
  launch_geo(call, "oar_where_" + width(call.output(0).dtype), views);
}

// y = x through x's strides (copy), permuted first for transpose.
void copy_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& x = call.input(0);
  const DLTensor& y = call.output(0);
  sdk::TensorView from = sdk::view_of(x);
  const sdk::TensorView to = sdk::view_of(y);
  if (std::string(call.schema.name) == "transpose") {
    const std::vector<int64_t> perm = call.attrs.get_ints("perm");
    sdk::require(int(perm.size()) == x.ndim, OAR_STATUS_INVALID_ARGUMENT,
                 "transpose: perm must name every dimension once");
    for (int d = 0; d < x.ndim; ++d) {
      const int axis = sdk::normalize_axis(perm[size_t(d)], x.ndim, "transpose: perm");
      from.shape[d] = x.shape[axis];
      from.strides[d] = sdk::view_of(x).strides[axis];
    }
  }
  for (int d = 0; d < to.ndim; ++d) {
    sdk::require(from.ndim == to.ndim && from.shape[d] == to.shape[d], OAR_STATUS_INVALID_ARGUMENT,
                 std::string(call.schema.name) + ": the output's shape is not the input's");
  }
  const sdk::TensorView views[2] = {to, from};
  launch_geo(call, "oar_copy_" + width(y.dtype), views);
}

void cast_body(const sdk::KernelCall& call) {
  const DLTensor& x = call.input(0);
  const DLTensor& y = call.output(0);
  if (x.dtype.code == y.dtype.code && x.dtype.bits == y.dtype.bits) {
    copy_body(call);  // a bit-exact copy
    return;
  }
  check_tensors(call);
  launch_contiguous(call, "oar_cast_" + tag(x.dtype) + "_" + tag(y.dtype), x, y);
}

void fill_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& y = call.output(0);
  const int64_t n = numel(y);
  if (n == 0) return;
  const uint64_t bits = sdk::scalar_bits(call.attrs.get_float("value"), y.dtype);
  ArgPack args;
  args.add(address(y));
  switch (y.dtype.bits) {
    case 8:
      args.add(uint8_t(bits));
      break;
    case 16:
      args.add(uint16_t(bits));
      break;
    case 32:
      args.add(uint32_t(bits));
      break;
    default:
      args.add(uint64_t(bits));
  }
  args.add(uint64_t(n));
  launcher_of(call).launch(call.call, ("oar_fill_" + width(y.dtype)).c_str(),
                           grid_for_items(uint64_t(n)), args);
}

void reduce_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const std::string op = call.schema.name;
  const DLTensor& x = call.input(0);
  const sdk::TensorView v = sdk::view_of(x);
  bool reduced[kMaxDims] = {};
  const std::vector<int64_t> axes = call.attrs.get_ints("axes");
  for (int64_t axis : axes) {
    if (x.ndim == 0) {
      sdk::require(axis == 0, OAR_STATUS_INVALID_ARGUMENT,
                   op + ": a rank-0 input takes axes [] or [0]");
      continue;
    }
    reduced[sdk::normalize_axis(axis, x.ndim, (op + ": axes").c_str())] = true;
  }
  ReduceGeo g;
  g.outputs = 1;
  g.count = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (axes.empty() || reduced[d]) {
      g.reduced_shape[g.reduced_rank] = x.shape[d];
      g.reduced_strides[g.reduced_rank++] = v.strides[d];
      g.count *= x.shape[d];
    } else {
      g.kept_shape[g.kept_rank] = x.shape[d];
      g.kept_strides[g.kept_rank++] = v.strides[d];
      g.outputs *= x.shape[d];
    }
  }
  // max and min have no identity: an empty reduced extent fails, even for
  // an empty output.
  sdk::require(g.count != 0 || (op != "max" && op != "min"), OAR_STATUS_INVALID_ARGUMENT,
               op + " over an empty axis has no value");
  if (g.outputs == 0) return;
  ArgPack args;
  args.add(address(x)).add(address(call.output(0))).add(g);
  launcher_of(call).launch(call.call, ("oar_" + op + "_" + tag(x.dtype)).c_str(),
                           grid_for_rows(uint64_t(g.outputs)), args);
}

void softmax_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& x = call.input(0);
  const int64_t attr = call.attrs.get_int("axis");
  int axis = 0;
  if (x.ndim == 0) {
    sdk::require(attr == 0, OAR_STATUS_INVALID_ARGUMENT,
                 std::string(call.schema.name) + ": a rank-0 input takes axis 0 only");
  } else {
    axis = sdk::normalize_axis(attr, x.ndim, "axis");
  }
  int64_t outer = 1, extent = 1, inner = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d < axis) outer *= x.shape[d];
    if (d == axis) extent = x.shape[d];
    if (d > axis) inner *= x.shape[d];
  }
  if (outer * extent * inner == 0) return;
  ArgPack args;
  args.add(address(x)).add(address(call.output(0))).add(outer).add(extent).add(inner);
  launcher_of(call).launch(call.call,
                           (std::string("oar_") + call.schema.name + "_" + tag(x.dtype)).c_str(),
                           grid_for_rows(uint64_t(outer * inner)), args);
}

void layer_norm_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& x = call.input(0);
  sdk::require(x.ndim >= 1, OAR_STATUS_INVALID_ARGUMENT, "layer_norm: x needs rank >= 1");
  const int64_t d = x.shape[x.ndim - 1];
  for (size_t i = 1; i < 3; ++i) {
    sdk::require(call.input(i).ndim == 1 && call.input(i).shape[0] == d,
                 OAR_STATUS_INVALID_ARGUMENT, "layer_norm: weight and bias must be [D]");
  }
  const int64_t n = numel(x);
  if (n == 0) return;
  ArgPack args;
  args.add(address(x))
      .add(address(call.input(1)))
      .add(address(call.input(2)))
      .add(address(call.output(0)))
      .add(n / d)
      .add(d)
      .add(float(call.attrs.get_float("eps")));
  launcher_of(call).launch(call.call, ("oar_layer_norm_" + tag(x.dtype)).c_str(),
                           grid_for_rows(uint64_t(n / d)), args);
}

// matmul: cuBLAS when it is there, the batch is one stride per operand
// (after merging) and K > 0, else OAR's kernel (a 16 x 16 tile of y per block).
void matmul_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& a = call.input(0);
  const DLTensor& b = call.input(1);
  const DLTensor& y = call.output(0);
  sdk::require(a.ndim >= 2 && b.ndim >= 2 && y.ndim >= 2, OAR_STATUS_INVALID_ARGUMENT,
               "matmul: a and b need rank >= 2");
  const bool ta = call.attrs.get_bool("transpose_a"), tb = call.attrs.get_bool("transpose_b");
  const int64_t m = a.shape[a.ndim - (ta ? 1 : 2)], k = a.shape[a.ndim - (ta ? 2 : 1)];
  const int64_t kb = b.shape[b.ndim - (tb ? 1 : 2)], n = b.shape[b.ndim - (tb ? 2 : 1)];
  sdk::require(k == kb && y.shape[y.ndim - 2] == m && y.shape[y.ndim - 1] == n,
               OAR_STATUS_INVALID_ARGUMENT, "matmul: the shapes do not multiply");
  if (numel(y) == 0) return;
  // The batch dimensions of the three, broadcast to y's.
  sdk::TensorView views[3] = {sdk::view_of(y), sdk::view_of(a), sdk::view_of(b)};
  for (sdk::TensorView& v : views) v.ndim -= 2;
  const Geo g = geo_of(views);
  Gemm gemm;
  gemm.dtype = y.dtype;
  gemm.a = address(a), gemm.b = address(b), gemm.y = address(y);
  gemm.transpose_a = ta, gemm.transpose_b = tb;
  constexpr int64_t kInt = 0x7fffffff;
  // (k == 0 would give cuBLAS a leading dimension of 0, which it refuses:
  // the kernel writes the zeros.)
  if (g.rank <= 1 && k > 0 && m <= kInt && n <= kInt && k <= kInt && g.numel <= kInt) {
    gemm.m = int(m), gemm.n = int(n), gemm.k = int(k), gemm.batch = int(g.numel);
    if (g.rank == 1) {
      gemm.stride_y = g.strides[0][0], gemm.stride_a = g.strides[1][0];
      gemm.stride_b = g.strides[2][0];
    }
    if (launcher_of(call).gemm(call.call, gemm)) return;
  }
  const int64_t tiles = g.numel * ((m + 15) / 16) * ((n + 15) / 16);
  ArgPack args;
  args.add(gemm.a).add(gemm.b).add(gemm.y).add(g).add(m).add(n).add(k);
  args.add(ta ? int64_t(1) : k).add(ta ? m : int64_t(1));  // a's strides along m and k
  args.add(tb ? int64_t(1) : n).add(tb ? k : int64_t(1));  // b's strides along k and n
  launcher_of(call).launch(call.call, ("oar_matmul_" + tag(y.dtype)).c_str(),
                           grid_for_rows(uint64_t(tiles)), args);
}

// index_select along |axis|: x as [outer, extent, inner], a 1-D index of m.
void index_select_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& x = call.input(0);
  const DLTensor& index = call.input(1);
  const DLTensor& y = call.output(0);
  sdk::require(x.ndim >= 1 && index.ndim == 1, OAR_STATUS_INVALID_ARGUMENT,
               "index_select: x needs rank >= 1 and index rank 1");
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "index_select: axis");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d < axis) outer *= x.shape[d];
    if (d > axis) inner *= x.shape[d];
  }
  const int64_t m = index.shape[0];
  if (numel(y) == 0) return;
  ArgPack args;
  args.add(address(x)).add(address(index)).add(address(y));
  args.add(launcher_of(call).error_word(call.call));
  args.add(outer).add(x.shape[axis]).add(inner).add(m);
  launcher_of(call).launch(call.call,
                           ("oar_index_select_" + width(x.dtype) + "_" + tag(index.dtype)).c_str(),
                           grid_for_items(uint64_t(numel(y))), args);
}

// gather along |axis|: y has index's shape.
void gather_body(const sdk::KernelCall& call) {
  check_tensors(call);
  const DLTensor& x = call.input(0);
  const DLTensor& index = call.input(1);
  sdk::require(x.ndim >= 1 && index.ndim == x.ndim, OAR_STATUS_INVALID_ARGUMENT,
               "gather: index needs x's rank");
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "gather: axis");
  Geo g;
  g.rank = index.ndim;
  g.numel = numel(index);
  const sdk::TensorView v = sdk::view_of(x);
  for (int d = 0; d < index.ndim; ++d) {
    g.shape[d] = index.shape[d];
    g.strides[0][d] = v.strides[d];
  }
  if (g.numel == 0) return;
  ArgPack args;
  args.add(address(x)).add(address(index)).add(address(call.output(0)));
  args.add(launcher_of(call).error_word(call.call));
  args.add(g).add(int64_t(axis)).add(x.shape[axis]);
  launcher_of(call).launch(call.call,
                           ("oar_gather_" + width(x.dtype) + "_" + tag(index.dtype)).c_str(),
                           grid_for_items(uint64_t(g.numel)), args);
}

}  // namespace

uint32_t grid_for_items(uint64_t items) {
  const uint64_t blocks = items / kBlock + (items % kBlock != 0);
  return uint32_t(blocks == 0 ? 1 : (blocks > kMaxGrid ? kMaxGrid : blocks));
}

uint32_t grid_for_rows(uint64_t rows) {
  return uint32_t(rows == 0 ? 1 : (rows > kMaxGrid ? kMaxGrid : rows));
}

void register_operators(const sdk::KernelRegistrar& registrar, sdk::KernelTable& table,
                        Launcher* launcher) {
  constexpr uint32_t kHalfFloats = ops::kF16 | ops::kBF16 | ops::kF32;
  constexpr uint32_t kEverything = ~0u;  // moves: every dtype the schema allows
  auto add = [&](const char* op, sdk::KernelBody body, uint32_t bits, uint32_t flags = 0) {
    table.add(registrar, op, body, bits, flags, launcher);
  };
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
                         "sigmoid", "relu", "silu", "erf", "floor", "ceil", "reciprocal", "gelu"}) {
    add(op, unary_body, kHalfFloats);
  }
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "pow"}) {
    add(op, binary_body, kHalfFloats);
  }
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    add(op, binary_body, kHalfFloats | ops::kI32 | ops::kI64);
  }
  add("where", where_body, kEverything);
  add("copy", copy_body, kEverything, OAR_KERNEL_FLAG_STRIDED_INPUTS);
  add("transpose", copy_body, kEverything);
  add("fill", fill_body, kEverything);
  add("cast", cast_body, kHalfFloats);
  for (const char* op : {"sum", "mean", "max", "min", "prod"}) add(op, reduce_body, kHalfFloats);
  add("softmax", softmax_body, kHalfFloats);
  add("log_softmax", softmax_body, kHalfFloats);
  add("layer_norm", layer_norm_body, kHalfFloats);
  add("matmul", matmul_body, kHalfFloats);
  add("index_select", index_select_body, kEverything);
  add("gather", gather_body, kEverything);
}

}  // namespace oar::cuda
