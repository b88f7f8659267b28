// Elementwise Paddle kernels: each is one OAR operator (NumPy broadcasting for
// the binary ones). The dtypes registered are the OAR operator's set
// (docs/ops.md) among those Paddle has; docs/paddle.md lists the mapping.
#include "kernels/common.h"

namespace oar_paddle {

#define OAR_PADDLE_BINARY(kernel, op)                                                   \
  template <typename T, typename Context>                                               \
  void kernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y, \
              phi::DenseTensor* out) {                                                  \
    ctx.template Alloc<T>(out);                                                         \
    if (out->numel() == 0) return;                                                      \
    View a(x), b(y), o(*out);                                                           \
    run(ctx, OAR_PADDLE_OP(op), {&a, &b}, {&o});                                        \
  }

#define OAR_PADDLE_COMPARE(kernel, op)                                                  \
  template <typename T, typename Context>                                               \
  void kernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y, \
              phi::DenseTensor* out) {                                                  \
    ctx.template Alloc<bool>(out);                                                      \
    if (out->numel() == 0) return;                                                      \
    View a(x), b(y), o(*out);                                                           \
    run(ctx, OAR_PADDLE_OP(op), {&a, &b}, {&o});                                        \
  }

#define OAR_PADDLE_UNARY(kernel, op)                                                  \
  template <typename T, typename Context>                                             \
  void kernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) { \
    ctx.template Alloc<T>(out);                                                       \
    if (out->numel() == 0) return;                                                    \
    View a(x), o(*out);                                                               \
    run(ctx, OAR_PADDLE_OP(op), {&a}, {&o});                                          \
  }

OAR_PADDLE_BINARY(AddKernel, "add")
OAR_PADDLE_BINARY(SubtractKernel, "sub")
OAR_PADDLE_BINARY(MultiplyKernel, "mul")
OAR_PADDLE_BINARY(DivideKernel, "div")
OAR_PADDLE_BINARY(MaximumKernel, "maximum")
OAR_PADDLE_BINARY(MinimumKernel, "minimum")
OAR_PADDLE_BINARY(PowKernel, "pow")

OAR_PADDLE_COMPARE(EqualKernel, "eq")
OAR_PADDLE_COMPARE(NotEqualKernel, "ne")
OAR_PADDLE_COMPARE(LessThanKernel, "lt")
OAR_PADDLE_COMPARE(LessEqualKernel, "le")
OAR_PADDLE_COMPARE(GreaterThanKernel, "gt")
OAR_PADDLE_COMPARE(GreaterEqualKernel, "ge")

OAR_PADDLE_UNARY(ReluKernel, "relu")
OAR_PADDLE_UNARY(TanhKernel, "tanh")
OAR_PADDLE_UNARY(SigmoidKernel, "sigmoid")
OAR_PADDLE_UNARY(SiluKernel, "silu")
OAR_PADDLE_UNARY(ExpKernel, "exp")
OAR_PADDLE_UNARY(LogKernel, "log")
OAR_PADDLE_UNARY(SqrtKernel, "sqrt")
OAR_PADDLE_UNARY(RsqrtKernel, "rsqrt")
OAR_PADDLE_UNARY(SinKernel, "sin")
OAR_PADDLE_UNARY(CosKernel, "cos")
OAR_PADDLE_UNARY(AbsKernel, "abs")
OAR_PADDLE_UNARY(FloorKernel, "floor")
OAR_PADDLE_UNARY(CeilKernel, "ceil")
OAR_PADDLE_UNARY(ReciprocalKernel, "reciprocal")
OAR_PADDLE_UNARY(ErfKernel, "erf")

// square(x) = mul(x, x).
template <typename T, typename Context>
void SquareKernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("mul"), {&a, &a}, {&o});
}

template <typename T, typename Context>
void GeluKernel(const Context& ctx, const phi::DenseTensor& x, bool approximate,
                phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, OAR_PADDLE_OP("gelu"), {&a}, {&o},
      {oar::Attr("approximate", approximate ? "tanh" : "none")});
}

template <typename T, typename Context>
void WhereKernel(const Context& ctx, const phi::DenseTensor& condition, const phi::DenseTensor& x,
                 const phi::DenseTensor& y, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View c(condition), a(x), b(y), o(*out);
  run(ctx, OAR_PADDLE_OP("where"), {&c, &a, &b}, {&o});
}

// The sum of n tensors (Paddle's gradient accumulation under to_static):
// add, then add into the output. Empty or unset inputs add nothing. An input
// after the second that shares the output's memory is read before the output
// is written, through a copy.
template <typename T, typename Context>
void AddNKernel(const Context& ctx, const std::vector<const phi::TensorBase*>& xs,
                phi::DenseTensor* out) {
  std::vector<const phi::DenseTensor*> in;
  for (const phi::TensorBase* x : xs) {
    const auto* dense = dynamic_cast<const phi::DenseTensor*>(x);
    if (dense == nullptr) {
      unsupported(ctx, "add_n", "an input that is not a dense tensor (SelectedRows)");
    }
    if (dense->initialized() && dense->numel() != 0) in.push_back(dense);
  }
  std::vector<phi::DenseTensor> copies;
  copies.reserve(in.size());
  for (size_t i = 2; i < in.size(); ++i) {
    if (out->initialized() && in[i]->data() == out->data()) {
      copies.push_back(empty(ctx, dims_of(*in[i]), in[i]->dtype()));
      View a(*in[i]), c(copies.back());
      run(ctx, OAR_PADDLE_OP("copy"), {&a}, {&c});
      in[i] = &copies.back();
    }
  }
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View o(*out);
  if (in.empty()) {
    fill(ctx, out, 0.0);
    return;
  }
  if (in.size() == 1) {
    View a(*in[0]);
    run(ctx, OAR_PADDLE_OP("copy"), {&a}, {&o});
    return;
  }
  {
    View a(*in[0]), b(*in[1]);
    run(ctx, OAR_PADDLE_OP("add"), {&a, &b}, {&o});
  }
  for (size_t i = 2; i < in.size(); ++i) {
    View b(*in[i]);
    run(ctx, OAR_PADDLE_OP("add"), {&o, &b}, {&o});
  }
}

}  // namespace oar_paddle

OAR_PADDLE_REGISTER(add, AddKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(subtract, SubtractKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(multiply, MultiplyKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(divide, DivideKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(maximum, MaximumKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(minimum, MinimumKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(elementwise_pow, PowKernel, OAR_PADDLE_FLOATS)

// Comparisons write bool whatever the input dtype.
#define OAR_PADDLE_REGISTER_COMPARE(name, fn, ...)                                \
  PD_REGISTER_PLUGIN_KERNEL(name, oar, ALL_LAYOUT, oar_paddle::fn, __VA_ARGS__) { \
    kernel->OutputAt(0).SetDataType(phi::DataType::BOOL);                         \
  }
OAR_PADDLE_REGISTER_COMPARE(equal, EqualKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER_COMPARE(not_equal, NotEqualKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER_COMPARE(less_than, LessThanKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER_COMPARE(less_equal, LessEqualKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER_COMPARE(greater_than, GreaterThanKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER_COMPARE(greater_equal, GreaterEqualKernel, OAR_PADDLE_NUMBERS)

OAR_PADDLE_REGISTER(relu, ReluKernel, OAR_PADDLE_FLOATS, int32_t, int64_t)
OAR_PADDLE_REGISTER(tanh, TanhKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(sigmoid, SigmoidKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(silu, SiluKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(exp, ExpKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(log, LogKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(sqrt, SqrtKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(rsqrt, RsqrtKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(sin, SinKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(cos, CosKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(abs, AbsKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(floor, FloorKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(ceil, CeilKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(reciprocal, ReciprocalKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(erf, ErfKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(square, SquareKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(gelu, GeluKernel, OAR_PADDLE_FLOATS)
OAR_PADDLE_REGISTER(where, WhereKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(add_n, AddNKernel, OAR_PADDLE_NUMBERS)
