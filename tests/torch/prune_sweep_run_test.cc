// The iterative prune-and-fine-tune sweep (dlas/torch/prune_sweep_run.h) on a tiny synthetic
// dataset and a small resnet18-cifar: sweep.json reads back as returned, weight levels reach
// their sparsity and keep the previous level's zeros through fine-tuning, channel levels shrink
// the model and record the fraction of the ORIGINAL channels, the elbow follows find_elbow,
// elbow.onnx scores what was recorded, the fine-tuning epochs add up, Ctrl-C keeps the finished
// levels. Also TrainOptions::max_steps (a fraction of an epoch).
#include "dlas/torch/prune_sweep_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/loader.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;

constexpr const char* kData = "synthetic:1,12,12:4:192";

TrainOptions fast_options() {
  TrainOptions o;
  o.batch = 12;
  o.lr = 0.1;
  o.threads = 1;
  o.seed = 5;
  return o;
}

// A trained 1x12x12 4-class resnet18-cifar at width 0.125 (shared by the tests).
const Graph& trained_baseline() {
  static const Graph g = [] {
    ZooOptions z;
    z.batch = 1;
    z.in_channels = 1;
    z.image_size = 12;
    z.num_classes = 4;
    z.width_mult = 0.125;
    z.seed = 3;
    Graph m = build_zoo_model("resnet18-cifar", z);
    auto train = data::open_dataset(kData, data::Split::kTrain);
    TrainOptions o = fast_options();
    o.epochs = 3;
    o.preprocess = data::default_preprocess(train->info(), true);
    Trainer t(m, o);
    t.fit(*train);
    return t.graph();
  }();
  return g;
}

class PruneSweepRunTest : public ::testing::Test {
 protected:
  fs::path dir_;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / str("dlas_sweep_", info->name(), "_", ::getpid());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  PruneSweepOptions options(PruneMethod m, std::vector<double> levels) {
    PruneSweepOptions o;
    o.model = "resnet18-cifar";
    o.dataset = kData;
    o.method = m;
    o.levels = std::move(levels);
    o.epochs = 1;  // 16 steps of 12 (192 records): 8 per level
    o.train = fast_options();
    o.train.lr = 0.02;
    o.train.schedule = LrSchedule::kCosine;
    o.dir = dir_;
    return o;
  }
};

double engine_top1(const fs::path& model) {
  auto test = data::open_dataset(kData, data::Split::kTest);
  return engine_accuracy(load_model(model.string()), *test,
                         data::default_preprocess(test->info(), false), 100, 1)
      .top1_rate();
}

void expect_common(const PruneSweepRun& run, const fs::path& dir, double epochs) {
  const SweepResult& r = run.result;
  EXPECT_FALSE(run.stopped);
  // sweep.json reads back as returned.
  const SweepResult back = read_sweep(dir / "sweep.json");
  EXPECT_EQ(sweep_to_json(back), sweep_to_json(r));
  EXPECT_EQ(back.test_samples, 192);
  EXPECT_GT(r.baseline.top1, 0.4) << "4 classes: chance is 0.25";
  // The elbow is the rule's answer on the recorded points; the epochs add up.
  EXPECT_EQ(r.elbow, find_elbow(r.points, r.baseline.top1, r.tolerance));
  double sum = 0;
  for (const SweepPoint& p : r.points) {
    sum += p.finetune_epochs;
    EXPECT_TRUE(fs::exists(dir / p.model)) << p.model;
    EXPECT_GE(p.top1, 0);
    EXPECT_GE(p.top1_pruned, 0);
    EXPECT_LE(p.nonzero_params, p.params);
    EXPECT_GT(p.macs, 0);
  }
  EXPECT_NEAR(sum, epochs, 1e-9);
  std::ifstream csv(dir / "curve.csv");
  int lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, 2 + static_cast<int>(r.points.size()));
}

TEST_F(PruneSweepRunTest, WeightLevelsKeepTheirZerosAndTheElbowModelScoresAsRecorded) {
  PruneSweepOptions o = options(PruneMethod::kWeight, {0.5, 0.8});
  o.tolerance = 1.0;  // every level qualifies: the elbow is the last one
  const PruneSweepRun run = run_prune_sweep(trained_baseline(), o);
  const SweepResult& r = run.result;
  expect_common(run, dir_, 1.0);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[0].spec, "wp:0.5");
  EXPECT_EQ(r.points[1].model, "weight-0.80.onnx");
  for (const SweepPoint& p : r.points) EXPECT_GE(p.achieved, p.level - 1e-6) << p.spec;
  EXPECT_LT(r.points[1].nonzero_params, r.points[0].nonzero_params);
  EXPECT_EQ(r.points[1].params, r.baseline.params);  // weight pruning zeroes, keeps shapes
  // Level 2 pruned the fine-tuned level 1 further: every zero of level 1 is still zero.
  const Graph a = load_model((dir_ / r.points[0].model).string());
  const Graph b = load_model((dir_ / r.points[1].model).string());
  const PruneReport ra = describe_weights(a);
  int64_t checked = 0;
  for (const PruneLayer& l : ra.layers) {
    if (!l.pruned) continue;
    const Tensor& wa = a.initializers.at(l.weight);
    const Tensor& wb = b.initializers.at(l.weight);
    for (int64_t i = 0; i < wa.numel(); ++i) {
      if (wa.data<float>()[i] != 0.f) continue;
      ASSERT_EQ(wb.data<float>()[i], 0.f) << l.weight << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GE(checked, ra.prunable_params / 2);
  // The elbow's model and its engine accuracy.
  ASSERT_EQ(r.elbow, 1);
  EXPECT_EQ(engine_top1(dir_ / "elbow.onnx"), r.points[1].top1);
  EXPECT_EQ(engine_top1(dir_ / r.points[0].model), r.points[0].top1);
  // Quantized accuracies: fp16, int8 uncalibrated, int8 calibrated (auto, the default).
  ASSERT_EQ(r.baseline_quant.size(), 3u);
  EXPECT_EQ(r.baseline_quant[0].compress, "fp16");
  EXPECT_EQ(r.baseline_quant[1].compress, "int8:none");
  EXPECT_EQ(r.baseline_quant[2].compress, "int8");
  ASSERT_EQ(r.elbow_quant.size(), 3u);
  EXPECT_NEAR(r.elbow_quant[0].top1, r.points[1].top1, 0.02) << "fp16 is within a few images";
}

TEST_F(PruneSweepRunTest, ChannelLevelsShrinkTheModelAndCountAgainstTheOriginal) {
  PruneSweepOptions o = options(PruneMethod::kChannel, {0.25, 0.5});
  o.quant = false;
  const PruneSweepRun run = run_prune_sweep(trained_baseline(), o);
  const SweepResult& r = run.result;
  expect_common(run, dir_, 1.0);
  ASSERT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.points[1].spec, "cp:0.5");
  EXPECT_LT(r.points[0].params, r.baseline.params);
  EXPECT_LT(r.points[1].params, r.points[0].params);
  EXPECT_LT(r.points[1].macs, r.points[0].macs);
  // achieved = removed / the baseline's prunable channels, exactly round(level x c).
  Graph probe = trained_baseline();
  PruneSpec none;
  none.method = PruneMethod::kChannel;
  const int64_t c = prune(probe, none).prunable_channels;
  ASSERT_GT(c, 8);
  for (const SweepPoint& p : r.points) {
    EXPECT_DOUBLE_EQ(p.achieved, static_cast<double>(std::llround(p.level * c)) / c) << p.spec;
  }
  // The level-2 model's own prunable channels are what is left of the original.
  Graph l2 = load_model((dir_ / r.points[1].model).string());
  EXPECT_EQ(prune(l2, none).prunable_channels, c - std::llround(0.5 * c));
  EXPECT_TRUE(r.baseline_quant.empty());
}

TEST_F(PruneSweepRunTest, StopKeepsTheFinishedLevels) {
  PruneSweepOptions o = options(PruneMethod::kWeight, {0.3, 0.6, 0.9});
  o.quant = false;
  std::atomic<bool> stop{false};
  o.stop = &stop;
  o.on_line = [&stop](const std::string& l) {
    if (l.rfind("level 1/", 0) == 0) stop = true;  // as if Ctrl-C came during level 2
  };
  const PruneSweepRun run = run_prune_sweep(trained_baseline(), o);
  EXPECT_TRUE(run.stopped);
  ASSERT_EQ(run.result.points.size(), 1u);
  const SweepResult back = read_sweep(dir_ / "sweep.json");
  ASSERT_EQ(back.points.size(), 1u);
  EXPECT_EQ(back.points[0].spec, "wp:0.3");
  EXPECT_FALSE(fs::exists(dir_ / sweep_model_file(PruneMethod::kWeight, 0.6)));
}

// sweep.json with the timings zeroed: what a resumed run must reproduce exactly.
std::string untimed(SweepResult r) {
  for (SweepPoint* p : {&r.baseline}) p->finetune_seconds = 0;
  for (SweepPoint& p : r.points) p.finetune_seconds = 0;
  return sweep_to_json(r);
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST_F(PruneSweepRunTest, ResumeAfterTheFirstLevelEqualsTheUninterruptedSweep) {
  for (PruneMethod m : {PruneMethod::kWeight, PruneMethod::kChannel}) {
    SCOPED_TRACE(sweep_method_name(m));
    PruneSweepOptions o = options(m, {0.3, 0.6});
    o.quant = m == PruneMethod::kWeight;  // the quantized accuracies of one method suffice
    o.tolerance = 1.0;                    // an elbow (and elbow.onnx, elbow_quant) either way
    o.settings["model-hash"] = "test";
    o.dir = dir_ / "straight";
    const PruneSweepRun straight = run_prune_sweep(trained_baseline(), o);
    ASSERT_FALSE(straight.stopped);
    ASSERT_EQ(straight.result.points.size(), 2u);
    EXPECT_EQ(straight.result.settings.at("lr"), "0.02");
    EXPECT_EQ(straight.result.settings.at("model-hash"), "test");

    // Stopped after the first level (as Ctrl-C during the second), then resumed.
    PruneSweepOptions oi = o;
    oi.dir = dir_ / "resumed";
    std::atomic<bool> stop{false};
    oi.stop = &stop;
    oi.on_line = [&stop](const std::string& l) {
      if (l.rfind("level 1/", 0) == 0) stop = true;
    };
    const PruneSweepRun cut = run_prune_sweep(trained_baseline(), oi);
    ASSERT_TRUE(cut.stopped);
    ASSERT_EQ(read_sweep(oi.dir / "sweep.json").points.size(), 1u);

    // Another setting is refused, naming it, and leaves the directory as it was.
    const std::string before = file_bytes(oi.dir / "sweep.json");
    for (int which = 0; which < 3; ++which) {
      PruneSweepOptions bad = oi;
      bad.stop = nullptr;
      bad.resume = true;
      const char* name = "lr";
      if (which == 0) bad.train.lr = 0.05;
      if (which == 1) {
        bad.levels = {0.3, 0.7};
        name = "levels";
      }
      if (which == 2) {
        bad.settings["model-hash"] = "other";
        name = "model-hash";
      }
      try {
        run_prune_sweep(trained_baseline(), bad);
        ADD_FAILURE() << "resumed with another " << name;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
        EXPECT_NE(std::string(e.what()).find(str(" ", name, " ")), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(file_bytes(oi.dir / "sweep.json"), before);

    PruneSweepOptions orr = oi;
    orr.stop = nullptr;
    std::string lines;
    orr.on_line = [&lines](const std::string& l) { lines += l + "\n"; };
    orr.resume = true;
    const PruneSweepRun resumed = run_prune_sweep(trained_baseline(), orr);
    EXPECT_FALSE(resumed.stopped);
    // Only the second level ran (the first and the baseline were kept).
    EXPECT_NE(lines.find("1 of 2 levels done"), std::string::npos) << lines;
    EXPECT_EQ(lines.find("level 1/2"), std::string::npos) << lines;
    EXPECT_EQ(lines.find("baseline:"), std::string::npos) << lines;
    EXPECT_NE(lines.find("level 2/2"), std::string::npos) << lines;
    EXPECT_EQ(untimed(resumed.result), untimed(straight.result));
    EXPECT_EQ(untimed(read_sweep(orr.dir / "sweep.json")), untimed(straight.result));
    // The same files, the models byte for byte.
    std::vector<std::string> files = {"baseline.onnx", "sweep.json", "curve.csv"};
    for (const SweepPoint& p : straight.result.points) files.push_back(p.model);
    files.push_back("elbow.onnx");
    for (const std::string& f : files) {
      ASSERT_TRUE(fs::exists(orr.dir / f)) << f;
      if (f.find(".onnx") != std::string::npos) {
        EXPECT_EQ(file_bytes(orr.dir / f), file_bytes(o.dir / f)) << f;
      }
    }
  }
  // --resume where there is no sweep: one clear error.
  PruneSweepOptions none = options(PruneMethod::kWeight, {0.5});
  none.dir = dir_ / "empty";
  none.resume = true;
  try {
    run_prune_sweep(trained_baseline(), none);
    ADD_FAILURE() << "resumed a sweep that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no sweep to resume"), std::string::npos) << e.what();
  }
}

TEST_F(PruneSweepRunTest, BadLevelsAndShapesAreInvalidInput) {
  auto code = [&](PruneSweepOptions o, const Graph& g) {
    try {
      run_prune_sweep(g, o);
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::kRuntime;
  };
  EXPECT_EQ(code(options(PruneMethod::kWeight, {0.5, 0.4}), trained_baseline()),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(code(options(PruneMethod::kWeight, {0.5, 1.0}), trained_baseline()),
            ErrorKind::kInvalidInput);
  EXPECT_EQ(code(options(PruneMethod::kBlock, {0.5}), trained_baseline()),
            ErrorKind::kInvalidInput);
  PruneSweepOptions other = options(PruneMethod::kWeight, {0.5});
  other.dataset = "synthetic:1,16,16:4:64";  // 16x16 images for a 12x12 model
  EXPECT_EQ(code(other, trained_baseline()), ErrorKind::kInvalidInput);
  other.dataset = "synthetic:1,12,12:10:64";  // 10 classes for a 4-class model
  EXPECT_EQ(code(other, trained_baseline()), ErrorKind::kInvalidInput);
  EXPECT_FALSE(fs::exists(dir_ / "sweep.json"));
}

TEST(PruneSweepChannelStep, RemovesTheFractionOfWhatRemains) {
  // 100 channels, 80 left (level 0.2 done): level 0.5 keeps 50, so 30 of the 80 go.
  PruneSpec s = channel_step_spec(100, 80, 0.5);
  EXPECT_EQ(s.method, PruneMethod::kChannel);
  EXPECT_EQ(std::llround(s.sparsity * 80), 30);
  EXPECT_NEAR(s.sparsity, 1 - (1 - 0.5) / (1 - 0.2), 1e-12);
  // 0.99 of 10 channels would remove all: one is kept.
  EXPECT_EQ(std::llround(channel_step_spec(10, 10, 0.99).sparsity * 10), 9);
  EXPECT_EQ(channel_step_spec(100, 50, 0.5).sparsity, 0.0);
}

TEST(TrainMaxSteps, StopsMidEpochWithTheScheduleSpanningTheSteps) {
  auto train = data::open_dataset(kData, data::Split::kTrain);  // 192 records: 16 steps/epoch
  ZooOptions z;
  z.in_channels = 1;
  z.image_size = 12;
  z.num_classes = 4;
  z.width_mult = 0.125;
  const Graph g = build_zoo_model("resnet18-cifar", z);
  TrainOptions o = fast_options();
  o.epochs = 2;
  o.max_steps = 21;
  o.preprocess = data::default_preprocess(train->info(), true);
  int64_t total = 0, last_step = 0;
  double last_lr = -1;
  o.schedule = LrSchedule::kCosine;
  o.on_progress = [&](const TrainProgress& p) {
    total = p.total_steps;
    last_step = p.global_step;
    last_lr = p.lr;
  };
  Trainer t(g, o);
  const TrainResult r = t.fit(*train);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.global_step, 21);
  EXPECT_EQ(r.epochs_done, 1);  // the second epoch was cut after 5 of 16 steps
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[1].samples, 5 * 12);
  EXPECT_EQ(total, 21);
  EXPECT_EQ(last_step, 21);
  EXPECT_DOUBLE_EQ(last_lr, scheduled_lr(LrSchedule::kCosine, o.lr, 20, 21));
  EXPECT_LT(last_lr, 0.01 * o.lr);  // the cosine reached (almost) zero at the cut
}

}  // namespace
}  // namespace dlas
