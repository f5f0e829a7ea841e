// Portable fp16 -> bf16 hi/lo splits (the oracle path): f16_bfsplit per value.
#include "algo/microkernels/f16-bfsplit/f16_bfsplit.h"

namespace dlas::ukernel {

void f16_bfsplit__scalar_hilo(size_t n, const uint16_t* x, uint32_t* y) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t hi, lo;
    f16_bfsplit(x[i], &hi, &lo);
    y[i] = static_cast<uint32_t>(hi) | static_cast<uint32_t>(lo) << 16;
  }
}

void f16_bfsplit__scalar_hipair(size_t n, const uint16_t* a, const uint16_t* b, uint32_t* y) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t ha, hb, lo;
    f16_bfsplit(a[i], &ha, &lo);
    f16_bfsplit(b[i], &hb, &lo);
    y[i] = static_cast<uint32_t>(ha) | static_cast<uint32_t>(hb) << 16;
  }
}

}  // namespace dlas::ukernel
