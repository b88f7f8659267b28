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
  Value op(const char* name, std::vector<const Value*> inputs, std::vector<AttrValue> attrs = {}) {
    std::vector<Tensor> out = run_device(stream_, schema(name), inputs, attrs);
    return std::move(out[0]);
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
  Value op(const char* name, std::vector<const Value*> inputs, std::vector<AttrValue> attrs = {}) {
    std::vector<HostTensor> in;
    for (const Value* v : inputs) in.push_back(*v);
    return run_host(what_ + " " + name, DeviceBackend::schema(name), in, attrs)[0];
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

}  // namespace

void register_model_suite(Registry& registry, const oar_device_properties_t& properties) {
  const Model models[] = {model<MlpGelu>("mlp_gelu"), model<MlpRelu>("mlp_relu"),
                          model<ConvNet>("conv_net"), model<TransformerBlock>("transformer_block")};
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
}

}  // namespace oar::conformance
