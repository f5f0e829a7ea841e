// The dlas command line: thin wrappers that parse flags and call the library.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "dlas/system/loader.h"

namespace dlas::cli {

// Flags shared by every command that takes a MODEL argument.
struct ModelArgs {
  std::string model;
  std::vector<std::string> input_shapes;  // "name=1x3x224x224" or "1x3x224x224"
  int64_t batch = 1;
  int64_t in_channels = -1;
  int64_t image_size = -1;
  int64_t num_classes = -1;
  double width_mult = 1.0;
  uint64_t seed = 0;
};
void add_model_args(CLI::App& cmd, ModelArgs& args);
// Loads the model named by args; errors carry the model path or node.
Graph load_model_from_args(const ModelArgs& args);

// Each command registers itself and sets `run` to its action when selected.
using Action = std::function<int()>;
void add_zoo_command(CLI::App& app, Action& run);
void add_info_command(CLI::App& app, Action& run);
void add_run_command(CLI::App& app, Action& run);
void add_export_command(CLI::App& app, Action& run);
void add_hw_command(CLI::App& app, Action& run);

// Formats 1234567 as "1,234,567".
std::string with_commas(int64_t v);

}  // namespace dlas::cli
