// The native 16-bit GEMM microkernel table, derived from f16_gemm.inc and bf16_gemm.inc.
#include "algo/microkernels/h16-gemm/h16_gemm.h"

namespace dlas::ukernel {

const std::vector<H16GemmUkernel>& h16_gemm_ukernels() {
  static const std::vector<H16GemmUkernel> table = {
#define X(fn, isa, mr, nr) \
  {#fn, DType::kF16, ConvCompute::kNativeFp16, Isa::isa, mr, nr, 1, 1, &fn, &h16_gemm_pack_a<1>},
#include "algo/microkernels/f16-gemm/f16_gemm.inc"
#undef X
#define X(fn, isa, mr, nr, kb)                                               \
  {#fn,                                                                      \
   DType::kBF16,                                                             \
   Isa::isa == Isa::kAmx ? ConvCompute::kAmxBf16 : ConvCompute::kNativeBf16, \
   Isa::isa,                                                                 \
   mr,                                                                       \
   nr,                                                                       \
   2,                                                                        \
   kb,                                                                       \
   &fn,                                                                      \
   &h16_gemm_pack_a<kb>},
#include "algo/microkernels/bf16-gemm/bf16_gemm.inc"
#undef X
  };
  return table;
}

std::vector<const H16GemmUkernel*> h16_gemm_ukernels_for(DType type, Isa isa) {
  std::vector<const H16GemmUkernel*> out;
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const H16GemmUkernel& u : h16_gemm_ukernels())
      if (u.type == type && static_cast<int>(u.isa) == level && isa_supported(u.isa))
        out.push_back(&u);
  return out;
}

}  // namespace dlas::ukernel
