// int8 fully-connected microkernels with the f32 output fused into the store: the inner
// loop of PreparedFullyConnectedQs8 (src/algo/fully_connected_qs8.cc).
//
//   acc[i][j] = init[j] + sum_q dot4(X[i][q], W[q][j])                  (int32, exact)
//   Y[i][j]   = min(max(fmaf((float)acc[i][j], mult[j], bias[j]), lo), hi)
//                                                   (i < m <= MR, j < n <= NR)
//
// The int8 GEMM tiles of qs8-gemm with the operands' roles swapped: rows i are rows of the
// layer's input x (the broadcast operand), columns j output features (the vector operand,
// NR per panel), so the per-column terms (init = -x_zp' * sum(w), mult, bias) are vectors.
// Operands come in groups of KR reduction elements, 4 bytes per (group, row|column):
//   KR = 4: quads of u8 activations / s8 weights (vpdpbusd, scalar)
//   KR = 2: pairs of s16 (activations 0..255 zero-extended, weights sign-extended): the
//           pmaddwd paths (AVX2, AVX-512 without VNNI), exact as in qs8_gemm.h.
// X: row i's groups at x + i * ldx (bytes), group q at +4q: x itself where its rows are
//    already u8 quads, else rows packed by qs8_fc_pack_x. Rows m..MR-1 are not read (the
//    tile repeats row m-1 there) and not stored.
// W (an NR-column panel): [kq][NR][4 bytes], packed once by qs8_fc_pack_w; padding
//    columns and groups hold zero weights, so whatever pads X contributes nothing.
//
// The one list of kernels is qs8-fc/qs8_fc.inc; each ISA's kernels live in their own
// translation unit compiled with that ISA's flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

struct QS8FcParams {
  const int32_t* init;  // [NR] per column: -x_zp' * sum_kk w[kk][j]
  const float* mult;    // [NR] per column: x_scale * w_scale[j]
  const float* bias;    // [NR] per column
  float lo, hi;         // the fused clamp
};

using QS8FcFn = void (*)(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w,
                         float* y, size_t ldy, const QS8FcParams& p);

struct QS8FcUkernel {
  const char* name;  // "qs8_fc_8x48__avx512vnni"
  Isa isa;
  int mr, nr;
  int kr;  // reduction elements per 4-byte group: 4 (u8/s8 quads) or 2 (s16 pairs)
  QS8FcFn fn;
};

// Packs output columns [0, n) (n <= nr) of s8 weights into one W panel of the layout above:
// column j's k values at w + j * ldk, element stride sk (w_is_nk: ldk = k, sk = 1; else
// ldk = 1, sk = n). Bytes of padding columns and groups are not written: the caller zeroes
// the panel.
template <int KR>
void qs8_fc_pack_w(size_t nr, size_t n, size_t k, const int8_t* w, size_t ldk, size_t sk,
                   uint8_t* panel) {
  static_assert(KR == 4 || KR == 2);
  for (size_t j = 0; j < n; ++j)
    for (size_t kk = 0; kk < k; ++kk) {
      uint8_t* dst = panel + ((kk / KR) * nr + j) * 4;
      const int8_t v = w[j * ldk + kk * sk];
      if constexpr (KR == 4) {
        dst[kk % KR] = static_cast<uint8_t>(v);
      } else {  // s16 pairs, sign-extended
        const int16_t s = v;
        std::memcpy(dst + 2 * (kk % KR), &s, 2);
      }
    }
}

// Packs m rows of x (row i's k bytes at x + i * k) into rows of kq = ceil(k / KR) groups
// (row i at dst + i * kq * 4) as u8 values: s8 values shifted by 128 (x ^ 0x80) when
// x_signed. Padding elements hold pad, the zero point as stored (shifted likewise).
template <int KR>
void qs8_fc_pack_x(size_t m, size_t k, const uint8_t* x, bool x_signed, uint8_t pad, uint8_t* dst) {
  static_assert(KR == 4 || KR == 2);
  const uint8_t flip = x_signed ? 0x80 : 0;
  const size_t kpad = (k + KR - 1) / KR * KR;
  for (size_t i = 0; i < m; ++i) {
    const uint8_t* src = x + i * k;
    if constexpr (KR == 4) {
      uint8_t* row = dst + i * kpad;
      for (size_t kk = 0; kk < k; ++kk) row[kk] = src[kk] ^ flip;
      for (size_t kk = k; kk < kpad; ++kk) row[kk] = pad ^ flip;
    } else {  // s16 pairs, zero-extended
      uint16_t* row = reinterpret_cast<uint16_t*>(dst + i * kpad * 2);
      for (size_t kk = 0; kk < k; ++kk) row[kk] = src[kk] ^ flip;
      for (size_t kk = k; kk < kpad; ++kk) row[kk] = pad ^ flip;
    }
  }
}

// Every kernel built, in qs8_fc.inc order.
const std::vector<QS8FcUkernel>& qs8_fc_ukernels();
// Kernels runnable on `isa`: those of the paths best_for_isa may pick (listed path <= isa,
// base paths or supported), highest path first; the first is the path's default.
std::vector<const QS8FcUkernel*> qs8_fc_ukernels_for(Isa isa);
// By name; nullptr when unknown.
const QS8FcUkernel* find_qs8_fc(const char* name);

}  // namespace dlas::ukernel

// Declarations of every int8 FC microkernel, derived from qs8_fc.inc.
namespace dlas::ukernel {
#define X(fn, isa, mr, nr, kr)                                                                  \
  void fn(size_t m, size_t n, size_t kq, const uint8_t* x, size_t ldx, const void* w, float* y, \
          size_t ldy, const QS8FcParams& p);
#include "algo/microkernels/qs8-fc/qs8_fc.inc"
#undef X
}  // namespace dlas::ukernel
