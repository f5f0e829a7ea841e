// `sparse-gemm` convolution: im2col into [R][nc] pixel blocks, then the f32-spmm
// microkernels multiply the CSR/BSR-encoded weights W[Kg][R] into the block's output
// columns (vectors along pixels, so the result lands in NCHW directly). Any conv shape.
//
// Knobs:
//   format    weight format (auto | csr | bsr4x1 | bsr8x1 | bsr1x4), see sparse_conv_common.h
//   vecs      pixel vectors per microkernel tile
//   nc        pixels per im2col block (its R x nc floats should sit in L2)
//   parallel  0: threads take whole pixel blocks (each im2cols its own);
//             1: one shared block at a time, threads split output channels (by nonzeros);
//             2: one shared block at a time, threads split its pixel tiles
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/gemm_common.h"
#include "algo/conv/sparse_conv_common.h"
#include "dlas/core/error.h"

namespace dlas {
namespace {

constexpr int64_t kBlockPixels[] = {32, 64, 128, 256, 512, 1024};

class SparseGemmConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "sparse-gemm"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::sparse_format_knob());
    s.knobs.push_back(conv_detail::sparse_vecs_knob());
    s.knobs.push_back({"nc", std::vector<int64_t>(std::begin(kBlockPixels), std::end(kBlockPixels)),
                       "pixels per im2col block"});
    s.knobs.push_back({"parallel",
                       {0, 1, 2},
                       "0: threads take whole pixel blocks; 1: output channels of a shared "
                       "block; 2: pixel tiles of a shared block"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa) const override {
    // The largest block whose R x nc floats fit 256 KiB (half of Zen3's / Skylake-X's L2),
    // so each 32-pixel tile's rows come from L2 at worst.
    const int64_t r = p.c_per_group() * p.kh * p.kw;
    int64_t nc = kBlockPixels[0];
    for (int64_t v : kBlockPixels)
      if (r * v * 4 <= 256 * 1024) nc = v;
    const int64_t ohw = p.oh() * p.ow();
    const int64_t blocks = p.n * p.groups * conv_detail::div_up(ohw, nc);
    const int64_t parallel = blocks >= 4 ? 0 : ohw >= 256 ? 2 : 1;
    return {{"format", 0}, {"vecs", 8}, {"nc", nc}, {"parallel", parallel}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "sparse-gemm conv " + p.key());
    conv_detail::SparseConvConfig c;
    c.format = knobs.at("format");
    c.vecs = knobs.at("vecs");
    c.nc = knobs.at("nc");
    const int64_t par = knobs.at("parallel");
    c.split = par == 0   ? conv_detail::SparseSplit::kBlocks
              : par == 1 ? conv_detail::SparseSplit::kChannels
                         : conv_detail::SparseSplit::kPixels;
    c.direct = false;
    return conv_detail::prepare_sparse_conv(p, weights, bias, c, isa);
  }
};

}  // namespace

const ConvAlgorithm& sparse_gemm_conv_algorithm() {
  static const SparseGemmConvAlgorithm algo;
  return algo;
}

}  // namespace dlas
