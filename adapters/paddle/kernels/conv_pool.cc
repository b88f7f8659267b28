// Convolution and pooling: Paddle's conv2d and pool2d (max and avg) and their
// gradients onto OAR's conv2d, conv2d_grad_input/weight, max_pool2d,
// avg_pool2d and their _grad operators. OAR takes NCHW with one padding per
// side pair (top = bottom, left = right) and floor-mode windows; Paddle's
// other forms (NHWC, asymmetric padding, ceil mode that changes the size,
// adaptive pooling that is not a plain window) are refused with an error
// naming the device and the kernel (docs/paddle.md).
#include <string>

#include "kernels/common.h"

namespace oar_paddle {

namespace {

bool nchw(const std::string& format) { return format == "NCHW" || format == "AnyLayout"; }

// Paddle's padding list (2 values, or 4: top, bottom, left, right) after its
// padding algorithm, as OAR's (pad_h, pad_w); false if the sides differ.
template <typename I>
bool symmetric_padding(const std::vector<I>& paddings, const std::string& algorithm,
                       const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, std::vector<int64_t>* dilation,
                       std::vector<int64_t>* out) {
  int64_t pad[4] = {0, 0, 0, 0};
  if (algorithm == "SAME") {
    for (size_t d = 0; d < 2; ++d) {
      int64_t o = (in[d] + stride[d] - 1) / stride[d];
      int64_t total = std::max<int64_t>((o - 1) * stride[d] + kernel[d] - in[d], 0);
      pad[2 * d] = total / 2;
      pad[2 * d + 1] = total - total / 2;
    }
    if (dilation != nullptr) *dilation = {1, 1};
  } else if (algorithm != "VALID") {
    if (paddings.size() == 2) {
      pad[0] = pad[1] = int64_t(paddings[0]);
      pad[2] = pad[3] = int64_t(paddings[1]);
    } else if (paddings.size() == 4) {
      for (size_t i = 0; i < 4; ++i) pad[i] = int64_t(paddings[i]);
    } else {
      return false;
    }
  }
  if (pad[0] != pad[1] || pad[2] != pad[3]) return false;
  *out = {pad[0], pad[2]};
  return true;
}

struct ConvArgs {
  std::vector<int64_t> stride, padding, dilation, kernel, input;
  int64_t groups = 1;
};

ConvArgs conv_args(const phi::CustomContext& ctx, const char* kernel, const phi::DenseTensor& x,
                   const phi::DenseTensor& filter, const std::vector<int>& strides,
                   const std::vector<int>& paddings, const std::string& algorithm,
                   const std::vector<int>& dilations, int groups, const std::string& format) {
  if (!nchw(format)) unsupported(ctx, kernel, "data_format " + format);
  if (x.dims().size() != 4) unsupported(ctx, kernel, "an input of rank other than 4");
  ConvArgs a;
  a.stride.assign(strides.begin(), strides.end());
  a.dilation.assign(dilations.begin(), dilations.end());
  if (a.stride.size() == 1) a.stride.push_back(a.stride[0]);
  if (a.dilation.size() == 1) a.dilation.push_back(a.dilation[0]);
  a.input = {x.dims()[2], x.dims()[3]};
  a.kernel = {filter.dims()[2], filter.dims()[3]};
  a.groups = groups;
  if (!symmetric_padding(paddings, algorithm, a.input, a.kernel, a.stride, &a.dilation,
                         &a.padding)) {
    unsupported(ctx, kernel, "asymmetric padding");
  }
  return a;
}

}  // namespace

template <typename T, typename Context>
void ConvKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& filter,
                const std::vector<int>& strides, const std::vector<int>& paddings,
                const std::string& padding_algorithm, const std::vector<int>& dilations, int groups,
                const std::string& data_format, phi::DenseTensor* out) {
  ConvArgs a = conv_args(ctx, "conv2d", input, filter, strides, paddings, padding_algorithm,
                         dilations, groups, data_format);
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View x(input), w(filter), o(*out);
  run(ctx, OAR_PADDLE_OP("conv2d"), {&x, &w}, {&o},
      {oar::Attr("stride", a.stride), oar::Attr("padding", a.padding),
       oar::Attr("dilation", a.dilation), oar::Attr("groups", a.groups)});
}

template <typename T, typename Context>
void ConvGradKernel(const Context& ctx, const phi::DenseTensor& input,
                    const phi::DenseTensor& filter, const phi::DenseTensor& out_grad,
                    const std::vector<int>& strides, const std::vector<int>& paddings,
                    const std::string& padding_algorithm, const std::vector<int>& dilations,
                    int groups, const std::string& data_format, phi::DenseTensor* input_grad,
                    phi::DenseTensor* filter_grad) {
  ConvArgs a = conv_args(ctx, "conv2d_grad", input, filter, strides, paddings, padding_algorithm,
                         dilations, groups, data_format);
  View dy(out_grad);
  if (input_grad != nullptr) {
    ctx.template Alloc<T>(input_grad);
    if (input_grad->numel() != 0) {
      View w(filter), dx(*input_grad);
      run(ctx, OAR_PADDLE_OP("conv2d_grad_input"), {&dy, &w}, {&dx},
          {oar::Attr("input_size", a.input), oar::Attr("stride", a.stride),
           oar::Attr("padding", a.padding), oar::Attr("dilation", a.dilation),
           oar::Attr("groups", a.groups)});
    }
  }
  if (filter_grad != nullptr) {
    ctx.template Alloc<T>(filter_grad);
    if (filter_grad->numel() != 0) {
      View x(input), dw(*filter_grad);
      run(ctx, OAR_PADDLE_OP("conv2d_grad_weight"), {&dy, &x}, {&dw},
          {oar::Attr("kernel_size", a.kernel), oar::Attr("stride", a.stride),
           oar::Attr("padding", a.padding), oar::Attr("dilation", a.dilation),
           oar::Attr("groups", a.groups)});
    }
  }
}

namespace {

struct PoolArgs {
  bool max = true;
  bool count_include_pad = true;
  std::vector<int64_t> kernel, stride, padding;
};

PoolArgs pool_args(const phi::CustomContext& ctx, const char* name, const phi::DenseTensor& x,
                   const phi::IntArray& kernel_size, const std::vector<int64_t>& strides,
                   const std::vector<int64_t>& paddings, bool ceil_mode, bool exclusive,
                   const std::string& format, const std::string& type, bool global_pooling,
                   bool adaptive, const std::string& algorithm) {
  if (!nchw(format)) unsupported(ctx, name, "data_format " + format);
  if (x.dims().size() != 4) unsupported(ctx, name, "an input of rank other than 4");
  if (type != "max" && type != "avg") unsupported(ctx, name, "pooling_type " + type);
  PoolArgs a;
  a.max = type == "max";
  a.count_include_pad = !exclusive;
  std::vector<int64_t> in = {x.dims()[2], x.dims()[3]};
  a.kernel.assign(kernel_size.GetData().begin(), kernel_size.GetData().end());
  a.stride = strides;
  if (a.kernel.size() == 1) a.kernel.push_back(a.kernel[0]);
  if (a.stride.size() == 1) a.stride.push_back(a.stride[0]);
  if (global_pooling) {
    a.kernel = in;
    a.stride = {1, 1};
    a.padding = {0, 0};
    return a;
  }
  if (adaptive) {
    // An adaptive pool whose output size divides the input is a plain pool.
    std::vector<int64_t> out = a.kernel;
    for (size_t d = 0; d < 2; ++d) {
      if (out[d] <= 0 || in[d] % out[d] != 0) {
        unsupported(ctx, name, "adaptive pooling to a size that does not divide the input");
      }
      a.kernel[d] = a.stride[d] = in[d] / out[d];
    }
    a.padding = {0, 0};
    return a;
  }
  if (!symmetric_padding(paddings, algorithm, in, a.kernel, a.stride, nullptr, &a.padding)) {
    unsupported(ctx, name, "asymmetric padding");
  }
  if (ceil_mode) {
    for (size_t d = 0; d < 2; ++d) {
      int64_t span = in[d] + 2 * a.padding[d] - a.kernel[d];
      if (span % a.stride[d] != 0) unsupported(ctx, name, "ceil_mode where it adds a window");
    }
  }
  return a;
}

}  // namespace

template <typename T, typename Context>
void Pool2dKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& kernel_size,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& paddings,
                  bool ceil_mode, bool exclusive, const std::string& data_format,
                  const std::string& pooling_type, bool global_pooling, bool adaptive,
                  const std::string& padding_algorithm, phi::DenseTensor* out) {
  PoolArgs a = pool_args(ctx, "pool2d", x, kernel_size, strides, paddings, ceil_mode, exclusive,
                         data_format, pooling_type, global_pooling, adaptive, padding_algorithm);
  ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  View vx(x), o(*out);
  if (a.max) {
    run(ctx, OAR_PADDLE_OP("max_pool2d"), {&vx}, {&o},
        {oar::Attr("kernel_size", a.kernel), oar::Attr("stride", a.stride),
         oar::Attr("padding", a.padding)});
  } else {
    run(ctx, OAR_PADDLE_OP("avg_pool2d"), {&vx}, {&o},
        {oar::Attr("kernel_size", a.kernel), oar::Attr("stride", a.stride),
         oar::Attr("padding", a.padding), oar::Attr("count_include_pad", a.count_include_pad)});
  }
}

template <typename T, typename Context>
void Pool2dGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor&,
                      const phi::DenseTensor& dout, const phi::IntArray& kernel_size,
                      const std::vector<int64_t>& strides, const std::vector<int64_t>& paddings,
                      bool ceil_mode, bool exclusive, const std::string& data_format,
                      const std::string& pooling_type, bool global_pooling, bool adaptive,
                      const std::string& padding_algorithm, phi::DenseTensor* dx) {
  PoolArgs a =
      pool_args(ctx, "pool2d_grad", x, kernel_size, strides, paddings, ceil_mode, exclusive,
                data_format, pooling_type, global_pooling, adaptive, padding_algorithm);
  ctx.template Alloc<T>(dx);
  if (dx->numel() == 0) return;
  View dy(dout), vx(x), o(*dx);
  if (a.max) {
    run(ctx, OAR_PADDLE_OP("max_pool2d_grad"), {&dy, &vx}, {&o},
        {oar::Attr("kernel_size", a.kernel), oar::Attr("stride", a.stride),
         oar::Attr("padding", a.padding)});
  } else {
    run(ctx, OAR_PADDLE_OP("avg_pool2d_grad"), {&dy, &vx}, {&o},
        {oar::Attr("kernel_size", a.kernel), oar::Attr("stride", a.stride),
         oar::Attr("padding", a.padding), oar::Attr("count_include_pad", a.count_include_pad)});
  }
}

}  // namespace oar_paddle

PD_REGISTER_PLUGIN_KERNEL(conv2d, oar, ALL_LAYOUT, oar_paddle::ConvKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(conv2d_grad, oar, ALL_LAYOUT, oar_paddle::ConvGradKernel,
                          OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(pool2d, oar, ALL_LAYOUT, oar_paddle::Pool2dKernel, OAR_PADDLE_FLOATS) {}
PD_REGISTER_PLUGIN_KERNEL(pool2d_grad, oar, ALL_LAYOUT, oar_paddle::Pool2dGradKernel,
                          OAR_PADDLE_FLOATS) {}
