// AVX-512 FLOP/s probe: 12 chains of 16-lane zmm FMAs.
#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

typedef float v16f __attribute__((vector_size(64)));

float fma_probe_avx512(int64_t iters) { return fma_probe<v16f>(iters); }

}  // namespace dlas::peak_detail
