// The f32 SpMM kernel body (contract: src/algo/microkernels/f32-spmm/f32_spmm.h), written once over
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

// Independent accumulator sets per tile: an FMA has 4 cycles of latency and two issue per
// cycle, so a tile needs >= 8 independent accumulators to keep both FMA pipes busy. Tiles
// with fewer than 8 (small planes: a 4x4 output is 3 vectors of its wide grid; BRx1 blocks
// with one vector) split a row's nonzeros round-robin over U sets, summed at the end.
template <int NV, int BR>
constexpr int spmm_chains() {
  constexpr int acc = NV * BR;
  return acc >= 7 ? 1 : (8 + acc - 1) / acc;
}

// One pixel tile (NV vectors of L floats) x every block row. Register budget per block:
// U*BR*NV accumulators + NV input vectors + 1 weight broadcast (the .inc picks NV per ISA
// so this fits: 16 ymm on AVX2, 32 zmm on AVX-512). A BRx1 block loads each input vector
// once for BR FMAs, which is what lifts the sparse kernel off the load ports.
// The tile may be 2-D: RH pixel rows of NVR vectors (NV = RH * NVR), row h of the input
// at in + h * in_row bytes and of the output at out + h * out_row floats -- output rows of
// a conv written straight into NCHW.
template <int L, int NVR, int RH, int BR, int BC>
inline void spmm_tile2d(size_t rows, const char* in, size_t in_stride, size_t in_row,
                        const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                        size_t out_stride, size_t out_row, float min, float max, bool accumulate) {
  constexpr int NV = NVR * RH;
  typedef typename SpmmVec<L>::type V;
  constexpr int U = spmm_chains<NV, BR>();
  const V vmin = spmm_splat<L>(min), vmax = spmm_splat<L>(max);
  const size_t nblocks = (rows + BR - 1) / BR;
  for (size_t b = 0; b < nblocks; ++b) {
    V acc[U][BR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < BR; ++i) {
      const V bias = spmm_splat<L>(w[i]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        acc[0][i][j] = bias;
#pragma GCC unroll 8
        for (int u = 1; u < U; ++u) acc[u][i][j] = V{};
      }
    }
    w += BR;
    if (accumulate) {  // continue the sums an earlier reduction chunk stored
      const size_t left = rows - b * BR, valid = left < BR ? left : BR;
#pragma GCC unroll 16
      for (int i = 0; i < BR; ++i) {
        if (static_cast<size_t>(i) >= valid) break;
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j)
          acc[0][i][j] += spmm_load<V>(reinterpret_cast<const char*>(
              out + (b * BR + i) * out_stride + (j / NVR) * out_row + (j % NVR) * L));
      }
    }
    const char* ip = in;
    // One stored block into accumulator set u.
    auto block = [&](int u) __attribute__((always_inline)) {
      ip += *dmap++;
#pragma GCC unroll 16
      for (int c = 0; c < BC; ++c) {
        V x[NV];
#pragma GCC unroll 16
        for (int j = 0; j < NV; ++j)
          x[j] =
              spmm_load<V>(ip + c * in_stride + (j / NVR) * in_row + (j % NVR) * L * sizeof(float));
#pragma GCC unroll 16
        for (int i = 0; i < BR; ++i) {
          const V wv = spmm_splat<L>(w[c * BR + i]);
#pragma GCC unroll 16
          for (int j = 0; j < NV; ++j) acc[u][i][j] += wv * x[j];
        }
      }
      w += BR * BC;
    };
    uint32_t z = nnz[b];
    if constexpr (U > 1) {
      for (; z >= U; z -= U) {
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) block(u);
      }
    }
    for (; z != 0; --z) block(0);
    const size_t left = rows - b * BR, valid = left < BR ? left : BR;
#pragma GCC unroll 16
    for (int i = 0; i < BR; ++i) {
      if (static_cast<size_t>(i) >= valid) break;
      float* o = out + (b * BR + i) * out_stride;
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) {
        V v = acc[0][i][j];
#pragma GCC unroll 8
        for (int u = 1; u < U; ++u) v += acc[u][i][j];
        v = v < vmin ? vmin : v;  // NaN passes through, as in the scalar epilogue
        v = v > vmax ? vmax : v;
        spmm_store(o + (j / NVR) * out_row + (j % NVR) * L, v);
      }
    }
  }
}

template <int L, int NV, int BR, int BC>
inline void spmm_tile(size_t rows, const char* in, size_t in_stride, const float* w,
                      const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride,
                      float min, float max, bool accumulate) {
  spmm_tile2d<L, NV, 1, BR, BC>(rows, in, in_stride, 0, w, dmap, nnz, out, out_stride, 0, min, max,
                                accumulate);
}

// The tile of exactly `n` (< N + 1) vectors: one pass over the weights for a remainder of
// n vectors (a 24-pixel grid is one 3-vector tile, not 16 + 8 pixels in two passes).
template <int L, int N, int BR, int BC>
inline void spmm_rest(size_t n, size_t& p, size_t rows, const float* in, size_t in_stride,
                      const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                      size_t out_stride, float min, float max, bool accumulate) {
  if (n == N) {
    spmm_tile<L, N, BR, BC>(rows, reinterpret_cast<const char*>(in + p), in_stride, w, dmap, nnz,
                            out + p, out_stride, min, max, accumulate);
    p += static_cast<size_t>(N * L);
  } else if constexpr (N > 1) {
    spmm_rest<L, N - 1, BR, BC>(n, p, rows, in, in_stride, w, dmap, nnz, out, out_stride, min, max,
                                accumulate);
  }
}

// Tiles of NV vectors of LT lanes while they fit, then one tile of the remaining whole
// vectors; then one LT/2 ... 4-lane vector, then single pixels.
template <int LT, int NV, int BR, int BC>
inline void spmm_tail(size_t& p, size_t pixels, size_t rows, const float* in, size_t in_stride,
                      const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                      size_t out_stride, float min, float max, bool accumulate) {
  constexpr size_t kMr = static_cast<size_t>(NV * LT);
  for (; p + kMr <= pixels; p += kMr)
    spmm_tile<LT, NV, BR, BC>(rows, reinterpret_cast<const char*>(in + p), in_stride, w, dmap, nnz,
                              out + p, out_stride, min, max, accumulate);
  if constexpr (NV > 1) {
    const size_t n = (pixels - p) / LT;
    if (n != 0)
      spmm_rest<LT, NV - 1, BR, BC>(n, p, rows, in, in_stride, w, dmap, nnz, out, out_stride, min,
                                    max, accumulate);
  }
  if (p == pixels) return;
  if constexpr (LT > 4) {
    spmm_tail<LT / 2, 1, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min,
                                 max, accumulate);
  } else if constexpr (LT > 1) {
    spmm_tail<1, 1, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min, max,
                            accumulate);
  }
}

template <int L, int NV, int BR, int BC>
inline void f32_spmm_vec(size_t pixels, size_t rows, const float* in, size_t in_stride,
                         const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                         size_t out_stride, float min, float max, bool accumulate) {
  size_t p = 0;
  spmm_tail<L, NV, BR, BC>(p, pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, min, max,
                           accumulate);
}

// Tiles of up to RH pixel rows of NVR vectors: whole tiles, then one of the remaining rows.
template <int L, int NVR, int RH, int BR>
inline void spmm_rows_tiles(size_t out_rows, size_t rows, const char* in, size_t in_row,
                            const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                            size_t out_row, size_t out_stride, float min, float max,
                            bool accumulate) {
  size_t y = 0;
  for (; y + RH <= out_rows; y += RH)
    spmm_tile2d<L, NVR, RH, BR, 1>(rows, in + y * in_row, 0, in_row, w, dmap, nnz,
                                   out + y * out_row, out_stride, out_row, min, max, accumulate);
  if constexpr (RH > 1) {
    if (y < out_rows)
      spmm_rows_tiles<L, NVR, RH - 1, BR>(out_rows - y, rows, in + y * in_row, in_row, w, dmap, nnz,
                                          out + y * out_row, out_row, out_stride, min, max,
                                          accumulate);
  }
}

// out_rows pixel rows of nvr whole vectors each (contract: F32SpmmRowsFn): 2-D tiles of NV
// vectors when nvr is 1, 2 or 4 and divides NV, else row by row. BC = 1 only.
template <int L, int NV, int BR>
inline void f32_spmm_rows(size_t out_rows, size_t nvr, size_t rows, const float* in, size_t in_row,
                          const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,
                          size_t out_row, size_t out_stride, float min, float max,
                          bool accumulate) {
  const char* ib = reinterpret_cast<const char*>(in);
  if constexpr (NV % 4 == 0 && NV >= 8) {
    if (nvr == 4) {
      spmm_rows_tiles<L, 4, NV / 4, BR>(out_rows, rows, ib, in_row, w, dmap, nnz, out, out_row,
                                        out_stride, min, max, accumulate);
      return;
    }
  }
  if constexpr (NV % 2 == 0) {
    if (nvr == 2) {
      spmm_rows_tiles<L, 2, NV / 2, BR>(out_rows, rows, ib, in_row, w, dmap, nnz, out, out_row,
                                        out_stride, min, max, accumulate);
      return;
    }
  }
  if (nvr == 1) {
    spmm_rows_tiles<L, 1, NV, BR>(out_rows, rows, ib, in_row, w, dmap, nnz, out, out_row,
                                  out_stride, min, max, accumulate);
    return;
  }
  for (size_t y = 0; y < out_rows; ++y)
    f32_spmm_vec<L, NV, BR, 1>(nvr * L, rows, reinterpret_cast<const float*>(ib + y * in_row), 0, w,
                               dmap, nnz, out + y * out_row, out_stride, min, max, accumulate);
}

}  // namespace

// The rows of f32_spmm.inc are defined by the translation unit of their ISA. Each TU
// redefines its own DLAS_F32_SPMM_<isa> as DLAS_F32_SPMM_DEFINE and expands the list with
// X = DLAS_F32_SPMM_ROW; the other ISAs' rows expand to nothing.
#define DLAS_F32_SPMM_DEFINE(fn, lanes, nv, br, bc)                                             \
  void fn(size_t pixels, size_t rows, const float* in, size_t in_stride, const float* w,        \
          const int32_t* dmap, const uint32_t* nnz, float* out, size_t out_stride, float min,   \
          float max, bool accumulate) {                                                         \
    f32_spmm_vec<lanes, nv, br, bc>(pixels, rows, in, in_stride, w, dmap, nnz, out, out_stride, \
                                    min, max, accumulate);                                      \
  }                                                                                             \
  void fn##_rows(size_t out_rows, size_t nvr, size_t rows, const float* in, size_t in_row,      \
                 const float* w, const int32_t* dmap, const uint32_t* nnz, float* out,          \
                 size_t out_row, size_t out_stride, float min, float max, bool accumulate) {    \
    f32_spmm_rows<lanes, nv, br>(out_rows, nvr, rows, in, in_row, w, dmap, nnz, out, out_row,   \
                                 out_stride, min, max, accumulate);                             \
  }
#define DLAS_F32_SPMM_kScalar(fn, lanes, nv, br, bc)
#define DLAS_F32_SPMM_kAvx2(fn, lanes, nv, br, bc)
#define DLAS_F32_SPMM_kAvx512(fn, lanes, nv, br, bc)
#define DLAS_F32_SPMM_ROW(fn, isa, lanes, nv, br, bc) DLAS_F32_SPMM_##isa(fn, lanes, nv, br, bc)

}  // namespace dlas::ukernel
