// A real, accurate model built from the data, for the accuracy tests: Flatten -> Gemm whose
// rows are the class means of the preprocessed training images of a 1x8x8, 4-class dataset
// and whose bias is -|m|^2/2 (argmax: the nearest class mean). Accurate only under the
// dataset's default preprocessing.
#pragma once

#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"

namespace dlas::test {

inline Graph nearest_mean_model(const char* dataset, int64_t batch = 1) {
  const auto ds = data::open_dataset(dataset, data::Split::kTrain);
  data::Loader loader(*ds, data::default_preprocess(ds->info(), false), {.batch = 30});
  std::vector<float> w(4 * 64, 0.f), b(4, 0.f);
  std::vector<int> count(4, 0);
  data::Batch images;
  while (loader.next(images))
    for (int64_t i = 0; i < images.size(); ++i) {
      const int y = images.labels[i];
      ++count[y];
      for (int k = 0; k < 64; ++k) w[y * 64 + k] += images.images.data<float>()[i * 64 + k];
    }
  for (int c = 0; c < 4; ++c)
    for (int k = 0; k < 64; ++k) {
      w[c * 64 + k] /= static_cast<float>(count[c]);
      b[c] -= 0.5f * w[c * 64 + k] * w[c * 64 + k];
    }
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {batch, 1, 8, 8}});
  g.initializers["w"] = Tensor::from_vector<float>({4, 64}, w);
  g.initializers["b"] = Tensor::from_vector<float>({4}, b);
  Node flat{"flatten", "Flatten", {"x"}, {"f"}, {}};
  flat.attrs["axis"] = int64_t{1};
  Node gemm{"fc", "Gemm", {"f", "w", "b"}, {"logits"}, {}};
  gemm.attrs["transB"] = int64_t{1};
  g.nodes = {flat, gemm};
  g.outputs = {"logits"};
  g.infer();
  return g;
}

}  // namespace dlas::test
