// The tiled fp32 GEMM main loop the CUDA convs share (device code): the implicit-GEMM conv
// (gemm_conv.cu) and Winograd's batched GEMMs (winograd_conv.cu).
//
// One block of 256 threads computes a BM x BN tile of C = A B over the whole reduction:
//   - A comes pre-packed (at prepare) transposed, At[kk][m] with row stride lda, and
//     zero-padded to whole tiles in both directions, so its loads need no bounds checks;
//     the caller passes At's address at row 0, column m0 of its tile;
//   - B is read element by element through the caller's functor fetch(kk) -> B[kk][col],
//     col being this thread's fixed B column (n0 + tid % BN): the functor does the gather
//     and every bounds check, returning 0 outside B;
//   - both are staged BK rows at a time in double-buffered shared memory, the next slice
//     prefetched into registers while the current one is multiplied, one barrier a slice;
//   - thread (tx, ty) = (tid % 16, tid / 16) accumulates rows ty + 16 i (i < BM / 16) and
//     columns tx + 16 j (j < BN / 16) in registers: the strided assignment keeps the
//     shared-memory reads conflict-free (B) or broadcast (A) and the caller's stores
//     coalesced along the columns.
#pragma once

#include <cstdint>

namespace dlas::cuda::detail {

template <int BM, int BN, int BK>
struct SgemmTile {
  static constexpr int kThreads = 256;
  static constexpr int kTM = BM / 16;  // accumulator rows per thread
  static constexpr int kTN = BN / 16;  // accumulator columns per thread
  static constexpr int kALoads = BM * BK / kThreads;
  static constexpr int kBLoads = BN * BK / kThreads;
  static constexpr int kAStep = kThreads / BM;  // A rows one load pass covers
  static constexpr int kBStep = kThreads / BN;
  static_assert(BM % 16 == 0 && BN % 16 == 0 && BM <= kThreads && BN <= kThreads);
  static_assert(kThreads % BM == 0 && kThreads % BN == 0);
  static_assert(kALoads >= 1 && kBLoads >= 1);
};

// acc += At[0 .. kdim_padded)[m0 ..] * B over kdim_padded (a multiple of BK) reduction rows.
template <int BM, int BN, int BK, class Fetch>
__device__ __forceinline__ void sgemm_mainloop(const float* __restrict__ at, int64_t lda,
                                               int kdim_padded, const Fetch& fetch,
                                               float (&acc)[BM / 16][BN / 16]) {
  using T = SgemmTile<BM, BN, BK>;
  __shared__ float as[2][BK][BM];
  __shared__ float bs[2][BK][BN];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int a_m = tid % BM, a_k = tid / BM;
  const int b_n = tid % BN, b_k = tid / BN;
  float ra[T::kALoads], rb[T::kBLoads];

  auto load = [&](int k0) {
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l)
      ra[l] = __ldg(at + static_cast<int64_t>(k0 + a_k + l * T::kAStep) * lda + a_m);
#pragma unroll
    for (int l = 0; l < T::kBLoads; ++l) rb[l] = fetch(k0 + b_k + l * T::kBStep);
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int l = 0; l < T::kALoads; ++l) as[buf][a_k + l * T::kAStep][a_m] = ra[l];
#pragma unroll
    for (int l = 0; l < T::kBLoads; ++l) bs[buf][b_k + l * T::kBStep][b_n] = rb[l];
  };

  const int slices = kdim_padded / BK;
  load(0);
  store(0);
  __syncthreads();
  for (int s = 0; s < slices; ++s) {
    const int buf = s & 1;
    const bool more = s + 1 < slices;
    if (more) load((s + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[T::kTM], b[T::kTN];
#pragma unroll
      for (int i = 0; i < T::kTM; ++i) a[i] = as[buf][kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < T::kTN; ++j) b[j] = bs[buf][kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < T::kTM; ++i)
#pragma unroll
        for (int j = 0; j < T::kTN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // The other buffer was last read in slice s - 1, which every thread finished before
    // the barrier that ended it.
    if (more) store(buf ^ 1);
    __syncthreads();
  }
}

// The GEMM tiles the `bm` / `bn` / `bk` knobs choose among (thread tile bm/16 x bn/16).
inline constexpr int kTileSizes[] = {32, 64, 128};
inline constexpr int kTileDepths[] = {8, 16};

// X(BM, BN, BK) for every tile the knobs can choose: the instantiation list.
#define DLAS_CUDA_FOR_EACH_SGEMM_TILE(X)                                                           \
  X(32, 32, 8)                                                                                     \
  X(32, 32, 16)                                                                                    \
  X(32, 64, 8)                                                                                     \
  X(32, 64, 16) X(32, 128, 8) X(32, 128, 16) X(64, 32, 8) X(64, 32, 16) X(64, 64, 8) X(64, 64, 16) \
      X(64, 128, 8) X(64, 128, 16) X(128, 32, 8) X(128, 32, 16) X(128, 64, 8) X(128, 64, 16)       \
          X(128, 128, 8) X(128, 128, 16)

}  // namespace dlas::cuda::detail
