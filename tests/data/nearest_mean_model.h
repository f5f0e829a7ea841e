// Real, accurate models built from the data, for the accuracy tests: the class means of the
// preprocessed training images of a 1x8x8, 4-class dataset, with bias -|m|^2/2 (argmax: the
// nearest class mean). Accurate only under the dataset's default preprocessing.
#pragma once

#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"

namespace dlas::test {

// The 4 class means (4 x 64, row-major) and their biases -|m|^2/2.
inline void class_means(const char* dataset, std::vector<float>& w, std::vector<float>& b) {
  const auto ds = data::open_dataset(dataset, data::Split::kTrain);
  data::Loader loader(*ds, data::default_preprocess(ds->info(), false), {.batch = 30});
  w.assign(4 * 64, 0.f);
  b.assign(4, 0.f);
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
}

// Flatten -> Gemm whose rows are the class means.
inline Graph nearest_mean_model(const char* dataset, int64_t batch = 1) {
  std::vector<float> w, b;
  class_means(dataset, w, b);
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

// The same as a CNN, for tests that prune (the first conv and the classifier stay dense):
// conv 1x1 (identity) -> conv 8x8 whose filters are the class means -> flatten -> identity
// classifier. wp:0.99 leaves ~3 of the 256 mean weights and falls to about chance.
inline Graph nearest_mean_cnn(const char* dataset) {
  std::vector<float> w, b;
  class_means(dataset, w, b);
  std::vector<float> eye(16, 0.f);
  for (int i = 0; i < 4; ++i) eye[i * 5] = 1.f;
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 1, 8, 8}});
  g.initializers["w0"] = Tensor::from_vector<float>({1, 1, 1, 1}, {1.f});
  g.initializers["b0"] = Tensor::from_vector<float>({1}, {0.f});
  g.initializers["w1"] = Tensor::from_vector<float>({4, 1, 8, 8}, w);
  g.initializers["b1"] = Tensor::from_vector<float>({4}, b);
  g.initializers["fc"] = Tensor::from_vector<float>({4, 4}, eye);
  g.initializers["fb"] = Tensor::from_vector<float>({4}, {0.f, 0.f, 0.f, 0.f});
  Node c0{"c0", "Conv", {"x", "w0", "b0"}, {"h0"}, {}};
  c0.attrs["kernel_shape"] = std::vector<int64_t>{1, 1};
  Node c1{"c1", "Conv", {"h0", "w1", "b1"}, {"h1"}, {}};
  c1.attrs["kernel_shape"] = std::vector<int64_t>{8, 8};
  Node flat{"flatten", "Flatten", {"h1"}, {"f"}, {}};
  flat.attrs["axis"] = int64_t{1};
  Node fc{"classifier", "Gemm", {"f", "fc", "fb"}, {"logits"}, {}};
  fc.attrs["transB"] = int64_t{1};
  g.nodes = {c0, c1, flat, fc};
  g.outputs = {"logits"};
  g.infer();
  return g;
}

}  // namespace dlas::test
