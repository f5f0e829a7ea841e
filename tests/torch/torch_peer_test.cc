// Independent check of the reference runtime against libtorch: every zoo model, with
// non-trivial BatchNorm parameters, runs through ReferenceExecutor, through the libtorch
// peer in fp32 and through the peer in float64 (the truth); dlas must be within 1e-4 of the
// output scale of the truth. Single-op graphs at the edges (asymmetric pads, ceil-mode
// pooling, negative slice steps, ...) must agree with libtorch fp32 to 1e-5 of the scale.
#include "dlas/torch/torch_peer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "dlas/model/op_schema.h"
#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

// Portable deterministic uniform numbers (splitmix64), independent of the standard library.
class Uniform {
 public:
  explicit Uniform(uint64_t seed) : state_(seed) {}
  double operator()(double lo, double hi) {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  uint64_t state_;
};

Tensor random_tensor(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t(DType::kF32, shape);
  Uniform u(seed);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(u(lo, hi));
  return t;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(t.get_as_double(i)));
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = std::abs(a.get_as_double(i) - b.get_as_double(i));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// ---- zoo models ------------------------------------------------------------------------

Tensor vector_tensor(const std::vector<double>& v, Shape shape = {}) {
  std::vector<float> f(v.begin(), v.end());
  if (shape.empty()) shape = {static_cast<int64_t>(f.size())};
  return Tensor::from_vector<float>(shape, f);
}

Node make_node(std::string op, std::map<std::string, Attribute> attrs,
               std::vector<std::string> inputs = {}, std::vector<std::string> outputs = {}) {
  Node n;
  n.op = std::move(op);
  n.attrs = std::move(attrs);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// Gives every BatchNormalization of `graph` random affine parameters and running
// statistics derived from the batch statistics it sees when `calib` (the same model with a
// larger batch: the calibration population) runs on `calib_input`: mean + 0.2 std U(-1, 1)
// and var U(0.7, 1.4), like statistics gathered over a data set. The variance is floored at
// 0.1 x the layer's mean variance (channels constant on the population, such as ReLU-dead
// ones) and at 0.1 x the channel's mean square (a spread tiny next to the mean would
// amplify rounding noise, which no trained network does). So BN is far from the identity,
// yet no layer saturates, vanishes or turns ill-conditioned.
// The statistics come from one libtorch run of a probe graph in which each BatchNorm is
// spelled out (ReduceMean, Sub, Mul, Max, Sqrt, Div, ...) computing exactly those running
// statistics from its actual input and exposing them, so the probe computes what the final
// graph computes. The reference runtime under test plays no part. Returns the BN count.
int randomise_batch_norms(Graph& graph, const Graph& calib, const Tensor& calib_input,
                          uint64_t seed) {
  Uniform u(seed);
  Graph probe;
  probe.name = calib.name + "_bn_probe";
  probe.inputs = calib.inputs;
  probe.outputs = calib.outputs;
  probe.initializers = calib.initializers;
  std::vector<const Node*> bns;
  for (const Node& node : calib.nodes) {
    if (node.op != "BatchNormalization") {
      probe.nodes.push_back(node);
      continue;
    }
    bns.push_back(&node);
    const Shape& shape = calib.value(node.inputs[0]).shape;
    int64_t c = shape.at(1);
    std::vector<double> gamma(c), beta(c), shift(c), scale(c);
    for (int64_t i = 0; i < c; ++i) {
      gamma[i] = u(0.5, 1.5);
      beta[i] = u(-0.2, 0.2);
      shift[i] = 0.2 * u(-1.0, 1.0);
      scale[i] = u(0.7, 1.4);
    }
    graph.initializers[node.inputs[1]] = vector_tensor(gamma);
    graph.initializers[node.inputs[2]] = vector_tensor(beta);
    Shape bshape(shape.size(), 1);
    bshape[1] = c;
    std::vector<int64_t> axes, all_axes;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (d != 1) axes.push_back(d);
      all_axes.push_back(d);
    }
    std::string p = node.name + "/probe_";
    float eps = node.attr_float("epsilon", 1e-5f);
    probe.initializers[p + "gamma"] = vector_tensor(gamma, bshape);
    probe.initializers[p + "beta"] = vector_tensor(beta, bshape);
    probe.initializers[p + "shift"] = vector_tensor(shift, bshape);
    probe.initializers[p + "scale"] = vector_tensor(scale, bshape);
    probe.initializers[p + "eps"] = Tensor::scalar_f32(eps);
    probe.initializers[p + "tenth"] = Tensor::scalar_f32(0.1f);
    probe.initializers[p + "half"] = Tensor::scalar_f32(0.5f);
    std::map<std::string, Attribute> reduce = {{"axes", axes}, {"keepdims", int64_t{1}}};
    std::map<std::string, Attribute> reduce_all = {{"axes", all_axes}, {"keepdims", int64_t{1}}};
    const std::string& x = node.inputs[0];
    auto v = [&](const char* s) { return p + s; };
    for (Node n : {make_node("ReduceMean", reduce, {x}, {v("m")}),
                   make_node("Sub", {}, {x, v("m")}, {v("d")}),
                   make_node("Mul", {}, {v("d"), v("d")}, {v("d2")}),
                   make_node("ReduceMean", reduce, {v("d2")}, {v("var")}),
                   make_node("ReduceMean", reduce_all, {v("var")}, {v("var_avg")}),
                   make_node("Mul", {}, {v("var_avg"), v("tenth")}, {v("floor")}),
                   make_node("Mul", {}, {x, x}, {v("x2")}),
                   make_node("ReduceMean", reduce, {v("x2")}, {v("msq")}),
                   make_node("Mul", {}, {v("msq"), v("half")}, {v("floor_c")}),
                   make_node("Max", {}, {v("var"), v("floor"), v("floor_c")}, {v("vf")}),
                   make_node("Sqrt", {}, {v("vf")}, {v("sf")}),
                   make_node("Mul", {}, {v("sf"), v("shift")}, {v("dm")}),
                   make_node("Add", {}, {v("m"), v("dm")}, {v("running_mean")}),
                   make_node("Mul", {}, {v("vf"), v("scale")}, {v("running_var")}),
                   make_node("Sub", {}, {x, v("running_mean")}, {v("xc")}),
                   make_node("Add", {}, {v("running_var"), v("eps")}, {v("ve")}),
                   make_node("Sqrt", {}, {v("ve")}, {v("std")}),
                   make_node("Div", {}, {v("xc"), v("std")}, {v("n")}),
                   make_node("Mul", {}, {v("n"), v("gamma")}, {v("ng")}),
                   make_node("Add", {}, {v("ng"), v("beta")}, {node.outputs[0]})}) {
      n.name = p + n.op + std::to_string(probe.nodes.size());
      probe.nodes.push_back(n);
    }
    probe.outputs.push_back(v("running_mean"));
    probe.outputs.push_back(v("running_var"));
  }
  std::vector<Tensor> outs = run_with_libtorch(probe, {calib_input});
  for (size_t i = 0; i < bns.size(); ++i) {
    const Node& bn = *bns[i];
    int64_t c = calib.value(bn.inputs[0]).shape.at(1);
    for (int k = 1; k <= 4; ++k) {
      if (graph.initializers.count(bn.inputs[k]) == 0) {
        fail(ErrorKind::kInternal, "calibration graph does not match: ", bn.inputs[k]);
      }
    }
    graph.initializers[bn.inputs[3]] = outs[calib.outputs.size() + 2 * i].reshaped({c});
    graph.initializers[bn.inputs[4]] = outs[calib.outputs.size() + 2 * i + 1].reshaped({c});
  }
  return static_cast<int>(bns.size());
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_models()) names.push_back(e.name);
  return names;
}

class ZooVsLibtorch : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooVsLibtorch, OutputsMatch) {
  const std::string& name = GetParam();
  const ZooEntry* entry = find_zoo_model(name);
  ASSERT_NE(entry, nullptr);
  ZooOptions options;
  options.seed = 7;
  // ImageNet models at 64x64 (they pool globally), which keeps the naive reference
  // runtime fast. BatchNorm statistics come from a population of 8 images; the images
  // checked (2 for CIFAR models, 1 for ImageNet ones) are the first of them.
  if (entry->dataset != "cifar10") options.image_size = 64;
  options.batch = 8;
  Graph calib = build_zoo_model(name, options);
  Tensor population = random_tensor(calib.inputs[0].shape, 11);
  options.batch = entry->dataset == "cifar10" ? 2 : 1;
  Graph graph = build_zoo_model(name, options);
  ASSERT_EQ(graph.inputs.size(), 1u);
  Tensor x(DType::kF32, graph.inputs[0].shape);
  std::memcpy(x.raw(), population.raw(), x.nbytes());
  int bns = randomise_batch_norms(graph, calib, population, 13);
  EXPECT_GT(bns, 0) << name << " has no BatchNorm to perturb";

  // libtorch in fp32 is the peer: dlas must be within 1e-4 of the output scale of it.
  // libtorch computing in double precision is the truth both are also held to (the
  // reference kernels accumulate in double, so dlas is the closer of the two; with random
  // weights libtorch fp32 loses ~6e-5 of the scale on ResNet-50 to rounding).
  std::vector<Tensor> ref = ReferenceExecutor(graph).run({x});
  std::vector<Tensor> peer = run_with_libtorch(graph, {x});
  TorchPeerOptions exact;
  exact.float64 = true;
  std::vector<Tensor> truth = run_with_libtorch(graph, {x}, exact);
  ASSERT_EQ(ref.size(), peer.size());
  ASSERT_EQ(ref.size(), truth.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    double scale = max_abs(truth[i]);
    double err = max_abs_diff(ref[i], truth[i]);
    double peer_err = max_abs_diff(peer[i], truth[i]);
    double vs_peer = max_abs_diff(ref[i], peer[i]);
    std::printf(
        "[zoo-vs-libtorch] %-18s output %zu %s: scale %.4g, max abs err of dlas %.3g "
        "(%.3g of scale), of libtorch fp32 %.3g, dlas vs libtorch fp32 %.3g\n",
        name.c_str(), i, ref[i].describe().c_str(), scale, err, err / scale, peer_err, vs_peer);
    // A sane range: the calibrated BatchNorms keep logits O(1).
    EXPECT_GT(scale, 1e-2);
    EXPECT_LT(scale, 1e3);
    EXPECT_LE(err, 1e-4 * scale) << name << " output " << i << " vs libtorch float64";
    EXPECT_LE(peer_err, 1e-4 * scale) << name << " output " << i << ": libtorch fp32 vs float64";
    EXPECT_LE(vs_peer, 1e-4 * scale) << name << " output " << i << " vs libtorch fp32";
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, ZooVsLibtorch, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ---- single ops at the edges -----------------------------------------------------------

struct OpCase {
  std::string label;
  Node node;
  std::vector<Shape> input_shapes;          // runtime inputs (f32, random in [lo, hi])
  std::map<std::string, Tensor> constants;  // further inputs, by name
  double lo = -3.0, hi = 3.0;
};

// gtest prints the parameter in test names; the label says it all.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.label; }

OpCase op_case(std::string label, Node node, std::vector<Shape> input_shapes,
               std::map<std::string, Tensor> constants = {}) {
  return OpCase{std::move(label), std::move(node), std::move(input_shapes), std::move(constants)};
}

// A case whose runtime inputs lie in [lo, hi] (the domain of Acosh, Atanh, ...).
OpCase in_range(OpCase c, double lo, double hi) {
  c.lo = lo;
  c.hi = hi;
  return c;
}

Graph single_op_graph(const OpCase& c) {
  Graph g;
  g.name = c.label;
  Node node = c.node;
  node.name = "n0";
  std::vector<std::string> inputs;
  for (size_t i = 0; i < c.input_shapes.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    g.inputs.push_back({name, DType::kF32, c.input_shapes[i]});
    inputs.push_back(name);
  }
  for (const std::string& in : node.inputs) inputs.push_back(in);
  node.inputs = inputs;
  g.initializers = c.constants;
  if (node.outputs.empty()) node.outputs = {"y"};
  for (const std::string& out : node.outputs)
    if (!out.empty()) g.outputs.push_back(out);
  g.nodes.push_back(node);
  g.infer();
  return g;
}

Tensor ints(std::vector<int64_t> v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

Tensor floats(std::vector<float> v) {
  return Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
}

Node resize_node(const std::string& mode, const std::string& transform,
                 std::vector<std::string> inputs, std::map<std::string, Attribute> extra = {}) {
  extra["mode"] = mode;
  extra["coordinate_transformation_mode"] = transform;
  return make_node("Resize", std::move(extra), std::move(inputs));
}

std::vector<OpCase> edge_cases() {
  using V = std::vector<int64_t>;
  std::vector<OpCase> cs;
  cs.push_back(op_case("conv_asymmetric_pads_groups_dilation",
                       make_node("Conv",
                                 {{"pads", V{0, 1, 2, 1}},
                                  {"strides", V{2, 1}},
                                  {"dilations", V{1, 2}},
                                  {"group", int64_t{2}}},
                                 {"w", "b"}),
                       {{2, 4, 9, 8}},
                       {{"w", random_tensor({6, 2, 3, 3}, 3)}, {"b", random_tensor({6}, 4)}}));
  cs.push_back(op_case(
      "conv_same_upper",
      make_node("Conv", {{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}}, {"w"}),
      {{1, 3, 8, 7}}, {{"w", random_tensor({4, 3, 4, 4}, 5)}}));
  cs.push_back(op_case(
      "conv_transpose_asymmetric",
      make_node("ConvTranspose",
                {{"pads", V{1, 0, 0, 1}}, {"strides", V{2, 3}}, {"output_padding", V{1, 0}}},
                {"w", "b"}),
      {{1, 4, 5, 4}}, {{"w", random_tensor({4, 3, 3, 3}, 6)}, {"b", random_tensor({3}, 7)}}));
  cs.push_back(op_case("maxpool_ceil_pads",
                       make_node("MaxPool", {{"kernel_shape", V{3, 3}},
                                             {"strides", V{2, 2}},
                                             {"pads", V{1, 1, 1, 1}},
                                             {"ceil_mode", int64_t{1}}}),
                       {{1, 2, 10, 9}}));
  cs.push_back(op_case(
      "maxpool_asymmetric_dilated",
      make_node("MaxPool",
                {{"kernel_shape", V{2, 3}}, {"pads", V{0, 2, 1, 0}}, {"dilations", V{2, 1}}}),
      {{1, 2, 7, 6}}));
  cs.push_back(op_case("avgpool_exclude_pad_ceil",
                       make_node("AveragePool", {{"kernel_shape", V{3, 3}},
                                                 {"strides", V{2, 2}},
                                                 {"pads", V{1, 1, 1, 1}},
                                                 {"ceil_mode", int64_t{1}}}),
                       {{1, 3, 8, 9}}));
  cs.push_back(op_case("avgpool_include_pad",
                       make_node("AveragePool", {{"kernel_shape", V{3, 2}},
                                                 {"strides", V{1, 2}},
                                                 {"pads", V{1, 0, 1, 1}},
                                                 {"count_include_pad", int64_t{1}}}),
                       {{1, 2, 6, 7}}));
  cs.push_back(op_case(
      "gemm_transposed_scaled",
      make_node("Gemm",
                {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}},
                {"b", "c"}),
      {{7, 3}}, {{"b", random_tensor({5, 7}, 8)}, {"c", random_tensor({1, 5}, 9)}}));
  cs.push_back(
      op_case("matmul_batched_broadcast", make_node("MatMul", {}), {{2, 1, 3, 4}, {3, 4, 5}}));
  cs.push_back(op_case(
      "batchnorm",
      make_node("BatchNormalization", {{"epsilon", 1e-3f}}, {"scale", "bias", "mean", "var"}),
      {{2, 3, 4, 5}},
      {{"scale", random_tensor({3}, 10)},
       {"bias", random_tensor({3}, 11)},
       {"mean", random_tensor({3}, 12)},
       {"var", random_tensor({3}, 13, 0.5, 2.0)}}));
  cs.push_back(op_case("softmax_axis1", make_node("Softmax", {{"axis", int64_t{1}}}), {{2, 5, 3}}));
  cs.push_back(op_case("hardswish", make_node("HardSwish", {}), {{3, 17}}));
  cs.push_back(op_case("hardsigmoid", make_node("HardSigmoid", {{"alpha", 0.3f}}), {{3, 17}}));
  cs.push_back(op_case("add_broadcast", make_node("Add", {}), {{2, 3, 1, 5}, {4, 1}}));
  cs.push_back(op_case("div_broadcast", make_node("Div", {}, {"d"}), {{2, 3}},
                       {{"d", random_tensor({3}, 14, 0.5, 2.0)}}));
  cs.push_back(op_case("slice_negative_step",
                       make_node("Slice", {}, {"starts", "ends", "axes", "steps"}), {{4, 9, 6}},
                       {{"starts", ints({-1, 1})},
                        {"ends", ints({std::numeric_limits<int64_t>::min(), 100})},
                        {"axes", ints({1, 2})},
                        {"steps", ints({-2, 2})}}));
  cs.push_back(op_case("pad_reflect",
                       make_node("Pad", {{"mode", std::string("reflect")}}, {"pads"}),
                       {{1, 2, 5, 6}}, {{"pads", ints({0, 0, 2, 1, 0, 0, 1, 3})}}));
  cs.push_back(op_case("pad_constant_negative", make_node("Pad", {}, {"pads"}), {{2, 5, 6}},
                       {{"pads", ints({0, -1, 2, 1, 0, -2})}}));
  cs.push_back(op_case("reduce_mean_keepdims", make_node("ReduceMean", {{"axes", V{1, -1}}}),
                       {{2, 3, 4, 5}}));
  cs.push_back(op_case("gather_negative_indices",
                       make_node("Gather", {{"axis", int64_t{1}}}, {"i"}), {{3, 5, 2}},
                       {{"i", Tensor::from_vector<int64_t>({2, 2}, {0, -1, 3, -5})}}));
  cs.push_back(op_case("transpose", make_node("Transpose", {{"perm", V{2, 0, 1}}}), {{2, 3, 4}}));
  cs.push_back(
      op_case("flatten_axis2", make_node("Flatten", {{"axis", int64_t{2}}}), {{2, 3, 4, 5}}));
  // Index selection: ties (in constants) must resolve as ONNX says.
  cs.push_back(op_case("argmax_axis1_no_keepdims",
                       make_node("ArgMax", {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}),
                       {{3, 5, 4}}));
  cs.push_back(op_case(
      "argmin_ties_select_last",
      make_node("ArgMin", {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}, {"t"}), {},
      {{"t", Tensor::from_vector<float>({2, 4}, {1, 0, 0, 2, 5, 5, 5, 5})}}));
  cs.push_back(op_case("hardmax_axis1", make_node("Hardmax", {{"axis", int64_t{1}}}), {{2, 5, 3}}));
  cs.push_back(op_case("topk_largest_axis1",
                       make_node("TopK", {{"axis", int64_t{1}}}, {"k"}, {"values", "indices"}),
                       {{2, 6, 3}}, {{"k", ints({3})}}));
  cs.push_back(
      op_case("topk_smallest_ties",
              make_node("TopK", {{"largest", int64_t{0}}}, {"t", "k"}, {"values", "indices"}), {},
              {{"t", Tensor::from_vector<float>({2, 5}, {3, 1, 3, 1, 2, 4, 4, 4, 0, 4})},
               {"k", ints({4})}}));
  // Normalisations.
  cs.push_back(
      op_case("instancenorm", make_node("InstanceNormalization", {{"epsilon", 1e-3f}}, {"s", "b"}),
              {{2, 3, 4, 5}}, {{"s", random_tensor({3}, 20)}, {"b", random_tensor({3}, 21)}}));
  cs.push_back(op_case("layernorm_axis1_with_statistics",
                       make_node("LayerNormalization", {{"axis", int64_t{1}}}, {"s", "b"},
                                 {"y", "mean", "inv_std_dev"}),
                       {{2, 3, 4}},
                       {{"s", random_tensor({3, 4}, 22)}, {"b", random_tensor({4}, 23)}}));
  cs.push_back(
      op_case("mvn_default_axes", make_node("MeanVarianceNormalization", {}), {{2, 3, 4, 5}}));
  // Data movement.
  cs.push_back(op_case("depthtospace_dcr", make_node("DepthToSpace", {{"blocksize", int64_t{2}}}),
                       {{2, 8, 2, 3}}));
  cs.push_back(
      op_case("depthtospace_crd",
              make_node("DepthToSpace", {{"blocksize", int64_t{3}}, {"mode", std::string("CRD")}}),
              {{1, 18, 2, 2}}));
  cs.push_back(op_case("spacetodepth", make_node("SpaceToDepth", {{"blocksize", int64_t{2}}}),
                       {{2, 3, 4, 6}}));
  cs.push_back(op_case(
      "gather_elements_negative", make_node("GatherElements", {{"axis", int64_t{1}}}, {"i"}),
      {{2, 4, 3}},
      {{"i", Tensor::from_vector<int64_t>({2, 2, 3}, {0, -1, 3, 2, -4, 1, 3, 3, 0, -2, 1, 2})}}));
  cs.push_back(op_case(
      "scatter_nd_rows", make_node("ScatterND", {}, {"i", "u"}), {{4, 3, 2}},
      {{"i", Tensor::from_vector<int64_t>({2, 1}, {3, -4})}, {"u", random_tensor({2, 3, 2}, 25)}}));
  cs.push_back(op_case("einsum_qk",
                       make_node("Einsum", {{"equation", std::string("bid, bjd -> bij")}}),
                       {{2, 3, 4}, {2, 5, 4}}));
  cs.push_back(op_case("less_to_bool", make_node("Less", {}, {"t"}), {{2, 5}},
                       {{"t", random_tensor({5}, 26)}}));
  Tensor cond(DType::kBool, {2, 1});
  static_cast<uint8_t*>(cond.raw())[1] = 1;
  cs.push_back(
      op_case("where_broadcast", make_node("Where", {}, {"c", "a", "b"}), {},
              {{"c", cond}, {"a", random_tensor({3}, 28)}, {"b", random_tensor({2, 3}, 27)}}));
  cs.push_back(op_case("eyelike_k1", make_node("EyeLike", {{"k", int64_t{1}}}), {{3, 5}}));
  cs.push_back(op_case("castlike_f16", make_node("CastLike", {}, {"like"}), {{2, 7}},
                       {{"like", Tensor(DType::kF16, {1})}}));
  // Elementwise.
  cs.push_back(op_case("mod_fmod_float", make_node("Mod", {{"fmod", int64_t{1}}}, {"d"}), {{2, 6}},
                       {{"d", random_tensor({6}, 24, 0.5, 2.0)}}));
  cs.push_back(op_case("mod_integer_signs", make_node("Mod", {}, {"a", "b"}), {},
                       {{"a", Tensor::from_vector<int64_t>({6}, {-7, 7, -7, 7, 0, 9})},
                        {"b", Tensor::from_vector<int64_t>({6}, {3, 3, -3, -3, 5, 9})}}));
  cs.push_back(
      op_case("shrink_biased", make_node("Shrink", {{"lambd", 1.0f}, {"bias", 0.25f}}), {{4, 9}}));
  cs.push_back(op_case("shrink_soft", make_node("Shrink", {{"bias", 0.5f}}), {{4, 9}}));
  cs.push_back(op_case("sinh", make_node("Sinh", {}), {{3, 7}}));
  cs.push_back(op_case("cosh", make_node("Cosh", {}), {{3, 7}}));
  cs.push_back(op_case("asinh", make_node("Asinh", {}), {{3, 7}}));
  cs.push_back(in_range(op_case("asin", make_node("Asin", {}), {{3, 7}}), -0.99, 0.99));
  cs.push_back(in_range(op_case("acos", make_node("Acos", {}), {{3, 7}}), -0.99, 0.99));
  cs.push_back(in_range(op_case("atanh", make_node("Atanh", {}), {{3, 7}}), -0.99, 0.99));
  cs.push_back(in_range(op_case("acosh", make_node("Acosh", {}), {{3, 7}}), 1.0, 4.0));
  // Resize: the ATen upsample kernels where they have the ONNX mode, the generic path else.
  cs.push_back(op_case(
      "resize_nearest_asymmetric_floor",
      resize_node("nearest", "asymmetric", {"", "s"}, {{"nearest_mode", std::string("floor")}}),
      {{1, 2, 3, 4}}, {{"s", floats({1, 1, 2, 3})}}));
  cs.push_back(op_case("resize_nearest_half_pixel_round_prefer_ceil",
                       resize_node("nearest", "half_pixel", {"", "s"},
                                   {{"nearest_mode", std::string("round_prefer_ceil")}}),
                       {{1, 2, 3, 4}}, {{"s", floats({1, 1, 1.5f, 2.5f})}}));
  cs.push_back(op_case("resize_nearest_half_pixel_sizes",
                       resize_node("nearest", "half_pixel", {"", "", "z"}), {{1, 2, 9, 4}},
                       {{"z", ints({1, 2, 5, 7})}}));
  cs.push_back(op_case(
      "resize_nearest_5d_asymmetric_floor",
      resize_node("nearest", "asymmetric", {"", "s"}, {{"nearest_mode", std::string("floor")}}),
      {{1, 1, 2, 3, 2}}, {{"s", floats({1, 1, 2, 1, 3})}}));
  cs.push_back(op_case("resize_linear_half_pixel_down",
                       resize_node("linear", "half_pixel", {"", "", "z"}), {{1, 2, 9, 11}},
                       {{"z", ints({1, 2, 7, 5})}}));
  cs.push_back(op_case("resize_linear_align_corners_up",
                       resize_node("linear", "align_corners", {"", "s"}), {{2, 1, 3, 4}},
                       {{"s", floats({1, 1, 2, 2})}}));
  cs.push_back(op_case("resize_linear_1d_half_pixel",
                       resize_node("linear", "half_pixel", {"", "s"}), {{1, 3, 5}},
                       {{"s", floats({1, 1, 2.5f})}}));
  cs.push_back(op_case("resize_linear_pytorch_half_pixel_length1",
                       resize_node("linear", "pytorch_half_pixel", {"", "", "z"}), {{1, 1, 4, 4}},
                       {{"z", ints({1, 1, 3, 1})}}));
  cs.push_back(op_case("resize_linear_asymmetric", resize_node("linear", "asymmetric", {"", "s"}),
                       {{1, 2, 4, 5}}, {{"s", floats({1, 1, 1.5f, 0.6f})}}));
  cs.push_back(op_case("resize_cubic_half_pixel", resize_node("cubic", "half_pixel", {"", "s"}),
                       {{1, 2, 4, 5}}, {{"s", floats({1, 1, 2, 1.6f})}}));
  cs.push_back(op_case("resize_cubic_align_corners",
                       resize_node("cubic", "align_corners", {"", "", "z"}), {{1, 1, 4, 5}},
                       {{"z", ints({1, 1, 7, 3})}}));
  cs.push_back(op_case("resize_cubic_exclude_outside",
                       resize_node("cubic", "half_pixel", {"", "s"},
                                   {{"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t{1}}}),
                       {{1, 2, 4, 4}}, {{"s", floats({1, 1, 1.5f, 0.5f})}}));
  cs.push_back(
      op_case("resize_tf_crop_and_resize_extrapolation",
              resize_node("linear", "tf_crop_and_resize", {"roi", "", "z"},
                          {{"extrapolation_value", 7.0f}}),
              {{1, 1, 5, 6}},
              {{"roi", floats({0, 0, 0.2f, 0.5f, 1, 1, 0.9f, 1.3f})}, {"z", ints({1, 1, 4, 3})}}));
  cs.push_back(op_case("resize_tf_half_pixel_for_nn",
                       resize_node("nearest", "tf_half_pixel_for_nn", {"", "", "z"}),
                       {{1, 1, 6, 4}}, {{"z", ints({1, 1, 4, 3})}}));
  return cs;
}

class OpVsLibtorch : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpVsLibtorch, OutputsMatch) {
  const OpCase& c = GetParam();
  Graph g = single_op_graph(c);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    inputs.push_back(random_tensor(g.inputs[i].shape, 100 + i, c.lo, c.hi));
  }
  std::vector<Tensor> ref = ReferenceExecutor(g).run(inputs);
  std::vector<Tensor> peer = run_with_libtorch(g, inputs);
  ASSERT_EQ(ref.size(), g.outputs.size());
  ASSERT_EQ(peer.size(), g.outputs.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    double scale = std::max(max_abs(ref[i]), 1e-30);
    EXPECT_LE(max_abs_diff(ref[i], peer[i]), 1e-5 * scale) << c.label << " output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(EdgeCases, OpVsLibtorch, ::testing::ValuesIn(edge_cases()),
                         [](const auto& info) { return info.param.label; });

// ---- the peer's own contract -----------------------------------------------------------

TEST(TorchPeer, UnmappedOpIsUnsupportedNamingTheNode) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {2}});
  Node n = make_node("Relu", {});
  n.name = "act";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.nodes.push_back(n);
  g.outputs = {"y"};
  g.infer();
  g.nodes[0].op = "NoSuchOp";
  std::string why;
  EXPECT_FALSE(libtorch_supports(g, &why));
  EXPECT_NE(why.find("'act'"), std::string::npos) << why;
  try {
    run_with_libtorch(g, {random_tensor({2}, 1)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("'act'"), std::string::npos) << e.what();
  }
}

TEST(TorchPeer, WrongInputShapeIsInvalidInput) {
  Graph g = build_zoo_model("resnet18-cifar");
  LibtorchRunner runner(g);
  try {
    runner.run({random_tensor({1, 3, 16, 16}, 1)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
  }
}

TEST(TorchPeer, RunnerIsRepeatable) {
  Graph g = build_zoo_model("mobilenetv2-cifar");
  LibtorchRunner runner(g, TorchPeerOptions{1});
  Tensor x = random_tensor(g.inputs[0].shape, 3);
  std::vector<Tensor> a = runner.run({x});
  std::vector<Tensor> b = runner.run({x});
  EXPECT_EQ(max_abs_diff(a[0], b[0]), 0.0);
}

// dlas's ChannelAffine (fuse_channel_affine on Concat -> BatchNormalization -> Clip) runs on
// libtorch as the reference runtime computes it.
TEST(TorchPeer, ChannelAffineMatchesTheReference) {
  Graph g;
  g.inputs.push_back({"a", DType::kF32, {2, 3, 5, 5}});
  g.inputs.push_back({"b", DType::kF32, {2, 4, 5, 5}});
  g.initializers.emplace("gamma", random_tensor({7}, 1, 0.5, 1.5));
  g.initializers.emplace("beta", random_tensor({7}, 2));
  g.initializers.emplace("mean", random_tensor({7}, 3));
  g.initializers.emplace("var", random_tensor({7}, 4, 0.5, 2.0));
  g.initializers.emplace("lo", Tensor::scalar_f32(-0.25f));
  g.initializers.emplace("hi", Tensor::scalar_f32(0.5f));
  Node cat{"cat", "Concat", {"a", "b"}, {"ab"}, {}};
  cat.attrs["axis"] = int64_t{1};
  g.nodes.push_back(cat);
  g.nodes.push_back(
      {"bn", "BatchNormalization", {"ab", "gamma", "beta", "mean", "var"}, {"n"}, {}});
  g.nodes.push_back({"clip", "Clip", {"n", "lo", "hi"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  ASSERT_EQ(fuse_channel_affine(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  const std::vector<Tensor> in = {random_tensor({2, 3, 5, 5}, 5, -3, 3),
                                  random_tensor({2, 4, 5, 5}, 6, -3, 3)};
  const Tensor want = ReferenceExecutor(g).run(in)[0];
  LibtorchRunner runner(g);
  EXPECT_LE(max_abs_diff(runner.run(in)[0], want), 1e-6);
}

// The peer is an oracle for the whole op table: a new dlas op needs its libtorch mapping.
TEST(TorchPeer, MapsEveryDlasOp) {
  const std::vector<std::string>& mapped = libtorch_mapped_ops();
  // The quantized ops are checked against dlas's integer oracle (reference_qconv) and the
  // ONNX node conformance cases instead; the libtorch peer is the fp32 reference and does
  // not map them. Every other op must be mapped.
  const std::set<std::string> quantized = {"QuantizeLinear",
                                           "DequantizeLinear",
                                           "DynamicQuantizeLinear",
                                           "QLinearConv",
                                           "ConvInteger",
                                           "QLinearMatMul",
                                           "MatMulInteger",
                                           "QFusedConv",
                                           "QLookup",
                                           "QChannelScale",
                                           "QFc"};
  for (const OpSchema& schema : all_op_schemas()) {
    if (quantized.count(schema.op)) continue;
    EXPECT_TRUE(std::binary_search(mapped.begin(), mapped.end(), std::string(schema.op)))
        << schema.op << " is not mapped in src/torch/peer/torch_peer.cc";
  }
}

TEST(TorchPeer, MapsTheZooOps) {
  for (const std::string& name : zoo_names()) {
    std::string why;
    EXPECT_TRUE(libtorch_supports(build_zoo_model(name), &why)) << name << ": " << why;
  }
}

}  // namespace
}  // namespace dlas
