// The reports of `dlas prune` and `dlas quantize` (cmd_prune_report.cc, cmd_quantize_report.cc).
#pragma once

#include <nlohmann/json.hpp>

#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"

namespace dlas::cli {

nlohmann::ordered_json prune_report_json(const PruneReport& r);
// The per-layer table and the summary line (channel pruning: kept channels per layer).
void print_prune_report(const PruneReport& r);

// int8: per tensor its range, parameters, calibrator, measured error and every calibrator's
// range and error ("candidates"); "worst": the three largest errors.
nlohmann::ordered_json quant_report_json(const QuantReport& r);
// The n calibrated tensors with the largest measured error, largest first.
nlohmann::ordered_json quant_worst_json(const QuantReport& r, size_t n);
// int8: one row per tensor (calibrator, range, error, the best any calibrator gave, the layer
// it feeds; high errors marked) and the largest errors; fp16 / bf16: the initializers
// converted.
void print_quant_report(const QuantReport& r);

}  // namespace dlas::cli
