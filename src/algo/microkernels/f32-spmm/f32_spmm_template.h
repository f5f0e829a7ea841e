// The f32 SpMM kernel body (contract: src/algo/microkernels/f32_spmm.h), written once over
// a GCC vector-extension type of L floats (plain float for L = 1). Everything is in an
// anonymous namespace: each ISA translation unit gets its own copy compiled with its own
// flags, so the linker can never hand the AVX-512 copy to the AVX2 path. Only std-free
// code (no std::min/max on floats: out-of-line copies would be ODR-merged across TUs).
// Include only from f32_spmm_*__<isa>.cc files (and the test-only 16-lane AVX2 TU).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlas::ukernel {
namespace {

template <int L>
struct SpmmVec {
  typedef float type __attribute__((vector_size(4 * L)));
};
template <>
struct SpmmVec<1> {
  typedef float type;
};

template <class V>
inline V spmm_load(const char* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <class V>
inline void spmm_store(float* p, V v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// Broadcast as an initializer list (a per-lane loop becomes a vinsertps chain).
template <int L>
inline typename SpmmVec<L>::type spmm_splat(float s) {
  if constexpr (L == 1) {
    return s;
  } else if constexpr (L == 4) {
    return typename SpmmVec<4>::type{s, s, s, s};
  } else if constexpr (L == 8) {
    return typename SpmmVec<8>::type{s, s, s, s, s, s, s, s};
  } else {
    static_assert(L == 16);
    return typename SpmmVec<16>::type{s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
  }
}

// One pixel tile (NV vectors of L floats) x every block row. Register budget per block:
// BR*NV accumulators + NV input vectors + 1 weight broadcast (the .inc picks NV per ISA
// so this fits: 16 ymm on AVX2, 32 zmm on AVX-512). A BRx1 block loads each input vector
// once for BR FMAs, which is what lifts the sparse kernel off the load ports.
template <int L, int NV, int BR, int BC>
inline void spmm_tile(size_t rows, const char* in, size_t in_stride, const float* w,
                      const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride,
                      float min, float max) {
  typedef typename SpmmVec<L>::type V;
  const V vmin = spmm_splat<L>(min), vmax = spmm_splat<L>(max);
  const size_t nblocks = (rows + BR - 1) / BR;
  for (size_t b = 0; b < nblocks; ++b) {
    V acc[BR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < BR; ++i) {
      const V bias = spmm_splat<L>(w[i]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = bias;
    }
    w += BR;
    const char* ip = in;
    for (uint32_t z = nnz[b]; z != 0; --z) {
      ip += *dmap++;
#pragma GCC unroll 16
      for (int c = 0; c < BC; ++c) {
        V x[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j)
          x[j] = spmm_load<V>(ip + c * in_stride + j * L * sizeof(float));
#pragma GCC unroll 16
        for (int i = 0; i < BR; ++i) {
          const V wv = spmm_splat<L>(w[c * BR + i]);
#pragma GCC unroll 16
          for (int j = 0; j < NV; ++j) acc[i][j] += wv * x[j];
        }
      }
      w += BR * BC;
    }
    const size_t left = rows - b * BR, valid = left < BR ? left : BR;
#pragma GCC unroll 16
    for (int i = 0; i < BR; ++i) {
      if (static_cast<size_t>(i) >= valid) break;
      float* o = out + (b * BR + i) * out_stride;
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        V v = acc[i][j];
        v = v < vmin ? vmin : v;  // NaN passes through, as in the scalar epilogue
        v = v > vmax ? vmax : v;
        spmm_store(o + j * L, v);
      }
    }
  }
}

// Pixel tails: tiles of NV vectors of LT lanes while they fit, then NV/2 ... 1 vectors,
// then LT/2 ... 4 lanes, then single pixels (a 16-pixel plane is one 2-vector tile).
template <int LT, int NV, int BR, int BC>
inline void spmm_tail(size_t& p, size_t pixels, size_t rows, const float* in, size_t in_stride,
                      const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                      size_t out_stride, float min, float max) {
  constexpr size_t kMr = static_cast<size_t>(NV * LT);
  for (; p + kMr <= pixels; p += kMr)
    spmm_tile<LT, NV, BR, BC>(rows, reinterpret_cast<const char*>(in + p), in_stride, w, dmap, nnz,
                              out + p, out_stride, min, max);
  if (p == pixels) return;
  if constexpr (NV > 1) {
    spmm_tail<LT, NV / 2, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride,
                                  min, max);
  } else if constexpr (LT > 4) {
    spmm_tail<LT / 2, 1, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min,
                                 max);
  } else if constexpr (LT > 1) {
    spmm_tail<1, 1, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min,
                            max);
  }
}

template <int L, int NV, int BR, int BC>
inline void f32_spmm_vec(size_t pixels, size_t rows, const float* in, size_t in_stride,
                         const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                         size_t out_stride, float min, float max) {
  size_t p = 0;
  spmm_tail<L, NV, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min, max);
}

}  // namespace
}  // namespace dlas::ukernel
