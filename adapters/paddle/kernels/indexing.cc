// Joining, slicing and indexing kernels and their gradients:
//   concat -> concat; concat_grad -> slice per input;
//   slice -> slice per sliced axis; slice_grad -> pad with zeros;
//   gather, index_select -> index_select (a 0-D gather index drops the axis);
//   gather_grad, index_select_grad -> scatter_add of dout into zeros, the
//   1-D index broadcast to dout's shape along the axis (add of a zero
//   tensor and the index viewed as [1, .., m, .., 1]);
//   tril, triu, tril_triu and their gradients -> tril / triu (the gradient
//   keeps the same triangle of dout); a causal scaled_dot_product_attention
//   builds its mask with triu.
#include <algorithm>

#include "kernels/common.h"

namespace oar_paddle {

namespace {

int64_t normalize_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// Python's clamping of a slice bound of a dimension of size |n|.
int64_t clamp_bound(int64_t v, int64_t n) {
  if (v < 0) v += n;
  return std::min(std::max<int64_t>(v, 0), n);
}

// The sliced shape of |x|, and per sliced axis its (start, end); |axes|
// normalized.
struct SliceSpec {
  std::vector<int64_t> axes, starts, ends;
  std::vector<int64_t> kept;  // the result with every axis kept
};

SliceSpec slice_spec(const phi::DenseTensor& x, const std::vector<int64_t>& axes,
                     const phi::IntArray& starts, const phi::IntArray& ends) {
  SliceSpec s;
  s.kept = dims_of(x);
  const auto& st = starts.GetData();
  const auto& en = ends.GetData();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], s.kept.size());
    const int64_t n = dims_of(x)[size_t(axis)];
    const int64_t b = clamp_bound(i < st.size() ? st[i] : 0, n);
    const int64_t e = std::max(b, clamp_bound(i < en.size() ? en[i] : n, n));
    s.axes.push_back(axis);
    s.starts.push_back(b);
    s.ends.push_back(e);
    s.kept[size_t(axis)] = e - b;
  }
  return s;
}

}  // namespace

template <typename T, typename Context>
void ConcatKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& x,
                  const phi::Scalar& axis_s, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const int64_t axis = normalize_axis(axis_s.to<int64_t>(), size_t(out->dims().size()));
  std::vector<std::unique_ptr<View>> views;
  std::vector<const View*> in;
  for (const phi::DenseTensor* t : x) {
    if (t->numel() == 0) continue;  // contributes nothing
    views.push_back(std::make_unique<View>(*t));
    in.push_back(views.back().get());
  }
  View o(*out);
  run_n(ctx, OAR_PADDLE_OP("concat"), in, {&o}, {oar::Attr("axis", axis)});
}

template <typename T, typename Context>
void ConcatGradKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& x,
                      const phi::DenseTensor& out_grad, const phi::Scalar& axis_s,
                      std::vector<phi::DenseTensor*> x_grad) {
  const int64_t axis = normalize_axis(axis_s.to<int64_t>(), size_t(out_grad.dims().size()));
  int64_t offset = 0;
  View d(out_grad);
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t size = x[i]->dims()[int(axis)];
    phi::DenseTensor* g = i < x_grad.size() ? x_grad[i] : nullptr;
    if (g != nullptr) {
      ctx.template Alloc<T>(g);
      if (g->numel() > 0) {
        View o(*g);
        run(ctx, OAR_PADDLE_OP("slice"), {&d}, {&o},
            {oar::Attr("axis", axis), oar::Attr("start", offset), oar::Attr("end", offset + size)});
      }
    }
    offset += size;
  }
}

template <typename T, typename Context>
void SliceKernel(const Context& ctx, const phi::DenseTensor& input,
                 const std::vector<int64_t>& axes, const phi::IntArray& starts,
                 const phi::IntArray& ends, const std::vector<int64_t>&,
                 const std::vector<int64_t>&, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  SliceSpec s = slice_spec(input, axes, starts, ends);
  View o(*out, s.kept);  // decrease_axis only drops axes of size 1
  if (s.axes.empty()) {
    View a(input);
    run(ctx, OAR_PADDLE_OP("copy"), {&a}, {&o});
    return;
  }
  // One OAR slice per axis; the last writes |out|.
  phi::DenseTensor current;
  std::vector<int64_t> shape = dims_of(input);
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const bool last = i + 1 == s.axes.size();
    shape[size_t(s.axes[i])] = s.ends[i] - s.starts[i];
    phi::DenseTensor next;
    if (!last) next = empty(ctx, shape, input.dtype());
    View a(i == 0 ? input : current);
    std::unique_ptr<View> tmp;
    if (!last) tmp = std::make_unique<View>(next);
    run(ctx, OAR_PADDLE_OP("slice"), {&a}, {last ? &o : tmp.get()},
        {oar::Attr("axis", s.axes[i]), oar::Attr("start", s.starts[i]),
         oar::Attr("end", s.ends[i])});
    if (!last) current = next;
  }
}

template <typename T, typename Context>
void SliceGradKernel(const Context& ctx, const phi::DenseTensor& input,
                     const phi::DenseTensor& out_grad, const std::vector<int64_t>& axes,
                     const phi::IntArray& starts, const phi::IntArray& ends,
                     const std::vector<int64_t>&, const std::vector<int64_t>&,
                     phi::DenseTensor* input_grad) {
  ctx.template Alloc<T>(input_grad);
  if (input_grad->numel() == 0) return;
  SliceSpec s = slice_spec(input, axes, starts, ends);
  if (out_grad.numel() == 0) {
    fill(ctx, input_grad, 0.0);
    return;
  }
  const std::vector<int64_t> full = dims_of(input);
  std::vector<int64_t> pads(2 * full.size(), 0);
  for (size_t i = 0; i < s.axes.size(); ++i) {
    pads[size_t(s.axes[i])] = s.starts[i];
    pads[size_t(s.axes[i]) + full.size()] = full[size_t(s.axes[i])] - s.ends[i];
  }
  View d(out_grad, s.kept), o(*input_grad);
  run(ctx, OAR_PADDLE_OP("pad"), {&d}, {&o}, {oar::Attr("pads", pads)});
}

namespace {

// y = x indexed along |axis| by the 1-D (or 0-D) |index|.
void index_select(const phi::CustomContext& ctx, const phi::DenseTensor& x,
                  const phi::DenseTensor& index, int64_t axis, phi::DenseTensor* out) {
  ctx.Alloc(out, x.dtype());
  if (out->numel() == 0) return;
  std::vector<int64_t> kept = dims_of(x);
  axis = normalize_axis(axis, kept.size());
  kept[size_t(axis)] = index.numel();
  View a(x), i(index, {index.numel()}), o(*out, kept);
  run(ctx, OAR_PADDLE_OP("index_select"), {&a, &i}, {&o}, {oar::Attr("axis", axis)});
}

// dx = zeros with dout added at the rows |index| names along |axis|.
void index_select_grad(const phi::CustomContext& ctx, const phi::DenseTensor& x,
                       const phi::DenseTensor& index, const phi::DenseTensor& out_grad,
                       int64_t axis, phi::DenseTensor* x_grad) {
  ctx.Alloc(x_grad, x.dtype());
  if (x_grad->numel() == 0) return;
  fill(ctx, x_grad, 0.0);
  if (out_grad.numel() == 0) return;
  std::vector<int64_t> xs = dims_of(x);
  axis = normalize_axis(axis, xs.size());
  std::vector<int64_t> ds = xs, line(xs.size(), 1);
  ds[size_t(axis)] = index.numel();
  line[size_t(axis)] = index.numel();
  // The index at every position of dout: 0 + index broadcast along |axis|.
  phi::DenseTensor spread = empty(ctx, ds, index.dtype());
  fill(ctx, &spread, 0.0);
  View sp(spread), il(index, line);
  run(ctx, OAR_PADDLE_OP("add"), {&sp, &il}, {&sp});
  View z(*x_grad), d(out_grad, ds);
  run(ctx, OAR_PADDLE_OP("scatter_add"), {&z, &sp, &d}, {&z}, {oar::Attr("axis", axis)});
}

}  // namespace

template <typename T, typename Context>
void GatherKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                  const phi::Scalar& axis, phi::DenseTensor* out) {
  if (index.dims().size() > 1) unsupported(ctx, "gather", "an index of rank > 1");
  index_select(ctx, x, index, axis.to<int64_t>(), out);
}

template <typename T, typename Context>
void GatherGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                      const phi::DenseTensor& out_grad, const phi::Scalar& axis,
                      phi::DenseTensor* x_grad) {
  if (index.dims().size() > 1) unsupported(ctx, "gather_grad", "an index of rank > 1");
  index_select_grad(ctx, x, index, out_grad, axis.to<int64_t>(), x_grad);
}

template <typename T, typename Context>
void IndexSelectKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                       int dim, phi::DenseTensor* out) {
  index_select(ctx, x, index, dim, out);
}

template <typename T, typename Context>
void IndexSelectGradKernel(const Context& ctx, const phi::DenseTensor& x,
                           const phi::DenseTensor& index, const phi::DenseTensor& out_grad, int dim,
                           phi::DenseTensor* x_grad) {
  index_select_grad(ctx, x, index, out_grad, dim, x_grad);
}

namespace {

void triangle(const phi::CustomContext& ctx, const phi::DenseTensor& x, int diagonal, bool lower,
              phi::DenseTensor* out) {
  ctx.Alloc(out, x.dtype());
  if (out->numel() == 0) return;
  View a(x), o(*out);
  run(ctx, lower ? OAR_PADDLE_OP("tril") : OAR_PADDLE_OP("triu"), {&a}, {&o},
      {oar::Attr("diagonal", int64_t(diagonal))});
}

}  // namespace

template <typename T, typename Context>
void TrilTriuKernel(const Context& ctx, const phi::DenseTensor& x, int diagonal, bool lower,
                    phi::DenseTensor* out) {
  triangle(ctx, x, diagonal, lower, out);
}

template <typename T, typename Context>
void TrilKernel(const Context& ctx, const phi::DenseTensor& x, int diagonal,
                phi::DenseTensor* out) {
  triangle(ctx, x, diagonal, true, out);
}

template <typename T, typename Context>
void TriuKernel(const Context& ctx, const phi::DenseTensor& x, int diagonal,
                phi::DenseTensor* out) {
  triangle(ctx, x, diagonal, false, out);
}

// The gradients keep the same triangle of dout (separate functions: one
// template instantiated twice would be registered twice).
template <typename T, typename Context>
void TrilTriuGradKernel(const Context& ctx, const phi::DenseTensor& out_grad, int diagonal,
                        bool lower, phi::DenseTensor* x_grad) {
  triangle(ctx, out_grad, diagonal, lower, x_grad);
}

template <typename T, typename Context>
void TrilGradKernel(const Context& ctx, const phi::DenseTensor& out_grad, int diagonal,
                    phi::DenseTensor* x_grad) {
  triangle(ctx, out_grad, diagonal, true, x_grad);
}

template <typename T, typename Context>
void TriuGradKernel(const Context& ctx, const phi::DenseTensor& out_grad, int diagonal,
                    phi::DenseTensor* x_grad) {
  triangle(ctx, out_grad, diagonal, false, x_grad);
}

}  // namespace oar_paddle

OAR_PADDLE_REGISTER(concat, ConcatKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(concat_grad, ConcatGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(slice, SliceKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(slice_grad, SliceGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(gather, GatherKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(index_select, IndexSelectKernel, OAR_PADDLE_ALL)
// scatter_add takes numbers, not bool.
OAR_PADDLE_REGISTER(gather_grad, GatherGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(index_select_grad, IndexSelectGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(tril_triu, TrilTriuKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril, TrilKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(triu, TriuKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril_triu_grad, TrilTriuGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril_grad, TrilGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(triu_grad, TriuGradKernel, OAR_PADDLE_ALL)
