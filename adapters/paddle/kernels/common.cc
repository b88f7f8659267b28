#include "kernels/common.h"

#include <string>

#include "paddle/common/ddim.h"
#include "paddle/common/enforce.h"

namespace oar_paddle {

DLDataType dl_dtype(phi::DataType dtype) {
  switch (dtype) {
    case phi::DataType::BOOL:
      return oar::dtype::boolean;
    case phi::DataType::UINT8:
      return oar::dtype::u8;
    case phi::DataType::INT8:
      return oar::dtype::i8;
    case phi::DataType::INT32:
      return oar::dtype::i32;
    case phi::DataType::INT64:
      return oar::dtype::i64;
    case phi::DataType::FLOAT16:
      return oar::dtype::f16;
    case phi::DataType::BFLOAT16:
      return oar::dtype::bf16;
    case phi::DataType::FLOAT32:
      return oar::dtype::f32;
    case phi::DataType::FLOAT64:
      return oar::dtype::f64;
    default:
      break;
  }
  PADDLE_THROW(common::errors::Unimplemented("OAR device: Paddle dtype %s has no OAR dtype",
                                             phi::DataTypeToString(dtype)));
}

View::View(const phi::DenseTensor& tensor) {
  const auto& dims = tensor.dims();
  shape_.resize(size_t(dims.size()));
  for (int i = 0; i < dims.size(); ++i) shape_[size_t(i)] = dims[i];
  init(tensor, true);
}

View::View(const phi::DenseTensor& tensor, std::vector<int64_t> shape) : shape_(std::move(shape)) {
  init(tensor, false);
}

void View::init(const phi::DenseTensor& tensor, bool own_strides) {
  dl_.dtype = dl_dtype(tensor.dtype());
  dl_.ndim = int(shape_.size());
  dl_.shape = shape_.data();
  if (own_strides && !tensor.meta().is_contiguous()) {
    const auto& strides = tensor.strides();
    strides_.resize(size_t(strides.size()));
    for (int i = 0; i < strides.size(); ++i) strides_[size_t(i)] = strides[i];
    dl_.strides = strides_.data();
  }
  if (tensor.numel() == 0) return;  // no memory behind it
  // The bytes the view reaches: the contiguous size, or the strided extent.
  uint64_t elem = oar::dtype_size(dl_.dtype);
  uint64_t extent = 1;
  for (size_t i = 0; i < shape_.size(); ++i) {
    int64_t stride = strides_.empty() ? 0 : strides_[i];
    extent += strides_.empty() ? 0 : uint64_t(shape_[i] - 1) * uint64_t(stride);
  }
  uint64_t bytes = strides_.empty() ? uint64_t(tensor.numel()) * elem : extent * elem;
  DeviceAddress address = resolve(tensor.data(), bytes);
  dl_.data = address.memory;
  dl_.byte_offset = address.offset;
}

oar::Stream& stream_of(const phi::CustomContext& ctx) {
  auto* handle = reinterpret_cast<StreamHandle*>(ctx.stream());
  if (handle != nullptr) return handle->stream;
  return Adapter::get()->device(ctx.GetPlace().GetDeviceId()).default_stream();
}

namespace {

void run_views(const phi::CustomContext& ctx, const oar::OpId& op, const View* const* in, size_t ni,
               std::initializer_list<const View*> out, std::initializer_list<oar::Attr> attrs) {
  DLTensor inline_inputs[8];
  std::vector<DLTensor> many;
  DLTensor* inputs = inline_inputs;
  if (ni > 8) {
    many.resize(ni);
    inputs = many.data();
  }
  DLTensor outputs[4];
  oar_attr_t attributes[8];
  size_t no = 0, na = 0;
  if (out.size() > 4 || attrs.size() > 8) {
    PADDLE_THROW(common::errors::InvalidArgument("OAR device: too many tensors or attributes"));
  }
  for (size_t i = 0; i < ni; ++i) inputs[i] = in[i]->dl();
  for (const View* v : out) outputs[no++] = v->dl();
  for (const oar::Attr& a : attrs) attributes[na++] = a.attr;
  // The dispatcher checks that every tensor is on the stream's device.
  const DLDevice device = Adapter::get()->device(ctx.GetPlace().GetDeviceId()).dlpack_device();
  for (size_t i = 0; i < ni; ++i) inputs[i].device = device;
  for (size_t i = 0; i < no; ++i) outputs[i].device = device;
  oar::Stream& stream = stream_of(ctx);
  try {
    oar::dispatch(stream, op, inputs, ni, outputs, no, attributes, na);
  } catch (const oar::Error& e) {
    const oar::Device& device = Adapter::get()->device(ctx.GetPlace().GetDeviceId());
    PADDLE_THROW(common::errors::External("OAR device %s (%s:%d), OAR operator: %s", device.name(),
                                          kDeviceType, ctx.GetPlace().GetDeviceId(), e.what()));
  }
}

}  // namespace

void run(const phi::CustomContext& ctx, const oar::OpId& op, std::initializer_list<const View*> in,
         std::initializer_list<const View*> out, std::initializer_list<oar::Attr> attrs) {
  if (in.size() > 8) {
    PADDLE_THROW(common::errors::InvalidArgument("OAR device: too many tensors or attributes"));
  }
  run_views(ctx, op, in.begin(), in.size(), out, attrs);
}

void run_n(const phi::CustomContext& ctx, const oar::OpId& op, const std::vector<const View*>& in,
           std::initializer_list<const View*> out, std::initializer_list<oar::Attr> attrs) {
  run_views(ctx, op, in.data(), in.size(), out, attrs);
}

void fill(const phi::CustomContext& ctx, phi::DenseTensor* out, double value) {
  if (out->numel() == 0) return;
  View o(*out);
  run(ctx, OAR_PADDLE_OP("fill"), {}, {&o}, {oar::Attr("value", value)});
}

phi::DenseTensor empty(const phi::CustomContext& ctx, const std::vector<int64_t>& dims,
                       phi::DataType dtype) {
  phi::DenseTensor t;
  t.Resize(common::make_ddim(dims));
  ctx.Alloc(&t, dtype);
  return t;
}

phi::DenseTensor scalar(const phi::CustomContext& ctx, phi::DataType dtype, double value) {
  phi::DenseTensor t = empty(ctx, {}, dtype);
  fill(ctx, &t, value);
  return t;
}

std::vector<int64_t> dims_of(const phi::DenseTensor& t) {
  std::vector<int64_t> v(size_t(t.dims().size()));
  for (int i = 0; i < t.dims().size(); ++i) v[size_t(i)] = t.dims()[i];
  return v;
}

void unsupported(const phi::CustomContext& ctx, const char* kernel, const std::string& what) {
  const int id = ctx.GetPlace().GetDeviceId();
  PADDLE_THROW(common::errors::Unimplemented(
      "OAR device %s (%s:%d), Paddle kernel %s: %s has no OAR operator (docs/paddle.md)",
      Adapter::get()->device(id).name(), kDeviceType, id, kernel, what));
}

}  // namespace oar_paddle
