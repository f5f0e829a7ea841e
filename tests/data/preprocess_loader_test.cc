// Preprocessing (scale, resize, crops, flips, channels, normalize), the Loader (batching,
// limits, shuffles and augmentation that depend only on (seed, epoch), threads) and Accuracy.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "data_test_util.h"

namespace dlas::test {
namespace {

using data::DatasetInfo;
using data::Preprocess;
using data::preprocess_image;

DatasetInfo info_of(int64_t c, int64_t h, int64_t w) {
  DatasetInfo i;
  i.name = "test";
  i.channels = c;
  i.height = h;
  i.width = w;
  i.classes = 10;
  return i;
}

std::vector<float> run(const Preprocess& p, const DatasetInfo& info, const Bytes& img,
                       bool augment = false, uint64_t draw = 0) {
  const auto s = p.output_shape(info);
  std::vector<float> out(static_cast<size_t>(s[0] * s[1] * s[2]), -99.f);
  preprocess_image(p, info, img.data(), out.data(), augment, draw);
  return out;
}

TEST(Preprocess, ScaleNormalizeAndShape) {
  const DatasetInfo in = info_of(2, 1, 2);
  Preprocess p;
  p.mean = {0.5f, 0.f};
  p.std = {0.5f, 2.f};
  const auto o = run(p, in, {0, 255, 51, 255});
  EXPECT_FLOAT_EQ(o[0], -1.f);
  EXPECT_FLOAT_EQ(o[1], 1.f);
  EXPECT_FLOAT_EQ(o[2], 0.1f);
  EXPECT_FLOAT_EQ(o[3], 0.5f);
  p.mean = {0.f, 0.f, 0.f};
  expect_invalid([&] { p.output_shape(in); }, {"mean/std"});
  p.mean = {0.f};
  p.std = {0.f};
  expect_invalid([&] { p.output_shape(in); }, {"std"});
}

TEST(Preprocess, BilinearResizeMatchesHalfPixelCentres) {
  // [[0,1],[2,3]] * 51 upsampled to 4x4 (PyTorch bilinear, align_corners=False):
  // rows 0..3 of the x-interpolation are 0, .25, .75, 1 of the span.
  Preprocess p;
  p.resize = 4;
  const auto o = run(p, info_of(1, 2, 2), {0, 51, 102, 153});
  const float v = 51.f / 255.f;
  const float expect_row0[4] = {0, 0.25f * v, 0.75f * v, v};
  for (int x = 0; x < 4; ++x) EXPECT_NEAR(o[x], expect_row0[x], 1e-6);
  EXPECT_NEAR(o[1 * 4 + 0], 0.25f * 2 * v, 1e-6);
  EXPECT_NEAR(o[3 * 4 + 3], 3 * v, 1e-6);
  // Shorter side to `resize`, the other scaled: 4x8 -> 2x4.
  p.resize = 2;
  EXPECT_EQ(p.output_shape(info_of(3, 4, 8)), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(p.output_shape(info_of(3, 9, 6)), (std::vector<int64_t>{3, 3, 2}));
  // Downscaling by 2 averages pairs (no antialiasing filter): 2x4 -> 1x2.
  p.resize = 1;
  const auto d = run(p, info_of(1, 2, 4), {0, 102, 51, 51, 0, 102, 51, 51});
  EXPECT_NEAR(d[0], 51.f / 255.f, 1e-6);
  EXPECT_NEAR(d[1], 51.f / 255.f, 1e-6);
}

TEST(Preprocess, CenterCropAndZeroPaddedLargerCrop) {
  Bytes img(25);
  std::iota(img.begin(), img.end(), 1);
  Preprocess p;
  p.crop_h = 3;  // square
  const auto o = run(p, info_of(1, 5, 5), img);
  ASSERT_EQ(o.size(), 9u);
  EXPECT_FLOAT_EQ(o[0], 7.f / 255.f);   // (1,1)
  EXPECT_FLOAT_EQ(o[8], 19.f / 255.f);  // (3,3)
  p.crop_h = 7;
  p.crop_w = 5;
  const auto big = run(p, info_of(1, 5, 5), img);
  ASSERT_EQ(big.size(), 35u);
  EXPECT_FLOAT_EQ(big[0], 0.f);          // padding row
  EXPECT_FLOAT_EQ(big[5], 1.f / 255.f);  // first image row
  EXPECT_FLOAT_EQ(big[34], 0.f);
}

TEST(Preprocess, RandomPadCropAndFlipAreShiftedWindowsDrawnFromTheDraw) {
  Bytes img(16);
  std::iota(img.begin(), img.end(), 1);
  const DatasetInfo in = info_of(1, 4, 4);
  Preprocess p;
  p.pad = 2;
  p.hflip = true;
  EXPECT_EQ(run(p, in, img, false), run(Preprocess{}, in, img));  // no augment: identity
  std::set<std::pair<int, int>> shifts;
  int flips = 0;
  for (uint64_t draw = 0; draw < 400; ++draw) {
    const auto o = run(p, in, img, true, draw);
    EXPECT_EQ(o, run(p, in, img, true, draw));  // deterministic per draw
    // Find the shift (dy, dx) and flip that explain the output.
    bool found = false;
    for (int f = 0; f < 2 && !found; ++f)
      for (int dy = -2; dy <= 2 && !found; ++dy)
        for (int dx = -2; dx <= 2 && !found; ++dx) {
          bool ok = true;
          for (int y = 0; y < 4 && ok; ++y)
            for (int x = 0; x < 4 && ok; ++x) {
              const int sy = y + dy, sx = (f ? 3 - x : x) + dx;
              const float want =
                  sy >= 0 && sy < 4 && sx >= 0 && sx < 4 ? img[sy * 4 + sx] / 255.f : 0.f;
              ok = std::abs(o[y * 4 + x] - want) < 1e-6f;
            }
          if (ok) {
            found = true;
            flips += f;
            shifts.insert({dy, dx});
          }
        }
    ASSERT_TRUE(found) << "draw " << draw;
  }
  EXPECT_EQ(shifts.size(), 25u);  // every offset in [-2, 2]^2 occurs
  EXPECT_GT(flips, 120);
  EXPECT_LT(flips, 280);
}

TEST(Preprocess, ChannelReplicateAndAverage) {
  Preprocess p;
  p.channels = 3;
  const auto r = run(p, info_of(1, 1, 2), {51, 102});
  ASSERT_EQ(r.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(r[i], i % 2 ? 0.4f : 0.2f, 1e-6);
  p.channels = 1;
  const auto a = run(p, info_of(3, 1, 1), {0, 51, 102});
  EXPECT_NEAR(a[0], 0.2f, 1e-6);
  p.channels = 2;
  expect_invalid([&] { p.output_shape(info_of(3, 1, 1)); }, {"cannot convert 3 channels"});
}

TEST(Preprocess, DefaultsPerDataset) {
  DatasetInfo c = info_of(3, 32, 32);
  c.name = "cifar10";
  const Preprocess tr = data::default_preprocess(c, true);
  EXPECT_EQ(tr.pad, 4);
  EXPECT_TRUE(tr.hflip);
  EXPECT_EQ(tr.mean.size(), 3u);
  EXPECT_EQ(data::default_preprocess(c, false).pad, 0);
  c = info_of(1, 28, 28);
  c.name = "fashion-mnist";
  EXPECT_EQ(data::default_preprocess(c, true).pad, 2);
  EXPECT_FALSE(data::default_preprocess(c, true).hflip);
  EXPECT_EQ(data::default_preprocess(c, false).output_shape(c), (std::vector<int64_t>{1, 28, 28}));
}

std::vector<int64_t> epoch_indices(data::Loader& l, int64_t epoch,
                                   std::vector<float>* pixels = nullptr) {
  l.start_epoch(epoch);
  std::vector<int64_t> all;
  data::Batch b;
  while (l.next(b)) {
    all.insert(all.end(), b.indices.begin(), b.indices.end());
    if (pixels)
      pixels->insert(pixels->end(), b.images.data<float>(),
                     b.images.data<float>() + b.images.numel());
  }
  return all;
}

TEST(Loader, BatchesLimitAndDropLast) {
  const auto ds = data::open_dataset("synthetic:1,6,6:3:10", data::Split::kTrain);
  data::Loader l(*ds, Preprocess{}, {.batch = 4});
  EXPECT_EQ(l.batches_per_epoch(), 3);
  EXPECT_EQ(l.samples(), 10);
  EXPECT_EQ(l.batch_shape(), (std::vector<int64_t>{4, 1, 6, 6}));
  std::vector<int64_t> sizes;
  data::Batch b;
  while (l.next(b)) {
    sizes.push_back(b.size());
    for (int64_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.labels[i], ds->label(b.indices[i]));
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(epoch_indices(l, 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  data::Loader d(*ds, Preprocess{}, {.batch = 4, .drop_last = true, .limit = 7});
  EXPECT_EQ(d.batches_per_epoch(), 1);
  EXPECT_EQ(d.samples(), 4);
  EXPECT_EQ(epoch_indices(d, 0).size(), 4u);
  // Batch pixels are the preprocessed records.
  data::Loader one(*ds, Preprocess{}, {.batch = 1});
  one.start_epoch(0);
  ASSERT_TRUE(one.next(b));
  Bytes raw(36);
  ds->image_u8(0, raw.data());
  EXPECT_FLOAT_EQ(b.images.data<float>()[35], raw[35] / 255.f);
  expect_invalid([&] { data::Loader(*ds, Preprocess{}, {.batch = 0}); }, {"batch"});
}

TEST(Loader, ShuffleAndAugmentDependOnlyOnSeedAndEpoch) {
  const auto ds = data::open_dataset("synthetic:1,8,8:4:40", data::Split::kTrain);
  Preprocess p;
  p.pad = 2;
  p.hflip = true;
  const data::LoaderOptions o{.batch = 7, .shuffle = true, .augment = true, .seed = 3};
  data::Loader a(*ds, p, o), b(*ds, p, o);
  std::vector<float> pa, pb, pa1, pt;
  const auto e0 = epoch_indices(a, 0, &pa);
  const auto e1 = epoch_indices(a, 1, &pa1);
  EXPECT_EQ(epoch_indices(b, 1), e1);  // resume at epoch 1 directly: same stream
  EXPECT_EQ(epoch_indices(b, 0, &pb), e0);
  EXPECT_EQ(pa, pb);
  EXPECT_NE(e0, e1);
  auto sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(40);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);  // a permutation
  EXPECT_NE(e0, iota);
  data::LoaderOptions o2 = o;
  o2.seed = 4;
  data::Loader c(*ds, p, o2);
  EXPECT_NE(epoch_indices(c, 0), e0);
  o2 = o;
  o2.threads = 2;
  data::Loader t(*ds, p, o2);
  EXPECT_EQ(epoch_indices(t, 0, &pt), e0);
  EXPECT_EQ(pt, pa);  // the same pixels on any thread count
  // Augmentation is really applied: without it the pixels differ.
  o2 = o;
  o2.augment = false;
  data::Loader n(*ds, p, o2);
  std::vector<float> pn;
  epoch_indices(n, 0, &pn);
  EXPECT_NE(pn, pa);
}

TEST(Accuracy, TopOneAndTopFiveWithTies) {
  data::Accuracy acc;
  // 3 rows of 6 classes.
  const Tensor logits = Tensor::from_vector<float>(
      {3, 6}, {0.1f, 0.9f, 0.2f, 0.3f, 0.4f, 0.5f,    // label 1: top-1
               0.6f, 0.5f, 0.4f, 0.3f, 0.2f, 0.1f,    // label 5: rank 6 -> neither
               0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f});  // label 4: ties, 4 lower indices win -> top-5
  acc.add(logits, {1, 5, 4});
  EXPECT_EQ(acc.samples, 3);
  EXPECT_EQ(acc.top1, 1);
  EXPECT_EQ(acc.top5, 2);
  EXPECT_NEAR(acc.top1_rate(), 1.0 / 3, 1e-12);
  acc.add(Tensor::from_vector<float>({1, 6, 1, 1}, {0, 0, 0, 0, 0, 1}), {5});
  EXPECT_EQ(acc.top1, 2);
  expect_invalid([&] { acc.add(logits, {1, 6, 0}); }, {"label 6"});
  expect_invalid([&] { acc.add(logits, {1}); }, {"1 labels"});
}

}  // namespace
}  // namespace dlas::test
