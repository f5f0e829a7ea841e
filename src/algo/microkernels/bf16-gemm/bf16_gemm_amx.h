// The AMX-BF16 GEMM microkernel (h16_gemm.h) over a "tiles" policy T: the real tile
// instructions in bf16_gemm_32x32__amx.cc, an exact array model of them in the tests
// (h16_native_logic__avx2.cc), so the blocking and addressing also run on machines without
// AMX.
//
// A 32x32 f32 output tile: four 16x16 f32 accumulator tiles (0..3), two weight tiles (4, 5:
// 16 output channels x 32 bf16 reduction steps) and two activation tiles (6, 7: 16 pairs of
// reduction steps x 16 pixels x 2 bf16), i.e. all 8 tile registers. Channels are the tile
// rows and pixels the columns, the vector kernels' orientation, so the B panel is the
// vector kernels' pair layout ([k / 2][NR = 32][2]: a tile row is 64 bytes of one pair row,
// the next pair row 128 bytes on) and the A panel is blocked [k / 32][MR = 32][32]
// (h16_gemm_pack_a<32>: a tile row is 32 reduction steps of one channel). k is a multiple
// of 32 (kblock): one tdpbf16ps consumes 32 reduction steps.
//
// tdpbf16ps keeps f32 accumulators, so `flush` is ignored like in the vdpbf16ps kernels.
// The accumulators stay in the tiles for the whole call: the caller passes a whole
// reduction block (gemm_h16.cc's kc) so the tile configuration and the C round trip are
// paid once per block, not per 32 steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

// Stream: the weight panel is read once (a plane of one pixel panel), so each step also
// prefetches the weights 4 steps ahead; where the panel is reused from cache the prefetches
// only cost issue slots.
template <class T, bool Stream>
inline void bf16_gemm_amx_32x32(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                                size_t /*flush*/, float* c, size_t ldc, bool accumulate) {
  T::configure();
  // Full tiles go straight between the tiles and C; partial ones through a 32x32 buffer
  // (the tiles always move 16 rows x 64 bytes).
  const bool full = m == 32 && n == 32;
  alignas(64) float buf[32][32];
  float* cp = full ? c : &buf[0][0];
  const size_t cs = (full ? ldc : 32) * sizeof(float);
  if (accumulate) {
    if (!full) {
      std::memset(buf, 0, sizeof buf);
      for (size_t i = 0; i < m; ++i) std::memcpy(buf[i], c + i * ldc, n * sizeof(float));
    }
    T::template load<0>(cp, cs);
    T::template load<1>(cp + 16, cs);
    T::template load<2>(cp + 16 * (cs / sizeof(float)), cs);
    T::template load<3>(cp + 16 * (cs / sizeof(float)) + 16, cs);
  } else {
    T::template zero<0>();
    T::template zero<1>();
    T::template zero<2>();
    T::template zero<3>();
  }
  for (size_t kk = 0; kk < k; kk += 32) {
    if constexpr (Stream)
      for (int l = 0; l < 32; ++l) __builtin_prefetch(a + 4 * 32 * 32 + l * 32, 0, 3);
    T::template load<4>(a, 64);            // channels 0..15, 32 steps each
    T::template load<5>(a + 16 * 32, 64);  // channels 16..31
    T::template load<6>(b, 128);           // pixels 0..15 of 16 pair rows
    T::template load<7>(b + 32, 128);      // pixels 16..31
    T::template dp<0, 4, 6>();
    T::template dp<1, 4, 7>();
    T::template dp<2, 5, 6>();
    T::template dp<3, 5, 7>();
    a += 32 * 32;
    b += 16 * 64;
  }
  T::template store<0>(cp, cs);
  T::template store<1>(cp + 16, cs);
  T::template store<2>(cp + 16 * (cs / sizeof(float)), cs);
  T::template store<3>(cp + 16 * (cs / sizeof(float)) + 16, cs);
  if (!full)
    for (size_t i = 0; i < m; ++i) std::memcpy(c + i * ldc, buf[i], n * sizeof(float));
}

}  // namespace

namespace {

// The implicit-GEMM (direct) variant for convs on AMX: no im2col. The input is
// pre-interleaved into zero-padded planes of channel pairs (one uint32 per padded pixel:
// channels 2q, 2q + 1), so 16 consecutive (virtual) output pixels under tap (ky, kx) read 16
// consecutive pairs, one 64-byte tile row, and the 16 pair planes of a 32-channel block are
// tile rows `bstride` bytes apart (the geometry: src/algo/conv/amx_direct_grid.h). Each of
// the `steps` reduction steps s (a tap and a 32-channel block) multiplies A tiles
// a + s * 32 * 32 (32 channels x 32 input channels,
// [32][32] bf16) by B tiles at b0 + boff[s] and b1 + boff[s] (two runs of 16 output pixels,
// uint32 units). c: the 32 x 32 f32 result, row m = output channel m at c + m * ldc,
// columns 0..15 the first pixel run and 16..31 the second. k_bytes: a step's depth (64, or
// 4 x the pairs of a conv with fewer than 32 input channels). configure: load the tile
// configuration first; a caller making several calls in a row on one thread, with no other
// tile user in between, passes true only to the first (a short reduction -- a 1x1 conv on
// few channels -- would otherwise pay the configuration on every tile).
template <class T>
inline void bf16_dconv_amx_32x32(size_t steps, const uint16_t* a, const uint32_t* b0,
                                 const uint32_t* b1, const int64_t* boff, size_t bstride, float* c,
                                 size_t ldc, int k_bytes, bool configure) {
  if (configure) T::configure(k_bytes);
  T::template zero<0>();
  T::template zero<1>();
  T::template zero<2>();
  T::template zero<3>();
  for (size_t s = 0; s < steps; ++s) {
    if (s + 1 < steps) T::prefetch_rows(b0 + boff[s + 1], b1 + boff[s + 1], bstride, k_bytes / 4);
    T::template load<4>(a, 64);
    T::template load<5>(a + 16 * 32, 64);
    T::template load<6>(b0 + boff[s], bstride);
    T::template load<7>(b1 + boff[s], bstride);
    T::template dp<0, 4, 6>();
    T::template dp<1, 4, 7>();
    T::template dp<2, 5, 6>();
    T::template dp<3, 5, 7>();
    a += 32 * 32;
  }
  T::template store<0>(c, ldc * 4);
  T::template store<1>(c + 16, ldc * 4);
  T::template store<2>(c + 16 * ldc, ldc * 4);
  T::template store<3>(c + 16 * ldc + 16, ldc * 4);
}

}  // namespace
