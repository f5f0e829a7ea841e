// Tests of dlas's own CUDA convolution algorithms (cuda_conv.h, src/algo/cuda/): every
// algorithm on every shape of a list it supports, with its default knobs and with every
// point of its knob space (at most 16 sampled), against a double-accumulating host
// reference; the fused epilogue (bias, residual, each activation); CUDA graph capture of
// run(); and the list, the auto rule and prepare()'s errors. Every test skips on a machine
// without a CUDA device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlas/algo/cuda_conv.h"
#include "dlas/core/dtype.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas::cuda {
namespace {

#define DLAS_REQUIRE_GPU() \
  if (dlas::list_gpus().empty()) GTEST_SKIP() << dlas::gpu_unavailable_reason()

// A shape from its geometry: square kernel, stride, dilation and leading pads; the trailing
// pads default to the leading ones (-1) and set oh / ow.
ConvShape make_shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t kernel,
                     int64_t stride, int64_t pad, int64_t groups = 1, int64_t dil = 1,
                     int64_t pad_b = -1, int64_t pad_r = -1) {
  ConvShape s;
  s.n = n, s.c = c, s.h = h, s.w = w, s.k = k;
  s.kh = s.kw = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dil_h = s.dil_w = dil;
  s.groups = groups;
  const int64_t pb = pad_b < 0 ? pad : pad_b, pr = pad_r < 0 ? pad : pad_r;
  s.oh = (h + pad + pb - dil * (kernel - 1) - 1) / stride + 1;
  s.ow = (w + pad + pr - dil * (kernel - 1) - 1) / stride + 1;
  return s;
}

struct NamedShape {
  const char* name;
  ConvShape shape;
};

std::vector<NamedShape> shapes() {
  std::vector<NamedShape> v = {
      {"1x1 s1", make_shape(1, 16, 8, 8, 24, 1, 1, 0)},
      {"1x1 s2", make_shape(1, 16, 9, 9, 8, 1, 2, 0)},
      {"1x1 wide", make_shape(1, 300, 5, 5, 130, 1, 1, 0)},
      {"3x3 s1 p1", make_shape(1, 32, 12, 12, 40, 3, 1, 1)},
      {"3x3 s2 p1", make_shape(1, 24, 13, 13, 16, 3, 2, 1)},
      {"5x5 p2", make_shape(1, 8, 11, 11, 12, 5, 1, 2)},
      {"7x7 s2 p3 c3", make_shape(1, 3, 23, 23, 16, 7, 2, 3)},
      {"3x3 g2", make_shape(1, 16, 10, 10, 24, 3, 1, 1, 2)},
      {"3x3 s2 g4", make_shape(1, 32, 9, 9, 32, 3, 2, 1, 4)},
      {"dw 3x3 s1", make_shape(1, 24, 14, 14, 24, 3, 1, 1, 24)},
      {"dw 3x3 s2", make_shape(1, 16, 15, 15, 16, 3, 2, 1, 16)},
      {"dw 5x5 p2 n2", make_shape(2, 12, 9, 9, 12, 5, 1, 2, 12)},
      {"dw 3x3 d2", make_shape(1, 8, 11, 11, 8, 3, 1, 2, 8, 2)},
      {"3x3 asymmetric pads", make_shape(1, 8, 10, 10, 8, 3, 1, 1, 1, 1, 0, 2)},
      {"3x3 pad 0", make_shape(1, 8, 10, 11, 8, 3, 1, 0)},
      {"3x3 n2 k37", make_shape(2, 32, 7, 7, 37, 3, 1, 1)},
      {"3x3 c37 13x13", make_shape(1, 37, 13, 13, 37, 3, 1, 1)},
      {"3x3 d2", make_shape(1, 8, 12, 12, 8, 3, 1, 2, 1, 2)},
      {"3x3 c64 k96 28x28 n2", make_shape(2, 64, 28, 28, 96, 3, 1, 1)},
  };
  // Different leading pads per axis and a non-square kernel.
  ConvShape s = make_shape(1, 6, 9, 12, 10, 3, 1, 0);
  s.kh = 1, s.kw = 3, s.pad_h = 0, s.pad_w = 1, s.stride_w = 2;
  s.oh = 9, s.ow = (12 + 2 - 3) / 2 + 1;
  v.push_back({"1x3 sw2 pw1", s});
  return v;
}

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

double activate(double v, Activation act, double p0, double p1) {
  switch (act) {
    case Activation::kRelu:
      return std::max(v, 0.0);
    case Activation::kClip:
      return std::min(std::max(v, p0), p1);
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-v));
    case Activation::kSilu:
      return v / (1 + std::exp(-v));
    case Activation::kHardSigmoid:
      return std::min(std::max(p0 * v + p1, 0.0), 1.0);
    case Activation::kHardSwish:
      return v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0);
    default:
      return v;
  }
}

// The conv in double, NCHW, with the epilogue.
std::vector<double> reference(const ConvShape& s, const std::vector<float>& x,
                              const std::vector<float>& w, const float* bias, const float* residual,
                              Activation act, float p0, float p1) {
  const int64_t cpg = s.c / s.groups, kpg = s.k / s.groups;
  std::vector<double> y(static_cast<size_t>(s.n * s.k * s.oh * s.ow));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k) {
      const int64_t g = k / kpg;
      for (int64_t oy = 0; oy < s.oh; ++oy)
        for (int64_t ox = 0; ox < s.ow; ++ox) {
          double acc = 0;
          for (int64_t ci = 0; ci < cpg; ++ci)
            for (int64_t r = 0; r < s.kh; ++r) {
              const int64_t iy = oy * s.stride_h - s.pad_h + r * s.dil_h;
              if (iy < 0 || iy >= s.h) continue;
              for (int64_t q = 0; q < s.kw; ++q) {
                const int64_t ix = ox * s.stride_w - s.pad_w + q * s.dil_w;
                if (ix < 0 || ix >= s.w) continue;
                acc += static_cast<double>(x[((n * s.c + g * cpg + ci) * s.h + iy) * s.w + ix]) *
                       w[((k * cpg + ci) * s.kh + r) * s.kw + q];
              }
            }
          const int64_t i = ((n * s.k + k) * s.oh + oy) * s.ow + ox;
          if (bias) acc += bias[k];
          if (residual) acc += residual[i];
          y[static_cast<size_t>(i)] = activate(acc, act, p0, p1);
        }
    }
  return y;
}

void check(cudaError_t code, const char* what) { check_cuda(static_cast<int>(code), what); }

class Stream {
 public:
  Stream() { check(cudaStreamCreate(&s_), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// One problem's data on the host and the device.
struct Problem {
  ConvShape s;
  std::vector<float> x, w, bias, residual;
  DeviceBuffer dx, dbias, dresidual;

  explicit Problem(const ConvShape& shape, uint32_t seed = 1) : s(shape) {
    x = random_floats(static_cast<size_t>(s.n * s.c * s.h * s.w), seed);
    w = random_floats(static_cast<size_t>(s.k * (s.c / s.groups) * s.kh * s.kw), seed + 1);
    bias = random_floats(static_cast<size_t>(s.k), seed + 2);
    residual = random_floats(static_cast<size_t>(s.n * s.k * s.oh * s.ow), seed + 3);
    dx = upload_floats(x.data(), x.size(), "test input");
    dbias = upload_floats(bias.data(), bias.size(), "test bias");
    dresidual = upload_floats(residual.data(), residual.size(), "test residual");
  }
  size_t out_count() const { return static_cast<size_t>(s.n * s.k * s.oh * s.ow); }
};

// Runs a prepared conv on `stream` (or through a captured CUDA graph), output pre-filled
// with NaN so an unwritten element fails the comparison.
std::vector<float> run_conv(const ConvKernel& kernel, const Problem& p, const Epilogue& e,
                            cudaStream_t stream, bool graph = false) {
  DeviceBuffer y(p.out_count() * sizeof(float), "test output");
  check(cudaMemsetAsync(y.get(), 0xff, y.bytes(), stream), "cudaMemsetAsync");
  DeviceBuffer ws(std::max<size_t>(kernel.workspace_bytes(), 1), "test workspace");
  if (graph) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    kernel.run(p.dx.as<float>(), y.as<float>(), ws.get(), e, stream);
    check(cudaStreamEndCapture(stream, &g), "end capture");
    check(cudaGraphInstantiate(&exec, g, 0), "cudaGraphInstantiate");
    check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    check(cudaStreamSynchronize(stream), "graph run");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  } else {
    kernel.run(p.dx.as<float>(), y.as<float>(), ws.get(), e, stream);
    check(cudaStreamSynchronize(stream), "conv run");
  }
  std::vector<float> out(p.out_count());
  y.download(out.data(), out.size() * sizeof(float));
  return out;
}

// Tolerance relative to the largest |reference|: fp32 accumulation over the reduction
// (c/groups * kh * kw terms), looser for Winograd's transforms.
::testing::AssertionResult matches(const std::vector<float>& got, const std::vector<double>& ref,
                                   const ConvShape& s, bool winograd) {
  double max_ref = 0;
  for (double r : ref) max_ref = std::max(max_ref, std::abs(r));
  const double kred = static_cast<double>(s.c / s.groups * s.kh * s.kw);
  const double tol = (winograd ? 2e-3 : 2e-5 * std::sqrt(kred)) * std::max(max_ref, 1.0) + 1e-6;
  int64_t bad = 0;
  std::string first;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - ref[i]);
    if (!(err <= tol)) {
      if (bad++ == 0) {
        const int64_t ox = static_cast<int64_t>(i) % s.ow,
                      oy = static_cast<int64_t>(i) / s.ow % s.oh;
        const int64_t k = static_cast<int64_t>(i) / (s.ow * s.oh) % s.k;
        const int64_t n = static_cast<int64_t>(i) / (s.ow * s.oh * s.k);
        first =
            str("first at n", n, " k", k, " y", oy, " x", ox, ": got ", got[i], " want ", ref[i]);
      }
      worst = std::isnan(err) ? err : std::max(worst, err);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << ref.size() << " elements off by more than " << tol << " (worst "
         << worst << "); " << first;
}

// The knob points a test runs: the default, then every point of the space or 16 spread
// over it.
std::vector<Knobs> test_points(const ConvAlgorithm& a, const ConvShape& s) {
  std::vector<Knobs> points = {a.default_knobs(s)};
  const KnobSpace space = a.knob_space(s);
  const int64_t size = space.size();
  const int64_t count = std::min<int64_t>(size, 16);
  for (int64_t i = 0; i < count; ++i) points.push_back(space.point(i * size / count));
  return points;
}

TEST(CudaConv, ListAndLookup) {
  // Host-side only (the list, the rule, the checks before any device work): runs without a GPU.
  const auto& list = conv_algorithms();
  ASSERT_EQ(list.size(), 5u);
  EXPECT_STREQ(list[0]->name, "direct");
  EXPECT_STREQ(list[1]->name, "gemm");
  EXPECT_STREQ(list[2]->name, "winograd");
  EXPECT_STREQ(list[3]->name, "depthwise");
  EXPECT_STREQ(list[4]->name, "sparse");
  for (const ConvAlgorithm* a : list) {
    EXPECT_EQ(find_conv_algorithm(a->name), a);
    EXPECT_TRUE(a->doc && *a->doc);
  }
  EXPECT_EQ(find_conv_algorithm("nope"), nullptr);
  EXPECT_EQ(make_shape(1, 64, 32, 32, 128, 3, 1, 1).str(), "c64x32x32 k128 3x3 s1 p1 g1");
}

TEST(CudaConv, EveryAlgorithmEveryShapeEveryKnobPoint) {
  DLAS_REQUIRE_GPU();
  Stream stream;
  const Epilogue none;
  uint32_t seed = 10;
  for (const NamedShape& ns : shapes()) {
    const ConvShape& s = ns.shape;
    SCOPED_TRACE(str(ns.name, ": ", s.str()));
    Problem p(s, seed += 10);
    const std::vector<double> ref =
        reference(s, p.x, p.w, nullptr, nullptr, Activation::kNone, 0, 0);
    int supported = 0;
    for (const ConvAlgorithm* a : conv_algorithms()) {
      if (!a->supports(s)) continue;
      ++supported;
      for (const Knobs& knobs : test_points(*a, s)) {
        SCOPED_TRACE(str(a->name, " ", knobs_to_string(knobs)));
        std::unique_ptr<ConvKernel> kernel = a->prepare(s, knobs, p.w.data());
        EXPECT_GT(kernel->weight_bytes(), 0u);
        const std::vector<float> got = run_conv(*kernel, p, none, stream.get());
        EXPECT_TRUE(matches(got, ref, s, std::string(a->name) == "winograd"));
      }
    }
    // direct and gemm take every shape.
    EXPECT_GE(supported, 2);
  }
}

TEST(CudaConv, EpilogueBiasResidualActivations) {
  DLAS_REQUIRE_GPU();
  Stream stream;
  struct Act {
    Activation act;
    float p0, p1;
  };
  const Act acts[] = {{Activation::kNone, 0, 0},        {Activation::kRelu, 0, 0},
                      {Activation::kClip, -0.3f, 0.4f}, {Activation::kSigmoid, 0, 0},
                      {Activation::kSilu, 0, 0},        {Activation::kHardSigmoid, 0.2f, 0.5f},
                      {Activation::kHardSwish, 0, 0}};
  const ConvShape dense = make_shape(2, 16, 9, 9, 24, 3, 1, 1);
  const ConvShape dw = make_shape(2, 16, 9, 9, 16, 3, 1, 1, 16);
  for (const ConvAlgorithm* a : conv_algorithms()) {
    const ConvShape& s = a->supports(dense) ? dense : dw;
    ASSERT_TRUE(a->supports(s)) << a->name;
    Problem p(s, 77);
    std::unique_ptr<ConvKernel> kernel = a->prepare(s, a->default_knobs(s), p.w.data());
    const bool wino = std::string(a->name) == "winograd";
    for (const Act& act : acts) {
      SCOPED_TRACE(str(a->name, " activation ", static_cast<int>(act.act)));
      Epilogue e;
      e.act = act.act, e.p0 = act.p0, e.p1 = act.p1;
      e.bias = p.dbias.as<float>();
      e.residual = p.dresidual.as<float>();
      EXPECT_TRUE(
          matches(run_conv(*kernel, p, e, stream.get()),
                  reference(s, p.x, p.w, p.bias.data(), p.residual.data(), act.act, act.p0, act.p1),
                  s, wino));
    }
    // Bias alone, residual alone.
    Epilogue e;
    e.act = Activation::kRelu;
    e.bias = p.dbias.as<float>();
    EXPECT_TRUE(matches(run_conv(*kernel, p, e, stream.get()),
                        reference(s, p.x, p.w, p.bias.data(), nullptr, e.act, 0, 0), s, wino))
        << a->name << " bias only";
    e.bias = nullptr;
    e.residual = p.dresidual.as<float>();
    EXPECT_TRUE(matches(run_conv(*kernel, p, e, stream.get()),
                        reference(s, p.x, p.w, nullptr, p.residual.data(), e.act, 0, 0), s, wino))
        << a->name << " residual only";
  }
}

TEST(CudaConv, RunCapturesIntoAGraph) {
  DLAS_REQUIRE_GPU();
  Stream stream;
  const ConvShape dense = make_shape(1, 32, 10, 10, 32, 3, 1, 1);
  const ConvShape dw = make_shape(1, 32, 10, 10, 32, 3, 1, 1, 32);
  for (const ConvAlgorithm* a : conv_algorithms()) {
    const ConvShape& s = a->supports(dense) ? dense : dw;
    Problem p(s, 5);
    std::unique_ptr<ConvKernel> kernel = a->prepare(s, a->default_knobs(s), p.w.data());
    Epilogue e;
    e.bias = p.dbias.as<float>();
    EXPECT_TRUE(matches(run_conv(*kernel, p, e, stream.get(), /*graph=*/true),
                        reference(s, p.x, p.w, p.bias.data(), nullptr, Activation::kNone, 0, 0), s,
                        std::string(a->name) == "winograd"))
        << a->name;
  }
}

TEST(CudaConv, SupportsAndPrepareErrors) {
  // Host-side only (the list, the rule, the checks before any device work): runs without a GPU.
  const ConvAlgorithm* winograd = find_conv_algorithm("winograd");
  const ConvAlgorithm* depthwise = find_conv_algorithm("depthwise");
  const ConvAlgorithm* gemm = find_conv_algorithm("gemm");
  ASSERT_TRUE(winograd && depthwise && gemm);
  const ConvShape k5 = make_shape(1, 8, 11, 11, 8, 5, 1, 2);
  const ConvShape s2 = make_shape(1, 8, 11, 11, 8, 3, 2, 1);
  const ConvShape g2 = make_shape(1, 8, 11, 11, 8, 3, 1, 1, 2);
  const ConvShape d2 = make_shape(1, 8, 11, 11, 8, 3, 1, 2, 1, 2);
  const ConvShape dense = make_shape(1, 8, 11, 11, 8, 3, 1, 1);
  EXPECT_FALSE(winograd->supports(k5));
  EXPECT_FALSE(winograd->supports(s2));
  EXPECT_FALSE(winograd->supports(g2));
  EXPECT_FALSE(winograd->supports(d2));
  EXPECT_TRUE(winograd->supports(dense));
  EXPECT_FALSE(depthwise->supports(dense));
  EXPECT_FALSE(depthwise->supports(g2));
  for (const ConvAlgorithm* a : conv_algorithms())
    EXPECT_TRUE(a->supports(dense) || a == depthwise);

  const std::vector<float> w(8 * 8 * 25, 0.5f);
  auto expect_error = [](auto&& f, ErrorKind kind, const char* what) {
    try {
      f();
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << what << ": " << e.what();
    }
  };
  expect_error([&] { winograd->prepare(k5, winograd->default_knobs(dense), w.data()); },
               ErrorKind::kUnsupported, "winograd 5x5");
  expect_error([&] { depthwise->prepare(dense, depthwise->default_knobs(dense), w.data()); },
               ErrorKind::kUnsupported, "depthwise on dense");
  Knobs bad = gemm->default_knobs(dense);
  bad["bm"] = 48;
  expect_error([&] { gemm->prepare(dense, bad, w.data()); }, ErrorKind::kInvalidInput,
               "gemm bm=48");
  Knobs missing = gemm->default_knobs(dense);
  missing.erase("bn");
  expect_error([&] { gemm->prepare(dense, missing, w.data()); }, ErrorKind::kInvalidInput,
               "gemm without bn");
  ConvShape odd = dense;
  odd.groups = 3;  // divides neither c nor k
  expect_error([&] { gemm->prepare(odd, gemm->default_knobs(dense), w.data()); },
               ErrorKind::kInvalidInput, "groups 3 of 8 channels");
}

TEST(CudaConv, AutoRule) {
  // Host-side only (the list, the rule, the checks before any device work): runs without a GPU.
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 32, 56, 56, 32, 3, 1, 1, 32)).name, "depthwise");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 32, 28, 28, 32, 3, 2, 1, 32)).name, "depthwise");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 64, 28, 28, 128, 1, 1, 0)).name, "gemm");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 64, 28, 28, 64, 3, 1, 1)).name, "winograd");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 8, 28, 28, 8, 3, 1, 1)).name, "gemm");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 64, 28, 28, 64, 3, 2, 1)).name, "gemm");
  EXPECT_STREQ(auto_conv_algorithm(make_shape(1, 64, 28, 28, 64, 3, 1, 1, 2)).name, "gemm");
  ConvShape pruned = make_shape(1, 64, 28, 28, 64, 3, 1, 1);
  pruned.density = 0.1;
  EXPECT_STREQ(auto_conv_algorithm(pruned).name, "sparse");
  pruned.density = 0.5;
  EXPECT_STREQ(auto_conv_algorithm(pruned).name, "winograd");
}

// The sparse algorithm on weight-pruned filters: 90% zeros, some output channels all zero,
// every knob point, against the reference.
TEST(CudaConv, SparseOnPrunedWeights) {
  DLAS_REQUIRE_GPU();
  Stream stream;
  const ConvAlgorithm& sparse = *find_conv_algorithm("sparse");
  for (const ConvShape& shape :
       {make_shape(1, 32, 12, 12, 40, 3, 1, 1), make_shape(2, 24, 13, 13, 16, 3, 2, 1),
        make_shape(1, 64, 7, 7, 96, 1, 1, 0), make_shape(1, 16, 10, 10, 24, 3, 1, 1, 2),
        make_shape(1, 3, 23, 23, 16, 7, 2, 3)}) {
    Problem p(shape, 11);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    const int64_t per_k = static_cast<int64_t>(p.w.size()) / shape.k;
    for (size_t i = 0; i < p.w.size(); ++i)
      if (u(rng) < 0.9f || static_cast<int64_t>(i) / per_k % 7 == 3) p.w[i] = 0.f;
    Epilogue e;
    e.bias = p.dbias.as<float>();
    e.residual = p.dresidual.as<float>();
    e.act = Activation::kRelu;
    const auto ref =
        reference(shape, p.x, p.w, p.bias.data(), p.residual.data(), Activation::kRelu, 0, 0);
    for (const Knobs& k : test_points(sparse, shape)) {
      const auto kernel = sparse.prepare(shape, k, p.w.data());
      EXPECT_TRUE(matches(run_conv(*kernel, p, e, stream.get()), ref, shape, false))
          << shape.str() << " " << knobs_to_string(k);
    }
  }
}

}  // namespace
}  // namespace dlas::cuda

namespace dlas::cuda {
namespace {

// 16-bit convs (fp16 and bf16, f32 accumulation): every algorithm that runs the shape (gemm
// on tensor cores; direct, winograd and depthwise widening on load), at its test points, on
// 16-bit data rounded on the host, against the double reference of the rounded values.
uint16_t to16(float f, Storage s) { return s == Storage::kF16 ? f32_to_f16(f) : f32_to_bf16(f); }
float from16(uint16_t b, Storage s) { return s == Storage::kF16 ? f16_to_f32(b) : bf16_to_f32(b); }

TEST(CudaConv, SixteenBitEveryAlgorithm) {
  DLAS_REQUIRE_GPU();
  Stream stream;
  for (Storage st : {Storage::kF16, Storage::kBF16}) {
    for (ConvShape shape :
         {make_shape(1, 32, 12, 12, 40, 3, 1, 1), make_shape(2, 24, 13, 13, 16, 3, 2, 1),
          make_shape(1, 64, 7, 7, 96, 1, 1, 0), make_shape(1, 16, 10, 10, 24, 3, 1, 1, 2),
          make_shape(1, 3, 23, 23, 16, 7, 2, 3), make_shape(1, 37, 13, 13, 37, 3, 1, 1),
          make_shape(1, 300, 5, 5, 130, 1, 1, 0), make_shape(1, 256, 7, 7, 128, 3, 1, 1),
          make_shape(1, 24, 14, 14, 24, 3, 1, 1, 24), make_shape(2, 16, 15, 15, 16, 3, 2, 1, 16),
          make_shape(1, 8, 10, 10, 8, 3, 1, 1, 1, 1, 0, 2)}) {
      shape.storage = st;
      EXPECT_TRUE(find_conv_algorithm(shape.depthwise() ? "depthwise" : "gemm")->supports(shape))
          << shape.str();
      EXPECT_TRUE(find_conv_algorithm("direct")->supports(shape)) << shape.str();
      EXPECT_FALSE(find_conv_algorithm("sparse")->supports(shape)) << shape.str();
      EXPECT_TRUE(auto_conv_algorithm(shape).supports(shape)) << shape.str();
      std::vector<float> x =
          random_floats(static_cast<size_t>(shape.n * shape.c * shape.h * shape.w), 3);
      std::vector<float> w = random_floats(
          static_cast<size_t>(shape.k * (shape.c / shape.groups) * shape.kh * shape.kw), 4);
      std::vector<float> bias = random_floats(static_cast<size_t>(shape.k), 5);
      std::vector<float> res =
          random_floats(static_cast<size_t>(shape.n * shape.k * shape.oh * shape.ow), 6);
      std::vector<uint16_t> x16(x.size()), r16(res.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = from16(x16[i] = to16(x[i], st), st);
      for (size_t i = 0; i < res.size(); ++i) res[i] = from16(r16[i] = to16(res[i], st), st);
      for (float& v : w) v = from16(to16(v, st), st);
      const auto ref = reference(shape, x, w, bias.data(), res.data(), Activation::kRelu, 0, 0);
      DeviceBuffer dx(x16.size() * 2), dr(r16.size() * 2), dy(res.size() * 2);
      dx.upload(x16.data(), x16.size() * 2);
      dr.upload(r16.data(), r16.size() * 2);
      DeviceBuffer db = upload_floats(bias.data(), bias.size());
      Epilogue e;
      e.bias = db.as<float>();
      e.residual = reinterpret_cast<const float*>(dr.get());
      e.act = Activation::kRelu;
      for (const ConvAlgorithm* a : conv_algorithms()) {
        if (!a->supports(shape)) continue;
        const ConvAlgorithm& algo = *a;
        for (const Knobs& k : test_points(algo, shape)) {
          const auto kernel = algo.prepare(shape, k, w.data());
          DeviceBuffer ws(kernel->workspace_bytes(), "test workspace");
          check(cudaMemsetAsync(dy.get(), 0xff, dy.bytes(), stream.get()), "memset");
          kernel->run(reinterpret_cast<const float*>(dx.get()), reinterpret_cast<float*>(dy.get()),
                      ws.get(), e, stream.get());
          check(cudaStreamSynchronize(stream.get()), "16-bit conv");
          std::vector<uint16_t> y16(res.size());
          dy.download(y16.data(), y16.size() * 2);
          double max_ref = 1, worst = 0;
          for (double r : ref) max_ref = std::max(max_ref, std::abs(r));
          for (size_t i = 0; i < ref.size(); ++i) {
            const double err = std::abs(from16(y16[i], st) - ref[i]);
            worst = std::isnan(err) ? INFINITY : std::max(worst, err);
          }
          EXPECT_LT(worst / max_ref, st == Storage::kF16 ? 3e-3 : 2e-2)
              << storage_name(st) << " " << algo.name << " " << shape.str() << " "
              << knobs_to_string(k);
        }
      }
    }
  }
}

}  // namespace
}  // namespace dlas::cuda
