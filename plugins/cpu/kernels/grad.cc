// cpu kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc).
// Elementwise in the compute type (f32 for f16/bf16/f32, f64 for f64) and
// parallelised with OpenMP; row sums in double. docs/ops.md ("Gradients")
// says which forms keep their precision (tanh's (1 - y)(1 + y), sigmoid(-x)
// for 1 - sigmoid(x)).
#include <cmath>
#include <string>

#include "kernels/kernel.h"

namespace oar::cpu {
namespace {

constexpr int64_t kParallelWork = int64_t(1) << 15;

enum class Pointwise { kRelu, kSigmoid, kTanh, kSilu, kGelu, kGeluTanh };

template <typename C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

// dx for one element: |a| is dy, |b| the operator's second input (x or y).
template <typename C>
C pointwise_grad(Pointwise op, C dy, C b) {
  switch (op) {
    case Pointwise::kRelu:
      return std::isnan(b) ? b : b > 0 ? dy : C(0);
    case Pointwise::kSigmoid:
      return dy * b * (C(1) - b);
    case Pointwise::kTanh:
      return dy * ((C(1) - b) * (C(1) + b));
    case Pointwise::kSilu:
      return dy * (sigmoid(b) * (C(1) + b * sigmoid(-b)));
    case Pointwise::kGelu: {
      const C cdf = C(0.5) * std::erfc(-b * C(0.70710678118654752440));
      const C pdf = std::exp(C(-0.5) * b * b) * C(0.39894228040143267794);
      return dy * (cdf + b * pdf);
    }
    case Pointwise::kGeluTanh: {
      const C k = C(0.79788456080286535588), c = C(0.044715);
      const C u = k * (b + c * b * b * b);
      const C s = sigmoid(C(2) * u), one_minus_s = sigmoid(C(-2) * u);
      return dy * (s + C(2) * b * s * one_minus_s * k * (C(1) + C(3) * c * b * b));
    }
  }
  return C(0);
}

void pointwise_kernel(KernelContext& context) {
  const std::string name = context.schema.name;
  Pointwise op = name == "relu_grad"      ? Pointwise::kRelu
                 : name == "sigmoid_grad" ? Pointwise::kSigmoid
                 : name == "tanh_grad"    ? Pointwise::kTanh
                 : name == "silu_grad"    ? Pointwise::kSilu
                                          : Pointwise::kGelu;
  if (op == Pointwise::kGelu && context.attrs.get_string("approximate") == "tanh") {
    op = Pointwise::kGeluTanh;
  }
  const View dy = context.inputs[0], b = context.inputs[1], dx = context.outputs[0];
  const int64_t n = dx.numel();
  if (n == 0) return;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      const T* pdy = dy.ptr<T>();
      const T* pb = b.ptr<T>();
      T* out = dx.ptr<T>();
#pragma omp parallel for if (n > kParallelWork) schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        store(out + i, pointwise_grad<compute_t<T>>(op, load(pdy + i), load(pb + i)));
      }
    });
  });
}

// softmax_grad: dx = y (dy - sum(dy y)); log_softmax_grad: dx = dy - exp(y) sum(dy).
void row_kernel(KernelContext& context) {
  const bool log = std::string(context.schema.name) == "log_softmax_grad";
  const View dy = context.inputs[0], y = context.inputs[1], dx = context.outputs[0];
  if (dx.numel() == 0) return;
  int64_t axis = context.attrs.get_int("axis");
  if (axis < 0) axis += dy.ndim;
  const int64_t n = dy.ndim == 0 ? 1 : dy.shape[axis];
  int64_t inner = 1;
  for (int d = int(axis) + 1; d < dy.ndim; ++d) inner *= dy.shape[d];
  const int64_t lines = dy.numel() / n;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      const T* pdy = dy.ptr<T>();
      const T* py = y.ptr<T>();
      T* out = dx.ptr<T>();
#pragma omp parallel for if (lines * n > kParallelWork) schedule(static)
      for (int64_t line = 0; line < lines; ++line) {
        const int64_t base = line / inner * n * inner + line % inner;
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + j * inner;
          sum += log ? double(load(pdy + at)) : double(load(pdy + at)) * double(load(py + at));
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + j * inner;
          const double g = load(pdy + at), v = load(py + at);
          store(out + at, log ? g - std::exp(v) * sum : v * (g - sum));
        }
      }
    });
  });
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, &pointwise_kernel, two, 0, table);
  }
  register_op(registrar, "softmax_grad", &row_kernel, two, 0, table);
  register_op(registrar, "log_softmax_grad", &row_kernel, two, 0, table);
}

}  // namespace oar::cpu
