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

// Paddle's gather takes a 0-D, 1-D or [m, 1] index (its shape check refuses
// any other); the [m, 1] form is the 1-D index of m entries.
bool gather_index_ok(const phi::DenseTensor& index) {
  return index.dims().size() <= 1 || (index.dims().size() == 2 && index.dims()[1] == 1);
}

}  // namespace

template <typename T, typename Context>
void GatherKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                  const phi::Scalar& axis, phi::DenseTensor* out) {
  if (!gather_index_ok(index)) unsupported(ctx, "gather", "an index other than [m] or [m, 1]");
  index_select(ctx, x, index, axis.to<int64_t>(), out);
}

template <typename T, typename Context>
void GatherGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                      const phi::DenseTensor& out_grad, const phi::Scalar& axis,
                      phi::DenseTensor* x_grad) {
  if (!gather_index_ok(index)) {
    unsupported(ctx, "gather_grad", "an index other than [m] or [m, 1]");
  }
  index_select_grad(ctx, x, index, out_grad, axis.to<int64_t>(), x_grad);
}

namespace {

// gather_nd: x [d0, .., d(r-1)], index [.., k]; out[b] = x[index[b, 0], ..,
// index[b, k-1], ...]. x is viewed as [P, R] (P = d0 .. d(k-1), R the rest)
// and the k coordinates of each of the M index rows become one row number
// of it, lin = (..(i0 d1 + i1) d2 + ..) + i(k-1), so that gather_nd is
// index_select(x as [P, R], lin, axis 0) and its gradient one scatter_add.
// A negative coordinate counts from the end (Paddle's rule); a coordinate out
// of [-d, d) makes its row P, out of range, so that OAR's index_select (or
// scatter_add) fails the stream with OUT_OF_RANGE instead of reading
// another row.
struct NdSpec {
  int64_t k = 0, m = 1, p = 1, r = 1;
};

NdSpec nd_spec(const phi::CustomContext& ctx, const char* kernel, const phi::DenseTensor& x,
               const phi::DenseTensor& index) {
  NdSpec s;
  const std::vector<int64_t> xs = dims_of(x), is = dims_of(index);
  if (is.empty() || is.back() < 1 || is.back() > int64_t(xs.size())) {
    unsupported(ctx, kernel, "an index whose last dimension is 0 or larger than x's rank");
  }
  s.k = is.back();
  for (size_t i = 0; i + 1 < is.size(); ++i) s.m *= is[i];
  for (size_t i = 0; i < xs.size(); ++i) (int64_t(i) < s.k ? s.p : s.r) *= xs[i];
  return s;
}

phi::DenseTensor nd_rows(const phi::CustomContext& ctx, const phi::DenseTensor& x,
                         const phi::DenseTensor& index, const NdSpec& s) {
  const phi::DataType it = index.dtype();
  const std::vector<int64_t> xs = dims_of(x);
  phi::DenseTensor lin = empty(ctx, {s.m, 1}, it), col = empty(ctx, {s.m, 1}, it),
                   alt = empty(ctx, {s.m, 1}, it);
  phi::DenseTensor neg = empty(ctx, {s.m, 1}, phi::DataType::BOOL),
                   bad = empty(ctx, {s.m, 1}, phi::DataType::BOOL),
                   any = empty(ctx, {s.m, 1}, phi::DataType::BOOL);
  fill(ctx, &lin, 0.0);
  fill(ctx, &any, 0.0);
  phi::DenseTensor zero = scalar(ctx, it, 0.0);
  View ix(index, {s.m, s.k}), l(lin), c(col), a(alt), n(neg), b(bad), y(any), z(zero);
  for (int64_t j = 0; j < s.k; ++j) {
    phi::DenseTensor d = scalar(ctx, it, double(xs[size_t(j)]));
    View dv(d);
    run(ctx, OAR_PADDLE_OP("slice"), {&ix}, {&c},
        {oar::Attr("axis", int64_t(1)), oar::Attr("start", j), oar::Attr("end", j + 1)});
    // col < 0: col + d; then out of range where col < 0 or col >= d.
    run(ctx, OAR_PADDLE_OP("lt"), {&c, &z}, {&n});
    run(ctx, OAR_PADDLE_OP("add"), {&c, &dv}, {&a});
    run(ctx, OAR_PADDLE_OP("where"), {&n, &a, &c}, {&c});
    run(ctx, OAR_PADDLE_OP("lt"), {&c, &z}, {&n});
    run(ctx, OAR_PADDLE_OP("ge"), {&c, &dv}, {&b});
    run(ctx, OAR_PADDLE_OP("logical_or"), {&n, &b}, {&b});
    run(ctx, OAR_PADDLE_OP("logical_or"), {&y, &b}, {&y});
    run(ctx, OAR_PADDLE_OP("mul"), {&l, &dv}, {&l});
    run(ctx, OAR_PADDLE_OP("add"), {&l, &c}, {&l});
  }
  phi::DenseTensor past = scalar(ctx, it, double(s.p));
  View pv(past);
  run(ctx, OAR_PADDLE_OP("where"), {&y, &pv, &l}, {&l});
  return lin;
}

}  // namespace

template <typename T, typename Context>
void GatherNdKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                    phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const NdSpec s = nd_spec(ctx, "gather_nd", x, index);
  phi::DenseTensor lin = nd_rows(ctx, x, index, s);
  View a(x, {s.p, s.r}), i(lin, {s.m}), o(*out, {s.m, s.r});
  run(ctx, OAR_PADDLE_OP("index_select"), {&a, &i}, {&o}, {oar::Attr("axis", int64_t(0))});
}

template <typename T, typename Context>
void GatherNdGradKernel(const Context& ctx, const phi::DenseTensor& x,
                        const phi::DenseTensor& index, const phi::DenseTensor& out_grad,
                        phi::DenseTensor* x_grad) {
  ctx.template Alloc<T>(x_grad);
  if (x_grad->numel() == 0) return;
  fill(ctx, x_grad, 0.0);
  if (out_grad.numel() == 0) return;
  const NdSpec s = nd_spec(ctx, "gather_nd_grad", x, index);
  phi::DenseTensor lin = nd_rows(ctx, x, index, s);
  // The row number at every position of dout as [M, R]: zeros + lin [M, 1].
  phi::DenseTensor spread = empty(ctx, {s.m, s.r}, index.dtype());
  fill(ctx, &spread, 0.0);
  View sp(spread), l(lin, {s.m, 1});
  run(ctx, OAR_PADDLE_OP("add"), {&sp, &l}, {&sp});
  View z(*x_grad, {s.p, s.r}), d(out_grad, {s.m, s.r});
  run(ctx, OAR_PADDLE_OP("scatter_add"), {&z, &sp, &d}, {&z}, {oar::Attr("axis", int64_t(0))});
}

namespace {

// strided_slice, per sliced axis, with Paddle's bounds: a negative start or
// end counts from the end and is clamped at 0 (so with a negative stride no
// end reaches past the first element: Paddle 3.3.1's CPU gives x[3:-1:-3]
// empty, as Python would).
// A positive stride is OAR's slice(start, end, step); a negative stride -k
// takes first, first - k, .., i.e. OAR's slice of the same elements in
// ascending order (start = lowest, step k), then flip along the axis.
struct StridedAxis {
  int64_t axis, lowest, count, step;
  bool reversed;
};

std::vector<StridedAxis> strided_spec(const phi::CustomContext& ctx, const char* kernel,
                                      const phi::DenseTensor& x, const std::vector<int>& axes,
                                      const phi::IntArray& starts, const phi::IntArray& ends,
                                      const phi::IntArray& strides) {
  const std::vector<int64_t> xs = dims_of(x);
  const auto &st = starts.GetData(), &en = ends.GetData(), &sd = strides.GetData();
  if (st.size() != axes.size() || en.size() != axes.size() || sd.size() != axes.size()) {
    unsupported(ctx, kernel, "starts, ends and strides of other lengths than axes");
  }
  std::vector<StridedAxis> spec;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalize_axis(axes[i], xs.size());
    const int64_t n = xs[size_t(axis)], step = sd[i];
    if (step == 0) unsupported(ctx, kernel, "a stride of 0");
    int64_t s = st[i], e = en[i];
    if (s < 0) s = std::max<int64_t>(s + n, 0);
    if (e < 0) e = std::max<int64_t>(e + n, 0);
    StridedAxis a{axis, 0, 0, step > 0 ? step : -step, step < 0};
    if (step > 0) {
      s = std::min(s, n);
      e = std::min(e, n);
      a.lowest = s;
      a.count = e > s ? (e - s + a.step - 1) / a.step : 0;
    } else {
      // The elements s, s - k, .. down to above e: [e + 1, s + 1) clamped.
      const int64_t left = std::max<int64_t>(0, e + 1), right = std::min(n, s + 1);
      a.count = right > left ? (right - left + a.step - 1) / a.step : 0;
      a.lowest = right - 1 - (a.count > 0 ? a.count - 1 : 0) * a.step;
    }
    spec.push_back(a);
  }
  return spec;
}

std::vector<int64_t> strided_shape(const phi::DenseTensor& x, const std::vector<StridedAxis>& s) {
  std::vector<int64_t> shape = dims_of(x);
  for (const StridedAxis& a : s) shape[size_t(a.axis)] = a.count;
  return shape;
}

}  // namespace

template <typename T, typename Context>
void StridedSliceKernel(const Context& ctx, const phi::DenseTensor& x, const std::vector<int>& axes,
                        const phi::IntArray& starts, const phi::IntArray& ends,
                        const phi::IntArray& strides, phi::DenseTensor* out) {
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const std::vector<StridedAxis> spec =
      strided_spec(ctx, "strided_slice", x, axes, starts, ends, strides);
  const std::vector<int64_t> kept = strided_shape(x, spec);
  int64_t numel = 1;
  for (int64_t d : kept) numel *= d;
  if (numel != out->numel()) unsupported(ctx, "strided_slice", "these bounds (shape mismatch)");
  // One slice (and a flip for a negative stride) per axis, each into a new
  // tensor; the last writes |out|.
  std::vector<std::pair<StridedAxis, bool>> plan;  // (axis, flip)
  for (const StridedAxis& a : spec) {
    plan.push_back({a, false});
    if (a.reversed) plan.push_back({a, true});
  }
  View o(*out, kept);
  if (plan.empty()) {
    View i(x);
    run(ctx, OAR_PADDLE_OP("copy"), {&i}, {&o});
    return;
  }
  phi::DenseTensor current = x;
  std::vector<int64_t> shape = dims_of(x);
  for (size_t k = 0; k < plan.size(); ++k) {
    const StridedAxis& a = plan[k].first;
    const bool last = k + 1 == plan.size();
    shape[size_t(a.axis)] = a.count;
    View i(current);
    phi::DenseTensor t;
    std::unique_ptr<View> tv;
    if (!last) {
      t = empty(ctx, shape, x.dtype());
      tv = std::make_unique<View>(t);
    }
    const View* dst = last ? &o : tv.get();
    if (plan[k].second) {
      run(ctx, OAR_PADDLE_OP("flip"), {&i}, {dst},
          {oar::Attr("axes", std::vector<int64_t>{a.axis})});
    } else {
      run(ctx, OAR_PADDLE_OP("slice"), {&i}, {dst},
          {oar::Attr("axis", a.axis), oar::Attr("start", a.lowest),
           oar::Attr("end", a.lowest + (a.count - 1) * a.step + 1), oar::Attr("step", a.step)});
    }
    if (!last) current = t;
  }
}

template <typename T, typename Context>
void StridedSliceGradKernel(const Context& ctx, const phi::DenseTensor& x,
                            const phi::DenseTensor& out_grad, const std::vector<int>& axes,
                            const phi::IntArray& starts, const phi::IntArray& ends,
                            const phi::IntArray& strides, phi::DenseTensor* x_grad) {
  ctx.template Alloc<T>(x_grad);
  if (x_grad->numel() == 0) return;
  const std::vector<StridedAxis> spec =
      strided_spec(ctx, "strided_slice_grad", x, axes, starts, ends, strides);
  std::vector<int64_t> shape = strided_shape(x, spec);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel == 0 || out_grad.numel() == 0) {
    fill(ctx, x_grad, 0.0);
    return;
  }
  if (numel != out_grad.numel()) {
    unsupported(ctx, "strided_slice_grad", "these bounds (shape mismatch)");
  }
  // Undo the axes last to first: dout grows along one axis at a time to x's
  // size, zeros with dout's slices scattered at the positions they came from
  // (position of element i: lowest + i * step, or first - i * step reversed).
  const std::vector<int64_t> full = dims_of(x);
  phi::DenseTensor current = out_grad;
  for (size_t k = spec.size(); k-- > 0;) {
    const StridedAxis& a = spec[k];
    std::vector<int64_t> grown = shape, line(shape.size(), 1);
    grown[size_t(a.axis)] = full[size_t(a.axis)];
    line[size_t(a.axis)] = a.count;
    phi::DenseTensor pos = empty(ctx, {a.count}, phi::DataType::INT64);
    {
      View pv(pos);
      const double first = double(a.lowest + (a.count - 1) * a.step);
      const double lowest = double(a.lowest), step = double(a.step);
      run(ctx, OAR_PADDLE_OP("arange"), {}, {&pv},
          {oar::Attr("start", a.reversed ? first : lowest),
           oar::Attr("end", a.reversed ? lowest - 1 : first + 1),
           oar::Attr("step", a.reversed ? -step : step)});
    }
    phi::DenseTensor spread = empty(ctx, shape, phi::DataType::INT64);
    fill(ctx, &spread, 0.0);
    View sp(spread), pl(pos, line);
    run(ctx, OAR_PADDLE_OP("add"), {&sp, &pl}, {&sp});
    const bool last = k == 0;
    phi::DenseTensor target;
    if (!last) {
      target = empty(ctx, grown, x.dtype());
    }
    phi::DenseTensor* dst = last ? x_grad : &target;
    fill(ctx, dst, 0.0);
    View z(*dst, grown), src(current, shape);
    run(ctx, OAR_PADDLE_OP("scatter"), {&z, &sp, &src}, {&z}, {oar::Attr("axis", a.axis)});
    current = target;
    shape = grown;
  }
}

// strided_slice_raw (and its grad): the legacy program op's form, which
// Paddle reaches for old (non-PIR) programs and _legacy_C_ops: the same
// slice, with |decrease_axis| dropping sliced axes of size 1 from out's
// dims (Paddle's InferMeta made them; the elements and their order are the
// same, so the kernels above write them) and |infer_flags| only telling the
// static shape inference which bounds were known.
template <typename T, typename Context>
void StridedSliceRawKernel(const Context& ctx, const phi::DenseTensor& x,
                           const std::vector<int>& axes, const phi::IntArray& starts,
                           const phi::IntArray& ends, const phi::IntArray& strides,
                           const std::vector<int>&, const std::vector<int>&,
                           phi::DenseTensor* out) {
  StridedSliceKernel<T, Context>(ctx, x, axes, starts, ends, strides, out);
}

template <typename T, typename Context>
void StridedSliceRawGradKernel(const Context& ctx, const phi::DenseTensor& x,
                               const phi::DenseTensor& out_grad, const std::vector<int>& axes,
                               const phi::IntArray& starts, const phi::IntArray& ends,
                               const phi::IntArray& strides, const std::vector<int>&,
                               const std::vector<int>&, phi::DenseTensor* x_grad) {
  StridedSliceGradKernel<T, Context>(ctx, x, out_grad, axes, starts, ends, strides, x_grad);
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
OAR_PADDLE_REGISTER(gather_nd, GatherNdKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(gather_nd_grad, GatherNdGradKernel, OAR_PADDLE_NUMBERS)
OAR_PADDLE_REGISTER(strided_slice, StridedSliceKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(strided_slice_grad, StridedSliceGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(strided_slice_raw, StridedSliceRawKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(strided_slice_raw_grad, StridedSliceRawGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril_triu, TrilTriuKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril, TrilKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(triu, TriuKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril_triu_grad, TrilTriuGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(tril_grad, TrilGradKernel, OAR_PADDLE_ALL)
OAR_PADDLE_REGISTER(triu_grad, TriuGradKernel, OAR_PADDLE_ALL)
