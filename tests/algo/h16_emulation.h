// Exact software models of the native 16-bit instructions, for testing kernel logic on
// machines without them (tests/algo/h16_native_logic__avx2.cc):
//   f16_fma_model      vfmadd231ph, one lane: a * b + c rounded once to f16 (nearest even),
//                      no DAZ/FTZ (AVX512-FP16 handles half subnormals at full speed)
//   bf16_dot_model     vdpbf16ps, one lane: acc += a.hi * b.hi, then += a.lo * b.lo, each
//                      step rounded to f32 (nearest even) with DAZ on inputs, FTZ on results
//                      (Intel SDM pseudocode)
// Anonymous namespace: also included by an __avx2.cc TU (internal linkage, see
// f32_gemm_template.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "dlas/core/dtype.h"

namespace {

// |v| of a finite f16 as an integer count of 2^-24 (its lsb at the smallest exponent).
inline int64_t f16_units(uint16_t h) {
  const int64_t e = (h >> 10) & 31, m = h & 1023;
  return e == 0 ? m : (m | 1024) << (e - 1);
}

inline uint16_t f16_fma_model(uint16_t a, uint16_t b, uint16_t c) {
  const bool special = ((a >> 10) & 31) == 31 || ((b >> 10) & 31) == 31 || ((c >> 10) & 31) == 31;
  if (special)  // Inf / NaN: no rounding question
    return dlas::f32_to_f16(
        std::fma(dlas::f16_to_f32(a), dlas::f16_to_f32(b), dlas::f16_to_f32(c)));
  // Exact value in units of 2^-48: a*b = ua*ub (units 2^-48), c = uc << 24.
  const bool sp = ((a ^ b) >> 15) & 1, sc = (c >> 15) & 1;
  const __int128 prod = static_cast<__int128>(f16_units(a)) * f16_units(b);
  const __int128 cv = static_cast<__int128>(f16_units(c)) << 24;
  const __int128 v = (sp ? -prod : prod) + (sc ? -cv : cv);
  if (v == 0) {
    // Exact zero: -0 only when both terms are -0 (x + (-x) is +0 in round to nearest).
    const bool neg = prod == 0 && cv == 0 && sp && sc;
    return neg ? 0x8000 : 0;
  }
  const bool neg = v < 0;
  const unsigned __int128 mag = static_cast<unsigned __int128>(neg ? -v : v);
  int msb = 127;
  while (!((mag >> msb) & 1)) --msb;
  // Exponent e = msb - 48; the lsb of an f16 with exponent e is 2^(e-10) = 2^(msb-58) ->
  // shift msb - 10 in these units; subnormals (e < -14) have lsb 2^-24 -> shift 24.
  const int shift = msb - 48 < -14 ? 24 : msb - 10;
  unsigned __int128 q = mag >> shift;
  const unsigned __int128 rem = mag & ((static_cast<unsigned __int128>(1) << shift) - 1);
  const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  // q * 2^(shift - 48) is an f16 value (or 2^16 = overflow to Inf): exact in float.
  const float f = std::ldexp(static_cast<float>(static_cast<uint64_t>(q)), shift - 48);
  return dlas::f32_to_f16(neg ? -f : f);
}

inline float bf16_daz(uint16_t h) {
  return ((h >> 7) & 0xff) == 0 ? (h & 0x8000 ? -0.f : 0.f) : dlas::bf16_to_f32(h);
}
inline float f32_ftz(float v) {
  return std::fabs(v) < 1.17549435e-38f ? (std::signbit(v) ? -0.f : 0.f) : v;
}
inline float f32_daz(float v) { return f32_ftz(v); }

// One f32 step acc + x * y with x, y bf16: the product is exact in double and in f32 range
// unless it over/underflows; double then float rounding of a sum of two floats is exact
// rounding (53 >= 2 * 24 + 2).
inline float bf16_dot_step(float acc, float x, float y) {
  const float prod = f32_ftz(static_cast<float>(static_cast<double>(x) * y));
  return f32_ftz(static_cast<float>(static_cast<double>(acc) + static_cast<double>(prod)));
}

inline float bf16_dot_model(float acc, uint32_t a, uint32_t b) {
  float t = f32_daz(acc);
  t = bf16_dot_step(t, bf16_daz(static_cast<uint16_t>(a >> 16)),
                    bf16_daz(static_cast<uint16_t>(b >> 16)));
  t = bf16_dot_step(t, bf16_daz(static_cast<uint16_t>(a)), bf16_daz(static_cast<uint16_t>(b)));
  return t;
}

}  // namespace
