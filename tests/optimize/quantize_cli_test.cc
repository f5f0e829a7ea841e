// dlas quantize / dlas eval / --compress int8|fp16|bf16 on the command line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "dlas/model/onnx.h"

namespace dlas {
namespace {

using QuantizeCli = test::CliTest;

constexpr const char* kSmall = "resnet18-cifar --width-mult 0.25 --image-size 16";

TEST_F(QuantizeCli, WritesAQdqModelWithAJsonSummary) {
  const std::string out = path("q.onnx");
  const auto r = dlas(std::string("quantize ") + kSmall +
                      " --dtype int8 --calibrator percentile --calib-samples 2 --json -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spec"], "int8:percentile");
  EXPECT_EQ(j["calib_samples"], 2);
  EXPECT_EQ(j["layers"].size(), 21u);
  EXPECT_GT(j["layers"][0]["input_scale"].get<double>(), 0.0);
  EXPECT_TRUE(std::filesystem::exists(out));
  // The written model runs on the engine, its convs as int8.
  const auto run = dlas("info " + out + " --json --all-nodes");
  EXPECT_EQ(run.code, 0) << run.err;
  const auto b = dlas("bench " + out + " --warmup 0 --repeat 1 --json");
  EXPECT_EQ(b.code, 0) << b.err;
}

// The default calibrator is auto; the report gives every tensor's measured error, every
// calibrator's range and error, and the largest errors.
TEST_F(QuantizeCli, ReportsThePerTensorError) {
  const std::string out = path("q.onnx");
  const auto r = dlas(std::string("quantize ") + kSmall + " --dtype int8 --calib-samples 2 --json -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spec"], "int8");
  EXPECT_EQ(j["calibrator"], "auto");
  int measured = 0;
  for (const auto& t : j["tensors"]) {
    if (t.contains("shares")) continue;
    ASSERT_TRUE(t.contains("error")) << t.dump();
    EXPECT_EQ(t["candidates"].size(), 4u) << t.dump();
    EXPECT_LE(t["best_error"].get<double>(), t["error"].get<double>()) << t.dump();
    ++measured;
  }
  EXPECT_GT(measured, 10);
  ASSERT_EQ(j["worst"].size(), 3u);
  EXPECT_GE(j["worst"][0]["error"].get<double>(), j["worst"][1]["error"].get<double>());
  const auto text = dlas(std::string("quantize ") + kSmall +
                         " --dtype int8 --calibrator entropy --calib-samples 2 -o " + out);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("ERROR"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("largest errors"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("entropy"), std::string::npos) << text.out;
}

TEST_F(QuantizeCli, BadInputExitsTwo) {
  const std::string out = path("q.onnx");
  // Unknown dtype / calibrator: usage errors.
  EXPECT_EQ(dlas(std::string("quantize ") + kSmall + " --dtype int4 -o " + out).code, 2);
  EXPECT_EQ(
      dlas(std::string("quantize ") + kSmall + " --dtype int8 --calibrator kl -o " + out).code, 2);
  // A calibration folder that does not exist, an output folder that does not exist, a model
  // file that is not ONNX.
  auto r = dlas(std::string("quantize ") + kSmall + " --dtype int8 --calib-data " +
                path("missing") + " -o " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
  EXPECT_EQ(
      dlas(std::string("quantize ") + kSmall + " --dtype fp16 -o " + path("no/dir/q.onnx")).code,
      2);
  {
    std::ofstream f(path("junk.onnx"));
    f << "not a model";
  }
  EXPECT_EQ(dlas("quantize " + path("junk.onnx") + " --dtype int8 -o " + out).code, 2);
  EXPECT_FALSE(std::filesystem::exists(out));  // nothing written on failure
  // --compress with a bad quantization part.
  EXPECT_EQ(dlas(std::string("run ") + kSmall + " --compress int8:kl").code, 2);
}

TEST_F(QuantizeCli, CompressAndEval) {
  for (const char* spec : {"int8", "int8:minmax", "fp16", "bf16", "wp:0.5+int8:none"}) {
    const auto r = dlas(std::string("run ") + kSmall + " --compress " + spec + " --json");
    EXPECT_EQ(r.code, 0) << spec << ": " << r.err;
  }
  const auto e = dlas(std::string("eval ") + kSmall + " --compress int8:minmax --samples 3 --json");
  ASSERT_EQ(e.code, 0) << e.err;
  const auto j = nlohmann::json::parse(e.out);
  EXPECT_EQ(j["samples"], 3);
  for (const char* k : {"top1_agreement", "max_abs_err", "mean_abs_err"})
    ASSERT_TRUE(j.contains(k)) << k;
  EXPECT_GE(j["top1_agreement"].get<double>(), 0.0);
  EXPECT_LE(j["top1_agreement"].get<double>(), 1.0);
  EXPECT_GT(j["max_abs_err"].get<double>(), 0.0);  // int8 is not exact
}

}  // namespace
}  // namespace dlas
