#include "algo/h16_native_logic.h"

#include "algo/h16_emulation.h"
#include "algo/microkernels/bf16-gemm/bf16_gemm_template.h"
#include "algo/microkernels/f16-gemm/f16_gemm_template.h"

namespace {

// vfmadd231ph on 32 lanes, lane by lane through the exact model.
struct F16Model32 {
  static constexpr int kLanes = 32;
  struct HV {
    uint16_t h[32];
  };
  static HV zero() { return HV{}; }
  static HV load(const uint16_t* p) {
    HV v;
    std::memcpy(v.h, p, sizeof v.h);
    return v;
  }
  static HV splat(uint16_t a) {
    HV v;
    for (uint16_t& x : v.h) x = a;
    return v;
  }
  static HV fma(HV a, HV b, HV c) {
    HV r;
    for (int l = 0; l < 32; ++l) r.h[l] = f16_fma_model(a.h[l], b.h[l], c.h[l]);
    return r;
  }
  static void widen(HV v, float* out) {
    for (int l = 0; l < 32; ++l) out[l] = dlas::f16_to_f32(v.h[l]);
  }
};

// vdpbf16ps on 16 lanes through the exact model.
struct Bf16Model16 {
  static constexpr int kLanes = 16;
  typedef float V __attribute__((vector_size(64)));
  typedef uint32_t PV __attribute__((vector_size(64)));
  static V dot(V acc, PV a, PV b) {
    V r;
    for (int l = 0; l < 16; ++l) r[l] = bf16_dot_model(acc[l], a[l], b[l]);
    return r;
  }
};

template <int MR, int NR>
void f16_logic(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b, size_t flush,
               float* c, size_t ldc, bool accumulate) {
  f16_gemm_native<MR, NR / 32, F16Model32>(m, n, k, a, b, flush, c, ldc, accumulate);
}
template <int MR, int NR>
void bf16_logic(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b, size_t flush,
                float* c, size_t ldc, bool accumulate) {
  bf16_gemm_dot<MR, NR / 16, Bf16Model16>(m, n, k, a, b, flush, c, ldc, accumulate);
}

}  // namespace

namespace dlas::test {

const std::vector<ukernel::H16GemmUkernel>& h16_native_logic_ukernels() {
  static const std::vector<ukernel::H16GemmUkernel> table = {
#define X(fn, isa, mr, nr)                                                   \
  {#fn, DType::kF16,        ConvCompute::kNativeFp16,    Isa::kAvx2, mr, nr, \
   1,   &f16_logic<mr, nr>, &ukernel::h16_gemm_pack_a<1>},
#include "algo/microkernels/f16-gemm/f16_gemm.inc"
#undef X
#define X(fn, isa, mr, nr)                                                    \
  {#fn, DType::kBF16,        ConvCompute::kNativeBf16,    Isa::kAvx2, mr, nr, \
   2,   &bf16_logic<mr, nr>, &ukernel::h16_gemm_pack_a<2>},
#include "algo/microkernels/bf16-gemm/bf16_gemm.inc"
#undef X
  };
  return table;
}

}  // namespace dlas::test
