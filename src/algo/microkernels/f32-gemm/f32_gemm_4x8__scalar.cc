// Portable f32 GEMM microkernel: the oracle every vector kernel is tested
// against, and the path for CPUs without AVX2. 4x8 keeps 32 accumulators,
// which compilers keep in registers on x86-64 SSE2.
#include "algo/microkernels/f32-gemm/f32_gemm.h"

namespace dlas::ukernel {

void f32_gemm_4x8__scalar(size_t m, size_t n, size_t k, const float* a, const float* b,
                          const int64_t* b_off, float* c, size_t ldc, const float* bias,
                          bool accumulate, float min, float max) {
  constexpr size_t kMr = 4, kNr = 8;
  float acc[kMr][kNr];
  for (size_t i = 0; i < kMr; ++i) {
    const float init = (!accumulate && bias && i < m) ? bias[i] : 0.f;
    for (size_t j = 0; j < kNr; ++j) acc[i][j] = init;
  }
  for (size_t kk = 0; kk < k; ++kk) {
    const float* brow = b + b_off[kk];
    const float* acol = a + kk * kMr;
    for (size_t i = 0; i < kMr; ++i)
      for (size_t j = 0; j < kNr; ++j) acc[i][j] += acol[i] * brow[j];
  }
  for (size_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    for (size_t j = 0; j < n; ++j) {
      float v = accumulate ? crow[j] + acc[i][j] : acc[i][j];
      v = v < min ? min : v;
      v = v > max ? max : v;
      crow[j] = v;
    }
  }
}

}  // namespace dlas::ukernel
