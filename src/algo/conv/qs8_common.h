// Pieces the int8 conv algorithms share: the folded per-channel terms of the
// requantization (qconv.h), the activation storage shift, and test hooks that run an
// algorithm with an explicitly chosen microkernel (so emulated kernels of ISA paths the
// CPU lacks run through the whole algorithm in tests/algo/).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "algo/microkernels/qs8-dwchan/qs8_dwchan.h"
#include "algo/microkernels/qs8-dwconv/qs8_dwconv.h"
#include "algo/microkernels/qs8-gemm/qs8_gemm.h"
#include "algo/microkernels/qs8-spack/qs8_spack.h"
#include "dlas/algo/qconv.h"

namespace dlas::qconv_detail {

// Every int8 prepared conv computes exactly in integers: on vector units, or on AMX tiles.
class PreparedInt8Conv : public PreparedConv {
 public:
  ConvCompute compute() const override { return ConvCompute::kInt8; }
};

// Activations are stored unsigned inside the kernels: s8 x is stored as x ^ 0x80 =
// x + 128 (u8), so vpdpbusd / tdpbsud / the s16 pairs see 0..255; the zero point moves
// with it. Padding holds this stored zero point (it then contributes nothing).
inline int32_t stored_zero_point(const QuantParams& x) {
  return x.type == DType::kS8 ? x.zero_point + 128 : x.zero_point;
}

// Per output channel k: mult[k] = requant_multiplier(x.scale, w_scale[k], y.scale) and
// init[k] = bias[k] - stored_zero_point(x) * sum(w[k]) (int32 wraparound, like the kernels'
// sums: the final integer equals the oracle's whenever the oracle's does not overflow,
// which ConvProblem::validate guarantees).
struct ChannelTerms {
  std::vector<int32_t> init;
  std::vector<float> mult;
};
ChannelTerms channel_terms(const ConvProblem& p, const int8_t* w, const float* w_scale,
                           const int32_t* bias);

// The microkernel store parameters shared by every call of one problem (init / mult /
// residual filled in per call).
ukernel::QS8GemmParams base_params(const ConvProblem& p);

// `gemm` with the microkernel `uk` instead of the one the "ukernel" knob names (the other
// knobs as usual). For tests.
std::unique_ptr<PreparedConv> prepare_gemm_qconv(const ConvProblem& p, const ConvWeights& w,
                                                 const Knobs& knobs,
                                                 const ukernel::QS8GemmUkernel& uk);

// `depthwise` with the plane kernel `fn` (tests: emulated paths).
std::unique_ptr<PreparedConv> prepare_depthwise_qconv(const ConvProblem& p, const ConvWeights& w,
                                                      const Knobs& knobs, ukernel::QS8DwFn fn);
// `depthwise` with knob lanes=1 on the channels-as-lanes kernel `uk` (tests: emulated paths).
std::unique_ptr<PreparedConv> prepare_depthwise_qconv_chan(const ConvProblem& p,
                                                           const ConvWeights& w,
                                                           const ukernel::QS8DwChanUkernel& uk);

// `spatial-pack` (kTiles: each tile's receptive field packed just before use) and vector
// `direct` (kImage: the padded image packed once) with the kernel set `set` (tests:
// emulated paths). Knobs as the algorithm's.
enum class BlockedMode { kTiles, kImage };
std::unique_ptr<PreparedConv> prepare_blocked_qconv(const ConvProblem& p, const ConvWeights& w,
                                                    const Knobs& knobs,
                                                    const ukernel::QS8SpackUkernels& set,
                                                    BlockedMode mode);

// The vector `direct` (spatial_pack_qs8.cc, kImage): the int8 `direct` on every problem its
// AMX implicit GEMM does not take (direct_qs8.cc).
const ConvAlgorithm& vector_direct_qconv_algorithm();
// The int8 `direct` off AMX (direct_nchwc_qs8.cc): blocked problems on the qs8-nchwc kernels,
// NCHW ones on the vector direct.
const ConvAlgorithm& vector_or_nchwc_direct_qconv_algorithm();
// A blocked int8 problem run as its NCHW twin (the `gemm` conv) between reorders of the input,
// residual and output: the blocked algorithms on paths without their kernels.
std::unique_ptr<PreparedConv> prepare_int8_via_nchw(const ConvProblem& p, const ConvWeights& w,
                                                    Isa isa);
// Whether the int8 `direct` conv runs its AMX implicit GEMM for p on path isa
// (direct_qs8.cc): stride <= 2, no dilation, one group, C >= 16.
bool amx_direct_applies(const ConvProblem& p, Isa isa);

}  // namespace dlas::qconv_detail
