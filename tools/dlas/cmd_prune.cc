// dlas prune: L1 weight or block pruning of a model's Conv/Gemm weights, written as a dense
// ONNX model with zeros, or channel pruning, written as the smaller dense model
// (dlas/optimize/prune.h).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "dlas/optimize/prune.h"

namespace dlas::cli {

namespace {

struct PruneArgs {
  std::string method = "weight";
  std::string sparsity;
  std::string block;
  std::string scope = "global";
  int round = 1;  // channel: kept channels per group rounded up to a multiple
  bool prune_first = false, prune_classifier = false, json = false;
  std::string output;
};

// The spec text the flags describe, parsed by parse_prune_spec (one syntax, one set of errors).
PruneSpec spec_from_args(const PruneArgs& a) {
  DLAS_CHECK(a.block.empty() || a.method == "block", ErrorKind::kUsage,
             "--block applies to --method block only");
  std::string text;
  if (a.method == "weight")
    text = "wp:" + a.sparsity;
  else if (a.method == "block")
    text = "bp:" + (a.block.empty() ? std::string("4x1") : a.block) + ":" + a.sparsity;
  else
    text = "cp:" + a.sparsity;
  DLAS_CHECK(a.round == 1 || a.method == "channel", ErrorKind::kUsage,
             "--round applies to --method channel only");
  if (a.scope == "layer") text += ":layer";
  if (a.round > 1) text += ":round" + std::to_string(a.round);
  PruneSpec spec = parse_prune_spec(text);
  spec.prune_first = a.prune_first;
  spec.prune_classifier = a.prune_classifier;
  return spec;
}

nlohmann::ordered_json report_json(const PruneReport& r) {
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

std::string short_name(const std::string& node) {
  return node.size() > 44 ? "..." + node.substr(node.size() - 41) : node;
}

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

void add_prune_command(CLI::App& app, Action& run) {
  auto* cmd = app.add_subcommand(
      "prune", "Prune a model's Conv/Gemm weights (L1 magnitude) and write it as ONNX");
  auto model = std::make_shared<ModelArgs>();
  auto a = std::make_shared<PruneArgs>();
  add_model_args(*cmd, *model);
  cmd->add_option("--method", a->method,
                  "weight (unstructured), block (BxC blocks by L1 norm) or channel (conv output "
                  "channels by normalised L1 norm, removed: a smaller dense model)")
      ->default_val("weight")
      ->check(CLI::IsMember({"weight", "block", "channel"}));
  cmd->add_option("--sparsity", a->sparsity,
                  "fraction of weights (blocks, prunable channels) to prune, in [0, 1)")
      ->required();
  cmd->add_option("--block", a->block,
                  "block: B output channels x C reduction elements (default 4x1)");
  cmd->add_option("--scope", a->scope,
                  "global: one threshold over all pruned layers; layer: each layer to the sparsity")
      ->default_val("global")
      ->check(CLI::IsMember({"global", "layer"}));
  cmd->add_option("--round", a->round,
                  "channel: round every dependency group's kept channels up to a multiple of N "
                  "(fills vector lanes and GEMM tiles; the MAC ratio is the pruned model's)")
      ->default_val(1)
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--prune-first", a->prune_first,
                "also prune the first conv (kept dense by default)");
  cmd->add_flag("--prune-classifier", a->prune_classifier,
                "also prune the classifier (the last Conv/Gemm; kept dense by default; channel "
                "pruning never removes its outputs)");
  cmd->add_option("-o,--output", a->output, "output .onnx path")->required();
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([&run, model, a] {
    run = [model, a] {
      const PruneSpec spec = spec_from_args(*a);  // bad flags fail before the model loads
      const std::filesystem::path dir = std::filesystem::path(a->output).parent_path();
      DLAS_CHECK(dir.empty() || std::filesystem::is_directory(dir), ErrorKind::kInvalidInput,
                 a->output, ": folder '", dir.string(), "' does not exist");
      Graph g = load_model_from_args(*model);
      const PruneReport r = prune(g, spec);
      export_onnx_file(g, a->output);
      if (a->json) {
        nlohmann::ordered_json j;
        j["model"] = model->model;
        j["output"] = a->output;
        j.update(report_json(r));
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      if (spec.method == PruneMethod::kChannel) {
        print_channel_report(r);
        std::printf("wrote %s\n", a->output.c_str());
        return 0;
      }
      std::printf("%-44s %-10s %-18s %12s %12s %9s\n", "LAYER", "OP", "WEIGHT", "PARAMS", "ZEROS",
                  "SPARSITY");
      for (const PruneLayer& l : r.layers) {
        const std::string name =
            l.node.size() > 44 ? "..." + l.node.substr(l.node.size() - 41) : l.node;
        std::printf("%-44s %-10s %-18s %12s %12s %8.2f%%%s\n", name.c_str(), l.op.c_str(),
                    shape_str(l.shape).c_str(), with_commas(l.params).c_str(),
                    with_commas(l.zeros).c_str(), 100 * l.sparsity(),
                    l.pruned ? "" : "  (kept dense)");
      }
      std::printf(
          "\n%s: %s of %s pruned weights zero (%.2f%%); all Conv/Gemm weights %.2f%% zero\n",
          spec.str().c_str(), with_commas(r.prunable_zeros).c_str(),
          with_commas(r.prunable_params).c_str(), 100 * r.sparsity(), 100 * r.total_sparsity());
      std::printf("wrote %s\n", a->output.c_str());
      return 0;
    };
  });
}

}  // namespace dlas::cli
