// `dlas prune-sweep` end to end (bin/dlas execs bin/dlas-train): a zoo model trained first,
// a two-level channel sweep, --json with sweep.json's keys, the directory's files; bad input
// found by dlas-train (unknown dataset, model/dataset mismatch) is exit 2 and writes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "dlas/optimize/prune_sweep.h"
#include "optimize/cli_test_util.h"

namespace dlas::test {
namespace {

namespace fs = std::filesystem;

class PruneSweepTorchCli : public CliTest {};

TEST_F(PruneSweepTorchCli, TrainsTheBaselineSweepsAndWritesTheDirectory) {
  const std::string out = path("sweep");
  CliResult r = dlas(
      "prune-sweep resnet18-cifar --dataset synthetic:1,12,12:4:192 --width-mult 0.125 "
      "--train-epochs 3 --train-lr 0.1 --batch 12 --lr 0.02 --method channel --levels 0.25,0.5 "
      "--epochs 1 --tolerance 100 --json -o " +
      out);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["method"], "channel");
  EXPECT_EQ(j["tolerance"].get<double>(), 1.0);  // 100 points on the command line
  EXPECT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["elbow"].get<int>(), 1);  // every level is within 100 points
  EXPECT_EQ(j["stopped"].get<bool>(), false);
  EXPECT_EQ(j["baseline_quant"].size(), 3u);
  EXPECT_EQ(j["elbow_quant"][2]["compress"], "int8:minmax");
  EXPECT_GT(j["baseline"]["top1"].get<double>(), 0.4);  // trained: chance is 0.25
  const SweepResult s = read_sweep(fs::path(out) / "sweep.json");
  EXPECT_EQ(s.points.size(), 2u);
  EXPECT_EQ(s.total_finetune_epochs, 1.0);
  for (const char* f :
       {"baseline.onnx", "channel-0.25.onnx", "channel-0.50.onnx", "elbow.onnx", "curve.csv"})
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  // One progress line per level on stderr (not a TTY).
  EXPECT_NE(r.err.find("level 1/2 cp:0.25"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("level 2/2 cp:0.5"), std::string::npos) << r.err;

  // The baseline written there is a 12x12 model: a 16x16 dataset does not fit it.
  const std::string out2 = path("sweep2");
  r = dlas("prune-sweep " + out +
           "/baseline.onnx --dataset synthetic:1,16,16:4:64 --method "
           "weight -o " +
           out2);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("1x16x16"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out2));
  r = dlas("prune-sweep " + out + "/baseline.onnx --dataset no-such-set --method weight -o " +
           out2);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-set"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out2));
}

}  // namespace
}  // namespace dlas::test
