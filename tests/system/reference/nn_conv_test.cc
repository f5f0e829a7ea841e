// Conv and ConvTranspose: shape inference, reference kernels against an explicit
// im2col matrix product, the adjoint identity <conv(x), r> == <x, convT(r)>, and
// hand-computed ONNX examples.
#include <gtest/gtest.h>

#include <random>

#include "algo/op_test_util.h"
#include "dlas/model/op_schema.h"

namespace dlas::op_test {
namespace {

std::vector<int64_t> unravel(int64_t i, const Shape& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t t = dims.size(); t-- > 0;) {
    idx[t] = i % dims[t];
    i /= dims[t];
  }
  return idx;
}

struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> strides, dilations, pads;
  int64_t group = 1;
  bool bias = false;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

// ONNX NOTSET output shape, written out independently of the schema.
Shape expected_conv_shape(const ConvCase& c) {
  const size_t n = c.x.size() - 2;
  Shape y = {c.x[0], c.w[0]};
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (c.w[i + 2] - 1) * c.dilations[i] + 1;
    y.push_back((c.x[i + 2] + c.pads[i] + c.pads[i + n] - eff) / c.strides[i] + 1);
  }
  return y;
}

// Conv as im2col: per image and group, a [Cg * K, P] column matrix (P output positions,
// zeros where a tap reads padding) multiplied by the [Mg, Cg * K] weight matrix.
std::vector<float> conv_im2col(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b,
                               const Shape& y_shape) {
  const size_t n = c.x.size() - 2;
  const Shape in_sp(c.x.begin() + 2, c.x.end()), k_sp(c.w.begin() + 2, c.w.end());
  const Shape out_sp(y_shape.begin() + 2, y_shape.end());
  const int64_t cg = c.x[1] / c.group, mg = c.w[0] / c.group;
  const int64_t kk = shape_numel(k_sp), p_count = shape_numel(out_sp);
  const int64_t in_count = shape_numel(in_sp);
  std::vector<float> y(static_cast<size_t>(shape_numel(y_shape)));
  std::vector<double> col(static_cast<size_t>(cg * kk * p_count));
  for (int64_t img = 0; img < c.x[0]; ++img) {
    for (int64_t grp = 0; grp < c.group; ++grp) {
      for (int64_t row = 0; row < cg * kk; ++row) {
        const int64_t ch = grp * cg + row / kk;
        const auto kidx = unravel(row % kk, k_sp);
        for (int64_t p = 0; p < p_count; ++p) {
          const auto oidx = unravel(p, out_sp);
          int64_t flat = 0;
          bool inside = true;
          for (size_t t = 0; t < n; ++t) {
            const int64_t pos = oidx[t] * c.strides[t] + kidx[t] * c.dilations[t] - c.pads[t];
            inside = inside && pos >= 0 && pos < in_sp[t];
            flat = flat * in_sp[t] + pos;
          }
          col[static_cast<size_t>(row * p_count + p)] =
              inside ? x.data<float>()[(img * c.x[1] + ch) * in_count + flat] : 0.0;
        }
      }
      for (int64_t m = 0; m < mg; ++m) {
        const int64_t oc = grp * mg + m;
        for (int64_t p = 0; p < p_count; ++p) {
          double s = b ? b->data<float>()[oc] : 0.0;
          for (int64_t row = 0; row < cg * kk; ++row)
            s += w.data<float>()[oc * cg * kk + row] * col[static_cast<size_t>(row * p_count + p)];
          y[static_cast<size_t>((img * c.w[0] + oc) * p_count + p)] = static_cast<float>(s);
        }
      }
    }
  }
  return y;
}

std::map<std::string, Attribute> conv_attrs(const ConvCase& c) {
  return {{"strides", c.strides}, {"dilations", c.dilations}, {"pads", c.pads}, {"group", c.group}};
}

const ConvCase kConvCases[] = {
    {"plain", {1, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
    {"pad1_bias_batch2", {2, 3, 6, 7}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, true},
    {"stride_2x3_asym_pads", {1, 2, 7, 9}, {3, 2, 3, 2}, {2, 3}, {1, 1}, {1, 0, 2, 1}, 1, true},
    {"dilation", {1, 2, 9, 8}, {2, 2, 3, 3}, {1, 1}, {2, 3}, {2, 1, 1, 3}},
    {"grouped", {1, 4, 6, 6}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 2, true},
    {"depthwise_s2", {1, 5, 7, 7}, {5, 1, 3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 5, true},
    {"depthwise_multiplier", {1, 3, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 3},
    {"pointwise_s2", {1, 8, 7, 7}, {4, 8, 1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
    {"kernel_5x5_s2_odd", {1, 3, 11, 13}, {2, 3, 5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}, 1, true},
    {"kernel_exceeds_input", {1, 1, 2, 2}, {1, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {"long_reduction", {1, 64, 5, 5}, {8, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, true},
    {"conv1d", {2, 3, 11}, {4, 3, 3}, {2}, {2}, {1, 2}, 1, true},
    {"conv1d_grouped", {1, 6, 10}, {9, 2, 4}, {3}, {1}, {0, 1}, 3},
    {"conv3d", {1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {1, 2, 1}, {1, 1, 1}, {0, 1, 1, 1, 0, 0}, 1, true},
    {"conv3d_grouped_dilated",
     {1, 4, 5, 4, 5},
     {4, 2, 3, 2, 3},
     {2, 1, 1},
     {1, 2, 2},
     {1, 1, 1, 1, 1, 1},
     2},
};

class NnConvIm2col : public ::testing::TestWithParam<ConvCase> {};

TEST_P(NnConvIm2col, MatchesIm2colMatmul) {
  const ConvCase& c = GetParam();
  std::mt19937 rng(42);
  const Tensor x = random_tensor(c.x, rng);
  const Tensor w = random_tensor(c.w, rng);
  const Tensor b = random_tensor({c.w[0]}, rng);
  const Tensor y = run1("Conv", {{x}, cst(w), c.bias ? cst(b) : absent()}, conv_attrs(c));
  const Shape want_shape = expected_conv_shape(c);
  ASSERT_EQ(y.shape(), want_shape);
  const int64_t k = shape_numel(c.w) / c.w[0];
  expect_close(y, conv_im2col(c, x, w, c.bias ? &b : nullptr, want_shape), sum_tolerance(k),
               c.name);
}

INSTANTIATE_TEST_SUITE_P(Nn, NnConvIm2col, ::testing::ValuesIn(kConvCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ONNX's documented example: 5x5 ramp, 3x3 ones.
TEST(NnConv, OnnxBasicExample) {
  const Tensor x = iota({1, 1, 5, 5});
  const Tensor w = f32({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  expect_close(run1("Conv", {{x}, cst(w)}, {{"pads", std::vector<int64_t>{0, 0, 0, 0}}}),
               {54, 63, 72, 99, 108, 117, 144, 153, 162}, 0);
  const Tensor padded = run1("Conv", {{x}, cst(w)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(padded.shape(), (Shape{1, 1, 5, 5}));
  expect_close(padded, {12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                        117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84},
               0);
  // Stride 2 with asymmetric padding (pads 1 on H only): 4x2 output.
  const Tensor xs = iota({1, 1, 7, 5});
  const Tensor ys =
      run1("Conv", {{xs}, cst(w)},
           {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 0, 1, 0}}});
  EXPECT_EQ(ys.shape(), (Shape{1, 1, 4, 2}));
  expect_close(ys, {21, 33, 99, 117, 189, 207, 171, 183}, 0);
}

TEST(NnConv, AutoPadSameMatchesExplicitPads) {
  std::mt19937 rng(7);
  const Tensor x = random_tensor({1, 2, 7, 8}, rng);
  const Tensor w = random_tensor({3, 2, 3, 4}, rng);
  // Stride 2, dilation (1, 2): out = ceil(in / 2) = (4, 4); total pads H: 3*2+3-7 = 2,
  // W: 3*2+7-8 = 5 -> SAME_UPPER (1, 2 | 1, 3), SAME_LOWER (1, 3 | 1, 2).
  const std::map<std::string, Attribute> base = {{"strides", std::vector<int64_t>{2, 2}},
                                                 {"dilations", std::vector<int64_t>{1, 2}}};
  auto with = [&](std::map<std::string, Attribute> a, const char* k, Attribute v) {
    a[k] = std::move(v);
    return a;
  };
  const Tensor upper =
      run1("Conv", {{x}, cst(w)}, with(base, "auto_pad", std::string("SAME_UPPER")));
  const Tensor lower =
      run1("Conv", {{x}, cst(w)}, with(base, "auto_pad", std::string("SAME_LOWER")));
  ASSERT_EQ(upper.shape(), (Shape{1, 3, 4, 4}));
  const double tol = sum_tolerance(24);
  expect_close(upper,
               run1("Conv", {{x}, cst(w)}, with(base, "pads", std::vector<int64_t>{1, 2, 1, 3})),
               tol);
  expect_close(lower,
               run1("Conv", {{x}, cst(w)}, with(base, "pads", std::vector<int64_t>{1, 3, 1, 2})),
               tol);
  // VALID: no padding at all.
  const Tensor valid = run1("Conv", {{x}, cst(w)}, with(base, "auto_pad", std::string("VALID")));
  ASSERT_EQ(valid.shape(), (Shape{1, 3, 3, 1}));
  expect_close(valid, run1("Conv", {{x}, cst(w)}, base), tol);
}

TEST(NnConv, KernelShapeAttributeIsOptionalAndChecked) {
  const Tensor x = iota({1, 1, 4, 4});
  const Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, -1});
  const Tensor y = run1("Conv", {{x}, cst(w)}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  expect_close(y, std::vector<float>(9, -5.0f), 0);
  expect_infer_error("Conv", {{x}, cst(w)}, {{"kernel_shape", std::vector<int64_t>{3, 3}}},
                     ErrorKind::kInvalidInput, "kernel_shape");
}

TEST(NnConv, Float16AndBFloat16ComputeInFloat) {
  std::mt19937 rng(3);
  const Tensor x = random_tensor({1, 4, 6, 6}, rng);
  const Tensor w = random_tensor({2, 4, 3, 3}, rng);
  for (DType t : {DType::kF16, DType::kBF16}) {
    const Tensor xh = x.cast(t), wh = w.cast(t);
    const Tensor y = run1("Conv", {{xh}, cst(wh)}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ASSERT_EQ(y.dtype(), t);
    // Same computation on the rounded inputs in f32, then rounded once.
    const Tensor ref = run1("Conv", {{xh.cast(DType::kF32)}, cst(wh.cast(DType::kF32))},
                            {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    expect_close(y, ref.cast(t).to_float_vector(), 0, dtype_name(t));
  }
}

TEST(NnConv, InferenceErrorsNameTheNode) {
  const Tensor x(DType::kF32, {1, 4, 5, 5});
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {2, 3, 3, 3}))}, {},
                     ErrorKind::kInvalidInput, "input channels");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {3, 2, 3, 3}))}, {{"group", int64_t{2}}},
                     ErrorKind::kInvalidInput, "not divisible by group");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {2, 4, 7, 7}))}, {},
                     ErrorKind::kInvalidInput, "larger than padded input");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {2, 4, 3}))}, {},
                     ErrorKind::kInvalidInput, "rank");
  expect_infer_error("Conv",
                     {{x}, cst(Tensor(DType::kF32, {2, 4, 3, 3})), cst(Tensor(DType::kF32, {3}))},
                     {}, ErrorKind::kInvalidInput, "B");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {2, 4, 3, 3}))},
                     {{"strides", std::vector<int64_t>{1}}}, ErrorKind::kInvalidInput, "strides");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF32, {2, 4, 3, 3}))},
                     {{"auto_pad", std::string("SAME")}}, ErrorKind::kInvalidInput, "auto_pad");
  expect_infer_error("Conv",
                     {{Tensor(DType::kS32, {1, 4, 5, 5})}, cst(Tensor(DType::kS32, {2, 4, 3, 3}))},
                     {}, ErrorKind::kUnsupported, "s32");
  expect_infer_error("Conv", {{x}, cst(Tensor(DType::kF16, {2, 4, 3, 3}))}, {},
                     ErrorKind::kInvalidInput, "dtype");
}

TEST(NnConv, MacsCountOutputTimesReduction) {
  const ConvCase c = kConvCases[4];  // grouped: Y [1, 6, 6, 6], W [6, 2, 3, 3]
  OpRun r =
      run_op("Conv", {{Tensor(DType::kF32, c.x)}, cst(Tensor(DType::kF32, c.w))}, conv_attrs(c));
  EXPECT_EQ(r.graph.macs(), 6 * 6 * 6 * (2 * 3 * 3));
  EXPECT_EQ(r.graph.param_count(), 6 * 2 * 3 * 3);
}

// ---------------------------------------------------------------------------
// ConvTranspose
// ---------------------------------------------------------------------------

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get_as_double(i) * b.get_as_double(i);
  return s;
}

class NnConvTransposeAdjoint : public ::testing::TestWithParam<ConvCase> {};

// ConvTranspose is the adjoint of Conv with the same weights: for a conv x -> y with
// pads p, the transpose with pads p and output_padding restoring x's size satisfies
// <conv(x), r> == <x, convT(r)> for every x, r.
TEST_P(NnConvTransposeAdjoint, IsAdjointOfConv) {
  const ConvCase& c = GetParam();
  std::mt19937 rng(11);
  const Tensor x = random_tensor(c.x, rng);
  const Tensor w = random_tensor(c.w, rng);
  const Tensor y = run1("Conv", {{x}, cst(w)}, conv_attrs(c));
  const Tensor r = random_tensor(y.shape(), rng);
  const size_t n = c.x.size() - 2;
  std::vector<int64_t> out_pad(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (c.w[i + 2] - 1) * c.dilations[i] + 1;
    out_pad[i] =
        c.x[i + 2] - (c.strides[i] * (y.shape()[i + 2] - 1) + eff - c.pads[i] - c.pads[i + n]);
  }
  auto attrs = conv_attrs(c);
  attrs["output_padding"] = out_pad;
  const Tensor z = run1("ConvTranspose", {{r}, cst(w)}, attrs);
  ASSERT_EQ(z.shape(), x.shape());
  const int64_t terms = y.numel() * (shape_numel(c.w) / c.w[0]);
  const double lhs = dot(y, r), rhs = dot(x, z);
  EXPECT_NEAR(lhs, rhs, 2e-6 * static_cast<double>(terms)) << c.name;
  // ... and the bias is added once per output element.
  const Tensor b = random_tensor({c.x[1]}, rng);
  const Tensor zb = run1("ConvTranspose", {{r}, cst(w), cst(b)}, attrs);
  const int64_t plane = x.numel() / (c.x[0] * c.x[1]);
  for (int64_t i = 0; i < z.numel(); i += 7)
    EXPECT_NEAR(zb.get_as_double(i), z.get_as_double(i) + b.get_as_double((i / plane) % c.x[1]),
                1e-5);
}

INSTANTIATE_TEST_SUITE_P(Nn, NnConvTransposeAdjoint, ::testing::ValuesIn(kConvCases),
                         [](const auto& info) { return std::string(info.param.name); });

const std::vector<float> kConvTransposeOnesExample = {
    0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};

TEST(NnConvTranspose, OnnxExamples) {
  const Tensor x = iota({1, 1, 3, 3});
  const Tensor w = f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  std::vector<float> both = kConvTransposeOnesExample;
  both.insert(both.end(), kConvTransposeOnesExample.begin(), kConvTransposeOnesExample.end());
  const Tensor y = run1("ConvTranspose", {{x}, cst(w)});
  EXPECT_EQ(y.shape(), (Shape{1, 2, 5, 5}));
  expect_close(y, both, 0);
  // 1-D.
  const Tensor y1 =
      run1("ConvTranspose", {{iota({1, 1, 3})}, cst(f32({1, 2, 3}, std::vector<float>(6, 1)))});
  expect_close(y1, {0, 1, 3, 3, 2, 0, 1, 3, 3, 2}, 0);
  // Strides (3, 2) with pads (1, 2, 1, 2): the full 9x7 result cropped.
  const Tensor yp =
      run1("ConvTranspose", {{x}, cst(w)},
           {{"strides", std::vector<int64_t>{3, 2}}, {"pads", std::vector<int64_t>{1, 2, 1, 2}}});
  EXPECT_EQ(yp.shape(), (Shape{1, 2, 7, 3}));
  const std::vector<float> ch = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  std::vector<float> want = ch;
  want.insert(want.end(), ch.begin(), ch.end());
  expect_close(yp, want, 0);
}

TEST(NnConvTranspose, OutputShapeEqualsOutputPadding) {
  const Tensor x = iota({1, 1, 3, 3});
  const Tensor w = f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  const std::vector<int64_t> strides = {3, 2};
  const Tensor by_shape =
      run1("ConvTranspose", {{x}, cst(w)},
           {{"strides", strides}, {"output_shape", std::vector<int64_t>{10, 8}}});
  const Tensor by_padding =
      run1("ConvTranspose", {{x}, cst(w)},
           {{"strides", strides}, {"output_padding", std::vector<int64_t>{1, 1}}});
  ASSERT_EQ(by_shape.shape(), (Shape{1, 2, 10, 8}));
  expect_close(by_shape, by_padding, 0);
  // The extra row and column are at the end (and hold only the bias, here 0).
  EXPECT_EQ(by_shape.get_as_double(9 * 8 + 3), 0.0);
  EXPECT_EQ(by_shape.get_as_double(0), 0.0);      // x[0][0] = 0
  EXPECT_EQ(by_shape.get_as_double(8 + 2), 1.0);  // x[0][0] + x[0][1]
}

TEST(NnConvTranspose, AutoPadSameUpper) {
  const Tensor x = iota({1, 1, 3, 3});
  const Tensor w = f32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  const Tensor y =
      run1("ConvTranspose", {{x}, cst(w)},
           {{"strides", std::vector<int64_t>{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 6, 6}));
  // Total padding 1 goes to the end: the first row is the uncropped first row.
  const std::vector<float> v = y.to_float_vector();
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 6), (std::vector<float>{0, 0, 1, 1, 3, 2}));
  EXPECT_EQ(std::vector<float>(v.begin() + 12, v.begin() + 18),
            (std::vector<float>{3, 3, 8, 5, 12, 7}));
}

TEST(NnConvTranspose, InferenceErrorsAndMacs) {
  const Tensor x(DType::kF32, {1, 4, 5, 5});
  expect_infer_error("ConvTranspose", {{x}, cst(Tensor(DType::kF32, {3, 2, 3, 3}))}, {},
                     ErrorKind::kInvalidInput, "input channels");
  expect_infer_error("ConvTranspose", {{x}, cst(Tensor(DType::kF32, {4, 2, 3, 3}))},
                     {{"group", int64_t{3}}}, ErrorKind::kInvalidInput, "group");
  expect_infer_error("ConvTranspose", {{x}, cst(Tensor(DType::kF32, {4, 2, 3, 3}))},
                     {{"output_shape", std::vector<int64_t>{10}}}, ErrorKind::kInvalidInput,
                     "output_shape");
  // W [4, 3, 3, 3] with group 2: 6 output channels.
  OpRun r = run_op("ConvTranspose", {{x}, cst(Tensor(DType::kF32, {4, 3, 3, 3}))},
                   {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(r.outputs[0].shape(), (Shape{1, 6, 11, 11}));
  EXPECT_EQ(r.graph.macs(), 4 * 5 * 5 * (3 * 3 * 3));
}

}  // namespace
}  // namespace dlas::op_test
