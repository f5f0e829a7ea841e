// The report of `dlas prune`: a JSON object, or a table and a summary line on stdout.
#include <cstdio>

#include "cli.h"
#include "cmd_compress.h"

namespace dlas::cli {

namespace {

void print_channel_report(const PruneReport& r) {
  std::printf("%-44s %-10s %-18s %11s %11s  %s\n", "LAYER", "OP", "WEIGHT", "OUT KEPT", "IN KEPT",
              "NOTE");
  for (const PruneLayer& l : r.layers) {
    const std::string out =
        std::to_string(l.kept_outputs.size()) + "/" + std::to_string(l.out_channels);
    const std::string in =
        std::to_string(l.kept_inputs.size()) + "/" + std::to_string(l.in_channels);
    std::printf("%-44s %-10s %-18s %11s %11s  %s\n", short_name(l.node).c_str(), l.op.c_str(),
                shape_str(l.shape).c_str(), out.c_str(), in.c_str(), l.note.c_str());
  }
  std::printf(
      "\n%s: %s of %s prunable channels (%zu dependency groups) removed (%.2f%%); params %s "
      "-> %s; MACs %s -> %s (MAC ratio %.2fx, the expected speedup)\n",
      r.spec.str().c_str(), with_commas(r.pruned_channels).c_str(),
      with_commas(r.prunable_channels).c_str(), r.groups.size(), 100 * r.sparsity(),
      with_commas(r.params_before).c_str(), with_commas(r.params_after).c_str(),
      with_commas(r.macs_before).c_str(), with_commas(r.macs_after).c_str(), r.mac_ratio());
}

}  // namespace

nlohmann::ordered_json prune_report_json(const PruneReport& r) {
  nlohmann::ordered_json j;
  j["spec"] = r.spec.str();
  j["method"] = r.spec.method == PruneMethod::kBlock     ? "block"
                : r.spec.method == PruneMethod::kChannel ? "channel"
                                                         : "weight";
  j["scope"] = r.spec.scope == PruneScope::kLayer ? "layer" : "global";
  j["target_sparsity"] = r.spec.sparsity;
  j["prunable_params"] = r.prunable_params;
  j["prunable_zeros"] = r.prunable_zeros;
  j["sparsity"] = r.sparsity();
  j["total_params"] = r.total_params;
  j["total_zeros"] = r.total_zeros;
  j["total_sparsity"] = r.total_sparsity();
  const bool channel = r.spec.method == PruneMethod::kChannel;
  if (channel) {
    j["prunable_channels"] = r.prunable_channels;
    j["pruned_channels"] = r.pruned_channels;
    j["params_before"] = r.params_before;
    j["params_after"] = r.params_after;
    j["macs_before"] = r.macs_before;
    j["macs_after"] = r.macs_after;
    j["mac_ratio"] = r.mac_ratio();  // the expected speedup
    j["groups"] = nlohmann::ordered_json::array();
    for (const ChannelGroup& g : r.groups)
      j["groups"].push_back({{"convs", g.convs}, {"channels", g.channels}, {"kept", g.kept}});
  }
  j["layers"] = nlohmann::ordered_json::array();
  for (const PruneLayer& l : r.layers) {
    nlohmann::ordered_json e = {{"node", l.node},     {"op", l.op},
                                {"weight", l.weight}, {"shape", l.shape},
                                {"pruned", l.pruned}, {"params", l.params},
                                {"zeros", l.zeros},   {"sparsity", l.sparsity()}};
    if (channel) {  // dense with index lists of the kept channels
      e["out_channels"] = l.out_channels;
      e["in_channels"] = l.in_channels;
      e["kept_outputs"] = l.kept_outputs;
      e["kept_inputs"] = l.kept_inputs;
      if (!l.note.empty()) e["note"] = l.note;
    }
    j["layers"].push_back(std::move(e));
  }
  return j;
}

void print_prune_report(const PruneReport& r) {
  if (r.spec.method == PruneMethod::kChannel) {
    print_channel_report(r);
    return;
  }
  std::printf("%-44s %-10s %-18s %12s %12s %9s\n", "LAYER", "OP", "WEIGHT", "PARAMS", "ZEROS",
              "SPARSITY");
  for (const PruneLayer& l : r.layers) {
    std::printf("%-44s %-10s %-18s %12s %12s %8.2f%%%s\n", short_name(l.node).c_str(), l.op.c_str(),
                shape_str(l.shape).c_str(), with_commas(l.params).c_str(),
                with_commas(l.zeros).c_str(), 100 * l.sparsity(), l.pruned ? "" : "  (kept dense)");
  }
  std::printf("\n%s: %s of %s pruned weights zero (%.2f%%); all Conv/Gemm weights %.2f%% zero\n",
              r.spec.str().c_str(), with_commas(r.prunable_zeros).c_str(),
              with_commas(r.prunable_params).c_str(), 100 * r.sparsity(), 100 * r.total_sparsity());
}

}  // namespace dlas::cli
