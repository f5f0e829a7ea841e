// `sparse-direct` convolution: no im2col. Each image's input is copied once into
// zero-padded, stride-phase-split planes, so every weight tap (c, ky, kx) is one constant
// offset for all output pixels of a wide OH x QW grid; the f32-spmm microkernels then walk
// the CSR/BSR-encoded taps through their delta map straight over that buffer (the sliding
// window of direct convolution, with only the nonzero taps visited). The QW - OW extra
// columns per output row (padding, stride phases) go to scratch and are dropped when the
// valid columns are copied into NCHW. Where sparse-gemm's im2col writes R = C*KH*KW rows
// per pixel, this writes about C: at 90-95% sparsity im2col would dominate.
//
// Knobs:
//   format    weight format (auto | csr | bsr4x1 | bsr8x1; bsr1x4 falls back to csr: its
//             4 rows would be 4 taps, not one stride apart)
//   vecs      pixel vectors per microkernel tile
//   parallel  0: threads split the wide grid's pixels; 1: output channels (by nonzeros)
//   kc        input channels per reduction chunk (0 auto: a tile's input rows stay in L1
//             while every output channel walks them -- 4x4..8x8 planes of 256-512 channels)
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/sparse_conv_common.h"
#include "dlas/core/error.h"

namespace dlas {
namespace {

class SparseDirectConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "sparse-direct"; }
  bool supports(const ConvProblem&) const override { return true; }

  KnobSpace knob_space(const ConvProblem&, Isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::sparse_format_knob());
    s.knobs.push_back(conv_detail::sparse_vecs_knob());
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split output pixels; 1: output channels"});
    s.knobs.push_back(conv_detail::sparse_chunk_knob());
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa) const override {
    // Output channels (balanced by nonzeros) up to 16x16 outputs: each thread walks every
    // pixel in full tiles, 1.1-1.5x faster at 2 threads and 95% sparsity than splitting the
    // pixels; on 32x32 outputs and up the threads split output rows (58 vs 68 us on
    // resnet18-cifar's layer1: each thread's input and output halves stay in its L2).
    return {{"format", 0}, {"vecs", 8}, {"parallel", p.oh() * p.ow() >= 1024 ? 0 : 1}, {"kc", 0}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    knob_space(p, isa).validate(knobs, "sparse-direct conv " + p.key());
    conv_detail::SparseConvConfig c;
    c.format = knobs.at("format");
    c.vecs = knobs.at("vecs");
    c.split = knobs.at("parallel") == 1 ? conv_detail::SparseSplit::kChannels
                                        : conv_detail::SparseSplit::kPixels;
    c.implicit = true;
    c.kc = knobs.at("kc");
    return conv_detail::prepare_sparse_conv(p, weights, bias, c, isa);
  }
};

}  // namespace

const ConvAlgorithm& sparse_direct_conv_algorithm() {
  static const SparseDirectConvAlgorithm algo;
  return algo;
}

}  // namespace dlas
