// The reference implementation of the operators of core/ops/schema_optimizer.cc:
// plain loops in double, written from docs/ops.md ("Optimizer steps").
#include <algorithm>
#include <cmath>

#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {
namespace {

// sgd: inputs param, grad, momentum_buffer; outputs param, momentum_buffer.
void sgd(Ctx& c) {
  const double lr = c.attrs.get_float("lr"), momentum = c.attrs.get_float("momentum");
  const double dampening = c.attrs.get_float("dampening");
  const double decay = c.attrs.get_float("weight_decay");
  const bool nesterov = c.attrs.get_bool("nesterov");
  const bool first = c.attrs.get_int("step") == 1;
  const std::vector<double> p = values(c.in[0]), g = values(c.in[1]), b = values(c.in[2]);
  for (size_t i = 0; i < p.size(); ++i) {
    const double d = decay != 0 ? g[i] + decay * p[i] : g[i];
    double buf = b[i];
    double direction = d;
    if (momentum != 0) {
      buf = first ? d : momentum * b[i] + (1 - dampening) * d;
      direction = nesterov ? d + momentum * buf : buf;
    }
    c.out[0].set(int64_t(i), p[i] - lr * direction);
    c.out[1].set(int64_t(i), buf);
  }
}

// adam and adamw: inputs param, grad, exp_avg, exp_avg_sq; outputs the same
// three updated.
void adam(Ctx& c, bool decoupled) {
  const double lr = c.attrs.get_float("lr"), b1 = c.attrs.get_float("beta1");
  const double b2 = c.attrs.get_float("beta2"), eps = c.attrs.get_float("eps");
  const double decay = c.attrs.get_float("weight_decay");
  const double step = double(c.attrs.get_int("step"));
  const double correction1 = 1 - std::pow(b1, step), correction2 = 1 - std::pow(b2, step);
  const std::vector<double> p = values(c.in[0]), g = values(c.in[1]);
  const std::vector<double> m = values(c.in[2]), v = values(c.in[3]);
  for (size_t i = 0; i < p.size(); ++i) {
    const double d = !decoupled && decay != 0 ? g[i] + decay * p[i] : g[i];
    const double param = decoupled ? p[i] * (1 - lr * decay) : p[i];
    const double m1 = b1 * m[i] + (1 - b1) * d;
    const double v1 = b2 * v[i] + (1 - b2) * d * d;
    const double update = (m1 / correction1) / (std::sqrt(v1 / correction2) + eps);
    c.out[0].set(int64_t(i), param - lr * update);
    c.out[1].set(int64_t(i), m1);
    c.out[2].set(int64_t(i), v1);
  }
}

// grad_norm: the norm of every element of every input together.
void grad_norm(Ctx& c) {
  const double p = c.attrs.get_float("norm_type");
  double total = 0;
  bool nan = false;
  for (const HostTensor& g : c.in) {
    for (double v : values(g)) {
      nan |= std::isnan(v);
      const double a = std::fabs(v);
      if (std::isinf(p)) {
        total = std::max(total, a);
      } else {
        total += p == 1 ? a : a * a;
      }
    }
  }
  if (p == 2) total = std::sqrt(total);
  c.out[0].set(0, nan ? kNaN : total);
}

// clip_grad_norm: grad * min(1, max_norm / (total_norm + eps)); NaN stays NaN.
void clip_grad_norm(Ctx& c) {
  const double total = c.in[1].get(0);
  const double coefficient = c.attrs.get_float("max_norm") / (total + c.attrs.get_float("eps"));
  const double scale = std::isnan(coefficient) ? kNaN : std::min(1.0, coefficient);
  const std::vector<double> g = values(c.in[0]);
  for (size_t i = 0; i < g.size(); ++i) c.out[0].set(int64_t(i), g[i] * scale);
}

}  // namespace

void add_optimizer_references(ReferenceTable& table) {
  table["sgd"] = sgd;
  table["adam"] = [](Ctx& c) { adam(c, false); };
  table["adamw"] = [](Ctx& c) { adam(c, true); };
  table["grad_norm"] = grad_norm;
  table["clip_grad_norm"] = clip_grad_norm;
}

}  // namespace oar::conformance::ref
