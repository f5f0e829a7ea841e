// Helpers shared by the nn_*_test.cc files: build a one-node graph, infer it,
// run its reference kernel, and compare results with tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dlas/algo/reference.h"
#include "dlas/model/graph.h"

namespace dlas::nn_test {

inline constexpr const char* kNodeName = "nn_node";

// One node input: a runtime graph input, or (constant) an initializer. An undefined
// tensor is an absent optional input ("").
struct In {
  Tensor t;
  bool constant = false;
};
inline In param(Tensor t) { return {std::move(t), true}; }
inline In absent() { return {}; }

struct OpRun {
  Graph graph;
  std::vector<Tensor> outputs;
};

inline Graph make_graph(const std::string& op, const std::vector<In>& ins,
                        const std::map<std::string, Attribute>& attrs, int num_outputs) {
  Graph g;
  Node n;
  n.name = kNodeName;
  n.op = op;
  n.attrs = attrs;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].t.defined()) {
      n.inputs.push_back("");
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    if (ins[i].constant)
      g.initializers[name] = ins[i].t;
    else
      g.inputs.push_back({name, ins[i].t.dtype(), ins[i].t.shape()});
  }
  for (int i = 0; i < num_outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  g.outputs = n.outputs;
  g.nodes.push_back(n);
  return g;
}

// Builds, infers and runs one node named kNodeName with the reference kernel.
inline OpRun run_op(const std::string& op, const std::vector<In>& ins,
                    const std::map<std::string, Attribute>& attrs = {}, int num_outputs = 1) {
  OpRun r;
  r.graph = make_graph(op, ins, attrs, num_outputs);
  r.graph.infer();
  std::vector<Tensor> inputs;
  for (const In& in : ins) inputs.push_back(in.t);
  for (const auto& name : r.graph.nodes[0].outputs) {
    const ValueInfo& v = r.graph.value(name);
    r.outputs.emplace_back(v.dtype, v.shape);
  }
  reference::KernelFn fn = reference::find_kernel(op);
  if (!fn)
    ADD_FAILURE() << "no reference kernel for " << op;
  else
    fn(r.graph.nodes[0], inputs, r.outputs);
  return r;
}

inline Tensor run1(const std::string& op, const std::vector<In>& ins,
                   const std::map<std::string, Attribute>& attrs = {}) {
  return run_op(op, ins, attrs).outputs.at(0);
}

// Expects `f` to throw dlas::Error of `kind` whose message names the node and contains
// `fragment`.
inline void expect_node_error(const std::function<void()>& f, ErrorKind kind,
                              const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), kind) << msg;
    EXPECT_NE(msg.find(std::string("'") + kNodeName + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

// Expects inference of the one-node graph to fail as in expect_node_error.
inline void expect_infer_error(const std::string& op, const std::vector<In>& ins,
                               const std::map<std::string, Attribute>& attrs, ErrorKind kind,
                               const std::string& fragment, int num_outputs = 1) {
  expect_node_error([&] { make_graph(op, ins, attrs, num_outputs).infer(); }, kind, fragment);
}

inline Tensor random_tensor(Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// 0, 1, 2, ... (plus start).
inline Tensor iota(Shape shape, float start = 0.0f) {
  Tensor t(DType::kF32, std::move(shape));
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = start + static_cast<float>(i);
  return t;
}

inline Tensor f32(Shape shape, const std::vector<float>& v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
inline Tensor s64(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}

// Elementwise |got - want| <= tol * max(1, |want|); NaNs must match.
inline void expect_close(const Tensor& got, const std::vector<float>& want, double tol,
                         const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what << " " << got.describe();
  int bad = 0;
  for (int64_t i = 0; i < got.numel() && bad < 5; ++i) {
    const double g = got.get_as_double(i), w = want[static_cast<size_t>(i)];
    if (std::isnan(w) && std::isnan(g)) continue;
    if (!(std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w)))) {
      ADD_FAILURE() << what << " element " << i << ": got " << g << ", want " << w;
      ++bad;
    }
  }
}
inline void expect_close(const Tensor& got, const Tensor& want, double tol,
                         const std::string& what = "") {
  EXPECT_EQ(got.shape(), want.shape()) << what;
  expect_close(got, want.to_float_vector(), tol, what);
}

// Tolerance for an f32 sum of `n` products of values bounded by 1 in magnitude.
inline double sum_tolerance(int64_t n) { return 4.0 * static_cast<double>(n + 1) * 1.1920929e-7; }

}  // namespace dlas::nn_test
