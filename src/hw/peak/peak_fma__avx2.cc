// AVX2 FLOP/s probe: 12 chains of 8-lane ymm FMAs.
#include "hw/peak/peak_fma.h"

namespace dlas::peak_detail {

typedef float v8f __attribute__((vector_size(32)));

float fma_probe_avx2(int64_t iters) { return fma_probe<v8f>(iters); }

}  // namespace dlas::peak_detail
