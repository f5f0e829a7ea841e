// The one-node harness shared by the op tests in tests/algo/: build a graph of one node
// (named kNodeName) from inputs, runtime or constant, and attributes; infer it; run the
// op's reference kernel on preallocated outputs; expect errors that name the node; and
// compare results exactly or within a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"
#include "dlas/system/reference.h"

namespace dlas::op_test {

inline constexpr const char* kNodeName = "n0";

using Attrs = std::map<std::string, Attribute>;

// One node input: a runtime graph input, or (constant) an initializer. An undefined tensor
// is an absent optional input (""). `{t}` is a runtime input too.
struct In {
  Tensor t;
  bool constant = false;
};
inline In rt(Tensor t) { return {std::move(t), false}; }
inline In cst(Tensor t) { return {std::move(t), true}; }
inline In absent() { return {}; }

// The graph: the node, its runtime inputs, its constant inputs as initializers, and its
// outputs out0, out1, ... as graph outputs. Not inferred.
inline Graph one_node_graph(const std::string& op, const std::vector<In>& ins,
                            const Attrs& attrs = {}, int num_outputs = 1) {
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
  for (int k = 0; k < num_outputs; ++k) n.outputs.push_back("out" + std::to_string(k));
  g.outputs = n.outputs;
  g.nodes.push_back(n);
  return g;
}

struct OpRun {
  Graph graph;                  // inferred
  std::vector<Tensor> outputs;  // as the reference kernel wrote them
};

// Builds and infers the one-node graph, then runs the reference kernel on outputs
// preallocated (zero-filled) with the inferred dtypes and shapes.
inline OpRun run_op(const std::string& op, const std::vector<In>& ins, const Attrs& attrs = {},
                    int num_outputs = 1) {
  OpRun r;
  r.graph = one_node_graph(op, ins, attrs, num_outputs);
  r.graph.infer();
  const reference::KernelFn fn = reference::find_kernel(op);
  if (!fn) throw std::runtime_error("no reference kernel for " + op);
  std::vector<Tensor> inputs;
  for (const In& in : ins) inputs.push_back(in.t);
  for (const std::string& name : r.graph.nodes[0].outputs) {
    const ValueInfo& v = r.graph.value(name);
    r.outputs.emplace_back(v.dtype, v.shape);
  }
  fn(r.graph.nodes[0], inputs, r.outputs);
  return r;
}

inline std::vector<Tensor> run(const std::string& op, const std::vector<In>& ins,
                               const Attrs& attrs = {}, int num_outputs = 1) {
  return run_op(op, ins, attrs, num_outputs).outputs;
}

inline Tensor run1(const std::string& op, const std::vector<In>& ins, const Attrs& attrs = {}) {
  return run_op(op, ins, attrs).outputs.at(0);
}

// Expects `f` to throw dlas::Error of `kind` whose message names the node ("node 'n0'
// (<op>)") and contains `fragment`.
inline void expect_node_error(const std::function<void()>& f, const std::string& op, ErrorKind kind,
                              const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << op << ": expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), kind) << msg;
    EXPECT_NE(msg.find(std::string("node '") + kNodeName + "' (" + op + ")"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

// Expects inference or the kernel (run_op) to fail as in expect_node_error.
inline void expect_error(const std::string& op, const std::vector<In>& ins, const Attrs& attrs,
                         ErrorKind kind, const std::string& fragment, int num_outputs = 1) {
  expect_node_error([&] { run_op(op, ins, attrs, num_outputs); }, op, kind, fragment);
}

// Expects inference alone to fail as in expect_node_error.
inline void expect_infer_error(const std::string& op, const std::vector<In>& ins,
                               const Attrs& attrs, ErrorKind kind, const std::string& fragment,
                               int num_outputs = 1) {
  expect_node_error([&] { one_node_graph(op, ins, attrs, num_outputs).infer(); }, op, kind,
                    fragment);
}

// --- tensors --------------------------------------------------------------------------

inline Tensor f32(Shape shape, const std::vector<float>& v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
inline Tensor s32(Shape shape, const std::vector<int32_t>& v) {
  return Tensor::from_vector<int32_t>(std::move(shape), v);
}
inline Tensor s64(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}

// start, start + 1, start + 2, ... (f32).
inline Tensor iota(Shape shape, float start = 0.0f) {
  Tensor t(DType::kF32, std::move(shape));
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = start + static_cast<float>(i);
  return t;
}

inline Tensor random_tensor(Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// --- checks ---------------------------------------------------------------------------

// dtype, shape and every element exactly.
template <class T>
void expect_values(const Tensor& t, const Shape& shape, const std::vector<T>& want) {
  ASSERT_EQ(t.dtype(), DTypeOf<T>::value);
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.data<T>()[i], want[i]) << "element " << i;
}
inline void expect_s64(const Tensor& t, const Shape& shape, const std::vector<int64_t>& want) {
  expect_values<int64_t>(t, shape, want);
}

// An f32 tensor of `shape` whose elements are within tol * max(1, |want|) (tol 0: exactly
// equal); a NaN wants a NaN and an infinity wants the same infinity.
inline void expect_f32(const Tensor& t, const Shape& shape, const std::vector<float>& want,
                       float tol = 0.0f) {
  ASSERT_EQ(t.dtype(), DType::kF32);
  ASSERT_EQ(t.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const float got = t.data<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got, want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got, want[i], tol * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
    }
  }
}

// Elementwise |got - want| <= tol * max(1, |want|) for any float dtype; NaNs must match.
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

}  // namespace dlas::op_test
