// Helpers for tests that compare a compiled model with the reference runtime: small zoo
// models, seeded inputs, and a whole-model tolerance derived from the model's layers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dlas/model/graph.h"
#include "dlas/model/zoo.h"

namespace dlas {

inline Graph small_zoo_model(const std::string& name) {
  ZooOptions o;
  if (find_zoo_model(name)->dataset == "imagenet") o.image_size = 64;  // same layers, less time
  return build_zoo_model(name, o);
}

// The zoo's models as a value-parameterised suite's parameters, named for gtest.
inline auto zoo_model_params() {
  return ::testing::Values("resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar",
                           "vgg16-cifar", "resnet50", "mobilenetv2", "densenet161",
                           "efficientnetb0");
}
inline std::string zoo_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

inline std::vector<Tensor> seeded_inputs(const Graph& g) {
  std::vector<Tensor> in;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 1.f);
  for (const ValueInfo& v : g.inputs) {
    Tensor t(v.dtype, v.shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    in.push_back(t);
  }
  return in;
}

// Whole-model tolerance, derived: each conv/FC layer adds at most ~4 eps sqrt(R)
// relative error (R its reduction length); over the L layers of the model that is
// L * 4 eps sqrt(R_max), relative to the output scale.
inline double model_tolerance(const Graph& g, double scale) {
  int64_t layers = 0, r_max = 1;
  for (const Node& n : g.nodes) {
    if (n.op != "Conv" && n.op != "FusedConv" && n.op != "Gemm" && n.op != "MatMul") continue;
    ++layers;
    const Shape& w = g.value(n.inputs[1]).shape;
    const int64_t r = n.op == "Gemm" || n.op == "MatMul"
                          ? w[n.op == "Gemm" && n.attr_int("transB", 0) ? 1 : 0]
                          : shape_numel(w) / w[0];
    r_max = std::max(r_max, r);
  }
  return static_cast<double>(layers) * 4 * 1.19209290e-7 * std::sqrt(double(r_max)) *
         std::max(1.0, scale);
}

// One Linear layer as an f32 graph x -> y: a MatMul (w [K][N]) or a Gemm (w [K][N], [N][K]
// with trans_b), random N(0, 1) weights from rng; with `bias` a random [N] bias, Gemm's C
// or the Add an exporter writes after a MatMul (node "add"), then a Relu (node "relu") with
// `relu`. The layer's node is "fc".
inline Graph linear_layer_graph(const std::string& op, const Shape& x, const Shape& w, bool trans_b,
                                bool bias, bool relu, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  Graph g;
  g.inputs.push_back({"x", DType::kF32, x});
  std::vector<float> wv(static_cast<size_t>(shape_numel(w)));
  for (float& v : wv) v = dist(rng);
  g.initializers.emplace("w", Tensor::from_vector<float>(w, wv));
  Node n{"fc", op, {"x", "w"}, {"y0"}, {}};
  if (trans_b) n.attrs["transB"] = int64_t{1};
  g.nodes = {n};
  if (bias) {
    const int64_t cols = trans_b ? w[0] : w[1];
    std::vector<float> b(static_cast<size_t>(cols));
    for (float& v : b) v = dist(rng);
    g.initializers.emplace("b", Tensor::from_vector<float>({cols}, b));
    if (op == "Gemm") {
      g.nodes[0].inputs.push_back("b");
    } else {
      g.nodes[0].outputs[0] = "m";
      g.nodes.push_back({"add", "Add", {"m", "b"}, {"y0"}, {}});
    }
  }
  if (relu) g.nodes.push_back({"relu", "Relu", {"y0"}, {"y"}, {}});
  g.outputs = {relu ? "y" : "y0"};
  g.infer();
  return g;
}

// The graph's node ops, in order.
inline std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

// Largest |a - b| over the elements, and the largest |a|.
inline std::pair<double, double> worst_difference(const Tensor& a, const Tensor& b) {
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, std::fabs(a.get_as_double(i) - b.get_as_double(i)));
    scale = std::max(scale, std::fabs(a.get_as_double(i)));
  }
  return {worst, scale};
}

// How many elements of got lie farther from want than `unit` of the value (a 16-bit
// rounding: 1/128 for bf16) plus `of_scale` of the output's largest |want|.
inline int64_t count_far(const Tensor& want, const Tensor& got, double unit, double of_scale) {
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i)
    scale = std::max(scale, std::fabs(want.get_as_double(i)));
  int64_t far = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_as_double(i), g = got.get_as_double(i);
    far += !(std::fabs(w - g) <= unit * std::fabs(w) + of_scale * scale);
  }
  return far;
}

inline void expect_close(const Graph& g, const std::vector<Tensor>& got,
                         const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].shape(), want[o].shape()) << what;
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < want[o].numel(); ++i)
      scale = std::max(scale, std::fabs(want[o].get_as_double(i)));
    for (int64_t i = 0; i < want[o].numel(); ++i)
      worst = std::max(worst, std::fabs(got[o].get_as_double(i) - want[o].get_as_double(i)));
    EXPECT_LE(worst, model_tolerance(g, scale))
        << what << " output " << o << " (scale " << scale << ")";
  }
}

}  // namespace dlas
