// `sparse-spatial-pack` convolution: TVM's spatial pack (see spatial_pack_conv.cc, our dense
// one) with sparse weights. The output is cut into tiles of VH x VW pixels x VC output
// channels held in registers, vector lanes over output channels; the weights are BSR with
// VCx1 blocks along output channels (each stored block = VC output channels x one tap
// (c, ky, kx)), so a block is one vector load and the tile's pixels are broadcasts:
// register-blocked FMAs like the dense spatial pack, visiting only the stored blocks. It is
// the natural kernel for block pruning (bp:8x1, bp:16x1), exact on any weights (blocks with
// zeros inside just carry them). The input goes through sparse-direct's zero-padded,
// stride-phase-split planes (every tap one constant offset, no im2col, no per-tile packing),
// the reduction in chunks of input channels that stay in L1; each finished tile is
// transposed into NCHW with the residual and activation.
//
// Knobs:
//   vc        output channels per block and tile: 0 auto (16 on AVX-512 when 16x1 blocks
//             are >= 80% full, else 8), 8, 16 (a multiple of the kernel's lanes)
//   vh, vw    tile rows and columns (register budget: vh*vw*vc/lanes accumulators)
//   parallel  0: threads split the tiles; 1: block rows (balanced by stored blocks)
//   kc        input channels per reduction chunk (0 auto)
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/sparse_conv_common.h"
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "dlas/core/error.h"

namespace dlas {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class SparseSpatialPackConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "sparse-spatial-pack"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa) const override {
    auto vals = [](const auto& arr) {
      return std::vector<int64_t>(std::begin(arr), std::end(arr));
    };
    KnobSpace s;
    s.knobs.push_back({"vc",
                       {0, 8, 16},
                       "output channels per VCx1 weight block and register tile (0: auto from "
                       "the weights' block fill)"});
    s.knobs.push_back({"vh", vals(ukernel::kSspackVh), "output rows per register tile"});
    s.knobs.push_back({"vw", vals(ukernel::kSspackVw), "output columns per register tile"});
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split the tiles; 1: block rows"});
    s.knobs.push_back(conv_detail::sparse_chunk_knob());
    return s;
  }

  // Register budget (the auto vc is one vector on every ISA): vh*vw accumulators + 1
  // weight vector + 1 broadcast <= 16 (AVX2) or 32 (AVX-512) registers. Among the tiles
  // that fit, the most useful outputs per tile (ragged edges count as waste) wins.
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    const int64_t regs = isa == Isa::kAvx512 ? 32 : 16;
    const int64_t oh = p.oh(), ow = p.ow();
    int64_t best_vh = 1, best_vw = 4;
    double best = -1;
    for (int vh : ukernel::kSspackVh)
      for (int vw : ukernel::kSspackVw) {
        if (vh * vw + 2 > regs) continue;
        const double used = static_cast<double>(oh * ow) /
                            static_cast<double>(ceil_div(oh, vh) * vh * ceil_div(ow, vw) * vw);
        const double score = used * vh * vw;
        if (score > best + 1e-9) best = score, best_vh = vh, best_vw = vw;
      }
    const int64_t tiles = ceil_div(oh, best_vh) * ceil_div(ow, best_vw);
    return {
        {"vc", 0}, {"vh", best_vh}, {"vw", best_vw}, {"parallel", tiles >= 16 ? 0 : 1}, {"kc", 0}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "sparse-spatial-pack conv " + p.key());
    conv_detail::SparseConvConfig c;
    c.spatial = true;
    c.implicit = true;
    c.vc = knobs.at("vc");
    c.vh = knobs.at("vh");
    c.vw = knobs.at("vw");
    c.kc = knobs.at("kc");
    c.split = knobs.at("parallel") == 1 ? conv_detail::SparseSplit::kChannels
                                        : conv_detail::SparseSplit::kPixels;
    return conv_detail::prepare_sparse_conv(p, weights, bias, c, isa);
  }
};

}  // namespace

const ConvAlgorithm& sparse_spatial_pack_conv_algorithm() {
  static const SparseSpatialPackConvAlgorithm algo;
  return algo;
}

}  // namespace dlas
