// The reference implementation of the operators of core/ops/schema_grad.cc:
// plain loops in double (int64 for integers), written from docs/ops.md
// ("Gradients").
#include <cmath>
#include <string>

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

void embedding_grad(Ctx& c) {
  const HostTensor &dy = c.in[0], &index = c.in[1];
  const int64_t V = c.attrs.get_int("num_embeddings"), D = dy.shape.back();
  const std::vector<double> g = values(dy);
  std::vector<double> sum(size_t(V * D), 0.0);
  for (int64_t p = 0; p < index.numel(); ++p) {
    const int64_t v = checked_index(index, p, V, "embedding_grad");
    for (int64_t d = 0; d < D; ++d) sum[size_t(v * D + d)] += g[size_t(p * D + d)];
  }
  for (int64_t i = 0; i < V * D; ++i) c.y().set(i, sum[size_t(i)]);
}

void cross_entropy_grad(Ctx& c) {
  const HostTensor &dloss = c.in[0], &logits = c.in[1], &target = c.in[2];
  const int64_t N = logits.shape[0], C = logits.shape[1];
  const std::string reduction = c.attrs.get_string("reduction");
  const std::vector<double> lv = values(logits);
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = checked_index(target, n, C, "cross_entropy_grad");
    const double g = reduction == "none"  ? dloss.get(n)
                     : reduction == "sum" ? dloss.get(0)
                                          : dloss.get(0) / double(N);
    const std::vector<double> row(lv.begin() + n * C, lv.begin() + (n + 1) * C);
    const double m = row_max(row);
    double sum = 0;
    for (double v : row) sum += std::exp(v - m);
    for (int64_t k = 0; k < C; ++k) {
      const double p = std::exp(row[size_t(k)] - m) / sum;
      c.y().set(n * C + k, g * (p - (k == t ? 1.0 : 0.0)));
    }
  }
}

// The transpose of rotary_embedding's rotation: each pair turned back by its angle.
void rotary_embedding_grad(Ctx& c) {
  const HostTensor &dy = c.in[0], &cos = c.in[1], &sin = c.in[2];
  const bool interleaved = c.attrs.get_bool("interleaved");
  const int64_t D = dy.shape.back(), S = dy.shape[dy.shape.size() - 2], half = D / 2;
  const int64_t rows = D == 0 ? 0 : dy.numel() / D;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = r % S;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t first = r * D + (interleaved ? 2 * i : i);
      const int64_t second = r * D + (interleaved ? 2 * i + 1 : i + half);
      const double g1 = dy.get(first), g2 = dy.get(second);
      const double co = cos.get(s * half + i), si = sin.get(s * half + i);
      c.y().set(first, g1 * co + g2 * si);
      c.y().set(second, g2 * co - g1 * si);
    }
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
  table["embedding_grad"] = embedding_grad;
  table["cross_entropy_grad"] = cross_entropy_grad;
  table["rotary_embedding_grad"] = rotary_embedding_grad;
}

}  // namespace oar::conformance::ref
