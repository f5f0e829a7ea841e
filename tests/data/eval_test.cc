// Accuracy in the engine: evaluate_plans on a nearest-class-mean classifier (a real, accurate
// model built from the data), padding of the last batch, and the CLI: `dlas eval --dataset`
// (zoo, ONNX, compressed, int8 calibrated on the dataset), `dlas data info`,
// `dlas quantize --calib-data DATASET`, and the random-input `dlas eval` still working.
#include <nlohmann/json.hpp>

#include "data/nearest_mean_model.h"
#include "data_test_util.h"
#include "dlas/model/onnx.h"
#include "dlas/system/accuracy.h"
#include "optimize/cli_test_util.h"

namespace dlas::test {
namespace {

constexpr const char* kData = "synthetic:1,8,8:4:120";

TEST(EvalAccuracy, NearestMeanModelIsAccurateAndPaddingIsExact) {
  const auto test = data::open_dataset(kData, data::Split::kTest);
  const data::Preprocess pre = data::default_preprocess(test->info(), false);
  PlanOptions o;
  Plan b1(nearest_mean_model(kData, 1), o), b7(nearest_mean_model(kData, 7), o);
  data::Loader l1(*test, pre, {.batch = 1}), l7(*test, pre, {.batch = 7});  // 120 = 17 x 7 + 1
  int64_t calls = 0;
  const auto a1 = evaluate_plans({&b1}, l1);
  const auto a7 =
      evaluate_plans({&b7}, l7, [&](int64_t done, int64_t total, const data::Accuracy&) {
        ++calls;
        EXPECT_EQ(total, 120);
        EXPECT_LE(done, total);
      });
  EXPECT_EQ(calls, 18);
  ASSERT_EQ(a1.size(), 1u);
  EXPECT_EQ(a1[0].samples, 120);
  EXPECT_EQ(a7[0].samples, 120);
  EXPECT_EQ(a7[0].top1, a1[0].top1);
  EXPECT_GT(a1[0].top1_rate(), 0.9);  // chance is 0.25
  EXPECT_EQ(a1[0].top5, 120);         // 4 classes: always in the top 5
  // A plan whose batch is not the loader's is refused.
  expect_invalid([&] { evaluate_plans({&b1}, l7); }, {"[7, 1, 8, 8]"});
  // The one-call form gives the same numbers.
  const data::Accuracy one = evaluate_accuracy(nearest_mean_model(kData, 7), o, kData);
  EXPECT_EQ(one.samples, 120);
  EXPECT_EQ(one.top1, a1[0].top1);
  EXPECT_EQ(
      evaluate_accuracy(nearest_mean_model(kData, 7), o, kData, data::Split::kTest, 50).samples,
      50);
  EXPECT_EQ(zoo_options_for(test->info()).image_size, 8);
  EXPECT_EQ(zoo_options_for(test->info()).num_classes, 4);
}

class EvalCli : public CliTest {};

nlohmann::json parse_json(const CliResult& r) {
  EXPECT_EQ(r.code, 0) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << r.out << "\n" << r.err;
    return {};
  }
}

TEST_F(EvalCli, DatasetModeOnOnnxZooAndCompressedVariants) {
  const std::string model = path("nm.onnx");
  export_onnx_file(nearest_mean_model(kData, 1), model);  // batch 1: re-batched to --batch
  const auto dense =
      parse_json(dlas(str("eval ", model, " --dataset ", kData, " --batch 16 --json")));
  EXPECT_EQ(dense["samples"], 120);
  EXPECT_GT(dense["top1"].get<double>(), 0.9);
  EXPECT_EQ(dense["top5"].get<double>(), 1.0);
  EXPECT_EQ(dense["compress"], "dense");
  EXPECT_EQ(dense["dataset"], kData);
  EXPECT_EQ(dense["batch"], 16);
  EXPECT_FALSE(dense.contains("fp32_top1"));
  EXPECT_TRUE(dense.contains("seconds"));

  const auto q = parse_json(
      dlas(str("eval ", model, " --dataset ", kData, " --compress int8 --limit 100 --json")));
  EXPECT_EQ(q["samples"], 100);
  EXPECT_EQ(q["compress"], "int8");
  EXPECT_TRUE(q["calibration"].get<std::string>().find("train") != std::string::npos);
  EXPECT_GT(q["fp32_top1"].get<double>(), 0.9);
  EXPECT_NEAR(q["top1"].get<double>(), q["fp32_top1"].get<double>(), 0.05);

  // A zoo model is built for the dataset (1x8x8, 4 classes), untrained: a note says so.
  const auto z = parse_json(dlas(str("eval resnet18-cifar --width-mult 0.125 --dataset ", kData,
                                     " --split train --limit 20 --batch 10 --json")));
  EXPECT_EQ(z["samples"], 20);
  EXPECT_EQ(z["top5"].get<double>(), 1.0);
  EXPECT_NE(z["note"].get<std::string>().find("untrained"), std::string::npos);

  const CliResult text = dlas(str("eval ", model, " --dataset ", kData, " --compress wp:0.5"));
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("top-1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(fp32: top-1"), std::string::npos) << text.out;

  // Shape mismatch and unknown datasets: exit 2, one line naming the problem.
  const CliResult bad = dlas(str("eval ", model, " --dataset synthetic:3,8,8:4:10"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("does not take"), std::string::npos) << bad.err;
  const CliResult unknown = dlas(str("eval ", model, " --dataset nosuch"));
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown dataset 'nosuch'"), std::string::npos) << unknown.err;

  EXPECT_EQ(dlas(str("eval ", model, " --limit 5")).code, 2);  // --limit needs --dataset

  // The random-input mode is unchanged.
  const auto r = parse_json(dlas(str("eval ", model, " --compress int8 --samples 2 --json")));
  EXPECT_TRUE(r.contains("top1_agreement"));
}

// Tuning records name the compressed model's layers: `dlas eval --dataset --records` applies
// them to the int8 model it deploys (explore's README reproduces a tuned recommendation's
// accuracy so), and int8 answers do not depend on the kernels chosen.
TEST_F(EvalCli, TuningRecordsApplyToTheDeployedModel) {
  const std::string model = path("cnn.onnx");
  export_onnx_file(nearest_mean_cnn(kData), model);
  const CliResult t =
      dlas(str("tune ", model, " --compress int8 --budget 12trials -o ", path("r.jsonl")));
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string eval = str("eval ", model, " --dataset ", kData, " --compress int8 --batch 1");
  const CliResult tuned = dlas(eval + " --records " + path("r.jsonl") + " --json");
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  EXPECT_NE(tuned.err.find("records: "), std::string::npos) << tuned.err;
  EXPECT_EQ(tuned.err.find("records: 0 of"), std::string::npos) << tuned.err;
  const auto untuned = parse_json(dlas(eval + " --json"));
  EXPECT_EQ(nlohmann::json::parse(tuned.out)["top1"], untuned["top1"]);
}

TEST_F(EvalCli, DataInfoAndQuantizeWithDatasetCalibration) {
  const auto j = parse_json(dlas("data info synthetic:3,8,8:4:20 --json"));
  EXPECT_EQ(j["splits"]["train"], 20);
  EXPECT_EQ(j["splits"]["test"], 20);
  EXPECT_EQ(j["shape"], nlohmann::json({3, 8, 8}));
  EXPECT_EQ(j["classes"], 4);
  const CliResult t = dlas("data info synthetic");
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("train 512 images"), std::string::npos) << t.out;
  const CliResult bad = dlas("data info cifar10:" + path("none"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("none"), std::string::npos);

  const std::string model = path("nm.onnx");
  export_onnx_file(nearest_mean_model(kData, 1), model);
  const auto q = parse_json(dlas(str("quantize ", model, " --dtype int8 --calib-data ", kData,
                                     " --calib-samples 8 -o ", path("q.onnx"), " --json")));
  EXPECT_EQ(q["calib_data"], kData);
  EXPECT_EQ(q["calib_samples"], 8);
  const CliResult nope =
      dlas(str("quantize ", model, " --dtype int8 --calib-data nosuch -o ", path("x.onnx")));
  EXPECT_EQ(nope.code, 2);
  EXPECT_NE(nope.err.find("--calib-data 'nosuch'"), std::string::npos) << nope.err;
  EXPECT_FALSE(fs::exists(path("x.onnx")));
}

}  // namespace
}  // namespace dlas::test
