// 16-bit float convolution (DLAS layers 3-4): the fp16 / bf16 twin of conv.h. Weights and
// activations are stored as IEEE binary16 or bfloat16 (uint16_t bit patterns, NCHW at the
// interface); the bias is f32 (a 16-bit bias widens exactly). Two kinds of compute path,
// labelled honestly (HalfCompute, reported by every prepared conv):
//   - emulated: values are widened to f32 and multiplied-added with f32 FMAs -- what a CPU
//     without half arithmetic does (the DLAS paper's "software emulation"); the memory
//     traffic is halved, the arithmetic is not faster;
//   - native: AVX512-FP16 half FMAs (vfmadd*ph, half accumulators), AVX512-BF16 dot products
//     (vdpbf16ps, f32 accumulators) or AMX-BF16 tiles (f32 accumulators).
// Which path runs follows the active ISA (include/dlas/hw/isa.h): `--isa avx512` on a
// Sapphire Rapids forces the emulated path, `avx512-fp16` / `amx` allow the native ones.
//
// The result, for every path: y = round_to_type(act(sum(x * w) + bias + residual)), the
// epilogue in f32 and one rounding to the type (nearest even) at the store. Paths differ
// only in the accumulation precision; tests derive their tolerance from it (f32
// accumulation: like the f32 algorithms, plus half a unit in the last place of the type;
// half accumulation: grows with the reduction length).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/algo/conv.h"
#include "dlas/algo/knobs.h"
#include "dlas/core/dtype.h"
#include "dlas/hw/isa.h"

namespace dlas {

class ThreadPool;

enum class HalfCompute {
  kEmulated,    // widen to f32, f32 FMA, f32 accumulators
  kNativeFp16,  // AVX512-FP16 FMA, fp16 accumulators
  kNativeBf16,  // AVX512-BF16 vdpbf16ps, f32 accumulators
  kAmxBf16,     // AMX-BF16 tiles, f32 accumulators
};
// "emulated", "native-fp16", "native-bf16", "amx-bf16".
const char* half_compute_name(HalfCompute c);

struct HConvProblem {
  ConvProblem conv;
  DType type = DType::kF16;  // kF16 or kBF16: input, weights, residual and output alike

  // conv.validate() plus the type (kInvalidInput otherwise).
  void validate() const;
  // conv.key() + "_f16" / "_bf16".
  std::string key() const;
  int64_t macs() const { return conv.macs(); }
};

// A 16-bit conv prepared for one problem, knob point and ISA. run() is const, re-entrant
// given distinct workspaces, and does not allocate.
class PreparedHConv {
 public:
  virtual ~PreparedHConv() = default;
  virtual size_t workspace_bytes(int threads) const = 0;
  // x: [n][c][h][w]; y: [n][k][oh][ow]; residual: like y, or null. All of the problem's type.
  virtual void run(const uint16_t* x, uint16_t* y, const uint16_t* residual, void* workspace,
                   ThreadPool& pool) const = 0;
  virtual size_t packed_bytes() const = 0;
  // The arithmetic this instance runs (depends on the ISA it was prepared for).
  virtual HalfCompute compute() const = 0;
};

class HConvAlgorithm {
 public:
  virtual ~HConvAlgorithm() = default;
  // The f32 twin's name ("direct", "gemm", "spatial-pack", "winograd", "depthwise").
  virtual std::string_view name() const = 0;
  virtual bool supports(const HConvProblem& p) const = 0;
  virtual KnobSpace knob_space(const HConvProblem& p, Isa isa) const = 0;
  virtual Knobs default_knobs(const HConvProblem& p, Isa isa) const = 0;
  // weights: [k][c/groups][kh][kw] of p.type; bias: f32 [k] or null. Validates knobs
  // (kInvalidInput naming the knob); kUnsupported when !supports(p).
  virtual std::unique_ptr<PreparedHConv> prepare(const HConvProblem& p, const uint16_t* weights,
                                                 const float* bias, const Knobs& knobs,
                                                 Isa isa) const = 0;
};

// The one list (src/algo/hconv/hconv_algorithms.inc), in a fixed order.
const std::vector<const HConvAlgorithm*>& hconv_algorithms();
// By name; nullptr when unknown.
const HConvAlgorithm* find_hconv_algorithm(std::string_view name);
// The 16-bit auto rule (README "The engine"); only algorithms that support p are returned.
const HConvAlgorithm& auto_hconv_algorithm(const HConvProblem& p);

// The oracle: every value widened exactly to f32, products accumulated in double, the
// epilogue in f32 (apply_epilogue's scalar semantics), one rounding to the type.
void reference_hconv(const HConvProblem& p, const uint16_t* x, const uint16_t* weights,
                     const float* bias, const uint16_t* residual, uint16_t* y);

}  // namespace dlas
