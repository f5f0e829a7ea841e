// `dlas info`: bytes of the Conv/Gemm weights per storage format (dlas/optimize/weight_formats.h)
// as JSON and as tables.
#include <cstdio>

#include "cli.h"
#include "cmd_info.h"

namespace dlas::cli {

namespace {

// Channel pruning: per layer kept/original channels and bytes as the original dense weights,
// the shrunk dense weights, and shrunk dense plus index lists (CSR and BSR of a shrunk model
// hold no zeros to drop, so they are left out).
void print_channel_bytes(const WeightFormats& w, const std::string& applied,
                         const PruneReport& report) {
  std::printf(
      "\nweights of Conv/Gemm layers after %s, bytes per format (original dense, shrunk dense, "
      "shrunk dense + index lists of kept channels)\n",
      applied.c_str());
  std::printf("%-44s %11s %11s %14s %12s %12s\n", "LAYER", "OUT KEPT", "IN KEPT", "ORIGINAL",
              "DENSE", "DENSE+INDEX");
  for (const LayerFormatBytes& l : w.layers) {
    if (!l.channel) continue;
    const std::string out = str(l.out_kept, "/", l.out_channels);
    const std::string in = str(l.in_kept, "/", l.in_channels);
    std::printf("%-44s %11s %11s %14s %12s %12s\n", short_name(l.node).c_str(), out.c_str(),
                in.c_str(), with_commas(l.original_dense_bytes).c_str(),
                with_commas(l.dense_bytes).c_str(), with_commas(l.dense_index_bytes).c_str());
  }
  std::printf("%-44s %11s %11s %14s %12s %12s\n", "total", "", "",
              with_commas(w.original_dense_bytes).c_str(), with_commas(w.dense_bytes).c_str(),
              with_commas(w.dense_index_bytes).c_str());
  std::printf(
      "compression ratio (original dense / format): shrunk dense %.2fx, dense + index lists "
      "%.2fx (index lists %s bytes); %zu dependency groups, %s of %s group channels removed; "
      "MAC ratio %.2fx\n",
      WeightFormats::ratio(w.original_dense_bytes, w.dense_bytes), w.dense_index_ratio(),
      with_commas(w.dense_index_bytes - w.dense_bytes).c_str(), report.groups.size(),
      with_commas(report.pruned_channels).c_str(), with_commas(report.prunable_channels).c_str(),
      report.mac_ratio());
}

}  // namespace

nlohmann::ordered_json weight_formats_json(const WeightFormats& w) {
  nlohmann::ordered_json j;
  j["layers"] = nlohmann::ordered_json::array();
  for (const LayerFormatBytes& l : w.layers) {
    nlohmann::ordered_json e = {{"node", l.node},           {"op", l.op},
                                {"params", l.params},       {"zeros", l.zeros},
                                {"sparsity", l.sparsity},   {"dense_bytes", l.dense_bytes},
                                {"csr_bytes", l.csr_bytes}, {"bsr4x1_bytes", l.bsr4x1_bytes}};
    if (l.channel) {
      e["original_dense_bytes"] = l.original_dense_bytes;
      e["out_kept"] = l.out_kept;
      e["out_channels"] = l.out_channels;
      e["in_kept"] = l.in_kept;
      e["in_channels"] = l.in_channels;
      e["index_bytes"] = l.index_bytes;
      e["dense_index_bytes"] = l.dense_index_bytes;
    }
    j["layers"].push_back(std::move(e));
  }
  j["params"] = w.params;
  j["zeros"] = w.zeros;
  j["sparsity"] = w.sparsity;
  j["dense_bytes"] = w.dense_bytes;
  j["csr_bytes"] = w.csr_bytes;
  j["bsr4x1_bytes"] = w.bsr4x1_bytes;
  j["csr_ratio"] = w.csr_ratio();
  j["bsr4x1_ratio"] = w.bsr4x1_ratio();
  if (w.channel) {
    j["original_dense_bytes"] = w.original_dense_bytes;
    j["dense_index_bytes"] = w.dense_index_bytes;
    j["dense_index_ratio"] = w.dense_index_ratio();
  }
  return j;
}

void print_weight_formats(const WeightFormats& w, const std::string& applied,
                          const PruneReport* channels) {
  if (channels) {
    print_channel_bytes(w, applied, *channels);
    return;
  }
  std::printf("\nweights of Conv/Gemm layers%s, bytes per format (CSR and BSR 4x1 with indices)\n",
              applied == "dense" ? "" : (" after " + applied).c_str());
  std::printf("%-44s %12s %8s %12s %12s %12s\n", "LAYER", "PARAMS", "ZEROS", "DENSE", "CSR",
              "BSR4X1");
  auto row = [](const std::string& name, int64_t params, double sparsity, int64_t dense,
                int64_t csr, int64_t bsr) {
    std::printf("%-44s %12s %7.2f%% %12s %12s %12s\n", name.c_str(), with_commas(params).c_str(),
                100 * sparsity, with_commas(dense).c_str(), with_commas(csr).c_str(),
                with_commas(bsr).c_str());
  };
  for (const LayerFormatBytes& l : w.layers)
    row(short_name(l.node), l.params, l.sparsity, l.dense_bytes, l.csr_bytes, l.bsr4x1_bytes);
  row("total", w.params, w.sparsity, w.dense_bytes, w.csr_bytes, w.bsr4x1_bytes);
  std::printf("compression ratio (dense / format): CSR %.2fx, BSR 4x1 %.2fx\n", w.csr_ratio(),
              w.bsr4x1_ratio());
}

}  // namespace dlas::cli
