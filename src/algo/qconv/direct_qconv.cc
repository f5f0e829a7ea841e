// int8 `direct` convolution, scalar: the oracle's loop nest per output plane, with the
// multipliers computed once at prepare and threads over (image, output channel) planes.
// The portable baseline every vector int8 algorithm is measured against.
#include <memory>
#include <vector>

#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {
namespace {

class PreparedDirectQConv final : public PreparedQConv {
 public:
  PreparedDirectQConv(const QConvProblem& p, const int8_t* w, const float* w_scale,
                      const int32_t* bias)
      : p_(p), w_(w, w + p.conv.weight_count()), m_(p.conv.k), bias_(p.conv.k, 0) {
    for (int64_t k = 0; k < p.conv.k; ++k) {
      m_[k] = requant_multiplier(p.x.scale, w_scale[k], p.y.scale);
      if (bias) bias_[k] = bias[k];
    }
  }
  size_t workspace_bytes(int) const override { return 0; }
  void run(const void* x, void* y, const void* residual, void*, ThreadPool& pool) const override {
    const int64_t per_k = p_.conv.c_per_group() * p_.conv.kh * p_.conv.kw;
    pool.parallel_for(static_cast<size_t>(p_.conv.n * p_.conv.k), [&](size_t i) {
      const int64_t n = static_cast<int64_t>(i) / p_.conv.k,
                    k = static_cast<int64_t>(i) % p_.conv.k;
      reference_qconv_plane(p_, x, w_.data() + k * per_k, m_[k], bias_[k], residual, y, n, k);
    });
  }
  size_t packed_bytes() const override { return w_.size() + 8 * m_.size(); }

 private:
  QConvProblem p_;
  std::vector<int8_t> w_;
  std::vector<float> m_;
  std::vector<int32_t> bias_;
};

class DirectQConvAlgorithm final : public QConvAlgorithm {
 public:
  std::string_view name() const override { return "direct"; }
  bool supports(const QConvProblem&) const override { return true; }
  KnobSpace knob_space(const QConvProblem&, Isa) const override { return {}; }
  Knobs default_knobs(const QConvProblem&, Isa) const override { return {}; }
  std::unique_ptr<PreparedQConv> prepare(const QConvProblem& p, const int8_t* w,
                                         const float* w_scale, const int32_t* bias,
                                         const Knobs& knobs, Isa isa) const override {
    p.validate();
    knob_space(p, isa).validate(knobs, "int8 direct conv " + p.key());
    return std::make_unique<PreparedDirectQConv>(p, w, w_scale, bias);
  }
};

}  // namespace

const QConvAlgorithm& direct_qconv_algorithm() {
  static const DirectQConvAlgorithm algo;
  return algo;
}

}  // namespace dlas
