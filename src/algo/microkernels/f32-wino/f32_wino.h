// f32 Winograd transform microkernels for F(2x2,3x3) and F(4x4,3x3): the input
// transform V = B^T d B and the output transform Y = A^T M A, vectorised across
// tiles (one lane per tile), so a tile panel of the GEMM's NR columns is
// transformed with contiguous vector loads and stores. The weight transform
// U = G g G^T runs once at prepare in double and needs no kernel.
//
// Layout: a tile's alpha x alpha points are numbered xi = r * alpha + s.
//   input:  d[xi * ld + j]  (j < n tiles)  ->  v[xi * vs + j]
//   output: mm[xi * ms + j] ->  o[(i * m + jj) * os + j] = clamp(y + bias, min, max)
// The transform matrices and their derivation are in f32-wino/f32_wino_template.h.
// The one list is f32-wino/f32_wino.inc; each ISA's kernels have their own TU.
#pragma once

#include <cstddef>
#include <vector>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F32WinoInputFn = void (*)(size_t n, const float* d, size_t ld, float* v, size_t vs);
using F32WinoOutputFn = void (*)(size_t n, const float* mm, size_t ms, float* o, size_t os,
                                 float bias, float min, float max);

struct F32WinoUkernel {
  const char* name;  // "f32_wino_x8__avx2": lanes and ISA
  Isa isa;
  int lanes;
  F32WinoInputFn input_f2, input_f4;
  F32WinoOutputFn output_f2, output_f4;

  F32WinoInputFn input(int m) const { return m == 2 ? input_f2 : input_f4; }
  F32WinoOutputFn output(int m) const { return m == 2 ? output_f2 : output_f4; }
};

// Every kernel built, in f32_wino.inc order.
// The production kernels (the X rows of the list).
const std::vector<F32WinoUkernel>& f32_wino_ukernels();
// The test-only kernels (the T rows): run by the tests, never selected.
const std::vector<F32WinoUkernel>& f32_wino_test_only_ukernels();
// The first listed kernel of the highest ISA <= isa.
const F32WinoUkernel& f32_wino_default(Isa isa);

}  // namespace dlas::ukernel

// Declarations of every f32 Winograd transform kernel, derived from f32_wino.inc.
namespace dlas::ukernel {
#define X(name, isa, lanes)                                                                    \
  void name##_input_f2(size_t n, const float* d, size_t ld, float* v, size_t vs);              \
  void name##_input_f4(size_t n, const float* d, size_t ld, float* v, size_t vs);              \
  void name##_output_f2(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float min, float max);                                                 \
  void name##_output_f4(size_t n, const float* mm, size_t ms, float* o, size_t os, float bias, \
                        float min, float max);
#define T(name, isa, lanes) X(name, isa, lanes)
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
}  // namespace dlas::ukernel
