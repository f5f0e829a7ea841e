// `dlas train` end to end on a tiny synthetic dataset: JSON with the engine's test top-1, the
// ONNX written; bad input is exit 2 with one line naming the culprit, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "optimize/cli_test_util.h"

namespace dlas::test {
namespace {

class TrainCli : public CliTest {};

TEST_F(TrainCli, TrainsExportsAndReportsEngineAccuracy) {
  const std::string out = path("m.onnx");
  CliResult r = dlas(
      "train resnet18-cifar --dataset synthetic:1,12,12:4:192 --width-mult 0.125 "
      "--epochs 3 --batch 12 --lr 0.1 --json -o " +
      out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"].get<int64_t>(), 192);       // synthetic test split: n records
  EXPECT_GE(j["top1"].get<double>(), 0.5) << r.out;  // 4 classes: chance is 0.25
  EXPECT_EQ(j["epoch_stats"].size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(out));
  // The exported model runs in the engine as a 1-channel 12x12 4-class classifier.
  CliResult info = dlas("info " + out);
  ASSERT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("[1, 1, 12, 12]"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("[1, 4]"), std::string::npos) << info.out;
}

TEST_F(TrainCli, FractionalEpochsAndLabelSmoothing) {
  // 48 records, batch 12: 4 steps per epoch; 1.5 epochs = 6 steps, the second epoch half.
  const std::string out = path("frac.onnx");
  CliResult r = dlas(
      "train resnet18-cifar --dataset synthetic:1,12,12:4:48 --width-mult 0.125 "
      "--epochs 1.5 --label-smoothing 0.1 --batch 12 --test-limit 12 --json -o " +
      out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["epochs"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["label_smoothing"].get<double>(), 0.1);
  EXPECT_EQ(j["steps"].get<int64_t>(), 6);
  ASSERT_EQ(j["epoch_stats"].size(), 2u);
  EXPECT_EQ(j["epoch_stats"][0]["samples"].get<int64_t>(), 48);
  EXPECT_EQ(j["epoch_stats"][1]["samples"].get<int64_t>(), 24);
  EXPECT_TRUE(std::filesystem::exists(out));
  const std::pair<const char*, const char*> bads[] = {
      {"--label-smoothing 1", "--label-smoothing"},
      {"--label-smoothing=-0.1", "--label-smoothing"},
      {"--epochs 0", "--epochs"}};
  for (const auto& [bad, flag] : bads) {
    const std::string o2 = path("bad2.onnx");
    CliResult b = dlas(std::string("train resnet18-cifar --dataset synthetic:1,12,12:4:48 ") + bad +
                       " -o " + o2);
    EXPECT_EQ(b.code, 2) << bad;
    EXPECT_NE(b.err.find(flag), std::string::npos) << b.err;
    EXPECT_FALSE(std::filesystem::exists(o2));
  }
}

TEST_F(TrainCli, BadInputIsExit2WithOneLine) {
  const std::string out = path("bad.onnx");
  CliResult r = dlas("train resnet18-cifar --dataset no-such-set -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no-such-set"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = dlas("train resnet18-cifar --dataset synthetic:1,12,12:4:64 --resume -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpoint"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace dlas::test
