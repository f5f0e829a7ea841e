// Accuracy of a graph on a dataset computed by the dlas engine (a compiled Plan), the number
// `dlas train` reports: the deployed graph, not the libtorch interpretation used to train it.
// No torch header here.
#include <algorithm>

#include "dlas/core/error.h"
#include "dlas/system/accuracy.h"
#include "dlas/system/plan.h"
#include "dlas/torch/train.h"

namespace dlas {

data::Accuracy engine_accuracy(const Graph& graph, const data::Dataset& ds,
                               const data::Preprocess& pre, int64_t batch, int threads,
                               int64_t limit) {
  DLAS_CHECK(graph.inputs.size() == 1 && !graph.inputs[0].shape.empty(), ErrorKind::kInvalidInput,
             "graph '", graph.name, "': accuracy needs one image input");
  // Re-batch when the graph allows it (Flatten-based heads do; a Reshape constant naming the
  // batch does not): far fewer plan runs than one image at a time.
  Graph g = graph;
  int64_t b = std::max<int64_t>(1, batch);
  if (g.inputs[0].shape[0] != b) {
    g.inputs[0].shape[0] = b;
    try {
      g.infer();
    } catch (const Error&) {
      g = graph;
      b = g.inputs[0].shape[0];
    }
  }
  PlanOptions po;
  po.threads = threads;
  Plan plan(std::move(g), po);
  data::Loader loader(ds, pre, {.batch = b, .limit = limit, .threads = std::max(1, threads)});
  // evaluate_plans pads the short last batch with zeros and scores only its real rows.
  return evaluate_plans({&plan}, loader).at(0);
}

}  // namespace dlas
