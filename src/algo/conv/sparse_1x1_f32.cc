// `sparse-1x1` convolution: the 'Fast Sparse ConvNets' design (Elsen et al.; XNNPACK's
// f32-spmm) for 1x1 convs. In NCHW a 1x1 conv is out[K][P] = W[K][C] x in[C][P] with the
// input planes as the dense operand, so stride-1 unpadded layers need no packing at all:
// the SpMM microkernels vectorise along pixels and read input channel c at in + c * H * W.
// Strided or padded 1x1 convs first pack the subsampled input into [C][OH*OW] (split over
// threads by channels).
//
// Knobs:
//   format    weight format (auto | csr | bsr4x1 | bsr8x1 | bsr1x4), see sparse_conv_common.h
//   vecs      pixel vectors per microkernel tile
//   parallel  0: threads split pixel tiles; 1: threads split output channels (balanced by
//             nonzeros: better for small planes, 4x4 and 2x2)
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/conv/sparse_conv_common.h"
#include "dlas/core/error.h"

namespace dlas {
namespace {

class Sparse1x1ConvAlgorithm final : public ConvAlgorithm {
 public:
  std::string_view name() const override { return "sparse-1x1"; }
  bool supports(const ConvProblem& p) const override { return p.kh == 1 && p.kw == 1; }

  KnobSpace knob_space(const ConvProblem&, Isa) const override {
    KnobSpace s;
    s.knobs.push_back(conv_detail::sparse_format_knob());
    s.knobs.push_back(conv_detail::sparse_vecs_knob());
    s.knobs.push_back({"parallel", {0, 1}, "0: threads split pixel tiles; 1: output channels"});
    return s;
  }

  Knobs default_knobs(const ConvProblem& p, Isa) const override {
    // Pixel tiles while each of 2+ threads gets several 32-pixel tiles (16x16 planes up).
    return {{"format", 0}, {"vecs", 8}, {"parallel", p.oh() * p.ow() >= 256 ? 0 : 1}};
  }

  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& view,
                                        const Knobs& knobs, Isa isa) const override {
    const float* weights = view.f32_data();
    const float* bias = view.bias;
    p.validate();
    DLAS_CHECK(supports(p), ErrorKind::kUnsupported, "sparse-1x1 conv: not a 1x1 conv: ", p.key());
    knob_space(p, isa).validate(knobs, "sparse-1x1 conv " + p.key());
    conv_detail::SparseConvConfig c;
    c.format = knobs.at("format");
    c.vecs = knobs.at("vecs");
    c.nc = 0;  // the whole plane
    c.split = knobs.at("parallel") == 1 ? conv_detail::SparseSplit::kChannels
                                        : conv_detail::SparseSplit::kPixels;
    c.direct = p.stride_h == 1 && p.stride_w == 1 && p.pad_t == 0 && p.pad_l == 0 && p.pad_b == 0 &&
               p.pad_r == 0;
    return conv_detail::prepare_sparse_conv(p, weights, bias, c, isa);
  }
};

}  // namespace

const ConvAlgorithm& sparse_1x1_conv_algorithm() {
  static const Sparse1x1ConvAlgorithm algo;
  return algo;
}

}  // namespace dlas
