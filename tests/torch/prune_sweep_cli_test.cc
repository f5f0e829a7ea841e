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
  const std::string args =
      "prune-sweep resnet18-cifar --dataset synthetic:1,12,12:4:192 --width-mult 0.125 "
      "--train-epochs 3 --train-lr 0.1 --batch 12 --lr 0.02 --method channel --levels 0.25,0.5 "
      "--epochs 1 --tolerance 100 --json -o " +
      out;
  CliResult r = dlas(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["method"], "channel");
  EXPECT_EQ(j["tolerance"].get<double>(), 1.0);  // 100 points on the command line
  EXPECT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["elbow"].get<int>(), 1);  // every level is within 100 points
  EXPECT_EQ(j["stopped"].get<bool>(), false);
  EXPECT_EQ(j["baseline_quant"].size(), 3u);
  EXPECT_EQ(j["elbow_quant"][2]["compress"], "int8");  // int8:auto
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

  // --resume of the finished sweep keeps its levels (the zoo baseline is not trained again)
  // and gives the same curve; other settings are exit 2 naming the setting.
  CliResult again = dlas(args + " --resume");
  ASSERT_EQ(again.code, 0) << again.err;
  const auto ja = nlohmann::json::parse(again.out);
  EXPECT_EQ(again.err.find("training the baseline"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("2 of 2 levels done"), std::string::npos) << again.err;
  ASSERT_EQ(ja["points"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ja["points"][i]["top1"], j["points"][i]["top1"]);
    EXPECT_EQ(ja["points"][i]["model"], j["points"][i]["model"]);
  }
  EXPECT_EQ(ja["elbow_quant"], j["elbow_quant"]);
  EXPECT_EQ(ja["settings"], j["settings"]);
  EXPECT_EQ(j["settings"]["train-epochs"], "3");
  CliResult other = dlas(args + " --resume --seed 7");
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find("seed 0, this run has seed 7"), std::string::npos) << other.err;
  const std::string empty = path("empty-sweep");
  CliResult none =
      dlas("prune-sweep resnet18-cifar --train-epochs 1 --method weight --resume -o " + empty);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("sweep.json: not found"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(empty));

  // The baseline written there is a 12x12 model: a 16x16 dataset does not fit it.
  const std::string out2 = path("sweep2");
  r = dlas("prune-sweep " + out +
           "/baseline.onnx --dataset synthetic:1,16,16:4:64 --method "
           "weight -o " +
           out2);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("[N, 1, 16, 16]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out2));
  r = dlas("prune-sweep " + out + "/baseline.onnx --dataset no-such-set --method weight -o " +
           out2);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-set"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out2));
}

}  // namespace
}  // namespace dlas::test
