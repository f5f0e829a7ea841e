// The int8 integer oracle (qconv.h) and the pieces the int8 conv implementations share.
#include <cmath>
#include <cstdint>
#include <string>

#include "algo/conv/conv_impl.h"
#include "algo/conv/qs8_common.h"
#include "dlas/algo/qconv.h"
#include "dlas/core/error.h"
#include "dlas/hw/thread_pool.h"

namespace dlas {

namespace {
int32_t round_to_int(float v) { return static_cast<int32_t>(std::nearbyint(v)); }

int32_t load_q(const void* base, DType t, int64_t i) {
  return t == DType::kU8 ? static_cast<const uint8_t*>(base)[i]
                         : static_cast<const int8_t*>(base)[i];
}
}  // namespace

void reference_qconv_plane(const ConvProblem& p, const void* x, const int8_t* w, float m,
                           int32_t bias, const void* residual, void* y, int64_t n, int64_t k) {
  const ConvProblem& c = p;
  const int64_t oh = c.oh(), ow = c.ow(), g = k / c.k_per_group();
  const int32_t lo = p.out_lo(), hi = p.out_hi();
  const float vlo = static_cast<float>(lo - p.quant.y.zero_point);
  const float vhi = static_cast<float>(hi - p.quant.y.zero_point);
  const float rm =
      c.epilogue.residual ? requant_multiplier(p.quant.r.scale, 1.f, p.quant.y.scale) : 0.f;
  for (int64_t oy = 0; oy < oh; ++oy)
    for (int64_t ox = 0; ox < ow; ++ox) {
      int32_t acc = bias;
      for_each_tap_inside(c, n, g, oy, ox, [&](int64_t xi, int64_t wi) {
        const int32_t xv = load_q(x, p.quant.x.type, xi) - p.quant.x.zero_point;
        acc += xv * static_cast<int32_t>(w[wi]);
      });
      const int64_t yi = ((n * c.k + k) * oh + oy) * ow + ox;
      float t = 0.f;
      if (c.epilogue.residual)
        t = static_cast<float>(load_q(residual, p.quant.r.type, yi) - p.quant.r.zero_point) * rm;
      float v = std::fmaf(static_cast<float>(acc), m, t);
      v = std::fmin(std::fmax(v, vlo), vhi);
      const int32_t q = round_to_int(v) + p.quant.y.zero_point;
      if (p.quant.y.type == DType::kU8)
        static_cast<uint8_t*>(y)[yi] = static_cast<uint8_t>(q);
      else
        static_cast<int8_t*>(y)[yi] = static_cast<int8_t>(q);
    }
}

void reference_qconv(const ConvProblem& p, const void* x, const ConvWeights& weights,
                     const void* residual, void* y) {
  p.validate();
  DLAS_CHECK(p.is_int8(), ErrorKind::kInvalidInput, "reference_qconv: ", p.key(), " is not int8");
  const int8_t* w = weights.int8_data();
  const float* w_scale = weights.w_scale;
  const int32_t* bias = weights.bias_s32;
  const ConvProblem& c = p;
  const int64_t per_k = c.c_per_group() * c.kh * c.kw;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      reference_qconv_plane(p, x, w + k * per_k,
                            requant_multiplier(p.quant.x.scale, w_scale[k], p.quant.y.scale),
                            bias ? bias[k] : 0, residual, y, n, k);
}

const ConvAlgorithm& gemm_qconv_algorithm();  // gemm_qs8.cc

namespace qconv_detail {

ChannelTerms channel_terms(const ConvProblem& p, const int8_t* w, const float* w_scale,
                           const int32_t* bias) {
  const ConvProblem& c = p;
  const int64_t per_k = c.c_per_group() * c.kh * c.kw;
  const int64_t zp = stored_zero_point(p.quant.x);
  ChannelTerms t;
  t.init.resize(static_cast<size_t>(c.k));
  t.mult.resize(static_cast<size_t>(c.k));
  for (int64_t k = 0; k < c.k; ++k) {
    int64_t sum = 0;
    for (int64_t i = 0; i < per_k; ++i) sum += w[k * per_k + i];
    const int64_t init = (bias ? bias[k] : 0) - zp * sum;
    t.init[k] = static_cast<int32_t>(static_cast<uint32_t>(init));  // wraps like the kernels
    t.mult[k] = requant_multiplier(p.quant.x.scale, w_scale[k], p.quant.y.scale);
  }
  return t;
}

namespace {

// A blocked int8 problem on its NCHW twin: input (and residual) reordered to NCHW in the
// workspace, the NCHW conv, its output reordered back into the blocks.
class PreparedInt8ViaNchw final : public PreparedInt8Conv {
 public:
  PreparedInt8ViaNchw(const ConvProblem& p, std::unique_ptr<PreparedConv> inner)
      : p_(p), inner_(std::move(inner)) {}
  size_t workspace_bytes(int threads) const override {
    return align(x_bytes()) + 2 * align(y_bytes()) + inner_->workspace_bytes(threads);
  }
  size_t packed_bytes() const override { return inner_->packed_bytes(); }
  ConvCompute compute() const override { return inner_->compute(); }
  void run(const void* x, void* y, const void* residual, void* workspace,
           ThreadPool& pool) const override {
    uint8_t* xs = static_cast<uint8_t*>(workspace);
    uint8_t* ys = xs + align(x_bytes());
    uint8_t* rs = ys + align(y_bytes());
    uint8_t* rest = rs + align(y_bytes());
    const int64_t ohw = p_.oh() * p_.ow();
    reorder(static_cast<const uint8_t*>(x), p_.x_layout, xs, Layout::kNchw, p_.n, p_.c, p_.h * p_.w,
            pool);
    if (residual)
      reorder(static_cast<const uint8_t*>(residual), p_.y_layout, rs, Layout::kNchw, p_.n, p_.k,
              ohw, pool);
    inner_->run(xs, ys, residual ? rs : nullptr, rest, pool);
    reorder(ys, Layout::kNchw, static_cast<uint8_t*>(y), p_.y_layout, p_.n, p_.k, ohw, pool);
  }

 private:
  static size_t align(size_t b) { return (b + 63) / 64 * 64; }
  size_t x_bytes() const { return static_cast<size_t>(p_.input_count()); }
  size_t y_bytes() const { return static_cast<size_t>(p_.output_count()); }
  ConvProblem p_;
  std::unique_ptr<PreparedConv> inner_;
};

}  // namespace

std::unique_ptr<PreparedConv> prepare_int8_via_nchw(const ConvProblem& p, const ConvWeights& w,
                                                    Isa isa) {
  ConvProblem q = p;
  q.set_layouts(Layout::kNchw, Layout::kNchw);
  const ConvAlgorithm& gemm = gemm_qconv_algorithm();
  return std::make_unique<PreparedInt8ViaNchw>(p,
                                               gemm.prepare(q, w, gemm.default_knobs(q, isa), isa));
}

ukernel::QS8GemmParams base_params(const ConvProblem& p) {
  ukernel::QS8GemmParams prm{};
  prm.vlo = static_cast<float>(p.out_lo() - p.quant.y.zero_point);
  prm.vhi = static_cast<float>(p.out_hi() - p.quant.y.zero_point);
  prm.y_zp = p.quant.y.zero_point;
  prm.y_signed = p.quant.y.type == DType::kS8;
  prm.r_signed = p.quant.r.type == DType::kS8;
  prm.r_zp = p.quant.r.zero_point;
  prm.rm = p.epilogue.residual ? requant_multiplier(p.quant.r.scale, 1.f, p.quant.y.scale) : 0.f;
  return prm;
}

}  // namespace qconv_detail

}  // namespace dlas
