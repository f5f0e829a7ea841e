// Host-side helpers the CUDA conv algorithms share (src/algo/cuda/*_conv.cu): the shape
// checks every supports() starts from, prepare()'s argument checks, and small integer
// helpers for the default knob rules. No CUDA headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"

namespace dlas::cuda::detail {

inline constexpr int64_t kInt32Max = 2147483647;

// A nominal SM count for the untuned defaults (an H100 has 132): they must not depend on
// the machine, so a default point is the same everywhere.
inline constexpr int64_t kNominalSms = 132;

// True for a consistent shape whose index math fits the kernels: positive sizes, groups
// dividing c and k, non-negative pads, at least one output pixel, and per-image tensors
// (and the batch's pixel count) below 2^31 elements so in-image offsets are 32-bit.
// f32 only: the 16-bit paths check shape_ok_any_storage.
inline bool shape_ok_any_storage(const ConvShape& s);
inline bool shape_ok(const ConvShape& s) {
  return s.storage == Storage::kF32 && shape_ok_any_storage(s);
}
inline bool shape_ok_any_storage(const ConvShape& s) {
  if (s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1 || s.k < 1 || s.kh < 1 || s.kw < 1) return false;
  if (s.stride_h < 1 || s.stride_w < 1 || s.dil_h < 1 || s.dil_w < 1) return false;
  if (s.pad_h < 0 || s.pad_w < 0 || s.oh < 1 || s.ow < 1) return false;
  if (s.groups < 1 || s.c % s.groups != 0 || s.k % s.groups != 0) return false;
  // Sizes bounded first so the products below cannot overflow int64.
  const int64_t lim = kInt32Max;
  if (s.c > lim || s.h > lim || s.w > lim || s.k > lim || s.oh > lim || s.ow > lim || s.n > lim)
    return false;
  if (s.kh * s.kw > lim || s.stride_h > lim || s.stride_w > lim || s.pad_h > lim / 4 ||
      s.pad_w > lim / 4 || s.dil_h * s.kh > lim / 4 || s.dil_w * s.kw > lim / 4)
    return false;
  if (s.h * s.w > lim || s.oh * s.ow > lim) return false;
  if (s.c * (s.h * s.w) > lim || s.k * (s.oh * s.ow) > lim) return false;
  if (s.n * (s.oh * s.ow) > lim / 2 || s.n * (s.h * s.w) > lim) return false;
  // The output's farthest input coordinates stay in int32 too.
  if ((s.oh - 1) * s.stride_h + s.dil_h * (s.kh - 1) > lim / 2) return false;
  if ((s.ow - 1) * s.stride_w + s.dil_w * (s.kw - 1) > lim / 2) return false;
  return true;
}

// prepare()'s checks: kInvalidInput for an inconsistent shape or a knob point outside the
// space, kUnsupported when the algorithm does not support the shape.
inline void check_prepare(const ConvAlgorithm& algo, const ConvShape& s, const Knobs& knobs) {
  DLAS_CHECK(shape_ok_any_storage(s), ErrorKind::kInvalidInput, "cuda ", algo.name,
             " conv: invalid shape ", s.str());
  DLAS_CHECK(algo.supports(s), ErrorKind::kUnsupported, "cuda ", algo.name,
             " conv does not support ", s.str());
  algo.knob_space(s).validate(knobs, std::string("cuda ") + algo.name + " conv " + s.str());
}

// An algorithm's prepare() for a kernel class built from (shape, knobs, weights): the checks
// above, then the kernel. Self: the algorithm's accessor.
template <class Kernel, const ConvAlgorithm& (*Self)()>
std::unique_ptr<ConvKernel> checked_prepare(const ConvShape& s, const Knobs& knobs,
                                            const float* weights) {
  check_prepare(Self(), s, knobs);
  return std::make_unique<Kernel>(s, knobs, weights);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tensor-core implementation of `gemm` for 16-bit layers (WMMA; tc_conv.cu): its row
// dispatches to it at knob tc=1.
bool tc_gemm_supports(const ConvShape& s);
std::unique_ptr<ConvKernel> tc_gemm_prepare(const ConvShape& s, const float* w);
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The largest power of two <= v (v >= 1), capped at `cap`.
inline int64_t pow2_floor(int64_t v, int64_t cap) {
  int64_t p = 1;
  while (p * 2 <= v && p * 2 <= cap) p *= 2;
  return p;
}

// The untuned GEMM tile rule (gemm and winograd, no measurement yet): the largest of 32, 64,
// 128 not above each of the problem's M and N, then halved (the larger side first) until
// there are two blocks per nominal SM or the tile is 32 x 32.
inline void default_gemm_tile(int64_t m, int64_t n, int64_t batches, int64_t& bm, int64_t& bn) {
  bm = m >= 128 ? 128 : m >= 64 ? 64 : 32;
  bn = n >= 128 ? 128 : n >= 64 ? 64 : 32;
  while (ceil_div(m, bm) * ceil_div(n, bn) * batches < 2 * kNominalSms && (bm > 32 || bn > 32)) {
    if (bn >= bm && bn > 32)
      bn /= 2;
    else
      bm /= 2;
  }
}

}  // namespace dlas::cuda::detail
