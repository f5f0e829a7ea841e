// External truth: ONNX files exported by PyTorch itself (torch.onnx.export of torchvision
// CNNs with random weights and randomised BatchNorm statistics) must load with
// dlas::load_model and run on the reference runtime with outputs matching PyTorch's eager
// outputs, and compile in every compression with no step on a reference kernel.
// scripts/export_torchvision.py writes the models, inputs and outputs under the
// build folder (cached; re-exported only when the script or the torch version changes).
// Skips when Debian's python3-torch / python3-torchvision are not installed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dlas/core/npy.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/executor.h"
#include "dlas/system/loader.h"
#include "dlas/system/plan.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

// The architectures (names known to the script); "-opsetN" variants use that opset and
// skip the exporter's constant folding.
const std::vector<std::string>& architectures() {
  static const std::vector<std::string> names = {
      "resnet18",
      "resnet18-opset11",
      "resnet50",
      "resnext50_32x4d",
      "mobilenet_v2",
      "mobilenet_v2-opset11",
      "mobilenet_v3_small",
      "mobilenet_v3_large-opset17",
      "efficientnet_b0",
      "densenet121",
      "squeezenet1_0",
      "squeezenet1_1-opset11",
      "shufflenet_v2_x1_0",
      "shufflenet_v2_x0_5-opset17",
      "googlenet",
      "inception_v3",
      "mnasnet0_5",
      "mnasnet0_5-opset17",
      "regnet_x_400mf",
      "regnet_y_400mf",
      "convnext_tiny",
      "swin_t",
      "maxvit_t",
      "alexnet",
      "vgg11",
  };
  return names;
}

std::string python() {
  const char* env = std::getenv("DLAS_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// Artifacts live next to the test binary (the build folder), never in the source tree.
fs::path artifacts_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  fs::path base = ec ? fs::current_path() : exe.parent_path();
  return base / "test_artifacts" / "pytorch_onnx";
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

class PytorchOnnx : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    // find_spec only locates the packages (importing torch takes seconds).
    std::string probe = quoted(python()) +
                        " -c 'import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) "
                        "for m in (\"torch\", \"torchvision\", \"numpy\")) else 1)' "
                        ">/dev/null 2>&1";
    if (std::system(probe.c_str()) != 0) {
      skip_reason_ = python() +
                     " cannot import torch, torchvision and numpy "
                     "(install python3-torch and python3-torchvision)";
      return;
    }
    fs::create_directories(artifacts_dir());
    std::string models;
    for (const std::string& n : architectures()) models += (models.empty() ? "" : ",") + n;
    fs::path log = artifacts_dir() / "export.log";
    std::string cmd = quoted(python()) + " " +
                      quoted(std::string(DLAS_SOURCE_DIR) + "/scripts/export_torchvision.py") +
                      " --out " + quoted(artifacts_dir().string()) + " --models " + models + " >" +
                      quoted(log.string()) + " 2>&1";
    export_status_ = std::system(cmd.c_str());
  }

  static std::string skip_reason_;
  static int export_status_;
};
std::string PytorchOnnx::skip_reason_;
int PytorchOnnx::export_status_ = 0;

TEST_P(PytorchOnnx, MatchesPytorch) {
  if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  const std::string& name = GetParam();
  fs::path base = artifacts_dir() / name;
  std::ifstream stamp_file(base.string() + ".json");
  ASSERT_TRUE(stamp_file) << "export script wrote no record for " << name << " (exit status "
                          << export_status_ << "; see " << (artifacts_dir() / "export.log") << ")";
  nlohmann::json stamp = nlohmann::json::parse(stamp_file);
  ASSERT_EQ(stamp.value("status", ""), "ok")
      << "PyTorch could not export " << name << ": " << stamp.value("error", "");

  Graph graph = load_model(base.string() + ".onnx");
  Tensor x = read_npy(base.string() + ".input.npy");
  Tensor torch32 = read_npy(base.string() + ".output.npy");
  Tensor truth = read_npy(base.string() + ".output64.npy");  // float64, read as f32
  ASSERT_EQ(graph.inputs.size(), 1u);
  ASSERT_EQ(graph.outputs.size(), 1u);
  std::vector<Tensor> got = ReferenceExecutor(graph).run({x});
  ASSERT_EQ(got[0].shape(), truth.shape());
  ASSERT_EQ(got[0].shape(), torch32.shape());
  ASSERT_EQ(got[0].dtype(), DType::kF32);

  auto max_abs_diff = [](const Tensor& a, const Tensor& b) {
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      double d = std::abs(a.get_as_double(i) - b.get_as_double(i));
      m = std::isnan(d) ? INFINITY : std::max(m, d);
    }
    return m;
  };
  double scale = 0;
  for (int64_t i = 0; i < truth.numel(); ++i) {
    scale = std::max(scale, std::abs(truth.get_as_double(i)));
  }
  double err = max_abs_diff(got[0], truth);
  double vs_torch = max_abs_diff(got[0], torch32);
  std::printf(
      "[pytorch-onnx] %-28s opset %2d, %4zu nodes: scale %.4g, max abs err vs float64 "
      "%.3g (%.3g of scale), vs PyTorch fp32 %.3g (%.3g)\n",
      name.c_str(), stamp.value("opset", 0), graph.nodes.size(), scale, err, err / scale, vs_torch,
      vs_torch / scale);
  // Truth is PyTorch in float64. dlas must be within 1e-4 of the output scale of it, and so
  // (PyTorch fp32 being as close) within 2e-4 of PyTorch's fp32 output.
  EXPECT_GT(scale, 0.0);
  EXPECT_LE(err, 1e-4 * scale) << name << " vs PyTorch float64";
  EXPECT_LE(vs_torch, 2e-4 * scale) << name << " vs PyTorch fp32";
}

// Every export compiles dense and in every compression the engine offers (int8, fp16, bf16)
// with no step on a reference kernel: the unseen models' ops (channel shuffles and splits,
// explicit pads, decomposed LayerNorms and GELUs, HardSwish, large-stride stems) have fast
// paths in every type, as the zoo's do (plan_compressed_test).
TEST_P(PytorchOnnx, EveryCompressionCompilesWithoutReferenceSteps) {
  if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  const std::string& name = GetParam();
  const fs::path base = artifacts_dir() / name;
  std::ifstream stamp_file(base.string() + ".json");
  ASSERT_TRUE(stamp_file) << "export script wrote no record for " << name;
  if (nlohmann::json::parse(stamp_file).value("status", "") != "ok")
    GTEST_SKIP() << "PyTorch could not export " << name;
  // VGG's ops are the zoo's vgg16-cifar's; its 500 MB of classifier weights would cost the
  // suite 15 s.
  if (name == "vgg11") GTEST_SKIP() << "vgg11's ops are covered by the zoo's VGG";
  for (const char* spec : {"dense", "int8", "fp16", "bf16"}) {
    Graph g = load_model(base.string() + ".onnx");
    if (std::string(spec) != "dense") {
      QuantSpec qs = parse_quant_spec(spec);
      qs.calib_samples = 1;
      quantize(g, qs);
    }
    PlanOptions o;
    o.threads = 2;
    const Plan plan(g, o);
    std::string reference;
    for (const StepInfo& st : plan.steps())
      if (st.kernel == "reference") reference += " " + st.node + " (" + st.op + ")";
    EXPECT_EQ(reference, "") << name << " " << spec;
  }
}

INSTANTIATE_TEST_SUITE_P(Torchvision, PytorchOnnx, ::testing::ValuesIn(architectures()),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace dlas
