// The cases of core/ops/decompositions/layout.cc and math.cc for
// decompose_test.cc, which includes this file inside its namespace after its
// helpers (Case, upload, random_values). Integer and bool cases ignore the
// float dtype they are given.
#pragma once

void add_layout_and_math_cases(std::vector<Case>& c) {
  auto grid = [](DLDataType as) {
    return [as](Device& d, DLDataType t) {
      std::vector<double> v = random_values(60, -9, 9, 30);
      if (as.bits == 0) {
        v[1] = kNaN, v[7] = kInf, v[8] = -0.0;
      } else {
        for (double& e : v) e = std::round(e);
      }
      return std::vector<Tensor>{upload(d, v, {3, 4, 5}, as.bits == 0 ? t : as)};
    };
  };
  const DLDataType floats{0, 0, 0};
  struct Layout {
    const char* name;
    const char* op;
    DLDataType as;
    std::function<Tensor(Stream&, const Tensor&)> run;
  };
  std::vector<int64_t> pads{1, 0, 2, 2, 2, 1};
  std::vector<Layout> layouts = {
      {"pad", "pad", floats,
       [pads](Stream& s, const Tensor& x) {
         return ops::call(s, "pad", {&x}, {Attr("pads", pads), Attr("value", 2.5)})[0];
       }},
      {"pad_reflect", "pad", floats,
       [pads](Stream& s, const Tensor& x) {
         return ops::call(s, "pad", {&x}, {Attr("pads", pads), Attr("mode", "reflect")})[0];
       }},
      {"pad_replicate_i32", "pad", dtype::i32,
       [pads](Stream& s, const Tensor& x) {
         return ops::call(s, "pad", {&x}, {Attr("pads", pads), Attr("mode", "replicate")})[0];
       }},
      {"flip", "flip", floats,
       [](Stream& s, const Tensor& x) { return ops::call(s, "flip", {&x})[0]; }},
      {"flip_axes_i64", "flip", dtype::i64,
       [](Stream& s, const Tensor& x) {
         std::vector<int64_t> axes{0, -1};
         return ops::call(s, "flip", {&x}, {Attr("axes", axes)})[0];
       }},
      {"tril", "tril", floats,
       [](Stream& s, const Tensor& x) {
         return ops::call(s, "tril", {&x}, {Attr("diagonal", int64_t(-1))})[0];
       }},
      {"triu_bool", "triu", dtype::boolean,
       [](Stream& s, const Tensor& x) {
         return ops::call(s, "triu", {&x}, {Attr("diagonal", int64_t(1))})[0];
       }},
      {"triu_huge_diagonal", "triu", floats,
       [](Stream& s, const Tensor& x) {
         return ops::call(s, "triu", {&x}, {Attr("diagonal", int64_t(-(int64_t(1) << 62)))})[0];
       }},
      {"expand", "expand", floats,
       [](Stream& s, const Tensor& x) {
         Tensor col = ops::call(
             s, "slice", {&x},
             {Attr("axis", int64_t(2)), Attr("start", int64_t(0)), Attr("end", int64_t(1))})[0];
         std::vector<int64_t> shape{2, -1, 4, 6};
         return ops::call(s, "expand", {&col}, {Attr("shape", shape)})[0];
       }},
      {"sort", "sort", floats,
       [](Stream& s, const Tensor& x) { return ops::call(s, "sort", {&x})[0]; }},
      {"sort_indices_descending", "sort", floats,
       [](Stream& s, const Tensor& x) {
         return ops::call(s, "sort", {&x}, {Attr("axis", int64_t(1)), Attr("descending", true)})[1];
       }},
      {"sort_i64", "sort", dtype::i64,
       [](Stream& s, const Tensor& x) { return ops::call(s, "sort", {&x})[1]; }},
      {"topk", "topk", floats,
       [](Stream& s, const Tensor& x) {
         return ops::call(s, "topk", {&x}, {Attr("k", int64_t(3))})[0];
       }},
      {"topk_smallest_indices_i32", "topk", dtype::i32,
       [](Stream& s, const Tensor& x) {
         return ops::call(
             s, "topk", {&x},
             {Attr("k", int64_t(2)), Attr("axis", int64_t(0)), Attr("largest", false)})[1];
       }},
      {"logsumexp", "logsumexp", floats,
       [](Stream& s, const Tensor& x) {
         std::vector<int64_t> axes{1};
         return ops::call(s, "logsumexp", {&x}, {Attr("axes", axes)})[0];
       }},
      {"logsumexp_all_keepdim", "logsumexp", floats,
       [](Stream& s, const Tensor& x) {
         Tensor big = ops::call(s, "abs", {&x})[0];
         return ops::call(s, "logsumexp", {&big}, {Attr("keepdim", true)})[0];
       }},
  };
  for (const Layout& l : layouts) {
    auto run = l.run;
    c.push_back({l.name, grid(l.as),
                 [run](Stream& s, const std::vector<Tensor>& in) { return run(s, in[0]); }});
  }
  c.push_back({"logsumexp_special_rows",
               [](Device& d, DLDataType t) {
                 std::vector<double> v = random_values(5 * 6, -3, 3, 31);
                 for (int i = 0; i < 6; ++i) v[size_t(i)] = -kInf;   // a row of -inf
                 for (int i = 6; i < 12; ++i) v[size_t(i)] += 1000;  // near 1000
                 v[13] = kInf;                                       // +inf
                 v[19] = kNaN;                                       // NaN
                 return std::vector<Tensor>{upload(d, v, {5, 6}, t)};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 std::vector<int64_t> axes{-1};
                 return ops::call(s, "logsumexp", {&in[0]}, {Attr("axes", axes)})[0];
               }});
  c.push_back({"one_hot",
               [](Device& d, DLDataType) {
                 std::vector<int64_t> index{3, 0, 4, 4, 1, 2};
                 Tensor ti = Tensor::empty(d, {2, 3}, dtype::i64);
                 ti.copy_from_host(d.default_stream(), index.data());
                 d.default_stream().synchronize();
                 return std::vector<Tensor>{ti};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "one_hot", {&in[0]}, {Attr("num_classes", int64_t(5))})[0];
               }});
  for (bool interleaved : {false, true}) {
    c.push_back({interleaved ? "rotary_embedding_interleaved" : "rotary_embedding",
                 [](Device& d, DLDataType t) {
                   return std::vector<Tensor>{
                       upload(d, random_values(2 * 5 * 8, -2, 2, 32), {2, 5, 8}, t),
                       upload(d, random_values(5 * 4, -1, 1, 33), {5, 4}, t),
                       upload(d, random_values(5 * 4, -1, 1, 34), {5, 4}, t)};
                 },
                 [interleaved](Stream& s, const std::vector<Tensor>& in) {
                   return ops::call(s, "rotary_embedding", {&in[0], &in[1], &in[2]},
                                    {Attr("interleaved", interleaved)})[0];
                 }});
  }
  for (const char* op : {"fmod", "remainder"}) {
    for (bool integer : {false, true}) {
      c.push_back({std::string(op) + (integer ? "_i64" : ""),
                   [integer](Device& d, DLDataType t) {
                     std::vector<double> a = random_values(48, -50, 50, 38),
                                         b = random_values(8, -7, 7, 39);
                     if (integer) {
                       for (double& e : a) e = std::round(e);
                       for (double& e : b) e = std::round(e);
                       b[0] = 0, a[1] = -9223372036854775808.0, b[1] = -1;
                       return std::vector<Tensor>{upload(d, a, {6, 8}, dtype::i64),
                                                  upload(d, b, {8}, dtype::i64)};
                     }
                     a[0] = 1e4, b[0] = 0.3, a[2] = kInf, b[3] = 0, a[4] = -0.0, b[5] = kInf;
                     return std::vector<Tensor>{upload(d, a, {6, 8}, t), upload(d, b, {8}, t)};
                   },
                   [op](Stream& s, const std::vector<Tensor>& in) {
                     return ops::call(s, op, {&in[0], &in[1]})[0];
                   }});
    }
  }
  c.push_back({"matmul_w8",
               [](Device& d, DLDataType t) {
                 std::vector<double> w = random_values(5 * 6, -127, 127, 35);
                 for (double& e : w) e = std::round(e);
                 w[0] = -128, w[1] = 127;
                 return std::vector<Tensor>{
                     upload(d, random_values(3 * 4 * 6, -2, 2, 36), {3, 4, 6}, t),
                     upload(d, w, {5, 6}, dtype::i8),
                     upload(d, random_values(5, 0.001, 0.02, 37), {5}, t)};
               },
               [](Stream& s, const std::vector<Tensor>& in) {
                 return ops::call(s, "matmul_w8", {&in[0], &in[1], &in[2]})[0];
               }});
}
