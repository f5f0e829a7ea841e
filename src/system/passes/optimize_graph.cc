// The one pass list (by --opt-level), as a table, and the loop that runs it with an
// optional lowering log (the graph as text after each pass).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dlas/core/error.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// The file of one step of the lowering log: "03-fold_batchnorm.txt".
fs::path dump_path(const std::string& dir, size_t step, const std::string& name) {
  char prefix[16];
  std::snprintf(prefix, sizeof prefix, "%02zu-", step);
  return fs::path(dir) / (prefix + name + ".txt");
}

void dump_graph(const std::string& dir, size_t step, const std::string& name,
                const std::string& header, const Graph& graph) {
  const fs::path path = dump_path(dir, step, name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << "# " << header << "\n" << graph.to_string();
  DLAS_CHECK(out.good(), ErrorKind::kInvalidInput, "pass dump: cannot write ", path.string());
}

}  // namespace

const std::vector<GraphPass>& graph_passes() {
  static const std::vector<GraphPass> passes = {
      {"fold_constants", 1,
       [](Graph& g) {
         fold_constants(g);
         return 0;
       },
       nullptr},
      {"eliminate_dead_code", 1,
       [](Graph& g) {
         eliminate_dead_code(g);
         return 0;
       },
       nullptr},
      {"eliminate_identity", 1, eliminate_identity, nullptr},
      {"einsum_to_matmul", 1, einsum_to_matmul, nullptr},
      {"fold_pad", 2, fold_pad, nullptr},
      {"trim_conv_taps", 2, trim_conv_taps, nullptr},
      {"fold_batchnorm", 2, fold_batchnorm, &PassReport::batchnorms_folded},
      {"fuse_residual_add", 3, fuse_residual_add, &PassReport::residuals_fused},
      {"fuse_gelu", 3, fuse_gelu, nullptr},
      {"fuse_layer_norm", 3, fuse_layer_norm, nullptr},
      {"fuse_linear", 3, fuse_linear, &PassReport::linears_fused},
      {"fuse_activation", 3, fuse_activation, &PassReport::activations_fused},
      {"fuse_channel_affine", 3, fuse_channel_affine, &PassReport::affines_fused},
      {"fuse_quantized_conv", 3, fuse_quantized_conv, &PassReport::qconvs_fused},
      {"fuse_quantized_fc", 3, fuse_quantized_fc, &PassReport::qfcs_fused},
      {"fold_linear_scale", 3, fold_linear_scale, nullptr},
      {"fuse_quantized_lookup", 3, fuse_quantized_lookup, &PassReport::lookups_fused},
      {"fuse_channel_scale_quantize", 3, fuse_channel_scale_quantize, nullptr},
      // Last: weights left quantized by the passes above (no int8 op reads them).
      {"fold_dequantize", 1, fold_dequantize, nullptr},
  };
  return passes;
}

PassReport optimize_graph(Graph& graph, const PassOptions& options) {
  const int level = options.opt_level;
  DLAS_CHECK(level >= 0 && level <= 3, ErrorKind::kUsage, "--opt-level ", level, " is not in 0..3");
  const std::string& dir = options.dump_dir;
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    DLAS_CHECK(!ec && fs::is_directory(dir), ErrorKind::kInvalidInput,
               "pass dump: cannot create the folder ", dir, ec ? ": " + ec.message() : "");
    dump_graph(dir, 0, "input", str("before the passes (opt level ", level, ")"), graph);
  }
  PassReport r;
  r.nodes_before = static_cast<int>(graph.nodes.size());
  const std::vector<GraphPass>& passes = graph_passes();
  for (size_t i = 0; i < passes.size(); ++i) {
    const GraphPass& p = passes[i];
    if (p.opt_level > level) continue;
    const int count = p.run(graph);
    if (p.count) r.*p.count = count;
    if (!dir.empty())
      dump_graph(dir, i + 1, p.name,
                 str("after ", p.name, ": ", count, " rewrites, ", graph.nodes.size(), " nodes"),
                 graph);
  }
  graph.infer();
  r.nodes_after = static_cast<int>(graph.nodes.size());
  return r;
}

PassReport optimize_graph(Graph& graph, int opt_level) {
  PassOptions options;
  options.opt_level = opt_level;
  if (const char* dir = std::getenv("DLAS_DUMP_PASSES"); dir && *dir) options.dump_dir = dir;
  return optimize_graph(graph, options);
}

}  // namespace dlas
