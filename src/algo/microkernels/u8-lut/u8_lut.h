// Byte table lookup, y[i] = table[x[i]] (QLookup: a DequantizeLinear -> pointwise float ops ->
// QuantizeLinear chain as its 256 results). One list: u8-lut/u8_lut.inc; each ISA in its own
// TU. The vector kernel needs AVX512-VBMI (vpermi2b: a 128-byte table per instruction), which
// every CPU of the avx512-fp16 path has (Sapphire Rapids and later).
#pragma once

#include <cstddef>
#include <cstdint>

#include "dlas/hw/isa.h"

namespace dlas::ukernel {

using U8LutFn = void (*)(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y);

#define X(fn, isa) void fn(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y);
#include "algo/microkernels/u8-lut/u8_lut.inc"
#undef X

// The kernel of the highest listed ISA <= isa that the CPU supports.
U8LutFn u8_lut_for(Isa isa);

}  // namespace dlas::ukernel
