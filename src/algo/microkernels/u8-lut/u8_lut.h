// Table lookup of bytes, y[i] = table[x[i]], into bytes or floats (QLookup: a
// DequantizeLinear -> pointwise float ops [-> QuantizeLinear] chain as its 256 results). One
// list: u8-lut/u8_lut.inc; each ISA in its own TU. The byte kernels: AVX2 (16 vpshufb over the
// table's 16-byte rows, also the AVX-512 paths' kernel on CPUs without VBMI) and
// AVX512-VBMI (vpermi2b: a 128-byte table per instruction), checked at run time on the
// AVX-512 paths (a scalar loop took 26% of efficientnetb0's int8 time on a Zen 4). The float
// kernels on AVX-512: one vgatherdps from the 1 KiB table, or the table held in 16 zmm
// registers, 8 vpermi2ps and a 3-level blend on the index's top bits (1.8x the gather on one
// Zen 4 core); u8_lut_for measures which is faster on the machine at first use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using U8LutFn = void (*)(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y);
using U8LutF32Fn = void (*)(size_t n, const uint8_t* x, const float* table, float* y);

#define X(name, isa, bytes, vbmi_bytes, floats, alt_floats)                      \
  void bytes(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y);      \
  void vbmi_bytes(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y); \
  void floats(size_t n, const uint8_t* x, const float* table, float* y);         \
  void alt_floats(size_t n, const uint8_t* x, const float* table, float* y);
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X

struct U8Lut {
  const char* name;
  Isa isa;
  U8LutFn bytes;
  U8LutF32Fn floats;
};

// The row of the highest listed ISA <= isa that the CPU supports, with the VBMI byte kernel
// where the CPU has AVX512-VBMI and, where the row lists two float kernels, the one that ran
// faster here (each timed a few times on 16 Ki bytes when the row is first asked for; both
// are exact, so the choice changes only speed).
const U8Lut& u8_lut_for(Isa isa);

}  // namespace dlas::ukernel
