// Accuracy of a graph on a dataset computed by the dlas engine (a compiled Plan), the number
// `dlas train` reports: the deployed graph, not the libtorch interpretation used to train it.
// No torch header here.
#include <algorithm>
#include <cstring>

#include "dlas/core/error.h"
#include "dlas/model/train.h"
#include "dlas/system/plan.h"

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
  loader.start_epoch(0);
  data::Batch bt;
  data::Accuracy acc;
  const Shape in_shape = plan.graph().inputs[0].shape;
  while (loader.next(bt)) {
    const int64_t n = bt.images.dim(0);
    Shape want = in_shape;
    want[0] = n;
    DLAS_CHECK(bt.images.shape() == want, ErrorKind::kInvalidInput, "dataset '", ds.info().name,
               "': preprocessed images are ", shape_str(bt.images.shape()), ", the model takes ",
               shape_str(in_shape));
    Tensor input = bt.images;
    if (n != b) {  // the short last batch: pad with zeros, keep the first n rows
      input = Tensor(DType::kF32, in_shape);
      std::memset(input.raw(), 0, input.nbytes());
      std::memcpy(input.raw(), bt.images.raw(), bt.images.nbytes());
    }
    std::vector<Tensor> out = plan.run({input});
    Tensor logits = out.at(0);
    if (n != b) {
      const int64_t classes = logits.numel() / b;
      Tensor cut(DType::kF32, {n, classes});
      std::memcpy(cut.raw(), logits.raw(), cut.nbytes());
      logits = cut;
    }
    acc.add(logits, bt.labels);
  }
  return acc;
}

}  // namespace dlas
