// Bandwidth kernels, built with the baseline flags: 16-byte vectors (SSE2, in every x86-64)
// with four independent accumulators already issue loads faster than DRAM delivers them,
// so the ISA does not matter here and one build serves every machine.
#include <cstring>

#include "hw/peak/peak_probes.h"

namespace dlas::peak_detail {

namespace {
typedef float v4f __attribute__((vector_size(16)));
typedef float v4f_u __attribute__((vector_size(16), aligned(4), may_alias));
}  // namespace

float read_sum(const float* a, size_t n) {
  v4f s0{}, s1{}, s2{}, s3{};
  for (size_t i = 0; i < n; i += 16) {
    s0 += *reinterpret_cast<const v4f_u*>(a + i);
    s1 += *reinterpret_cast<const v4f_u*>(a + i + 4);
    s2 += *reinterpret_cast<const v4f_u*>(a + i + 8);
    s3 += *reinterpret_cast<const v4f_u*>(a + i + 12);
  }
  v4f s = (s0 + s1) + (s2 + s3);
  return s[0] + s[1] + s[2] + s[3];
}

void triad(float* a, const float* b, const float* c, float s, size_t n) {
  const v4f vs = v4f{} + s;
  for (size_t i = 0; i < n; i += 4) {
    *reinterpret_cast<v4f_u*>(a + i) =
        *reinterpret_cast<const v4f_u*>(b + i) + vs * *reinterpret_cast<const v4f_u*>(c + i);
  }
}

}  // namespace dlas::peak_detail
