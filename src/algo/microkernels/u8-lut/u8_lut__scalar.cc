// Byte table lookups, one byte at a time.
#include "algo/microkernels/u8-lut/u8_lut.h"

namespace dlas::ukernel {

void u8_lut__scalar_bytes(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y) {
  uint8_t t[256];  // a local copy: the byte stores to y cannot alias it
  for (int i = 0; i < 256; ++i) t[i] = table[i];
  for (size_t i = 0; i < n; ++i) y[i] = t[x[i]];
}

void u8_lut__scalar_floats(size_t n, const uint8_t* x, const float* table, float* y) {
  for (size_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace dlas::ukernel
