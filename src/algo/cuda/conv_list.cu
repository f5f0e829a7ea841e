// The list of CUDA conv algorithms (conv_algorithms_cuda.inc) and what reads it: lookup by
// name, the untuned auto rule, ConvShape::str, and the launch check every kernel wrapper
// calls (epilogue.cuh).
#include <cuda_runtime.h>

#include <string>
#include <string_view>
#include <vector>

#include "algo/cuda/epilogue.cuh"
#include "dlas/algo/cuda_conv.h"
#include "dlas/core/error.h"
#include "dlas/hw/gpu.h"

namespace dlas::cuda {

#define X(name, accessor) const ConvAlgorithm& accessor();
#include "algo/cuda/conv_algorithms_cuda.inc"
#undef X

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> list = [] {
    std::vector<const ConvAlgorithm*> l;
#define X(row_name, accessor)                                                                    \
  l.push_back(&accessor());                                                                      \
  DLAS_CHECK(std::string_view(l.back()->name) == row_name, ErrorKind::kInternal,                 \
             "conv_algorithms_cuda.inc: row '", row_name, "' names algorithm '", l.back()->name, \
             "'");
#include "algo/cuda/conv_algorithms_cuda.inc"
#undef X
    return l;
  }();
  return list;
}

const ConvAlgorithm* find_conv_algorithm(std::string_view name) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (name == a->name) return a;
  return nullptr;
}

// Untuned default (no measurement yet): winograd's three kernels and workspace round trip
// pay off only with enough channels on both sides and enough output pixels, so these
// thresholds are a guess to be replaced by a measured rule.
const ConvAlgorithm& auto_conv_algorithm(const ConvShape& s) {
  auto get = [](std::string_view name) -> const ConvAlgorithm& {
    const ConvAlgorithm* a = find_conv_algorithm(name);
    DLAS_CHECK(a, ErrorKind::kInternal, "cuda conv algorithm '", name, "' is not in the list");
    return *a;
  };
  const ConvAlgorithm& depthwise = get("depthwise");
  if (s.depthwise() && depthwise.supports(s)) return depthwise;
  const ConvAlgorithm& sparse = get("sparse");
  if (s.density <= kSparseDensity && sparse.supports(s)) return sparse;
  const ConvAlgorithm& winograd = get("winograd");
  if (s.kh == 3 && s.kw == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dil_h == 1 &&
      s.dil_w == 1 && s.groups == 1 && s.c >= 32 && s.k >= 32 && s.oh * s.ow >= 64 &&
      winograd.supports(s))
    return winograd;
  const ConvAlgorithm& gemm = get("gemm");
  if (gemm.supports(s)) return gemm;
  return get("direct");
}

std::string ConvShape::str() const {
  std::string out = dlas::str("c", c, "x", h, "x", w, " k", k, " ", kh, "x", kw, " s", stride_h);
  if (stride_w != stride_h) out += dlas::str("x", stride_w);
  out += dlas::str(" p", pad_h);
  if (pad_w != pad_h) out += dlas::str("x", pad_w);
  if (dil_h != 1 || dil_w != 1) {
    out += dlas::str(" d", dil_h);
    if (dil_w != dil_h) out += dlas::str("x", dil_w);
  }
  out += dlas::str(" g", groups);
  // The output size only when the trailing pads differ from the leading ones.
  const int64_t sym_oh = stride_h > 0 ? (h + 2 * pad_h - dil_h * (kh - 1) - 1) / stride_h + 1 : 0;
  const int64_t sym_ow = stride_w > 0 ? (w + 2 * pad_w - dil_w * (kw - 1) - 1) / stride_w + 1 : 0;
  if (oh != sym_oh || ow != sym_ow) out += dlas::str(" o", oh, "x", ow);
  if (n != 1) out += dlas::str(" n", n);
  if (storage != Storage::kF32) out += dlas::str(" ", storage_name(storage));
  return out;
}

void check_launch(const char* what) { check_cuda(static_cast<int>(cudaGetLastError()), what); }

}  // namespace dlas::cuda
