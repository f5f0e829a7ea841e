// dlas explore's fine-tuned pruning levels (dlas prune-sweep, libtorch) on a tiny CNN: the
// levels that can beat the best deployment are fine-tuned and raced like the others.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/nearest_mean_model.h"
#include "dlas/model/onnx.h"
#include "optimize/cli_test_util.h"

namespace dlas {
namespace {

constexpr const char* kData = "synthetic:1,8,8:4:1200";

class ExploreFinetune : public test::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ::setenv("DLAS_MEASURE_LOCK", path("measure.lock").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("DLAS_MEASURE_LOCK");
    CliTest::TearDown();
  }
  // Explores the tiny CNN over fp16 and the fine-tuned levels the [explore] lines name, into
  // out/.
  test::CliResult explore(const std::string& explore_keys, const std::string& max_drop) {
    export_onnx_file(test::nearest_mean_cnn(kData), path("m.onnx"));
    std::ofstream(path("space.toml"))
        << "[space]\ncompress = [\"fp16\"]\nconv_algo = [\"auto\"]\n"
           "layout = [\"auto\"]\nbackend = [\"dlas\"]\n"
           "tuning = \"untuned\"\n[explore]\n"
        << explore_keys << "finetune_epochs = 0.2\nfinetune_all = true\nfinetuned_quant = [\"\"]\n";
    return dlas(str("explore ", path("m.onnx"), " --dataset ", kData, " --max-drop ", max_drop,
                    " --threads 1 --space ", path("space.toml"), " --repeat 3 --rounds 1 -o ",
                    path("out")));
  }
};

TEST_F(ExploreFinetune, FineTunedLevelsJoinTheRace) {
  const test::CliResult r = explore("weight_levels = [0.5]\nchannel_levels = []\n", "100");
  const std::string out = path("out");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(out + "/sweeps/weight/sweep.json")) << r.err;
  const auto j = nlohmann::json::parse(slurp(out + "/explore.json"));
  bool raced = false;
  for (const auto& m : j["models"])
    if (m["source"] == "fine-tuned") {
      EXPECT_EQ(m["compress"], "wp:0.5");
      // Raced: scored like any model. A budget of 100 points drops none as outside it; it
      // may leave the race dominated (a faster model no larger and at least as accurate).
      EXPECT_GE(m["samples"].get<int64_t>(), 500);
      if (m["state"] == "dropped")
        EXPECT_NE(m["reason"].get<std::string>().find("dominated"), std::string::npos);
      else
        EXPECT_EQ(m["state"], "confirmed");
      raced = true;
    }
  EXPECT_TRUE(raced) << r.err;
}

// A channel level outside the budget is fine-tuned longer (dlas train from its fine-tuned
// weights) and raced again as its own model. A budget of 0 points and "always" (however far
// it missed, however fast it runs) make the 75% channel-pruned level of the tiny CNN a
// candidate whenever its fine-tuning leaves any drop at all.
TEST_F(ExploreFinetune, AMissedLevelIsFineTunedLongerAndRacedAgain) {
  const test::CliResult r =
      explore("weight_levels = []\nchannel_levels = [0.75]\nfinetune_longer = \"always\"\n", "0");
  const std::string out = path("out");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(out + "/explore.json"));
  double drop = -1e9, longer = -1;
  for (const auto& m : j["models"]) {
    if (m["model"] == "cp:0.75 fine-tuned")  // the paired estimate of its drop, points
      drop = (m["drop_interval_points"][0].get<double>() +
              m["drop_interval_points"][1].get<double>()) /
             2;
    if (m["model"] == "cp:0.75 fine-tuned longer") {
      EXPECT_GE(m["samples"].get<int64_t>(), 500);  // raced like any model
      longer = m["accuracy"].get<double>();
    }
  }
  ASSERT_GT(drop, -1e9) << r.err;
  // Only a level that missed the budget is fine-tuned longer.
  if (drop > 0) {
    ASSERT_GE(longer, 0) << r.err;
    EXPECT_TRUE(std::filesystem::exists(out + "/sweeps/channel/longer/channel-0.75.onnx"));
    EXPECT_NE(r.err.find("epochs longer"), std::string::npos) << r.err;
  } else {
    EXPECT_LT(longer, 0) << r.err;
  }
}

}  // namespace
}  // namespace dlas
