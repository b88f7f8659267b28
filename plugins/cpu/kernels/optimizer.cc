// cpu kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc). One pass per element: every input element
// is read before any output element is written, so the outputs may alias the
// inputs (the in-place update) or be separate tensors. f16 and bf16
// parameters are computed in f32 (their state is f32), f64 in f64, and each
// result is rounded once, when it is stored.
#include <algorithm>
#include <cmath>

#include "kernels/kernel.h"

namespace oar::cpu {
namespace {

constexpr int64_t kParallelElements = int64_t(1) << 14;

// The type a parameter of storage type T is updated in, and its state's
// storage type: double for f64, float otherwise.
template <typename T>
using state_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

void sgd_kernel(KernelContext& c) {
  const double lr = c.attrs.get_float("lr"), momentum = c.attrs.get_float("momentum");
  const double dampening = c.attrs.get_float("dampening");
  const double decay = c.attrs.get_float("weight_decay");
  const bool nesterov = c.attrs.get_bool("nesterov");
  const bool first = c.attrs.get_int("step") == 1;
  View p = c.inputs[0], g = c.inputs[1], b = c.inputs[2], p_out = c.outputs[0],
       b_out = c.outputs[1];
  const int64_t n = p.numel();
  if (n == 0) return;
  with_float(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    using S = state_t<T>;
    launch(c.call, [=] {
      const S lr_ = S(lr), momentum_ = S(momentum), keep = S(1 - dampening), decay_ = S(decay);
      const T* pp = p.ptr<T>();
      const T* gp = g.ptr<T>();
      const S* bp = b.ptr<S>();
      T* po = p_out.ptr<T>();
      S* bo = b_out.ptr<S>();
#pragma omp parallel for if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) {
        const S param = S(load(pp + i)), grad = S(load(gp + i)), buf_in = bp[i];
        const S d = decay != 0 ? grad + decay_ * param : grad;
        S buf = buf_in, direction = d;
        if (momentum != 0) {
          buf = first ? d : momentum_ * buf_in + keep * d;
          direction = nesterov ? d + momentum_ * buf : buf;
        }
        store(po + i, param - lr_ * direction);
        bo[i] = buf;
      }
    });
  });
}

void adam_kernel(KernelContext& c) {
  const bool decoupled = std::string(c.schema.name) == "adamw";
  const double lr = c.attrs.get_float("lr"), b1 = c.attrs.get_float("beta1");
  const double b2 = c.attrs.get_float("beta2"), eps = c.attrs.get_float("eps");
  const double decay = c.attrs.get_float("weight_decay");
  const double step = double(c.attrs.get_int("step"));
  const double correction1 = 1 - std::pow(b1, step);
  const double sqrt_correction2 = std::sqrt(1 - std::pow(b2, step));
  View p = c.inputs[0], g = c.inputs[1], m = c.inputs[2], v = c.inputs[3], p_out = c.outputs[0],
       m_out = c.outputs[1], v_out = c.outputs[2];
  const int64_t n = p.numel();
  if (n == 0) return;
  with_float(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    using S = state_t<T>;
    launch(c.call, [=] {
      const S b1_ = S(b1), b2_ = S(b2), eps_ = S(eps), decay_ = S(decay);
      const S step_size = S(lr / correction1), sqrt_c2 = S(sqrt_correction2);
      const S shrink = S(1 - lr * decay);
      const T* pp = p.ptr<T>();
      const T* gp = g.ptr<T>();
      const S* mp = m.ptr<S>();
      const S* vp = v.ptr<S>();
      T* po = p_out.ptr<T>();
      S* mo = m_out.ptr<S>();
      S* vo = v_out.ptr<S>();
#pragma omp parallel for if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) {
        S param = S(load(pp + i));
        const S grad = S(load(gp + i)), m_in = mp[i], v_in = vp[i];
        S d = grad;
        if (decoupled) {
          param *= shrink;
        } else if (decay != 0) {
          d += decay_ * param;
        }
        const S m1 = b1_ * m_in + (S(1) - b1_) * d;
        const S v1 = b2_ * v_in + (S(1) - b2_) * d * d;
        const S denominator = std::sqrt(v1) / sqrt_c2 + eps_;
        store(po + i, param - step_size * (m1 / denominator));
        mo[i] = m1;
        vo[i] = v1;
      }
    });
  });
}

// grad_norm: sums in double (f64: double too), the NaN of any element wins.
void grad_norm_kernel(KernelContext& c) {
  const double p = c.attrs.get_float("norm_type");
  std::vector<View> grads = c.inputs;
  View out = c.outputs[0];
  with_float(grads[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    using S = state_t<T>;
    launch(c.call, [=] {
      double total = 0;
      bool nan = false;
      for (const View& g : grads) {
        const T* x = g.ptr<T>();
        const int64_t n = g.numel();
        double part = 0;
        bool part_nan = false;
        if (std::isinf(p)) {
#pragma omp parallel for reduction(max : part) reduction(|| : part_nan) if (n > kParallelElements)
          for (int64_t i = 0; i < n; ++i) {
            const double a = std::fabs(double(load(x + i)));
            part_nan = part_nan || std::isnan(a);
            part = std::max(part, a);
          }
          total = std::max(total, part);
        } else {
#pragma omp parallel for reduction(+ : part) if (n > kParallelElements)
          for (int64_t i = 0; i < n; ++i) {
            const double a = std::fabs(double(load(x + i)));
            part += p == 1 ? a : a * a;
          }
          part_nan = std::isnan(part);
          total += part;
        }
        nan = nan || part_nan;
      }
      if (p == 2) total = std::sqrt(total);
      *out.ptr<S>() = nan ? S(NAN) : S(total);
    });
  });
}

// clip_grad_norm: the scale from total_norm, then one multiplication per
// element (rounded once).
void clip_grad_norm_kernel(KernelContext& c) {
  const double max_norm = c.attrs.get_float("max_norm"), eps = c.attrs.get_float("eps");
  View g = c.inputs[0], total = c.inputs[1], out = c.outputs[0];
  const int64_t n = g.numel();
  if (n == 0) return;
  with_float(g.dtype, [&](auto tag) {
    using T = decltype(tag);
    using S = state_t<T>;
    launch(c.call, [=] {
      const S coefficient = S(max_norm) / (*total.ptr<S>() + S(eps));
      const S scale = std::isnan(coefficient) ? coefficient : std::min(S(1), coefficient);
      const T* x = g.ptr<T>();
      T* y = out.ptr<T>();
#pragma omp parallel for if (n > kParallelElements)
      for (int64_t i = 0; i < n; ++i) store(y + i, S(load(x + i)) * scale);
    });
  });
}

// Signatures: param and grad of each float dtype, state in state_t.
std::vector<std::vector<DLDataType>> step_signatures(size_t states) {
  std::vector<std::vector<DLDataType>> all;
  for (DLDataType p : ops::dtypes_in(ops::kFloats)) {
    const DLDataType s = p == dtype::f64 ? dtype::f64 : dtype::f32;
    std::vector<DLDataType> signature = {p, p};
    for (size_t i = 0; i < states; ++i) signature.push_back(s);
    signature.push_back(p);
    for (size_t i = 0; i < states; ++i) signature.push_back(s);
    all.push_back(signature);
  }
  return all;
}

}  // namespace

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  register_op(registrar, "sgd", &sgd_kernel, step_signatures(1), 0, table);
  register_op(registrar, "adam", &adam_kernel, step_signatures(2), 0, table);
  register_op(registrar, "adamw", &adam_kernel, step_signatures(2), 0, table);
  std::vector<std::vector<DLDataType>> norm, clip;
  for (DLDataType g : ops::dtypes_in(ops::kFloats)) {
    const DLDataType s = g == dtype::f64 ? dtype::f64 : dtype::f32;
    for (size_t n = 1; n <= oar::sdk::kMaxVariadicInputs; ++n) {
      std::vector<DLDataType> signature(n, g);
      signature.push_back(s);
      norm.push_back(signature);
    }
    clip.push_back({g, s, g});
  }
  register_op(registrar, "grad_norm", &grad_norm_kernel, norm, 0, table);
  register_op(registrar, "clip_grad_norm", &clip_grad_norm_kernel, clip, 0, table);
}

}  // namespace oar::cpu
