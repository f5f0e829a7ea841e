// Tensor and shape op schemas (shape/dtype inference, validation) and their reference
// kernels, checked against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "algo/op_test_util.h"

namespace dlas::op_test {
namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// --- copies with a new shape ---------------------------------------------------------------

TEST(TensorKernels, IdentityCopiesAnyDType) {
  const Tensor x = Tensor::from_vector<uint8_t>({3}, {1, 200, 7});
  expect_values<uint8_t>(run1("Identity", {rt(x)}), {3}, {1, 200, 7});
}

TEST(TensorKernels, FlattenAxes) {
  const Tensor x = iota({2, 3, 4});
  EXPECT_EQ(run1("Flatten", {rt(x)}).shape(), Shape({2, 12}));
  EXPECT_EQ(run1("Flatten", {rt(x)}, {{"axis", int64_t{0}}}).shape(), Shape({1, 24}));
  EXPECT_EQ(run1("Flatten", {rt(x)}, {{"axis", int64_t{-1}}}).shape(), Shape({6, 4}));
  const Tensor y = run1("Flatten", {rt(x)}, {{"axis", int64_t{3}}});
  EXPECT_EQ(y.shape(), Shape({24, 1}));
  EXPECT_EQ(y.data<float>()[23], 23.0f);
  expect_error("Flatten", {rt(x)}, {{"axis", int64_t{4}}}, ErrorKind::kInvalidInput,
               "out of range");
}

TEST(TensorKernels, ReshapeZeroAndMinusOne) {
  const Tensor x = iota({2, 3, 4});
  EXPECT_EQ(run1("Reshape", {rt(x), cst(s64({2}, {0, -1}))}).shape(), Shape({2, 12}));
  EXPECT_EQ(run1("Reshape", {rt(x), cst(s64({3}, {4, 0, -1}))}).shape(), Shape({4, 3, 2}));
  const Tensor flat = run1("Reshape", {rt(x), cst(s64({1}, {-1}))});
  ASSERT_EQ(flat.shape(), Shape({24}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(flat.data<float>()[i], static_cast<float>(i));
  // A 1-element tensor to a scalar.
  expect_f32(run1("Reshape", {rt(f32({1, 1}, {5})), cst(s64({0}, {}))}), {}, {5});
  // allowzero=1 keeps 0 as a real zero-sized dimension.
  const Tensor empty(DType::kF32, {0, 4});
  EXPECT_EQ(
      run1("Reshape", {rt(empty), cst(s64({2}, {4, 0}))}, {{"allowzero", int64_t{1}}}).shape(),
      Shape({4, 0}));
  // Without allowzero the 0 copies input dim 1 (4): 16 elements for 0.
  expect_error("Reshape", {rt(empty), cst(s64({2}, {4, 0}))}, {}, ErrorKind::kInvalidInput,
               "cannot reshape");
}

TEST(TensorKernels, ReshapeErrorsNameTheNode) {
  const Tensor x = iota({2, 3, 4});
  expect_error("Reshape", {rt(x), cst(s64({2}, {5, -1}))}, {}, ErrorKind::kInvalidInput,
               "cannot reshape");
  expect_error("Reshape", {rt(x), cst(s64({2}, {5, 5}))}, {}, ErrorKind::kInvalidInput,
               "cannot reshape");
  expect_error("Reshape", {rt(x), cst(s64({2}, {-1, -1}))}, {}, ErrorKind::kInvalidInput,
               "more than one -1");
  expect_error("Reshape", {rt(x), cst(s64({2}, {-2, 12}))}, {}, ErrorKind::kInvalidInput,
               "invalid dimension");
  expect_error("Reshape", {rt(x), rt(s64({2}, {2, 12}))}, {}, ErrorKind::kUnsupported,
               "must be a constant");
}

TEST(TensorKernels, SqueezeUnsqueeze) {
  const Tensor x = iota({1, 3, 1, 2});
  const Tensor all = run1("Squeeze", {rt(x)});
  EXPECT_EQ(all.shape(), Shape({3, 2}));
  EXPECT_EQ(all.data<float>()[5], 5.0f);
  EXPECT_EQ(run1("Squeeze", {rt(x), cst(s64({1}, {-2}))}).shape(), Shape({1, 3, 2}));
  expect_error("Squeeze", {rt(x), cst(s64({1}, {1}))}, {}, ErrorKind::kInvalidInput,
               "size is not 1");
  expect_error("Squeeze", {rt(x), cst(s64({1}, {4}))}, {}, ErrorKind::kInvalidInput,
               "out of range");

  EXPECT_EQ(run1("Unsqueeze", {rt(f32({3}, {1, 2, 3})), cst(s64({2}, {0, -1}))}).shape(),
            Shape({1, 3, 1}));
  EXPECT_EQ(run1("Unsqueeze", {rt(f32({2, 3}, {1, 2, 3, 4, 5, 6})), cst(s64({1}, {1}))}).shape(),
            Shape({2, 1, 3}));
  // An s64 scalar becomes a 1-D tensor (the Gather -> Unsqueeze exporter pattern).
  expect_s64(run1("Unsqueeze", {cst(s64({}, {7})), cst(s64({1}, {0}))}), {1}, {7});
  expect_error("Unsqueeze", {rt(f32({3}, {1, 2, 3})), cst(s64({2}, {0, 0}))}, {},
               ErrorKind::kInvalidInput, "repeated");
  expect_error("Unsqueeze", {rt(f32({3}, {1, 2, 3}))}, {}, ErrorKind::kInvalidInput,
               "axes (input 1) is required");
}

// --- permutations and copies -----------------------------------------------------------------

TEST(TensorKernels, TransposeDefaultReversesAxes) {
  expect_f32(run1("Transpose", {rt(iota({2, 3}))}), {3, 2}, {0, 3, 1, 4, 2, 5});
  const Tensor y = run1("Transpose", {rt(iota({2, 3, 4}))});
  ASSERT_EQ(y.shape(), Shape({4, 3, 2}));
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i)
        EXPECT_EQ(y.data<float>()[(k * 3 + j) * 2 + i], static_cast<float>(i * 12 + j * 4 + k));
}

TEST(TensorKernels, TransposeExplicitPermAndErrors) {
  expect_f32(run1("Transpose", {rt(iota({2, 3, 2}))}, {{"perm", std::vector<int64_t>{1, 0, 2}}}),
             {3, 2, 2}, {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
  // s64 data goes through the same byte-level copy.
  expect_s64(run1("Transpose", {rt(s64({2, 2}, {1, 2, 3, 4}))}), {2, 2}, {1, 3, 2, 4});
  expect_error("Transpose", {rt(iota({2, 3, 2}))}, {{"perm", std::vector<int64_t>{0, 0, 1}}},
               ErrorKind::kInvalidInput, "not a permutation");
  expect_error("Transpose", {rt(iota({2, 3, 2}))}, {{"perm", std::vector<int64_t>{1, 0}}},
               ErrorKind::kInvalidInput, "perm");
}

TEST(TensorKernels, ConcatAlongAxis) {
  const Tensor a = f32({2, 1}, {1, 2});
  const Tensor b = f32({2, 3}, {3, 4, 5, 6, 7, 8});
  expect_f32(run1("Concat", {rt(a), rt(b)}, {{"axis", int64_t{1}}}), {2, 4},
             {1, 3, 4, 5, 2, 6, 7, 8});
  expect_f32(run1("Concat", {rt(a), rt(b)}, {{"axis", int64_t{-1}}}), {2, 4},
             {1, 3, 4, 5, 2, 6, 7, 8});
  expect_f32(run1("Concat", {rt(a), rt(f32({1, 1}, {9}))}, {{"axis", int64_t{0}}}), {3, 1},
             {1, 2, 9});
  // s64 shape pieces, including an empty one.
  expect_s64(run1("Concat", {cst(s64({1}, {-1})), cst(s64({0}, {})), cst(s64({2}, {3, 4}))},
                  {{"axis", int64_t{0}}}),
             {3}, {-1, 3, 4});
  expect_error("Concat", {rt(a), rt(f32({3, 1}, {1, 2, 3}))}, {{"axis", int64_t{1}}},
               ErrorKind::kInvalidInput, "differ outside axis 1");
  expect_error("Concat", {rt(a), rt(f32({2}, {1, 2}))}, {{"axis", int64_t{0}}},
               ErrorKind::kInvalidInput, "ranks differ");
  expect_error("Concat", {rt(a), rt(s64({2, 1}, {1, 2}))}, {{"axis", int64_t{0}}},
               ErrorKind::kInvalidInput, "dtype");
  expect_error("Concat", {rt(a), rt(b)}, {{"axis", int64_t{2}}}, ErrorKind::kInvalidInput,
               "out of range");
  expect_error("Concat", {rt(a), rt(b)}, {}, ErrorKind::kInvalidInput, "'axis' is required");
}

TEST(TensorKernels, SplitEqualExplicitAndUneven) {
  auto outs = run("Split", {rt(iota({6}))}, {}, 3);
  expect_f32(outs[0], {2}, {0, 1});
  expect_f32(outs[1], {2}, {2, 3});
  expect_f32(outs[2], {2}, {4, 5});

  outs = run("Split", {rt(iota({2, 3})), cst(s64({2}, {1, 2}))}, {{"axis", int64_t{1}}}, 2);
  expect_f32(outs[0], {2, 1}, {0, 3});
  expect_f32(outs[1], {2, 2}, {1, 2, 4, 5});

  outs = run("Split", {rt(iota({5}))}, {}, 2);  // opset 18: last chunk smaller
  expect_f32(outs[0], {3}, {0, 1, 2});
  expect_f32(outs[1], {2}, {3, 4});

  expect_error("Split", {rt(iota({3})), cst(s64({2}, {1, 1}))}, {}, ErrorKind::kInvalidInput,
               "sums to 2", 2);
  expect_error("Split", {rt(iota({3})), cst(s64({3}, {1, 1, 1}))}, {}, ErrorKind::kInvalidInput,
               "2 outputs", 2);
  expect_error("Split", {rt(iota({5}))}, {}, ErrorKind::kInvalidInput, "cannot split", 4);
}

// --- slicing and indexing ---------------------------------------------------------------

TEST(TensorKernels, SliceStepsClampingAndSentinels) {
  const Tensor x = iota({10});
  auto slice = [&](int64_t start, int64_t end, int64_t step) {
    return run1("Slice", {rt(x), cst(s64({1}, {start})), cst(s64({1}, {end})), cst(s64({1}, {0})),
                          cst(s64({1}, {step}))});
  };
  expect_f32(slice(1, 8, 3), {3}, {1, 4, 7});
  expect_f32(slice(-3, 1000, 1), {3}, {7, 8, 9});
  expect_f32(slice(0, kI64Max, 4), {3}, {0, 4, 8});
  expect_f32(slice(-1, kI64Min, -1), {10}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  expect_f32(slice(8, 2, -2), {3}, {8, 6, 4});
  expect_f32(slice(100, -100, -3), {4}, {9, 6, 3, 0});
  expect_f32(slice(5, 2, 1), {0}, {});
  expect_f32(slice(2, 5, -1), {0}, {});
  expect_f32(slice(-1, -2, kI64Min), {1}, {9});
}

TEST(TensorKernels, SliceMultiAxisDefaultsAndErrors) {
  const Tensor x = iota({3, 4});
  // Axes out of order and negative; s32 parameters.
  expect_f32(run1("Slice", {rt(x), cst(s32({2}, {3, 0})), cst(s32({2}, {0, 3})),
                            cst(s32({2}, {-1, 0})), cst(s32({2}, {-2, 2}))}),
             {2, 2}, {3, 1, 11, 9});
  // Without axes and steps: the leading axes, step 1.
  expect_f32(run1("Slice", {rt(x), cst(s64({1}, {1})), cst(s64({1}, {3}))}), {2, 4},
             {4, 5, 6, 7, 8, 9, 10, 11});
  // Absent axes with given steps.
  expect_f32(run1("Slice", {rt(x), cst(s64({2}, {0, 1})), cst(s64({2}, {3, 4})), absent(),
                            cst(s64({2}, {2, 2}))}),
             {2, 2}, {1, 3, 9, 11});
  expect_error(
      "Slice",
      {rt(x), cst(s64({1}, {0})), cst(s64({1}, {2})), cst(s64({1}, {0})), cst(s64({1}, {0}))}, {},
      ErrorKind::kInvalidInput, "step");
  expect_error("Slice",
               {rt(x), cst(s64({2}, {0, 0})), cst(s64({2}, {2, 2})), cst(s64({2}, {1, -1}))}, {},
               ErrorKind::kInvalidInput, "repeated");
  expect_error("Slice", {rt(x), cst(s64({1}, {0})), cst(s64({1}, {2})), cst(s64({1}, {2}))}, {},
               ErrorKind::kInvalidInput, "out of range");
  expect_error("Slice", {rt(x), rt(s64({1}, {0})), cst(s64({1}, {2}))}, {}, ErrorKind::kUnsupported,
               "must be a constant");
}

TEST(TensorKernels, GatherAxesAndNegativeIndices) {
  const Tensor x = iota({3, 2});
  expect_f32(run1("Gather", {rt(x), cst(s64({2}, {-1, 0}))}), {2, 2}, {4, 5, 0, 1});
  expect_f32(run1("Gather", {rt(x), rt(s32({2, 2}, {1, 0, 0, -1}))}, {{"axis", int64_t{1}}}),
             {3, 2, 2}, {1, 0, 0, 1, 3, 2, 2, 3, 5, 4, 4, 5});
  // A scalar index drops the axis: Shape -> Gather(0-d) -> a dimension as an s64 scalar.
  expect_s64(run1("Gather", {cst(s64({4}, {1, 3, 224, 224})), cst(s64({}, {1}))}), {}, {3});
  expect_f32(run1("Gather", {rt(x), cst(s64({}, {-3}))}), {2}, {0, 1});
  // Out of range: constants fail inference, runtime indices fail in the kernel.
  expect_error("Gather", {rt(x), cst(s64({1}, {3}))}, {}, ErrorKind::kInvalidInput, "out of range");
  expect_error("Gather", {rt(x), rt(s64({1}, {-4}))}, {}, ErrorKind::kInvalidInput, "out of range");
  expect_error("Gather", {rt(x), rt(f32({1}, {0}))}, {}, ErrorKind::kInvalidInput, "indices");
}

TEST(TensorKernels, ShapeAndSize) {
  const Tensor x(DType::kF32, {2, 3, 4});
  expect_s64(run1("Shape", {rt(x)}), {3}, {2, 3, 4});
  expect_s64(run1("Shape", {rt(x)}, {{"start", int64_t{1}}}), {2}, {3, 4});
  expect_s64(run1("Shape", {rt(x)}, {{"start", int64_t{-2}}, {"end", int64_t{-1}}}), {1}, {3});
  expect_s64(run1("Shape", {rt(x)}, {{"end", int64_t{100}}}), {3}, {2, 3, 4});
  expect_s64(run1("Shape", {rt(x)}, {{"start", int64_t{2}}, {"end", int64_t{1}}}), {0}, {});
  expect_s64(run1("Shape", {rt(f32({}, {1}))}), {0}, {});
  expect_s64(run1("Size", {rt(x)}), {}, {24});
}

// --- constants ---------------------------------------------------------------------------

TEST(TensorKernels, ConstantAttributeForms) {
  expect_values<int32_t>(run1("Constant", {}, {{"value", s32({2}, {5, 6})}}), {2}, {5, 6});
  expect_f32(run1("Constant", {}, {{"value_float", 1.5f}}), {}, {1.5f});
  expect_f32(run1("Constant", {}, {{"value_floats", std::vector<float>{1, 2, 3}}}), {3}, {1, 2, 3});
  expect_s64(run1("Constant", {}, {{"value_int", int64_t{7}}}), {}, {7});
  expect_s64(run1("Constant", {}, {{"value_ints", std::vector<int64_t>{1, -2}}}), {2}, {1, -2});
  expect_error("Constant", {}, {}, ErrorKind::kInvalidInput, "exactly one");
  expect_error("Constant", {}, {{"value_int", int64_t{1}}, {"value_float", 1.0f}},
               ErrorKind::kInvalidInput, "exactly one");
  expect_error("Constant", {}, {{"value_string", std::string("a")}}, ErrorKind::kUnsupported,
               "string");
}

TEST(TensorKernels, ConstantOfShape) {
  expect_f32(run1("ConstantOfShape", {cst(s64({2}, {2, 3}))}), {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_s64(run1("ConstantOfShape", {cst(s64({2}, {1, 3}))}, {{"value", s64({1}, {7})}}), {1, 3},
             {7, 7, 7});
  expect_f32(run1("ConstantOfShape", {cst(s64({1}, {2}))}, {{"value", f32({1}, {-1.5f})}}), {2},
             {-1.5f, -1.5f});
  expect_f32(run1("ConstantOfShape", {cst(s64({0}, {}))}, {{"value", f32({1}, {4})}}), {}, {4});
  expect_error("ConstantOfShape", {rt(s64({1}, {2}))}, {}, ErrorKind::kUnsupported,
               "must be a constant");
  expect_error("ConstantOfShape", {cst(s64({1}, {-2}))}, {}, ErrorKind::kInvalidInput, "negative");
}

TEST(TensorKernels, RangeCountsAndValues) {
  expect_f32(run1("Range", {cst(f32({}, {1})), cst(f32({}, {2})), cst(f32({}, {0.25f}))}), {4},
             {1, 1.25f, 1.5f, 1.75f});
  const Tensor r = run1("Range", {cst(f32({}, {1})), cst(f32({}, {2})), cst(f32({}, {0.3f}))});
  ASSERT_EQ(r.shape(), Shape({4}));  // ceil(1 / 0.3)
  EXPECT_NEAR(r.data<float>()[3], 1.9f, 1e-6f);
  expect_s64(run1("Range", {cst(s64({}, {10})), cst(s64({}, {4})), cst(s64({}, {-3}))}), {2},
             {10, 7});
  expect_values<int32_t>(run1("Range", {cst(s32({}, {0})), cst(s32({}, {4})), cst(s32({}, {1}))}),
                         {4}, {0, 1, 2, 3});
  expect_s64(run1("Range", {cst(s64({}, {5})), cst(s64({}, {0})), cst(s64({}, {1}))}), {0}, {});
  expect_error("Range", {cst(s64({}, {0})), cst(s64({}, {4})), cst(s64({}, {0}))}, {},
               ErrorKind::kInvalidInput, "delta is 0");
  expect_error("Range", {rt(s64({}, {0})), cst(s64({}, {4})), cst(s64({}, {1}))}, {},
               ErrorKind::kUnsupported, "must be a constant");
}

// --- broadcasting copies ---------------------------------------------------------------

TEST(TensorKernels, ExpandIsBidirectional) {
  const Tensor y = run1("Expand", {rt(f32({3, 1}, {1, 2, 3})), cst(s64({3}, {2, 1, 4}))});
  ASSERT_EQ(y.shape(), Shape({2, 3, 4}));
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(y.data<float>()[(b * 3 + j) * 4 + k], static_cast<float>(j + 1));
  // A smaller target shape keeps the input's larger dims.
  expect_f32(run1("Expand", {rt(f32({3}, {1, 2, 3})), cst(s64({1}, {1}))}), {3}, {1, 2, 3});
  expect_s64(run1("Expand", {rt(s64({}, {9})), cst(s64({2}, {2, 2}))}), {2, 2}, {9, 9, 9, 9});
  expect_f32(run1("Expand", {rt(f32({1, 2}, {1, 2})), cst(s64({2}, {2, 1}))}), {2, 2},
             {1, 2, 1, 2});
  expect_error("Expand", {rt(f32({3}, {1, 2, 3})), cst(s64({1}, {2}))}, {},
               ErrorKind::kInvalidInput, "cannot expand");
}

TEST(TensorKernels, TileRepeatsEachAxis) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_f32(run1("Tile", {rt(x), cst(s64({2}, {2, 1}))}), {4, 3},
             {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_f32(run1("Tile", {rt(x), cst(s64({2}, {1, 2}))}), {2, 6},
             {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  const Tensor both = run1("Tile", {rt(x), cst(s64({2}, {2, 2}))});
  ASSERT_EQ(both.shape(), Shape({4, 6}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      EXPECT_EQ(both.data<float>()[i * 6 + j], x.data<float>()[(i % 2) * 3 + j % 3]);
  EXPECT_EQ(run1("Tile", {rt(x), cst(s64({2}, {0, 1}))}).shape(), Shape({0, 3}));
  expect_error("Tile", {rt(x), cst(s64({1}, {2}))}, {}, ErrorKind::kInvalidInput, "repeats");
}

// --- casts -----------------------------------------------------------------------------

Attrs to(int onnx_code) { return {{"to", int64_t{onnx_code}}}; }

TEST(TensorKernels, CastFloatToIntegerTruncatesAndSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_values<int32_t>(
      run1("Cast", {rt(f32({5}, {2.7f, -2.7f, 1e10f, nan, -1e10f}))}, to(6)), {5},
      {2, -2, std::numeric_limits<int32_t>::max(), 0, std::numeric_limits<int32_t>::min()});
  expect_values<uint8_t>(run1("Cast", {rt(f32({3}, {-5, 300, 3.9f}))}, to(2)), {3}, {0, 255, 3});
  expect_s64(run1("Cast", {rt(f32({2}, {2.9f, -2.9f}))}, to(7)), {2}, {2, -2});
}

TEST(TensorKernels, CastToHalfPrecisionRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between f16 1.0 (0x3C00) and 1 + 2^-10 (0x3C01): even wins.
  const Tensor h =
      run1("Cast", {rt(f32({4}, {1.00048828125f, 1.00146484375f, 65504, 1e6f}))}, to(10));
  ASSERT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.bits16()[0], 0x3C00);
  EXPECT_EQ(h.bits16()[1], 0x3C02);
  EXPECT_EQ(h.bits16()[2], 0x7BFF);
  EXPECT_EQ(h.bits16()[3], 0x7C00);  // overflow to +inf
  const Tensor b = run1("Cast", {rt(f32({2}, {1.00390625f, 1.01171875f}))}, to(16));
  ASSERT_EQ(b.dtype(), DType::kBF16);
  EXPECT_EQ(b.bits16()[0], 0x3F80);
  EXPECT_EQ(b.bits16()[1], 0x3F82);
  // And back: f16 -> f32 is exact.
  Tensor half(DType::kF16, {2});
  half.bits16()[0] = 0x3C00;
  half.bits16()[1] = 0xC100;  // -2.5
  expect_f32(run1("Cast", {rt(half)}, to(1)), {2}, {1.0f, -2.5f});
}

TEST(TensorKernels, CastBetweenIntegersWrapsAndToFloatRounds) {
  expect_values<int8_t>(run1("Cast", {rt(s64({3}, {300, -129, 5}))}, to(3)), {3}, {44, 127, 5});
  expect_f32(run1("Cast", {rt(Tensor::from_vector<uint8_t>({2}, {0, 255}))}, to(1)), {2}, {0, 255});
  expect_f32(run1("Cast", {rt(s32({1}, {16777217}))}, to(1)), {1}, {16777216.0f});
  expect_s64(run1("Cast", {rt(s32({2}, {-1, 7}))}, to(7)), {2}, {-1, 7});
  expect_f32(run1("Cast", {rt(f32({1}, {0.5f}))}, to(1)), {1}, {0.5f});
  expect_error("Cast", {rt(f32({1}, {1}))}, to(11), ErrorKind::kUnsupported, "11");
  expect_error("Cast", {rt(f32({1}, {1}))}, {}, ErrorKind::kInvalidInput, "'to' is required");
}

TEST(TensorKernels, GatherElementsOnnxExamples) {
  const Tensor d2 = f32({2, 2}, {1, 2, 3, 4});
  expect_f32(
      run1("GatherElements", {rt(d2), cst(s64({2, 2}, {0, 0, 1, 0}))}, {{"axis", int64_t{1}}}),
      {2, 2}, {1, 1, 4, 3});
  const Tensor d3 = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_f32(run1("GatherElements", {rt(d3), rt(s32({2, 3}, {1, 2, 0, 2, 0, 0}))}), {2, 3},
             {4, 8, 3, 7, 2, 3});
  // Negative indices count from the end; indices may be smaller than data off the axis.
  expect_f32(run1("GatherElements", {rt(d3), cst(s64({1, 2}, {-1, -3}))}, {{"axis", int64_t{-1}}}),
             {1, 2}, {3, 1});
  // Any dtype: s64 data, and a 3-D case against the defining formula.
  expect_s64(run1("GatherElements", {rt(s64({3}, {7, 8, 9})), cst(s64({4}, {2, 2, 0, -2}))}), {4},
             {9, 9, 7, 8});
  const Tensor x = iota({2, 3, 4});
  const Tensor idx = s64({2, 2, 4}, {0, 2, 1, 0, 2, 2, 0, 1, 1, 0, 0, 2, -1, 1, 2, 0});
  const Tensor y = run1("GatherElements", {rt(x), cst(idx)}, {{"axis", int64_t{1}}});
  ASSERT_EQ(y.shape(), Shape({2, 2, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k) {
        int64_t v = idx.data<int64_t>()[(i * 2 + j) * 4 + k];
        if (v < 0) v += 3;
        EXPECT_EQ(y.data<float>()[(i * 2 + j) * 4 + k], static_cast<float>((i * 3 + v) * 4 + k));
      }
}

TEST(TensorKernels, GatherElementsErrorsNameTheNode) {
  const Tensor d = f32({2, 2}, {1, 2, 3, 4});
  expect_error("GatherElements", {rt(d), cst(s64({2}, {0, 1}))}, {}, ErrorKind::kInvalidInput,
               "rank");
  expect_error("GatherElements", {rt(d), cst(s64({1, 3}, {0, 1, 0}))}, {}, ErrorKind::kInvalidInput,
               "exceed data");
  expect_error("GatherElements", {rt(d), cst(s64({1, 1}, {2}))}, {}, ErrorKind::kInvalidInput,
               "out of range");
  expect_error("GatherElements", {rt(d), rt(s64({1, 1}, {-3}))}, {}, ErrorKind::kInvalidInput,
               "out of range");
  expect_error("GatherElements", {rt(d), rt(f32({1, 1}, {0}))}, {}, ErrorKind::kInvalidInput,
               "indices");
  expect_error("GatherElements", {rt(d), cst(s64({1, 1}, {0}))}, {{"axis", int64_t{2}}},
               ErrorKind::kInvalidInput, "out of range");
}

// The ONNX spec's example: x = 0..47 of shape [1, 8, 2, 3], blocksize 2.
TEST(TensorKernels, DepthToSpaceDcrAndCrd) {
  const Tensor x = iota({1, 8, 2, 3});
  const Attrs b2 = {{"blocksize", int64_t{2}}};
  expect_f32(
      run1("DepthToSpace", {rt(x)}, b2), {1, 2, 4, 6},
      {0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4,  16, 5,  17, 27, 39, 28, 40, 29, 41,
       6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9, 21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47});
  expect_f32(
      run1("DepthToSpace", {rt(x)}, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}),
      {1, 2, 4, 6}, {0,  6,  1,  7,  2,  8,  12, 18, 13, 19, 14, 20, 3,  9,  4,  10,
                     5,  11, 15, 21, 16, 22, 17, 23, 24, 30, 25, 31, 26, 32, 36, 42,
                     37, 43, 38, 44, 27, 33, 28, 34, 29, 35, 39, 45, 40, 46, 41, 47});
  // Channels per block: DCR takes channel (b1 * 2 + b2) * C' + c', CRD c' * 4 + b1 * 2 + b2.
  expect_f32(run1("DepthToSpace", {rt(iota({1, 8, 1, 1}))}, b2), {1, 2, 2, 2},
             {0, 2, 4, 6, 1, 3, 5, 7});
  expect_values<uint8_t>(
      run1("DepthToSpace", {rt(Tensor::from_vector<uint8_t>({1, 4, 1, 1}, {1, 2, 3, 4}))}, b2),
      {1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run1("DepthToSpace", {rt(iota({2, 9, 1, 2}))}, {{"blocksize", int64_t{3}}}).shape(),
            Shape({2, 1, 3, 6}));
  expect_error("DepthToSpace", {rt(iota({1, 8, 2, 3}))}, {}, ErrorKind::kInvalidInput,
               "'blocksize' is required");
  expect_error("DepthToSpace", {rt(iota({1, 6, 2, 3}))}, b2, ErrorKind::kInvalidInput,
               "not divisible");
  expect_error("DepthToSpace", {rt(iota({8, 2, 3}))}, b2, ErrorKind::kInvalidInput, "4-D");
  expect_error("DepthToSpace", {rt(x)}, {{"blocksize", int64_t{2}}, {"mode", std::string("RCD")}},
               ErrorKind::kInvalidInput, "mode");
}

TEST(TensorKernels, SpaceToDepthInvertsDepthToSpaceDcr) {
  const Attrs b2 = {{"blocksize", int64_t{2}}};
  // Channel (b1 * 2 + b2) * C + c holds x[c, b1, b2].
  expect_f32(run1("SpaceToDepth", {rt(iota({1, 2, 2, 2}))}, b2), {1, 8, 1, 1},
             {0, 4, 1, 5, 2, 6, 3, 7});
  const Tensor x = iota({2, 3, 4, 6});
  const Tensor packed = run1("SpaceToDepth", {rt(x)}, b2);
  ASSERT_EQ(packed.shape(), Shape({2, 12, 2, 3}));
  expect_f32(run1("DepthToSpace", {rt(packed)}, b2), x.shape(), x.to_float_vector());
  expect_error("SpaceToDepth", {rt(iota({1, 1, 3, 4}))}, b2, ErrorKind::kInvalidInput,
               "divisible by blocksize");
  expect_error("SpaceToDepth", {rt(iota({1, 1, 4, 4}))}, {{"blocksize", int64_t{0}}},
               ErrorKind::kInvalidInput, "must be positive");
}

TEST(TensorKernels, EyeLikeDiagonalsAndDTypes) {
  const Tensor x = s32({3, 4}, std::vector<int32_t>(12, 7));
  expect_values<int32_t>(run1("EyeLike", {rt(x)}), {3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  expect_values<int32_t>(run1("EyeLike", {rt(x)}, {{"k", int64_t{1}}}), {3, 4},
                         {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
  expect_values<int32_t>(run1("EyeLike", {rt(x)}, {{"k", int64_t{-2}}}), {3, 4},
                         {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
  expect_values<int32_t>(run1("EyeLike", {rt(x)}, {{"k", int64_t{4}}}), {3, 4},
                         std::vector<int32_t>(12, 0));
  expect_f32(run1("EyeLike", {rt(x)}, {{"dtype", int64_t{1}}}), {3, 4},
             {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  expect_error("EyeLike", {rt(x)}, {{"dtype", int64_t{11}}}, ErrorKind::kUnsupported, "11");
  expect_error("EyeLike", {rt(iota({2, 2, 2}))}, {}, ErrorKind::kInvalidInput, "2-D");
}

TEST(TensorKernels, CastLikeTakesTheSecondInputsDType) {
  const Tensor like_f16(DType::kF16, {1});
  const Tensor h = run1("CastLike", {rt(f32({2}, {1.00048828125f, -2.5f})), cst(like_f16)});
  ASSERT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(h.bits16()[0], 0x3C00);  // rounds to nearest even, as Cast
  EXPECT_EQ(h.bits16()[1], 0xC100);
  expect_f32(run1("CastLike", {rt(h), cst(f32({}, {0}))}), {2}, {1, -2.5f});
  expect_values<int32_t>(run1("CastLike", {rt(f32({2}, {2.9f, -2.9f})), rt(s32({3}, {0, 0, 0}))}),
                         {2}, {2, -2});
  // The second input only gives a type: not a parameter.
  Graph g = one_node_graph("CastLike", {rt(f32({2}, {1, 2})), cst(f32({4}, {0, 0, 0, 0}))});
  g.infer();
  EXPECT_EQ(g.param_count(), 0);
}

TEST(TensorKernels, CastToAndFromBool) {
  const Tensor b = run1("Cast", {rt(f32({4}, {0, -0.f, 2.5f, std::nanf("")}))}, to(9));
  ASSERT_EQ(b.dtype(), DType::kBool);
  EXPECT_EQ(b.to_int64_vector(),
            (std::vector<int64_t>{0, 0, 1, 1}));  // nonzero, NaN included, is true
  expect_f32(run1("Cast", {rt(b)}, to(1)), {4}, {0, 0, 1, 1});
  expect_s64(run1("Cast", {rt(s64({3}, {0, 7, -1}))}, to(9)).cast(DType::kS64), {3}, {0, 1, 1});
}

TEST(TensorKernels, ScatterNdReplacesSlicesInOrder) {
  // k = 1: whole rows of a [3, 2] matrix; the later of two equal indices wins.
  expect_f32(run1("ScatterND", {rt(f32({3, 2}, {0, 0, 0, 0, 0, 0})), cst(s64({3, 1}, {2, 0, 2})),
                                rt(f32({3, 2}, {1, 2, 3, 4, 5, 6}))}),
             {3, 2}, {3, 4, 0, 0, 5, 6});
  // k = rank: single elements, a negative index counted from the end.
  expect_s64(run1("ScatterND", {rt(s64({2, 2}, {1, 2, 3, 4})), cst(s64({2, 2}, {0, 1, -1, 0})),
                                rt(s64({2}, {9, 8}))}),
             {2, 2}, {1, 9, 8, 4});
  expect_infer_error("ScatterND",
                     {rt(f32({2}, {0, 0})), cst(s64({1, 1}, {0})), rt(f32({2}, {1, 2}))}, {},
                     ErrorKind::kInvalidInput, "updates");
  expect_infer_error("ScatterND", {rt(f32({2}, {0, 0})), cst(s64({1, 1}, {0})), rt(f32({1}, {1}))},
                     {{"reduction", std::string("add")}}, ErrorKind::kUnsupported, "reduction");
  expect_error("ScatterND", {rt(f32({2}, {0, 0})), rt(s64({1, 1}, {2})), rt(f32({1}, {1}))}, {},
               ErrorKind::kInvalidInput, "out of range");
}

// --- the exporter pattern constant folding collapses -----------------------------------------

TEST(TensorKernels, ShapeGatherUnsqueezeConcatReshapeChain) {
  // x.view(x.size(0), -1) as exported: each step's output is the next step's constant input.
  const Tensor x = iota({2, 3, 4, 4});
  const Tensor shape = run1("Shape", {rt(x)});
  const Tensor batch = run1("Gather", {cst(shape), cst(s64({}, {0}))});
  const Tensor batch1 = run1("Unsqueeze", {cst(batch), cst(s64({1}, {0}))});
  const Tensor target = run1("Concat", {cst(batch1), cst(s64({1}, {-1}))}, {{"axis", int64_t{0}}});
  expect_s64(target, {2}, {2, -1});
  const Tensor y = run1("Reshape", {rt(x), cst(target)});
  ASSERT_EQ(y.shape(), Shape({2, 48}));
  EXPECT_EQ(y.data<float>()[95], 95.0f);
}

}  // namespace
}  // namespace dlas::op_test
