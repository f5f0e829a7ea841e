// fp16 values as exact sums of two bf16 values, interleaved into the uint32 pairs the AMX-BF16
// tiles multiply (element 0 in the low half). An f16 value has 11 significant bits: hi = its
// bf16 rounding (nearest even) keeps 8, and lo = x - hi (at most 4 significant bits, so
// exactly a bf16) the rest, so x = hi + lo exactly. With weights split the same way, the
// products hi*hi + hi*lo + lo*hi, each exact in f32, recover w*x up to the dropped lo*lo
// (<= 2^-16 |w x|): an fp16 conv on AMX-BF16 tiles ("bf16x3", direct_h16.cc).
//   hilo(n, x, y):    y[i] = (hi(x[i]), lo(x[i]))      -- one channel, multiplied by (wh, wh)
//   hipair(n, a, b, y): y[i] = (hi(a[i]), hi(b[i]))    -- two channels, multiplied by (wl, wl')
// An infinity or NaN goes whole into hi (lo = 0). One list: f16-bfsplit/f16_bfsplit.inc; each ISA
// in its own TU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using F16SplitHiLoFn = void (*)(size_t n, const uint16_t* x, uint32_t* y);
using F16SplitHiPairFn = void (*)(size_t n, const uint16_t* a, const uint16_t* b, uint32_t* y);

#define X(prefix, isa)                                          \
  void prefix##_hilo(size_t n, const uint16_t* x, uint32_t* y); \
  void prefix##_hipair(size_t n, const uint16_t* a, const uint16_t* b, uint32_t* y);
#include "algo/microkernels/f16-bfsplit/f16_bfsplit.inc"
#undef X

struct F16Split {
  const char* name;  // "f16_bfsplit__avx512"
  Isa isa;
  F16SplitHiLoFn hilo;
  F16SplitHiPairFn hipair;
};

// Every entry, in f16_bfsplit.inc order.
const std::vector<F16Split>& f16_bfsplit_kernels();
// The entry of the highest listed ISA <= isa.
const F16Split& f16_bfsplit_for(Isa isa);

// One value: the bf16 bit patterns of hi and lo (the scalar rule every kernel follows).
inline void f16_bfsplit(uint16_t h, uint16_t* hi, uint16_t* lo) {
  const float x = f16_to_f32(h);
  *hi = f32_to_bf16(x);
  if (!(x - x == 0.f)) {  // infinity or NaN: hi carries it, lo is zero
    *lo = 0;
    return;
  }
  const float r = x - bf16_to_f32(*hi);  // exact: <= 4 significant bits
  uint32_t bits;
  std::memcpy(&bits, &r, 4);
  *lo = static_cast<uint16_t>(bits >> 16);  // exact: the low half is zero
}

}  // namespace dlas::ukernel
