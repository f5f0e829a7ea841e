// `direct` (but its AMX path, direct_h16.cc), `spatial-pack`, `winograd` and `depthwise`
// for 16-bit tensors: the f32 twin run on widened tensors (the emulated compute path on
// every ISA). run() widens the input (and residual) into the workspace with the h16 row
// conversions, runs the f32 algorithm -- bias, residual and activation in f32, as the
// contract asks -- and narrows the output once.
// The f32 twin packs its weights at prepare from the exactly widened 16-bit weights, so these
// hold f32 weights (packed_bytes() says so): only gemm and direct's AMX path keep weights
// 16-bit in memory and have native half arithmetic (gemm_h16.cc, direct_h16.cc). Knobs are
// the f32 twin's.
#include <memory>

#include "algo/conv/conv_impl.h"
#include "algo/microkernels/h16-vcvt/h16_vcvt.h"
#include "dlas/algo/eltwise.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

size_t round64(size_t b) { return (b + 63) / 64 * 64; }

class PreparedWidenedHConv final : public PreparedH16Conv {
 public:
  PreparedWidenedHConv(const ConvProblem& p, std::unique_ptr<PreparedConv> inner, Isa isa)
      : p_(p), inner_(std::move(inner)), isa_(isa) {
    const ConvProblem& c = p;
    nx_ = static_cast<size_t>(c.n * c.c * c.h * c.w);
    ny_ = static_cast<size_t>(c.n * c.k * c.oh() * c.ow());
  }

  size_t workspace_bytes(int threads) const override {
    return round64(nx_ * 4) + round64(ny_ * 4) * (p_.epilogue.residual ? 2 : 1) +
           inner_->workspace_bytes(threads);
  }

  void run_typed(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                 ThreadPool& pool) const override {
    char* ws = static_cast<char*>(workspace);
    float* xf = reinterpret_cast<float*>(ws);
    ws += round64(nx_ * 4);
    float* yf = reinterpret_cast<float*>(ws);
    ws += round64(ny_ * 4);
    float* rf = nullptr;
    if (p_.epilogue.residual) {
      rf = reinterpret_cast<float*>(ws);
      ws += round64(ny_ * 4);
    }
    widen_h16(p_.w_type, isa_, nx_, x, xf, pool);
    if (rf) widen_h16(p_.w_type, isa_, ny_, residual, rf, pool);
    inner_->run(xf, yf, rf, ws, pool);
    narrow_h16(p_.w_type, isa_, ny_, yf, y, pool);
  }

  size_t packed_bytes() const override { return inner_->packed_bytes(); }
  ConvCompute compute() const override { return ConvCompute::kEmulated; }

 private:
  ConvProblem p_;
  std::unique_ptr<PreparedConv> inner_;
  Isa isa_;
  size_t nx_, ny_;
};

class WidenedHConvAlgorithm final : public ConvAlgorithm {
 public:
  explicit WidenedHConvAlgorithm(std::string_view twin) : twin_name_(twin) {}

  std::string_view name() const override { return twin_name_; }
  bool supports(const ConvProblem& p) const override {
    return (p.w_type == DType::kF16 || p.w_type == DType::kBF16) && twin().supports(p.as_f32());
  }
  KnobSpace knob_space(const ConvProblem& p, Isa isa) const override {
    return twin().knob_space(p.as_f32(), base_isa(isa));
  }
  Knobs default_knobs(const ConvProblem& p, Isa isa) const override {
    return twin().default_knobs(p.as_f32(), base_isa(isa));
  }
  std::unique_ptr<PreparedConv> prepare(const ConvProblem& p, const ConvWeights& w,
                                        const Knobs& knobs, Isa isa) const override {
    p.validate();
    DLAS_CHECK(twin().supports(p.as_f32()), ErrorKind::kUnsupported, "16-bit ", twin_name_,
               " conv does not support ", p.key());
    std::vector<float> wf(static_cast<size_t>(p.weight_count()));
    ukernel::h16_vcvt_for(p.w_type, isa).widen(wf.size(), w.half_data(), wf.data());
    return std::make_unique<PreparedWidenedHConv>(
        p, twin().prepare(p.as_f32(), ConvWeights::f32(wf.data(), w.bias), knobs, base_isa(isa)),
        isa);
  }

 private:
  const ConvAlgorithm& twin() const {
    const ConvAlgorithm* a = find_conv_algorithm(twin_name_);
    DLAS_CHECK(a != nullptr, ErrorKind::kInternal, "no f32 conv algorithm ", twin_name_);
    return *a;
  }
  std::string_view twin_name_;
};

}  // namespace

const ConvAlgorithm& hconv_detail::widened_direct_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("direct");
  return a;
}
const ConvAlgorithm& spatial_pack_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("spatial-pack");
  return a;
}
const ConvAlgorithm& winograd_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("winograd");
  return a;
}
const ConvAlgorithm& depthwise_hconv_algorithm() {
  static const WidenedHConvAlgorithm a("depthwise");
  return a;
}

}  // namespace dlas
