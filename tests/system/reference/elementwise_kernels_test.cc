// Elementwise op schemas (shape/dtype inference) and their reference kernels, checked
// against hand-computed values and an independent multi-index broadcasting formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "algo/op_test_util.h"

namespace dlas::op_test {
namespace {

// Tolerance of the checks below (relative above 1): results rounded once from double.
constexpr float kTol = 1e-6f;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// --- unary --------------------------------------------------------------------------

struct UnaryCase {
  const char* op;
  Attrs attrs;
  std::vector<float> x, want;
};

TEST(ElementwiseKernels, UnaryHandComputed) {
  const std::vector<UnaryCase> cases = {
      {"Relu", {}, {-1, 0, 2, kNaN}, {0, 0, 2, kNaN}},
      {"LeakyRelu", {}, {-2, 3}, {-0.02f, 3}},
      {"LeakyRelu", {{"alpha", 0.1f}}, {-2, 3}, {-0.2f, 3}},
      {"ThresholdedRelu", {}, {0.5f, 1.0f, 2}, {0, 0, 2}},
      {"Elu", {}, {-1, 2}, {-0.63212056f, 2}},
      {"Elu", {{"alpha", 2.0f}}, {-1}, {-1.2642411f}},
      {"Selu", {}, {-1, 0, 1}, {-1.1113307f, 0, 1.0507010f}},
      {"Celu", {{"alpha", 2.0f}}, {-2, 3}, {-1.2642411f, 3}},
      {"Sigmoid", {}, {0, 2, -100, 100}, {0.5f, 0.88079708f, 3.7200760e-44f, 1}},
      {"HardSigmoid", {}, {-3, 0, 1, 3}, {0, 0.5f, 0.7f, 1}},
      {"HardSigmoid", {{"alpha", 0.5f}, {"beta", 0.0f}}, {1, 4}, {0.5f, 1}},
      {"HardSwish", {}, {-4, -1, 1, 4}, {0, -1.0f / 3, 2.0f / 3, 4}},
      {"Softplus", {}, {0, 100, -100}, {0.69314718f, 100, 3.7200760e-44f}},
      {"Softsign", {}, {1, -3}, {0.5f, -0.75f}},
      {"Mish", {}, {1, 0, -20}, {0.86509839f, 0, -4.1223073e-8f}},
      {"Sign", {}, {-2, 0, 3}, {-1, 0, 1}},
      {"Reciprocal", {}, {4, -0.5f}, {0.25f, -2}},
      {"Round",
       {},
       {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.6f},
       {0, 2, 2, -0.0f, -2, 2, 3, -3}},
      {"Exp", {}, {0, 1}, {1, 2.7182817f}},
      {"Log", {}, {2.7182817f, 1, 0, -1}, {1, 0, -kInf, kNaN}},
      {"Sqrt", {}, {4, 2}, {2, 1.4142135f}},
      {"Tanh", {}, {0.5f, -20}, {0.46211716f, -1}},
      {"Erf", {}, {1, -0.5f}, {0.84270079f, -0.52049988f}},
      {"Floor", {}, {-1.5f, 1.5f}, {-2, 1}},
      {"Ceil", {}, {-1.5f, 1.5f}, {-1, 2}},
      {"Sin", {}, {1.5707964f, 0}, {1, 0}},
      {"Cos", {}, {0, 3.1415927f}, {1, -1}},
      {"Tan", {}, {0.7853982f}, {1}},
      {"Atan", {}, {1}, {0.7853982f}},
      {"Neg", {}, {1, -2}, {-1, 2}},
      {"Abs", {}, {-3, 2}, {3, 2}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    const Shape shape = {static_cast<int64_t>(c.x.size())};
    expect_f32(run1(c.op, {rt(f32(shape, c.x))}, c.attrs), shape, c.want, 2e-6f);
  }
}

TEST(ElementwiseKernels, UnaryKeepsShapeIncludingScalarsAndEmpty) {
  expect_f32(run1("Relu", {rt(f32({}, {-3}))}), {}, {0}, kTol);
  expect_f32(run1("Exp", {rt(f32({2, 0, 3}, {}))}), {2, 0, 3}, {}, kTol);
  expect_f32(run1("Sigmoid", {rt(f32({1, 2, 1}, {0, 0}))}), {1, 2, 1}, {0.5f, 0.5f}, kTol);
}

TEST(ElementwiseKernels, RoundIsHalfToEven) {
  expect_f32(run1("Round", {rt(f32({4}, {3.5f, 4.5f, -3.5f, -4.5f}))}), {4}, {4, 4, -4, -4}, kTol);
}

TEST(ElementwiseKernels, NegAbsOnIntegersWrap) {
  expect_values<int64_t>(run1("Neg", {rt(s64({3}, {-3, 5, 0}))}), {3}, {3, -5, 0});
  const int32_t lo = std::numeric_limits<int32_t>::min();
  expect_values<int32_t>(run1("Abs", {rt(s32({3}, {-7, 7, lo}))}), {3}, {7, 7, lo});
}

TEST(ElementwiseKernels, FloatOnlyOpsRejectIntegers) {
  expect_error("Relu", {rt(s32({2}, {1, 2}))}, {}, ErrorKind::kUnsupported, "s32");
  expect_error("Exp", {rt(s64({1}, {1}))}, {}, ErrorKind::kUnsupported, "s64");
  expect_error("Sum", {rt(s64({1}, {1})), rt(s64({1}, {1}))}, {}, ErrorKind::kUnsupported, "s64");
  expect_error("Relu", {rt(Tensor(DType::kU8, {2}))}, {}, ErrorKind::kUnsupported, "u8");
  expect_error("Pow", {rt(f32({1}, {2})), rt(Tensor(DType::kU8, {1}))}, {}, ErrorKind::kUnsupported,
               "u8");
}

// --- binary and broadcasting ---------------------------------------------------------------

TEST(ElementwiseKernels, AddSubMulDivSameShape) {
  const Tensor a = f32({2, 2}, {1, 2, 3, 4});
  const Tensor b = f32({2, 2}, {10, 20, 30, 40});
  expect_f32(run1("Add", {rt(a), rt(b)}), {2, 2}, {11, 22, 33, 44}, kTol);
  expect_f32(run1("Sub", {rt(a), rt(b)}), {2, 2}, {-9, -18, -27, -36}, kTol);
  expect_f32(run1("Mul", {rt(a), rt(b)}), {2, 2}, {10, 40, 90, 160}, kTol);
  expect_f32(run1("Div", {rt(b), rt(a)}), {2, 2}, {10, 10, 10, 10}, kTol);
}

TEST(ElementwiseKernels, BroadcastRowsColumnsAndScalars) {
  // [2,3] + [3]: row vector added to each row.
  expect_f32(run1("Add", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6})), rt(f32({3}, {10, 20, 30}))}), {2, 3},
             {11, 22, 33, 14, 25, 36}, kTol);
  // [2,1] * [1,3]: outer product.
  expect_f32(run1("Mul", {rt(f32({2, 1}, {2, 3})), cst(f32({1, 3}, {1, 10, 100}))}), {2, 3},
             {2, 20, 200, 3, 30, 300}, kTol);
  // Scalar on the left, higher rank on the right.
  expect_f32(run1("Sub", {cst(f32({}, {10})), rt(f32({1, 3}, {1, 2, 3}))}), {1, 3}, {9, 8, 7},
             kTol);
  // Scalar with scalar stays rank 0.
  expect_f32(run1("Div", {rt(f32({}, {1})), rt(f32({}, {4}))}), {}, {0.25f}, kTol);
  // A size-0 dim broadcasts with 1.
  expect_f32(run1("Add", {rt(f32({0, 3}, {})), rt(f32({1, 3}, {1, 2, 3}))}), {0, 3}, {}, kTol);
}

// Reference for broadcasting written independently: multi-index to flat offset.
std::vector<float> naive_broadcast(const Tensor& a, const Tensor& b, const Shape& out,
                                   float (*op)(float, float)) {
  const size_t r = out.size();
  auto offset = [&](const Shape& s, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < s.size(); ++d) {
      const int64_t i = idx[d + r - s.size()];
      off = off * s[d] + (s[d] == 1 ? 0 : i);
    }
    return off;
  };
  std::vector<float> res;
  std::vector<int64_t> idx(r, 0);
  for (int64_t n = 0; n < shape_numel(out); ++n) {
    int64_t rem = n;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rem % out[d];
      rem /= out[d];
    }
    res.push_back(
        op(a.data<float>()[offset(a.shape(), idx)], b.data<float>()[offset(b.shape(), idx)]));
  }
  return res;
}

Tensor ramp_f32(const Shape& s, float scale) {
  Tensor t(DType::kF32, s);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = scale * static_cast<float>(i % 7 + i / 3);
  return t;
}

TEST(ElementwiseKernels, BroadcastMatchesNaiveIndexing) {
  const std::vector<std::tuple<Shape, Shape, Shape>> cases = {
      {{3, 1, 4, 5}, {2, 1, 5}, {3, 2, 4, 5}},
      {{4, 5}, {4, 1}, {4, 5}},
      {{1, 5}, {4, 1}, {4, 5}},
      {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}},
      {{5}, {3, 1, 5}, {3, 1, 5}},
      {{1}, {3, 1}, {3, 1}},
      {{2, 1, 3, 1}, {1, 4, 1, 6}, {2, 4, 3, 6}},
      {{1, 1, 1}, {2, 3, 4}, {2, 3, 4}},
      {{6, 1, 1}, {1, 1, 7}, {6, 1, 7}},
  };
  for (const auto& [sa, sb, so] : cases) {
    SCOPED_TRACE(shape_str(sa) + " - " + shape_str(sb));
    const Tensor a = ramp_f32(sa, 1.0f);
    const Tensor b = ramp_f32(sb, 0.5f);
    const auto sub = [](float x, float y) { return x - y; };
    expect_f32(run1("Sub", {rt(a), rt(b)}), so, naive_broadcast(a, b, so, sub), 0);
    const auto rsub = [](float x, float y) { return y - x; };
    expect_f32(run1("Sub", {rt(b), rt(a)}), so, naive_broadcast(a, b, so, rsub), 0);
  }
}

TEST(ElementwiseKernels, BinaryShapeAndDTypeErrorsNameTheNode) {
  expect_error("Add", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6})), rt(f32({4}, {1, 2, 3, 4}))}, {},
               ErrorKind::kInvalidInput, "cannot broadcast");
  expect_error("Mul", {rt(f32({2}, {1, 2})), rt(s64({2}, {1, 2}))}, {}, ErrorKind::kInvalidInput,
               "dtype");
  expect_error("Max", {rt(f32({2}, {1, 2})), rt(f32({2}, {1, 2})), rt(f32({3}, {1, 2, 3}))}, {},
               ErrorKind::kInvalidInput, "input 2");
}

TEST(ElementwiseKernels, IntegerArithmetic) {
  const Tensor a = s64({4}, {7, -7, 7, -7});
  const Tensor b = s64({4}, {2, 2, -2, -2});
  expect_values<int64_t>(run1("Div", {rt(a), rt(b)}), {4}, {3, -3, -3, 3});  // truncates
  expect_values<int64_t>(run1("Add", {rt(a), rt(b)}), {4}, {9, -5, 5, -9});
  expect_values<int64_t>(run1("Sub", {rt(a), rt(b)}), {4}, {5, -9, 9, -5});
  expect_values<int64_t>(run1("Mul", {rt(a), rt(b)}), {4}, {14, -14, -14, 14});
  const int32_t lo = std::numeric_limits<int32_t>::min();
  expect_values<int32_t>(run1("Div", {rt(s32({2}, {lo, 9})), rt(s32({}, {-1}))}), {2}, {lo, -9});
  expect_values<int32_t>(
      run1("Add", {rt(s32({1}, {std::numeric_limits<int32_t>::max()})), rt(s32({1}, {1}))}), {1},
      {lo});
  expect_error("Div", {rt(s32({2}, {1, 2})), rt(s32({2}, {1, 0}))}, {}, ErrorKind::kInvalidInput,
               "division by zero");
}

TEST(ElementwiseKernels, EightBitIntegersWrapLikeNumPy) {
  auto u8 = [](Shape sh, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(sh, v); };
  auto s8 = [](Shape sh, std::vector<int8_t> v) { return Tensor::from_vector<int8_t>(sh, v); };
  expect_values<uint8_t>(run1("Add", {rt(u8({3}, {250, 1, 7})), rt(u8({}, {10}))}), {3},
                         {4, 11, 17});
  expect_values<uint8_t>(run1("Sub", {rt(u8({2}, {3, 10})), rt(u8({2}, {5, 4}))}), {2}, {254, 6});
  expect_values<uint8_t>(run1("Div", {rt(u8({2}, {7, 255})), rt(u8({2}, {2, 16}))}), {2}, {3, 15});
  expect_values<int8_t>(run1("Mul", {rt(s8({2}, {64, -3})), rt(s8({2}, {2, 5}))}), {2},
                        {-128, -15});
  expect_values<int8_t>(run1("Max", {rt(s8({3}, {-5, 3, 0})), rt(s8({1}, {-1}))}), {3}, {-1, 3, 0});
  expect_values<int8_t>(run1("Abs", {rt(s8({3}, {-128, -3, 4}))}), {3}, {-128, 3, 4});
  expect_values<uint8_t>(run1("Abs", {rt(u8({2}, {200, 0}))}), {2}, {200, 0});
}

TEST(ElementwiseKernels, S64ScalarsForShapeArithmetic) {
  // Exporters compute shapes as s64 scalars and 1-D tensors: Mul(dim, 4), Div(numel, dim).
  expect_values<int64_t>(run1("Mul", {cst(s64({}, {3})), cst(s64({1}, {4}))}), {1}, {12});
  expect_values<int64_t>(run1("Div", {cst(s64({}, {3072})), cst(s64({}, {3}))}), {}, {1024});
  expect_values<int64_t>(run1("Sub", {cst(s64({2}, {5, 6})), cst(s64({}, {1}))}), {2}, {4, 5});
}

TEST(ElementwiseKernels, PowWithFloatAndIntegerExponents) {
  expect_f32(run1("Pow", {rt(f32({3}, {2, 3, 4})), cst(f32({}, {2}))}), {3}, {4, 9, 16}, kTol);
  expect_f32(run1("Pow", {rt(f32({3}, {2, 3, 4})), cst(s64({3}, {0, 3, -1}))}), {3}, {1, 27, 0.25f},
             kTol);
  expect_f32(run1("Pow", {rt(f32({2}, {4, -8})), cst(f32({2}, {0.5f, 0.5f}))}), {2}, {2, kNaN},
             kTol);
  // Integer bases keep their type; results truncate toward zero and saturate.
  expect_values<int64_t>(run1("Pow", {rt(s64({4}, {3, -2, 2, 10})), cst(s64({4}, {3, 3, -1, 30}))}),
                         {4}, {27, -8, 0, std::numeric_limits<int64_t>::max()});
  expect_values<int32_t>(run1("Pow", {rt(s32({2}, {9, 2})), cst(f32({}, {0.5f}))}), {2}, {3, 1});
}

TEST(ElementwiseKernels, VariadicMaxMinSumMean) {
  const Tensor a = f32({1, 3}, {1, 5, 3});
  const Tensor b = f32({2, 1}, {2, 4});
  const Tensor c = f32({}, {3.5f});
  expect_f32(run1("Max", {rt(a), rt(b), rt(c)}), {2, 3}, {3.5f, 5, 3.5f, 4, 5, 4}, kTol);
  expect_f32(run1("Min", {rt(a), rt(b), rt(c)}), {2, 3}, {1, 2, 2, 1, 3.5f, 3}, kTol);
  expect_f32(run1("Sum", {rt(a), rt(b), rt(c)}), {2, 3}, {6.5f, 10.5f, 8.5f, 8.5f, 12.5f, 10.5f},
             kTol);
  expect_f32(run1("Mean", {rt(a), rt(b)}), {2, 3}, {1.5f, 3.5f, 2.5f, 2.5f, 4.5f, 3.5f}, kTol);
  expect_f32(run1("Sum", {rt(a)}), {1, 3}, {1, 5, 3}, kTol);
  expect_f32(run1("Max", {rt(f32({2}, {kNaN, 1})), rt(f32({2}, {0, kNaN}))}), {2}, {kNaN, kNaN},
             kTol);
  expect_values<int32_t>(run1("Min", {rt(s32({3}, {4, -1, 7})), rt(s32({1}, {2}))}), {3},
                         {2, -1, 2});
}

TEST(ElementwiseKernels, PReluSlopeBroadcastsToInput) {
  // x [1,2,2] with a per-channel slope [2,1].
  expect_f32(run1("PRelu", {rt(f32({1, 2, 2}, {-1, 2, -3, 4})), cst(f32({2, 1}, {0.1f, 0.5f}))}),
             {1, 2, 2}, {-0.1f, 2, -1.5f, 4}, kTol);
  expect_f32(run1("PRelu", {rt(f32({3}, {-1, 0, 1})), cst(f32({}, {0.25f}))}), {3}, {-0.25f, 0, 1},
             kTol);
  // The slope may not enlarge the input.
  expect_error("PRelu", {rt(f32({2}, {1, 2})), cst(f32({2, 2}, {1, 1, 1, 1}))}, {},
               ErrorKind::kInvalidInput, "slope");
}

TEST(ElementwiseKernels, ClipWithOptionalBounds) {
  const Tensor x = f32({5}, {-3, -1, 0, 2, 9});
  expect_f32(run1("Clip", {rt(x), cst(f32({}, {-1})), cst(f32({}, {6}))}), {5}, {-1, -1, 0, 2, 6},
             kTol);
  expect_f32(run1("Clip", {rt(x), absent(), cst(f32({}, {0}))}), {5}, {-3, -1, 0, 0, 0}, kTol);
  expect_f32(run1("Clip", {rt(x), cst(f32({}, {0}))}), {5}, {0, 0, 0, 2, 9}, kTol);
  expect_f32(run1("Clip", {rt(x)}), {5}, {-3, -1, 0, 2, 9}, kTol);
  // Bounds may be runtime values.
  expect_f32(run1("Clip", {rt(x), rt(f32({}, {1})), rt(f32({}, {2}))}), {5}, {1, 1, 1, 2, 2}, kTol);
  expect_error("Clip", {rt(x), cst(f32({2}, {0, 1}))}, {}, ErrorKind::kInvalidInput, "scalar");
  // Integer inputs clip with bounds of their own dtype.
  expect_values<int64_t>(
      run1("Clip", {rt(s64({4}, {-9, 0, 5, 1LL << 40})), cst(s64({}, {-2})), cst(s64({}, {3}))}),
      {4}, {-2, 0, 3, 3});
  expect_values<int8_t>(run1("Clip", {rt(Tensor::from_vector<int8_t>({3}, {-128, 5, 127})),
                                      absent(), cst(Tensor::from_vector<int8_t>({}, {100}))}),
                        {3}, {-128, 5, 100});
  expect_error("Clip", {rt(x), cst(s64({}, {0}))}, {}, ErrorKind::kInvalidInput, "min");
}

// --- hyperbolic and inverse trigonometric functions, Shrink ----------------------------

TEST(ElementwiseKernels, HyperbolicAndInverseTrigonometric) {
  const std::vector<UnaryCase> cases = {
      {"Sinh", {}, {1, -2, 0}, {1.1752012f, -3.6268604f, 0}},
      {"Cosh", {}, {1, -1, 0}, {1.5430806f, 1.5430806f, 1}},
      {"Asin", {}, {0.5f, 1, -1, 2}, {0.52359878f, 1.5707964f, -1.5707964f, kNaN}},
      {"Acos", {}, {0.5f, -1, 1, 1.5f}, {1.0471976f, 3.1415927f, 0, kNaN}},
      {"Asinh", {}, {1, -1, 0}, {0.88137359f, -0.88137359f, 0}},
      {"Acosh", {}, {1, 2, 0.5f}, {0, 1.3169579f, kNaN}},
      {"Atanh", {}, {0.5f, 1, -1, 2}, {0.54930614f, kInf, -kInf, kNaN}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    const Shape shape = {static_cast<int64_t>(c.x.size())};
    expect_f32(run1(c.op, {rt(f32(shape, c.x))}, c.attrs), shape, c.want, 2e-6f);
  }
  expect_error("Sinh", {rt(s32({1}, {1}))}, {}, ErrorKind::kUnsupported, "s32");
}

TEST(ElementwiseKernels, ShrinkHardSoftAndBiased) {
  const Tensor x = f32({8}, {-2, -0.5f, -0.4f, 0, 0.5f, 0.6f, 2, kNaN});
  // Default lambd 0.5, bias 0 (hard shrink): |x| <= lambd and NaN become 0.
  expect_f32(run1("Shrink", {rt(x)}), {8}, {-2, 0, 0, 0, 0, 0.6f, 2, 0});
  // bias = lambd (soft shrink).
  expect_f32(run1("Shrink", {rt(x)}, {{"bias", 0.5f}}), {8},
             {-1.5f, 0, 0, 0, 0, 0.6f - 0.5f, 1.5f, 0});  // 0.6f - 0.5 is exact
  expect_f32(run1("Shrink", {rt(f32({3}, {-2, 1, 2}))}, {{"lambd", 1.0f}, {"bias", -1.0f}}), {3},
             {-3, 0, 3});
  expect_error("Shrink", {rt(s64({1}, {1}))}, {}, ErrorKind::kUnsupported, "s64");
}

// --- Mod ----------------------------------------------------------------------------------

Attrs fmod(int64_t v) { return {{"fmod", v}}; }

TEST(ElementwiseKernels, ModIntegersTakeTheDivisorsSignUnlessFmod) {
  const Tensor a = s64({5}, {-4, 7, 5, -5, 0});
  const Tensor b = s64({5}, {3, -3, 5, 3, 2});
  expect_values<int64_t>(run1("Mod", {rt(a), rt(b)}), {5}, {2, -2, 0, 1, 0});  // Python's %
  expect_values<int64_t>(run1("Mod", {rt(a), rt(b)}, fmod(1)), {5}, {-1, 1, 0, -2, 0});  // C's %
  // Broadcasting, and the 8-bit and 32-bit types.
  expect_values<int32_t>(run1("Mod", {rt(s32({2, 2}, {5, -5, 6, -6})), cst(s32({}, {4}))}), {2, 2},
                         {1, 3, 2, 2});
  const int8_t lo = std::numeric_limits<int8_t>::min();
  expect_values<int8_t>(run1("Mod", {rt(Tensor::from_vector<int8_t>({3}, {lo, lo, -7})),
                                     rt(Tensor::from_vector<int8_t>({3}, {-1, 3, 2}))}),
                        {3}, {0, 1, 1});
  expect_values<uint8_t>(run1("Mod", {rt(Tensor::from_vector<uint8_t>({2}, {250, 7})),
                                      rt(Tensor::from_vector<uint8_t>({2}, {7, 250}))}),
                         {2}, {5, 7});
  expect_error("Mod", {rt(s32({2}, {1, 2})), rt(s32({2}, {1, 0}))}, {}, ErrorKind::kInvalidInput,
               "modulus by zero");
}

// A bool tensor from 0 / 1 values.
Tensor bools(Shape shape, const std::vector<int>& v) {
  Tensor t(DType::kBool, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) static_cast<uint8_t*>(t.raw())[i] = v[i] ? 1 : 0;
  return t;
}

TEST(ElementwiseKernels, ComparisonsGiveBoolsWithBroadcasting) {
  const Tensor a = f32({2, 2}, {1, 2, 3, std::nanf("")});
  const Tensor b = f32({2}, {2, 2});
  auto cmp = [&](const char* op, const Tensor& x, const Tensor& y) {
    const Tensor r = run1(op, {rt(x), rt(y)});
    EXPECT_EQ(r.dtype(), DType::kBool) << op;
    return r.to_int64_vector();
  };
  EXPECT_EQ(cmp("Equal", a, b), (std::vector<int64_t>{0, 1, 0, 0}));  // NaN equals nothing
  EXPECT_EQ(cmp("Less", a, b), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(cmp("Greater", a, b), (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(cmp("LessOrEqual", a, b), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(cmp("GreaterOrEqual", a, b), (std::vector<int64_t>{0, 1, 1, 0}));
  // Integers (the exporters' shape arithmetic), bools for Equal, and 16-bit floats widened.
  EXPECT_EQ(cmp("Equal", s64({3}, {1, -1, -1}), s64({}, {-1})), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(cmp("Equal", bools({2}, {1, 0}), bools({2}, {1, 1})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(cmp("Less", f32({2}, {0.5f, 2}).cast(DType::kBF16), f32({}, {1}).cast(DType::kBF16)),
            (std::vector<int64_t>{1, 0}));
  expect_infer_error("Less", {rt(bools({1}, {1})), rt(bools({1}, {0}))}, {},
                     ErrorKind::kUnsupported, "bool");
  expect_infer_error("Equal", {rt(f32({1}, {1})), rt(s64({1}, {1}))}, {}, ErrorKind::kInvalidInput,
                     "one dtype");
}

TEST(ElementwiseKernels, LogicOnBoolsAndWhereSelects) {
  const Tensor p = bools({4}, {0, 0, 1, 1}), q = bools({4}, {0, 1, 0, 1});
  EXPECT_EQ(run1("And", {rt(p), rt(q)}).to_int64_vector(), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(run1("Or", {rt(p), rt(q)}).to_int64_vector(), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(run1("Xor", {rt(p), rt(q)}).to_int64_vector(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(run1("Not", {rt(p)}).to_int64_vector(), (std::vector<int64_t>{1, 1, 0, 0}));
  expect_infer_error("Not", {rt(f32({1}, {1}))}, {}, ErrorKind::kUnsupported, "bool");
  // Where broadcasts all three: a [2,1] condition, a [3] X and a scalar Y.
  const Tensor w =
      run1("Where", {rt(bools({2, 1}, {1, 0})), rt(f32({3}, {1, 2, 3})), rt(f32({}, {-1}))});
  expect_f32(w, {2, 3}, {1, 2, 3, -1, -1, -1});
  // The exporters' shape form: Where(Equal(shape, -1), ones, shape).
  expect_s64(run1("Where",
                  {rt(bools({3}, {0, 1, 1})), rt(s64({3}, {1, 1, 1})), rt(s64({3}, {4, -1, -1}))}),
             {3}, {4, 1, 1});
  const Tensor h = run1("Where", {rt(bools({2}, {1, 0})), rt(f32({2}, {1.5f, 2}).cast(DType::kF16)),
                                  rt(f32({2}, {-3, -4}).cast(DType::kF16))});
  ASSERT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.to_float_vector(), (std::vector<float>{1.5f, -4}));
  expect_infer_error("Where", {rt(f32({1}, {1})), rt(f32({1}, {1})), rt(f32({1}, {2}))}, {},
                     ErrorKind::kUnsupported, "bool");
  expect_infer_error("Where", {rt(bools({1}, {1})), rt(f32({1}, {1})), rt(s64({1}, {2}))}, {},
                     ErrorKind::kInvalidInput, "one dtype");
}

TEST(ElementwiseKernels, ModFloatsAreFmod) {
  const Tensor a = f32({5}, {5.5f, -5.5f, 5.5f, -5.5f, 1e10f});
  const Tensor b = f32({5}, {2, 2, -2, -2, 3});
  // fmod is exact: 1e10 = 3333333333 * 3 + 1 and 1e10f is exactly 10000000000.
  expect_f32(run1("Mod", {rt(a), rt(b)}, fmod(1)), {5}, {1.5f, -1.5f, 1.5f, -1.5f, 1});
  const Tensor h = run1("Mod", {rt(a.cast(DType::kF16)), rt(b.cast(DType::kF16))}, fmod(1));
  ASSERT_EQ(h.dtype(), DType::kF16);
  // 1e10 overflows f16 to inf, and fmod(inf, 3) is NaN.
  expect_f32(h.cast(DType::kF32), {5}, {1.5f, -1.5f, 1.5f, -1.5f, kNaN});
  expect_error("Mod", {rt(a), rt(b)}, {}, ErrorKind::kInvalidInput, "fmod must be 1");
  expect_error("Mod", {rt(a), rt(b)}, fmod(2), ErrorKind::kInvalidInput, "fmod must be 0 or 1");
  expect_error("Mod", {rt(a), rt(s64({5}, {1, 2, 3, 4, 5}))}, fmod(1), ErrorKind::kInvalidInput,
               "dtype");
}

TEST(ElementwiseKernels, ConstantOperandsAreNotParameters) {
  // Clip bounds and Pow exponents are not trainable; a PRelu slope is.
  const Tensor x = f32({1, 2, 2}, {1, 2, 3, 4});
  Graph clip = one_node_graph("Clip", {rt(x), cst(f32({}, {0})), cst(f32({}, {6}))}, {}, 1);
  clip.infer();
  EXPECT_EQ(clip.param_count(), 0);
  Graph pow = one_node_graph("Pow", {rt(x), cst(f32({}, {2}))}, {}, 1);
  pow.infer();
  EXPECT_EQ(pow.param_count(), 0);
  Graph prelu = one_node_graph("PRelu", {rt(x), cst(f32({2, 1}, {0.1f, 0.2f}))}, {}, 1);
  prelu.infer();
  EXPECT_EQ(prelu.param_count(), 2);
}

}  // namespace
}  // namespace dlas::op_test
