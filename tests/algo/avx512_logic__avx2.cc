// Test-only: the 16-lane (AVX-512) kernel templates compiled with AVX2 flags.
// CMake gives tests/*__avx2.cc the AVX2 flags (dlas_isa_flags); nothing here is
// part of the library.
#include "algo/avx512_logic.h"

// 64-byte vectors returned by inline helpers without AVX-512: GCC warns that such a
// function's ABI differs; every helper here has internal linkage and is inlined.
#pragma GCC diagnostic ignored "-Wpsabi"

#include "algo/microkernels/f32-gemm/f32_gemm_template.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue_template.h"

namespace dlas::test {
namespace {

template <int MR, int NR>
void gemm_16_lanes(size_t m, size_t n, size_t k, const float* a, const float* b,
                   const int64_t* b_off, float* c, size_t ldc, const float* bias, bool accumulate,
                   float min, float max) {
  // Only the kAvx512 entries are used; the others (NR not a multiple of 16) get an empty body.
  if constexpr (NR % 16 == 0)
    f32_gemm_vec<MR, NR / 16, 16>(m, n, k, a, b, b_off, c, ldc, bias, accumulate, min, max);
}

void vepilogue_16_lanes(size_t n, float* y, float bias, const float* residual, Activation act,
                        float p0, float p1) {
  f32_vepilogue_vec<16>(n, y, bias, residual, act, p0, p1);
}

}  // namespace

const std::vector<ukernel::F32GemmUkernel>& avx512_logic_gemm_ukernels() {
  static const std::vector<ukernel::F32GemmUkernel> table = [] {
    std::vector<ukernel::F32GemmUkernel> t;
#define X(fn, isa, mr, nr)      \
  if (Isa::isa == Isa::kAvx512) \
    t.push_back({#fn, Isa::kAvx2, mr, nr, &gemm_16_lanes<mr, nr>, &ukernel::pack_a_panel});
#include "algo/microkernels/f32-gemm/f32_gemm.inc"
#undef X
    return t;
  }();
  return table;
}

ukernel::F32VEpilogueFn avx512_logic_vepilogue() { return &vepilogue_16_lanes; }

}  // namespace dlas::test
