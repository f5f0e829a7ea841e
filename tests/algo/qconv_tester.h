// QConvTester: runs one int8 conv (an algorithm on an ISA path and knob point, or any
// prepared conv) on random data and requires EXACT equality with reference_qconv (the
// integer oracle of qconv.h): every int8 kernel equals it bit for bit on every path.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {

struct QConvData {
  std::vector<uint8_t> x, r;  // bytes of x.type / r.type
  std::vector<int8_t> w;
  std::vector<float> w_scale;
  std::vector<int32_t> bias;
};

// Random data whose requantized outputs spread over the output range (the multiplier is
// set from the accumulator's expected spread, so clamps and rounding both occur).
inline QConvData random_qconv_data(ConvProblem& p, uint32_t seed) {
  const ConvProblem& c = p;
  std::mt19937 rng(seed);
  QConvData d;
  d.x.resize(static_cast<size_t>(c.n * c.c * c.h * c.w));
  d.w.resize(static_cast<size_t>(c.weight_count()));
  d.r.resize(static_cast<size_t>(c.n * c.k * c.oh() * c.ow()));
  for (auto& v : d.x) v = static_cast<uint8_t>(rng());
  for (auto& v : d.w) v = static_cast<int8_t>(rng());
  for (auto& v : d.r) v = static_cast<uint8_t>(rng());
  const double r = static_cast<double>(c.c_per_group() * c.kh * c.kw);
  const double spread = std::sqrt(r) * 74.0 * 74.0;  // std of sum((x - zp) * w)
  d.w_scale.resize(static_cast<size_t>(c.k));
  d.bias.resize(static_cast<size_t>(c.k));
  for (int64_t k = 0; k < c.k; ++k) {
    d.w_scale[k] = 0.01f * (1.f + 0.37f * static_cast<float>(k % 7));
    d.bias[k] = c.has_bias ? static_cast<int32_t>(rng() % 20001) - 10000 : 0;
  }
  // m = x.scale * w_scale / y.scale ~ 50 / spread.
  p.quant.y.scale = static_cast<float>(p.quant.x.scale * 0.01 * spread / 50.0);
  return d;
}

// Bytes after the workspace the tests check are untouched (no zero point used in the tests
// is stored as kGuardByte).
inline constexpr size_t kWorkspaceGuard = 256;
inline constexpr uint8_t kGuardByte = 0xCD;

// Reference vs `prepared` (run with `threads`); returns false after ADD_FAILURE naming
// the first mismatch or a write past workspace_bytes(threads).
inline bool expect_qconv_exact(const ConvProblem& p, const QConvData& d,
                               const PreparedConv& prepared, int threads, const std::string& what) {
  const void* res = p.epilogue.residual ? d.r.data() : nullptr;
  std::vector<uint8_t> want(d.r.size()), got(d.r.size(), 0xA5);
  reference_qconv(
      p, d.x.data(),
      ConvWeights::int8(d.w.data(), d.w_scale.data(), p.has_bias ? d.bias.data() : nullptr), res,
      want.data());
  ThreadPool pool(threads);
  // A guard band past workspace_bytes: a write there is an overflow of the last thread's
  // scratch, which with more threads would land in a neighbour's (a nondeterministic race).
  const size_t wsb = prepared.workspace_bytes(threads);
  std::vector<uint8_t> ws(wsb + kWorkspaceGuard, kGuardByte);
  prepared.run(d.x.data(), got.data(), res, ws.data(), pool);
  for (size_t i = wsb; i < ws.size(); ++i)
    if (ws[i] != kGuardByte) {
      ADD_FAILURE() << what << ": wrote workspace byte " << i << " past workspace_bytes " << wsb;
      return false;
    }
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      ADD_FAILURE() << what << ": output " << i << " is " << int(got[i]) << ", oracle "
                    << int(want[i]) << " (bytes)";
      return false;
    }
  return true;
}

// The type / epilogue variants every algorithm test runs: x, y, residual types and zero
// points, and the activation.
struct QVariant {
  DType x, y;
  int32_t xzp, yzp;
  Activation act;
  bool residual;
};
inline std::vector<QVariant> qconv_variants() {
  return {{DType::kU8, DType::kU8, 3, 0, Activation::kRelu, false},
          {DType::kU8, DType::kU8, 128, 130, Activation::kNone, false},
          {DType::kS8, DType::kS8, 0, 0, Activation::kNone, false},
          {DType::kS8, DType::kU8, -5, 10, Activation::kClip, false},
          {DType::kU8, DType::kS8, 251, -3, Activation::kNone, true},
          {DType::kS8, DType::kS8, 1, -1, Activation::kRelu, true}};
}

inline ConvProblem make_qproblem(const ConvProblem& c, const QVariant& v) {
  ConvProblem p;
  p = c;
  p.epilogue.act = v.act;
  p.epilogue.p0 = 0.f;
  p.epilogue.p1 = 6.f;
  p.epilogue.residual = v.residual;
  p.set_int8({0.02f, v.xzp, v.x}, {0.1f, v.yzp, v.y},  // y's scale set by random_qconv_data
             {0.09f, v.x == DType::kU8 ? 128 : 0, v.x});
  return p;
}

inline std::string isa_test_name(Isa isa) {
  std::string s = isa_name(isa);
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

// x all at the top of its range, w all -128, the longest reduction validate() allows:
// |acc| ~ 2^30, the int32 limit the accumulators must hold without saturating or
// wrapping, and the float conversion of |acc| >= 2^24 rounds alike on every path.
inline ConvProblem extreme_problem(DType xt) {
  ConvProblem p;
  ConvProblem& c = p;
  c.n = 1, c.c = 3640, c.k = 5, c.h = 3, c.w = 4, c.kh = c.kw = 3;  // R = 32760
  c.pad_t = c.pad_l = c.pad_b = c.pad_r = 1;
  c.has_bias = true;
  p.set_int8({0.5f, xt == DType::kU8 ? 0 : -128, xt}, {1.f, 0, DType::kS8});
  return p;
}

inline QConvData extreme_data(const ConvProblem& p) {
  const ConvProblem& c = p;
  QConvData d;
  d.x.assign(static_cast<size_t>(c.n * c.c * c.h * c.w), p.quant.x.type == DType::kU8 ? 255 : 127);
  d.w.assign(static_cast<size_t>(c.weight_count()), -128);
  d.r.assign(static_cast<size_t>(c.n * c.k * c.oh() * c.ow()), 0);
  // acc = -(255 * 128 * taps) at most -1.069e9; multipliers spread the result over s8.
  d.w_scale = {1e-7f, 2.3e-7f, 1.17e-7f, 3e-8f, 1.9e-7f};
  d.bias = {1 << 26, -(1 << 26), 12345, 0, -7};
  return d;
}

}  // namespace dlas::test
