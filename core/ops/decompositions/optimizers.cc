// The optimizer steps from primitives (docs/ops.md, "Optimizer steps"): sgd,
// adam, adamw, grad_norm and clip_grad_norm. f16 and bf16 parameters are
// computed in f32 (their state is f32 already) and rounded once at the store.
//
// In place: a caller may bind each output to the memory of the matching
// input. Every result is computed into scratch first and stored last, so
// every input element is read (stream ordered) before any output is written,
// and no primitive ever runs with an output that aliases one of its inputs.
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/decompositions/decompose.h"

namespace oar::decompose {
namespace {

#define OAR_OP(var, name) static const OpId var(name)

// Whether |a| and |b| are the same elements (an output bound to its input).
bool same_memory(const DLTensor* a, const DLTensor* b) {
  return a->data == b->data && a->byte_offset == b->byte_offset;
}

// a · s as a scratch tensor (s a host constant).
const DLTensor* scaled(Graph& g, const DLTensor* a, double s) {
  OAR_OP(mul, "mul");
  return g.call(mul, {a, g.scalar(s, a->dtype)});
}

// g = grad + weight_decay · param (grad itself without decay).
const DLTensor* decayed_grad(Graph& g, const DLTensor* grad, const DLTensor* param, double decay) {
  OAR_OP(add, "add");
  return decay != 0 ? g.call(add, {grad, scaled(g, param, decay)}) : grad;
}

// PyTorch's SGD: weight decay, then momentum (the buffer is the gradient on
// step 1), dampening and Nesterov; without momentum the buffer is copied.
void sgd(Graph& g) {
  OAR_OP(add, "add");
  OAR_OP(sub, "sub");
  OAR_OP(copy, "copy");
  const ops::Attrs& a = g.attrs();
  const double lr = a.get_float("lr"), momentum = a.get_float("momentum");
  const DLTensor* param = g.widen(g.in(0));
  const DLTensor* grad = decayed_grad(g, g.widen(g.in(1)), param, a.get_float("weight_decay"));
  const DLTensor* update = grad;
  const DLTensor* buffer = nullptr;
  if (momentum != 0) {
    buffer = grad;
    if (a.get_int("step") > 1) {
      buffer = g.call(
          add, {scaled(g, g.in(2), momentum), scaled(g, grad, 1.0 - a.get_float("dampening"))});
    }
    update = a.get_bool("nesterov") ? g.call(add, {grad, scaled(g, buffer, momentum)}) : buffer;
  }
  const DLTensor* new_param = g.call(sub, {param, scaled(g, update, lr)});
  // Every input has been read (on the stream) before the first store.
  store(g, new_param, g.out(0));
  if (buffer != nullptr) {
    store(g, buffer, g.out(1));
  } else if (!same_memory(g.in(2), g.out(1))) {
    g.call_into(copy, {g.in(2)}, g.out(1));
  }
}

// Adam (L2 decay through the gradient) or AdamW (decoupled decay of the
// parameter); bias corrections 1 − β^step in double on the host.
void adam_step(Graph& g, bool decoupled) {
  OAR_OP(add, "add");
  OAR_OP(sub, "sub");
  OAR_OP(mul, "mul");
  OAR_OP(div, "div");
  OAR_OP(sqrt, "sqrt");
  const ops::Attrs& a = g.attrs();
  const double lr = a.get_float("lr"), b1 = a.get_float("beta1"), b2 = a.get_float("beta2");
  const double decay = a.get_float("weight_decay");
  const double step = double(a.get_int("step"));
  const DLTensor* param = g.widen(g.in(0));
  const DLTensor* grad = g.widen(g.in(1));
  if (decoupled) {
    if (lr * decay != 0) param = scaled(g, param, 1.0 - lr * decay);
  } else {
    grad = decayed_grad(g, grad, param, decay);
  }
  const DLTensor* m = g.call(add, {scaled(g, g.in(2), b1), scaled(g, grad, 1.0 - b1)});
  const DLTensor* v =
      g.call(add, {scaled(g, g.in(3), b2), scaled(g, g.call(mul, {grad, grad}), 1.0 - b2)});
  const double bc1 = 1.0 - std::pow(b1, step), bc2 = 1.0 - std::pow(b2, step);
  const DLTensor* t_v = g.call(div, {v, g.scalar(bc2, v->dtype)});
  const DLTensor* denom =
      g.call(add, {g.call(sqrt, {t_v}), g.scalar(a.get_float("eps"), v->dtype)});
  const DLTensor* new_param = g.call(sub, {param, g.call(div, {scaled(g, m, lr / bc1), denom})});
  store(g, new_param, g.out(0));
  store(g, m, g.out(1));
  store(g, v, g.out(2));
}

void adam(Graph& g) { adam_step(g, false); }
void adamw(Graph& g) { adam_step(g, true); }

// (Σ |g|^p)^(1/p) over every gradient (p = 1, 2), or max |g| (p = inf; NaN
// wins through maximum), in f32 (f64 for f64 gradients). Empty gradients add
// nothing; with all of them empty the norm is 0.
void grad_norm(Graph& g) {
  OAR_OP(abs, "abs");
  OAR_OP(mul, "mul");
  OAR_OP(sum, "sum");
  OAR_OP(max, "max");
  OAR_OP(add, "add");
  OAR_OP(maximum, "maximum");
  OAR_OP(sqrt, "sqrt");
  const double p = g.attrs().get_float("norm_type");
  const std::vector<int64_t> all;
  const DLTensor* total = nullptr;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    const DLTensor* x = g.widen(g.in(i));
    int64_t count = 1;
    for (int d = 0; d < x->ndim; ++d) count *= x->shape[d];
    const DLTensor* part = nullptr;
    if (std::isinf(p)) {
      if (count == 0) continue;  // max has no identity: skip, not 0
      part = g.call(max, {g.call(abs, {x})}, {Attr("axes", all), Attr("keepdim", false)});
      total = total == nullptr ? part : g.call(maximum, {total, part});
      continue;
    }
    const DLTensor* terms = p == 1 ? g.call(abs, {x}) : g.call(mul, {x, x});
    part = g.call(sum, {terms}, {Attr("axes", all), Attr("keepdim", false)});
    total = total == nullptr ? part : g.call(add, {total, part});
  }
  if (total == nullptr) total = g.scalar(0.0, g.out(0)->dtype);
  if (p == 2) total = g.call(sqrt, {total});
  store(g, total, g.out(0));
}

// grad · min(1, max_norm / (total_norm + eps)): a NaN norm makes every element
// NaN (minimum propagates NaN), an infinite one scales by 0.
void clip_grad_norm(Graph& g) {
  OAR_OP(add, "add");
  OAR_OP(div, "div");
  OAR_OP(mul, "mul");
  OAR_OP(minimum, "minimum");
  const DLTensor* total = g.in(1);
  const DLDataType t = total->dtype;
  const DLTensor* ratio =
      g.call(div, {g.scalar(g.attrs().get_float("max_norm"), t),
                   g.call(add, {total, g.scalar(g.attrs().get_float("eps"), t)})});
  const DLTensor* scale = g.call(minimum, {ratio, g.scalar(1.0, t)});
  const DLTensor* grad = g.widen(g.in(0));
  store(g, g.call(mul, {grad, scale}), g.out(0));
}

#undef OAR_OP

}  // namespace

void add_optimizer_decompositions(std::vector<Decomposition>& table) {
  table.push_back({"sgd", sgd});
  table.push_back({"adam", adam});
  table.push_back({"adamw", adamw});
  table.push_back({"grad_norm", grad_norm});
  table.push_back({"clip_grad_norm", clip_grad_norm});
}

}  // namespace oar::decompose
