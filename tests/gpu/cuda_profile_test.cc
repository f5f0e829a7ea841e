// The GPU's machine profile: calibration on this GPU, the file round trip, and the CUDA plan
// following it (and still computing the model), skipped where no CUDA device is visible;
// and, host-side, which algorithm and knobs the plan takes from a profile.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "dlas/hw/gpu.h"
#include "dlas/model/zoo.h"
#include "dlas/optimize/compress_spec.h"
#include "dlas/system/compress.h"
#include "dlas/system/cuda_executor.h"
#include "dlas/system/cuda_profile.h"
#include "dlas/system/cuda_tune.h"
#include "dlas/system/measure.h"
#include "dlas/system/plan.h"
#include "gpu/gpu_test_util.h"

namespace dlas {
namespace {

TEST(CudaProfile, CalibratesEveryClassAndThePlanFollowsIt) {
  SKIP_WITHOUT_GPU();
  int calls = 0;
  const CudaCalibrateResult r =
      calibrate_cuda(0, 1, [&](int, int, const std::string&) { ++calls; });
  EXPECT_EQ(calls, static_cast<int>(r.rows.size()));
  EXPECT_GT(r.rows.size(), 20u);
  EXPECT_EQ(r.profile.gpu, tune::cuda_hardware_id(0));
  bool sparse_class = false, h16_class = false;
  for (const CudaCalibrateRow& row : r.rows) {
    EXPECT_GT(row.candidates, 0) << row.shape_class;
    ASSERT_TRUE(r.profile.classes.count(row.shape_class)) << row.shape_class;
    EXPECT_GT(row.best.us, 0) << row.shape_class;
    EXPECT_NE(cuda::find_conv_algorithm(row.best.algo), nullptr) << row.best.algo;
    sparse_class |= row.shape_class.rfind("sparse-", 0) == 0;
    h16_class |= row.shape_class.size() > 4 &&
                 row.shape_class.compare(row.shape_class.size() - 4, 4, "-h16") == 0;
  }
  EXPECT_TRUE(sparse_class);
  EXPECT_TRUE(h16_class);
  const std::string path =
      (std::filesystem::temp_directory_path() / "dlas_gpu_profile_test.json").string();
  r.profile.save(path);
  const CudaProfile back = CudaProfile::load(path);
  EXPECT_EQ(back.classes.size(), r.profile.classes.size());
  CudaPlanOptions o;
  o.profile = path;
  const Graph g = build_zoo_model("mobilenetv2-cifar");
  CudaExecutor e(g, o);
  EXPECT_EQ(e.profile_path(), path);
  const auto in = random_inputs(g, 3);
  Plan cpu(g, PlanOptions{});
  EXPECT_LT(test::relative_error(e.run(in)[0], cpu.run(in)[0]), 3e-3);
  // A 16-bit variant follows the profile's 16-bit classes.
  Graph h = build_zoo_model("mobilenetv2-cifar");
  apply_compress_spec(h, parse_compress("fp16"));
  EXPECT_LT(test::relative_error(CudaExecutor(h, o).run(in)[0], Plan(h, PlanOptions{}).run(in)[0]),
            3e-2);
  CudaPlanOptions none;
  none.profile = "none";
  EXPECT_TRUE(CudaExecutor(g, none).profile_path().empty());
  std::filesystem::remove(path);
}

// Host-side, no GPU: the plan takes the class's algorithm from the profile, at its default
// knobs for the layer; the measured knobs only on the very shape measured.
TEST(CudaProfile, ChoiceTakesTheAlgorithmAndTheLayersOwnKnobs) {
  cuda::ConvShape measured;  // a 1x1 projection on a 7x7 plane
  measured.c = 256, measured.h = measured.w = 7, measured.k = 1024;
  measured.oh = measured.ow = 7;
  cuda::ConvShape longer = measured;  // the same class, an 8x longer reduction
  longer.c = 2048;
  ASSERT_EQ(cuda_shape_class(measured), cuda_shape_class(longer));
  const cuda::ConvAlgorithm* gemm = cuda::find_conv_algorithm("gemm");
  ASSERT_NE(gemm, nullptr);
  const Knobs fitted = {{"bm", 128}, {"bn", 128}, {"bk", 8}, {"splits", 16}};
  ASSERT_NE(gemm->default_knobs(longer), fitted);
  CudaProfile p;
  p.classes[cuda_shape_class(measured)] = {"gemm", fitted, 10.0, "gemm", 12.0, measured.str()};
  const CudaProfileChoice on_measured = cuda_profile_choice(p, measured);
  EXPECT_EQ(on_measured.algo, gemm);
  EXPECT_EQ(on_measured.knobs, fitted);
  const CudaProfileChoice on_longer = cuda_profile_choice(p, longer);
  EXPECT_EQ(on_longer.algo, gemm);
  EXPECT_EQ(on_longer.knobs, gemm->default_knobs(longer));
  // A class the profile lacks, and a winner that does not run the shape: no choice.
  cuda::ConvShape other = measured;
  other.kh = other.kw = 3, other.pad_h = other.pad_w = 1;
  EXPECT_EQ(cuda_profile_choice(p, other).algo, nullptr);
  p.classes[cuda_shape_class(measured)].algo = "winograd";
  EXPECT_EQ(cuda_profile_choice(p, measured).algo, nullptr);
}

}  // namespace
}  // namespace dlas
