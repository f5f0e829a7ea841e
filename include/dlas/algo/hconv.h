// The 16-bit element types of the conv operator (conv.h, ConvTypes::kHalf): the arithmetic
// contract and its oracle. Weights and activations are stored as IEEE binary16 or bfloat16
// (uint16_t bit patterns, NCHW at the interface); the bias is f32 (a 16-bit bias widens exactly).
// Two kinds of compute path, labelled honestly (ConvCompute, reported by every prepared conv):
//   - emulated: values are widened to f32 and multiplied-added with f32 FMAs -- what a CPU
//     without half arithmetic does (the DLAS paper's "software emulation"); the memory
//     traffic is halved, the arithmetic is not faster;
//   - native: AVX512-FP16 half FMAs (vfmadd*ph, half accumulators), AVX512-BF16 dot products
//     (vdpbf16ps, f32 accumulators) or AMX-BF16 tiles (f32 accumulators).
// Which path runs follows the ISA path the conv is prepared for (include/dlas/hw/isa.h): `--isa
// avx512` on a Sapphire Rapids forces the emulated path, `avx512-fp16` / `amx` allow the native
// ones.
//
// The result, for every path: y = round_to_type(act(sum(x * w) + bias + residual)), the
// epilogue in f32 and one rounding to the type (nearest even) at the store. Paths differ
// only in the accumulation precision; tests derive their tolerance from it (f32
// accumulation: like the f32 algorithms, plus half a unit in the last place of the type;
// half accumulation: grows with the reduction length).
#pragma once

#include <cstdint>

#include "dlas/algo/conv.h"

namespace dlas {

// Whether bf16 `direct` convs on 16-bit channel blocks (nchw16c) run natively on path isa
// (vdpbf16ps register tiles; AVX512-BF16 and above): where they do, the plan's layout pass
// keeps bf16 activations blocked under `--layout auto` below the AMX path.
bool bf16_blocks_native(Isa isa);

// The oracle: every value widened exactly to f32, products accumulated in double, the
// epilogue in f32 (apply_epilogue's scalar semantics), one rounding to the type. For a
// 16-bit problem (validated).
void reference_hconv(const ConvProblem& p, const uint16_t* x, const ConvWeights& weights,
                     const uint16_t* residual, uint16_t* y);

}  // namespace dlas
