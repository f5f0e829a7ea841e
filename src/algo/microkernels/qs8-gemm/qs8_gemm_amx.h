// The AMX-INT8 microkernel over a "tiles" policy T (the real tile instructions in
// qs8_gemm_32x32__amx.cc; an exact array model of them in tests/algo/, so the blocking,
// addressing and store logic runs on machines without AMX) and a 16-lane vector policy
// P for the requantizing store (qs8_gemm_template.h).
//
// A 32x32 output tile: four 16x16 int32 accumulator tiles (0..3), two weight tiles (4, 5:
// 16 channels x 64 reduction bytes, s8) and two activation tiles (6, 7: 16 groups x 16
// pixels x 4 u8), i.e. all 8 tile registers. tdpbsud (signed x unsigned bytes) takes the
// weights as its first operand, so channels are tile rows and pixels tile columns, the
// same orientation as the vector kernels (each output row is a run of one NCHW plane);
// the activation panel layout [kq][32][4] is the vector kernels' quad layout, and
// the weight panel is blocked [kq / 16][32][64 bytes] (KB = 16).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace {

template <class T, class P>
inline void qs8_gemm_amx_32x32(size_t m, size_t n, size_t kq, const void* a_, const void* b_,
                               void* c, size_t ldc, const dlas::ukernel::QS8GemmParams& p) {
  static_assert(P::kLanes == 16, "the store runs 16-lane vectors over a 16-column tile");
  typedef typename QVec<16>::i32 I;
  const uint8_t* a = static_cast<const uint8_t*>(a_);
  const uint8_t* b = static_cast<const uint8_t*>(b_);
  T::configure();
  T::template zero<0>();
  T::template zero<1>();
  T::template zero<2>();
  T::template zero<3>();
  for (size_t q = 0; q < kq; q += 16) {
    T::template load<4>(a, 64);            // channels 0..15, 16 groups each
    T::template load<5>(a + 16 * 64, 64);  // channels 16..31
    T::template load<6>(b, 32 * 4);        // pixels 0..15 of 16 groups
    T::template load<7>(b + 64, 32 * 4);   // pixels 16..31
    T::template dp<0, 4, 6>();
    T::template dp<1, 4, 7>();
    T::template dp<2, 5, 6>();
    T::template dp<3, 5, 7>();
    a += 32 * 64;
    b += 16 * 32 * 4;
  }
  alignas(64) int32_t buf[32][32];
  T::template store<0>(&buf[0][0], 32 * 4);
  T::template store<1>(&buf[0][16], 32 * 4);
  T::template store<2>(&buf[16][0], 32 * 4);
  T::template store<3>(&buf[16][16], 32 * 4);
  uint8_t* cb = static_cast<uint8_t*>(c);
  const uint8_t* rb = static_cast<const uint8_t*>(p.residual);
  for (size_t i = 0; i < m; ++i) {
    I acc[2];
    __builtin_memcpy(acc, buf[i], sizeof(acc));
    acc[0] += p.init[i];
    acc[1] += p.init[i];
    qs8_store_row<P, 2>(acc, n, p.mult[i], rb ? rb + i * ldc : nullptr, cb + i * ldc, p);
  }
}

}  // namespace
