// fuse_quantized_lookup: a DQ -> pointwise float ops -> Q chain (the SiLU between int8
// convs) becomes one QLookup byte table, a DQ -> pointwise chain read by other ops one float
// table, each reproducing the chain bit for bit on the reference runtime; functions of two
// bytes stay; and the lookup kernels of every path equal the scalar ones.
// fuse_channel_scale_quantize: an SE gate's Mul and the QuantizeLinear after it become one
// QChannelScale, bit for bit on the reference runtime and in the compiled plan.  build/dlas_tests
// --gtest_filter='QuantizedLookup*'
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "dlas/algo/eltwise.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/executor.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

// x (u8, every byte value) -> DQ -> Sigmoid -> Mul(a, sigmoid) -> Q (s8) -> y.
Graph silu_chain() {
  Graph g;
  g.inputs.push_back({"x", DType::kU8, {1, 4, 8, 8}});
  g.initializers.emplace("s", Tensor::scalar_f32(0.05f));
  g.initializers.emplace("z", Tensor::from_vector<uint8_t>({}, {128}));
  g.initializers.emplace("s2", Tensor::scalar_f32(0.021f));
  g.initializers.emplace("z2", Tensor::from_vector<int8_t>({}, {-7}));
  g.nodes.push_back({"dq", "DequantizeLinear", {"x", "s", "z"}, {"a"}, {}});
  g.nodes.push_back({"sig", "Sigmoid", {"a"}, {"b"}, {}});
  g.nodes.push_back({"mul", "Mul", {"a", "b"}, {"c"}, {}});
  g.nodes.push_back({"q", "QuantizeLinear", {"c", "s2", "z2"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

Tensor every_byte() {
  Tensor x(DType::kU8, {1, 4, 8, 8});
  for (int i = 0; i < 256; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(255 - i);
  return x;
}

TEST(QuantizedLookup, SiluChainBecomesOneTableEqualToTheChain) {
  Graph chain = silu_chain();
  Graph fused = chain;
  EXPECT_EQ(fuse_quantized_lookup(fused), 1);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op, "QLookup");
  EXPECT_EQ(fused.value("y").dtype, DType::kS8);
  const Tensor want = ReferenceExecutor(chain).run({every_byte()})[0];
  const Tensor got = ReferenceExecutor(fused).run({every_byte()})[0];
  int differ = 0;
  for (int i = 0; i < 256; ++i) differ += want.data<int8_t>()[i] != got.data<int8_t>()[i];
  EXPECT_EQ(differ, 0);
  // The table is not the identity: the chain did something.
  int moved = 0;
  for (int i = 0; i < 256; ++i) moved += static_cast<uint8_t>(got.data<int8_t>()[i]) != 255 - i;
  EXPECT_GT(moved, 128);
}

// Every output of `before` and `after` on the reference runtime, for every byte of each input.
void expect_same_outputs(const Graph& before, const Graph& after) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < before.inputs.size(); ++i) {
    Tensor x = every_byte();
    for (int j = 0; j < 256; ++j) x.data<uint8_t>()[j] = static_cast<uint8_t>(j * (2 * i + 1));
    in.push_back(x);
  }
  const std::vector<Tensor> want = ReferenceExecutor(before).run(in);
  const std::vector<Tensor> got = ReferenceExecutor(after).run(in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].dtype(), got[o].dtype());
    ASSERT_EQ(want[o].nbytes(), got[o].nbytes());
    EXPECT_EQ(std::memcmp(want[o].raw(), got[o].raw(), want[o].nbytes()), 0) << "output " << o;
  }
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

// The SiLU's Sigmoid is read elsewhere: the chain to the Q is no byte table, but the Sigmoid
// (one DQ'd input, any readers) becomes a float table.
TEST(QuantizedLookup, ChainWithAnotherReaderKeepsItsQuantize) {
  Graph g = silu_chain();
  g.nodes.push_back({"keep", "GlobalAveragePool", {"b"}, {"b2"}, {}});  // not pointwise
  g.outputs.push_back("b2");
  g.infer();
  Graph before = g;
  EXPECT_EQ(fuse_quantized_lookup(g), 1);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"DequantizeLinear", "QLookup", "Mul",
                                                 "QuantizeLinear", "GlobalAveragePool"}));
  EXPECT_EQ(g.value("b").dtype, DType::kF32);
  expect_same_outputs(before, g);
}

// An SE block's SiLU: its result read by a pool and by a product with another value: the
// whole DQ -> Sigmoid -> Mul becomes one float table.
TEST(QuantizedLookup, PooledSiluBecomesOneFloatTable) {
  Graph g = silu_chain();
  g.nodes.pop_back();  // no Q
  g.outputs.clear();
  g.nodes.push_back({"gap", "GlobalAveragePool", {"c"}, {"pooled"}, {}});
  g.nodes.push_back({"gate", "Sigmoid", {"pooled"}, {"gated"}, {}});
  g.nodes.push_back({"scale", "Mul", {"c", "gated"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  Graph before = g;
  EXPECT_EQ(fuse_quantized_lookup(g), 1);
  EXPECT_EQ(ops_of(g),
            (std::vector<std::string>{"QLookup", "GlobalAveragePool", "Sigmoid", "Mul"}));
  expect_same_outputs(before, g);
}

// A function of two bytes has no 256-entry table: the Mul and the Q stay (only the Sigmoid,
// a function of one of them, becomes a float table).
TEST(QuantizedLookup, ChainOfTwoDequantizedInputsKeepsItsProduct) {
  Graph g = silu_chain();
  g.inputs.push_back({"x2", DType::kU8, {1, 4, 8, 8}});
  g.nodes.insert(g.nodes.begin(), Node{"dq2", "DequantizeLinear", {"x2", "s", "z"}, {"a2"}, {}});
  for (Node& n : g.nodes)
    if (n.name == "mul") n.inputs[1] = "a2";
  g.nodes.push_back({"sig2", "Sigmoid", {"a"}, {"b3"}, {}});
  g.outputs.push_back("b3");
  g.infer();
  Graph before = g;
  EXPECT_EQ(fuse_quantized_lookup(g), 2);  // sig2, and "sig" (read by nothing, then dropped)
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"DequantizeLinear", "DequantizeLinear", "Mul",
                                                 "QuantizeLinear", "QLookup"}));
  expect_same_outputs(before, g);
}

// An SE block in int8: x -> DQ -> a; gate = Sigmoid(GAP(a)); y = Q(Mul(a, gate)). x is
// [1, 8, 40, 40]: planes longer than the kernel's chunk, enough for both threads.
Graph gated_quantize() {
  Graph g;
  g.inputs.push_back({"x", DType::kU8, {1, 8, 40, 40}});
  g.initializers.emplace("s", Tensor::scalar_f32(0.05f));
  g.initializers.emplace("z", Tensor::from_vector<uint8_t>({}, {128}));
  g.initializers.emplace("s2", Tensor::scalar_f32(0.013f));
  g.initializers.emplace("z2", Tensor::from_vector<int8_t>({}, {-3}));
  g.nodes.push_back({"dq", "DequantizeLinear", {"x", "s", "z"}, {"a"}, {}});
  g.nodes.push_back({"gap", "GlobalAveragePool", {"a"}, {"pooled"}, {}});
  g.nodes.push_back({"sig", "Sigmoid", {"pooled"}, {"gate"}, {}});
  g.nodes.push_back({"scale", "Mul", {"gate", "a"}, {"c"}, {}});
  g.nodes.push_back({"q", "QuantizeLinear", {"c", "s2", "z2"}, {"y"}, {}});
  g.outputs = {"y"};
  g.infer();
  return g;
}

// The gated activation is quantized in one QChannelScale step (either operand order), equal
// to the Mul and QuantizeLinear on the reference runtime and in the compiled plan.
TEST(QuantizedLookup, GatedQuantizeBecomesOneChannelScale) {
  Graph g = gated_quantize();
  Graph before = g;
  EXPECT_EQ(fuse_channel_scale_quantize(g), 1);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"DequantizeLinear", "GlobalAveragePool", "Sigmoid",
                                                 "QChannelScale"}));
  EXPECT_EQ(g.value("y").dtype, DType::kS8);
  std::mt19937 rng(5);
  Tensor x(DType::kU8, {1, 8, 40, 40});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(rng());
  const Tensor want = ReferenceExecutor(before).run({x})[0];
  const Tensor got = ReferenceExecutor(g).run({x})[0];
  ASSERT_EQ(want.nbytes(), got.nbytes());
  EXPECT_EQ(std::memcmp(want.raw(), got.raw(), want.nbytes()), 0);
  // The whole pass list on the unfused graph, compiled: the same bytes, QChannelScale in it.
  Variant v;
  v.threads = 2;
  const std::unique_ptr<Executor> exec = make_executor(before, v);
  const Tensor fast = exec->run({x})[0];
  ASSERT_EQ(fast.nbytes(), want.nbytes());
  EXPECT_EQ(std::memcmp(fast.raw(), want.raw(), want.nbytes()), 0);
  // The gate's values moved the result: not the plain quantization of a.
  int moved = 0;
  Graph plain = before;
  plain.nodes[3].inputs = {"a", "a"};
  plain.infer();
  const Tensor squared = ReferenceExecutor(plain).run({x})[0];
  for (int64_t i = 0; i < want.numel(); ++i)
    moved += want.data<int8_t>()[i] != squared.data<int8_t>()[i];
  EXPECT_GT(moved, want.numel() / 2);
}

// A product with another reader, or a factor that is not per channel, stays a Mul.
TEST(QuantizedLookup, GatedQuantizeNeedsAPerChannelFactorAndOneReader) {
  Graph g = gated_quantize();
  g.outputs.push_back("c");
  g.infer();
  EXPECT_EQ(fuse_channel_scale_quantize(g), 0);
  Graph h = gated_quantize();
  h.nodes[3].inputs = {"a", "a"};
  h.infer();
  EXPECT_EQ(fuse_channel_scale_quantize(h), 0);
}

TEST(QuantizedLookup, EveryPathsKernelsEqualTheScalarOnes) {
  std::mt19937 rng(3);
  uint8_t table[256];
  float ftable[256];
  for (auto& t : table) t = static_cast<uint8_t>(rng());
  for (int i = 0; i < 256; ++i) ftable[i] = static_cast<float>(i) * 0.37f - 11.f;
  ThreadPool pool(2);
  for (size_t n : {0u, 1u, 63u, 64u, 65u, 1000u, 4099u}) {
    std::vector<uint8_t> x(n), want(n);
    for (auto& v : x) v = static_cast<uint8_t>(rng());
    for (size_t i = 0; i < n; ++i) want[i] = table[x[i]];
    for (Isa isa : kAllIsas) {
      if (!isa_supported(isa)) continue;
      std::vector<uint8_t> y(n + 1, 0xA5);
      lookup_8bit(table, isa, n, x.data(), y.data(), pool);
      EXPECT_EQ(std::vector<uint8_t>(y.begin(), y.begin() + static_cast<long>(n)), want)
          << isa_name(isa) << " n=" << n;
      EXPECT_EQ(y[n], 0xA5) << isa_name(isa) << " wrote past n=" << n;
      std::vector<float> f(n + 1, -1.f), fwant(n);
      for (size_t i = 0; i < n; ++i) fwant[i] = ftable[x[i]];
      lookup_8bit_f32(ftable, isa, n, x.data(), f.data(), pool);
      EXPECT_EQ(std::vector<float>(f.begin(), f.begin() + static_cast<long>(n)), fwant)
          << isa_name(isa) << " floats n=" << n;
      EXPECT_EQ(f[n], -1.f) << isa_name(isa) << " floats wrote past n=" << n;
    }
  }
}

}  // namespace
}  // namespace dlas
