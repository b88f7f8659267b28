// Reductions: sum, mean, max, min, prod over axes with keepdim; argmax/argmin.
#include "kernels/common.h"
#include "paddle/common/ddim.h"

namespace oar_paddle {

namespace {
// Paddle's empty dims (or all of them) reduce everything, as OAR's empty axes do.
std::vector<int64_t> axes_of(const phi::IntArray& dims, int rank) {
  std::vector<int64_t> axes(dims.GetData().begin(), dims.GetData().end());
  if (int(axes.size()) == rank) axes.clear();
  return axes;
}

void reduce(const phi::CustomContext& ctx, const oar::OpId& op, const phi::DenseTensor& x,
            const phi::IntArray& dims, bool keep_dim, phi::DenseTensor* out) {
  if (out->numel() == 0) return;
  std::vector<int64_t> axes = axes_of(dims, x.dims().size());
  View a(x), o(*out);
  run(ctx, op, {&a}, {&o}, {oar::Attr("axes", axes), oar::Attr("keepdim", keep_dim)});
}
}  // namespace

// sum may widen (Paddle sums bool and int32 into int64): the input is cast to
// the output dtype first, so the sum wraps in the output's width.
template <typename T, typename Context>
void SumKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& dims,
               phi::DataType out_dtype, bool keep_dim, phi::DenseTensor* out) {
  // Paddle leaves out_dtype undefined when its infer-meta chose (bool -> int64).
  if (out_dtype == phi::DataType::UNDEFINED) out_dtype = out->dtype();
  if (out_dtype == phi::DataType::UNDEFINED) out_dtype = x.dtype();
  ctx.Alloc(out, out_dtype);
  if (out_dtype == x.dtype()) {
    reduce(ctx, OAR_PADDLE_OP("sum"), x, dims, keep_dim, out);
    return;
  }
  phi::DenseTensor wide;
  wide.Resize(x.dims());
  ctx.Alloc(&wide, out_dtype);
  if (x.numel() != 0) {
    View a(x), w(wide);
    run(ctx, OAR_PADDLE_OP("cast"), {&a}, {&w});
  }
  reduce(ctx, OAR_PADDLE_OP("sum"), wide, dims, keep_dim, out);
}

#define OAR_PADDLE_REDUCE(kernel, op)                                                   \
  template <typename T, typename Context>                                               \
  void kernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& dims, \
              bool keep_dim, phi::DenseTensor* out) {                                   \
    ctx.template Alloc<T>(out);                                                         \
    reduce(ctx, OAR_PADDLE_OP(op), x, dims, keep_dim, out);                             \
  }
OAR_PADDLE_REDUCE(MeanKernel, "mean")
OAR_PADDLE_REDUCE(MaxKernel, "max")
OAR_PADDLE_REDUCE(MinKernel, "min")

template <typename T, typename Context>
void ProdKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& dims,
                bool keep_dim, bool reduce_all, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  reduce(ctx, OAR_PADDLE_OP("prod"), x, reduce_all ? phi::IntArray(std::vector<int64_t>{}) : dims,
         keep_dim, out);
}

// OAR's argmax/argmin write i64; an int32 result is cast from it. |flatten|
// reads x as one row.
void arg_reduce(const phi::CustomContext& ctx, const oar::OpId& op, const phi::DenseTensor& x,
                const phi::Scalar& axis, bool keepdims, bool flatten, phi::DataType dtype,
                phi::DenseTensor* out) {
  ctx.Alloc(out, dtype);
  if (out->numel() == 0) return;
  std::unique_ptr<View> a;
  int64_t ax = axis.to<int64_t>();
  if (flatten) {
    a = std::make_unique<View>(x, std::vector<int64_t>{x.numel()});
    ax = 0;
  } else {
    a = std::make_unique<View>(x);
  }
  std::vector<int64_t> out_shape;
  const auto& od = out->dims();
  for (int i = 0; i < od.size(); ++i) out_shape.push_back(od[i]);
  if (flatten) keepdims = false, out_shape.clear();
  if (dtype == phi::DataType::INT64) {
    View o(*out, out_shape);
    run(ctx, op, {a.get()}, {&o}, {oar::Attr("axis", ax), oar::Attr("keepdim", keepdims)});
    return;
  }
  phi::DenseTensor wide;
  wide.Resize(out->dims());
  ctx.Alloc(&wide, phi::DataType::INT64);
  View w(wide, out_shape), o(*out, out_shape);
  run(ctx, op, {a.get()}, {&w}, {oar::Attr("axis", ax), oar::Attr("keepdim", keepdims)});
  run(ctx, OAR_PADDLE_OP("cast"), {&w}, {&o});
}

template <typename T, typename Context>
void ArgMaxKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& axis,
                  bool keepdims, bool flatten, phi::DataType dtype, phi::DenseTensor* out) {
  arg_reduce(ctx, OAR_PADDLE_OP("argmax"), x, axis, keepdims, flatten, dtype, out);
}

template <typename T, typename Context>
void ArgMinKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& axis,
                  bool keepdims, bool flatten, phi::DataType dtype, phi::DenseTensor* out) {
  arg_reduce(ctx, OAR_PADDLE_OP("argmin"), x, axis, keepdims, flatten, dtype, out);
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(sum, oar, ALL_LAYOUT, oar_paddle::SumKernel, OAR_PADDLE_NUMBERS, bool) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(mean, oar, ALL_LAYOUT, oar_paddle::MeanKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(max, oar, ALL_LAYOUT, oar_paddle::MaxKernel, OAR_PADDLE_NUMBERS) {}
PD_REGISTER_PLUGIN_KERNEL(min, oar, ALL_LAYOUT, oar_paddle::MinKernel, OAR_PADDLE_NUMBERS) {}
PD_REGISTER_PLUGIN_KERNEL(prod, oar, ALL_LAYOUT, oar_paddle::ProdKernel, OAR_PADDLE_NUMBERS) {}
PD_REGISTER_PLUGIN_KERNEL(argmax, oar, ALL_LAYOUT, oar_paddle::ArgMaxKernel, OAR_PADDLE_NUMBERS) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(argmin, oar, ALL_LAYOUT, oar_paddle::ArgMinKernel, OAR_PADDLE_NUMBERS) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
