// int8 on models trained outside dlas: small CNNs trained by PyTorch on Fashion-MNIST and
// exported to ONNX (scripts/train_fmnist_torch.py, cached under the build folder next to the
// test binary, shared with the fidelity tests: system/fmnist_torch_fixture.h). On the full 10k test split, dlas's
// default int8 (int8:auto, calibrated on 500 training images) must stay within 0.5 points of
// top-1 of the fp32 model dlas evaluates beside it -- including "normalized-adam", whose
// first conv's output the entropy calibrator used to clip at its background spikes -- and so
// must the entropy calibrator now. Skips without python3-torch or the dataset.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "dlas/data/dataset.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/dataset_eval.h"
#include "dlas/system/loader.h"
#include "dlas/system/plan.h"
#include "system/fmnist_torch_fixture.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;
using test::fmnist_torch_models;

double top1_drop_points(const Graph& fp32, const std::string& compress, double* fp32_top1) {
  const auto ds = data::open_dataset("fashion-mnist", data::Split::kTest);
  PlanOptions o;  // one thread: spinning workers cost more than they give on a shared machine
  const VariantAccuracy r =
      evaluate_variant(fp32, parse_compress(compress), "fashion-mnist", *ds, o);
  EXPECT_EQ(r.deployed.samples, 10000);
  EXPECT_TRUE(r.fp32.has_value());
  *fp32_top1 = 100 * r.fp32->top1_rate();
  const double drop = *fp32_top1 - 100 * r.deployed.top1_rate();
  std::printf("[ %s ] fp32 %.2f%%, drop %.2f points%s%s\n", compress.c_str(), *fp32_top1, drop,
              r.warning.empty() ? "" : "; ", r.warning.c_str());
  return drop;
}

class FmnistTorchInt8 : public ::testing::TestWithParam<std::string> {};

TEST_P(FmnistTorchInt8, DefaultInt8LosesAtMostHalfAPoint) {
  const auto& m = fmnist_torch_models();
  if (!m.skip_reason.empty()) GTEST_SKIP() << m.skip_reason;
  const fs::path onnx = m.dir / (GetParam() + ".onnx");
  ASSERT_TRUE(fs::exists(onnx)) << "the training script wrote no " << onnx << " (exit status "
                                << m.status << "; see " << m.log() << ")";
  // The models take [1,1,28,28]; evaluate 100 images per batch.
  LoadOptions lo;
  lo.onnx.input_shapes[""] = {100, 1, 28, 28};
  const Graph fp32 = load_model(onnx.string(), lo);
  double fp32_top1 = 0;
  const double drop = top1_drop_points(fp32, "int8", &fp32_top1);
  EXPECT_GT(fp32_top1, 70.0) << "the fp32 model is not trained (or fed the wrong preprocessing)";
  EXPECT_LE(drop, 0.5);
  if (GetParam() == "normalized-adam") {
    // The entropy calibrator on its own: it lost 1.3 points here while it clipped at the
    // first conv's background spikes.
    EXPECT_LE(top1_drop_points(fp32, "int8:entropy", &fp32_top1), 0.5);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FmnistTorchInt8,
                         ::testing::Values("normalized", "normalized-brief", "normalized-adam"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace dlas
