// fuse_quantized_lookup: a DQ -> pointwise float ops -> Q chain (the SiLU between int8
// convs) becomes one QLookup whose table reproduces the chain bit for bit on the reference
// runtime; chains whose intermediates have other readers stay; and the byte lookup kernels
// of every path equal the scalar one.  build/dlas_tests --gtest_filter='QuantizedLookup*'
#include <gtest/gtest.h>

#include <random>

#include "dlas/algo/eltwise.h"
#include "dlas/hw/isa.h"
#include "dlas/hw/thread_pool.h"
#include "dlas/system/executor.h"
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

TEST(QuantizedLookup, ChainWithAnotherReaderStays) {
  Graph g = silu_chain();
  g.nodes.push_back({"keep", "Relu", {"b"}, {"b2"}, {}});  // the Sigmoid read elsewhere
  g.outputs.push_back("b2");
  g.infer();
  EXPECT_EQ(fuse_quantized_lookup(g), 0);
  EXPECT_EQ(g.nodes.size(), 5u);
}

TEST(QuantizedLookup, ChainOfTwoDequantizedInputsStays) {
  Graph g = silu_chain();
  g.inputs.push_back({"x2", DType::kU8, {1, 4, 8, 8}});
  g.nodes.insert(g.nodes.begin(), Node{"dq2", "DequantizeLinear", {"x2", "s", "z"}, {"a2"}, {}});
  for (Node& n : g.nodes)
    if (n.name == "mul") n.inputs[1] = "a2";  // a function of two bytes: no 256-entry table
  g.infer();
  EXPECT_EQ(fuse_quantized_lookup(g), 0);
}

TEST(QuantizedLookup, EveryPathsKernelEqualsTheScalarOne) {
  std::mt19937 rng(3);
  uint8_t table[256];
  for (auto& t : table) t = static_cast<uint8_t>(rng());
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
    }
  }
}

}  // namespace
}  // namespace dlas
