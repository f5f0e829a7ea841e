// The int8 element types of the conv operator (conv.h, ConvTypes::kInt8): the arithmetic
// contract and its oracle. The same ConvProblem shapes, computed on 8-bit activations and
// weights with int32 accumulation and the requantization to the output's 8-bit type fused
// into the kernel, together with the ReLU / ReLU6 clamps and a residual add. Data is NCHW
// or 8-bit channel blocks (nchw16c) at the interface (u8 or s8 elements, ConvProblem's
// layouts); an algorithm may pack into another layout internally.
//
// Quantization (QuantParams, ONNX QuantizeLinear convention): real = scale * (q - zero_point).
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

#include <cstdint>

#include "dlas/algo/conv.h"

namespace dlas {

// Whether path isa runs int8 convs natively on 8-bit channel blocks of its native blocked
// layout: the qs8-nchwc vpdpbusd tiles on nchw16c (AVX512-VNNI and above) or vpmaddwd tiles
// on nchw8c (AVX2), on a CPU that has them. Elsewhere (AVX-512 without VNNI, scalar) a
// blocked int8 problem runs its NCHW twin between reorders (the layout pass does not block).
bool int8_blocks_native(Isa isa);
// The layout of those blocks (nchw16c or nchw8c), or kNchw where the path has none.
Layout int8_blocked_layout(Isa isa);

// The integer oracle: the arithmetic above, literally (scalar loops, no packing), for an
// int8 problem (validated).
void reference_qconv(const ConvProblem& p, const void* x, const ConvWeights& weights,
                     const void* residual, void* y);
// One output plane (image n, channel k) of the same: weights of channel k only, its
// multiplier m = requant_multiplier(x.scale, w_scale[k], y.scale) and bias. No validation.
void reference_qconv_plane(const ConvProblem& p, const void* x, const int8_t* weights_k, float m,
                           int32_t bias, const void* residual, void* y, int64_t n, int64_t k);

}  // namespace dlas
