// The model suite: small end-to-end models (an MLP, a conv net, a transformer
// block), each written once over a backend and run twice, on the device under
// test and on the reference, from the same deterministic weights. The final
// outputs must agree within the "model" tolerance family.
#include <cmath>
#include <functional>
#include <string>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_runner.h"

namespace oar::conformance {
namespace {

using Shape = std::vector<int64_t>;

// Makes deterministic parameters and inputs: each named tensor has its own seed.
class Parameters {
 public:
  Parameters(std::string id, DLDataType dtype) : id_(std::move(id)), dtype_(dtype) {}
  HostTensor make(const std::string& name, Shape shape, Domain domain,
                  DLDataType dtype = {}) const {
    InputSpec s;
    s.shape = std::move(shape);
    s.dtype = dtype.bits != 0 ? dtype : dtype_;
    s.domain = domain;
    return make_input(s, seed_of(id_ + "#" + name));
  }
  DLDataType dtype() const { return dtype_; }
  // A weight of fan-in |fan_in|, scaled so that activations stay O(1).
  HostTensor weight(const std::string& name, Shape shape, int64_t fan_in) const {
    double bound = 1.0 / std::sqrt(double(fan_in));
    return make(name, std::move(shape), uniform(-bound, bound));
  }

 private:
  std::string id_;
  DLDataType dtype_;
};

// Runs operators on the device under test.
class DeviceBackend {
 public:
  using Value = Tensor;
  explicit DeviceBackend(Stream& stream) : stream_(stream) {}
  Value input(const HostTensor& host) { return upload(stream_, host); }
  Value op(const char* name, std::vector<const Value*> inputs, std::vector<AttrValue> attrs = {},
           DLDataType out_dtype = {}) {
    std::vector<Tensor> out = run_device(stream_, schema(name), inputs, attrs, out_dtype);
    return std::move(out[0]);
  }
  // Runs |name| with output i bound to the tensor of input |updated[i]|: the
  // in-place update of the optimizer steps and the gradient clip.
  void in_place(const char* name, std::vector<Value*> inputs, std::vector<size_t> updated,
                std::vector<AttrValue> attrs) {
    std::vector<const Tensor*> in(inputs.begin(), inputs.end());
    std::vector<Tensor> out;
    for (size_t i : updated) out.push_back(*inputs[i]);
    dispatch_op(stream_, schema(name), in, out, attrs);
  }
  // Contiguous tensors reshape as views of the same buffer.
  Value reshape(const Value& x, Shape shape) {
    return Tensor::view(x.buffer(), std::move(shape), x.dtype(), {},
                        x.dl().byte_offset - x.buffer()->offset());
  }
  HostTensor result(const Value& x) { return download(stream_, x); }

  static const ops::OpSchema& schema(const char* name) { return *ops::find_schema(name); }

 private:
  Stream& stream_;
};

// Runs the same operators on the reference.
class ReferenceBackend {
 public:
  using Value = HostTensor;
  explicit ReferenceBackend(std::string what) : what_(std::move(what)) {}
  Value input(const HostTensor& host) { return host; }
  Value op(const char* name, std::vector<const Value*> inputs, std::vector<AttrValue> attrs = {},
           DLDataType out_dtype = {}) {
    std::vector<HostTensor> in;
    for (const Value* v : inputs) in.push_back(*v);
    return run_host(what_ + " " + name, DeviceBackend::schema(name), in, attrs, out_dtype)[0];
  }
  void in_place(const char* name, std::vector<Value*> inputs, std::vector<size_t> updated,
                std::vector<AttrValue> attrs) {
    std::vector<HostTensor> in;
    for (const Value* v : inputs) in.push_back(*v);
    std::vector<HostTensor> out =
        run_host(what_ + " " + name, DeviceBackend::schema(name), in, attrs);
    for (size_t i = 0; i < updated.size(); ++i) *inputs[updated[i]] = std::move(out[i]);
  }
  Value reshape(const Value& x, Shape shape) {
    HostTensor y = x;
    y.shape = std::move(shape);
    return y;
  }
  HostTensor result(const Value& x) { return x; }

 private:
  std::string what_;
};

// What a model returns: named outputs to compare.
using Outputs = std::vector<std::pair<std::string, HostTensor>>;

// x [16, 64] -> matmul+bias -> activation -> matmul+bias -> softmax probabilities
// and the mean cross-entropy loss against fixed targets.
template <typename B>
Outputs mlp(B& b, const Parameters& p, const char* activation) {
  auto x = b.input(p.make("x", {16, 64}, uniform(-2, 2)));
  auto w1 = b.input(p.weight("w1", {64, 128}, 64));
  auto b1 = b.input(p.weight("b1", {128}, 64));
  auto w2 = b.input(p.weight("w2", {128, 10}, 128));
  auto b2 = b.input(p.weight("b2", {10}, 128));
  auto target = b.input(p.make("target", {16}, integers(0, 9), dtype::i64));
  auto h = b.op("matmul", {&x, &w1});
  h = b.op("add", {&h, &b1});
  h = b.op(activation, {&h});
  auto logits = b.op("matmul", {&h, &w2});
  logits = b.op("add", {&logits, &b2});
  auto probabilities = b.op("softmax", {&logits}, {attr("axis", int64_t(-1))});
  auto loss = b.op("cross_entropy", {&logits, &target}, {attr("reduction", "mean")});
  return {{"probabilities", b.result(probabilities)}, {"loss", b.result(loss)}};
}

// x [2, 3, 16, 16] -> conv3x3+bias -> batch_norm -> relu -> max_pool 2 ->
// conv3x3 stride 2 -> relu -> avg_pool 4 -> flatten -> matmul+bias: logits [2, 10].
template <typename B>
Outputs conv_net(B& b, const Parameters& p) {
  auto x = b.input(p.make("x", {2, 3, 16, 16}, uniform(-2, 2)));
  auto w1 = b.input(p.weight("w1", {8, 3, 3, 3}, 27));
  auto b1 = b.input(p.weight("b1", {8}, 27));
  auto mean = b.input(p.make("bn_mean", {8}, uniform(-0.2, 0.2)));
  auto var = b.input(p.make("bn_var", {8}, uniform(0.5, 1.5)));
  auto gamma = b.input(p.make("bn_weight", {8}, uniform(0.8, 1.2)));
  auto beta = b.input(p.make("bn_bias", {8}, uniform(-0.2, 0.2)));
  auto w2 = b.input(p.weight("w2", {16, 8, 3, 3}, 72));
  auto w3 = b.input(p.weight("w3", {16, 10}, 16));
  auto b3 = b.input(p.weight("b3", {10}, 16));
  auto h = b.op("conv2d", {&x, &w1, &b1}, {attr("padding", Shape{1, 1})});
  h = b.op("batch_norm", {&h, &mean, &var, &gamma, &beta});
  h = b.op("relu", {&h});
  h = b.op("max_pool2d", {&h}, {attr("kernel_size", Shape{2, 2})});
  h = b.op("conv2d", {&h, &w2},
           {attr("stride", Shape{2, 2}), attr("padding", Shape{1, 1})});  // [2, 16, 4, 4]
  h = b.op("relu", {&h});
  h = b.op("avg_pool2d", {&h}, {attr("kernel_size", Shape{4, 4})});  // [2, 16, 1, 1]
  auto flat = b.reshape(h, {2, 16});
  auto logits = b.op("matmul", {&flat, &w3});
  logits = b.op("add", {&logits, &b3});
  return {{"logits", b.result(logits)}};
}

// One pre-norm decoder block, batch 2, sequence 16, width 32, 4 heads of 8:
// rms_norm -> q/k/v projections -> rotary on q, k -> causal attention ->
// output projection + residual -> layer_norm -> SwiGLU MLP + residual.
template <typename B>
Outputs transformer_block(B& b, const Parameters& p) {
  const int64_t batch = 2, seq = 16, width = 32, heads = 4, head_dim = 8, hidden = 64;
  auto x = b.input(p.make("x", {batch, seq, width}, uniform(-1, 1)));
  auto norm1 = b.input(p.make("norm1", {width}, uniform(0.8, 1.2)));
  auto wq = b.input(p.weight("wq", {width, width}, width));
  auto wk = b.input(p.weight("wk", {width, width}, width));
  auto wv = b.input(p.weight("wv", {width, width}, width));
  auto wo = b.input(p.weight("wo", {width, width}, width));
  HostTensor cos_table = HostTensor::zeros({seq, head_dim / 2}, p.dtype());
  HostTensor sin_table = cos_table;
  for (int64_t s = 0; s < seq; ++s) {
    for (int64_t i = 0; i < head_dim / 2; ++i) {
      double angle = double(s) * std::pow(10000.0, -2.0 * double(i) / double(head_dim));
      cos_table.set(s * head_dim / 2 + i, std::cos(angle));
      sin_table.set(s * head_dim / 2 + i, std::sin(angle));
    }
  }
  auto cos = b.input(cos_table);
  auto sin = b.input(sin_table);
  auto norm2_w = b.input(p.make("norm2_weight", {width}, uniform(0.8, 1.2)));
  auto norm2_b = b.input(p.make("norm2_bias", {width}, uniform(-0.1, 0.1)));
  auto w_gate = b.input(p.weight("w_gate", {width, hidden}, width));
  auto w_up = b.input(p.weight("w_up", {width, hidden}, width));
  auto w_down = b.input(p.weight("w_down", {hidden, width}, hidden));

  auto heads_first = [&](const typename B::Value& t) {  // [B, S, W] -> [B, H, S, D]
    auto split = b.reshape(t, {batch, seq, heads, head_dim});
    return b.op("transpose", {&split}, {attr("perm", Shape{0, 2, 1, 3})});
  };
  auto h = b.op("rms_norm", {&x, &norm1});
  auto q = b.op("matmul", {&h, &wq});
  auto k = b.op("matmul", {&h, &wk});
  auto v = b.op("matmul", {&h, &wv});
  auto qh = heads_first(q);
  auto kh = heads_first(k);
  auto vh = heads_first(v);
  qh = b.op("rotary_embedding", {&qh, &cos, &sin});
  kh = b.op("rotary_embedding", {&kh, &cos, &sin});
  auto attention = b.op("scaled_dot_product_attention", {&qh, &kh, &vh}, {attr("causal", true)});
  auto merged = b.op("transpose", {&attention}, {attr("perm", Shape{0, 2, 1, 3})});
  auto flat = b.reshape(merged, {batch, seq, width});
  auto projected = b.op("matmul", {&flat, &wo});
  auto x1 = b.op("add", {&x, &projected});
  auto h2 = b.op("layer_norm", {&x1, &norm2_w, &norm2_b});
  auto gate = b.op("matmul", {&h2, &w_gate});
  gate = b.op("silu", {&gate});
  auto up = b.op("matmul", {&h2, &w_up});
  auto mixed = b.op("mul", {&gate, &up});
  auto down = b.op("matmul", {&mixed, &w_down});
  auto out = b.op("add", {&x1, &down});
  return {{"hidden_states", b.result(out)}};
}

// --- training loops ---------------------------------------------------------------
//
// A few steps of forward, backward and optimizer step, on the device and on
// the reference: the parameters (and the loss of every step) must track the
// reference within the "model" tolerance. The backward passes are written
// with operator set v1 (matmul with transposes, where/gt for relu, softmax
// minus the one-hot targets for cross_entropy, the layer_norm and softmax
// gradients from reductions); gradient operators replace these
// compositions as they join the set. Each step clips the gradients to a
// global norm (grad_norm, then clip_grad_norm in place) and updates every
// parameter in place.

constexpr int64_t kTrainingSteps = 5;

HostTensor scalar_of(double value, DLDataType dtype) {
  HostTensor t = HostTensor::zeros({}, dtype);
  t.set(0, value);
  return t;
}

// The optimizer's state of a parameter: zeros of the state dtype.
HostTensor zero_state(const HostTensor& param) {
  return HostTensor::zeros(param.shape, param.dtype == dtype::f64 ? dtype::f64 : dtype::f32);
}

// Clips |grads| to a global 2-norm of |max_norm|, then one step of |op|
// ("sgd": one state tensor, "adamw": two) for every parameter, in place.
template <typename B>
void clip_and_step(B& b, std::vector<typename B::Value>& params,
                   std::vector<typename B::Value>& grads,
                   std::vector<std::vector<typename B::Value>>& states, const char* op,
                   int64_t step, double max_norm) {
  std::vector<const typename B::Value*> all;
  for (const auto& g : grads) all.push_back(&g);
  auto total = b.op("grad_norm", all);
  for (auto& g : grads)
    b.in_place("clip_grad_norm", {&g, &total}, {0}, {attr("max_norm", max_norm)});
  const bool sgd = std::string(op) == "sgd";
  std::vector<AttrValue> attrs = {attr("step", step)};
  if (sgd) {
    attrs.push_back(attr("lr", 0.1));
    attrs.push_back(attr("momentum", 0.9));
    attrs.push_back(attr("weight_decay", 1e-3));
  } else {
    attrs.push_back(attr("lr", 1e-2));
    attrs.push_back(attr("eps", 1e-5));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<typename B::Value*> tensors = {&params[i], &grads[i]};
    std::vector<size_t> updated = {0};
    for (size_t k = 0; k < states.size(); ++k) {
      tensors.push_back(&states[k][i]);
      updated.push_back(tensors.size() - 1);
    }
    b.in_place(op, tensors, updated, attrs);
  }
}

// An MLP classifier, x [16, 32] -> matmul+bias -> relu -> matmul+bias ->
// cross_entropy, trained with SGD (momentum 0.9, weight decay); the clip acts
// on every step (norms 1.0 to 1.2 against 0.5).
template <typename B>
Outputs train_mlp(B& b, const Parameters& p) {
  using V = typename B::Value;
  const int64_t N = 16, D = 32, H = 64, C = 10;
  const DLDataType dt = p.dtype();
  V x = b.input(p.make("x", {N, D}, uniform(-2, 2)));
  const HostTensor target_host = p.make("target", {N}, integers(0, C - 1), dtype::i64);
  V target = b.input(target_host);
  // The one-hot targets are data (made on the host, like the targets).
  HostTensor one_hot_host = HostTensor::zeros({N, C}, dt);
  for (int64_t n = 0; n < N; ++n) one_hot_host.set(n * C + target_host.get_int(n), 1);
  V one_hot = b.input(one_hot_host);
  V inv_n = b.input(scalar_of(1.0 / double(N), dt));
  V zero = b.input(scalar_of(0, dt));
  const std::vector<HostTensor> init = {p.weight("w1", {D, H}, D), p.weight("b1", {H}, D),
                                        p.weight("w2", {H, C}, H), p.weight("b2", {C}, H)};
  std::vector<V> params;
  std::vector<std::vector<V>> states(1);
  for (const HostTensor& t : init) {
    params.push_back(b.input(t));
    states[0].push_back(b.input(zero_state(t)));
  }
  V& w1 = params[0];
  V& b1 = params[1];
  V& w2 = params[2];
  V& b2 = params[3];
  const AttrValue rows = attr("axes", Shape{0});
  Outputs out;
  for (int64_t step = 1; step <= kTrainingSteps; ++step) {
    V pre = b.op("matmul", {&x, &w1});
    pre = b.op("add", {&pre, &b1});
    V h = b.op("relu", {&pre});
    V logits = b.op("matmul", {&h, &w2});
    logits = b.op("add", {&logits, &b2});
    V loss = b.op("cross_entropy", {&logits, &target}, {attr("reduction", "mean")});
    out.push_back({"loss_step_" + std::to_string(step), b.result(loss)});
    // d loss / d logits = (softmax(logits) - one_hot(target)) / N
    V probabilities = b.op("softmax", {&logits}, {attr("axis", int64_t(-1))});
    V dlogits = b.op("sub", {&probabilities, &one_hot});
    dlogits = b.op("mul", {&dlogits, &inv_n});
    std::vector<V> grads(4);
    grads[2] = b.op("matmul", {&h, &dlogits}, {attr("transpose_a", true)});
    grads[3] = b.op("sum", {&dlogits}, {rows});
    V dh = b.op("matmul", {&dlogits, &w2}, {attr("transpose_b", true)});
    V active = b.op("gt", {&pre, &zero});
    V dpre = b.op("where", {&active, &dh, &zero});
    grads[0] = b.op("matmul", {&x, &dpre}, {attr("transpose_a", true)});
    grads[1] = b.op("sum", {&dpre}, {rows});
    clip_and_step(b, params, grads, states, "sgd", step, 0.5);
  }
  const char* names[] = {"w1", "b1", "w2", "b2"};
  for (size_t i = 0; i < params.size(); ++i) out.push_back({names[i], b.result(params[i])});
  return out;
}

// One attention block, x [2, 8, 16] -> layer_norm -> single-head causal
// attention (matmul, additive mask, softmax, matmul) -> output projection +
// residual, with a mean-square loss against a target, trained with AdamW
// (the clip acts on the first steps only: norms 0.29, 0.23, 0.20, 0.18, 0.16 on
// the reference in f32).
template <typename B>
Outputs train_block(B& b, const Parameters& p) {
  using V = typename B::Value;
  const int64_t batch = 2, seq = 8, W = 16;
  const DLDataType dt = p.dtype();
  const double eps = 1e-5;
  V x = b.input(p.make("x", {batch, seq, W}, uniform(-1, 1)));
  V target = b.input(p.make("target", {batch, seq, W}, uniform(-1, 1)));
  HostTensor mask_host = HostTensor::zeros({seq, seq}, dt);
  for (int64_t i = 0; i < seq; ++i) {
    for (int64_t j = i + 1; j < seq; ++j) mask_host.set(i * seq + j, -1e4);
  }
  V mask = b.input(mask_host);
  V scale = b.input(scalar_of(1.0 / std::sqrt(double(W)), dt));
  V two_over_count = b.input(scalar_of(2.0 / double(batch * seq * W), dt));
  V eps_value = b.input(scalar_of(eps, dt));
  const std::vector<HostTensor> init = {p.make("ln_weight", {W}, uniform(0.8, 1.2)),
                                        p.make("ln_bias", {W}, uniform(-0.1, 0.1)),
                                        p.weight("wq", {W, W}, W),
                                        p.weight("wk", {W, W}, W),
                                        p.weight("wv", {W, W}, W),
                                        p.weight("wo", {W, W}, W)};
  std::vector<V> params;
  std::vector<std::vector<V>> states(2);
  for (const HostTensor& t : init) {
    params.push_back(b.input(t));
    states[0].push_back(b.input(zero_state(t)));
    states[1].push_back(b.input(zero_state(t)));
  }
  V& ln_w = params[0];
  V& ln_b = params[1];
  V& wq = params[2];
  V& wk = params[3];
  V& wv = params[4];
  V& wo = params[5];
  auto flat = [&](const V& t) { return b.reshape(t, {batch * seq, W}); };
  const AttrValue ta = attr("transpose_a", true), tb = attr("transpose_b", true);
  const AttrValue last = attr("axes", Shape{-1}), keep = attr("keepdim", true);
  const AttrValue rows = attr("axes", Shape{0});
  // x's normalisation does not change while x does not: computed once.
  V mean = b.op("mean", {&x}, {last, keep});
  V centered = b.op("sub", {&x, &mean});
  V squares = b.op("mul", {&centered, &centered});
  V variance = b.op("mean", {&squares}, {last, keep});
  variance = b.op("add", {&variance, &eps_value});
  V rstd = b.op("rsqrt", {&variance});
  V x_hat = b.op("mul", {&centered, &rstd});
  Outputs out;
  for (int64_t step = 1; step <= kTrainingSteps; ++step) {
    V h = b.op("layer_norm", {&x, &ln_w, &ln_b}, {attr("eps", eps)});
    V q = b.op("matmul", {&h, &wq});
    V k = b.op("matmul", {&h, &wk});
    V v = b.op("matmul", {&h, &wv});
    V scores = b.op("matmul", {&q, &k}, {tb});
    scores = b.op("mul", {&scores, &scale});
    scores = b.op("add", {&scores, &mask});
    V probabilities = b.op("softmax", {&scores}, {attr("axis", int64_t(-1))});
    V a = b.op("matmul", {&probabilities, &v});
    V o = b.op("matmul", {&a, &wo});
    V y = b.op("add", {&x, &o});
    V diff = b.op("sub", {&y, &target});
    V square = b.op("mul", {&diff, &diff});
    V loss = b.op("mean", {&square});
    out.push_back({"loss_step_" + std::to_string(step), b.result(loss)});
    std::vector<V> grads(6);
    V dy = b.op("mul", {&diff, &two_over_count});
    V a_flat = flat(a), dy_flat = flat(dy);
    grads[5] = b.op("matmul", {&a_flat, &dy_flat}, {ta});
    V da = b.op("matmul", {&dy, &wo}, {tb});
    V dprobabilities = b.op("matmul", {&da, &v}, {tb});
    V dv = b.op("matmul", {&probabilities, &da}, {ta});
    // softmax backward: p * (dp - sum(dp * p)) along the row
    V weighted = b.op("mul", {&dprobabilities, &probabilities});
    V row_sum = b.op("sum", {&weighted}, {last, keep});
    V dscores = b.op("sub", {&dprobabilities, &row_sum});
    dscores = b.op("mul", {&dscores, &probabilities});
    dscores = b.op("mul", {&dscores, &scale});
    V dq = b.op("matmul", {&dscores, &k});
    V dk = b.op("matmul", {&dscores, &q}, {ta});
    V h_flat = flat(h), dq_flat = flat(dq), dk_flat = flat(dk), dv_flat = flat(dv);
    grads[2] = b.op("matmul", {&h_flat, &dq_flat}, {ta});
    grads[3] = b.op("matmul", {&h_flat, &dk_flat}, {ta});
    grads[4] = b.op("matmul", {&h_flat, &dv_flat}, {ta});
    V dh = b.op("matmul", {&dq, &wq}, {tb});
    V dh_k = b.op("matmul", {&dk, &wk}, {tb});
    V dh_v = b.op("matmul", {&dv, &wv}, {tb});
    dh = b.op("add", {&dh, &dh_k});
    dh = b.op("add", {&dh, &dh_v});
    // layer_norm's weight and bias: sums over the rows of dh * x_hat and dh
    V dh_flat = flat(dh), x_hat_flat = flat(x_hat);
    V dh_x_hat = b.op("mul", {&dh_flat, &x_hat_flat});
    grads[0] = b.op("sum", {&dh_x_hat}, {rows});
    grads[1] = b.op("sum", {&dh_flat}, {rows});
    clip_and_step(b, params, grads, states, "adamw", step, 0.2);
  }
  const char* names[] = {"ln_weight", "ln_bias", "wq", "wk", "wv", "wo"};
  for (size_t i = 0; i < params.size(); ++i) out.push_back({names[i], b.result(params[i])});
  return out;
}

using DeviceModel = std::function<Outputs(DeviceBackend&, const Parameters&)>;
using ReferenceModel = std::function<Outputs(ReferenceBackend&, const Parameters&)>;

struct Model {
  const char* name;
  DeviceModel on_device;
  ReferenceModel on_reference;
};

template <template <typename> class F>
Model model(const char* name) {
  return {name, F<DeviceBackend>::run, F<ReferenceBackend>::run};
}
template <typename B>
struct MlpGelu {
  static Outputs run(B& b, const Parameters& p) { return mlp(b, p, "gelu"); }
};
template <typename B>
struct MlpRelu {
  static Outputs run(B& b, const Parameters& p) { return mlp(b, p, "relu"); }
};
template <typename B>
struct ConvNet {
  static Outputs run(B& b, const Parameters& p) { return conv_net(b, p); }
};
template <typename B>
struct TransformerBlock {
  static Outputs run(B& b, const Parameters& p) { return transformer_block(b, p); }
};
template <typename B>
struct TrainMlp {
  static Outputs run(B& b, const Parameters& p) { return train_mlp(b, p); }
};
template <typename B>
struct TrainBlock {
  static Outputs run(B& b, const Parameters& p) { return train_block(b, p); }
};

void run_model(TestContext& context, const std::string& id, const Model& m, DLDataType dtype) {
  Parameters parameters(id, dtype);
  DeviceBackend device(context.device.default_stream());
  Outputs got;
  try {
    got = m.on_device(device, parameters);
  } catch (const Error& e) {
    fail(id + ": the device failed: " + e.what());
  }
  ReferenceBackend reference(id);
  Outputs expected = m.on_reference(reference, parameters);
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(id + " (" + got[i].first + ")", i, got[i].second, expected[i].second,
                 tolerance_for(dtype, Family::kModel));
  }
}

// --- optimizer steps in place --------------------------------------------------

// The state dtype of a parameter dtype (docs/ops.md, "Optimizer steps").
DLDataType state_dtype(DLDataType param) { return param == dtype::f64 ? dtype::f64 : dtype::f32; }

// The attributes of step |step| of |op| in the in-place tests and training loops.
std::vector<AttrValue> step_attrs(const std::string& op, int64_t step, double lr) {
  std::vector<AttrValue> attrs = {attr("lr", lr), attr("step", step)};
  if (op == "sgd") {
    attrs.push_back(attr("momentum", 0.9));
    attrs.push_back(attr("dampening", 0.1));
    attrs.push_back(attr("weight_decay", 0.01));
  } else {
    attrs.push_back(attr("weight_decay", 0.1));
  }
  return attrs;
}

// Three steps of |op| with every output bound to the tensor of its input
// (param_out to param, each state output to its state): the in-place update
// frameworks make. The operator suite's cases give every output its own
// buffer; this catches kernels that store an output element before reading
// the input element it overwrites, or that ignore the state they are given.
void run_in_place(TestContext& context, const std::string& id, const ops::OpSchema& schema,
                  DLDataType dt) {
  Stream& stream = context.device.default_stream();
  const std::string op = schema.name;
  const Parameters p(id, dt);
  const Shape shape = {37, 29};
  std::vector<HostTensor> host = {p.make("param", shape, uniform(-2, 2)),
                                  p.make("grad", shape, uniform(-1, 1))};
  host.push_back(p.make("state1", shape, uniform(-1, 1), state_dtype(dt)));
  if (op != "sgd") host.push_back(p.make("state2", shape, uniform(0.01, 1), state_dtype(dt)));
  const HostTensor grad = host[1];
  std::vector<Tensor> device;
  try {
    for (const HostTensor& h : host) device.push_back(upload(stream, h));
    for (int64_t step = 1; step <= 3; ++step) {
      std::vector<const Tensor*> inputs;
      for (const Tensor& t : device) inputs.push_back(&t);
      std::vector<Tensor> outputs = {device[0]};
      for (size_t i = 2; i < device.size(); ++i) outputs.push_back(device[i]);
      dispatch_op(stream, schema, inputs, outputs, step_attrs(op, step, 0.05));
    }
  } catch (const Error& e) {
    fail(id + ": the device failed: " + e.what());
  }
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<HostTensor> next = run_host(id, schema, host, step_attrs(op, step, 0.05));
    host[0] = next[0];
    for (size_t i = 2; i < host.size(); ++i) host[i] = next[i - 1];
  }
  for (size_t i = 0; i < device.size(); ++i) {
    HostTensor got = download(stream, device[i]);
    const std::string what = id + " (" + schema.inputs[i].name + " after 3 in-place steps)";
    expect_close(what, i, got, i == 1 ? grad : host[i],
                 i == 1 ? Tolerance{} : tolerance_for(host[i].dtype, Family::kTranscendental));
  }
}

// clip_grad_norm with grad_out bound to grad, twice in a row (the second
// clip of an already clipped gradient by a norm above max_norm scales again).
void run_clip_in_place(TestContext& context, const std::string& id, const ops::OpSchema& schema,
                       DLDataType dt) {
  Stream& stream = context.device.default_stream();
  const Parameters p(id, dt);
  HostTensor grad = p.make("grad", {37, 29}, uniform(-2, 2));
  const HostTensor total = p.make("total_norm", {}, uniform(2, 50), state_dtype(dt));
  const std::vector<AttrValue> attrs = {attr("max_norm", 1.0)};
  Tensor device_grad, device_total;
  try {
    device_grad = upload(stream, grad);
    device_total = upload(stream, total);
    for (int i = 0; i < 2; ++i) {
      dispatch_op(stream, schema, {&device_grad, &device_total}, {device_grad}, attrs);
    }
  } catch (const Error& e) {
    fail(id + ": the device failed: " + e.what());
  }
  for (int i = 0; i < 2; ++i) grad = run_host(id, schema, {grad, total}, attrs)[0];
  expect_close(id + " (grad after 2 in-place clips)", 0, download(stream, device_grad), grad,
               tolerance_for(dt, Family::kArith));
  expect_close(id + " (total_norm, an input)", 1, download(stream, device_total), total,
               Tolerance{});
}

}  // namespace

void register_model_suite(Registry& registry, const oar_device_properties_t& properties) {
  const Model models[] = {
      model<MlpGelu>("mlp_gelu"),       model<MlpRelu>("mlp_relu"),
      model<ConvNet>("conv_net"),       model<TransformerBlock>("transformer_block"),
      model<TrainMlp>("train_mlp_sgd"), model<TrainBlock>("train_block_adamw")};
  const uint32_t claimed = claimed_dtype_bits(properties);
  for (const Model& m : models) {
    for (DLDataType dt : ops::dtypes_in(claimed & (ops::kF32 | ops::kF16 | ops::kBF16))) {
      const std::string id = std::string("models/") + m.name + "/" + dtype_name(dt);
      registry.add({id, "models", "", dtype_name(dt), std::string("models/") + m.name,
                    [id, m, dt](TestContext& context) { run_model(context, id, m, dt); }});
    }
  }
  // Registered under ops/<op>/ so that the operator's filter runs them.
  for (const char* op : {"sgd", "adam", "adamw"}) {
    const ops::OpSchema* schema = ops::find_schema(op);
    if (schema == nullptr) continue;
    for (DLDataType dt : ops::dtypes_in(claimed & schema->dtypes)) {
      const std::string id = std::string("ops/") + op + "/" + dtype_name(dt) + "/in_place_3_steps";
      registry.add(
          {id, "ops", op, dtype_name(dt), std::string("ops/") + op,
           [id, schema, dt](TestContext& context) { run_in_place(context, id, *schema, dt); }});
    }
  }
  if (const ops::OpSchema* clip = ops::find_schema("clip_grad_norm")) {
    for (DLDataType dt : ops::dtypes_in(claimed & clip->dtypes)) {
      const std::string id = "ops/clip_grad_norm/" + dtype_name(dt) + "/in_place_twice";
      registry.add(
          {id, "ops", "clip_grad_norm", dtype_name(dt), "ops/clip_grad_norm",
           [id, clip, dt](TestContext& context) { run_clip_in_place(context, id, *clip, dt); }});
    }
  }
}

}  // namespace oar::conformance
