// int8 GEMM microkernels with the requantization fused into the store: the inner loop of
// the int8 `gemm` convolution (src/algo/conv/gemm_qconv.cc).
//
//   acc[i][j] = init[i] + sum_kk A[i][kk] * B[kk][j]                  (int32, exact)
//   v = fmaf((float)acc, mult[i], t[i][j]),  t = residual ? (float)(r - r_zp) * rm : 0
//   C[i][j] = (int8/uint8)(nearbyint(min(max(v, vlo), vhi)) + y_zp)     (i < m <= MR, j < n <= NR)
//
// which is qconv.h's arithmetic step for step (init = bias - x_zp' * sum(w) folds the
// zero point; see gemm_qconv.cc). Rows i are output channels, columns j pixels, so every
// row of C is a contiguous run of one NCHW output plane (row i at c + i * ldc).
//
// Operands are packed in groups of KR reduction rows, 4 bytes per (group, row|column):
//   KR = 4: quads of u8 activations / s8 weights (vpdpbusd, AMX tdpbsud, scalar)
//   KR = 2: pairs of s16 (activations 0..255 zero-extended, weights sign-extended): the
//           pmaddwd paths (AVX2, AVX-512 without VNNI). pmaddubsw on u8 x s8 pairs would
//           saturate its s16 sum (255 * 127 * 2 > 32767); pmaddwd on s16 operands sums two
//           products of at most 255 * 128 into an int32 lane, which is exact.
// B (activations, an NR-pixel panel): [kq][NR][4 bytes]; every element readable.
// A (weights, an MR-channel panel):  [kq / KB][MR][KB][4 bytes]: KB = 1 for the vector
// kernels ([kq][MR][4]), 16 for AMX (each 16-row tile row holds 64 reduction bytes of one
// channel). kq (groups) is a multiple of KB; padding groups hold zero weights.
//
// The one list of kernels is qs8-gemm/qs8_gemm.inc; each ISA's kernels live in their own
// translation unit compiled with that ISA's flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8GemmParams {
  const int32_t* init;  // [MR] per row: bias - zero-point correction (rows past m unread)
  const float* mult;    // [MR] per row: requant_multiplier(x.scale, w_scale, y.scale)
  float vlo, vhi;       // out_lo - y_zp, out_hi - y_zp
  int32_t y_zp;
  bool y_signed;         // C is int8 (else uint8)
  const void* residual;  // null, or row i at (bytes) residual + i * ldc, of r's type
  bool r_signed;
  int32_t r_zp;
  float rm;  // requant_multiplier(r.scale, 1, y.scale)
};

using QS8GemmFn = void (*)(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c,
                           size_t ldc, const QS8GemmParams& p);

// Packs m <= MR channels of s8 weights (channel i's r reduction values at w + i * ldw) into
// one A panel of the layout above. Bytes of padding channels and groups are not written:
// the caller zeroes the panel.
using QS8GemmPackFn = void (*)(size_t mr, size_t m, size_t r, const int8_t* w, size_t ldw,
                               uint8_t* panel);

struct QS8GemmUkernel {
  const char* name;  // "qs8_gemm_6x16__avx2"
  Isa isa;
  int mr, nr;
  int kr;  // reduction rows per 4-byte group: 4 (u8/s8 quads) or 2 (s16 pairs)
  int kb;  // groups per A block (1, or 16 for AMX tiles)
  QS8GemmFn fn;
  QS8GemmPackFn pack;  // the A (weights) layout of kr and kb
};

// The A panel packing for KR and KB, the pack of every row with those columns.
template <int KR, int KB>
void qs8_gemm_pack_a(size_t mr, size_t m, size_t r, const int8_t* w, size_t ldw, uint8_t* panel) {
  static_assert(KR == 4 || KR == 2);
  for (size_t i = 0; i < m; ++i)
    for (size_t rr = 0; rr < r; ++rr) {
      const size_t q = rr / KR, e = rr % KR;
      uint8_t* dst = panel + ((q / KB) * mr + i) * KB * 4 + (q % KB) * 4;
      const int8_t v = w[i * ldw + rr];
      if constexpr (KR == 4) {
        dst[e] = static_cast<uint8_t>(v);
      } else {  // s16 pairs, sign-extended
        const int16_t s = v;
        std::memcpy(dst + 2 * e, &s, 2);
      }
    }
}

// The AMX implicit-GEMM kernel of the int8 `direct` conv on the amx path
// (qs8_gemm_32x32__amx.cc): a 32-channel x 32-pixel int32 tile reduced over `steps` tap x
// 64-channel steps, B read straight from quad-interleaved padded input planes, then
// requantized into two runs of 16 virtual pixels (direct_qs8.cc). Runnable where
// isa_supported(Isa::kAmx).
//   a      weights of the step sequence: per step [32 channels][64 bytes] s8
//   b0/b1  the two runs' first pixels (uint32 quads); step s reads its 16 quad rows at
//          b + boff[s], bstride bytes apart
//   out    per run r < runs: mask[r], the run's lanes that are real output pixels (they are
//          consecutive in the output); c[r], where the first of them goes (row i at
//          c[r] + i * ldc) and, when p.residual is set, r_at[r] likewise
//   m      channels stored (rows past m are computed from zero weights)
//   k_bytes  the reduction depth of a step: 64, or 4 x the channel quads of a conv with
//          fewer than 64 input channels (its only channel block; the B tiles then read
//          k_bytes / 4 quad rows, the weight rows their first k_bytes bytes)
//   configure: load the tile configuration first (only the first of several calls in a row
//          on one thread needs it)
struct QS8DconvOut {
  uint8_t* c[2];
  const uint8_t* r_at[2];
  uint16_t mask[2];
  int runs;
};
void qs8_dconv_32x32__amx(size_t m, size_t steps, const uint8_t* a, const uint32_t* b0,
                          const uint32_t* b1, const int64_t* boff, size_t bstride,
                          const QS8DconvOut& out, size_t ldc, const QS8GemmParams& p, int k_bytes,
                          bool configure);

// Every kernel built, in qs8_gemm.inc order.
const std::vector<QS8GemmUkernel>& qs8_gemm_ukernels();
// Kernels runnable on `isa`: those of the paths best_for_isa may pick (listed path <= isa,
// base paths or supported), highest path first.
std::vector<const QS8GemmUkernel*> qs8_gemm_ukernels_for(Isa isa);
// By name; nullptr when unknown.
const QS8GemmUkernel* find_qs8_gemm(const char* name);

}  // namespace dlas::ukernel

// Declarations of every int8 GEMM microkernel, derived from qs8_gemm.inc.
namespace dlas::ukernel {
#define X(fn, isa, mr, nr, kr, kb)                                                          \
  void fn(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c, size_t ldc, \
          const QS8GemmParams& p);
#include "algo/microkernels/qs8-gemm/qs8_gemm.inc"
#undef X
}  // namespace dlas::ukernel
