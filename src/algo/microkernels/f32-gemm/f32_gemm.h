// f32 GEMM microkernels: the register-tiled inner loop that GEMM, direct,
// spatial-pack and Winograd convolution and the FC layers all run on.
//
//   C[i][j] = (accumulate ? C[i][j] : bias ? bias[i] : 0) + sum_kk A[i][kk] * B[kk][j]
//   then clamped to [min, max]                                 (i < m <= MR, j < n <= NR)
//
// A is packed: k steps of MR floats, a[kk * MR + i] = A[i][kk] (rows m..MR-1 zero).
// Row kk of B starts at b + b_off[kk]; the kernel reads NR floats of every row
// (all must be readable even when n < NR) and stores only n columns of m rows:
// row i of C at c + i * ldc. An offset table instead of a stride lets direct
// convolution point B rows straight into the (padded) input -- no im2col.
//
// The one list of kernels is f32-gemm/f32_gemm.inc; each ISA's kernels live in
// their own translation unit compiled with that ISA's flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F32GemmFn = void (*)(size_t m, size_t n, size_t k, const float* a, const float* b,
                           const int64_t* b_off, float* c, size_t ldc, const float* bias,
                           bool accumulate, float min, float max);

// Packs rows [0, m) of a row-major matrix A (lda floats per row), columns [0, k), into one
// MR-row panel of the layout above (m <= mr; missing rows zero).
using F32GemmPackFn = void (*)(size_t mr, size_t m, size_t k, const float* a, size_t lda,
                               float* packed);

struct F32GemmUkernel {
  const char* name;  // "f32_gemm_6x16__avx2"
  Isa isa;
  int mr, nr;
  F32GemmFn fn;
  F32GemmPackFn pack;  // the A (weights) panel layout this kernel reads
};

// Every kernel built, in f32_gemm.inc order.
const std::vector<F32GemmUkernel>& f32_gemm_ukernels();
// Kernels runnable on `isa` (that ISA's own first, then lower ones).
std::vector<const F32GemmUkernel*> f32_gemm_ukernels_for(Isa isa);
// The default kernel of `isa`: the first of that ISA in the list.
const F32GemmUkernel& f32_gemm_default(Isa isa);
// The kernel of `isa` (its own ISA's rows, MR > 1) that computes the fewest padded products
// for an m x n output: a last MR-row panel's zero rows cost a whole panel (ViT-B/16's 197
// tokens are 15 panels of 14 rows for 14.07 of work, 33 of 6 for 32.8; its Linear layers ran
// 0.93x their time on 6x64, AMD EPYC Zen 5, 2 threads). Only kernels with at least three
// quarters of the default's accumulators compete (fewer hide the FMA latency worse); ties
// keep the default.
const F32GemmUkernel& f32_gemm_for_output(Isa isa, int64_t m, int64_t n);
// By name; nullptr when unknown.
const F32GemmUkernel* find_f32_gemm(const char* name);

// The MR-panel packing of every f32 GEMM row (an F32GemmPackFn).
void pack_a_panel(size_t mr, size_t m, size_t k, const float* a, size_t lda, float* packed);

}  // namespace dlas::ukernel

// Declarations of every f32 GEMM microkernel, derived from f32_gemm.inc.
namespace dlas::ukernel {
#define X(fn, isa, mr, nr)                                                                    \
  void fn(size_t m, size_t n, size_t k, const float* a, const float* b, const int64_t* b_off, \
          float* c, size_t ldc, const float* bias, bool accumulate, float min, float max);
#include "algo/microkernels/f32-gemm/f32_gemm.inc"
#undef X
}  // namespace dlas::ukernel
