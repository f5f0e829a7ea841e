// The --compress value (DLAS layer 3): "dense" or '+'-joined parts, at most one pruning
// part (wp, bp, cp; dlas/optimize/prune.h) and at most one quantization part (int8 with its
// calibrator and activation type, fp16, bf16; dlas/optimize/quantize.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dlas/core/dtype.h"
#include "dlas/optimize/prune.h"

namespace dlas {

enum class QuantType { kInt8, kF16, kBF16 };
// kAuto runs every data calibrator (minmax, percentile, entropy, mse) and keeps, per tensor,
// the range whose measured output error on the calibration set is the smallest.
enum class Calibrator { kMinMax, kPercentile, kEntropy, kMse, kNone, kAuto };

// "minmax", "percentile", "entropy", "mse", "none", "auto".
const char* calibrator_name(Calibrator c);
std::optional<Calibrator> calibrator_from_name(std::string_view name);

struct QuantSpec {
  QuantType type = QuantType::kInt8;
  Calibrator calibrator = Calibrator::kAuto;
  double percentile = 99.99;          // kPercentile, in (0, 100]
  DType activations = DType::kU8;     // kU8 (asymmetric) or kS8 (symmetric)
  std::string calib_data = "random";  // "random", a directory of .npy files, or a dataset name
                                      // (dlas/data/dataset.h: preprocessed training images)
  int calib_samples = 32;             // random samples / at most this many files
  uint64_t seed = 0;                  // random calibration inputs

  // Canonical --compress part: "fp16", "bf16", "int8" (auto, u8), "int8:minmax",
  // "int8:percentile=99.9:s8", ... (defaults omitted).
  std::string str() const;
};

// Parses one --compress part: int8[:CAL][:u8|s8] with CAL auto | minmax | percentile[=P] |
// entropy | mse | none, fp16, bf16. kInvalidInput naming the part.
QuantSpec parse_quant_spec(std::string_view part);

// A whole --compress value: "dense" or '+'-joined parts, at most one pruning part (wp, bp,
// cp; applied first) and at most one quantization part.
struct CompressSpec {
  std::optional<PruneSpec> prune;
  std::optional<QuantSpec> quant;
  // Canonical: "dense", "wp:0.9", "int8" (auto), "wp:0.9+int8:minmax".
  std::string str() const;
};
CompressSpec parse_compress(std::string_view text);

}  // namespace dlas
