// Quantized int8 convolution (DLAS layers 3-4): the integer twin of conv.h. The same
// ConvProblem shapes, computed on 8-bit activations and weights with int32 accumulation
// and the requantization to the output's 8-bit type fused into the kernel, together with
// the ReLU / ReLU6 clamps and a residual add. Data is NCHW at the interface (u8 or s8
// elements); an algorithm may pack into a blocked layout internally.
//
// Quantization (ONNX QuantizeLinear convention): real = scale * (q - zero_point).
// Weights are s8, symmetric (zero point 0), one scale per output channel; activations are
// per tensor, u8 asymmetric or s8 (usually symmetric).
//
// The arithmetic, exactly (reference_qconv() implements it literally; every kernel equals
// it bit for bit, on every ISA):
//   1. acc[k][p] = bias[k] + sum over the taps inside the input of (x - x.zero_point) * w
//      in int32 (a tap in the padding contributes 0: padding holds x.zero_point).
//      Kernels may compute sum(x * w) - x.zero_point * sum(w) instead: the same integer.
//      bias is int32 at scale x.scale * w_scale[k] (ONNX QLinearConv); absent = 0.
//   2. m[k] = requant_multiplier(x.scale, w_scale[k], y.scale), once at prepare.
//   3. t = residual ? (float)(r - r.zero_point) * rm : 0, rm = requant_multiplier(r.scale,
//      1, y.scale); v = fmaf((float)acc, m[k], t) (one rounding).
//   4. v = min(max(v, out_lo - y.zero_point), out_hi - y.zero_point)  (integer bounds, so
//      clamping before rounding equals clamping after).
//   5. q = (int32)nearbyint(v) + y.zero_point  (ties to even: vcvtps2dq under the default
//      MXCSR, and ONNX QuantizeLinear).
// (float)acc rounds to nearest even when |acc| >= 2^24, on every path alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

// Per-tensor affine quantization of an 8-bit tensor.
struct QuantParams {
  float scale = 1.f;
  int32_t zero_point = 0;
  DType type = DType::kU8;  // kU8 or kS8

  // [0, 255] or [-128, 127].
  int32_t lowest() const { return type == DType::kU8 ? 0 : -128; }
  int32_t highest() const { return type == DType::kU8 ? 255 : 127; }
  // Throws kInvalidInput (naming `what`) unless scale is finite and > 0, type is u8/s8 and
  // the zero point is in the type's range.
  void validate(const char* what) const;
};

// (float)((double)a_scale * b_scale / c_scale): the one rounding of the requantization
// multiplier every path shares.
float requant_multiplier(float a_scale, float b_scale, float c_scale);

struct QConvProblem {
  ConvProblem conv;  // shapes, has_bias; epilogue act kNone / kRelu / kClip, residual flag
  QuantParams x;     // input
  QuantParams y;     // output
  QuantParams r;     // residual input (shaped like the output) when conv.epilogue.residual

  // Output clamp in the quantized domain: the type's range intersected with the
  // activation's (Relu: >= y.zero_point; Clip(a, b): y.zero_point + nearbyint(a / y.scale)
  // .. y.zero_point + nearbyint(b / y.scale), the divisions in float).
  int32_t out_lo() const;
  int32_t out_hi() const;
  // conv.validate() plus: activation a clamp, valid quant params, and a reduction short
  // enough for int32 (C/g * KH * KW * 255 * 128 < 2^30, leaving 2^30 for the bias:
  // kUnsupported otherwise).
  void validate() const;
  // conv.key() + "_u8s8u8" (x, w, y types; + "_r" + r type with a residual).
  std::string key() const;
  int64_t macs() const { return conv.macs(); }
};

// A quantized conv prepared for one problem, knob point and ISA (weights packed, the
// per-channel multipliers and zero-point corrections folded). run() is const, re-entrant
// given distinct workspaces, and does not allocate.
class PreparedQConv {
 public:
  virtual ~PreparedQConv() = default;
  virtual size_t workspace_bytes(int threads) const = 0;
  // x: [n][c][h][w] of x.type; y: [n][k][oh][ow] of y.type; residual: like y, of r.type,
  // or null when the epilogue has none.
  virtual void run(const void* x, void* y, const void* residual, void* workspace,
                   ThreadPool& pool) const = 0;
  virtual size_t packed_bytes() const = 0;
};

class QConvAlgorithm {
 public:
  virtual ~QConvAlgorithm() = default;
  // The f32 twin's name ("direct", "gemm", "spatial-pack", "depthwise"), so --conv-algo
  // and the study's algorithm dimension mean the same loop structure in both types.
  virtual std::string_view name() const = 0;
  virtual bool supports(const QConvProblem& p) const = 0;
  virtual KnobSpace knob_space(const QConvProblem& p, Isa isa) const = 0;
  virtual Knobs default_knobs(const QConvProblem& p, Isa isa) const = 0;
  // weights: s8 [k][c/groups][kh][kw]; w_scale: [k] (> 0, finite); bias: int32 [k] or null.
  // Validates knobs (kInvalidInput naming the knob); kUnsupported when !supports(p).
  virtual std::unique_ptr<PreparedQConv> prepare(const QConvProblem& p, const int8_t* weights,
                                                 const float* w_scale, const int32_t* bias,
                                                 const Knobs& knobs, Isa isa) const = 0;
};

// The one list (src/algo/qconv/qconv_algorithms.inc), in a fixed order.
const std::vector<const QConvAlgorithm*>& qconv_algorithms();
// By name; nullptr when unknown.
const QConvAlgorithm* find_qconv_algorithm(std::string_view name);
// The int8 auto rule (README "The engine", "int8 kernels") for the ISA path `isa`; only
// algorithms that support p are returned.
const QConvAlgorithm& auto_qconv_algorithm(const QConvProblem& p, Isa isa = active_isa());

// The integer oracle: the arithmetic above, literally (scalar loops, no packing).
void reference_qconv(const QConvProblem& p, const void* x, const int8_t* weights,
                     const float* w_scale, const int32_t* bias, const void* residual, void* y);
// One output plane (image n, channel k) of the same: weights of channel k only, its
// multiplier m = requant_multiplier(x.scale, w_scale[k], y.scale) and bias. No validation.
void reference_qconv_plane(const QConvProblem& p, const void* x, const int8_t* weights_k, float m,
                           int32_t bias, const void* residual, void* y, int64_t n, int64_t k);

}  // namespace dlas
