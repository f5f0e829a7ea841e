// Reference kernels and schemas of BatchNormalization, pooling, LRN, Gemm, MatMul,
// Softmax, Pad, reductions and Dropout, against hand-computed ONNX examples and
// small brute-force formulations written independently here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "algo/op_test_util.h"

namespace dlas::op_test {
namespace {

using Ints = std::vector<int64_t>;

// ---------------------------------------------------------------------------
// BatchNormalization
// ---------------------------------------------------------------------------

TEST(NnBatchNorm, InferenceFormula) {
  std::mt19937 rng(1);
  const Tensor x = random_tensor({2, 3, 4, 5}, rng, -3, 3);
  const Tensor scale = random_tensor({3}, rng), bias = random_tensor({3}, rng);
  const Tensor mean = random_tensor({3}, rng), var = random_tensor({3}, rng, 0.1f, 2.0f);
  const float eps = 1e-3f;
  const Tensor y = run1("BatchNormalization", {{x}, cst(scale), cst(bias), cst(mean), cst(var)},
                        {{"epsilon", eps}});
  std::vector<float> want(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 20) % 3;
    want[static_cast<size_t>(i)] =
        static_cast<float>((x.get_as_double(i) - mean.get_as_double(c)) /
                               std::sqrt(var.get_as_double(c) + eps) * scale.get_as_double(c) +
                           bias.get_as_double(c));
  }
  expect_close(y, want, 1e-5);
  // Rank 2 (N, C) and rank 3 inputs use the same per-channel transform.
  const Tensor y2 = run1("BatchNormalization",
                         {{f32({1, 3}, {1, 2, 3})},
                          cst(f32({3}, {1, 2, 3})),
                          cst(f32({3}, {0, 1, 0})),
                          cst(f32({3}, {1, 1, 1})),
                          cst(f32({3}, {4, 1, 0.25f}))},
                         {{"epsilon", 0.0f}});
  expect_close(y2, {0, 3, 12}, 1e-6);
}

TEST(NnBatchNorm, Float16AndErrors) {
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  const Tensor one = f32({2}, {1, 1}), zero = f32({2}, {0, 0});
  const Tensor y = run1("BatchNormalization",
                        {{x.cast(DType::kF16)},
                         cst(one.cast(DType::kF16)),
                         cst(zero.cast(DType::kF16)),
                         cst(zero.cast(DType::kF16)),
                         cst(one.cast(DType::kF16))},
                        {{"epsilon", 0.0f}});
  EXPECT_EQ(y.dtype(), DType::kF16);
  expect_close(y, {1, 2, 3, 4}, 0);
  expect_infer_error("BatchNormalization", {{x}, cst(one), cst(zero), cst(zero), cst(one)},
                     {{"training_mode", int64_t{1}}}, ErrorKind::kUnsupported, "training_mode");
  expect_infer_error("BatchNormalization",
                     {{x}, cst(f32({3}, {1, 1, 1})), cst(zero), cst(zero), cst(one)}, {},
                     ErrorKind::kInvalidInput, "scale");
  expect_infer_error("BatchNormalization", {{x}, cst(one), cst(zero), cst(zero), cst(one)}, {},
                     ErrorKind::kUnsupported, "training", 3);
}

TEST(NnBatchNorm, RunningStatsAreNotParameters) {
  OpRun r = run_op("BatchNormalization", {{Tensor(DType::kF32, {1, 4, 2, 2})},
                                          cst(Tensor(DType::kF32, {4})),
                                          cst(Tensor(DType::kF32, {4})),
                                          cst(Tensor(DType::kF32, {4})),
                                          cst(Tensor(DType::kF32, {4}))});
  EXPECT_EQ(r.graph.param_count(), 8);
  EXPECT_EQ(r.graph.macs(), 0);
}

// ---------------------------------------------------------------------------
// MaxPool, AveragePool
// ---------------------------------------------------------------------------

struct PoolCase {
  const char* name;
  int64_t h, w;
  Ints kernel, strides, pads, dilations;
  int64_t ceil_mode;
  int64_t out_h, out_w;  // worked out by hand from the ONNX formulas
};

const PoolCase kPoolCases[] = {
    {"k3_valid", 5, 5, {3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 3, 3},
    {"k2s2_ceil_odd", 5, 5, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, 3, 3},
    {"k2s2_floor_odd", 5, 5, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 2, 2},
    {"k3s2_pad1_ceil", 6, 6, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, 4, 4},
    // padded 7: ceil((7-2)/2)+1 = 4, but the 4th window would start in the end padding.
    {"k2s2_pad1_ceil_drops_last", 5, 5, {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, 3, 3},
    {"dilation2", 4, 4, {2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 2}, 0, 2, 2},
    {"asym_pads_s2", 7, 6, {3, 3}, {2, 2}, {0, 1, 2, 1}, {1, 1}, 0, 4, 3},
    {"rect_kernel_s13_ceil_keeps_last", 6, 10, {2, 4}, {1, 3}, {1, 0, 0, 1}, {1, 1}, 1, 6, 4},
    // (4-1)*3 = 9 >= 9 + 0: the ceil window would start in the end padding.
    {"rect_kernel_s13_ceil_drops_last", 6, 9, {2, 4}, {1, 3}, {1, 0, 0, 3}, {1, 1}, 1, 6, 3},
    {"pads_dilation_ceil", 8, 7, {3, 2}, {2, 2}, {2, 1, 2, 0}, {2, 3}, 1, 5, 3},
};

void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }

// Brute force on an explicitly padded grid. Cells of the padded grid outside the input
// are padding; ceil_mode windows may run past the padded grid and are clipped.
std::vector<float> pool_brute(const Tensor& x, const PoolCase& c, bool is_max,
                              bool count_include_pad) {
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t hp = c.h + c.pads[0] + c.pads[2], wp = c.w + c.pads[1] + c.pads[3];
  std::vector<float> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < c.out_h; ++oh)
      for (int64_t ow = 0; ow < c.out_w; ++ow) {
        double best = -INFINITY, sum = 0;
        int64_t real = 0, cells = 0;
        for (int64_t kh = 0; kh < c.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < c.kernel[1]; ++kw) {
            const int64_t r = oh * c.strides[0] + kh * c.dilations[0];
            const int64_t q = ow * c.strides[1] + kw * c.dilations[1];
            if (r >= hp || q >= wp) continue;
            ++cells;
            const int64_t ih = r - c.pads[0], iw = q - c.pads[1];
            if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
            const double v = x.get_as_double((p * c.h + ih) * c.w + iw);
            best = std::max(best, v);
            sum += v;
            ++real;
          }
        y.push_back(static_cast<float>(is_max ? best : sum / (count_include_pad ? cells : real)));
      }
  return y;
}

Attrs pool_attrs(const PoolCase& c) {
  return {{"kernel_shape", c.kernel},
          {"strides", c.strides},
          {"pads", c.pads},
          {"dilations", c.dilations},
          {"ceil_mode", c.ceil_mode}};
}

class NnPoolCases : public ::testing::TestWithParam<PoolCase> {};

TEST_P(NnPoolCases, MatchBruteForce) {
  const PoolCase& c = GetParam();
  std::mt19937 rng(5);
  const Tensor x = random_tensor({2, 3, c.h, c.w}, rng);
  const Shape want_shape = {2, 3, c.out_h, c.out_w};
  const Tensor mx = run1("MaxPool", {{x}}, pool_attrs(c));
  ASSERT_EQ(mx.shape(), want_shape);
  expect_close(mx, pool_brute(x, c, true, false), 0, "max");
  for (int64_t include : {0, 1}) {
    Attrs a = pool_attrs(c);
    a["count_include_pad"] = include;
    const Tensor av = run1("AveragePool", {{x}}, a);
    ASSERT_EQ(av.shape(), want_shape);
    expect_close(av, pool_brute(x, c, false, include != 0),
                 sum_tolerance(c.kernel[0] * c.kernel[1]), include ? "avg include pad" : "avg");
  }
}

INSTANTIATE_TEST_SUITE_P(Nn, NnPoolCases, ::testing::ValuesIn(kPoolCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(NnPool, OnnxMaxPoolExamples) {
  const Tensor x4 = iota({1, 1, 4, 4}, 1);
  expect_close(
      run1("MaxPool", {{x4}},
           {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}),
      {11, 12, 15, 16}, 0);
  expect_close(run1("MaxPool", {{x4}}, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}),
               {11, 12, 15, 16}, 0);
  const Tensor x5 = iota({1, 1, 5, 5}, 1);
  const Tensor padded =
      run1("MaxPool", {{x5}}, {{"kernel_shape", Ints{5, 5}}, {"pads", Ints{2, 2, 2, 2}}});
  expect_close(padded, {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                        25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25},
               0);
  const Tensor same = run1("MaxPool", {{x5}},
                           {{"kernel_shape", Ints{3, 3}},
                            {"strides", Ints{2, 2}},
                            {"auto_pad", std::string("SAME_UPPER")}});
  expect_close(same, {7, 9, 10, 17, 19, 20, 22, 24, 25}, 0);
  // 1-D.
  expect_close(run1("MaxPool", {{f32({1, 1, 5}, {3, 1, 4, 1, 5})}}, {{"kernel_shape", Ints{2}}}),
               {3, 4, 4, 5}, 0);
  // u8 input stays u8.
  Tensor xu = iota({1, 1, 5, 5}, 1).cast(DType::kU8);
  const Tensor yu =
      run1("MaxPool", {{xu}}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(yu.dtype(), DType::kU8);
  expect_close(yu, {7, 9, 17, 19}, 0);
}

TEST(NnPool, AutoPadMatchesExplicitPads) {
  std::mt19937 rng(9);
  const Tensor x = random_tensor({1, 2, 6, 7}, rng);
  // k (3, 2), s 2: out (3, 4); total pads H 2*2+3-6 = 1, W 3*2+2-7 = 1.
  const Attrs base = {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    Attrs upper = base, lower = base, eu = base, el = base;
    upper["auto_pad"] = std::string("SAME_UPPER");
    lower["auto_pad"] = std::string("SAME_LOWER");
    eu["pads"] = Ints{0, 0, 1, 1};
    el["pads"] = Ints{1, 1, 0, 0};
    const Tensor yu = run1(op, {{x}}, upper), yl = run1(op, {{x}}, lower);
    ASSERT_EQ(yu.shape(), (Shape{1, 2, 3, 4})) << op;
    expect_close(yu, run1(op, {{x}}, eu), 1e-6, op);
    expect_close(yl, run1(op, {{x}}, el), 1e-6, op);
    Attrs valid = base;
    valid["auto_pad"] = std::string("VALID");
    expect_close(run1(op, {{x}}, valid), run1(op, {{x}}, base), 0, op);
  }
}

TEST(NnPool, AverageCountIncludePadByHand) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Attrs base = {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_close(run1("AveragePool", {{x}}, base), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}, 1e-6);
  Attrs inc = base;
  inc["count_include_pad"] = int64_t{1};
  expect_close(run1("AveragePool", {{x}}, inc),
               {0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1}, 1e-6);
  // ONNX averagepool_2d_ceil.
  expect_close(
      run1("AveragePool", {{iota({1, 1, 4, 4}, 1)}},
           {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}),
      {6, 7.5f, 12, 13.5f}, 1e-6);
}

TEST(NnPool, ThreeDimensionalMatchesSlices) {
  std::mt19937 rng(13);
  const Tensor x = random_tensor({1, 2, 3, 5, 6}, rng);
  const Attrs a3 = {{"kernel_shape", Ints{1, 3, 2}},
                    {"strides", Ints{1, 2, 2}},
                    {"pads", Ints{0, 1, 0, 0, 1, 1}}};
  const Attrs a2 = {
      {"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 1}}};
  for (const char* op : {"MaxPool", "AveragePool"}) {
    const Tensor y3 = run1(op, {{x}}, a3);
    ASSERT_EQ(y3.shape(), (Shape{1, 2, 3, 3, 3})) << op;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t d = 0; d < 3; ++d) {
        Tensor slice(DType::kF32, {1, 1, 5, 6});
        for (int64_t i = 0; i < 30; ++i)
          slice.data<float>()[i] = x.data<float>()[(c * 3 + d) * 30 + i];
        const Tensor y2 = run1(op, {{slice}}, a2);
        std::vector<float> got(y3.data<float>() + (c * 3 + d) * 9,
                               y3.data<float>() + (c * 3 + d + 1) * 9);
        expect_close(y2, got, 1e-6, op);
      }
  }
}

TEST(NnPool, MaxPoolIndicesBothStorageOrders) {
  const Tensor x = iota({1, 1, 5, 5}, 1);
  const Attrs a = {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  OpRun r = run_op("MaxPool", {{x}}, a, 2);
  EXPECT_EQ(r.outputs[1].dtype(), DType::kS64);
  expect_close(r.outputs[0], {7, 9, 17, 19}, 0);
  EXPECT_EQ(r.outputs[1].to_int64_vector(), (Ints{6, 8, 16, 18}));
  Attrs cm = a;
  cm["storage_order"] = int64_t{1};
  EXPECT_EQ(run_op("MaxPool", {{x}}, cm, 2).outputs[1].to_int64_vector(), (Ints{6, 16, 8, 18}));
  // With padding, batch and channels: indices are flat over the whole unpadded input.
  const Tensor x2 = iota({2, 2, 3, 3});
  const OpRun p = run_op(
      "MaxPool", {{x2}},
      {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 0, 0}}}, 2);
  EXPECT_EQ(p.outputs[1].to_int64_vector(),
            (Ints{0, 2, 6, 8, 9, 11, 15, 17, 18, 20, 24, 26, 27, 29, 33, 35}));
}

TEST(NnPool, GlobalPools) {
  const Tensor x = f32({1, 2, 2, 3}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -9});
  const Tensor avg = run1("GlobalAveragePool", {{x}});
  EXPECT_EQ(avg.shape(), (Shape{1, 2, 1, 1}));
  expect_close(avg, {3.5f, -4}, 1e-6);
  expect_close(run1("GlobalMaxPool", {{x}}), {6, -1}, 0);
  EXPECT_EQ(run1("GlobalMaxPool", {{Tensor(DType::kF32, {2, 3, 4})}}).shape(), (Shape{2, 3, 1}));
}

TEST(NnPool, InferenceErrors) {
  const Tensor x(DType::kF32, {1, 1, 4, 4});
  expect_infer_error("MaxPool", {{x}}, {}, ErrorKind::kInvalidInput, "kernel_shape");
  expect_infer_error("MaxPool", {{x}}, {{"kernel_shape", Ints{2}}}, ErrorKind::kInvalidInput,
                     "kernel_shape");
  expect_infer_error("AveragePool", {{x}}, {{"kernel_shape", Ints{5, 5}}}, ErrorKind::kInvalidInput,
                     "larger than padded input");
  expect_infer_error("AveragePool", {{x}},
                     {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{2, 0, 0, 0}}},
                     ErrorKind::kInvalidInput, "pads");
  expect_infer_error("AveragePool", {{Tensor(DType::kU8, {1, 1, 4, 4})}},
                     {{"kernel_shape", Ints{2, 2}}}, ErrorKind::kUnsupported, "u8");
  expect_infer_error("GlobalAveragePool", {{Tensor(DType::kF32, {4, 4})}}, {},
                     ErrorKind::kInvalidInput, "rank");
}

// ---------------------------------------------------------------------------
// LRN
// ---------------------------------------------------------------------------

TEST(NnLrn, ChannelWindowByHand) {
  // One pixel, channels (1, 2, 3); alpha / size = 1, beta = 1, bias = 1.
  const Tensor x = f32({1, 3, 1, 1}, {1, 2, 3});
  expect_close(
      run1("LRN", {{x}}, {{"size", int64_t{3}}, {"alpha", 3.0f}, {"beta", 1.0f}, {"bias", 1.0f}}),
      {1.0f / 6, 2.0f / 15, 3.0f / 14}, 1e-6);
  // Even size: the window is c - floor((size-1)/2) .. c + ceil((size-1)/2) = c .. c+1.
  expect_close(
      run1("LRN", {{x}}, {{"size", int64_t{2}}, {"alpha", 2.0f}, {"beta", 1.0f}, {"bias", 1.0f}}),
      {1.0f / 6, 2.0f / 14, 3.0f / 10}, 1e-6);
  // Defaults alpha 1e-4, beta 0.75, bias 1; spatial positions are independent.
  const Tensor x2 = f32({1, 2, 1, 2}, {1, 10, 2, 20});
  const Tensor y2 = run1("LRN", {{x2}}, {{"size", int64_t{3}}});
  const double a = 1e-4 / 3;
  expect_close(y2,
               {static_cast<float>(1 / std::pow(1 + a * 5, 0.75)),
                static_cast<float>(10 / std::pow(1 + a * 500, 0.75)),
                static_cast<float>(2 / std::pow(1 + a * 5, 0.75)),
                static_cast<float>(20 / std::pow(1 + a * 500, 0.75))},
               1e-6);
  expect_infer_error("LRN", {{x}}, {}, ErrorKind::kInvalidInput, "size");
}

// ---------------------------------------------------------------------------
// Gemm
// ---------------------------------------------------------------------------

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
  Shape c;  // empty rank -> {} scalar; "none" when c_absent
  bool c_absent;
};

TEST(NnGemm, MatchesNaiveForAllTransposesAndBiasShapes) {
  const GemmCase cases[] = {
      {3, 4, 5, false, false, 1, 1, {}, true},
      {3, 4, 5, true, false, 1, 1, {3, 4}, false},
      {3, 4, 5, false, true, 0.5f, 2, {4}, false},
      {3, 4, 5, true, true, -1, 0.25f, {1, 4}, false},
      {3, 4, 5, false, true, 1, 1, {3, 1}, false},
      {3, 4, 5, false, false, 1, 1, {}, false},
      {1, 7, 33, false, true, 1, 1, {7}, false},
      {6, 1, 2, true, true, 2, 3, {1}, false},
      {5, 3, 17, false, false, 1, 0, {5, 3}, false},
  };
  std::mt19937 rng(21);
  for (const GemmCase& g : cases) {
    const Tensor a = random_tensor(g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, rng);
    const Tensor b = random_tensor(g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, rng);
    const Tensor c = random_tensor(g.c, rng);
    const Tensor y = run1("Gemm", {{a}, cst(b), g.c_absent ? absent() : cst(c)},
                          {{"transA", int64_t{g.ta}},
                           {"transB", int64_t{g.tb}},
                           {"alpha", g.alpha},
                           {"beta", g.beta}});
    ASSERT_EQ(y.shape(), (Shape{g.m, g.n}));
    std::vector<float> want;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < g.k; ++p)
          s += a.get_as_double(g.ta ? p * g.m + i : i * g.k + p) *
               b.get_as_double(g.tb ? j * g.k + p : p * g.n + j);
        double cv = 0;
        if (!g.c_absent) {
          const int64_t ci = g.c.size() == 2 && g.c[0] != 1 ? i : 0;
          const int64_t cj = !g.c.empty() && g.c.back() != 1 ? j : 0;
          cv = c.get_as_double(ci * (g.c.empty() ? 1 : g.c.back()) + cj);
        }
        want.push_back(static_cast<float>(g.alpha * s + g.beta * cv));
      }
    expect_close(y, want, 4 * sum_tolerance(g.k),
                 str("m", g.m, " n", g.n, " k", g.k, " ta", g.ta, " tb", g.tb));
  }
}

TEST(NnGemm, ByHandAndErrors) {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  expect_close(run1("Gemm", {{a}, cst(b), cst(f32({2}, {10, 20}))}), {14, 25, 20, 31}, 0);
  expect_infer_error("Gemm", {{a}, cst(b)}, {{"transB", int64_t{1}}}, ErrorKind::kInvalidInput,
                     "inner dimensions");
  expect_infer_error("Gemm", {{a}, cst(b), cst(f32({3}, {1, 2, 3}))}, {}, ErrorKind::kInvalidInput,
                     "broadcast");
  expect_infer_error("Gemm", {{f32({6}, {1, 2, 3, 4, 5, 6})}, cst(b)}, {}, ErrorKind::kInvalidInput,
                     "matrix");
  OpRun r = run_op("Gemm", {{Tensor(DType::kF32, {4, 8})}, cst(Tensor(DType::kF32, {10, 8}))},
                   {{"transB", int64_t{1}}});
  EXPECT_EQ(r.graph.macs(), 4 * 10 * 8);
}

// ---------------------------------------------------------------------------
// MatMul
// ---------------------------------------------------------------------------

// NumPy matmul written out: promote 1-D operands, broadcast batch dims, then drop.
std::pair<Shape, std::vector<float>> matmul_naive(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const size_t nb = std::max(as.size(), bs.size()) - 2;
  while (as.size() < nb + 2) as.insert(as.begin(), 1);
  while (bs.size() < nb + 2) bs.insert(bs.begin(), 1);
  const int64_t m = as[nb], k = as[nb + 1], n = bs[nb + 1];
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) batch[i] = std::max(as[i], bs[i]);
  std::vector<float> y;
  const int64_t total = shape_numel(batch);
  for (int64_t t = 0; t < total; ++t) {
    int64_t rem = t, oa = 0, ob = 0, sa = m * k, sb = k * n;
    for (size_t i = nb; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      oa += (as[i] == 1 ? 0 : idx) * sa;
      ob += (bs[i] == 1 ? 0 : idx) * sb;
      sa *= as[i];
      sb *= bs[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += a.get_as_double(oa + i * k + p) * b.get_as_double(ob + p * n + j);
        y.push_back(static_cast<float>(s));
      }
  }
  Shape ys = batch;
  if (a.rank() != 1) ys.push_back(m);
  if (b.rank() != 1) ys.push_back(n);
  return {ys, y};
}

TEST(NnMatMul, NumpyBroadcastingAndPromotion) {
  const std::pair<Shape, Shape> cases[] = {
      {{3, 4}, {4, 5}},
      {{2, 3, 4}, {4, 5}},
      {{3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {5, 4, 2}},
      {{4}, {4, 5}},
      {{3, 4}, {4}},
      {{4}, {4}},
      {{2, 3, 4}, {4}},
      {{4}, {3, 4, 2}},
      {{1, 2, 3, 4}, {2, 1, 4, 6}},
      {{2, 3, 1}, {2, 1, 3}},
      {{1, 33}, {33, 1}},
  };
  std::mt19937 rng(17);
  for (const auto& [sa, sb] : cases) {
    const Tensor a = random_tensor(sa, rng), b = random_tensor(sb, rng);
    const Tensor y = run1("MatMul", {{a}, {b}});
    const auto [ws, wv] = matmul_naive(a, b);
    EXPECT_EQ(y.shape(), ws) << shape_str(sa) << " x " << shape_str(sb);
    expect_close(y, wv, sum_tolerance(sa.back()), shape_str(sa) + " x " + shape_str(sb));
  }
  // By hand: [[1, 2], [3, 4]] x [5, 6] = [17, 39].
  const Tensor v = run1("MatMul", {{f32({2, 2}, {1, 2, 3, 4})}, {f32({2}, {5, 6})}});
  EXPECT_EQ(v.shape(), (Shape{2}));
  expect_close(v, {17, 39}, 0);
}

TEST(NnMatMul, ErrorsAndMacs) {
  expect_infer_error("MatMul", {{Tensor(DType::kF32, {2, 3})}, {Tensor(DType::kF32, {4, 5})}}, {},
                     ErrorKind::kInvalidInput, "inner dimensions");
  expect_infer_error("MatMul", {{Tensor(DType::kF32, {2, 3, 4})}, {Tensor(DType::kF32, {3, 4, 5})}},
                     {}, ErrorKind::kInvalidInput, "broadcast");
  expect_infer_error("MatMul", {{Tensor(DType::kF32, {})}, {Tensor(DType::kF32, {3})}}, {},
                     ErrorKind::kInvalidInput, "rank");
  expect_infer_error("MatMul", {{Tensor(DType::kS64, {2, 2})}, {Tensor(DType::kS64, {2, 2})}}, {},
                     ErrorKind::kUnsupported, "s64");
  OpRun r =
      run_op("MatMul", {{Tensor(DType::kF32, {2, 1, 3, 4})}, cst(Tensor(DType::kF32, {5, 4, 6}))});
  EXPECT_EQ(r.outputs[0].shape(), (Shape{2, 5, 3, 6}));
  EXPECT_EQ(r.graph.macs(), 2 * 5 * 3 * 6 * 4);
}

// ---------------------------------------------------------------------------
// Einsum
// ---------------------------------------------------------------------------

Attrs equation(const std::string& e) { return {{"equation", e}}; }

TEST(NnEinsum, ProductsReductionsAndImplicitOutput) {
  std::mt19937 rng(23);
  const Tensor a = random_tensor({2, 3, 4}, rng), b = random_tensor({2, 5, 4}, rng);
  // MaxViT's Q.Kt form (spaces, capitals) against MatMul with b transposed by hand.
  Tensor bt(DType::kF32, {2, 4, 5});
  for (int64_t g = 0; g < 2; ++g)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t d = 0; d < 4; ++d)
        bt.data<float>()[(g * 4 + d) * 5 + j] = b.data<float>()[(g * 5 + j) * 4 + d];
  const Tensor want = run1("MatMul", {{a}, {bt}});
  const Tensor got = run1("Einsum", {{a}, {b}}, equation("G I D, G J D -> G I J"));
  EXPECT_EQ(got.shape(), (Shape{2, 3, 5}));
  expect_close(got, want, sum_tolerance(4));
  // Implicit output: the letters that occur once, alphabetically ("ij,jk" -> "ik").
  const Tensor x = f32({2, 2}, {1, 2, 3, 4}), y = f32({2, 2}, {5, 6, 7, 8});
  expect_close(run1("Einsum", {{x}, {y}}, equation("ij,jk")), {19, 22, 43, 50}, 0);
  // One operand: a transpose and a row sum.
  expect_close(run1("Einsum", {{x}}, equation("ij->ji")), {1, 3, 2, 4}, 0);
  expect_close(run1("Einsum", {{x}}, equation("ij->i")), {3, 7}, 0);
}

TEST(NnEinsum, ErrorsNameTheEquation) {
  const Tensor x(DType::kF32, {2, 3});
  expect_infer_error("Einsum", {{x}, {x}}, equation("...i,...i->..."), ErrorKind::kUnsupported,
                     "ellipsis");
  expect_infer_error("Einsum", {{Tensor(DType::kF32, {2, 2})}}, equation("ii->i"),
                     ErrorKind::kUnsupported, "diagonal");
  expect_infer_error("Einsum", {{x}, {x}}, equation("ij,jk->ik"), ErrorKind::kInvalidInput,
                     "sizes 3 and 2");
  expect_infer_error("Einsum", {{x}}, equation("ijk->i"), ErrorKind::kInvalidInput, "rank 2");
  expect_infer_error("Einsum", {{x}, {x}}, equation("ij->i"), ErrorKind::kInvalidInput,
                     "does not fit");
  expect_infer_error("Einsum", {{x}}, equation("ij->iz"), ErrorKind::kInvalidInput, "'z'");
}

// ---------------------------------------------------------------------------
// Softmax, LogSoftmax
// ---------------------------------------------------------------------------

TEST(NnSoftmax, ByHandAndAxisSemantics) {
  const Tensor x = f32({1, 3}, {1, 2, 3});
  expect_close(run1("Softmax", {{x}}), {0.09003057f, 0.24472847f, 0.66524096f}, 1e-6);
  expect_close(run1("LogSoftmax", {{x}}), {-2.40760596f, -1.40760596f, -0.40760596f}, 1e-6);
  // No overflow for large inputs.
  const Tensor big = f32({1, 3}, {1000, 1001, 1002});
  expect_close(run1("Softmax", {{big}}), {0.09003057f, 0.24472847f, 0.66524096f}, 1e-6);
  expect_close(run1("LogSoftmax", {{big}}), {-2.40760596f, -1.40760596f, -0.40760596f}, 1e-6);
  // Opset 13: normalises along `axis` only (not the flattened trailing dims).
  std::mt19937 rng(2);
  const Tensor x3 = random_tensor({2, 3, 4}, rng, -4, 4);
  for (int64_t axis : {0, 1, 2, -1, -2}) {
    const Tensor y = run1("Softmax", {{x3}}, {{"axis", axis}});
    const Tensor ly = run1("LogSoftmax", {{x3}}, {{"axis", axis}});
    const int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
    const Shape& s = x3.shape();
    const int64_t stride = ax == 0 ? 12 : ax == 1 ? 4 : 1;
    for (int64_t i = 0; i < x3.numel(); ++i) {
      const int64_t pos = (i / stride) % s[static_cast<size_t>(ax)];
      const int64_t base = i - pos * stride;
      double sum = 0;
      for (int64_t j = 0; j < s[static_cast<size_t>(ax)]; ++j)
        sum += std::exp(x3.get_as_double(base + j * stride));
      EXPECT_NEAR(y.get_as_double(i), std::exp(x3.get_as_double(i)) / sum, 1e-6) << axis;
      EXPECT_NEAR(ly.get_as_double(i), x3.get_as_double(i) - std::log(sum), 1e-5) << axis;
    }
  }
  expect_infer_error("Softmax", {{x}}, {{"axis", int64_t{2}}}, ErrorKind::kInvalidInput, "axis");
}

TEST(NnSoftmax, BFloat16) {
  const Tensor x = f32({4}, {0.5f, -1, 2, 0}).cast(DType::kBF16);
  const Tensor y = run1("Softmax", {{x}});
  ASSERT_EQ(y.dtype(), DType::kBF16);
  const Tensor ref = run1("Softmax", {{x.cast(DType::kF32)}});
  expect_close(y, ref.cast(DType::kBF16).to_float_vector(), 0);
}

// ---------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------

TEST(NnPad, ModesByHand) {
  const Tensor x = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  const Tensor pads = s64({4}, {0, 2, 0, 0});
  const Tensor c = run1("Pad", {{x}, cst(pads)});
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  expect_close(c, {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f}, 0);
  expect_close(run1("Pad", {{x}, cst(pads), cst(f32({}, {-7}))}),
               {-7, -7, 1.0f, 1.2f, -7, -7, 2.3f, 3.4f, -7, -7, 4.5f, 5.7f}, 0);
  expect_close(run1("Pad", {{x}, cst(pads)}, {{"mode", std::string("reflect")}}),
               {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}, 0);
  expect_close(run1("Pad", {{x}, cst(pads)}, {{"mode", std::string("edge")}}),
               {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}, 0);
  // 1-D reflect / wrap with pads larger than the data; edge on both ends.
  const Tensor v = f32({3}, {1, 2, 3});
  expect_close(run1("Pad", {{v}, cst(s64({2}, {4, 3}))}, {{"mode", std::string("reflect")}}),
               {1, 2, 3, 2, 1, 2, 3, 2, 1, 2}, 0);
  expect_close(run1("Pad", {{v}, cst(s64({2}, {4, 3}))}, {{"mode", std::string("wrap")}}),
               {3, 1, 2, 3, 1, 2, 3, 1, 2, 3}, 0);
  expect_close(run1("Pad", {{v}, cst(s64({2}, {1, 2}))}, {{"mode", std::string("edge")}}),
               {1, 1, 2, 3, 3, 3}, 0);
}

TEST(NnPad, NegativePadsAxesAndIntegerData) {
  const Tensor x = iota({3, 4});
  // Crop one row at the top, pad one column on the right.
  const Tensor y = run1("Pad", {{x}, cst(s64({4}, {-1, 0, 0, 1}))});
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  expect_close(y, {4, 5, 6, 7, 0, 8, 9, 10, 11, 0}, 0);
  // axes input (opset 18): pad only axis -1.
  const Tensor ya = run1("Pad", {{x}, cst(s64({2}, {1, 1})), absent(), cst(s64({1}, {-1}))});
  EXPECT_EQ(ya.shape(), (Shape{3, 6}));
  expect_close(ya, {0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 7, 0, 0, 8, 9, 10, 11, 0}, 0);
  // int64 data with a constant value, in 3-D with padding on the outer dims.
  const Tensor xi = s64({1, 2, 1}, {5, 6});
  const Tensor yi = run1("Pad", {{xi}, cst(s64({6}, {1, 0, 0, 0, 1, 1})), cst(s64({}, {9}))});
  EXPECT_EQ(yi.dtype(), DType::kS64);
  EXPECT_EQ(yi.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(yi.to_int64_vector(), (Ints{9, 9, 9, 9, 9, 9, 5, 9, 6, 9, 9, 9}));
}

TEST(NnPad, Errors) {
  const Tensor x(DType::kF32, {2, 3});
  expect_infer_error("Pad", {{x}, {s64({4}, {0, 1, 0, 1})}}, {}, ErrorKind::kUnsupported,
                     "constant");
  expect_infer_error("Pad", {{x}, cst(s64({2}, {1, 1}))}, {}, ErrorKind::kInvalidInput, "pads");
  expect_infer_error("Pad", {{x}, cst(s64({4}, {-3, 0, 0, 0}))}, {}, ErrorKind::kInvalidInput,
                     "negative");
  expect_infer_error("Pad", {{x}, cst(s64({4}, {0, 1, 0, 1}))}, {{"mode", std::string("mirror")}},
                     ErrorKind::kInvalidInput, "mode");
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

const Tensor kReduceExample = f32({3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2});

TEST(NnReduce, OnnxExamples) {
  const Tensor m = run1("ReduceMean", {{kReduceExample}}, {{"axes", Ints{1}}});
  EXPECT_EQ(m.shape(), (Shape{3, 1, 2}));
  expect_close(m, {12.5f, 1.5f, 35, 1.5f, 57.5f, 1.5f}, 1e-6);
  // Axes as a constant input (ReduceSum opset 13) and keepdims = 0.
  const Tensor s =
      run1("ReduceSum", {{kReduceExample}, cst(s64({1}, {-2}))}, {{"keepdims", int64_t{0}}});
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  expect_close(s, {25, 3, 70, 3, 115, 3}, 0);
  // Default: all axes.
  const Tensor all = run1("ReduceMax", {{kReduceExample}});
  EXPECT_EQ(all.shape(), (Shape{1, 1, 1}));
  expect_close(all, {60}, 0);
  EXPECT_EQ(run1("ReduceMin", {{kReduceExample}}, {{"keepdims", int64_t{0}}}).shape(), Shape{});
  // noop_with_empty_axes with an empty axes input: identity.
  const Tensor noop = run1("ReduceSum", {{kReduceExample}, cst(s64({0}, {}))},
                           {{"noop_with_empty_axes", int64_t{1}}});
  expect_close(noop, kReduceExample, 0);
  const Tensor l2 = run1("ReduceL2", {{f32({2, 2}, {3, 4, 5, 12})}}, {{"axes", Ints{1}}});
  expect_close(l2, {5, 13}, 1e-6);
}

// Brute force: for each output cell, collect the reduced values, then apply op.
double reduce_values(const std::string& op, const std::vector<double>& v) {
  double acc = op == "ReduceProd"  ? 1
               : op == "ReduceMax" ? -INFINITY
               : op == "ReduceMin" ? INFINITY
                                   : 0;
  for (double x : v) {
    if (op == "ReduceProd")
      acc *= x;
    else if (op == "ReduceMax")
      acc = std::max(acc, x);
    else if (op == "ReduceMin")
      acc = std::min(acc, x);
    else if (op == "ReduceL1")
      acc += std::fabs(x);
    else if (op == "ReduceL2" || op == "ReduceSumSquare")
      acc += x * x;
    else if (op == "ReduceLogSumExp")
      acc += std::exp(x);
    else
      acc += x;
  }
  if (op == "ReduceMean") acc /= static_cast<double>(v.size());
  if (op == "ReduceL2") acc = std::sqrt(acc);
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") acc = std::log(acc);
  return acc;
}

TEST(NnReduce, AllOpsMatchBruteForce) {
  std::mt19937 rng(8);
  const Tensor x = random_tensor({3, 4, 5}, rng, 0.5f, 1.5f);  // positive for LogSum
  const std::vector<Ints> axes_sets = {{0}, {1}, {2}, {0, 2}, {-1, -3}, {0, 1, 2}, {}};
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    for (const Ints& axes : axes_sets) {
      bool red[3] = {axes.empty(), axes.empty(), axes.empty()};
      for (int64_t a : axes) red[a < 0 ? a + 3 : a] = true;
      std::map<std::vector<int64_t>, std::vector<double>> groups;
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 4; ++j)
          for (int64_t k = 0; k < 5; ++k)
            groups[{red[0] ? 0 : i, red[1] ? 0 : j, red[2] ? 0 : k}].push_back(
                x.get_as_double((i * 4 + j) * 5 + k));
      std::vector<float> want;
      for (const auto& [key, vals] : groups)
        want.push_back(static_cast<float>(reduce_values(op, vals)));
      Attrs attrs;
      if (!axes.empty()) attrs["axes"] = axes;
      const Tensor y = run1(op, {{x}}, attrs);
      Shape ws = {red[0] ? 1 : 3, red[1] ? 1 : 4, red[2] ? 1 : 5};
      EXPECT_EQ(y.shape(), ws) << op;
      expect_close(y, want, 1e-5, op);
    }
  }
}

TEST(NnReduce, Errors) {
  expect_infer_error("ReduceSum", {{kReduceExample}}, {{"axes", Ints{3}}}, ErrorKind::kInvalidInput,
                     "axis");
  expect_infer_error("ReduceSum", {{kReduceExample}}, {{"axes", Ints{1, -2}}},
                     ErrorKind::kInvalidInput, "repeated");
  expect_infer_error("ReduceSum", {{kReduceExample}, {s64({1}, {1})}}, {}, ErrorKind::kUnsupported,
                     "constant");
  expect_infer_error("ReduceMean", {{s64({2}, {1, 2})}}, {}, ErrorKind::kUnsupported, "s64");
}

// ---------------------------------------------------------------------------
// ArgMax, ArgMin, Hardmax, TopK
// ---------------------------------------------------------------------------

const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(NnArg, AxesKeepdimsAndLastIndex) {
  const Tensor x = f32({2, 3}, {2, 5, 5, 7, 1, 7});
  const Attrs axis1 = {{"axis", int64_t{1}}};
  expect_s64(run1("ArgMax", {{x}}), {1, 3}, {1, 0, 1});  // default axis 0, keepdims
  expect_s64(run1("ArgMax", {{x}}, axis1), {2, 1}, {1, 0});
  expect_s64(run1("ArgMax", {{x}}, {{"axis", int64_t{-1}}, {"select_last_index", int64_t{1}}}),
             {2, 1}, {2, 2});
  expect_s64(run1("ArgMax", {{x}}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}), {3},
             {1, 0, 1});
  const Tensor t = f32({2, 3}, {3, 1, 1, 4, 4, 4});
  expect_s64(run1("ArgMin", {{t}}, axis1), {2, 1}, {1, 0});
  expect_s64(run1("ArgMin", {{t}}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}),
             {2, 1}, {2, 2});
  expect_s64(run1("ArgMin", {{t}}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}), {2}, {1, 0});
}

TEST(NnArg, NaNIntegersAndHalfPrecision) {
  // A NaN is the extreme for both (as in NumPy and PyTorch).
  const Tensor x = f32({4}, {1, kNaN, 3, kNaN});
  expect_s64(run1("ArgMax", {{x}}), {1}, {1});
  expect_s64(run1("ArgMin", {{x}}), {1}, {1});
  expect_s64(run1("ArgMin", {{x}}, {{"select_last_index", int64_t{1}}}), {1}, {3});
  // s64 compares exactly (these two are equal as doubles).
  const int64_t big = std::numeric_limits<int64_t>::max();
  expect_s64(run1("ArgMax", {{s64({3}, {big - 1, big, big - 2})}}), {1}, {1});
  expect_s64(run1("ArgMin", {{s64({3}, {big - 1, big, big - 2})}}), {1}, {2});
  expect_s64(run1("ArgMax", {{Tensor::from_vector<uint8_t>({3}, {200, 255, 3})}}), {1}, {1});
  expect_s64(run1("ArgMin", {{f32({2, 2}, {4, -1, -2, 8}).cast(DType::kBF16)}},
                  {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}),
             {2}, {1, 0});
}

TEST(NnArg, Errors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_infer_error("ArgMax", {{x}}, {{"axis", int64_t{2}}}, ErrorKind::kInvalidInput,
                     "out of range");
  expect_infer_error("ArgMin", {{f32({}, {1})}}, {}, ErrorKind::kInvalidInput, "scalar");
  expect_infer_error("ArgMax", {{x}}, {{"keepdims", int64_t{2}}}, ErrorKind::kInvalidInput,
                     "keepdims");
  expect_infer_error("ArgMax", {{Tensor(DType::kF32, {2, 0})}}, {{"axis", int64_t{1}}},
                     ErrorKind::kInvalidInput, "empty");
}

TEST(NnHardmax, OneAtTheFirstMaximum) {
  const Tensor x = f32({2, 3}, {1, 3, 3, -1, -2, -3});
  expect_close(run1("Hardmax", {{x}}), {0, 1, 0, 1, 0, 0}, 0);
  expect_close(run1("Hardmax", {{x}}, {{"axis", int64_t{0}}}), {1, 1, 1, 0, 0, 0}, 0);
  expect_close(run1("Hardmax", {{f32({3}, {1, kNaN, 2})}}), {0, 1, 0}, 0);
  const Tensor h = run1("Hardmax", {{x.cast(DType::kF16)}});
  EXPECT_EQ(h.dtype(), DType::kF16);
  expect_close(h, {0, 1, 0, 1, 0, 0}, 0);
  expect_infer_error("Hardmax", {{x}}, {{"axis", int64_t{-3}}}, ErrorKind::kInvalidInput,
                     "out of range");
}

std::vector<Tensor> topk(const Tensor& x, int64_t k, const Attrs& attrs = {}) {
  return run("TopK", {{x}, cst(s64({1}, {k}))}, attrs, 2);
}

TEST(NnTopK, LargestSmallestTiesAndAxes) {
  const Tensor x = f32({2, 4}, {1, 4, 2, 4, 3, 3, 3, 0});
  auto r = topk(x, 2);
  expect_close(r[0], {4, 4, 3, 3}, 0);
  EXPECT_EQ(r[0].shape(), (Shape{2, 2}));
  expect_s64(r[1], {2, 2}, {1, 3, 0, 1});  // ties: the lower index first
  r = topk(x, 3, {{"largest", int64_t{0}}});
  expect_close(r[0], {1, 2, 4, 0, 3, 3}, 0);
  expect_s64(r[1], {2, 3}, {0, 2, 1, 3, 0, 1});
  r = topk(x, 1, {{"axis", int64_t{0}}});
  expect_close(r[0], {3, 4, 3, 4}, 0);
  expect_s64(r[1], {1, 4}, {1, 0, 1, 0});
  r = topk(x, 0);
  EXPECT_EQ(r[0].shape(), (Shape{2, 0}));
  EXPECT_EQ(r[1].shape(), (Shape{2, 0}));
  // NaN is the largest value; integers sort exactly.
  r = topk(f32({3}, {kNaN, 1, 2}), 2);
  expect_close(r[0], {kNaN, 2}, 0);
  expect_s64(r[1], {2}, {0, 2});
  r = topk(f32({3}, {kNaN, 1, 2}), 2, {{"largest", int64_t{0}}});
  expect_s64(r[1], {2}, {1, 2});
  const int64_t big = std::numeric_limits<int64_t>::max();
  r = topk(s64({3}, {big - 1, big, -5}), 2);
  expect_s64(r[0], {2}, {big, big - 1});
  expect_s64(r[1], {2}, {1, 0});
}

TEST(NnTopK, Errors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_infer_error("TopK", {{x}, {s64({1}, {2})}}, {}, ErrorKind::kUnsupported,
                     "must be a constant", 2);
  expect_infer_error("TopK", {{x}, cst(s64({1}, {4}))}, {}, ErrorKind::kInvalidInput,
                     "out of range", 2);
  expect_infer_error("TopK", {{x}, cst(s64({1}, {-1}))}, {}, ErrorKind::kInvalidInput,
                     "out of range", 2);
  expect_infer_error("TopK", {{x}, cst(s64({2}, {1, 1}))}, {}, ErrorKind::kInvalidInput,
                     "one value", 2);
  expect_infer_error("TopK", {{x}, cst(s64({1}, {1}))}, {{"largest", int64_t{2}}},
                     ErrorKind::kInvalidInput, "largest", 2);
  expect_infer_error("TopK", {{x}, cst(s64({1}, {1}))}, {}, ErrorKind::kInvalidInput, "outputs", 1);
}

// ---------------------------------------------------------------------------
// InstanceNormalization, LayerNormalization, MeanVarianceNormalization
// ---------------------------------------------------------------------------

TEST(NnInstanceNorm, ByHandAndErrors) {
  // Per (n, c) over the spatial dims: channel 0 {1, 2, 3} (mean 2, var 2/3), channel 1
  // {5, 5, 8} (mean 6, var 2), epsilon 0.
  const Tensor x = f32({1, 2, 3}, {1, 2, 3, 5, 5, 8});
  const Tensor y = run1("InstanceNormalization",
                        {{x}, cst(f32({2}, {1, 2})), cst(f32({2}, {0, 1}))}, {{"epsilon", 0.0f}});
  expect_close(y, {-1.2247449f, 0, 1.2247449f, -0.41421356f, -0.41421356f, 3.8284271f}, 1e-6);
  // Batches are independent, epsilon is added to the variance.
  std::mt19937 rng(5);
  const Tensor xr = random_tensor({2, 3, 2, 5}, rng, -2, 2);
  const Tensor yr =
      run1("InstanceNormalization", {{xr}, cst(f32({3}, {1, 1, 1})), cst(f32({3}, {0, 0, 0}))},
           {{"epsilon", 0.5f}});
  for (int64_t p = 0; p < 6; ++p) {
    double mean = 0, var = 0;
    for (int i = 0; i < 10; ++i) mean += xr.get_as_double(p * 10 + i) / 10;
    for (int i = 0; i < 10; ++i) var += std::pow(xr.get_as_double(p * 10 + i) - mean, 2) / 10;
    for (int i = 0; i < 10; ++i)
      EXPECT_NEAR(yr.get_as_double(p * 10 + i),
                  (xr.get_as_double(p * 10 + i) - mean) / std::sqrt(var + 0.5), 1e-6);
  }
  expect_infer_error("InstanceNormalization",
                     {{x}, cst(f32({3}, {1, 1, 1})), cst(f32({2}, {0, 0}))}, {},
                     ErrorKind::kInvalidInput, "scale");
  expect_infer_error("InstanceNormalization",
                     {{f32({1, 2}, {1, 2})}, cst(f32({2}, {1, 1})), cst(f32({2}, {0, 0}))}, {},
                     ErrorKind::kInvalidInput, "rank");
}

TEST(NnLayerNorm, ByHandWithStatistics) {
  // Rows {1, 2, 3} (mean 2, var 2/3) and {2, 4, 9} (mean 5, var 26/3), epsilon 0.
  const Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 9});
  auto r = run("LayerNormalization", {{x}, cst(f32({3}, {1, 1, 2})), cst(f32({3}, {0, 0.5f, 0}))},
               {{"epsilon", 0.0f}}, 3);
  expect_close(r[0], {-1.2247449f, 0.5f, 2.4494897f, -1.0190493f, 0.16031689f, 2.7174649f}, 1e-6);
  EXPECT_EQ(r[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(r[1].dtype(), DType::kF32);
  expect_close(r[1], {2, 5}, 0);
  expect_close(r[2], {1.2247449f, 0.33968311f}, 1e-6);
  // axis 0: over everything (mean 3.5); Scale [3] broadcasts to [2, 3]; no B; default
  // epsilon 1e-5 inside the square root.
  r = run("LayerNormalization", {{x}, cst(f32({3}, {1, 1, 1}))}, {{"axis", int64_t{0}}}, 3);
  expect_close(r[0],
               {-0.95058569f, -0.57035141f, -0.19011714f, -0.57035141f, 0.19011714f, 2.0912885f},
               1e-6);
  EXPECT_EQ(r[1].shape(), (Shape{1, 1}));
  expect_close(r[2], {0.38023428f}, 1e-6);
  // Y alone.
  expect_close(run1("LayerNormalization", {{x}, cst(f32({1}, {2}))}, {{"epsilon", 0.0f}}),
               {-2.4494897f, 0, 2.4494897f, -2.0380987f, -0.67936622f, 2.7174649f}, 1e-6);
}

TEST(NnLayerNorm, Errors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_infer_error("LayerNormalization", {{x}, cst(f32({2}, {1, 1}))}, {},
                     ErrorKind::kInvalidInput, "Scale");
  expect_infer_error("LayerNormalization", {{x}, cst(f32({3}, {1, 1, 1})), cst(f32({2}, {1, 1}))},
                     {}, ErrorKind::kInvalidInput, "B");
  expect_infer_error("LayerNormalization", {{x}, cst(f32({3}, {1, 1, 1}))}, {{"axis", int64_t{2}}},
                     ErrorKind::kInvalidInput, "out of range");
  expect_infer_error("LayerNormalization", {{x}, cst(f32({3}, {1, 1, 1}))},
                     {{"stash_type", int64_t{11}}}, ErrorKind::kUnsupported, "stash_type");
  expect_infer_error("LayerNormalization", {{s64({1}, {1})}, cst(s64({1}, {1}))}, {},
                     ErrorKind::kUnsupported, "s64");
}

TEST(NnMeanVarianceNorm, PerChannelByDefault) {
  // Channel 0 holds {1, 3, 0, 4} (mean 2, var 2.5), channel 1 {2, 2, -1, 1} (mean 1, var 1.5).
  const Tensor x = f32({2, 2, 1, 2}, {1, 3, 2, 2, 0, 4, -1, 1});
  expect_close(run1("MeanVarianceNormalization", {{x}}),
               {-0.63245553f, 0.63245553f, 0.81649658f, 0.81649658f, -1.2649111f, 1.2649111f,
                -1.6329932f, 0},
               1e-6);
  // A constant group: 0 / (0 + 1e-9) = 0.
  expect_close(run1("MeanVarianceNormalization", {{f32({1, 1, 1, 2}, {3, 3})}}), {0, 0}, 0);
  // Other axes: over the last dim only.
  expect_close(
      run1("MeanVarianceNormalization", {{f32({2, 2}, {1, 3, 5, 5})}}, {{"axes", Ints{-1}}}),
      {-1, 1, 0, 0}, 1e-6);
  expect_infer_error("MeanVarianceNormalization", {{f32({2, 2}, {1, 3, 5, 5})}}, {},
                     ErrorKind::kInvalidInput, "out of range");
  expect_infer_error("MeanVarianceNormalization", {{x}}, {{"axes", Ints{1, -3}}},
                     ErrorKind::kInvalidInput, "repeated");
}

// ---------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------

TEST(NnDropout, InferenceIsIdentity) {
  const Tensor x = f32({2, 2}, {1, -2, 3, -4});
  expect_close(run1("Dropout", {{x}}), x, 0);
  expect_close(run1("Dropout", {{x}, cst(f32({}, {0.5f}))}), x, 0);
  const Tensor xi = s64({2}, {7, 8});
  EXPECT_EQ(run1("Dropout", {{xi}}).to_int64_vector(), (Ints{7, 8}));
  // The mask output: bool, all true (nothing is dropped at inference).
  const std::vector<Tensor> both = run("Dropout", {{x}}, {}, 2);
  ASSERT_EQ(both.size(), 2u);
  expect_close(both[0], x, 0);
  EXPECT_EQ(both[1].dtype(), DType::kBool);
  EXPECT_EQ(both[1].to_int64_vector(), (Ints{1, 1, 1, 1}));
  Tensor on(DType::kBool, {});
  static_cast<uint8_t*>(on.raw())[0] = 1;
  expect_infer_error("Dropout", {{x}, cst(f32({}, {0.5f})), cst(on)}, {}, ErrorKind::kUnsupported,
                     "training_mode");
  // training_mode with a ratio of 0 drops nothing (how exporters write a p = 0 dropout).
  expect_close(run1("Dropout", {{x}, cst(f32({}, {0.f})), cst(on)}), x, 0);
  Tensor off(DType::kBool, {});
  expect_close(run1("Dropout", {{x}, cst(f32({}, {0.5f})), cst(off)}), x, 0);
}

}  // namespace
}  // namespace dlas::op_test
