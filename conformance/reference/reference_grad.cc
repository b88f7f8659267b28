// The reference implementation of the operators of core/ops/schema_grad.cc:
// plain loops in double (int64 for integers), written from docs/ops.md
// ("Gradients").
#include <cmath>

#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// d silu / dx = s (1 + x (1 - s)), with 1 - s = sigmoid(-x) (no cancellation).
double silu_derivative(double x) { return sigmoid(x) * (1 + x * sigmoid(-x)); }

// d gelu / dx. erf form: Phi(x) + x phi(x). tanh form, with u = k (x + c x^3)
// and s = sigmoid(2u) = (1 + tanh u) / 2: s + 2 x s (1 - s) u'.
double gelu_derivative(double x, bool tanh_form) {
  if (!tanh_form) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    return cdf + x * pdf;
  }
  const double k = std::sqrt(2 / M_PI), c = 0.044715;
  const double u = k * (x + c * x * x * x);
  const double s = sigmoid(2 * u), one_minus_s = sigmoid(-2 * u);
  return s + 2 * x * s * one_minus_s * k * (1 + 3 * c * x * x);
}

// dy and y along the axis, dx written in place of dy's row.
void rows(Ctx& c, const std::function<void(std::vector<double>&, const std::vector<double>&)>& fn) {
  const HostTensor &dy = c.in[0], &y = c.in[1];
  std::vector<bool> mask(dy.shape.size(), false);
  if (!mask.empty()) mask[size_t(c.axis())] = true;
  const auto outer = offsets(dy.shape, negate(mask)), inner = offsets(dy.shape, mask);
  std::vector<double> row(inner.size()), other(inner.size());
  for (int64_t o : outer) {
    for (size_t r = 0; r < inner.size(); ++r) {
      row[r] = dy.get(o + inner[r]);
      other[r] = y.get(o + inner[r]);
    }
    fn(row, other);
    for (size_t r = 0; r < inner.size(); ++r) c.y().set(o + inner[r], row[r]);
  }
}

}  // namespace

void add_grad_references(ReferenceTable& table) {
  table["relu_grad"] = [](Ctx& c) {
    binary(c, [](double dy, double x) { return std::isnan(x) ? x : x > 0 ? dy : 0.0; });
  };
  table["sigmoid_grad"] = [](Ctx& c) {
    binary(c, [](double dy, double y) { return dy * y * (1 - y); });
  };
  table["tanh_grad"] = [](Ctx& c) {
    binary(c, [](double dy, double y) { return dy * (1 - y) * (1 + y); });
  };
  table["silu_grad"] = [](Ctx& c) {
    binary(c, [](double dy, double x) { return dy * silu_derivative(x); });
  };
  table["gelu_grad"] = [](Ctx& c) {
    const bool tanh_form = c.attrs.get_string("approximate") == "tanh";
    binary(c, [tanh_form](double dy, double x) { return dy * gelu_derivative(x, tanh_form); });
  };
  table["softmax_grad"] = [](Ctx& c) {
    rows(c, [](std::vector<double>& dy, const std::vector<double>& y) {
      double dot = 0;
      for (size_t j = 0; j < dy.size(); ++j) dot += dy[j] * y[j];
      for (size_t j = 0; j < dy.size(); ++j) dy[j] = y[j] * (dy[j] - dot);
    });
  };
  table["log_softmax_grad"] = [](Ctx& c) {
    rows(c, [](std::vector<double>& dy, const std::vector<double>& y) {
      double sum = 0;
      for (double v : dy) sum += v;
      for (size_t j = 0; j < dy.size(); ++j) dy[j] = dy[j] - std::exp(y[j]) * sum;
    });
  };
}

}  // namespace oar::conformance::ref
