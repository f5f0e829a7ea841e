// The int8 GEMM microkernel written once over GCC vector-extension types and a small
// "policy" that supplies the two ISA-specific primitives:
//   P::dot(acc, b, a)  acc + the 4-byte group dot product per 32-bit lane (b: one group
//                      of L pixels, a: one group of one channel, broadcast): vpdpbusd
//                      (u8 quads x s8 quads) or vpmaddwd + vpaddd (s16 pairs)
//   P::fma(a, b, c)    a * b + c with one rounding (vfmadd)
// Each ISA translation unit instantiates it with its intrinsics; tests/algo/ instantiates
// it with exact scalar models of the instructions in an AVX2 TU, so the logic of the
// kernels of paths this machine lacks runs here. The whole body is in an anonymous
// namespace: internal linkage per TU (no ODR merge of AVX-512 code into the AVX2 path),
// and no std:: calls on vectors or floats.
//
// Contract: src/algo/microkernels/qs8-gemm/qs8_gemm.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "algo/microkernels/qs8-gemm/qs8_gemm.h"

namespace {

template <int L>
struct QVec {
  typedef int32_t i32 __attribute__((vector_size(4 * L)));
  typedef float f32 __attribute__((vector_size(4 * L)));
  typedef uint8_t u8 __attribute__((vector_size(L)));
  typedef int8_t s8 __attribute__((vector_size(L)));
  typedef uint8_t b4 __attribute__((vector_size(4 * L)));  // the bytes of an i32
};

// 1.5 * 2^23: (v + k) - k rounds a float with |v| < 2^22 to an integer, ties to even (the
// default rounding mode), exactly like nearbyint / vcvtps2dq; the clamp bounds keep v
// within [-255, 255].
constexpr float kRoundMagic = 12582912.f;

// One output element: qconv.h steps 3-5 (t already computed).
inline uint8_t qs8_requant1(int32_t acc, float m, float t, const dlas::ukernel::QS8GemmParams& p) {
  float v = __builtin_fmaf(static_cast<float>(acc), m, t);
  v = v < p.vlo ? p.vlo : v;
  v = v > p.vhi ? p.vhi : v;
  v = (v + kRoundMagic) - kRoundMagic;
  return static_cast<uint8_t>(static_cast<int32_t>(v) + p.y_zp);
}

inline float qs8_residual1(const dlas::ukernel::QS8GemmParams& p, const void* row, size_t j) {
  const int32_t r =
      p.r_signed ? static_cast<const int8_t*>(row)[j] : static_cast<const uint8_t*>(row)[j];
  return static_cast<float>(r - p.r_zp) * p.rm;
}

// dst[0, n) = src[0, n) for n < 16 in a few fixed-size moves (a loop here would become a
// memcpy call).
inline void qs8_copy_small(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    if (n >= 2) std::memcpy(dst + n - 2, src + n - 2, 2);
    if (n >= 1) dst[0] = src[0];
  }
}

// Byte moves between memory and int32 lanes. A policy may supply them with its ISA's
// widening / narrowing instructions (load_u8 / load_s8: L bytes -> L lanes, zero / sign
// extended; store_low_bytes: each lane's low byte -> L bytes); GCC 12 expands the generic
// __builtin_convertvector between byte and int32 vectors lane by lane, so the generic
// narrowing below is a byte shuffle (little endian: a lane's low byte is its first).
template <class P>
inline typename QVec<P::kLanes>::i32 qs8_load_bytes(const void* src, bool is_signed) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  if constexpr (requires { P::load_u8(src); }) {
    return is_signed ? P::load_s8(src) : P::load_u8(src);
  } else if (is_signed) {
    typename QVec<L>::s8 b;
    __builtin_memcpy(&b, src, L);
    return __builtin_convertvector(b, I);
  } else {
    typename QVec<L>::u8 b;
    __builtin_memcpy(&b, src, L);
    return __builtin_convertvector(b, I);
  }
}

template <int L, class B, class I, size_t... j>
inline void qs8_low_bytes_generic(I v, uint8_t* dst, std::index_sequence<j...>) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
  B b;
  __builtin_memcpy(&b, &v, sizeof(b));
  const B s = __builtin_shuffle(b, B{static_cast<uint8_t>(j < L ? 4 * j : 0)...});
  __builtin_memcpy(dst, &s, L);
}

template <class P>
inline void qs8_store_low_bytes(typename QVec<P::kLanes>::i32 v, uint8_t* dst) {
  if constexpr (requires { P::store_low_bytes(v, dst); })
    P::store_low_bytes(v, dst);
  else
    qs8_low_bytes_generic<P::kLanes, typename QVec<P::kLanes>::b4>(
        v, dst, std::make_index_sequence<4 * P::kLanes>{});
}

// Float to int32, rounding to nearest, ties to even: the policy's vcvtps2dq (the default
// rounding mode), else the magic-number rounding and a truncating conversion.
template <class P>
inline typename QVec<P::kLanes>::i32 qs8_round(typename QVec<P::kLanes>::f32 f) {
  if constexpr (requires { P::round(f); }) {
    return P::round(f);
  } else {
    f = (f + kRoundMagic) - kRoundMagic;
    return __builtin_convertvector(f, typename QVec<P::kLanes>::i32);
  }
}

// Requantizes and stores n (<= NV * L) columns of one row from NV accumulator vectors.
template <class P, int NV>
inline void qs8_store_row(const typename QVec<P::kLanes>::i32* acc, size_t n, float m,
                          const void* rrow, uint8_t* crow, const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  typedef typename QVec<L>::f32 F;
  if (n == static_cast<size_t>(NV * L)) {
    const F vm = F{} + m, vlo = F{} + p.vlo, vhi = F{} + p.vhi;
    const I zp = I{} + p.y_zp;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      F t = F{};
      if (rrow) {
        const I r = qs8_load_bytes<P>(static_cast<const uint8_t*>(rrow) + v * L, p.r_signed);
        t = __builtin_convertvector(r - p.r_zp, F) * p.rm;
      }
      F f = P::fma(__builtin_convertvector(acc[v], F), vm, t);
      f = f < vlo ? vlo : f;
      f = f > vhi ? vhi : f;
      qs8_store_low_bytes<P>(qs8_round<P>(f) + zp, crow + v * L);
    }
    return;
  }
  // Column tail (edge tiles only): spill, then element by element (the same arithmetic:
  // __builtin_fmaf is one rounding, like the vector FMA).
  int32_t tmp[NV * L];
  __builtin_memcpy(tmp, acc, sizeof(tmp));
  for (size_t j = 0; j < n; ++j)
    crow[j] = qs8_requant1(tmp[j], m, rrow ? qs8_residual1(p, rrow, j) : 0.f, p);
}

// C[MR][NV*L] tile; MR*NV accumulators + NV B vectors + 1 broadcast in registers. Rows
// m..MR-1 are computed from the zero weights of the packed panel and not stored.
template <class P, int MR, int NV>
inline void qs8_gemm_vec(size_t m, size_t n, size_t kq, const void* a_, const void* b_, void* c,
                         size_t ldc, const dlas::ukernel::QS8GemmParams& p) {
  constexpr int L = P::kLanes;
  typedef typename QVec<L>::i32 I;
  const uint8_t* a = static_cast<const uint8_t*>(a_);
  const uint8_t* b = static_cast<const uint8_t*>(b_);
  I acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    const int32_t init = static_cast<size_t>(i) < m ? p.init[i] : 0;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = I{} + init;
  }
  for (size_t q = 0; q < kq; ++q) {
    I bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) __builtin_memcpy(&bv[v], b + v * L * 4, sizeof(I));
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      int32_t w;
      __builtin_memcpy(&w, a + i * 4, 4);
      const I av = I{} + w;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = P::dot(acc[i][v], bv[v], av);
    }
    a += MR * 4;
    b += NV * L * 4;
  }
  uint8_t* cb = static_cast<uint8_t*>(c);
  const uint8_t* rb = static_cast<const uint8_t*>(p.residual);
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i) {
    if (static_cast<size_t>(i) >= m) break;
    qs8_store_row<P, NV>(acc[i], n, p.mult[i], rb ? rb + i * ldc : nullptr, cb + i * ldc, p);
  }
}

}  // namespace

// Defines the list's kernel fn as the MR x (NV * lanes) tile of qs8_gemm_vec with dot-product
// policy P; used inside namespace dlas::ukernel by the translation unit of P's ISA.
#define DLAS_QS8_GEMM_KERNEL(fn, P, MR, NV)                                                 \
  void fn(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c, size_t ldc, \
          const QS8GemmParams& p) {                                                         \
    qs8_gemm_vec<P, MR, NV>(m, n, kq, a, b, c, ldc, p);                                     \
  }
