// The Adam family (Paddle's adam_ and adamw_, which paddle.optimizer.Adam and
// AdamW call once per parameter and step) on OAR's fused `adam` operator.
//
// The two forms disagree on where the step's scalars live:
// - OAR's `adam` takes `lr` and `step` as host attributes (docs/ops.md,
//   "Optimizer steps"); it computes the bias corrections 1 - beta^step itself.
// - Paddle keeps the learning rate in a device tensor (rank 0, written by
//   `full` or a scheduler's upload) and the bias-correction state as
//   beta1_pow = beta1^t and beta2_pow = beta2^t in one-element tensors that
//   its optimizers create on the CPU (`device='cpu'`).
//
// What the adapter does, with no device-to-host read in the usual case:
// - The beta powers are declared ALL_BACKEND, so Paddle hands the host tensors
//   as they are; t is recovered on the host as round(log(beta_pow) /
//   log(beta)), from the smaller beta (its powers drift least in float32),
//   checked against the other, and the host outputs beta_pow * beta are
//   written on the host, as Paddle's GPU kernel does.
// - The learning rate stays on the device: `adam` runs with lr = 1 on a zeroed
//   scratch "parameter", which makes its param_out exactly -m_hat /
//   (sqrt(v_hat) + eps) (0 - x is exact) while it updates both moments in
//   place; then param_out = param + lr * update with `mul` and `add`, the lr
//   read on the device. AdamW's decoupled decay is applied the same way:
//   param_out = param * (1 - lr * coeff) + lr * update, the factor computed
//   by rank-0 `mul`/`add` on the device. Cost: 3 (Adam) or 6 (AdamW) extra
//   small dispatches per parameter instead of one synchronizing read.
// - Where Paddle passes the learning rate on the host (a CPU tensor), the one
//   fused call takes it as its attribute and does everything.
// - Only a beta power or skip_update (AMP's found_inf) that lives on the
//   device is read back, with a synchronizing copy (it drains the stream);
//   Paddle's own optimizers never put the beta powers there.
// - float16/bfloat16 parameters: the step runs in float32 on a float32
//   "compute parameter" with float32 moments (Paddle keeps the moments of a
//   16-bit parameter in float32 whether or not it keeps a master weight):
//   with multi_precision it is the master weight (master_param ->
//   master_param_out, updated in place), otherwise a float32 cast of the
//   parameter; the gradient is cast to float32, and the parameter is written
//   as the float32 result cast once to its dtype (Paddle's GPU kernel:
//   param_out = T(master_out)). OAR's own 16-bit form (f32 moments beside a
//   16-bit parameter, the parameter rounded each step) is not used: it would
//   lose the master weight's low bits.
// - amsgrad (OAR's `adam` has none, docs/ops.md): a composition. `adam` on
//   the zeroed scratch updates both moments as above (its update is not
//   used); then v_max_out = maximum(v_out, v_max) and
//   update = -m_out / (1 - beta1^t) / (sqrt(v_max_out / (1 - beta2^t)) + eps)
//   with `maximum`, `mul`, `sqrt`, `add`, `div` (the bias corrections host
//   scalars from t, as OAR's `adam` computes them), the lr applied on the
//   device as above (a host lr uploaded as a rank-0 fill). That is Paddle's
//   formula: its p -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m /
//   (sqrt(v_max) + eps * sqrt(1 - beta2^t)) is the same update. Cost: 7
//   extra small dispatches per parameter and step, plus the lr's.
// Refused, with Paddle's error naming the device and the kernel:
// multi_precision without a master weight, amsgrad without moment2_max, and
// beta powers that are not powers of beta (state edited by hand).
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/common.h"

namespace oar_paddle {

namespace {

bool on_host(const phi::DenseTensor& t) { return t.place().GetType() == phi::AllocationType::CPU; }

// The value of a one-element float or bool tensor: read in place on the host,
// or copied from the device (synchronizing the kernel's stream).
double host_value(const phi::CustomContext& ctx, const phi::DenseTensor& t) {
  unsigned char bytes[8] = {};
  const size_t size = phi::SizeOf(t.dtype());
  if (t.numel() != 1 || size > sizeof bytes) {
    unsupported(ctx, "adam", "a learning rate, beta power or skip flag with more than one element");
  }
  if (on_host(t)) {
    std::memcpy(bytes, t.data(), size);
  } else {
    DeviceAddress a = resolve(t.data(), size);
    const uint64_t offset = reinterpret_cast<uintptr_t>(t.data()) - a.range->base;
    oar::Stream& stream = stream_of(ctx);
    stream.copy_to_host(bytes, *a.range->buffer, offset, size);
    stream.synchronize();
  }
  switch (t.dtype()) {
    case phi::DataType::FLOAT32: {
      float v;
      std::memcpy(&v, bytes, sizeof v);
      return v;
    }
    case phi::DataType::FLOAT64: {
      double v;
      std::memcpy(&v, bytes, sizeof v);
      return v;
    }
    case phi::DataType::BOOL:
      return bytes[0] != 0 ? 1.0 : 0.0;
    default:
      unsupported(ctx, "adam",
                  std::string("a scalar of dtype ") + phi::DataTypeToString(t.dtype()));
  }
}

// beta_pow * beta into |out|, on the side |pow| lives.
void advance_pow(const phi::CustomContext& ctx, const phi::DenseTensor& pow, double value,
                 double beta, phi::DenseTensor* out) {
  if (on_host(pow)) {
    if (pow.dtype() == phi::DataType::FLOAT64) {
      ctx.HostAlloc<double>(out)[0] = value * beta;
    } else {
      ctx.HostAlloc<float>(out)[0] = float(double(float(value)) * double(float(beta)));
    }
    return;
  }
  ctx.Alloc(out, pow.dtype());
  phi::DenseTensor b = scalar(ctx, pow.dtype(), beta);
  View p(pow, {}), s(b), o(*out, {});
  run(ctx, OAR_PADDLE_OP("mul"), {&p, &s}, {&o});
}

// The 1-based step t with beta_pow = beta^t, from the smaller beta in (0, 1)
// and checked against the other. Paddle multiplies the powers in float32, so
// after t steps they may be off by up to t * 2^-24 relative, i.e. by
// t * 6e-8 / |log beta| in the exponent (0.999's powers drift most).
int64_t step_of(const phi::CustomContext& ctx, const char* kernel, double beta1, double pow1,
                double beta2, double pow2) {
  struct Pair {
    double beta, pow;
  };
  Pair pairs[2] = {{beta1, pow1}, {beta2, pow2}};
  if (beta2 < beta1) std::swap(pairs[0], pairs[1]);
  int64_t step = 0;
  for (const Pair& p : pairs) {
    if (!(p.beta > 0 && p.beta < 1)) continue;  // beta = 0: no correction to recover
    const double exact = p.pow > 0 ? std::log(p.pow) / std::log(p.beta) : -1;
    const double t = step == 0 ? std::round(exact) : double(step);
    const double slack = 0.25 + std::max(t, 1.0) * 6e-8 / std::fabs(std::log(p.beta));
    if (t < 1 || std::fabs(exact - t) > slack) {
      unsupported(ctx, kernel,
                  "beta powers that are not beta1^t and beta2^t of one step t >= 1 (beta " +
                      std::to_string(p.beta) + ", power " + std::to_string(p.pow) + ")");
    }
    step = int64_t(t);
  }
  return step == 0 ? 1 : step;  // both betas 0: no bias correction at all
}

bool is_16bit(phi::DataType t) {
  return t == phi::DataType::FLOAT16 || t == phi::DataType::BFLOAT16;
}

// |t| in |dtype|: itself, or a device cast of it into a new tensor.
phi::DenseTensor in_dtype(const phi::CustomContext& ctx, const phi::DenseTensor& t,
                          phi::DataType dtype) {
  if (t.dtype() == dtype) return t;
  phi::DenseTensor c = empty(ctx, dims_of(t), dtype);
  if (t.numel() != 0) {
    View a(t), o(c);
    run(ctx, OAR_PADDLE_OP("cast"), {&a}, {&o});
  }
  return c;
}

void adam_common(const phi::CustomContext& ctx, const char* kernel, const phi::DenseTensor& param,
                 const phi::DenseTensor& grad, const phi::DenseTensor& learning_rate,
                 const phi::DenseTensor& moment1, const phi::DenseTensor& moment2,
                 const paddle::optional<phi::DenseTensor>& moment2_max,
                 const phi::DenseTensor& beta1_pow, const phi::DenseTensor& beta2_pow,
                 const paddle::optional<phi::DenseTensor>& master_param,
                 const paddle::optional<phi::DenseTensor>& skip_update, const phi::Scalar& beta1_s,
                 const phi::Scalar& beta2_s, const phi::Scalar& epsilon_s, double lr_ratio,
                 double decay, bool multi_precision, bool use_global_beta_pow, bool amsgrad,
                 phi::DenseTensor* param_out, phi::DenseTensor* moment1_out,
                 phi::DenseTensor* moment2_out, phi::DenseTensor* moment2_max_out,
                 phi::DenseTensor* beta1_pow_out, phi::DenseTensor* beta2_pow_out,
                 phi::DenseTensor* master_param_out) {
  if (amsgrad && (!moment2_max || moment2_max_out == nullptr)) {
    unsupported(ctx, kernel, "amsgrad without moment2_max");
  }
  const bool has_master = bool(master_param);
  if (multi_precision && is_16bit(param.dtype()) && !has_master) {
    unsupported(ctx, kernel, "multi_precision without a master weight");
  }
  if (has_master && master_param_out == nullptr) {
    unsupported(ctx, kernel, "a master weight without its output");
  }
  // The dtype the step is computed in, and the parameter it updates there.
  const phi::DataType cd = has_master                ? master_param->dtype()
                           : is_16bit(param.dtype()) ? phi::DataType::FLOAT32
                                                     : param.dtype();
  if (moment1.dtype() != cd || moment2.dtype() != cd || (amsgrad && moment2_max->dtype() != cd)) {
    unsupported(ctx, kernel,
                std::string("moments of dtype ") + phi::DataTypeToString(moment1.dtype()) +
                    " for a step computed in " + phi::DataTypeToString(cd));
  }
  const double beta1 = beta1_s.to<double>(), beta2 = beta2_s.to<double>();
  const double eps = epsilon_s.to<double>();
  const double pow1 = host_value(ctx, beta1_pow), pow2 = host_value(ctx, beta2_pow);

  ctx.Alloc(param_out, param.dtype());
  ctx.Alloc(moment1_out, moment1.dtype());
  ctx.Alloc(moment2_out, moment2.dtype());
  if (has_master) ctx.Alloc(master_param_out, cd);
  if (amsgrad) ctx.Alloc(moment2_max_out, cd);
  if (skip_update && host_value(ctx, *skip_update) != 0) {
    // AMP found an infinite gradient: everything stays as it was.
    std::vector<std::pair<const phi::DenseTensor*, phi::DenseTensor*>> keep = {
        {&param, param_out}, {&moment1, moment1_out}, {&moment2, moment2_out}};
    if (has_master) keep.push_back({&*master_param, master_param_out});
    if (amsgrad) keep.push_back({&*moment2_max, moment2_max_out});
    for (auto [in, out] : keep) {
      if (in->numel() == 0 || in->data() == out->data()) continue;
      View a(*in), o(*out);
      run(ctx, OAR_PADDLE_OP("copy"), {&a}, {&o});
    }
    if (!use_global_beta_pow) {
      advance_pow(ctx, beta1_pow, pow1, 1.0, beta1_pow_out);
      advance_pow(ctx, beta2_pow, pow2, 1.0, beta2_pow_out);
    }
    return;
  }
  const int64_t step = step_of(ctx, kernel, beta1, pow1, beta2, pow2);
  if (param.numel() > 0) {
    // The compute parameter: the master weight, a float32 copy, or param.
    const phi::DenseTensor param_c = has_master ? *master_param : in_dtype(ctx, param, cd);
    const phi::DenseTensor grad_c = in_dtype(ctx, grad, cd);
    phi::DenseTensor scratch_out;
    phi::DenseTensor* out_c = param_out;
    if (has_master) {
      out_c = master_param_out;
    } else if (cd != param.dtype()) {
      scratch_out = empty(ctx, dims_of(param), cd);
      out_c = &scratch_out;
    }
    View g(grad_c), m(moment1), v(moment2), mo(*moment1_out), vo(*moment2_out);
    if (on_host(learning_rate) && !amsgrad) {
      // The whole step in one fused call.
      const double lr = host_value(ctx, learning_rate) * lr_ratio;
      View p(param_c), po(*out_c);
      run(ctx, decay != 0 ? OAR_PADDLE_OP("adamw") : OAR_PADDLE_OP("adam"), {&p, &g, &m, &v},
          {&po, &mo, &vo},
          {oar::Attr("lr", lr), oar::Attr("step", step), oar::Attr("beta1", beta1),
           oar::Attr("beta2", beta2), oar::Attr("eps", eps), oar::Attr("weight_decay", decay)});
    } else {
      // update = -m_hat / (sqrt(v_hat) + eps): adam on a zero parameter, lr 1.
      phi::DenseTensor update = empty(ctx, dims_of(param), cd);
      fill(ctx, &update, 0.0);
      View u(update);
      run(ctx, OAR_PADDLE_OP("adam"), {&u, &g, &m, &v}, {&u, &mo, &vo},
          {oar::Attr("lr", 1.0), oar::Attr("step", step), oar::Attr("beta1", beta1),
           oar::Attr("beta2", beta2), oar::Attr("eps", eps), oar::Attr("weight_decay", 0.0)});
      if (amsgrad) {
        // update = m_out * (-1 / (1 - beta1^t)) / (sqrt(v_max_out * (1 / (1 - beta2^t))) + eps)
        View vm(*moment2_max), vmo(*moment2_max_out);
        run(ctx, OAR_PADDLE_OP("maximum"), {&vo, &vm}, {&vmo});
        phi::DenseTensor c1 = scalar(ctx, cd, -1.0 / (1.0 - std::pow(beta1, double(step))));
        phi::DenseTensor c2 = scalar(ctx, cd, 1.0 / (1.0 - std::pow(beta2, double(step))));
        phi::DenseTensor e = scalar(ctx, cd, eps), den = empty(ctx, dims_of(param), cd);
        View c1v(c1), c2v(c2), ev(e), dv(den);
        run(ctx, OAR_PADDLE_OP("mul"), {&vmo, &c2v}, {&dv});
        run(ctx, OAR_PADDLE_OP("sqrt"), {&dv}, {&dv});
        run(ctx, OAR_PADDLE_OP("add"), {&dv, &ev}, {&dv});
        run(ctx, OAR_PADDLE_OP("mul"), {&mo, &c1v}, {&u});
        run(ctx, OAR_PADDLE_OP("div"), {&u, &dv}, {&u});
      }
      // lr (rank 0, the compute dtype) on the device.
      phi::DenseTensor lr_t = empty(ctx, {}, cd);
      View lr(lr_t);
      double ratio = lr_ratio;
      if (on_host(learning_rate)) {  // amsgrad with a host lr
        fill(ctx, &lr_t, host_value(ctx, learning_rate) * lr_ratio);
        ratio = 1.0;
      } else {
        View src(learning_rate, {});
        run(ctx, learning_rate.dtype() == cd ? OAR_PADDLE_OP("copy") : OAR_PADDLE_OP("cast"),
            {&src}, {&lr});
      }
      if (ratio != 1.0) {
        phi::DenseTensor r = scalar(ctx, cd, ratio);
        View rv(r);
        run(ctx, OAR_PADDLE_OP("mul"), {&lr, &rv}, {&lr});
      }
      View p(param_c), po(*out_c);
      run(ctx, OAR_PADDLE_OP("mul"), {&u, &lr}, {&u});
      if (decay != 0) {
        // param_out = param * (1 - lr * decay) + lr * update
        phi::DenseTensor k = scalar(ctx, cd, -decay), one = scalar(ctx, cd, 1);
        View kv(k), ov(one);
        run(ctx, OAR_PADDLE_OP("mul"), {&kv, &lr}, {&kv});
        run(ctx, OAR_PADDLE_OP("add"), {&kv, &ov}, {&kv});
        run(ctx, OAR_PADDLE_OP("mul"), {&p, &kv}, {&po});
        run(ctx, OAR_PADDLE_OP("add"), {&po, &u}, {&po});
      } else {
        run(ctx, OAR_PADDLE_OP("add"), {&p, &u}, {&po});
      }
    }
    if (out_c != param_out) {
      // The 16-bit parameter from the float32 result, rounded once.
      View a(*out_c), o(*param_out);
      run(ctx, OAR_PADDLE_OP("cast"), {&a}, {&o});
    }
  }
  if (!use_global_beta_pow) {
    advance_pow(ctx, beta1_pow, pow1, beta1, beta1_pow_out);
    advance_pow(ctx, beta2_pow, pow2, beta2, beta2_pow_out);
  }
}

}  // namespace

template <typename T, typename Context>
void AdamKernel(const Context& ctx, const phi::DenseTensor& param, const phi::DenseTensor& grad,
                const phi::DenseTensor& learning_rate, const phi::DenseTensor& moment1,
                const phi::DenseTensor& moment2,
                const paddle::optional<phi::DenseTensor>& moment2_max,
                const phi::DenseTensor& beta1_pow, const phi::DenseTensor& beta2_pow,
                const paddle::optional<phi::DenseTensor>& master_param,
                const paddle::optional<phi::DenseTensor>& skip_update, const phi::Scalar& beta1,
                const phi::Scalar& beta2, const phi::Scalar& epsilon, bool, int64_t,
                bool multi_precision, bool use_global_beta_pow, bool amsgrad,
                phi::DenseTensor* param_out, phi::DenseTensor* moment1_out,
                phi::DenseTensor* moment2_out, phi::DenseTensor* moment2_max_out,
                phi::DenseTensor* beta1_pow_out, phi::DenseTensor* beta2_pow_out,
                phi::DenseTensor* master_param_out) {
  adam_common(ctx, "adam", param, grad, learning_rate, moment1, moment2, moment2_max, beta1_pow,
              beta2_pow, master_param, skip_update, beta1, beta2, epsilon, 1.0, 0.0,
              multi_precision, use_global_beta_pow, amsgrad, param_out, moment1_out, moment2_out,
              moment2_max_out, beta1_pow_out, beta2_pow_out, master_param_out);
}

template <typename T, typename Context>
void AdamwKernel(const Context& ctx, const phi::DenseTensor& param, const phi::DenseTensor& grad,
                 const phi::DenseTensor& learning_rate, const phi::DenseTensor& moment1,
                 const phi::DenseTensor& moment2,
                 const paddle::optional<phi::DenseTensor>& moment2_max,
                 const phi::DenseTensor& beta1_pow, const phi::DenseTensor& beta2_pow,
                 const paddle::optional<phi::DenseTensor>& master_param,
                 const paddle::optional<phi::DenseTensor>& skip_update, const phi::Scalar& beta1,
                 const phi::Scalar& beta2, const phi::Scalar& epsilon, float lr_ratio, float coeff,
                 bool with_decay, bool, int64_t, bool multi_precision, bool use_global_beta_pow,
                 bool amsgrad, phi::DenseTensor* param_out, phi::DenseTensor* moment1_out,
                 phi::DenseTensor* moment2_out, phi::DenseTensor* moment2_max_out,
                 phi::DenseTensor* beta1_pow_out, phi::DenseTensor* beta2_pow_out,
                 phi::DenseTensor* master_param_out) {
  adam_common(ctx, "adamw", param, grad, learning_rate, moment1, moment2, moment2_max, beta1_pow,
              beta2_pow, master_param, skip_update, beta1, beta2, epsilon, double(lr_ratio),
              with_decay ? double(coeff) : 0.0, multi_precision, use_global_beta_pow, amsgrad,
              param_out, moment1_out, moment2_out, moment2_max_out, beta1_pow_out, beta2_pow_out,
              master_param_out);
}

}  // namespace oar_paddle

// Inputs 2 (learning_rate), 6 and 7 (the beta powers) and 9 (skip_update)
// are taken where they are (the beta powers live on the CPU); outputs 4 and 5
// (the new beta powers) go where the inputs were. For a 16-bit parameter the
// moments (inputs 3, 4; outputs 1, 2), amsgrad's moment2_max (input 5,
// output 3) and the master weight (input 8, output 6) are float32.
#define OAR_PADDLE_ADAM_PLACES                                 \
  kernel->InputAt(2).SetBackend(phi::Backend::ALL_BACKEND);    \
  kernel->InputAt(6).SetBackend(phi::Backend::ALL_BACKEND);    \
  kernel->InputAt(7).SetBackend(phi::Backend::ALL_BACKEND);    \
  kernel->InputAt(9).SetBackend(phi::Backend::ALL_BACKEND);    \
  kernel->OutputAt(4).SetBackend(phi::Backend::UNDEFINED);     \
  kernel->OutputAt(5).SetBackend(phi::Backend::UNDEFINED);     \
  if (kernel_key.dtype() == phi::DataType::FLOAT16 ||          \
      kernel_key.dtype() == phi::DataType::BFLOAT16) {         \
    for (int i : {3, 4, 5, 8}) {                               \
      kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);  \
    }                                                          \
    for (int i : {1, 2, 3, 4, 5, 6}) {                         \
      kernel->OutputAt(i).SetDataType(phi::DataType::FLOAT32); \
    }                                                          \
  }

PD_REGISTER_PLUGIN_KERNEL(adam, oar, ALL_LAYOUT, oar_paddle::AdamKernel, OAR_PADDLE_FLOATS){
    OAR_PADDLE_ADAM_PLACES} PD_REGISTER_PLUGIN_KERNEL(adamw, oar, ALL_LAYOUT,
                                                      oar_paddle::AdamwKernel, OAR_PADDLE_FLOATS) {
  OAR_PADDLE_ADAM_PLACES
}
