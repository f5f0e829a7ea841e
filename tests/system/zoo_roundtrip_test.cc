// Every zoo model survives ONNX export -> import -> fold/infer (the load path) with the
// same topology, parameters and bit-identical reference outputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dlas/model/onnx.h"
#include "dlas/model/zoo.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "dlas/system/passes.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

Tensor seeded_input(const Shape& shape) {
  Tensor t(DType::kF32, shape);
  float* p = t.data<float>();
  uint32_t s = 12345;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return t;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const ZooEntry& e : zoo_models()) names.push_back(e.name);
  return names;
}

class ZooOnnxRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooOnnxRoundTrip, SameGraphAndOutputs) {
  const std::string& name = GetParam();
  ZooOptions options;
  options.seed = 3;
  // ImageNet models at 64x64 (they pool globally) keep the reference runs short.
  if (find_zoo_model(name)->dataset != "cifar10") options.image_size = 64;
  Graph original = build_zoo_model(name, options);

  std::string bytes = export_onnx_bytes(original);
  Graph imported = import_onnx_bytes(bytes, name + ".onnx");
  fold_constants(imported);  // what load_model does after import

  EXPECT_EQ(imported.nodes.size(), original.nodes.size());
  EXPECT_EQ(imported.initializers.size(), original.initializers.size());
  EXPECT_EQ(imported.param_count(), original.param_count());
  EXPECT_EQ(imported.macs(), original.macs());
  ASSERT_EQ(imported.inputs.size(), original.inputs.size());
  EXPECT_EQ(imported.inputs[0].shape, original.inputs[0].shape);
  ASSERT_EQ(imported.outputs.size(), original.outputs.size());
  for (size_t i = 0; i < original.nodes.size() && i < imported.nodes.size(); ++i) {
    EXPECT_EQ(imported.nodes[i].op, original.nodes[i].op) << "node " << i;
  }

  Tensor x = seeded_input(original.inputs[0].shape);
  std::vector<Tensor> want = ReferenceExecutor(original).run({x});
  std::vector<Tensor> got = ReferenceExecutor(imported).run({x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(bit_identical(got[i], want[i])) << name << " output " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, ZooOnnxRoundTrip, ::testing::ValuesIn(zoo_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// The file path through load_model: export to disk, load, same outputs.
TEST(ZooOnnxRoundTrip, LoadModelFromExportedFile) {
  Graph original = build_zoo_model("mobilenetv1-cifar");
  fs::path dir = fs::temp_directory_path() / ("dlas_zoo_roundtrip_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "mobilenetv1.onnx").string();
  export_onnx_file(original, path);
  Graph loaded = load_model(path);
  Tensor x = seeded_input(original.inputs[0].shape);
  EXPECT_TRUE(bit_identical(ReferenceExecutor(loaded).run({x})[0],
                            ReferenceExecutor(original).run({x})[0]));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dlas
