// The bf16 storage policy of the blocked depthwise tile (f32_dwnchwc_template.h): W bf16
// lanes widened exactly (<< 16), and f32 lanes rounded to bf16 as dlas::f32_to_bf16 (add
// 0x7fff plus the kept lsb, NaNs quieted) -- the h16-vcvt rows' rounding, lane for lane.
// Included by the bf16-dwnchwc ISA TUs only (anonymous namespace, like the template).
#pragma once

#include <cstdint>

#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"

namespace {

template <int W>
struct Bf16Lanes {
  typedef uint16_t u16 __attribute__((vector_size(W * 2)));
  typedef uint32_t u32 __attribute__((vector_size(W * 4)));
  typedef int32_t i32 __attribute__((vector_size(W * 4)));
};

template <class V, int W, class Out>
struct Bf16Io {
  using u16 = typename Bf16Lanes<W>::u16;
  using u32 = typename Bf16Lanes<W>::u32;
  using i32 = typename Bf16Lanes<W>::i32;
  // Widening costs two instructions per load: each window column is loaded once.
  static constexpr bool kLoadOncePerColumn = true;
  // Edge tiles of "same" paddings run bodies compiled for their padding columns in the
  // production AVX-512 set, bf16-out and f32-out (activations other than a clamp: SiLU,
  // HardSwish) alike; the test-only AVX2 set copies its windows, which keeps its TU's build
  // time (the compiled edges triple a set's bodies).
#ifdef __AVX512F__
  static constexpr bool kCompiledEdges = true;
#else
  static constexpr bool kCompiledEdges = false;
#endif
  using Args = dlas::ukernel::Bf16DwNchwcArgs;
  using X = uint16_t;
  using Y = Out;
  static V load(const uint16_t* p) {
    u16 h;
    __builtin_memcpy(&h, p, sizeof(h));
    const u32 w = __builtin_convertvector(h, u32) << 16;
    V v;
    __builtin_memcpy(&v, &w, sizeof(v));
    return v;
  }
  static void store(float* p, V v) { __builtin_memcpy(p, &v, sizeof(V)); }
  static void store(uint16_t* p, V v) {
    u32 u;
    __builtin_memcpy(&u, &v, sizeof(u));
    const u32 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const u32 quiet = (u >> 16) | 0x40u;
    const i32 nan = (u & 0x7fffffffu) > 0x7f800000u;
    const u16 h = __builtin_convertvector(nan ? quiet : rounded, u16);
    __builtin_memcpy(p, &h, sizeof(h));
  }
};

}  // namespace

// Defines name (bf16 out) and name_f32_out over the tile template for W lanes of vector V.
#define DLAS_BF16_DWNCHWC_ENTRY(name, V, W)                                     \
  Bf16DwNchwcFn name(int pixels, int stride, int kw) {                          \
    return dwnchwc_select<V, W, W, Bf16Io<V, W, uint16_t>>(pixels, stride, kw); \
  }                                                                             \
  Bf16DwNchwcF32OutFn name##_f32_out(int pixels, int stride, int kw) {          \
    return dwnchwc_select<V, W, W, Bf16Io<V, W, float>>(pixels, stride, kw);    \
  }
