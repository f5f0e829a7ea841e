#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "cli.h"
#include "dlas/model/op_schema.h"
#include "dlas/optimize/prune.h"

namespace dlas::cli {

namespace {

// Trainable parameters read by one node (initializer inputs, minus BN statistics).
int64_t node_params(const Graph& g, const Node& n) {
  const OpSchema* s = find_op_schema(n.op);
  int64_t total = 0;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Tensor* t = g.constant(n.inputs[i]);
    if (!t || !is_float(t->dtype())) continue;
    bool buffer = false;
    if (s)
      for (int b : s->buffer_inputs) buffer |= b == static_cast<int>(i);
    if (!buffer) total += t->numel();
  }
  return total;
}

nlohmann::json value_json(const ValueInfo& v) {
  return {{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"shape", v.shape}};
}

// Zeros and bytes per weight format of every Conv/Gemm weight (CSR and BSR 4x1 as
// dlas/algo/sparse.h stores them, one matrix per group).
nlohmann::ordered_json sparsity_json(const Graph& g) {
  const PruneReport r = describe_weights(g);
  nlohmann::ordered_json j;
  int64_t dense = 0, csr = 0, bsr = 0;
  j["layers"] = nlohmann::ordered_json::array();
  for (const PruneLayer& l : r.layers) {
    const int64_t d = l.params * static_cast<int64_t>(sizeof(float));
    const auto c = static_cast<int64_t>(layer_sparse_bytes(g, l, {1, 1}));
    const auto b = static_cast<int64_t>(layer_sparse_bytes(g, l, {4, 1}));
    dense += d, csr += c, bsr += b;
    j["layers"].push_back({{"node", l.node},
                           {"op", l.op},
                           {"params", l.params},
                           {"zeros", l.zeros},
                           {"sparsity", l.sparsity()},
                           {"dense_bytes", d},
                           {"csr_bytes", c},
                           {"bsr4x1_bytes", b}});
  }
  j["params"] = r.total_params;
  j["zeros"] = r.total_zeros;
  j["sparsity"] = r.total_sparsity();
  j["dense_bytes"] = dense;
  j["csr_bytes"] = csr;
  j["bsr4x1_bytes"] = bsr;
  j["csr_ratio"] = csr ? static_cast<double>(dense) / static_cast<double>(csr) : 0.0;
  j["bsr4x1_ratio"] = bsr ? static_cast<double>(dense) / static_cast<double>(bsr) : 0.0;
  return j;
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
    run = [args, json, all, compress] {
      compress_name(*compress);  // a bad spec fails before the model loads
      Graph g = load_model_from_args(*args);
      const std::string applied = apply_compress(g, *compress);
      const int64_t params = g.param_count(), macs = g.macs();
      // The sparsity section: asked for, or the weights already hold zeros (a pruned model).
      nlohmann::ordered_json sparse;
      if (applied != "dense" || describe_weights(g).total_zeros > 0) sparse = sparsity_json(g);
      if (*json) {
        nlohmann::json j;
        j["model"] = args->model;
        j["compress"] = applied;
        j["params"] = params;
        j["macs"] = macs;
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
                              {"params", node_params(g, n)},
                              {"macs", g.node_macs(n)}};
          l["output_shape"] = n.outputs.empty() || n.outputs[0].empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(g.value(n.outputs[0]).shape);
          j["layers"].push_back(l);
        }
        if (!sparse.is_null()) j["sparse"] = sparse;
        std::cout << j.dump(2) << "\n";
        return 0;
      }
      std::printf("model    %s (%s)\n", args->model.c_str(), g.name.c_str());
      for (const auto& in : g.inputs)
        std::printf("input    %s: %s%s\n", in.name.c_str(), dtype_name(in.dtype),
                    shape_str(in.shape).c_str());
      for (const auto& o : g.outputs)
        std::printf("output   %s: %s%s\n", o.c_str(), dtype_name(g.value(o).dtype),
                    shape_str(g.value(o).shape).c_str());
      std::printf("params   %s\n", with_commas(params).c_str());
      std::printf("MACs     %s\n", with_commas(macs).c_str());
      std::printf("weights  %.2f MiB\n", static_cast<double>(g.weight_bytes()) / (1 << 20));
      std::printf("nodes    %zu\n\n", g.nodes.size());
      std::printf("%-44s %-20s %-22s %12s %15s %6s\n", "LAYER", "OP", "OUTPUT", "PARAMS", "MACS",
                  "%MACS");
      for (const Node& n : g.nodes) {
        const int64_t p = node_params(g, n), m = g.node_macs(n);
        if (!*all && p == 0 && m == 0) continue;
        const std::string shape = n.outputs.empty() || n.outputs[0].empty()
                                      ? "-"
                                      : shape_str(g.value(n.outputs[0]).shape);
        std::string name = n.name.size() > 44 ? "..." + n.name.substr(n.name.size() - 41) : n.name;
        std::printf("%-44s %-20s %-22s %12s %15s %5.1f%%\n", name.c_str(), n.op.c_str(),
                    shape.c_str(), with_commas(p).c_str(), with_commas(m).c_str(),
                    macs ? 100.0 * static_cast<double>(m) / static_cast<double>(macs) : 0.0);
      }
      if (sparse.is_null()) return 0;
      std::printf(
          "\nweights of Conv/Gemm layers%s, bytes per format (CSR and BSR 4x1 with indices)\n",
          applied == "dense" ? "" : (" after " + applied).c_str());
      std::printf("%-44s %12s %8s %12s %12s %12s\n", "LAYER", "PARAMS", "ZEROS", "DENSE", "CSR",
                  "BSR4X1");
      for (const auto& l : sparse["layers"]) {
        std::string name = l["node"].get<std::string>();
        if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
        std::printf("%-44s %12s %7.2f%% %12s %12s %12s\n", name.c_str(),
                    with_commas(l["params"].get<int64_t>()).c_str(),
                    100 * l["sparsity"].get<double>(),
                    with_commas(l["dense_bytes"].get<int64_t>()).c_str(),
                    with_commas(l["csr_bytes"].get<int64_t>()).c_str(),
                    with_commas(l["bsr4x1_bytes"].get<int64_t>()).c_str());
      }
      std::printf("%-44s %12s %7.2f%% %12s %12s %12s\n", "total",
                  with_commas(sparse["params"].get<int64_t>()).c_str(),
                  100 * sparse["sparsity"].get<double>(),
                  with_commas(sparse["dense_bytes"].get<int64_t>()).c_str(),
                  with_commas(sparse["csr_bytes"].get<int64_t>()).c_str(),
                  with_commas(sparse["bsr4x1_bytes"].get<int64_t>()).c_str());
      std::printf("compression ratio (dense / format): CSR %.2fx, BSR 4x1 %.2fx\n",
                  sparse["csr_ratio"].get<double>(), sparse["bsr4x1_ratio"].get<double>());
      return 0;
    };
  });
}

}  // namespace dlas::cli
