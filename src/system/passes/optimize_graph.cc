// The one pass list (by --opt-level).
#include "dlas/core/error.h"
#include "dlas/system/passes.h"

namespace dlas {

PassReport optimize_graph(Graph& graph, int opt_level) {
  DLAS_CHECK(opt_level >= 0 && opt_level <= 3, ErrorKind::kUsage, "--opt-level ", opt_level,
             " is not in 0..3");
  PassReport r;
  r.nodes_before = static_cast<int>(graph.nodes.size());
  if (opt_level >= 1) {
    fold_constants(graph);
    eliminate_dead_code(graph);
  }
  if (opt_level >= 2) r.batchnorms_folded = fold_batchnorm(graph);
  if (opt_level >= 3) {
    r.residuals_fused = fuse_residual_add(graph);
    r.activations_fused = fuse_activation(graph);
    r.qconvs_fused = fuse_quantized_conv(graph);
  }
  if (opt_level >= 1) fold_dequantize(graph);
  graph.infer();
  r.nodes_after = static_cast<int>(graph.nodes.size());
  return r;
}

}  // namespace dlas
