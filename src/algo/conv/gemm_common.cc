#include "algo/conv/gemm_common.h"

#include <string>

#include "dlas/core/error.h"

namespace dlas::conv_detail {

std::vector<const ukernel::F32GemmUkernel*> conv_gemm_ukernels(Isa isa) {
  std::vector<const ukernel::F32GemmUkernel*> out;
  for (const ukernel::F32GemmUkernel* u : ukernel::f32_gemm_ukernels_for(isa))
    if (u->mr > 1) out.push_back(u);
  return out;
}

AlignedVector<float> pack_conv_weights(const ConvProblem& p, const float* w,
                                       const ukernel::F32GemmUkernel& uk) {
  const int mr = uk.mr;
  const int64_t kg = p.k_per_group(), r = p.c_per_group() * p.kh * p.kw;
  const int64_t panels = div_up(kg, mr);
  AlignedVector<float> out(static_cast<size_t>(p.groups * panels * r * mr));
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t ip = 0; ip < panels; ++ip) {
      const int64_t row0 = ip * mr, rows = kg - row0 < mr ? kg - row0 : mr;
      uk.pack(static_cast<size_t>(mr), static_cast<size_t>(rows), static_cast<size_t>(r),
              w + (g * kg + row0) * r, static_cast<size_t>(r),
              out.data() + (g * panels + ip) * r * mr);
    }
  return out;
}

KnobSpec ukernel_knob(Isa isa) {
  KnobSpec s{"ukernel", {}, "f32 GEMM microkernel (index into this ISA's conv candidates:"};
  const auto list = conv_gemm_ukernels(isa);
  for (size_t i = 0; i < list.size(); ++i) {
    s.values.push_back(static_cast<int64_t>(i));
    s.doc += std::string(i ? ", " : " ") + std::to_string(i) + "=" + list[i]->name;
  }
  s.doc += ")";
  return s;
}

const ukernel::F32GemmUkernel& ukernel_from_knob(Isa isa, int64_t index) {
  const auto list = conv_gemm_ukernels(isa);
  DLAS_CHECK(index >= 0 && index < static_cast<int64_t>(list.size()), ErrorKind::kInvalidInput,
             "knob 'ukernel' = ", index, " is out of range for ", isa_name(isa));
  return *list[static_cast<size_t>(index)];
}

std::vector<ConvTap> conv_taps(const ConvProblem& p) {
  std::vector<ConvTap> taps;
  taps.reserve(static_cast<size_t>(p.c_per_group() * p.kh * p.kw));
  for (int64_t c = 0; c < p.c_per_group(); ++c)
    for (int64_t ky = 0; ky < p.kh; ++ky)
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t dx = kx * p.dil_w - p.pad_l, sw = p.stride_w;
        // ix = ox * sw + dx in [0, W)  <=>  ox in [lo, hi)
        const int64_t lo = dx >= 0 ? 0 : div_up(-dx, sw);
        const int64_t hi = p.w - dx <= 0 ? 0 : div_up(p.w - dx, sw);
        taps.push_back({c * p.h * p.w, ky * p.dil_h - p.pad_t, dx, lo, hi});
      }
  return taps;
}

}  // namespace dlas::conv_detail
