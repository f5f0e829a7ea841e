// Test-only: see qs8_logic.h. The models are written from the instruction definitions:
//   vpdpbusd  lane += sum_{e<4} u8(b[4l+e]) * s8(a[4l+e])           (int32, wraps, no saturation)
//   vpmaddwd  lane  = s16(b[2l]) * s16(a[2l]) + s16(b[2l+1]) * s16(a[2l+1])  (wraps), then vpaddd
//   vfmadd    per lane fmaf (one rounding)
//   tdpbsud   C[i][j] += sum_{k<16, e<4} s8(A[i][4k+e]) * u8(B[k][4j+e])   (int32, wraps)
#include "algo/qs8_logic.h"

#pragma GCC diagnostic ignored "-Wpsabi"

#include <cstring>

#include "algo/microkernels/qs8-dwchan/qs8_dwchan_template.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv_template.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_amx.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm_template.h"
#include "algo/microkernels/qs8-spack/qs8_spack_template.h"

namespace dlas::test {
namespace {

template <int L>
struct EmuFma {
  typedef typename QVec<L>::f32 F;
  static F fma(F a, F b, F c) {
    F out;
    for (int l = 0; l < L; ++l) out[l] = __builtin_fmaf(a[l], b[l], c[l]);
    return out;
  }
};

template <int L>
struct EmuDpbusd : EmuFma<L> {
  static constexpr int kLanes = L;
  typedef typename QVec<L>::i32 I;
  static I dot(I acc, I b, I a) {
    uint8_t bb[4 * L];
    int8_t ab[4 * L];
    std::memcpy(bb, &b, sizeof(bb));
    std::memcpy(ab, &a, sizeof(ab));
    I out;
    for (int l = 0; l < L; ++l) {
      uint32_t s = static_cast<uint32_t>(acc[l]);
      for (int e = 0; e < 4; ++e)
        s += static_cast<uint32_t>(static_cast<int32_t>(bb[4 * l + e]) * ab[4 * l + e]);
      out[l] = static_cast<int32_t>(s);
    }
    return out;
  }
};

template <int L>
struct EmuPmaddwd : EmuFma<L> {
  static constexpr int kLanes = L;
  typedef typename QVec<L>::i32 I;
  static I dot(I acc, I b, I a) {
    int16_t bw[2 * L], aw[2 * L];
    std::memcpy(bw, &b, sizeof(bw));
    std::memcpy(aw, &a, sizeof(aw));
    I out;
    for (int l = 0; l < L; ++l) {
      const uint32_t madd = static_cast<uint32_t>(bw[2 * l] * aw[2 * l]) +
                            static_cast<uint32_t>(bw[2 * l + 1] * aw[2 * l + 1]);
      out[l] = static_cast<int32_t>(static_cast<uint32_t>(acc[l]) + madd);
    }
    return out;
  }
};

// The 8 tile registers of one thread: 16 rows x 64 bytes each.
struct EmuTiles {
  static inline thread_local uint8_t tile[8][16][64];
  static void configure() {}
  template <int T>
  static void zero() {
    std::memset(tile[T], 0, sizeof(tile[T]));
  }
  template <int T>
  static void load(const void* p, size_t stride) {
    for (int r = 0; r < 16; ++r)
      std::memcpy(tile[T][r], static_cast<const uint8_t*>(p) + r * stride, 64);
  }
  template <int T>
  static void store(void* p, size_t stride) {
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * stride, tile[T][r], 64);
  }
  template <int C, int A, int B>
  static void dp() {
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        int32_t c;
        std::memcpy(&c, &tile[C][i][4 * j], 4);
        uint32_t s = static_cast<uint32_t>(c);
        for (int k = 0; k < 16; ++k)
          for (int e = 0; e < 4; ++e)
            s += static_cast<uint32_t>(static_cast<int8_t>(tile[A][i][4 * k + e]) *
                                       static_cast<int32_t>(tile[B][k][4 * j + e]));
        c = static_cast<int32_t>(s);
        std::memcpy(&tile[C][i][4 * j], &c, 4);
      }
  }
};

template <Isa kIsa, int MR, int NR, int KR, int KB>
void emulated(size_t m, size_t n, size_t kq, const void* a, const void* b, void* c, size_t ldc,
              const ukernel::QS8GemmParams& p) {
  if constexpr (kIsa <= Isa::kAvx2) {
    // Not listed (this machine runs the real kernels of these paths).
  } else if constexpr (KB == 16) {
    qs8_gemm_amx_32x32<EmuTiles, EmuPmaddwd<16>>(m, n, kq, a, b, c, ldc, p);
  } else {
    constexpr int L = kIsa >= Isa::kAvx512 ? 16 : 8;
    if constexpr (KR == 4)
      qs8_gemm_vec<EmuDpbusd<L>, MR, NR / L>(m, n, kq, a, b, c, ldc, p);
    else
      qs8_gemm_vec<EmuPmaddwd<L>, MR, NR / L>(m, n, kq, a, b, c, ldc, p);
  }
}

void dwconv_16lane(const ukernel::QS8DwConfig& c, const ukernel::QS8DwTask& t,
                   const ukernel::QS8GemmParams& p) {
  qs8_dwconv_run<EmuPmaddwd<16>, 2>(c, t, p);
}

void dwchan_16lane(const ukernel::QS8DwChanConfig& c, const ukernel::QS8DwChanTask& t,
                   const ukernel::QS8GemmParams& p) {
  qs8_dwchan_run<EmuPmaddwd<16>, 16>(c, t, p);
}

template <class P>
ukernel::QS8SpackFn spack_subset(int nv, int vh, int vw) {
  if (nv == 1 && vh == 1 && vw == 4) return &qs8_spack_vec<P, 1, 1, 4>;
  if (nv == 2 && vh == 2 && vw == 7) return &qs8_spack_vec<P, 2, 2, 7>;
  if (nv == 1 && vh == 4 && vw == 8) return &qs8_spack_vec<P, 1, 4, 8>;
  if (nv == 2 && vh == 1 && vw == 8) return &qs8_spack_vec<P, 2, 1, 8>;
  return nullptr;
}

template <Isa kIsa, int L, int KR>
ukernel::QS8SpackFn emulated_spack(int nv, int vh, int vw) {
  if constexpr (kIsa <= Isa::kAvx2)
    return nullptr;  // not listed
  else if constexpr (KR == 4)
    return spack_subset<EmuDpbusd<L>>(nv, vh, vw);
  else
    return spack_subset<EmuPmaddwd<L>>(nv, vh, vw);
}

}  // namespace

const std::vector<SpackShape>& qs8_logic_spack_shapes() {
  static const std::vector<SpackShape> s = {{1, 1, 4}, {2, 2, 7}, {1, 4, 8}, {2, 1, 8}};
  return s;
}

const std::vector<ukernel::QS8SpackUkernels>& qs8_logic_spack_ukernels() {
  static const std::vector<ukernel::QS8SpackUkernels> table = [] {
    std::vector<ukernel::QS8SpackUkernels> t;
#define X(name, isa, lanes, kr) \
  if (Isa::isa > Isa::kAvx2)    \
    t.push_back({#name, Isa::kAvx2, lanes, kr, &emulated_spack<Isa::isa, lanes, kr>});
#include "algo/microkernels/qs8-spack/qs8_spack.inc"
#undef X
    return t;
  }();
  return table;
}

ukernel::QS8DwFn qs8_logic_dwconv_16lane() { return &dwconv_16lane; }

const ukernel::QS8DwChanUkernel& qs8_logic_dwchan_16lane() {
  static const ukernel::QS8DwChanUkernel uk{"qs8_dwchan_16lane__avx512", Isa::kAvx2, 16, 16,
                                            &dwchan_16lane};
  return uk;
}

const std::vector<ukernel::QS8GemmUkernel>& qs8_logic_gemm_ukernels() {
  static const std::vector<ukernel::QS8GemmUkernel> table = [] {
    std::vector<ukernel::QS8GemmUkernel> t;
#define X(fn, isa, mr, nr, kr, kb)                                                     \
  if (Isa::isa > Isa::kAvx2)                                                           \
    t.push_back({#fn, Isa::kAvx2, mr, nr, kr, kb, &emulated<Isa::isa, mr, nr, kr, kb>, \
                 &ukernel::qs8_gemm_pack_a<kr, kb>});
#include "algo/microkernels/qs8-gemm/qs8_gemm.inc"
#undef X
    return t;
  }();
  return table;
}

}  // namespace dlas::test
