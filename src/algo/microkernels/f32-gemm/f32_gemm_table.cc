// The f32 GEMM microkernel table, derived from f32_gemm.inc.
#include <cstring>

#include "algo/microkernels/f32-gemm/f32_gemm.h"
#include "dlas/core/error.h"

namespace dlas::ukernel {

const std::vector<F32GemmUkernel>& f32_gemm_ukernels() {
  static const std::vector<F32GemmUkernel> table = {
#define X(fn, isa, mr, nr) {#fn, Isa::isa, mr, nr, &fn, &pack_a_panel},
#include "algo/microkernels/f32-gemm/f32_gemm.inc"
#undef X
  };
  return table;
}

std::vector<const F32GemmUkernel*> f32_gemm_ukernels_for(Isa isa) {
  std::vector<const F32GemmUkernel*> out;
  for (int level = static_cast<int>(isa); level >= 0; --level)
    for (const F32GemmUkernel& u : f32_gemm_ukernels())
      if (static_cast<int>(u.isa) == level) out.push_back(&u);
  return out;
}

const F32GemmUkernel& f32_gemm_default(Isa isa) {
  const auto all = f32_gemm_ukernels_for(isa);
  DLAS_CHECK(!all.empty(), ErrorKind::kInternal, "no f32 GEMM microkernel for ", isa_name(isa));
  return *all.front();
}

const F32GemmUkernel& f32_gemm_for_output(Isa isa, int64_t m, int64_t n) {
  const F32GemmUkernel& def = f32_gemm_default(isa);
  const F32GemmUkernel* best = &def;
  auto padded = [&](const F32GemmUkernel& u) {
    return (m + u.mr - 1) / u.mr * u.mr * ((n + u.nr - 1) / u.nr * u.nr);
  };
  for (const F32GemmUkernel* u : f32_gemm_ukernels_for(isa))
    if (u->isa == def.isa && u->mr > 1 && 4 * u->mr * u->nr >= 3 * def.mr * def.nr &&
        padded(*u) < padded(*best))
      best = u;
  return *best;
}

const F32GemmUkernel* find_f32_gemm(const char* name) {
  for (const F32GemmUkernel& u : f32_gemm_ukernels())
    if (std::strcmp(u.name, name) == 0) return &u;
  return nullptr;
}

void pack_a_panel(size_t mr, size_t m, size_t k, const float* a, size_t lda, float* packed) {
  for (size_t kk = 0; kk < k; ++kk)
    for (size_t i = 0; i < mr; ++i) packed[kk * mr + i] = i < m ? a[i * lda + kk] : 0.f;
}

}  // namespace dlas::ukernel
