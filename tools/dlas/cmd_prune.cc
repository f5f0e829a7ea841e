// dlas prune: L1 weight or block pruning of a model's Conv/Gemm weights, written as a dense
// ONNX model with zeros, or channel pruning, written as the smaller dense model
// (dlas/optimize/prune.h).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cmd_compress.h"
#include "dlas/core/file.h"
#include "dlas/model/onnx.h"
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
      check_output_folder(a->output);
      Graph g = load_model_from_args(*model);
      const PruneReport r = prune(g, spec);
      export_onnx_file(g, a->output);
      if (a->json) {
        nlohmann::ordered_json j;
        j["model"] = model->model;
        j["output"] = a->output;
        j.update(prune_report_json(r));
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      print_prune_report(r);
      std::printf("wrote %s\n", a->output.c_str());
      return 0;
    };
  });
}

}  // namespace dlas::cli
