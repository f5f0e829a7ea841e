// ConvTester: a fluent tester (XNNPACK's GemmMicrokernelTester style) that runs one
// ConvProblem of any element type (dtype(): f32 by default, int8 or 16-bit) through a conv
// algorithm on one ISA and knob point -- or through any prepared conv -- on generated data,
// and checks every output against the oracle of its type:
//   - f32: the reference Conv kernel followed by the scalar epilogue, within
//       |got - want| <= lip * 4 eps32 sqrt(R) (mag + 2) + 1e-6
//     where mag = sum_r |w_r x_r| (exact, in double), R = C/g * KH * KW and lip = |alpha|
//     for hard-sigmoid (when > 1), else 1. Inputs uniform in [-1, 1].
//   - int8: reference_qconv (dlas/algo/qconv.h), EXACTLY: every int8 kernel equals it bit
//     for bit on every path. Inputs uniform over the types' ranges; y.scale follows the
//     accumulators' expected spread, so clamps and rounding both occur.
//   - 16-bit (f16 / bf16): reference_hconv (dlas/algo/hconv.h), on inputs uniform in
//     [-1, 1] rounded to the type (the oracle sees exactly what the kernels see), within
//       accumulation error E = 4 eps32 sqrt(R) (mag + 2) + 1e-6  (f32 accumulators)
//                            + flush_steps * 2^-11 * mag + R * 2^-25  (half accumulators:
//                              each of <= N sequential half FMAs between flushes rounds by
//                              <= 2^-11 of a partial sum bounded by the chunk's magnitude,
//                              subnormals by half their 2^-24 lsb)
//       |got - want| <= lip * E (1 + ulp_T) + ulp_T(|want|) + tiny  (both round once to T:
//                              half an ulp each; lip bounds the activation's slope: 1.5 for
//                              hard-swish, 1.1 for SiLU, |alpha| for hard-sigmoid, else 1)
// Every run also checks that the conv writes nothing past workspace_bytes(threads): a guard
// band follows the 64-byte aligned workspace (with more threads such a write would land in a
// neighbour's scratch, a nondeterministic race).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/hconv.h"
#include "dlas/algo/qconv.h"
#include "dlas/hw/thread_pool.h"

namespace dlas::test {

// The element bytes of a buffer as T (f32, f16 / bf16 as uint16_t, int8).
template <class T>
T* elements(std::vector<uint8_t>& bytes) {
  return reinterpret_cast<T*>(bytes.data());
}
template <class T>
const T* elements(const std::vector<uint8_t>& bytes) {
  return reinterpret_cast<const T*>(bytes.data());
}

// One test case's data in the problem's element types.
struct ConvData {
  std::vector<uint8_t> x, w, r;   // input, weights, residual: bytes of their types
  std::vector<float> bias;        // f32 and 16-bit: f32 [k]
  std::vector<int32_t> bias_s32;  // int8: s32 [k] (zeros when the problem has no bias)
  std::vector<float> w_scale;     // int8: [k]

  // The weights as prepare() and the oracles take them (float bias only with p.has_bias).
  ConvWeights weights(const ConvProblem& p) const;
};

// An int8 type / epilogue variant: x, y (and residual) types and zero points, the
// activation (Clip is Clip(0, 6)) and the residual.
struct QVariant {
  DType x, y;
  int32_t xzp, yzp;
  Activation act;
  bool residual;
};
// The variants every int8 algorithm test runs.
std::vector<QVariant> qconv_variants();

// Bytes after the workspace every run checks are untouched (no zero point used in the tests
// is stored as kGuardByte).
inline constexpr size_t kWorkspaceGuard = 256;
inline constexpr uint8_t kGuardByte = 0xCD;

class ConvTester {
 public:
  ConvTester& batch(int64_t n) {
    p_.n = n;
    return *this;
  }
  ConvTester& channels(int64_t c, int64_t k) {
    p_.c = c;
    p_.k = k;
    return *this;
  }
  ConvTester& input(int64_t h, int64_t w) {
    p_.h = h;
    p_.w = w;
    return *this;
  }
  ConvTester& kernel(int64_t kh, int64_t kw) {
    p_.kh = kh;
    p_.kw = kw;
    return *this;
  }
  ConvTester& stride(int64_t s) { return stride(s, s); }
  ConvTester& stride(int64_t sh, int64_t sw) {
    p_.stride_h = sh;
    p_.stride_w = sw;
    return *this;
  }
  ConvTester& pad(int64_t p) { return pad(p, p, p, p); }
  ConvTester& pad(int64_t t, int64_t l, int64_t b, int64_t r) {
    p_.pad_t = t;
    p_.pad_l = l;
    p_.pad_b = b;
    p_.pad_r = r;
    return *this;
  }
  ConvTester& dilation(int64_t d) {
    p_.dil_h = p_.dil_w = d;
    return *this;
  }
  ConvTester& groups(int64_t g) {
    p_.groups = g;
    return *this;
  }
  ConvTester& bias(bool b) {
    p_.has_bias = b;
    return *this;
  }
  ConvTester& activation(Activation a, float p0 = 0.f, float p1 = 0.f) {
    p_.epilogue.act = a;
    p_.epilogue.p0 = p0;
    p_.epilogue.p1 = p1;
    return *this;
  }
  ConvTester& residual(bool r) {
    p_.epilogue.residual = r;
    return *this;
  }
  // Activation layouts (f32): the input is reordered from NCHW into x, the residual into y,
  // the output back from y before the check. Padding lanes of blocked inputs hold a finite
  // non-zero value, so a kernel that lets them reach a real lane fails; the output's must
  // come back finite.
  ConvTester& layouts(Layout x, Layout y) {
    p_.x_layout = x;
    p_.y_layout = y;
    return *this;
  }
  // The shapes and epilogue of p; the element types stay the tester's (dtype()).
  ConvTester& problem(const ConvProblem& p) {
    p_ = p.as_f32();
    return *this;
  }

  // The element types: f32 (the default), int8 (the quantization of int8(), u8 in and out
  // by default) or 16-bit (half_type(), f16 by default).
  ConvTester& dtype(ConvTypes t) {
    dtype_ = t;
    return *this;
  }
  // 16-bit in type t (f16 or bf16).
  ConvTester& half_type(DType t) {
    half_ = t;
    return dtype(ConvTypes::kHalf);
  }
  // int8 with v's types, zero points and epilogue (replacing the activation and residual).
  ConvTester& int8(const QVariant& v);
  // int8 at the extremes: x all at the top of its range (type xt), w all -128, the longest
  // reduction validate() allows: |acc| ~ 2^30, the int32 limit the accumulators must hold
  // without saturating or wrapping, and the float conversion of |acc| >= 2^24 rounds alike
  // on every path. Replaces the problem.
  ConvTester& extreme_int8(DType xt);

  ConvTester& threads(int t) {
    threads_ = t;
    return *this;
  }
  // The random data's seed (default 1; 16-bit: 7).
  ConvTester& seed(uint32_t s) {
    seed_ = s;
    return *this;
  }
  // Zeroes each weight with probability s (sparse algorithms; 1 = all-zero weights).
  ConvTester& weight_sparsity(double s) {
    sparsity_ = s;
    return *this;
  }
  // Then also zeroes weight (k, r) where keep(k, r) is false (k output channel, r =
  // (c/g, ky, kx) reduction index): structured masks (blocks, empty rows, one nonzero).
  ConvTester& weight_mask(std::function<bool(int64_t k, int64_t r)> keep) {
    keep_ = std::move(keep);
    return *this;
  }
  // 16-bit: reduction steps accumulated in half precision (0: f32 accumulation) by a conv
  // not computing kNativeFp16 (which takes them from its flush / kc knobs).
  ConvTester& half_steps(int64_t n) {
    half_steps_ = n;
    return *this;
  }

  // The problem in the tester's element types.
  ConvProblem problem() const;
  // The generated data for problem() (the same on every call).
  ConvData data() const;

  // Runs `algo` with `knobs` (its default point when empty) on `isa` and checks every
  // output. Returns false (after ADD_FAILURE) on a mismatch.
  bool test(const ConvAlgorithm& algo, Isa isa, Knobs knobs = {}) const;
  // The same for a conv prepared by `prepare` from problem() and its weights (an algorithm
  // with a fixed kernel set); `label` and `knobs` name it in failures (and knobs give a
  // kNativeFp16 conv's half accumulation steps).
  using Prepare =
      std::function<std::unique_ptr<PreparedConv>(const ConvProblem&, const ConvWeights&)>;
  bool test_with(const Prepare& prepare, const std::string& label, const Knobs& knobs = {}) const;
  // The default point at 2 threads and at 1, then each of `more` at 2 threads; stops at the
  // first failing point.
  bool test_points(const ConvAlgorithm& algo, Isa isa, const std::vector<Knobs>& more) const;

 private:
  ConvProblem p_;  // shapes and epilogue (f32)
  ConvTypes dtype_ = ConvTypes::kF32;
  DType half_ = DType::kF16;
  ConvQuant q_ = {{0.02f, 0, DType::kU8}, {0.1f, 0, DType::kU8}, {0.09f, 128, DType::kU8}};
  bool spread_y_scale_ = true;  // int8: y.scale from the accumulators' spread
  bool extreme_ = false;
  int threads_ = 1;
  std::optional<uint32_t> seed_;
  double sparsity_ = 0;
  std::function<bool(int64_t, int64_t)> keep_;
  int64_t half_steps_ = 0;
};

// Generated shapes every algorithm is tested on (those it supports): odd sizes,
// stride 1/2, padding, dilation, groups, 1x1, 3x3, 5x5, 7x7, channel counts not
// divisible by any vector width, batch > 1.
std::vector<ConvProblem> generated_conv_problems();

// isa_name(isa) as a test name ('-' -> '_').
std::string isa_test_name(Isa isa);

}  // namespace dlas::test
