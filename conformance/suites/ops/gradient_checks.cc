// Gradient checks: each gradient operator against central finite differences
// of the device's own forward operator, in f64 where the device claims f64.
//
// The operator suite compares a gradient kernel with the reference's
// gradient; a kernel and a reference that share a wrong derivative (a
// missing factor, the other form of gelu, a sign) would agree there. Here the
// derivative is measured instead: for upstream values dy and a forward
// operator f, the gradient kernel's dx must match
//
//   dx[i] ~ sum_j dy[j] * (f(x + h e_i)[j] - f(x - h e_i)[j]) / 2h
//
// with f run on the device under test in f64 (h = 1e-5 * max(1, |x[i]|), so
// the truncation error h^2 f''' / 6 and the rounding error eps |f| / h both
// stay near 1e-10), within |dx - fd| <= kFdAtol + kFdRtol * |fd|. Shapes are
// drawn at random (small: every element is perturbed, two forward calls
// each). On every device the same draws also run in f32 against the
// reference with the operator's family tolerance (docs/conformance.md).
//
// To check a new gradient operator, add one line to the table in
// gradient_table(): the gradient, its forward operator, where each gradient
// input comes from, which forward input each gradient output differentiates,
// and how to draw the forward inputs.
#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_cases.h"

namespace oar::conformance {
namespace {

using Shape = std::vector<int64_t>;

constexpr double kFdAtol = 1e-6;
constexpr double kFdRtol = 1e-5;
constexpr double kFdStep = 1e-5;
constexpr int kDraws = 3;  // random shapes per operator and dtype

// Where an input of the gradient operator comes from.
struct Source {
  enum Kind { kUpstream, kInput, kOutput } kind;
  int index;  // forward input or output number
};
constexpr Source dy() { return {Source::kUpstream, 0}; }
constexpr Source input(int i) { return {Source::kInput, i}; }
constexpr Source output(int i) { return {Source::kOutput, i}; }

// One draw of the forward call: its inputs and attributes (given to the
// gradient too), and attributes only the gradient takes.
struct Draw {
  std::vector<InputSpec> inputs;
  std::vector<AttrValue> attrs;
  std::vector<AttrValue> grad_attrs = {};
};
using Drawer = std::function<Draw(Random& random, DLDataType dtype)>;

struct GradientEntry {
  const char* grad;            // the gradient operator
  const char* forward;         // the operator it differentiates (its output 0 gets dy)
  std::vector<Source> inputs;  // the gradient's inputs, in schema order
  std::vector<int> wrt;        // per gradient output: the forward input it is the gradient of
  Drawer draw;
  const char* variant = "";  // a suffix for the test id ("tanh_form")
};

InputSpec generated(const Shape& shape, DLDataType dt, Domain domain) {
  InputSpec spec;
  spec.shape = shape;
  spec.dtype = dt;
  spec.domain = domain;
  return spec;
}

// A random shape of rank [min_rank, 3] with sizes in [1, 4] (at most 64 elements).
Shape random_shape(Random& random, int min_rank) {
  Shape shape(size_t(random.integer(min_rank, 3)));
  for (int64_t& d : shape) d = random.integer(1, 4);
  return shape;
}

// Forward inputs of one random shape, each drawn from its domain, plus |attrs|.
Drawer same_shape(std::vector<Domain> domains, std::vector<AttrValue> attrs = {}) {
  return [domains, attrs](Random& random, DLDataType dt) {
    const Shape shape = random_shape(random, 0);
    Draw d{{}, attrs};
    for (const Domain& domain : domains) d.inputs.push_back(generated(shape, dt, domain));
    return d;
  };
}

// One input of rank >= 1 and a random axis attribute (negative half the time).
Drawer along_axis(Domain domain) {
  return [domain](Random& random, DLDataType dt) {
    const Shape shape = random_shape(random, 1);
    const int64_t rank = int64_t(shape.size());
    int64_t axis = random.integer(0, rank - 1);
    if (random.integer(0, 1) == 1) axis -= rank;
    return Draw{{generated(shape, dt, domain)}, {attr("axis", axis)}};
  };
}

// embedding(weight [V, D], index) with repeated indices; the gradient needs V.
Drawer embedding_draw() {
  return [](Random& random, DLDataType dt) {
    const int64_t V = random.integer(1, 5), D = random.integer(1, 4);
    const Shape index = random_shape(random, 0);
    return Draw{
        {generated({V, D}, dt, uniform(-2, 2)), generated(index, dtype::i64, integers(0, V - 1))},
        {},
        {attr("num_embeddings", V)}};
  };
}

// cross_entropy(logits [N, C], target) with a random reduction.
Drawer cross_entropy_draw() {
  return [](Random& random, DLDataType dt) {
    const int64_t N = random.integer(1, 4), C = random.integer(1, 6);
    const char* reductions[] = {"mean", "sum", "none"};
    return Draw{
        {generated({N, C}, dt, uniform(-3, 3)), generated({N}, dtype::i64, integers(0, C - 1))},
        {attr("reduction", reductions[random.integer(0, 2)])}};
  };
}

// rotary_embedding(x [..., S, D], cos [S, D/2], sin [S, D/2]), either pair layout.
Drawer rotary_draw() {
  return [](Random& random, DLDataType dt) {
    Shape x = random_shape(random, 2);
    x.back() = 2 * random.integer(1, 3);
    const Shape table = {x[x.size() - 2], x.back() / 2};
    return Draw{{generated(x, dt, uniform(-2, 2)), generated(table, dt, uniform(-1, 1)),
                 generated(table, dt, uniform(-1, 1))},
                {attr("interleaved", random.integer(0, 1) == 1)}};
  };
}

// layer_norm(x, weight, bias) / rms_norm(x, weight): x of rank >= 1, [D] tables.
Drawer norm_draw(size_t inputs) {
  return [inputs](Random& random, DLDataType dt) {
    const Shape x = random_shape(random, 1);
    Draw d{{generated(x, dt, uniform(-2, 2)), generated({x.back()}, dt, uniform(0.5, 1.5))}, {}};
    if (inputs == 3) d.inputs.push_back(generated({x.back()}, dt, uniform(-1, 1)));
    return d;
  };
}

// max_pool2d / avg_pool2d of x [N, C, H, W], kernel 2, stride 1 or 2, padding 0 or 1.
Drawer pool_draw(bool average) {
  return [average](Random& random, DLDataType dt) {
    const Shape x = {random.integer(1, 2), random.integer(1, 2), random.integer(2, 5),
                     random.integer(2, 5)};
    Draw d{{generated(x, dt, uniform(-4, 4))},
           {attr("kernel_size", Shape{2, 2}), attr("stride", Shape{random.integer(1, 2)}),
            attr("padding", Shape{random.integer(0, 1)})}};
    if (average) d.attrs.push_back(attr("count_include_pad", random.integer(0, 1) == 1));
    return d;
  };
}

// conv2d(x, weight) with random groups, stride, padding and dilation; the
// gradients take x's [H, W] or the kernel's [KH, KW] as their own attribute.
Drawer conv_draw(bool input_gradient) {
  return [input_gradient](Random& random, DLDataType dt) {
    const int64_t groups = random.integer(1, 2), cg = random.integer(1, 2),
                  og = random.integer(1, 2);
    const Shape x = {random.integer(1, 2), groups * cg, random.integer(3, 4), random.integer(3, 4)};
    const Shape w = {groups * og, cg, random.integer(1, 2), random.integer(1, 2)};
    Draw d{
        {generated(x, dt, uniform(-1, 1)), generated(w, dt, uniform(-1, 1))},
        {attr("stride", Shape{random.integer(1, 2)}), attr("padding", Shape{random.integer(0, 1)}),
         attr("dilation", Shape{random.integer(1, 2)}), attr("groups", groups)}};
    d.grad_attrs = {input_gradient ? attr("input_size", Shape{x[2], x[3]})
                                   : attr("kernel_size", Shape{w[2], w[3]})};
    return d;
  };
}

// scaled_dot_product_attention(q, k, v), causal or not, either mask alignment.
Drawer attention_draw() {
  return [](Random& random, DLDataType dt) {
    const int64_t batch = random.integer(1, 2), lq = random.integer(1, 4),
                  lk = random.integer(1, 4), d = random.integer(1, 4), dv = random.integer(1, 3);
    return Draw{
        {generated({batch, lq, d}, dt, uniform(-1, 1)),
         generated({batch, lk, d}, dt, uniform(-1, 1)),
         generated({batch, lk, dv}, dt, uniform(-1, 1))},
        {attr("causal", random.integer(0, 1) == 1),
         attr("causal_alignment", random.integer(0, 1) == 1 ? "top_left" : "bottom_right")}};
  };
}

// The gradient operators checked, one line each (nn_grad adds its own).
const std::vector<GradientEntry>& gradient_table() {
  static const std::vector<GradientEntry> table = {
      // relu's kink at 0 is kept out of reach of the finite-difference step.
      {"relu_grad", "relu", {dy(), input(0)}, {0}, same_shape({away_from_zero(0.25, 4)})},
      {"sigmoid_grad", "sigmoid", {dy(), output(0)}, {0}, same_shape({uniform(-4, 4)})},
      {"tanh_grad", "tanh", {dy(), output(0)}, {0}, same_shape({uniform(-3, 3)})},
      {"silu_grad", "silu", {dy(), input(0)}, {0}, same_shape({uniform(-6, 6)})},
      {"gelu_grad", "gelu", {dy(), input(0)}, {0}, same_shape({uniform(-4, 4)})},
      {"gelu_grad",
       "gelu",
       {dy(), input(0)},
       {0},
       same_shape({uniform(-4, 4)}, {attr("approximate", "tanh")}),
       "tanh_form"},
      {"softmax_grad", "softmax", {dy(), output(0)}, {0}, along_axis(uniform(-3, 3))},
      {"log_softmax_grad", "log_softmax", {dy(), output(0)}, {0}, along_axis(uniform(-3, 3))},
      {"layer_norm_grad", "layer_norm", {dy(), input(0), input(1)}, {0, 1, 2}, norm_draw(3)},
      {"rms_norm_grad", "rms_norm", {dy(), input(0), input(1)}, {0, 1}, norm_draw(2)},
      {"max_pool2d_grad", "max_pool2d", {dy(), input(0)}, {0}, pool_draw(false)},
      {"avg_pool2d_grad", "avg_pool2d", {dy(), input(0)}, {0}, pool_draw(true)},
      {"conv2d_grad_input", "conv2d", {dy(), input(1)}, {0}, conv_draw(true)},
      {"conv2d_grad_weight", "conv2d", {dy(), input(0)}, {1}, conv_draw(false)},
      {"scaled_dot_product_attention_grad",
       "scaled_dot_product_attention",
       {dy(), input(0), input(1), input(2)},
       {0, 1, 2},
       attention_draw()},
      {"embedding_grad", "embedding", {dy(), input(1)}, {0}, embedding_draw()},
      {"cross_entropy_grad",
       "cross_entropy",
       {dy(), input(0), input(1)},
       {0},
       cross_entropy_draw()},
      {"rotary_embedding_grad", "rotary_embedding", {dy(), input(1), input(2)}, {0}, rotary_draw()},
  };
  return table;
}

struct Prepared {
  Draw draw;
  std::vector<HostTensor> forward_inputs;
  // The gradient's attributes: the forward's and its own.
  std::vector<AttrValue> grad_attrs() const {
    std::vector<AttrValue> all = draw.attrs;
    all.insert(all.end(), draw.grad_attrs.begin(), draw.grad_attrs.end());
    return all;
  }
};

Prepared prepare(const GradientEntry& e, DLDataType dt, const std::string& seed_text, int k) {
  Random random(seed_of(seed_text + "#shape" + std::to_string(k)));
  Prepared p{e.draw(random, dt), {}};
  for (size_t i = 0; i < p.draw.inputs.size(); ++i) {
    p.forward_inputs.push_back(make_input(
        p.draw.inputs[i], seed_of(seed_text + "#" + std::to_string(k) + "#" + std::to_string(i))));
  }
  return p;
}

std::string call_text(const GradientEntry& e, const Prepared& p) {
  std::string text = std::string(e.grad) + " of " + e.forward + "(";
  for (size_t i = 0; i < p.forward_inputs.size(); ++i) {
    text += (i ? ", " : "") + dtype_name(p.forward_inputs[i].dtype) +
            shape_text(p.forward_inputs[i].shape);
  }
  text += ")";
  for (const AttrValue& a : p.draw.attrs) text += " " + a.text();
  for (const AttrValue& a : p.draw.grad_attrs) text += " " + a.text();
  return text;
}

// Runs |schema| on the device on host inputs and returns its outputs.
std::vector<HostTensor> on_device(Stream& stream, const ops::OpSchema& schema,
                                  const std::vector<HostTensor>& inputs,
                                  const std::vector<AttrValue>& attrs) {
  std::vector<Tensor> uploaded;
  uploaded.reserve(inputs.size());
  for (const HostTensor& h : inputs) uploaded.push_back(upload(stream, h));
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : uploaded) pointers.push_back(&t);
  std::vector<Tensor> outputs = run_device(stream, schema, pointers, attrs);
  std::vector<HostTensor> result;
  for (const Tensor& t : outputs) result.push_back(download(stream, t));
  return result;
}

// The gradient operator's inputs from the forward call's inputs and outputs.
std::vector<HostTensor> gradient_inputs(const GradientEntry& e, const HostTensor& upstream,
                                        const std::vector<HostTensor>& forward_inputs,
                                        const std::vector<HostTensor>& forward_outputs) {
  std::vector<HostTensor> in;
  for (const Source& s : e.inputs) {
    in.push_back(s.kind == Source::kUpstream ? upstream
                 : s.kind == Source::kInput  ? forward_inputs[size_t(s.index)]
                                             : forward_outputs[size_t(s.index)]);
  }
  return in;
}

HostTensor random_upstream(const HostTensor& like, const std::string& seed_text) {
  return make_input(generated(like.shape, like.dtype, uniform(-1, 1)), seed_of(seed_text));
}

void finite_difference_check(Stream& stream, const std::string& id, const GradientEntry& e) {
  const ops::OpSchema& grad = *ops::find_schema(e.grad);
  const ops::OpSchema& forward = *ops::find_schema(e.forward);
  for (int k = 0; k < kDraws; ++k) {
    const Prepared p = prepare(e, dtype::f64, id, k);
    const std::string what = id + " (" + call_text(e, p) + ")";
    const std::vector<HostTensor> y = on_device(stream, forward, p.forward_inputs, p.draw.attrs);
    const HostTensor upstream = random_upstream(y[0], id + "#dy" + std::to_string(k));
    const std::vector<HostTensor> dx =
        on_device(stream, grad, gradient_inputs(e, upstream, p.forward_inputs, y), p.grad_attrs());
    for (size_t out = 0; out < e.wrt.size(); ++out) {
      const size_t w = size_t(e.wrt[out]);
      const HostTensor& x = p.forward_inputs[w];
      if (dx[out].shape != x.shape) {
        fail(what + ": gradient output " + std::to_string(out) + " has shape " +
             shape_text(dx[out].shape) + ", the input it differentiates " + shape_text(x.shape));
      }
      int64_t bad = 0, first = -1;
      double first_got = 0, first_fd = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double h = kFdStep * std::max(1.0, std::fabs(x.get(i)));
        std::vector<HostTensor> plus = p.forward_inputs, minus = p.forward_inputs;
        plus[w].set(i, x.get(i) + h);
        minus[w].set(i, x.get(i) - h);
        const double step = plus[w].get(i) - minus[w].get(i);
        const HostTensor y_plus = on_device(stream, forward, plus, p.draw.attrs)[0];
        const HostTensor y_minus = on_device(stream, forward, minus, p.draw.attrs)[0];
        double fd = 0;
        for (int64_t j = 0; j < upstream.numel(); ++j) {
          fd += upstream.get(j) * (y_plus.get(j) - y_minus.get(j));
        }
        fd /= step;
        const double got = dx[out].get(i);
        if (!(std::fabs(got - fd) <= kFdAtol + kFdRtol * std::fabs(fd))) {
          if (bad++ == 0) first = i, first_got = got, first_fd = fd;
        }
      }
      if (bad > 0) {
        std::ostringstream message;
        message.precision(10);
        message << what << ": gradient output " << out << " (d/d input " << w << ") differs from "
                << "central finite differences of the device's own " << e.forward << " at " << bad
                << " of " << x.numel() << " elements; first at " << index_text(x.shape, first)
                << ": got " << first_got << ", finite differences " << first_fd << " (tolerance "
                << kFdAtol << " + " << kFdRtol << " * |fd|)";
        fail(message.str());
      }
    }
  }
}

void reference_check(Stream& stream, const std::string& id, const GradientEntry& e, DLDataType dt) {
  const ops::OpSchema& grad = *ops::find_schema(e.grad);
  const ops::OpSchema& forward = *ops::find_schema(e.forward);
  const Family family = op_family(grad);
  for (int k = 0; k < kDraws; ++k) {
    const Prepared p = prepare(e, dt, id, k);
    const std::string what = id + " (" + call_text(e, p) + ")";
    // The forward outputs the gradient reads come from the reference, so
    // that only the gradient kernel is under test here.
    const std::vector<HostTensor> y = run_host(what, forward, p.forward_inputs, p.draw.attrs);
    const HostTensor upstream = random_upstream(y[0], id + "#dy" + std::to_string(k));
    const std::vector<HostTensor> in = gradient_inputs(e, upstream, p.forward_inputs, y);
    const std::vector<HostTensor> got = on_device(stream, grad, in, p.grad_attrs());
    const std::vector<HostTensor> expected = run_host(what, grad, in, p.grad_attrs());
    for (size_t out = 0; out < got.size(); ++out) {
      expect_close(what, out, got[out], expected[out], tolerance_for(dt, family));
    }
  }
}

}  // namespace

void register_gradient_checks(Registry& registry, const oar_device_properties_t& properties) {
  const uint32_t claimed = claimed_dtype_bits(properties);
  for (const GradientEntry& e : gradient_table()) {
    const ops::OpSchema* grad = ops::find_schema(e.grad);
    if (grad == nullptr || ops::find_schema(e.forward) == nullptr) continue;
    const std::string op = e.grad;
    const std::string suffix = *e.variant ? std::string("_") + e.variant : "";
    if ((claimed & grad->dtypes & ops::kF64) != 0) {
      const std::string id = "ops/" + op + "/f64/gradcheck_finite_differences" + suffix;
      registry.add({id, "ops", op, "f64", "ops/" + op, [id, &e](TestContext& context) {
                      finite_difference_check(context.device.default_stream(), id, e);
                    }});
    }
    if ((grad->dtypes & ops::kF32) != 0) {
      const std::string id = "ops/" + op + "/f32/gradcheck_random_shapes" + suffix;
      registry.add({id, "ops", op, "f32", "ops/" + op, [id, &e](TestContext& context) {
                      reference_check(context.device.default_stream(), id, e, dtype::f32);
                    }});
    }
  }
}

}  // namespace oar::conformance
