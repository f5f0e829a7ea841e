// Resize (opset 11-18 form): output shapes from scales and sizes, every coordinate
// transformation and nearest mode, linear and cubic interpolation, worked out by hand from
// the formulas of the ONNX spec (and its documented examples).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "algo/op_test_util.h"

namespace dlas::op_test {
namespace {

using Ints = std::vector<int64_t>;

Attrs resize_attrs(const std::string& mode, const std::string& transform,
                   const std::string& nearest = "round_prefer_floor") {
  return {{"mode", mode}, {"coordinate_transformation_mode", transform}, {"nearest_mode", nearest}};
}

Tensor resize_scales(const Tensor& x, const std::vector<float>& scales, const Attrs& attrs) {
  return run1("Resize", {{x}, absent(), cst(f32({static_cast<int64_t>(scales.size())}, scales))},
              attrs);
}

Tensor resize_sizes(const Tensor& x, const Ints& sizes, const Attrs& attrs) {
  return run1("Resize",
              {{x}, absent(), absent(), cst(s64({static_cast<int64_t>(sizes.size())}, sizes))},
              attrs);
}

// ---------------------------------------------------------------------------
// Nearest
// ---------------------------------------------------------------------------

TEST(NnResize, NearestOnnxExamples) {
  // Defaults: half_pixel, round_prefer_floor. Rows: (o + 0.5) / 2 - 0.5 = -0.25, 0.25,
  // 0.75, 1.25 -> 0, 0, 1, 1; columns: (o + 0.5) / 3 - 0.5 -> 0, 0, 0, 1, 1, 1.
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor up = resize_scales(x, {1, 1, 2, 3}, {});
  EXPECT_EQ(up.shape(), (Shape{1, 1, 4, 6}));
  expect_close(up, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, 0);
  // Scales 0.6 of [2, 4]: output floor(1.2) x floor(2.4) = 1 x 2, sampling row 1/3 -> 0 and
  // columns 1/3 -> 0, 2 -> 2.
  const Tensor x24 = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor down = resize_scales(x24, {1, 1, 0.6f, 0.6f}, {});
  EXPECT_EQ(down.shape(), (Shape{1, 1, 1, 2}));
  expect_close(down, {1, 3}, 0);
  // Sizes [1, 3]: scale 3/4 for the columns: (o + 0.5) * 4/3 - 0.5 = 1/6, 3/2, 17/6.
  expect_close(resize_sizes(x24, {1, 1, 1, 3}, {}), {1, 2, 4}, 0);
}

TEST(NnResize, NearestModesOnTies) {
  // asymmetric, 2 -> 8: source o / 4 = 0, .25, .5, .75, 1, 1.25, 1.5, 1.75 (clamped to 1).
  const Tensor x = f32({2}, {10, 20});
  auto nearest = [&](const char* mode) {
    return resize_sizes(x, {8}, resize_attrs("nearest", "asymmetric", mode));
  };
  expect_close(nearest("round_prefer_floor"), {10, 10, 10, 20, 20, 20, 20, 20}, 0);
  expect_close(nearest("round_prefer_ceil"), {10, 10, 20, 20, 20, 20, 20, 20}, 0);
  expect_close(nearest("floor"), {10, 10, 10, 10, 20, 20, 20, 20}, 0);
  expect_close(nearest("ceil"), {10, 20, 20, 20, 20, 20, 20, 20}, 0);
}

TEST(NnResize, CoordinateTransformations) {
  // 4 -> 2 (scale 0.5): half_pixel samples 0.5, 2.5 (ties round down), tf_half_pixel_for_nn
  // 1, 3, asymmetric 0, 2, align_corners 0, 3.
  const Tensor x = f32({4}, {10, 20, 30, 40});
  auto nearest = [&](const char* transform) {
    return resize_sizes(x, {2}, resize_attrs("nearest", transform));
  };
  expect_close(nearest("half_pixel"), {10, 30}, 0);
  expect_close(nearest("pytorch_half_pixel"), {10, 30}, 0);
  expect_close(nearest("tf_half_pixel_for_nn"), {20, 40}, 0);
  expect_close(nearest("asymmetric"), {10, 30}, 0);
  expect_close(nearest("align_corners"), {10, 40}, 0);
  // A length-1 output: pytorch_half_pixel samples 0, half_pixel (0.5) * 4 - 0.5 = 1.5.
  expect_close(resize_sizes(x, {1}, resize_attrs("linear", "pytorch_half_pixel")), {10}, 0);
  expect_close(resize_sizes(x, {1}, resize_attrs("linear", "half_pixel")), {25}, 0);
  expect_close(resize_sizes(x, {1}, resize_attrs("linear", "align_corners")), {10}, 0);
}

// ---------------------------------------------------------------------------
// Linear
// ---------------------------------------------------------------------------

TEST(NnResize, LinearOnnxExamples) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // half_pixel, 2 -> 4: sources -0.25 (edge), 0.25, 0.75, 1.25 (edge).
  expect_close(
      resize_scales(x, {1, 1, 2, 2}, resize_attrs("linear", "half_pixel")),
      {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4},
      1e-6);
  // align_corners, 2 -> 4: sources o / 3.
  const float t = 1.0f / 3, tt = 2.0f / 3;
  expect_close(
      resize_scales(x, {1, 1, 2, 2}, resize_attrs("linear", "align_corners")),
      {1, 1 + t, 1 + tt, 2, 1 + tt, 2, 2 + t, 2 + tt, 2 + t, 2 + tt, 3, 3 + t, 3, 3 + t, 3 + tt, 4},
      1e-6);
  // align_corners with scales 0.6 of [2, 4]: length_resized is 2.4, not the output's 2, so
  // column 1 samples 1 * 3 / 1.4 = 2.142857.
  const Tensor x24 = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_close(resize_scales(x24, {1, 1, 0.6f, 0.6f}, resize_attrs("linear", "align_corners")),
               {1, 3.1428571f}, 1e-6);
  // half_pixel downsampling: rows 1/3, columns 1/3 and 2 (scale 0.6).
  expect_close(resize_scales(x24, {1, 1, 0.6f, 0.6f}, resize_attrs("linear", "half_pixel")),
               {2.6666667f, 4.3333333f}, 1e-6);
}

TEST(NnResize, LinearAsymmetricAndPytorchHalfPixel) {
  expect_close(resize_scales(f32({2}, {0, 10}), {2}, resize_attrs("linear", "asymmetric")),
               {0, 5, 10, 10}, 0);
  // ONNX's example: 4x4 ramp to 3x1; the column (length 1) samples 0, rows
  // (o + 0.5) * 4/3 - 0.5 = 1/6, 3/2, 17/6.
  const Tensor x = iota({1, 1, 4, 4}, 1);
  expect_close(resize_sizes(x, {1, 1, 3, 1}, resize_attrs("linear", "pytorch_half_pixel")),
               {1.6666666f, 7, 12.333333f}, 1e-6);
}

// ---------------------------------------------------------------------------
// Cubic
// ---------------------------------------------------------------------------

TEST(NnResize, CubicWeightsOnAnImpulse) {
  // asymmetric x2 of an impulse: half-way samples weigh the four neighbours with Keys'
  // kernel at distances 1.5, 0.5, 0.5, 1.5: a = -0.75 gives -0.09375 and 0.59375.
  const Tensor x = f32({5}, {0, 0, 1, 0, 0});
  expect_close(resize_scales(x, {2}, resize_attrs("cubic", "asymmetric")),
               {0, -0.09375f, 0, 0.59375f, 1, 0.59375f, 0, -0.09375f, 0, 0}, 1e-7);
  // a = -0.5: -0.0625 and 0.5625; exclude_outside drops the taps outside the input and
  // renormalises: at 0.5 the tap at -1 goes, leaving -0.0625 / 1.0625 on the impulse.
  Attrs a = resize_attrs("cubic", "asymmetric");
  a["cubic_coeff_a"] = -0.5f;
  expect_close(resize_scales(x, {2}, a), {0, -0.0625f, 0, 0.5625f, 1, 0.5625f, 0, -0.0625f, 0, 0},
               1e-7);
  a["exclude_outside"] = int64_t{1};
  const float e = -0.0625f / 1.0625f;
  expect_close(resize_scales(x, {2}, a), {0, e, 0, 0.5625f, 1, 0.5625f, 0, e, 0, 0}, 1e-7);
}

TEST(NnResize, CubicWithAHalfReproducesQuadraticsAwayFromTheEdges) {
  // Keys' kernel with a = -0.5 is exact for quadratics, so interior samples of k^2 are the
  // squared source coordinates: half_pixel x2 samples (o + 0.5) / 2 - 0.5. (a = -0.75, the
  // default, is not: it trades accuracy for sharpness.)
  Tensor x(DType::kF32, {8});
  for (int k = 0; k < 8; ++k) x.data<float>()[k] = static_cast<float>(k * k);
  Attrs a = resize_attrs("cubic", "half_pixel");
  a["cubic_coeff_a"] = -0.5f;
  const Tensor y = resize_scales(x, {2}, a);
  ASSERT_EQ(y.shape(), (Shape{16}));
  for (int o = 3; o < 13; ++o) {  // every tap inside the input
    const double want = std::pow((o + 0.5) / 2 - 0.5, 2);
    EXPECT_NEAR(y.get_as_double(o), want, 1e-6 * std::max(1.0, want)) << "output " << o;
  }
  // At the edges the clamped taps break it: output 0 samples -0.25.
  EXPECT_NEAR(y.get_as_double(0), -0.0703125, 1e-7);
}

// ---------------------------------------------------------------------------
// tf_crop_and_resize, axes, dtypes, errors
// ---------------------------------------------------------------------------

TEST(NnResize, TfCropAndResizeOnnxExamples) {
  // 4x4 ramp 1..16 to 3x3 inside roi rows [0.4, 0.6], columns [0.6, 0.8]: rows sample
  // 1.2, 1.5, 1.8 and columns 1.8, 2.1, 2.4; the value at (r, c) is 1 + 4r + c.
  const Tensor x = iota({1, 1, 4, 4}, 1);
  const Attrs a = resize_attrs("linear", "tf_crop_and_resize");
  const Tensor sizes = s64({4}, {1, 1, 3, 3});
  expect_close(
      run1("Resize",
           {{x}, cst(f32({8}, {0, 0, 0.4f, 0.6f, 1, 1, 0.6f, 0.8f})), absent(), cst(sizes)}, a),
      {7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10, 10.3f, 10.6f}, 1e-6);
  // Sources beyond the input (row 3.6, columns 3.45, 5.1) take extrapolation_value.
  Attrs e = a;
  e["extrapolation_value"] = 10.0f;
  expect_close(
      run1("Resize",
           {{x}, cst(f32({8}, {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f})), absent(), cst(sizes)}, e),
      {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10}, 1e-6);
  expect_infer_error("Resize", {{x}, absent(), absent(), cst(sizes)}, a, ErrorKind::kInvalidInput,
                     "roi");
}

TEST(NnResize, AxesEmptyScalesAndHalfPrecision) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor full = resize_scales(x, {1, 1, 2, 2}, resize_attrs("linear", "half_pixel"));
  // Opset 18's axes: scales for the listed axes only.
  Attrs a = resize_attrs("linear", "half_pixel");
  a["axes"] = Ints{2, -1};
  expect_close(resize_scales(x, {2, 2}, a), full, 0);
  a["axes"] = Ints{3};
  const Tensor cols = resize_sizes(x, {3}, a);
  EXPECT_EQ(cols.shape(), (Shape{1, 1, 2, 3}));
  // Opsets 11-12 pass an empty scales tensor next to sizes.
  expect_close(run1("Resize", {{x}, absent(), cst(f32({0}, {})), cst(s64({4}, {1, 1, 4, 4}))},
                    resize_attrs("linear", "half_pixel")),
               full, 0);
  const Tensor h =
      resize_scales(x.cast(DType::kF16), {1, 1, 2, 2}, resize_attrs("linear", "half_pixel"));
  EXPECT_EQ(h.dtype(), DType::kF16);
  expect_close(h, full, 0);  // every value has at most 4 significant bits
  // Scales and roi are not parameters.
  Graph g = one_node_graph("Resize", {{x}, absent(), cst(f32({4}, {1, 1, 2, 2}))});
  g.infer();
  EXPECT_EQ(g.param_count(), 0);
}

TEST(NnResize, OutputShapes) {
  const Tensor x(DType::kF32, {1, 3, 5, 7});
  EXPECT_EQ(resize_scales(x, {1, 1, 0.5f, 1.5f}, {}).shape(), (Shape{1, 3, 2, 10}));
  EXPECT_EQ(resize_scales(x, {2, 1, 1.0f / 3, 0.1f}, {}).shape(), (Shape{2, 3, 1, 0}));
  EXPECT_EQ(resize_sizes(x, {1, 3, 9, 1}, {}).shape(), (Shape{1, 3, 9, 1}));
}

TEST(NnResize, Errors) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor sc = f32({4}, {1, 1, 2, 2});
  const Tensor sz = s64({4}, {1, 1, 4, 4});
  expect_infer_error("Resize", {{x}, absent(), cst(sc), cst(sz)}, {}, ErrorKind::kInvalidInput,
                     "exactly one of scales");
  expect_infer_error("Resize", {{x}}, {}, ErrorKind::kInvalidInput, "exactly one of scales");
  expect_infer_error("Resize", {{x}, absent(), {sc}}, {}, ErrorKind::kUnsupported,
                     "must be a constant");
  expect_infer_error("Resize", {{x}, absent(), cst(f32({3}, {1, 2, 2}))}, {},
                     ErrorKind::kInvalidInput, "3 values for 4 axes");
  expect_infer_error("Resize", {{x}, absent(), cst(f32({4}, {1, 1, -2, 2}))}, {},
                     ErrorKind::kInvalidInput, "positive");
  expect_infer_error("Resize", {{x}, absent(), absent(), cst(s64({4}, {1, 1, -1, 2}))}, {},
                     ErrorKind::kInvalidInput, "negative");
  expect_infer_error("Resize", {{x}, absent(), cst(sc)}, {{"mode", std::string("bicubic")}},
                     ErrorKind::kInvalidInput, "unknown mode");
  expect_infer_error("Resize", {{x}, absent(), cst(sc)},
                     {{"coordinate_transformation_mode", std::string("half_pixel_symmetric")}},
                     ErrorKind::kInvalidInput, "coordinate_transformation_mode");
  expect_infer_error("Resize", {{x}, absent(), cst(sc)}, {{"antialias", int64_t{1}}},
                     ErrorKind::kUnsupported, "antialias");
  expect_infer_error("Resize", {{x}, absent(), absent(), cst(sz)},
                     {{"keep_aspect_ratio_policy", std::string("not_larger")}},
                     ErrorKind::kUnsupported, "keep_aspect_ratio_policy");
  expect_infer_error("Resize", {{x}, absent(), cst(f32({2}, {2, 2}))}, {{"axes", Ints{2, 2}}},
                     ErrorKind::kInvalidInput, "repeated");
  expect_infer_error("Resize", {{s64({2}, {1, 2})}, absent(), cst(f32({1}, {2}))}, {},
                     ErrorKind::kUnsupported, "s64");
}

}  // namespace
}  // namespace dlas::op_test
