#include "algo/h16_native_logic.h"

#include "algo/h16_emulation.h"
#include "algo/microkernels/bf16-gemm/bf16_gemm_amx.h"
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

// The AMX tiles bf16_gemm_amx.h uses, as arrays of 16 rows x 64 bytes: tdpbf16ps per the
// Intel SDM pseudocode, each output element taking the even then the odd product of every
// pair, one f32 rounding each (bf16_dot_step, DAZ / FTZ).
struct AmxBf16Model {
  struct Tile {
    uint8_t row[16][64];
  };
  static Tile* tiles() {
    static thread_local Tile t[8];
    return t;
  }
  static void configure() {}
  template <int T>
  static void zero() {
    std::memset(&tiles()[T], 0, sizeof(Tile));
  }
  template <int T>
  static void load(const void* p, size_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(tiles()[T].row[r], static_cast<const uint8_t*>(p) + r * stride, 64);
  }
  template <int T>
  static void store(void* p, size_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(static_cast<uint8_t*>(p) + r * stride, tiles()[T].row[r], 64);
  }
  template <int C, int A, int B>
  static void dp() {
    Tile& c = tiles()[C];
    const Tile& a = tiles()[A];
    const Tile& b = tiles()[B];
    auto h = [](const uint8_t* row, int e) {
      uint16_t v;
      std::memcpy(&v, row + 2 * e, 2);
      return bf16_daz(v);
    };
    for (int m = 0; m < 16; ++m)
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 16; ++n) {
          float t;
          std::memcpy(&t, c.row[m] + 4 * n, 4);
          t = bf16_dot_step(f32_daz(t), h(a.row[m], 2 * k), h(b.row[k], 2 * n));
          t = bf16_dot_step(t, h(a.row[m], 2 * k + 1), h(b.row[k], 2 * n + 1));
          std::memcpy(c.row[m] + 4 * n, &t, 4);
        }
  }
};

template <int MR, int NR>
void f16_logic(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b, size_t flush,
               float* c, size_t ldc, bool accumulate) {
  f16_gemm_native<MR, NR / 32, F16Model32>(m, n, k, a, b, flush, c, ldc, accumulate);
}
template <int MR, int NR, int KB>
void bf16_logic(size_t m, size_t n, size_t k, const uint16_t* a, const uint16_t* b, size_t flush,
                float* c, size_t ldc, bool accumulate) {
  if constexpr (KB == 32) {
    static_assert(MR == 32 && NR == 32, "the AMX kernel's tile");
    bf16_gemm_amx_32x32<AmxBf16Model, false>(m, n, k, a, b, flush, c, ldc, accumulate);
  } else {
    bf16_gemm_dot<MR, NR / 16, Bf16Model16>(m, n, k, a, b, flush, c, ldc, accumulate);
  }
}

}  // namespace

namespace dlas::test {

const std::vector<ukernel::H16GemmUkernel>& h16_native_logic_ukernels() {
  static const std::vector<ukernel::H16GemmUkernel> table = {
#define X(fn, isa, mr, nr)                                                      \
  {#fn, DType::kF16,        ConvCompute::kNativeFp16,    Isa::kAvx2, mr, nr, 1, \
   1,   &f16_logic<mr, nr>, &ukernel::h16_gemm_pack_a<1>},
#include "algo/microkernels/f16-gemm/f16_gemm.inc"
#undef X
#define X(fn, isa, mr, nr, kb)                                  \
  {#fn,                                                         \
   DType::kBF16,                                                \
   kb == 32 ? ConvCompute::kAmxBf16 : ConvCompute::kNativeBf16, \
   Isa::kAvx2,                                                  \
   mr,                                                          \
   nr,                                                          \
   2,                                                           \
   kb,                                                          \
   &bf16_logic<mr, nr, kb>,                                     \
   &ukernel::h16_gemm_pack_a<kb>},
#include "algo/microkernels/bf16-gemm/bf16_gemm.inc"
#undef X
  };
  return table;
}

}  // namespace dlas::test
