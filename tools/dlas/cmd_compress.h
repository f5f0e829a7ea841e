// The reports of `dlas prune` and `dlas quantize` (cmd_prune_report.cc, cmd_quantize_report.cc).
#pragma once

#include <nlohmann/json.hpp>

#include "dlas/optimize/prune.h"
#include "dlas/optimize/quantize.h"

namespace dlas::cli {

nlohmann::ordered_json prune_report_json(const PruneReport& r);
// The per-layer table and the summary line (channel pruning: kept channels per layer).
void print_prune_report(const PruneReport& r);

nlohmann::ordered_json quant_report_json(const QuantReport& r);
// int8: the activation ranges and scales; fp16 / bf16: the initializers converted.
void print_quant_report(const QuantReport& r);

}  // namespace dlas::cli
