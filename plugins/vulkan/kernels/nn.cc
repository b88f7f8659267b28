// The neural-network operators: matmul (matmul.comp; matmul_wide.comp for
// aligned f32), row normalisations, batch_norm and rotary_embedding
// (rows.comp), conv2d and pooling (conv.comp), attention (attention.comp),
// cross_entropy (xent.comp). All compute in f32 and round once at the store.
#include <cmath>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

// The tile of matmul.comp: kMatmulRows rows x 64 * kMatmulCols columns per
// workgroup of 64 invocations, K in steps of kMatmulDepth (MM_TM, MM_TN,
// MM_BK there).
constexpr int64_t kMatmulRows = 8, kMatmulCols = 8, kMatmulDepth = 16, kMatmulGroup = 64;
// The tiles of matmul_wide.comp (MM_TM x MM_TN per invocation, K in steps of
// 8): 16 x 16 on CPU devices (lavapipe: llvmpipe's per-lane loads are the
// cost, so each loaded value feeds as many FMAs as possible; the
// accumulators live on the stack), 8 x 8 elsewhere (64 accumulators, which
// a GPU keeps in registers). README.md, "matmul".
struct WideTile {
  const char* module;
  int64_t rows, cols;
};
constexpr WideTile kWideCpu{"matmul_wide", 16, 16}, kWideGpu{"matmul_wide8", 8, 8};
constexpr int64_t kWideDepth = 8;

// Whether matmul_wide.comp serves the product: f32, a's and b's rows
// contiguous, K and N multiples of 8, and every row start of a, b and y a
// multiple of 8 elements (32-byte loads and stores).
bool wide_matmul(const KernelContext& c, int64_t K, int64_t N, int64_t a_m, int64_t a_k,
                 int64_t b_k, int64_t b_n, const std::vector<int64_t>& as,
                 const std::vector<int64_t>& bs) {
  const TensorRef& a = c.inputs[0];
  const TensorRef& b = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  bool ok = c.stream->device->physical->subgroup_broadcast && y.dtype.code == kDLFloat &&
            y.dtype.bits == 32 && a_k == 1 && b_n == 1 && K % 8 == 0 && N % 8 == 0 &&
            a_m % 8 == 0 && b_k % 8 == 0 && a.offset % 8 == 0 && b.offset % 8 == 0 &&
            y.offset % 8 == 0;
  for (int64_t stride : as) ok = ok && stride % 8 == 0;
  for (int64_t stride : bs) ok = ok && stride % 8 == 0;
  return ok;
}

void matmul_kernel(KernelContext& c) {
  const TensorRef& a = c.inputs[0];
  const TensorRef& b = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  int64_t outputs = y.numel();
  if (outputs == 0) return;
  bool ta = c.attrs.get_bool("transpose_a"), tb = c.attrs.get_bool("transpose_b");
  int batch = y.ndim - 2;
  std::vector<int64_t> batch_shape(y.shape, y.shape + batch), as(size_t(batch), 0),
      bs(size_t(batch), 0);
  for (int d = 0; d < a.ndim - 2; ++d) {
    int out = batch - (a.ndim - 2) + d;
    as[size_t(out)] = a.shape[d] == 1 ? 0 : a.strides[d];
  }
  for (int d = 0; d < b.ndim - 2; ++d) {
    int out = batch - (b.ndim - 2) + d;
    bs[size_t(out)] = b.shape[d] == 1 ? 0 : b.strides[d];
  }
  int64_t a_row = a.strides[a.ndim - 2], a_col = a.strides[a.ndim - 1];
  int64_t b_row = b.strides[b.ndim - 2], b_col = b.strides[b.ndim - 1];
  int64_t M = y.shape[y.ndim - 2], N = y.shape[y.ndim - 1];
  int64_t K = ta ? a.shape[a.ndim - 2] : a.shape[a.ndim - 1];
  const int64_t a_m = ta ? a_col : a_row, a_k = ta ? a_row : a_col;
  const int64_t b_k = tb ? b_col : b_row, b_n = tb ? b_row : b_col;
  const bool wide = wide_matmul(c, K, N, a_m, a_k, b_k, b_n, as, bs);
  const WideTile& tile =
      c.stream->device->physical->properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? kWideCpu
                                                                                       : kWideGpu;
  const int64_t rows = wide ? tile.rows : kMatmulRows, cols = wide ? tile.cols : kMatmulCols;
  const int64_t depth = wide ? kWideDepth : kMatmulDepth;
  int64_t row_tiles = (M + rows - 1) / rows;
  int64_t col_tiles = (N + kMatmulGroup * cols - 1) / (kMatmulGroup * cols);
  int64_t tiles = outputs / (M * N) * row_tiles * col_tiles;
  // Per tile an invocation turns the loop over k steps once per step (the
  // loops inside a step have constant bounds and are unrolled by glslc),
  // the batch unravelling twice per batch dimension and the store loop.
  int64_t steps = (K + depth - 1) / depth;
  require_loop_budget(c, uint64_t(tiles * kMatmulGroup), uint64_t(steps + 2 * batch + rows + 1),
                      "the inner dimension K");
  Params p;
  p.add(tiles);
  p.add(batch);
  p.add8(batch_shape.data(), batch, 1);
  p.add8(as.data(), batch, 0);
  p.add8(bs.data(), batch, 0);
  p.add(M);
  p.add(N);
  p.add(K);
  p.add(a.offset);
  p.add(a_m);
  p.add(a_k);
  p.add(b.offset);
  p.add(b_k);
  p.add(b_n);
  p.add(y.offset);
  p.add(row_tiles);
  p.add(col_tiles);
  const bool broadcast = c.stream->device->physical->subgroup_broadcast;
  // f32 with b's rows contiguous and every row start a multiple of 4
  // elements: b loaded as vec4s (matmul.comp, MM_VEC4), 4 columns a load.
  bool vec4 = broadcast && y.dtype.code == kDLFloat && y.dtype.bits == 32 && b_n == 1 &&
              b_k % 4 == 0 && b.offset % 4 == 0 && N % 4 == 0;
  for (int64_t stride : bs) vec4 = vec4 && stride % 4 == 0;
  const char* module = wide        ? tile.module
                       : vec4      ? "matmul_v4"
                       : broadcast ? "matmul"
                                   : "matmul_plain";
  dispatch(c.stream, module_name(module, {y.dtype}), 0,
           {{0, a.buffer()}, {1, b.buffer()}, {3, y.buffer()}}, p.data(), p.size(),
           uint64_t(tiles * kMatmulGroup));
}

// rows.comp over rows of |length| elements |inner| apart.
void rows(KernelContext& c, int op, int64_t count, int64_t inner, int64_t length,
          const TensorRef* weight, const TensorRef* bias, float eps) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  if (y.numel() == 0) return;
  require_loop_budget(c, uint64_t(count), 4 * uint64_t(length), "a row");
  Params p;
  p.add(count);
  p.add(inner);
  p.add(length);
  p.add(x.offset);
  p.add(y.offset);
  p.add(weight != nullptr ? weight->offset : 0);
  p.add(bias != nullptr ? bias->offset : 0);
  p.add_float(eps);
  std::vector<Binding> bindings = {{0, x.buffer()}, {3, y.buffer()}};
  if (weight != nullptr) bindings.push_back({1, weight->buffer()});
  if (bias != nullptr) bindings.push_back({2, bias->buffer()});
  dispatch(c.stream, module_name("rows", {y.dtype}), op, bindings, p.data(), p.size(),
           uint64_t(count));
}

void softmax_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  int axis = normalize_axis(c.attrs.get_int("axis"), x.ndim);
  int64_t length = x.ndim == 0 ? 1 : x.shape[axis];
  int64_t inner = 1, outer = 1;
  for (int d = 0; d < x.ndim; ++d) {
    if (d < axis) outer *= x.shape[d];
    if (d > axis) inner *= x.shape[d];
  }
  rows(c, std::string(c.schema.name) == "softmax" ? 0 : 1, outer * inner, inner, length, nullptr,
       nullptr, 0);
}

void norm_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  int64_t length = x.shape[x.ndim - 1];
  if (length == 0) return;
  bool layer = std::string(c.schema.name) == "layer_norm";
  rows(c, layer ? 2 : 3, x.numel() / length, 1, length, &c.inputs[1],
       layer ? &c.inputs[2] : nullptr, float(c.attrs.get_float("eps")));
}

void batch_norm_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  int64_t n = y.numel();
  if (n == 0) return;
  int64_t inner = 1;
  for (int d = 2; d < x.ndim; ++d) inner *= x.shape[d];
  const TensorRef& mean = c.inputs[1];
  const TensorRef& var = c.inputs[2];
  const TensorRef& weight = c.inputs[3];
  const TensorRef& bias = c.inputs[4];
  Params p;
  p.add(n);
  p.add(inner);
  p.add(x.shape[1]);
  p.add(x.offset);
  p.add(y.offset);
  p.add(weight.offset);
  p.add(bias.offset);
  p.add_float(float(c.attrs.get_float("eps")));
  p.add(mean.offset);
  p.add(var.offset);
  dispatch(c.stream, module_name("rows", {y.dtype}), 4,
           {{0, x.buffer()},
            {1, weight.buffer()},
            {2, bias.buffer()},
            {3, y.buffer()},
            {4, mean.buffer()},
            {5, var.buffer()}},
           p.data(), p.size(), uint64_t(n));
}

void rotary_kernel(KernelContext& c) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& cos = c.inputs[1];
  const TensorRef& sin = c.inputs[2];
  const TensorRef& y = c.outputs[0];
  int64_t pairs = y.numel() / 2;
  if (pairs == 0) return;
  Params p;
  p.add(pairs);
  p.add(x.shape[x.ndim - 2]);
  p.add(x.shape[x.ndim - 1] / 2);
  p.add(c.attrs.get_bool("interleaved") ? 1 : 0);
  p.add(x.offset);
  p.add(cos.offset);
  p.add(sin.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("rows", {y.dtype}), 5,
           {{0, x.buffer()}, {1, cos.buffer()}, {2, sin.buffer()}, {3, y.buffer()}}, p.data(),
           p.size(), uint64_t(pairs));
}

// conv.comp: |op| 0 conv2d, 1 max_pool2d, 2 avg_pool2d.
void conv_like(KernelContext& c, int op, const TensorRef* weight, const TensorRef* bias,
               std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,
               std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation, int64_t groups,
               bool count_include_pad) {
  const TensorRef& x = c.inputs[0];
  const TensorRef& y = c.outputs[0];
  int64_t outputs = y.numel();
  if (outputs == 0) return;
  require_loop_budget(
      c, uint64_t(outputs),
      uint64_t(kernel[0] * kernel[1]) * uint64_t(weight != nullptr ? weight->shape[1] : 1),
      "one output's window");
  Params p;
  p.add(outputs);
  for (int d = 0; d < 4; ++d) p.add(x.shape[d]);  // N C H W
  p.add(y.shape[1]);
  p.add(y.shape[2]);
  p.add(y.shape[3]);
  p.add(kernel[0]);
  p.add(kernel[1]);
  p.add(stride[0]);
  p.add(stride[1]);
  p.add(padding[0]);
  p.add(padding[1]);
  p.add(dilation[0]);
  p.add(dilation[1]);
  p.add(groups);
  p.add(bias != nullptr ? 1 : 0);
  p.add(count_include_pad ? 1 : 0);
  p.add(x.offset);
  p.add(weight != nullptr ? weight->offset : 0);
  p.add(bias != nullptr ? bias->offset : 0);
  p.add(y.offset);
  std::vector<Binding> bindings = {{0, x.buffer()}, {3, y.buffer()}};
  if (weight != nullptr) bindings.push_back({1, weight->buffer()});
  if (bias != nullptr) bindings.push_back({2, bias->buffer()});
  dispatch(c.stream, module_name("conv", {y.dtype}), op, bindings, p.data(), p.size(),
           uint64_t(outputs));
}

void conv2d_kernel(KernelContext& c) {
  const TensorRef& weight = c.inputs[1];
  conv_like(c, 0, &weight, c.inputs.size() > 2 ? &c.inputs[2] : nullptr,
            {weight.shape[2], weight.shape[3]}, c.attrs.get_pair("stride", {1, 1}),
            c.attrs.get_pair("padding", {0, 0}), c.attrs.get_pair("dilation", {1, 1}),
            c.attrs.get_int("groups"), false);
}

void pool_kernel(KernelContext& c) {
  bool max = std::string(c.schema.name) == "max_pool2d";
  std::array<int64_t, 2> kernel = c.attrs.get_pair("kernel_size", {});
  conv_like(c, max ? 1 : 2, nullptr, nullptr, kernel,
            c.attrs.get_pair("stride", {kernel[0], kernel[1]}), c.attrs.get_pair("padding", {0, 0}),
            {1, 1}, 1, max ? false : c.attrs.get_bool("count_include_pad"));
}

void attention_kernel(KernelContext& c) {
  const TensorRef& q = c.inputs[0];
  const TensorRef& k = c.inputs[1];
  const TensorRef& v = c.inputs[2];
  const TensorRef& y = c.outputs[0];
  int64_t outputs = y.numel();
  if (outputs == 0) return;
  int64_t D = q.shape[q.ndim - 1];
  double scale = c.attrs.get_float("scale");
  if (scale == 0) scale = D > 0 ? 1.0 / std::sqrt(double(D)) : 0.0;
  require_loop_budget(c, uint64_t(outputs), uint64_t(k.shape[k.ndim - 2]) * uint64_t(D + 1),
                      "the keys of one query");
  Params p;
  p.add(outputs);
  p.add(q.shape[q.ndim - 2]);
  p.add(k.shape[k.ndim - 2]);
  p.add(D);
  p.add(v.shape[v.ndim - 1]);
  // 0: no mask; 1: bottom-right aligned; 2: top-left aligned.
  p.add(!c.attrs.get_bool("causal")                            ? 0
        : c.attrs.get_string("causal_alignment") == "top_left" ? 2
                                                               : 1);
  p.add_float(float(scale));
  p.add(q.offset);
  p.add(k.offset);
  p.add(v.offset);
  p.add(y.offset);
  dispatch(c.stream, module_name("attention", {y.dtype}), 0,
           {{0, q.buffer()}, {1, k.buffer()}, {2, v.buffer()}, {3, y.buffer()}}, p.data(), p.size(),
           uint64_t(outputs));
}

void cross_entropy_kernel(KernelContext& c) {
  const TensorRef& logits = c.inputs[0];
  const TensorRef& target = c.inputs[1];
  const TensorRef& y = c.outputs[0];
  std::string reduction = c.attrs.get_string("reduction");
  int mode = reduction == "none" ? 0 : reduction == "sum" ? 1 : reduction == "mean" ? 2 : -1;
  oar::sdk::require(
      mode >= 0, OAR_STATUS_INVALID_ARGUMENT,
      "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"");
  int64_t N = logits.shape[0], C = logits.shape[1];
  if (y.numel() == 0) return;
  require_loop_budget(c, uint64_t(N), 3 * uint64_t(C), "a row of logits");
  // Per-row losses: into y for "none", into f32 scratch that a sum (or mean)
  // reduces for the others.
  VkBuffer losses = y.buffer();
  int64_t losses_offset = y.offset;
  DLDataType losses_dtype = y.dtype;
  if (mode != 0 && N > 0) {
    oar_memory_t memory = nullptr;
    uint64_t offset = 0;
    oar_status_t status =
        c.call->scratch_allocate(c.call->scratch_context, uint64_t(N) * 4 + 4, &memory, &offset);
    oar::sdk::require(status == OAR_STATUS_OK, status, "cross_entropy: scratch_allocate failed");
    losses = memory->buffer.buffer;
    losses_offset = int64_t((offset + 3) / 4);
    losses_dtype = dtype::f32;
  }
  if (N > 0) {
    Params p;
    p.add(N);
    p.add(C);
    p.add(logits.offset);
    p.add(target.offset);
    p.add(losses_offset);
    dispatch(c.stream, module_name("xent", {y.dtype, target.dtype, losses_dtype}), 0,
             {{0, logits.buffer()}, {1, target.buffer()}, {3, losses}}, p.data(), p.size(),
             uint64_t(N));
  }
  if (mode == 0) return;
  Reduction r;
  r.op = mode == 2 ? 1 : 0;
  r.x = losses;
  r.x_dtype = losses_dtype;
  r.x_offset = losses_offset;
  r.reduced_shape = {N};
  r.reduced_strides = {1};
  r.count = N;
  r.divisor = double(N);
  r.y = y.buffer();
  r.y_dtype = y.dtype;
  r.y_offset = y.offset;
  reduce_dispatch(c, r);
}

}  // namespace

void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar) {
  auto same = [](size_t inputs) { return same_signatures(ops::kFloats, inputs, 1); };
  auto conv = same(2);
  for (auto& signature : same(3)) conv.push_back(signature);
  std::vector<std::vector<DLDataType>> cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats & kSupported)) {
    cross_entropy.push_back({t, dtype::i32, t});
    cross_entropy.push_back({t, dtype::i64, t});
  }
  register_op(registrar, "matmul", &matmul_kernel, same(2));
  register_op(registrar, "softmax", &softmax_kernel, same(1));
  register_op(registrar, "log_softmax", &softmax_kernel, same(1));
  register_op(registrar, "layer_norm", &norm_kernel, same(3));
  register_op(registrar, "rms_norm", &norm_kernel, same(2));
  register_op(registrar, "batch_norm", &batch_norm_kernel, same(5));
  register_op(registrar, "conv2d", &conv2d_kernel, conv);
  register_op(registrar, "max_pool2d", &pool_kernel, same(1));
  register_op(registrar, "avg_pool2d", &pool_kernel, same(1));
  register_op(registrar, "scaled_dot_product_attention", &attention_kernel, same(3));
  register_op(registrar, "rotary_embedding", &rotary_kernel, same(3));
  register_op(registrar, "cross_entropy", &cross_entropy_kernel, cross_entropy);
}

void VulkanPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  oar::sdk::KernelRegistrar kernels(registrar);
  register_elementwise_kernels(kernels);
  register_layout_kernels(kernels);
  register_reduction_kernels(kernels);
  register_nn_kernels(kernels);
  register_grad_kernels(kernels);
  register_nn_grad_kernels(kernels);
  register_optimizer_kernels(kernels);
  register_layout_v2_kernels(kernels);
  register_math_v2_kernels(kernels);
}

}  // namespace oar::vulkan
