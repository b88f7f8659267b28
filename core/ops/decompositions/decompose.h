// Decompositions: operators written as compositions of primitive operators
// (docs/ops.md, "Primitives and decompositions").
//
// When a device's plugin has no kernel for a call, the dispatcher asks
// run_decomposition() to compute it from primitives instead, on the same
// device and stream, with scratch tensors from the device's caching allocator
// (freed stream ordered when the call returns). A plugin's own kernel always
// wins, unless decomposition is forced (certification of the decompositions).
//
// The mode: OAR_DECOMPOSE=0 (or "off") never decomposes (a missing kernel is
// UNIMPLEMENTED, as before), "force" decomposes every operator that has a
// decomposition even where a kernel exists, anything else (or unset) falls back
// to the decomposition only where the kernel is missing. set_device_mode()
// overrides the environment for one device.
//
// Threading: every function is thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "oar/buffer.hpp"
#include "oar/dispatch.hpp"
#include "oar/kernel.h"
#include "oar/ops.hpp"

namespace oar {
class Device;
class Stream;
}  // namespace oar

namespace oar::decompose {

enum class Mode { kOff, kFallback, kForce };

// The mode OAR_DECOMPOSE names ("0"/"off", "force", else fallback).
Mode parse_mode(const char* text);
// Re-reads OAR_DECOMPOSE (it is read once, at the first dispatch that asks).
void reload_environment();
// The mode of |device|: its own if set, else the environment's.
Mode device_mode(const Device& device);
// Sets |device|'s own mode; clear_device_mode() returns it to the environment's.
// Keyed by the Device's address: clear it before the device goes away.
void set_device_mode(const Device& device, Mode mode);
void clear_device_mode(const Device& device);

// Whether |op| has a decomposition, and every operator that has one (sorted).
bool has_decomposition(std::string_view op);
std::vector<std::string> decomposed_operators();

// How many calls this process ran through a decomposition (for tests and
// `oar info`).
uint64_t decomposition_count();

// The dispatcher's hook. Cheap when nothing is forced.
bool forced(const Device& device);
// Runs |op|'s decomposition when the mode allows it (|have_kernel|: the plugin
// registered one, so only kForce decomposes). Returns false, having done
// nothing, where the dispatcher should go on with the kernel (or its "no
// kernel" error). Throws what the schema check or a primitive throws.
bool run_decomposition(Stream& stream, const OpId& op, const DLTensor* inputs, size_t num_inputs,
                       DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs,
                       size_t num_attrs, bool have_kernel);

// ---- For the decompositions themselves ----

// One decomposed call: its tensors, attributes, and scratch tensors.
class Graph {
 public:
  Graph(Stream& stream, const ops::OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
        DLTensor* outputs, size_t num_outputs, const oar_attr_t* attrs, size_t num_attrs);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Stream& stream() { return stream_; }
  const ops::Attrs& attrs() const { return attrs_; }
  // Input |i| (contiguous: strided inputs were copied first); output |i|.
  const DLTensor* in(size_t i) const { return inputs_[i]; }
  const DLTensor* out(size_t i) const { return &outputs_[i]; }
  size_t num_inputs() const { return inputs_.size(); }

  // A new scratch tensor (contiguous, uninitialized).
  const DLTensor* empty(std::vector<int64_t> shape, DLDataType dtype);
  // A tensor of |shape| holding |value| everywhere (fill).
  const DLTensor* full(std::vector<int64_t> shape, double value, DLDataType dtype);
  // A rank-0 tensor holding |value| (fill).
  const DLTensor* scalar(double value, DLDataType dtype) { return full({}, value, dtype); }
  // |t|'s elements (|t| contiguous) with another shape.
  const DLTensor* view(const DLTensor* t, std::vector<int64_t> shape);
  // Runs |op| into a new scratch output (shape and dtype from the schema;
  // |out_dtype| for cast).
  const DLTensor* call(const OpId& op, const std::vector<const DLTensor*>& inputs,
                       std::initializer_list<Attr> attrs = {}, DLDataType out_dtype = {0, 0, 0});
  // Runs |op| into |out|.
  void call_into(const OpId& op, const std::vector<const DLTensor*>& inputs, const DLTensor* out,
                 std::initializer_list<Attr> attrs = {});
  // The type a float input is computed in: f32 for f16/bf16, else its own.
  static DLDataType compute_type(DLDataType dtype);
  // |t| in compute_type (a cast for f16/bf16, else |t| itself).
  const DLTensor* widen(const DLTensor* t);
  // The last step: |op| on |inputs| (in the compute type) stored into |out|
  // (through a cast when |out|'s dtype differs).
  void finish(const OpId& op, const std::vector<const DLTensor*>& inputs, const DLTensor* out,
              std::initializer_list<Attr> attrs = {});

 private:
  struct Owned {
    DLTensor dl;
    std::vector<int64_t> shape;
  };
  DLTensor* own(const DLTensor& base, std::vector<int64_t> shape);

  Stream& stream_;
  ops::Attrs attrs_;
  std::vector<const DLTensor*> inputs_;
  DLTensor* outputs_;
  std::deque<Owned> owned_;  // stable addresses
  std::vector<Buffer> buffers_;
};

// ---- Steps several decompositions share (decompose.cc) ----

// |t| (in the compute type) stored into |out|: a copy, or a cast where the
// dtypes differ.
void store(Graph& g, const DLTensor* t, const DLTensor* out);

// Σ |t| along |axis|, kept: a tree of sums of at most 16 terms each (the row
// padded with zeros to a multiple of the tree's width), so that the result
// errs like a pairwise sum whatever order the plugin's sum adds in.
const DLTensor* row_sum(Graph& g, const DLTensor* t, int64_t axis);
// Mean over the last axis, kept: row_sum / the row's length.
const DLTensor* row_mean(Graph& g, const DLTensor* x);

// The row statistics of layer_norm (|centred|: c = x − mean(x), two passes)
// and rms_norm (c = x): c and rstd = rsqrt(mean(c · c) + eps), over the last
// axis (kept).
struct RowStats {
  const DLTensor* centred;
  const DLTensor* rstd;
};
RowStats row_stats(Graph& g, const DLTensor* x, double eps, bool centred);

// scaled_dot_product_attention's scores, scale · q kᵀ with the causal mask
// (-inf where a key is hidden) when the attributes ask for it; |row_visible|
// ([Lq, 1] bool) is set where some query sees no key (bottom-right alignment
// with Lq > Lk), else null; |scale| is the scale as a rank-0 tensor.
struct AttentionScores {
  const DLTensor* scores;
  const DLTensor* row_visible;
  const DLTensor* scale;
};
AttentionScores attention_scores(Graph& g, const DLTensor* q, const DLTensor* k);

// |x| [A, B, H, W] with |ph| rows and |pw| columns of |value| on each side.
const DLTensor* pad_hw(Graph& g, const DLTensor* x, int64_t ph, int64_t pw, double value);
// One window tap of every output position of a sliding window over |padded|
// [A, B, HP, WP]: [A, B, OH, OW] with element (i, j) = padded[..., h0 + i·sh,
// w0 + j·sw].
const DLTensor* window_tap(Graph& g, const DLTensor* padded, int64_t h0, int64_t w0, int64_t oh,
                           int64_t ow, int64_t sh, int64_t sw);

// |t|'s bytes read as |dtype| (same width): a bit view, no dispatch (fmod
// decodes exponents and significands from it).
const DLTensor* bit_view(Graph& g, const DLTensor* t, DLDataType dtype);

using DecompositionFn = void (*)(Graph& graph);
struct Decomposition {
  const char* op;
  DecompositionFn fn;
};

// The decompositions of each file.
void add_activation_decompositions(std::vector<Decomposition>& table);
void add_normalization_decompositions(std::vector<Decomposition>& table);
void add_window_decompositions(std::vector<Decomposition>& table);
void add_elementwise_decompositions(std::vector<Decomposition>& table);
void add_layout_decompositions(std::vector<Decomposition>& table);
void add_math_decompositions(std::vector<Decomposition>& table);
void add_gradient_decompositions(std::vector<Decomposition>& table);
void add_optimizer_decompositions(std::vector<Decomposition>& table);

}  // namespace oar::decompose
