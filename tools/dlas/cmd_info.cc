// `dlas info`: parameters, MACs and a per-layer table of a model; for a compressed model also
// the bytes of its weights per storage format (cmd_info_formats.cc).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cmd_info.h"
#include "dlas/model/op_schema.h"

namespace dlas::cli {

namespace {

nlohmann::json value_json(const ValueInfo& v) {
  return {{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
}

void print_json(const Graph& g, const std::string& model, const std::string& applied,
                const WeightFormats* formats) {
  nlohmann::json j;
  j["model"] = model;
  j["compress"] = applied;
  j["params"] = g.param_count();
  j["macs"] = g.macs();
  j["weight_bytes"] = g.weight_bytes();
  j["nodes"] = g.nodes.size();
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : g.inputs) j["inputs"].push_back(value_json(in));
  j["outputs"] = nlohmann::json::array();
  for (const auto& o : g.outputs) j["outputs"].push_back(value_json(g.value(o)));
  j["layers"] = nlohmann::json::array();
  for (const Node& n : g.nodes) {
    nlohmann::json l = {{"name", n.name},
                        {"op", n.op},
                        {"params", node_param_count(g, n)},
                        {"macs", g.node_macs(n)}};
    l["output_shape"] = n.outputs.empty() || n.outputs[0].empty()
                            ? nlohmann::json(nullptr)
                            : nlohmann::json(g.value(n.outputs[0]).shape);
    j["layers"].push_back(l);
  }
  if (formats) j["sparse"] = weight_formats_json(*formats);
  std::cout << j.dump(2) << "\n";
}

void print_table(const Graph& g, const std::string& model, bool all_nodes) {
  const int64_t macs = g.macs();
  std::printf("model    %s (%s)\n", model.c_str(), g.name.c_str());
  for (const auto& in : g.inputs)
    std::printf("input    %s: %s%s\n", in.name.c_str(), dtype_name(in.dtype),
                shape_str(in.shape).c_str());
  for (const auto& o : g.outputs)
    std::printf("output   %s: %s%s\n", o.c_str(), dtype_name(g.value(o).dtype),
                shape_str(g.value(o).shape).c_str());
  std::printf("params   %s\n", with_commas(g.param_count()).c_str());
  std::printf("MACs     %s\n", with_commas(macs).c_str());
  std::printf("weights  %.2f MiB\n", static_cast<double>(g.weight_bytes()) / (1 << 20));
  std::printf("nodes    %zu\n\n", g.nodes.size());
  std::printf("%-44s %-20s %-22s %12s %15s %6s\n", "LAYER", "OP", "OUTPUT", "PARAMS", "MACS",
              "%MACS");
  for (const Node& n : g.nodes) {
    const int64_t p = node_param_count(g, n), m = g.node_macs(n);
    if (!all_nodes && p == 0 && m == 0) continue;
    const std::string shape =
        n.outputs.empty() || n.outputs[0].empty() ? "-" : shape_str(g.value(n.outputs[0]).shape);
    std::printf("%-44s %-20s %-22s %12s %15s %5.1f%%\n", short_name(n.name).c_str(), n.op.c_str(),
                shape.c_str(), with_commas(p).c_str(), with_commas(m).c_str(),
                macs ? 100.0 * static_cast<double>(m) / static_cast<double>(macs) : 0.0);
  }
}

int run_info(const ModelArgs& args, const std::string& compress, bool json, bool all_nodes) {
  compress_name(compress);  // a bad spec fails before the model loads
  Graph g = load_model_from_args(args);
  const PruneReport original = describe_weights(g);
  PruneReport report;
  const std::string applied = apply_compress(g, compress, &report);
  const bool channel = applied != "dense" && report.spec.method == PruneMethod::kChannel;
  // The formats section: asked for, or the weights already hold zeros (a pruned model).
  std::optional<WeightFormats> formats;
  if (applied != "dense" || describe_weights(g).total_zeros > 0)
    formats = channel ? weight_formats(g, &report, &original) : weight_formats(g);
  if (json) {
    print_json(g, args.model, applied, formats ? &*formats : nullptr);
    return 0;
  }
  print_table(g, args.model, all_nodes);
  if (formats) print_weight_formats(*formats, applied, channel ? &report : nullptr);
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand("info", "Parameters, MACs and a per-layer table of a model");
  auto args = std::make_shared<ModelArgs>();
  auto json = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  auto compress = std::make_shared<std::string>("dense");
  add_model_args(*cmd, *args);
  cmd->add_option(
         "--compress", *compress,
         "apply a compression spec first (dense | wp:S | bp:BxC:S | cp:S) and report zeros and "
         "bytes per format (dense, CSR, BSR 4x1); also reported for any model whose "
         "weights have zeros")
      ->default_val("dense");
  cmd->add_flag("--json", *json, "print one JSON object (keys: model, params, macs, layers, ...)");
  cmd->add_flag("--all-nodes", *all, "list every node, not only those with weights or MACs");
  cmd->callback([&run, args, json, all, compress] {
    run = [args, json, all, compress] { return run_info(*args, *compress, *json, *all); };
  });
}

}  // namespace dlas::cli
