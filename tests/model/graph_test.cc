#include <gtest/gtest.h>

#include "dlas/model/graph.h"
#include "dlas/model/op_schema.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

Node make_node(std::string name, std::string op, std::vector<std::string> in,
               std::vector<std::string> out) {
  Node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// Expects fn() to throw dlas::Error of `kind` whose message contains `needle`.
template <class F>
void expect_error(F fn, ErrorKind kind, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

Graph relu_add_graph() {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {2, 3}});
  g.initializers["b"] = Tensor::from_vector<float>({3}, {1, -2, 3});
  // Deliberately out of order: infer() must sort topologically.
  g.nodes.push_back(make_node("add", "Add", {"r", "b"}, {"y"}));
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, {"r"}));
  g.outputs = {"y"};
  return g;
}

TEST(GraphIr, TopologicalOrderAndInference) {
  Graph g = relu_add_graph();
  g.infer();
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "relu");
  EXPECT_EQ(g.value("y").shape, (Shape{2, 3}));
  EXPECT_EQ(g.value("y").dtype, DType::kF32);
  const std::string text = g.to_string();
  EXPECT_NE(text.find("relu = Relu(x)"), std::string::npos) << text;
  EXPECT_NE(text.find("y: f32[2, 3]"), std::string::npos) << text;
}

TEST(GraphIr, RunsOnReferenceExecutor) {
  Graph g = relu_add_graph();
  g.infer();
  ReferenceExecutor ex(g);
  auto out = ex.run({Tensor::from_vector<float>({2, 3}, {-1, 0, 1, 2, -3, 4})});
  EXPECT_EQ(out[0].to_float_vector(), (std::vector<float>{1, -2, 4, 3, -2, 7}));
  expect_error([&] { ex.run({Tensor(DType::kF32, {3, 2})}); }, ErrorKind::kInvalidInput, "'x'");
  expect_error([&] { ex.run({}); }, ErrorKind::kInvalidInput, "expects 1 input");
}

TEST(GraphIr, ValidationErrorsNameTheNode) {
  {
    Graph g = relu_add_graph();
    g.nodes[1].inputs = {"nope"};
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "node 'relu' (Relu)");
  }
  {
    Graph g = relu_add_graph();
    g.nodes[0].op = "Frobnicate";
    expect_error([&] { g.infer(); }, ErrorKind::kUnsupported, "node 'add' (Frobnicate)");
  }
  {
    Graph g = relu_add_graph();
    g.nodes[1].inputs = {"y"};  // relu reads add's output: a cycle
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "cycle");
  }
  {
    Graph g = relu_add_graph();
    g.nodes[1].name = "add";
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "two nodes are named 'add'");
  }
  {
    Graph g = relu_add_graph();
    g.initializers["b"] = Tensor::from_vector<float>({4}, {1, 2, 3, 4});  // not broadcastable
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "node 'add' (Add)");
  }
  {
    Graph g = relu_add_graph();
    g.nodes[1].inputs = {"x", "x"};  // Relu takes one input
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "node 'relu' (Relu): has 2 inputs");
  }
  {
    Graph g = relu_add_graph();
    g.inputs[0].shape = {-1, 3};
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "dynamic");
  }
  {
    Graph g = relu_add_graph();
    g.outputs = {"zz"};
    expect_error([&] { g.infer(); }, ErrorKind::kInvalidInput, "'zz'");
  }
}

TEST(GraphIr, AttributeTypeErrorsNameTheNode) {
  Node n = make_node("f", "Flatten", {"x"}, {"y"});
  n.attrs["axis"] = std::string("one");
  expect_error([&] { n.attr_int("axis", 1); }, ErrorKind::kInvalidInput, "node 'f' (Flatten)");
  n.attrs["axis"] = int64_t{2};
  EXPECT_EQ(n.attr_int("axis", 1), 2);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_FLOAT_EQ(n.attr_float("axis", 0.f), 2.f);  // ints widen to float
}

// The pattern PyTorch's exporter emits for x.view(x.size(0), -1):
// Shape -> Gather(0) -> Unsqueeze -> Concat([n, -1]) -> Reshape.
TEST(GraphPasses, FoldsExporterShapePattern) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {2, 3, 4}});
  g.initializers["idx0"] = Tensor::from_vector<int64_t>({}, {0});
  g.initializers["axes0"] = Tensor::from_vector<int64_t>({1}, {0});
  g.initializers["minus1"] = Tensor::from_vector<int64_t>({1}, {-1});
  g.initializers["unused"] = Tensor::from_vector<float>({1000}, std::vector<float>(1000, 1.f));
  g.nodes.push_back(make_node("shape", "Shape", {"x"}, {"s"}));
  Node gather = make_node("gather", "Gather", {"s", "idx0"}, {"n"});
  gather.attrs["axis"] = int64_t{0};
  g.nodes.push_back(gather);
  g.nodes.push_back(make_node("unsq", "Unsqueeze", {"n", "axes0"}, {"n1"}));
  Node cat = make_node("cat", "Concat", {"n1", "minus1"}, {"target"});
  cat.attrs["axis"] = int64_t{0};
  g.nodes.push_back(cat);
  g.nodes.push_back(make_node("reshape", "Reshape", {"x", "target"}, {"y"}));
  g.nodes.push_back(make_node("dead", "Relu", {"x"}, {"dead_out"}));
  g.outputs = {"y"};
  fold_constants(g);
  ASSERT_EQ(g.nodes.size(), 1u) << g.to_string();
  EXPECT_EQ(g.nodes[0].op, "Reshape");
  EXPECT_EQ(g.value("y").shape, (Shape{2, 12}));
  ASSERT_NE(g.constant("target"), nullptr);
  EXPECT_EQ(g.constant("target")->to_int64_vector(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(g.constant("unused"), nullptr);  // dead initializers removed
}

TEST(GraphPasses, ParamCountExcludesBatchNormStatistics) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 2, 3, 3}});
  for (const char* k : {"scale", "bias", "mean", "var"})
    g.initializers[k] = Tensor::from_vector<float>({2}, {1, 1});
  g.initializers["shape"] = Tensor::from_vector<int64_t>({2}, {1, -1});
  g.nodes.push_back(
      make_node("bn", "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}));
  g.nodes.push_back(make_node("flat", "Reshape", {"y", "shape"}, {"z"}));
  g.outputs = {"z"};
  g.infer();
  EXPECT_EQ(g.param_count(), 4);  // scale + bias; not mean/var; not the int64 shape
  EXPECT_EQ(g.macs(), 0);
}

}  // namespace
}  // namespace dlas
