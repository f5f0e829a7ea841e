// Training with libtorch on the dlas graph (dlas/torch/train.h): the CIFAR zoo models are
// interpretable and their eval-mode forward equals the dlas engine's; a short deterministic
// run learns a small patterned dataset; pruned weights stay zero; a run interrupted and
// resumed from its checkpoint ends bit-identical to the uninterrupted one; the schedules
// follow PyTorch's formulas.
#include "dlas/torch/train.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/plan.h"

namespace dlas {
namespace {

const char* const kCifarModels[] = {"resnet18-cifar", "mobilenetv1-cifar", "mobilenetv2-cifar",
                                    "vgg16-cifar"};

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// 1 x S x S images of 4 classes: noise plus a bright square in the quadrant of the class.
class PatternDataset : public data::Dataset {
 public:
  PatternDataset(int64_t n, int64_t size, uint64_t seed) : n_(n), seed_(seed) {
    info_.name = "pattern";
    info_.channels = 1;
    info_.height = info_.width = size;
    info_.classes = 4;
  }
  const data::DatasetInfo& info() const override { return info_; }
  int64_t size() const override { return n_; }
  int label(int64_t i) const override { return static_cast<int>(mix(seed_ * 7919 + i) % 4); }
  void image_u8(int64_t i, uint8_t* out) const override {
    const int64_t s = info_.height, h = s / 2;
    const int c = label(i);
    for (int64_t y = 0; y < s; ++y) {
      for (int64_t x = 0; x < s; ++x) {
        uint64_t r = mix(seed_ ^ mix(static_cast<uint64_t>(i * s * s + y * s + x)));
        int v = static_cast<int>(r % 120);
        bool in = (y / h) == (c / 2) && (x / h) == (c % 2);
        out[y * s + x] = static_cast<uint8_t>(in ? v + 100 : v);
      }
    }
  }

 private:
  int64_t n_;
  uint64_t seed_;
  data::DatasetInfo info_;
};

Graph small_zoo(const char* name, int64_t batch, int64_t image, int64_t classes, double width) {
  ZooOptions o;
  o.batch = batch;
  o.in_channels = 1;
  o.image_size = image;
  o.num_classes = classes;
  o.width_mult = width;
  o.seed = 3;
  return build_zoo_model(name, o);
}

Tensor random_images(int64_t n, int64_t size, uint64_t seed) {
  Tensor t(DType::kF32, {n, 1, size, size});
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    p[i] = static_cast<float>(mix(seed * 1000003 + i) >> 11) * 0x1.0p-53f * 2.f - 1.f;
  }
  return t;
}

std::vector<int> random_labels(int64_t n, int classes, uint64_t seed) {
  std::vector<int> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<int>(mix(seed + i) % classes));
  return v;
}

TEST(Train, CifarZooModelsAreTrainable) {
  for (const char* name : kCifarModels) {
    Graph g = small_zoo(name, 1, 28, 10, 0.25);
    std::string why;
    EXPECT_TRUE(trainer_supports(g, &why)) << name << ": " << why;
  }
  Graph g;
  g.inputs.push_back({"x", DType::kF32, {1, 1, 4, 4}});
  g.nodes.push_back({"n", "NoSuchOp", {"x"}, {"y"}, {}});
  std::string why;
  EXPECT_FALSE(trainer_supports(g, &why));
  EXPECT_NE(why.find("NoSuchOp"), std::string::npos) << why;
}

// After a few training steps (BatchNorm statistics and weights moved), the trainer's eval-mode
// forward equals the dlas engine (a compiled Plan, BatchNorm folded) on the written-back graph.
TEST(Train, EvalForwardEqualsEngineForEveryCifarZooModel) {
  for (const char* name : kCifarModels) {
    SCOPED_TRACE(name);
    const int64_t image = std::string(name) == "vgg16-cifar" ? 32 : 16;  // VGG pools 5 times
    Graph g = small_zoo(name, 4, image, 10, 0.125);
    TrainOptions o;
    o.threads = 1;
    Trainer trainer(g, o);
    for (int s = 0; s < 3; ++s) {
      trainer.train_step(random_images(4, image, 10 + s), random_labels(4, 10, s), 0.05);
    }
    Tensor x = random_images(4, image, 99);
    Tensor torch_eval = trainer.forward(x, /*training=*/false);
    PlanOptions po;
    po.threads = 1;
    Plan plan(trainer.graph(), po);
    Tensor engine = plan.run({x}).at(0);
    // (Training mode updates the running statistics: after the plan took them.)
    Tensor torch_train = trainer.forward(x, /*training=*/true);
    ASSERT_EQ(engine.shape(), torch_eval.shape());
    double scale = 0, diff = 0, train_diff = 0;
    for (int64_t i = 0; i < engine.numel(); ++i) {
      double e = engine.data<float>()[i];
      scale = std::max(scale, std::abs(e));
      diff = std::max(diff, std::abs(e - torch_eval.data<float>()[i]));
      train_diff = std::max(train_diff, std::abs(e - torch_train.data<float>()[i]));
    }
    EXPECT_GT(scale, 0.0);
    EXPECT_LE(diff, 1e-4 * scale + 1e-6) << "scale " << scale;
    // Training mode (batch statistics) is a different function: the comparison has teeth.
    EXPECT_GT(train_diff, 1e-3 * scale);
  }
}

TrainOptions pattern_options() {
  TrainOptions o;
  o.epochs = 3;
  o.batch = 16;
  o.lr = 0.1;
  o.schedule = LrSchedule::kOneCycle;
  o.threads = 1;
  o.seed = 5;
  o.augment = false;
  return o;
}

TEST(Train, ShortRunLearnsAndBeatsChanceWidely) {
  PatternDataset train(256, 16, 1), test(128, 16, 2);
  Graph g = small_zoo("resnet18-cifar", 1, 16, 4, 0.125);
  Trainer trainer(g, pattern_options());
  TrainResult r = trainer.fit(train);
  ASSERT_EQ(r.epochs.size(), 3u);
  EXPECT_EQ(r.global_step, 3 * (256 / 16));
  EXPECT_LT(r.epochs.back().loss, r.epochs.front().loss);
  data::Accuracy torch_acc = trainer.evaluate(test, data::Preprocess{}, 32);
  data::Accuracy engine_acc = engine_accuracy(trainer.graph(), test, data::Preprocess{}, 32, 1);
  EXPECT_EQ(engine_acc.samples, 128);
  EXPECT_GE(engine_acc.top1_rate(), 0.75) << "chance is 0.25";
  EXPECT_NEAR(engine_acc.top1_rate(), torch_acc.top1_rate(), 2.0 / 128);
}

TEST(Train, PrunedWeightsStayZero) {
  PatternDataset train(64, 16, 1);
  Graph g = small_zoo("resnet18-cifar", 1, 16, 4, 0.125);
  // Prune every other weight of the first conv (zeros -> implicit mask) and give the
  // classifier an explicit mask that keeps only its first row.
  const std::string conv_w = g.nodes.front().inputs.at(1);
  Tensor& w = g.initializers.at(conv_w);
  for (int64_t i = 0; i < w.numel(); i += 2) w.data<float>()[i] = 0.f;
  std::string fc_w;
  for (const Node& n : g.nodes) {
    if (n.op == "Gemm") fc_w = n.inputs.at(1);
  }
  ASSERT_FALSE(fc_w.empty());
  const Tensor fc_before = g.initializers.at(fc_w).clone();
  Tensor mask(DType::kF32, fc_before.shape());
  for (int64_t i = 0; i < mask.numel(); ++i) {
    mask.data<float>()[i] = i < fc_before.dim(1) ? 1.f : 0.f;  // Gemm weight [classes, in]
  }
  TrainOptions o = pattern_options();
  o.epochs = 1;
  o.masks[fc_w] = mask;
  Trainer trainer(g, o);
  EXPECT_EQ(trainer.masked_names().size(), 2u);
  trainer.fit(train);
  Graph out = trainer.graph();
  const Tensor& w2 = out.initializers.at(conv_w);
  int64_t changed = 0;
  for (int64_t i = 0; i < w2.numel(); ++i) {
    if (i % 2 == 0) {
      ASSERT_EQ(w2.data<float>()[i], 0.f) << "pruned conv weight " << i;
    } else if (w2.data<float>()[i] != w.data<float>()[i]) {
      ++changed;
    }
  }
  EXPECT_GT(changed, w2.numel() / 4) << "unpruned weights must train";
  const Tensor& fc2 = out.initializers.at(fc_w);
  int64_t fc_changed = 0;
  for (int64_t i = 0; i < fc2.numel(); ++i) {
    if (mask.data<float>()[i] == 0.f) {
      ASSERT_EQ(fc2.data<float>()[i], 0.f) << "masked classifier weight " << i;
    } else {
      fc_changed += fc2.data<float>()[i] != fc_before.data<float>()[i];
    }
  }
  EXPECT_GT(fc_changed, 0);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_identical(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.initializers.size(), b.initializers.size());
  for (const auto& [name, t] : a.initializers) {
    EXPECT_TRUE(same_bits(t, b.initializers.at(name))) << name;
  }
}

std::string temp_path(const char* tag) {
  return (std::filesystem::temp_directory_path() /
          str("dlas_train_", tag, "_", ::getpid(), ".ckpt"))
      .string();
}

TEST(Train, ResumeContinuesIdentically) {
  PatternDataset train(96, 12, 1);
  Graph g = small_zoo("resnet18-cifar", 1, 12, 4, 0.125);
  TrainOptions o = pattern_options();
  o.epochs = 2;
  o.augment = true;  // exercise the loader's per-epoch draws too
  o.preprocess.pad = 2;
  o.preprocess.hflip = true;
  Trainer straight(g, o);
  straight.fit(train);
  const Graph want = straight.graph();

  // 1 epoch, then a fresh trainer resumes from the checkpoint for the second.
  const std::string ckpt = temp_path("epoch");
  TrainOptions o1 = o;
  o1.checkpoint = ckpt;
  o1.stop_after_epochs = 1;
  {
    Trainer first(g, o1);
    TrainResult r = first.fit(train);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.epochs_done, 1);
  }
  TrainOptions o2 = o;
  o2.checkpoint = ckpt;
  o2.resume = true;
  Trainer second(g, o2);
  TrainResult r2 = second.fit(train);
  EXPECT_FALSE(r2.stopped);
  EXPECT_EQ(r2.epochs.size(), 1u);
  EXPECT_EQ(second.global_step(), straight.global_step());
  expect_identical(second.graph(), want);

  // Interrupted in the middle of the first epoch (the stop flag, as SIGINT raises it).
  std::atomic<bool> stop{false};
  TrainOptions o3 = o;
  o3.checkpoint = ckpt;
  o3.stop = &stop;
  o3.on_progress = [&](const TrainProgress& p) {
    if (p.global_step == 3) stop.store(true);
  };
  {
    Trainer third(g, o3);
    TrainResult r = third.fit(train);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.global_step, 3);
  }
  Trainer fourth(g, o2);
  fourth.fit(train);
  expect_identical(fourth.graph(), want);

  // A checkpoint of another configuration is refused, naming the flag.
  TrainOptions bad = o2;
  bad.lr = 0.2;
  Trainer other(g, bad);
  try {
    other.fit(train);
    ADD_FAILURE() << "a checkpoint made with another --lr was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--lr"), std::string::npos) << e.what();
  }
  std::filesystem::remove(ckpt);
  // A corrupt checkpoint names the file.
  {
    std::FILE* f = std::fopen(ckpt.c_str(), "wb");
    std::fputs("DLASCKPT\x01", f);
    std::fclose(f);
  }
  try {
    Trainer t(g, o2);
    t.fit(train);
    ADD_FAILURE() << "a corrupt checkpoint was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(ckpt), std::string::npos) << e.what();
  }
  std::filesystem::remove(ckpt);
}

TEST(Train, FractionalEpochsResumeIdentically) {
  // 96 records, batch 16: 6 steps per epoch; 1.5 epochs = 9 steps, the second epoch cut at 3.
  PatternDataset train(96, 12, 1);
  Graph g = small_zoo("resnet18-cifar", 1, 12, 4, 0.125);
  TrainOptions o = pattern_options();
  o.epochs = 1.5;
  o.label_smoothing = 0.1;
  std::vector<double> lrs;
  int64_t total_seen = 0;
  int epochs_seen = 0;
  TrainOptions os = o;
  os.on_progress = [&](const TrainProgress& p) {
    lrs.push_back(p.lr);
    total_seen = p.total_steps;
    epochs_seen = p.epochs;
  };
  Trainer straight(g, os);
  const TrainResult r = straight.fit(train);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.global_step, 9);
  EXPECT_EQ(r.epochs_done, 1);  // the partial epoch is reported, not counted
  ASSERT_EQ(r.epochs.size(), 2u);
  EXPECT_EQ(r.epochs[0].samples, 6 * 16);
  EXPECT_EQ(r.epochs[1].samples, 3 * 16);
  EXPECT_EQ(total_seen, 9);
  EXPECT_EQ(epochs_seen, 2);
  // The schedule spans exactly the 9 steps: it ends at onecycle's final rate.
  ASSERT_EQ(lrs.size(), 9u);
  EXPECT_DOUBLE_EQ(lrs.back(), scheduled_lr(o.schedule, o.lr, 8, 9));
  EXPECT_NEAR(lrs.back(), o.lr / 25 / 1e4, 1e-12);
  const Graph want = straight.graph();

  // Interrupted inside the partial epoch (step 7), then resumed: bit-identical.
  const std::string ckpt = temp_path("frac");
  std::atomic<bool> stop{false};
  TrainOptions o1 = o;
  o1.checkpoint = ckpt;
  o1.stop = &stop;
  o1.on_progress = [&](const TrainProgress& p) {
    if (p.global_step == 7) stop.store(true);
  };
  {
    Trainer first(g, o1);
    const TrainResult r1 = first.fit(train);
    EXPECT_TRUE(r1.stopped);
    EXPECT_EQ(r1.global_step, 7);
  }
  TrainOptions o2 = o;
  o2.checkpoint = ckpt;
  o2.resume = true;
  {
    Trainer second(g, o2);
    const TrainResult r2 = second.fit(train);
    EXPECT_FALSE(r2.stopped);
    EXPECT_EQ(r2.global_step, 9);
    ASSERT_EQ(r2.epochs.size(), 1u);
    EXPECT_EQ(r2.epochs[0].samples, 3 * 16);  // the resumed epoch keeps its earlier samples
    expect_identical(second.graph(), want);
  }
  // The checkpoint holds the fractional epochs and the smoothing: other values are refused.
  for (int which = 0; which < 2; ++which) {
    TrainOptions bad = o2;
    (which ? bad.label_smoothing : bad.epochs) = which ? 0.2 : 2.0;
    Trainer other(g, bad);
    try {
      other.fit(train);
      ADD_FAILURE() << "a checkpoint made with other settings was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(which ? "--label-smoothing" : "--epochs"),
                std::string::npos)
          << e.what();
    }
  }
  std::filesystem::remove(ckpt);
  // A fraction that rounds to no step is refused.
  TrainOptions tiny = o;
  tiny.epochs = 0.05;
  Trainer t(g, tiny);
  EXPECT_THROW(t.fit(train), Error);
}

TEST(Train, LabelSmoothingLossMatchesHandComputation) {
  // The loss of a training step is computed before the update, on the training-mode logits
  // (batch statistics), which forward(images, true) reproduces for the same parameters.
  Graph g = small_zoo("resnet18-cifar", 1, 12, 4, 0.125);
  const Tensor x = random_images(6, 12, 11);
  const std::vector<int> y = random_labels(6, 4, 12);
  for (double s : {0.0, 0.1, 0.3}) {
    TrainOptions o = pattern_options();
    o.label_smoothing = s;
    Trainer trainer(g, o);
    const Tensor logits = trainer.forward(x, /*training=*/true);
    ASSERT_EQ(logits.rank(), 2);
    const int64_t n = logits.dim(0), k = logits.dim(1);
    double want = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float* l = logits.data<float>() + i * k;
      double mx = l[0];
      for (int64_t c = 1; c < k; ++c) mx = std::max(mx, static_cast<double>(l[c]));
      double sum = 0;
      for (int64_t c = 0; c < k; ++c) sum += std::exp(l[c] - mx);
      const double lse = mx + std::log(sum);
      double nll_all = 0;  // sum over classes of -log p
      for (int64_t c = 0; c < k; ++c) nll_all += lse - l[c];
      want += (1 - s) * (lse - l[y[static_cast<size_t>(i)]]) + s / static_cast<double>(k) * nll_all;
    }
    want /= static_cast<double>(n);
    const double got = trainer.train_step(x, y, /*lr=*/0.0);
    EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, want)) << "label smoothing " << s;
  }
  TrainOptions bad = pattern_options();
  bad.label_smoothing = 1.0;
  EXPECT_THROW(Trainer(g, bad), Error);
}

TEST(Train, SchedulesFollowPyTorch) {
  // OneCycleLR(max_lr 0.1, total_steps 100): starts at max/25, peaks at step 29 (0.3*100-1),
  // ends at max/25/1e4; halfway through the warm-up it is the mean of start and peak.
  const double lr = 0.1;
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::kOneCycle, lr, 0, 100), lr / 25);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::kOneCycle, lr, 29, 100), lr);
  EXPECT_NEAR(scheduled_lr(LrSchedule::kOneCycle, lr, 99, 100), lr / 25 / 1e4, 1e-15);
  EXPECT_NEAR(scheduled_lr(LrSchedule::kOneCycle, lr, 14, 100),
              (lr / 25 + lr) / 2 + (lr / 25 - lr) / 2 * std::cos(M_PI * 14 / 29.0), 1e-12);
  // Down phase midpoint: step 29 + 35 = 64.
  EXPECT_NEAR(scheduled_lr(LrSchedule::kOneCycle, lr, 64, 100), (lr + lr / 25 / 1e4) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::kCosine, lr, 0, 100), lr);
  EXPECT_NEAR(scheduled_lr(LrSchedule::kCosine, lr, 50, 100), lr / 2, 1e-15);
  EXPECT_DOUBLE_EQ(scheduled_lr(LrSchedule::kConstant, lr, 50, 100), lr);
  EXPECT_EQ(parse_lr_schedule("cosine"), LrSchedule::kCosine);
  EXPECT_THROW(parse_lr_schedule("step"), Error);
}

}  // namespace
}  // namespace dlas
