// Portable int8 GEMM microkernel (u8 x s8 quads), the oracle the vector kernels are
// compared with; the same requantization code as the vector kernels' column tail.
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"

namespace dlas::ukernel {

void qs8_gemm_4x4__scalar(size_t m, size_t n, size_t kq, const void* a_, const void* b_, void* c,
                          size_t ldc, const QS8GemmParams& p) {
  constexpr int kMr = 4, kNr = 4;
  const int8_t* a = static_cast<const int8_t*>(a_);
  const uint8_t* b = static_cast<const uint8_t*>(b_);
  int32_t acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i)
    for (int j = 0; j < kNr; ++j) acc[i][j] = static_cast<size_t>(i) < m ? p.init[i] : 0;
  for (size_t q = 0; q < kq; ++q) {
    for (int i = 0; i < kMr; ++i)
      for (int j = 0; j < kNr; ++j)
        for (int e = 0; e < 4; ++e)
          acc[i][j] += static_cast<int32_t>(a[i * 4 + e]) * static_cast<int32_t>(b[j * 4 + e]);
    a += kMr * 4;
    b += kNr * 4;
  }
  const uint8_t* rb = static_cast<const uint8_t*>(p.residual);
  for (size_t i = 0; i < m; ++i) {
    const uint8_t* rrow = rb ? rb + i * ldc : nullptr;
    uint8_t* crow = static_cast<uint8_t*>(c) + i * ldc;
    for (size_t j = 0; j < n; ++j)
      crow[j] = qs8_requant1(acc[i][j], p.mult[i], rrow ? qs8_residual1(p, rrow, j) : 0.f, p);
  }
}

}  // namespace dlas::ukernel
