// Export of pruned models: what `dlas prune MODEL --method
// weight|block|channel -o out.onnx` writes passes ONNX's own checker (python3-onnx,
// full_check = with shape inference), loads back as the graph prune() made in memory (same
// weights, zeros and shrunk shapes) and computes the same outputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dlas/model/zoo.h"
#include "dlas/optimize/prune.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

constexpr const char* kPython = "/usr/bin/python3";  // the system's, where python3-onnx lives

bool onnx_python_available() {
  const std::string cmd = std::string(kPython) + " -c 'import onnx' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

struct ExportCase {
  const char* model;
  const char* flags;  // dlas prune flags
  const char* spec;   // the same as a spec, for prune() in memory
};

class PruneExport : public test::CliTest, public ::testing::WithParamInterface<ExportCase> {};

TEST_P(PruneExport, CliOutputPassesTheOnnxCheckerAndLoadsBackTheSame) {
  const ExportCase& c = GetParam();
  const std::string out = path("pruned.onnx");
  const test::CliResult r =
      dlas(std::string("prune ") + c.model + " " + c.flags + " --json -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;

  if (onnx_python_available()) {
    const std::string py = path("check.py");
    FILE* f = std::fopen(py.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(
        "import onnx, sys\n"
        "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)\n",
        f);
    std::fclose(f);
    const int rc = std::system((std::string(kPython) + " " + py + " " + out).c_str());
    EXPECT_EQ(rc, 0) << "onnx.checker rejected " << c.model << " " << c.flags;
  }

  // The file holds what prune() makes in memory, bit for bit.
  Graph want = build_zoo_model(c.model);
  prune(want, parse_prune_spec(c.spec));
  const Graph got = load_model(out);
  ASSERT_EQ(got.param_count(), want.param_count());
  EXPECT_EQ(got.macs(), want.macs());
  for (const auto& [name, t] : want.initializers) {
    if (!got.initializers.count(name)) continue;  // folded or renamed constants
    const Tensor& u = got.initializers.at(name);
    ASSERT_EQ(u.shape(), t.shape()) << name;
    if (t.dtype() != DType::kF32 || u.dtype() != DType::kF32) continue;
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(u.data<float>()[i], t.data<float>()[i]) << name << "[" << i << "]";
  }
  Tensor x(DType::kF32, want.inputs[0].shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.f;
  const Tensor a = ReferenceExecutor(want).run({x})[0];
  const Tensor b = ReferenceExecutor(got).run({x})[0];
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.get_as_double(i), b.get_as_double(i)) << i;

  if (!onnx_python_available()) GTEST_SKIP() << "python3-onnx is not installed (checker not run)";
}

INSTANTIATE_TEST_SUITE_P(
    Methods, PruneExport,
    ::testing::Values(ExportCase{"resnet18-cifar", "--method weight --sparsity 0.9", "wp:0.9"},
                      ExportCase{"mobilenetv2-cifar", "--method block --block 4x1 --sparsity 0.8",
                                 "bp:4x1:0.8"},
                      ExportCase{"resnet18-cifar", "--method channel --sparsity 0.5", "cp:0.5"},
                      ExportCase{"mobilenetv2-cifar",
                                 "--method channel --sparsity 0.5 --scope layer", "cp:0.5:layer"},
                      ExportCase{"vgg16-cifar", "--method channel --sparsity 0.8", "cp:0.8"}),
    [](const auto& info) {
      std::string s = std::string(info.param.model) + "_" + info.param.spec;
      for (char& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
}  // namespace dlas
