// Native 16-bit GEMM microkernels (AVX512-FP16 half FMAs, AVX512-BF16 pair dot products):
//
//   C[i][j] = (accumulate ? C[i][j] : 0) + sum_kk A[i][kk] * B[kk][j]    (i < m <= MR, j < n <= NR)
//
// with A, B of the family's type and C f32 (the caller's scratch, row i at c + i * ldc; only
// m x n is stored). k counts reduction steps and is a multiple of the kernel's kblock
// (zero-padded). B is packed in units of kp consecutive reduction steps ("k groups"), kp = 1
// for f16, 2 for bf16 (vdpbf16ps and tdpbf16ps multiply pairs of adjacent bf16 values); A in
// blocks of kblock steps (kp for the vector kernels, 32 for the AMX tiles: one tile row):
//   A: a[(kk / kb) * MR * kb + i * kb + kk % kb] = A[i][kk]   (kb = kblock; rows m..MR-1 zero)
//   B: b[(kk / kp) * NR * kp + j * kp + kk % kp] = B[kk][j]   (all NR columns readable)
// f16 kernels accumulate in half precision and add the half accumulators into C (in f32)
// every `flush` steps (0: once, at the end): the knob trading rounding error for speed.
// bf16 kernels accumulate in f32 and ignore `flush`.
//
// Lists: f16-gemm/f16_gemm.inc and bf16-gemm/bf16_gemm.inc (its rows also name kblock). The
// emulated path (no half arithmetic) has no kernels here: it widens A and B panels with h16_vcvt.h
// and runs the f32 GEMM microkernels (f32_gemm.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using H16GemmFn = void (*)(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b,
                           size_t flush, float* c, size_t ldc, bool accumulate);

// Packs m <= MR rows of A (row i's r values at a + i * ldw) into one A panel of the layout
// above with r rounded up to kp; padding rows and steps are not written (the caller zeroes).
using H16GemmPackFn = void (*)(size_t mr, size_t m, size_t r, const uint16_t* a, size_t ldw,
                               uint16_t* panel);

// The A panel packing for blocks of KP steps: the pack of every row with that kblock.
template <int KP>
void h16_gemm_pack_a(size_t mr, size_t m, size_t r, const uint16_t* a, size_t ldw,
                     uint16_t* panel) {
  if constexpr (KP == 2) {
    // Pairs as 32-bit words: a transpose of m rows x r/2 words into r/2 rows of MR words
    // (the fully-connected layers pack every row block of x per call).
    const size_t pairs = r / 2;
    for (size_t q = 0; q < pairs; ++q) {
      uint16_t* dst = panel + q * mr * 2;
      for (size_t i = 0; i < m; ++i) std::memcpy(dst + 2 * i, a + i * ldw + 2 * q, 4);
    }
    if (r % 2 != 0)
      for (size_t i = 0; i < m; ++i) panel[pairs * mr * 2 + 2 * i] = a[i * ldw + r - 1];
    return;
  }
  for (size_t i = 0; i < m; ++i)
    for (size_t rr = 0; rr < r; ++rr)
      panel[(rr / KP) * mr * KP + i * KP + rr % KP] = a[i * ldw + rr];
}

struct H16GemmUkernel {
  const char* name;  // "f16_gemm_14x64__avx512fp16"
  DType type;        // kF16 or kBF16
  ConvCompute compute;
  Isa isa;  // the path it needs
  int mr, nr, kp;
  int kblock;  // k is a multiple of it; the A block (kp, or 32 for AMX tiles)
  H16GemmFn fn;
  H16GemmPackFn pack;  // the A (weights) layout of kblock
};

#define X(fn, isa, mr, nr, ...)                                                             \
  void fn(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b, size_t flush, \
          float* c, size_t ldc, bool accumulate);
#include "algo/microkernels/bf16-gemm/bf16_gemm.inc"
#include "algo/microkernels/f16-gemm/f16_gemm.inc"
#undef X

// The AMX implicit-GEMM kernel of the bf16 `direct` conv on the amx path (bf16_gemm_amx.h):
// `steps` tap x 32-channel steps of a 32-channel x 32-pixel tile, B read straight from
// pair-interleaved padded input planes. `k_bytes`: a step's reduction depth, 64, or 4 x the
// channel pairs of a conv with fewer than 32 input channels (its only block). Built only
// where the toolchain has AMX (like every amx row); runnable where isa_supported(Isa::kAmx).
void bf16_dconv_32x32__amx(size_t steps, const uint16_t* a, const uint32_t* b0, const uint32_t* b1,
                           const int64_t* boff, size_t bstride, float* c, size_t ldc, int k_bytes,
                           bool configure);

// Every kernel built: f16_gemm.inc then bf16_gemm.inc order.
const std::vector<H16GemmUkernel>& h16_gemm_ukernels();
// Kernels of `type` that may run on path `isa` (kernel path <= isa and supported by the CPU),
// highest path first, list order within a path. Empty: that path has no native arithmetic
// for the type (the emulated path runs).
std::vector<const H16GemmUkernel*> h16_gemm_ukernels_for(DType type, Isa isa);

}  // namespace dlas::ukernel
