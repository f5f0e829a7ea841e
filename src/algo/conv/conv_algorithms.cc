// The one list of convolution algorithms, and the documented `auto` rule.
#include <string>

#include "algo/conv/sparse_conv_common.h"
#include "dlas/algo/conv.h"
#include "dlas/core/error.h"

namespace dlas {

// Each algorithm's translation unit defines its accessor; conv_algorithms.inc
// is the one list: X(accessor), in --help order.
#define X(accessor) const ConvAlgorithm& accessor();
#include "algo/conv/conv_algorithms.inc"
#include "algo/conv/sparse_conv_algorithms.inc"
#undef X

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> list = {
#define X(accessor) &accessor(),
#include "algo/conv/conv_algorithms.inc"
#undef X
  };
  return list;
}

const std::vector<const ConvAlgorithm*>& sparse_conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> list = {
#define X(accessor) &accessor(),
#include "algo/conv/sparse_conv_algorithms.inc"
#undef X
  };
  return list;
}

const ConvAlgorithm* find_conv_algorithm(std::string_view name) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (a->name() == name) return a;
  for (const ConvAlgorithm* a : sparse_conv_algorithms())
    if (a->name() == name) return a;
  return nullptr;
}

std::string conv_algorithm_names() {
  std::string s;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (!s.empty()) s += '|';
    s += a->name();
  }
  return s;
}

const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p) {
  auto pick = [&](std::string_view name) -> const ConvAlgorithm* {
    const ConvAlgorithm* a = find_conv_algorithm(name);
    return a && a->supports(p) ? a : nullptr;
  };
  const ConvAlgorithm* a = nullptr;
  if (p.is_depthwise()) a = pick("depthwise");
  // Winograd on 3x3 stride-1 layers from 14x14 outputs up; on 7x7..13x13 outputs only
  // when the pixel count leaves gemm's 16-pixel panels partly empty (7x7: 49 pixels).
  // Measured with dlas_bench_conv (README "Choosing an algorithm").
  const int64_t pixels = p.oh() * p.ow();
  const bool wino_size =
      (p.oh() >= 14 && p.ow() >= 14) || (p.oh() >= 7 && p.ow() >= 7 && pixels % 16 != 0);
  if (!a && p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1 &&
      p.c >= 16 && p.k >= 16 && wino_size)
    a = pick("winograd");
  // Stems (<= 4 input channels per group: RGB, grey) run direct: im2col there copies
  // KH*KW values per pixel for a reduction of only C*KH*KW rows, and direct was 1.0-2.6x
  // faster on every zoo stem at 1 and 2 threads (ResNet-50's 7x7: 2.7 vs 5.4 ms).
  if (!a && p.c_per_group() <= 4) a = pick("direct");
  if (!a) a = pick("gemm");
  if (!a)
    for (const ConvAlgorithm* x : conv_algorithms())
      if (x->supports(p)) return *x;
  DLAS_CHECK(a != nullptr, ErrorKind::kUnsupported, "no convolution algorithm supports ", p.key());
  return *a;
}

const ConvAlgorithm& auto_conv_algorithm(const ConvProblem& p, const float* weights) {
  if (weights != nullptr && p.groups == 1 && p.c_per_group() > 4) {
    const int64_t n = p.weight_count();
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; ++i) nonzero += weights[i] != 0.f;
    const double density = static_cast<double>(nonzero) / static_cast<double>(n);
    const bool one_by_one = p.kh == 1 && p.kw == 1;
    const bool plain_1x1 = one_by_one && p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 &&
                           p.pad_l == 0 && p.pad_b == 0 && p.pad_r == 0;
    double max_density;
    if (one_by_one)
      max_density = plain_1x1 ? kSparse1x1MaxDensity : kSparse1x1StridedMaxDensity;
    else
      max_density = auto_conv_algorithm(p).name() == "winograd" ? kSparseDirectVsWinogradMaxDensity
                                                                : kSparseDirectMaxDensity;
    const char* name = density > max_density ? nullptr
                       : one_by_one          ? "sparse-1x1"
                                             : "sparse-direct";
    // Block-pruned weights (8x1 blocks along output channels >= 80% full: bp:8x1) on small
    // planes: sparse-spatial-pack, one weight vector per block and broadcast pixels.
    if (name && !one_by_one && p.oh() * p.ow() <= kSparseSpatialMaxPixels &&
        conv_detail::sparse_block_for(0, p, weights) == SparseBlock{8, 1})
      name = "sparse-spatial-pack";
    if (name) {
      const ConvAlgorithm* a = find_conv_algorithm(name);
      if (a && a->supports(p)) return *a;
    }
  }
  return auto_conv_algorithm(p);
}

}  // namespace dlas
