// The 16-bit oracle (hconv.h).
#include <string>

#include "algo/conv/conv_impl.h"
#include "algo/microkernels/f32-vepilogue/f32_vepilogue.h"
#include "dlas/algo/hconv.h"
#include "dlas/core/error.h"

namespace dlas {

void reference_hconv(const ConvProblem& p, const uint16_t* x, const ConvWeights& w,
                     const uint16_t* residual, uint16_t* y) {
  p.validate();
  DLAS_CHECK(p.is_half(), ErrorKind::kInvalidInput, "reference_hconv: ", p.key(), " is not 16-bit");
  const uint16_t* weights = w.half_data();
  const float* bias = w.bias;
  const ConvProblem& c = p;
  const bool f16 = p.w_type == DType::kF16;
  auto widen = [f16](uint16_t v) { return f16 ? f16_to_f32(v) : bf16_to_f32(v); };
  const int64_t oh = c.oh(), ow = c.ow(), cg = c.c_per_group(), kg = c.k_per_group();
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k) {
      const int64_t g = k / kg;
      const uint16_t* wk = weights + k * cg * c.kh * c.kw;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = 0;
          for_each_tap_inside(c, n, g, oy, ox, [&](int64_t xi, int64_t wi) {
            acc += static_cast<double>(widen(x[xi])) * static_cast<double>(widen(wk[wi]));
          });
          const int64_t yi = ((n * c.k + k) * oh + oy) * ow + ox;
          float v = static_cast<float>(acc);
          float r = 0.f;
          if (c.epilogue.residual) r = widen(residual[yi]);
          ukernel::f32_vepilogue__scalar(1, &v, bias ? bias[k] : 0.f,
                                         c.epilogue.residual ? &r : nullptr, c.epilogue.act,
                                         c.epilogue.p0, c.epilogue.p1);
          y[yi] = f16 ? f32_to_f16(v) : f32_to_bf16(v);
        }
    }
}

}  // namespace dlas
