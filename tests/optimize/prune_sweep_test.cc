// sweep.json and the elbow rule (dlas/optimize/prune_sweep.h).
#include "dlas/optimize/prune_sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dlas/core/error.h"

namespace dlas {
namespace {

SweepPoint point(double level, double top1) {
  SweepPoint p;
  p.level = level;
  p.spec = "wp:" + std::to_string(level);
  p.top1 = top1;
  p.top5 = 0.99;
  p.model = "level.onnx";
  return p;
}

// A fixture curve shaped like the paper's Fig. 3: flat, then falling off past 0.9.
std::vector<SweepPoint> fixture_curve() {
  return {point(0.5, 0.931),  point(0.6, 0.934),  point(0.7, 0.930), point(0.8, 0.927),
          point(0.9, 0.9221), point(0.95, 0.915), point(0.99, 0.71)};
}

TEST(PruneSweep, ElbowIsTheHighestLevelWithinTolerance) {
  auto c = fixture_curve();
  EXPECT_EQ(find_elbow(c, 0.932, 0.01), 4);   // 0.9221 >= 0.922
  EXPECT_EQ(find_elbow(c, 0.9322, 0.01), 3);  // 0.9221 < 0.9222: 0.8 is the elbow
  EXPECT_EQ(find_elbow(c, 0.932, 0.02), 5);   // a looser tolerance reaches 0.95
  EXPECT_EQ(find_elbow(c, 0.932, 0.25), 6);   // everything qualifies
  EXPECT_EQ(find_elbow(c, 0.99, 0.01), -1);   // nothing within a point of 99%
  // Order does not matter, unmeasured points never qualify.
  std::swap(c[0], c[4]);
  c[5].top1 = -1;
  EXPECT_EQ(c[find_elbow(c, 0.932, 0.02)].level, 0.9);
}

TEST(PruneSweep, PaperLevels) {
  EXPECT_EQ(default_sweep_levels(PruneMethod::kWeight),
            (std::vector<double>{0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99}));
  auto ch = default_sweep_levels(PruneMethod::kChannel);
  ASSERT_EQ(ch.size(), 20u);
  EXPECT_DOUBLE_EQ(ch[0], 0.05);
  EXPECT_DOUBLE_EQ(ch[18], 0.95);
  EXPECT_DOUBLE_EQ(ch[19], 0.99);
  EXPECT_THROW(default_sweep_levels(PruneMethod::kBlock), Error);
  EXPECT_EQ(parse_sweep_method("channel"), PruneMethod::kChannel);
  EXPECT_THROW(parse_sweep_method("block"), Error);
}

TEST(PruneSweep, JsonRoundTripAndErrorsNameTheField) {
  SweepResult r;
  r.model = "resnet18-cifar";
  r.dataset = "fashion-mnist";
  r.method = PruneMethod::kChannel;
  r.tolerance = 0.005;
  r.total_finetune_epochs = 3;
  r.test_samples = 10000;
  r.baseline = point(0, 0.93);
  r.baseline.spec = "dense";
  r.points = fixture_curve();
  r.points[2].params = 123456789012;
  r.elbow = 3;
  r.baseline_quant = {{"fp16", 0.93, 0.999}, {"int8:none", 0.8, 0.97}};
  r.elbow_quant = {{"int8:minmax", 0.925, 0.998}};
  auto dir = std::filesystem::temp_directory_path() / "dlas_sweep_test";
  std::filesystem::create_directories(dir);
  write_sweep(dir / "sweep.json", r);
  SweepResult b = read_sweep(dir / "sweep.json");
  EXPECT_EQ(b.dir, dir);
  EXPECT_EQ(sweep_to_json(b), sweep_to_json(r));
  EXPECT_EQ(b.method, PruneMethod::kChannel);
  EXPECT_EQ(b.points[2].params, 123456789012);
  ASSERT_EQ(b.elbow_quant.size(), 1u);
  EXPECT_EQ(b.elbow_quant[0].compress, "int8:minmax");
  EXPECT_TRUE(b.settings.empty());  // optional: absent when there are none
  EXPECT_EQ(sweep_to_json(r).find("settings"), std::string::npos);
  SweepResult with = r;
  with.settings = {{"lr", "0.01"}, {"model-hash", "0123456789abcdef"}};
  SweepResult wb = sweep_from_json(sweep_to_json(with), "w.json");
  EXPECT_EQ(wb.settings, with.settings);
  EXPECT_EQ(sweep_to_json(wb), sweep_to_json(with));

  auto message = [](const std::string& text) {
    try {
      sweep_from_json(text, "s.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string good = sweep_to_json(r);
  EXPECT_NE(message(good.substr(0, good.size() / 2)).find("s.json: not valid JSON"),
            std::string::npos);
  auto j = good;
  j.replace(j.find("\"elbow\": 3"), 10, "\"elbow\": 9");
  EXPECT_NE(message(j).find("s.json: .elbow:"), std::string::npos);
  j = good;
  j.replace(j.find("\"top1_pruned\""), 13, "\"top1_prune\"");
  EXPECT_NE(message(j).find(".baseline.top1_pruned: missing"), std::string::npos);
  j = sweep_to_json(with);
  j.replace(j.find("\"0.01\""), 6, "0.01");
  EXPECT_NE(message(j).find("s.json: .settings.lr: expected a string"), std::string::npos)
      << message(j);
  EXPECT_THROW(read_sweep(dir / "absent.json"), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlas
