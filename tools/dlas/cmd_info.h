// `dlas info`'s weight-format section (cmd_info_formats.cc), for compressed models.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "dlas/optimize/weight_formats.h"

namespace dlas::cli {

// The "sparse" object of `info --json`.
nlohmann::ordered_json weight_formats_json(const WeightFormats& w);
// The table of bytes per format after `applied` ("dense": the model's own zeros); with
// channel pruning (`channels`) the original / shrunk dense / dense + index lists table.
void print_weight_formats(const WeightFormats& w, const std::string& applied,
                          const PruneReport* channels);

}  // namespace dlas::cli
