#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
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

// Bytes of one index list of `kept` out of `n` channels (features): uint16 entries when
// every index fits, int32 otherwise (as the sparse formats store column indices); none
// when nothing was removed (the list would be 0..n-1).
int64_t index_list_bytes(size_t kept, int64_t n) {
  if (static_cast<int64_t>(kept) == n) return 0;
  return static_cast<int64_t>(kept) * (n <= 65536 ? 2 : 4);
}

// Zeros and bytes per weight format of every Conv/Gemm weight (CSR and BSR 4x1 as
// dlas/algo/sparse.h stores them, one matrix per group). After channel pruning (`channels`
// given) also the paper's "dense with an index list of kept channels" format: the shrunk
// dense weights plus the kept output and input channel indices of every side that lost
// channels, against the original dense bytes.
nlohmann::ordered_json sparsity_json(const Graph& g, const PruneReport* channels,
                                     const std::map<std::string, int64_t>& original_params) {
  const PruneReport r = describe_weights(g);
  nlohmann::ordered_json j;
  int64_t dense = 0, csr = 0, bsr = 0, original = 0, indexed = 0;
  j["layers"] = nlohmann::ordered_json::array();
  for (const PruneLayer& l : r.layers) {
    const int64_t d = l.params * static_cast<int64_t>(sizeof(float));
    const auto c = static_cast<int64_t>(layer_sparse_bytes(g, l, {1, 1}));
    const auto b = static_cast<int64_t>(layer_sparse_bytes(g, l, {4, 1}));
    dense += d, csr += c, bsr += b;
    nlohmann::ordered_json e = {
        {"node", l.node},           {"op", l.op},       {"params", l.params}, {"zeros", l.zeros},
        {"sparsity", l.sparsity()}, {"dense_bytes", d}, {"csr_bytes", c},     {"bsr4x1_bytes", b}};
    if (channels)
      for (const PruneLayer& p : channels->layers) {
        if (p.weight != l.weight) continue;
        const int64_t o = original_params.at(l.weight) * static_cast<int64_t>(sizeof(float));
        const int64_t idx = index_list_bytes(p.kept_outputs.size(), p.out_channels) +
                            index_list_bytes(p.kept_inputs.size(), p.in_channels);
        original += o, indexed += d + idx;
        e["original_dense_bytes"] = o;
        e["out_kept"] = p.kept_outputs.size();
        e["out_channels"] = p.out_channels;
        e["in_kept"] = p.kept_inputs.size();
        e["in_channels"] = p.in_channels;
        e["index_bytes"] = idx;
        e["dense_index_bytes"] = d + idx;
      }
    j["layers"].push_back(std::move(e));
  }
  j["params"] = r.total_params;
  j["zeros"] = r.total_zeros;
  j["sparsity"] = r.total_sparsity();
  j["dense_bytes"] = dense;
  j["csr_bytes"] = csr;
  j["bsr4x1_bytes"] = bsr;
  j["csr_ratio"] = csr ? static_cast<double>(dense) / static_cast<double>(csr) : 0.0;
  j["bsr4x1_ratio"] = bsr ? static_cast<double>(dense) / static_cast<double>(bsr) : 0.0;
  if (channels) {
    j["original_dense_bytes"] = original;
    j["dense_index_bytes"] = indexed;
    j["dense_index_ratio"] =
        indexed ? static_cast<double>(original) / static_cast<double>(indexed) : 0.0;
  }
  return j;
}

std::string short_node(std::string name) {
  return name.size() > 44 ? "..." + name.substr(name.size() - 41) : name;
}

// Channel pruning: per layer kept/original channels and bytes as the original dense
// weights, the shrunk dense weights, and shrunk dense plus index lists (CSR and BSR of a
// shrunk model hold no zeros to drop, so they are left out).
void print_channel_bytes(const nlohmann::ordered_json& sparse, const std::string& applied,
                         const PruneReport& report) {
  std::printf(
      "\nweights of Conv/Gemm layers after %s, bytes per format (original dense, shrunk dense, "
      "shrunk dense + index lists of kept channels)\n",
      applied.c_str());
  std::printf("%-44s %11s %11s %14s %12s %12s\n", "LAYER", "OUT KEPT", "IN KEPT", "ORIGINAL",
              "DENSE", "DENSE+INDEX");
  for (const auto& l : sparse["layers"]) {
    if (!l.contains("original_dense_bytes")) continue;
    const std::string out = std::to_string(l["out_kept"].get<int64_t>()) + "/" +
                            std::to_string(l["out_channels"].get<int64_t>());
    const std::string in = std::to_string(l["in_kept"].get<int64_t>()) + "/" +
                           std::to_string(l["in_channels"].get<int64_t>());
    std::printf("%-44s %11s %11s %14s %12s %12s\n", short_node(l["node"]).c_str(), out.c_str(),
                in.c_str(), with_commas(l["original_dense_bytes"].get<int64_t>()).c_str(),
                with_commas(l["dense_bytes"].get<int64_t>()).c_str(),
                with_commas(l["dense_index_bytes"].get<int64_t>()).c_str());
  }
  const int64_t original = sparse["original_dense_bytes"], dense = sparse["dense_bytes"],
                indexed = sparse["dense_index_bytes"];
  std::printf("%-44s %11s %11s %14s %12s %12s\n", "total", "", "", with_commas(original).c_str(),
              with_commas(dense).c_str(), with_commas(indexed).c_str());
  std::printf(
      "compression ratio (original dense / format): shrunk dense %.2fx, dense + index lists "
      "%.2fx (index lists %s bytes); %zu dependency groups, %s of %s group channels removed; "
      "MAC ratio %.2fx\n",
      dense ? static_cast<double>(original) / static_cast<double>(dense) : 0.0,
      sparse["dense_index_ratio"].get<double>(), with_commas(indexed - dense).c_str(),
      report.groups.size(), with_commas(report.pruned_channels).c_str(),
      with_commas(report.prunable_channels).c_str(), report.mac_ratio());
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
      std::map<std::string, int64_t> original_params;  // weight -> elements before pruning
      for (const PruneLayer& l : describe_weights(g).layers) original_params[l.weight] = l.params;
      PruneReport report;
      const std::string applied = apply_compress(g, *compress, &report);
      const bool channel = applied != "dense" && report.spec.method == PruneMethod::kChannel;
      const int64_t params = g.param_count(), macs = g.macs();
      // The sparsity section: asked for, or the weights already hold zeros (a pruned model).
      nlohmann::ordered_json sparse;
      if (applied != "dense" || describe_weights(g).total_zeros > 0)
        sparse = sparsity_json(g, channel ? &report : nullptr, original_params);
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
      if (channel) {
        print_channel_bytes(sparse, applied, report);
        return 0;
      }
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
